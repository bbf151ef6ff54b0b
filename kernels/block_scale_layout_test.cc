#include "kernels/block_scale_layout.h"

#include <set>

#include "gtest/gtest.h"

namespace moetune::kernels {
namespace {

TEST(BlockScaleTensorBytes, PadsTo128RowsAnd4Blocks) {
  EXPECT_EQ(BlockScaleTensorBytes(128, 4), 512);
  EXPECT_EQ(BlockScaleTensorBytes(5, 2), 128 * 4);      // one padded tile
  EXPECT_EQ(BlockScaleTensorBytes(129, 5), 256 * 8);    // 2 x 2 tiles
  EXPECT_EQ(BlockScaleTensorBytes(2048, 224), 2048 * 224);  // K = 7168: no padding
}

TEST(BlockScaleOffset, InterleavesRowsInsideATile) {
  // (r % 32) * 16 + (r / 32) * 4 + c.
  EXPECT_EQ(BlockScaleOffset(0, 0, 4), 0);
  EXPECT_EQ(BlockScaleOffset(0, 3, 4), 3);
  EXPECT_EQ(BlockScaleOffset(1, 0, 4), 16);
  EXPECT_EQ(BlockScaleOffset(32, 0, 4), 4);
  EXPECT_EQ(BlockScaleOffset(127, 3, 4), 31 * 16 + 3 * 4 + 3);  // 511, the tile's last byte
}

TEST(BlockScaleOffset, TilesAreRowMajor) {
  // 8 blocks per row = 2 tiles per 128 rows. Row 5, block 2: tile 0,
  // 5 * 16 + 2 = 82; block 5: tile 1, 512 + 80 + 1 = 593 (the worked example
  // of nvmath-python's get_block_scale_offset, NVFP4 with K = 128).
  EXPECT_EQ(BlockScaleOffset(5, 2, 8), 82);
  EXPECT_EQ(BlockScaleOffset(5, 5, 8), 593);
  // Row 130, block 1: tile row 1 starts after 2 tiles (1024); r = 2 -> 32 + 1.
  EXPECT_EQ(BlockScaleOffset(130, 1, 8), 1024 + 33);
}

TEST(BlockScaleOffset, IsABijectionOntoTheTensor) {
  const int64_t rows = 256, blocks = 8;
  std::set<int64_t> seen;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) seen.insert(BlockScaleOffset(r, b, blocks));
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), rows * blocks);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), BlockScaleTensorBytes(rows, blocks) - 1);
}

TEST(TileBlockScales, CopiesASubMatrixAndPads) {
  // A 3 x 6 scale matrix with value 10 * r + b; take rows 1..2, blocks 2..4.
  std::vector<uint8_t> s(18);
  for (int r = 0; r < 3; ++r) {
    for (int b = 0; b < 6; ++b) s[r * 6 + b] = static_cast<uint8_t>(10 * r + b);
  }
  const std::vector<uint8_t> t = TileBlockScales(s.data() + 6, 6, 2, 2, 3, 127);
  ASSERT_EQ(t.size(), 512u);
  EXPECT_EQ(t[0], 12);    // row 1 block 2 -> tile (0, 0)
  EXPECT_EQ(t[2], 14);    // row 1 block 4
  EXPECT_EQ(t[16], 22);   // row 2 block 2 -> 1 * 16
  EXPECT_EQ(t[3], 127);   // block 3 of the sub-matrix does not exist: padding
  EXPECT_EQ(t[32], 127);  // row 2 of the sub-matrix does not exist: padding
}

}  // namespace
}  // namespace moetune::kernels
