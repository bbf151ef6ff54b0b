#include "planner/units.h"

#include "gtest/gtest.h"

namespace moetune::planner::units {
namespace {

TEST(UnitsTest, DecimalAndBinaryBytes) {
  EXPECT_EQ(kGB, 1000.0 * 1000.0 * 1000.0);
  EXPECT_EQ(kGiB, 1073741824.0);
  // 80 GB (datasheet) is 74.5 GiB (what nvidia-smi shows).
  EXPECT_NEAR(80 * kGB / kGiB, 74.506, 1e-3);
  EXPECT_EQ(kTB / kGB, 1000.0);
  EXPECT_EQ(kMiB * 1024.0, kGiB);
}

TEST(UnitsTest, LineRatesAndFlops) {
  // A 400 Gbit/s NIC moves 50 GB/s per direction.
  EXPECT_EQ(400 * kGbitPerSecInBytesPerSec, 50 * kGB);
  EXPECT_EQ(kTFLOP, 1e12);
  EXPECT_EQ(kPFLOP / kTFLOP, 1000.0);
  EXPECT_EQ(kFlopsPerMac, 2.0);
}

TEST(UnitsTest, Time) {
  EXPECT_EQ(kMicrosecond * 1000.0, kMillisecond);
  // 3 hops x 500 ns + 1 MiB / 50 GiB/s = 1.5 us + 19.531 us = 21.031 us.
  const double t = 3 * 500 * kNanosecond + kMiB / (50 * kGiB);
  EXPECT_NEAR(t / kMicrosecond, 21.03125, 1e-9);
}

}  // namespace
}  // namespace moetune::planner::units
