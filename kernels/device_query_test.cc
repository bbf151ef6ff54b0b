#include "kernels/cuda/device_query.h"
#include "proto/smoke.pb.h"
#include "absl/status/status.h"
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
TEST(Smoke, Runs) { std::string e; int n = moetune::kernels::cuda::CountDevices(&e); EXPECT_LE(n, 0); moetune::v1::Ping p; p.set_text("x"); EXPECT_EQ(p.text(), "x"); }
