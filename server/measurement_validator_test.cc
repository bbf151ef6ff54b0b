#include "server/measurement_validator.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace moetune::server {
namespace {

namespace v1 = ::moetune::v1;
using ::testing::HasSubstr;

v1::ProbeResult Good() {
  v1::ProbeResult r;
  r.set_result_id("ci/n1/1-1-00ff");
  r.set_task_id("c1/t3");
  r.set_kind(v1::PROBE_KIND_GROUPED_GEMM);
  v1::Measurement* m = r.add_measurements();
  m->set_name("grouped_gemm");
  for (double s : {1e-3, 1.1e-3, 1.2e-3}) m->add_samples_seconds(s);
  m->set_min_seconds(1e-3);
  m->set_median_seconds(1.1e-3);
  m->set_max_seconds(1.2e-3);
  m->set_flops(2e12);
  m->set_bytes(1e9);
  m->set_tflops(1818.2);
  (*m->mutable_values())["tokens"] = 4096;
  return r;
}

TEST(MeasurementValidatorTest, RealisticResultPasses) {
  EXPECT_TRUE(ValidateProbeResult(Good(), ServiceLimits{}).ok());
}

struct BadCase {
  const char* what;
  std::function<void(v1::ProbeResult&)> mutate;
  absl::StatusCode code;
  const char* field;
};

TEST(MeasurementValidatorTest, HostileValuesNameTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<BadCase> cases = {
      {"nan sample", [&](auto& r) { r.mutable_measurements(0)->set_samples_seconds(1, nan); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].samples_seconds[1] must be finite"},
      {"inf median", [&](auto& r) { r.mutable_measurements(0)->set_median_seconds(inf); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].median_seconds must be finite"},
      {"negative bytes", [](auto& r) { r.mutable_measurements(0)->set_bytes(-1); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].bytes must be >= 0"},
      // 1e30 FLOPs is 10^6 times more than 10^6 GPU-seconds at 1 PFLOP/s.
      {"absurd flops", [](auto& r) { r.mutable_measurements(0)->set_flops(1e30); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].flops is absurd"},
      {"a week-long sample", [](auto& r) { r.mutable_measurements(0)->set_max_seconds(7 * 86400); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].max_seconds is absurd"},
      {"nan tflops", [&](auto& r) { r.mutable_measurements(0)->set_tflops(nan); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].tflops must be finite"},
      {"inf value", [&](auto& r) { (*r.mutable_measurements(0)->mutable_values())["x"] = -inf; },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].values[x] must be finite"},
      {"nan rel error", [&](auto& r) { r.mutable_measurements(0)->set_max_rel_error(nan); },
       absl::StatusCode::kInvalidArgument, "result.measurements[0].max_rel_error"},
      {"empty id", [](auto& r) { r.clear_result_id(); }, absl::StatusCode::kInvalidArgument,
       "result.result_id is empty"},
      {"huge id", [](auto& r) { r.set_result_id(std::string(10000, 'x')); },
       absl::StatusCode::kInvalidArgument, "result.result_id is 10000 bytes, limit 256"},
      {"negative rank", [](auto& r) { r.set_rank(-3); }, absl::StatusCode::kInvalidArgument,
       "result.attempt/rank"},
      {"unknown kind", [](auto& r) { r.set_kind(static_cast<v1::ProbeKind>(999)); },
       absl::StatusCode::kInvalidArgument, "result.kind has unknown value 999"},
      {"huge params", [](auto& r) { r.set_params_json(std::string(1 << 20, ' ')); },
       absl::StatusCode::kInvalidArgument, "result.params_json is 1048576 bytes"},
      {"too many samples",
       [](auto& r) {
         for (int i = 0; i < 100001; ++i) r.mutable_measurements(0)->add_samples_seconds(1e-3);
       },
       absl::StatusCode::kResourceExhausted, "result.measurements[0].samples_seconds has 100004 entries, limit 100000"},
      {"too many measurements",
       [](auto& r) {
         for (int i = 0; i < 5000; ++i) r.add_measurements();
       },
       absl::StatusCode::kResourceExhausted, "result.measurements has 5001 entries, limit 4096"},
      {"too many env entries",
       [](auto& r) {
         for (int i = 0; i < 300; ++i) (*r.mutable_provenance()->mutable_env())[std::to_string(i)] = "v";
       },
       absl::StatusCode::kResourceExhausted, "result.provenance.env has 300 entries"},
  };
  for (const BadCase& c : cases) {
    v1::ProbeResult r = Good();
    c.mutate(r);
    absl::Status st = ValidateProbeResult(r, ServiceLimits{});
    EXPECT_EQ(st.code(), c.code) << c.what << ": " << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.field)) << c.what;
  }
}

TEST(MeasurementValidatorTest, SampleLimitIsConfigurable) {
  ServiceLimits limits;
  limits.max_samples_per_measurement = 2;
  absl::Status st = ValidateProbeResult(Good(), limits);
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(st.message()), HasSubstr("samples_seconds has 3 entries, limit 2"));
  // Per message: this result is never accepted as it is.
  std::optional<moetune::v1::Refusal> why = RefusalOf(st);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->scope(), moetune::v1::Refusal::REFUSAL_SCOPE_MESSAGE);
  EXPECT_EQ(why->limit(), "max_samples_per_measurement");
  EXPECT_EQ(why->limit_value(), 2);
  EXPECT_EQ(why->actual(), 3);
}

}  // namespace
}  // namespace moetune::server
