// CPU twin of the collectives sweep: Gloo over TCP, fp32 payload.
#include <cmath>
#include <limits>

#include "kernels/collective_inputs.h"
#include "kernels/measurement_roles.h"
#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/gloo_group.h"
#include "kernels/cpu/gloo_ops.h"

namespace moetune::kernels::cpu {
namespace {

constexpr uint32_t kTagOp = 10;
constexpr uint32_t kTagBarrier = 11;

}  // namespace

ProbeStatus RunCollectives(const CollectiveParams& p, const GroupSpec& group, ProbeResult* result) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.group_size));
  // Phases end with the group's agreement (kernels/group_agreement.h).
  GroupAgreement agree(group);
  std::shared_ptr<gloo::Context> ctx;
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "connect", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("connect"));
    return ConnectGloo(group, &ctx);
  }, &ctx));
  const int n = group.world_size;
  for (int64_t size_bytes : p.sizes_bytes) {
    // fp32 payload of the same byte size whatever the requested dtype.
    const size_t buffer = static_cast<size_t>(size_bytes) / sizeof(float);
    size_t in_elems = buffer, out_elems = buffer;
    if (p.op == CollectiveOp::kAllGather) in_elems = buffer / n;
    if (p.op == CollectiveOp::kReduceScatter) out_elems = buffer / n;
    const size_t chunk = buffer / n;
    std::vector<float> in(in_elems), out(out_elems), scratch(p.op == CollectiveOp::kReduceScatter ? in_elems : 1);
    // Exact in fp32 at any rank count (kernels/collective_inputs.h).
    const CollectiveInputs inputs = CollectiveInputsFor(p.op, DType::kFp32, n);
    for (size_t i = 0; i < in_elems; ++i) in[i] = inputs.Value(group.rank, static_cast<int64_t>(i));
    auto run = [&]() -> ProbeStatus {
      switch (p.op) {
        case CollectiveOp::kAllReduce: return GlooAllreduceSum(ctx, in.data(), out.data(), in_elems, kTagOp);
        case CollectiveOp::kAllGather: return GlooAllgather(ctx, in.data(), out.data(), in_elems, kTagOp);
        case CollectiveOp::kReduceScatter:
          return GlooReduceScatterSum(ctx, in.data(), out.data(), scratch.data(), in_elems, kTagOp);
        case CollectiveOp::kAllToAll: return GlooAlltoall(ctx, in.data(), out.data(), in_elems, kTagOp);
      }
      return Internal("unknown collective");
    };
    Measurement m;
    m.name = roles::CollectiveName(p.op, size_bytes);
    m.labels = {{roles::kLabelOp, CollectiveOpName(p.op)},
                {roles::kLabelSizeBytes, std::to_string(size_bytes)},
                {roles::kLabelGroupSize, std::to_string(n)},
                {roles::kLabelSpan, SpanName(p.span)},
                {"dtype", DTypeName(p.dtype)},
                {"payload", "fp32"}};
    const std::string size_name = std::to_string(size_bytes);
    if (p.timing.verify) {
      MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "verify/" + size_name, [&]() -> ProbeStatus {
        MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("verify"));
        std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
        MOETUNE_PROBE_RETURN_IF_ERROR(run());
        for (size_t i = 0; i < out_elems; ++i) {
          const double want = ExpectedCollectiveValue(inputs, p.op, group.rank, n, static_cast<int64_t>(i),
                                                      static_cast<int64_t>(chunk));
          if (!(out[i] == want)) {
            return DataLoss(std::string("collective ") + CollectiveOpName(p.op) + " (cpu, " + size_name +
                            " bytes, rank " + std::to_string(group.rank) + "): element " + std::to_string(i) +
                            ": got " + std::to_string(out[i]) + ", want " + std::to_string(want));
          }
        }
        return ProbeStatus::Ok();
      }, &ctx));
      m.verified = true;
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "time/" + size_name, [&] {
      MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("time"));
      return TimeSamples(p.timing, [&] { return GlooBarrier(ctx, kTagBarrier); }, run, &m.samples_seconds);
    }, &ctx));
    m.bytes = static_cast<double>(size_bytes);
    m.bus_factor = BusBandwidthFactor(p.op, n);
    m.Finalize();
    result->measurements.push_back(std::move(m));
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cpu
