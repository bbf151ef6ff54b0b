#include "kernels/cpu/cpu_probes.h"

#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"

namespace moetune::kernels::cpu {

ProbeStatus RunCpuProbe(const ProbeParams& params, const GroupSpec& group, ProbeResult* result) {
  const int64_t budget = TimingOf(params).memory_budget_bytes > 0 ? TimingOf(params).memory_budget_bytes
                                                                  : DefaultCpuMemoryBudget();
  MOETUNE_PROBE_RETURN_IF_ERROR(Validate(params, budget));
  *result = ProbeResult();
  result->kind = KindOf(params);
  result->params_json = ParamsToJson(params);
  result->provenance = CpuProvenance(group);
  ProbeStatus s;
  if (const auto* p = std::get_if<GroupedGemmParams>(&params)) {
    s = RunGroupedGemm(*p, result);
  } else if (const auto* p = std::get_if<DispatchCombineParams>(&params)) {
    s = RunDispatchCombine(*p, group, result);
  } else if (const auto* p = std::get_if<CollectiveParams>(&params)) {
    s = RunCollectives(*p, group, result);
  } else if (const auto* p = std::get_if<OffloadParams>(&params)) {
    s = RunOffload(*p, result);
  } else if (const auto* p = std::get_if<OverlapParams>(&params)) {
    s = RunOverlap(*p, group, result);
  }
  FinishProvenance(&result->provenance);
  return s;
}

}  // namespace moetune::kernels::cpu
