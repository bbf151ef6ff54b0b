// CPU twin of the overlap probe: a GEMM thread and a Gloo all-reduce on the
// calling thread, each measured alone and then together.
//   hidden_fraction = (t_gemm + t_coll - t_both) / t_coll, clamped to [0, 1]
//   gemm_slowdown   = t_gemm_overlapped / t_gemm
#include <algorithm>
#include <thread>

#include <cblas.h>

#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/gloo_group.h"
#include "kernels/cpu/gloo_ops.h"
#include "kernels/measurement_roles.h"
#include "kernels/random.h"

namespace moetune::kernels::cpu {

ProbeStatus RunOverlap(const OverlapParams& p, const GroupSpec& group, ProbeResult* result) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.group_size));
  if (p.op != CollectiveOp::kAllReduce) {
    return Unimplemented(std::string("overlap (cpu): only all_reduce, got ") + CollectiveOpName(p.op));
  }
  GroupAgreement agree(group);  // kernels/group_agreement.h
  std::shared_ptr<gloo::Context> ctx;
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "connect", [&] {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("connect"));
    return ConnectGloo(group, &ctx);
  }, &ctx));
  const std::vector<float> a = UniformValues(StreamSeed(p.timing.seed, group.rank, 30), p.gemm_m * p.gemm_k);
  const std::vector<float> b = UniformValues(StreamSeed(p.timing.seed, group.rank, 31), p.gemm_k * p.gemm_n);
  std::vector<float> c(p.gemm_m * p.gemm_n);
  const size_t elems = p.collective_bytes / sizeof(float);
  std::vector<float> in(elems, 1.0f), out(elems);
  auto gemm = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p.gemm_m, p.gemm_n, p.gemm_k, 1.0f, a.data(),
                p.gemm_k, b.data(), p.gemm_n, 0.0f, c.data(), p.gemm_n);
  };
  auto coll = [&] { return GlooAllreduceSum(ctx, in.data(), out.data(), elems, 40); };
  auto barrier = [&] { return GlooBarrier(ctx, 41); };

  Measurement gemm_alone, coll_alone, gemm_over, coll_over, both;
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "time/alone", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("time/alone"));
    MOETUNE_PROBE_RETURN_IF_ERROR(TimeSamples(p.timing, barrier, [&] {
      gemm();
      return ProbeStatus::Ok();
    }, &gemm_alone.samples_seconds));
    return TimeSamples(p.timing, barrier, coll, &coll_alone.samples_seconds);
  }, &ctx));
  if (p.timing.verify) {  // all ranks contribute 1.0 per element
    MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "verify", [&]() -> ProbeStatus {
      MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("verify"));
      MOETUNE_PROBE_RETURN_IF_ERROR(coll());
      for (size_t i = 0; i < elems; ++i) {
        if (out[i] != static_cast<float>(group.world_size)) {
          return DataLoss("overlap all_reduce (cpu): element " + std::to_string(i) + ": got " +
                          std::to_string(out[i]) + ", want " + std::to_string(group.world_size));
        }
      }
      return ProbeStatus::Ok();
    }, &ctx));
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(RunPhase(&agree, "time/overlapped", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(agree.InjectedFailure("time/overlapped"));
    for (int i = 0; i < p.timing.warmup_iters + p.timing.timed_iters; ++i) {
      MOETUNE_PROBE_RETURN_IF_ERROR(barrier());
      const auto t0 = std::chrono::steady_clock::now();
      double gemm_s = 0;
      std::thread worker([&] {
        const auto g0 = std::chrono::steady_clock::now();
        gemm();
        gemm_s = SecondsSince(g0);
      });
      ProbeStatus s = coll();
      const double coll_s = SecondsSince(t0);
      worker.join();
      const double both_s = SecondsSince(t0);
      MOETUNE_PROBE_RETURN_IF_ERROR(s);
      if (i < p.timing.warmup_iters) continue;
      gemm_over.samples_seconds.push_back(gemm_s);
      coll_over.samples_seconds.push_back(coll_s);
      both.samples_seconds.push_back(both_s);
    }
    return ProbeStatus::Ok();
  }, &ctx));
  const double flops = GemmFlops(p.gemm_m, p.gemm_n, p.gemm_k);
  const double bus = BusBandwidthFactor(p.op, group.world_size);
  struct Named { Measurement* m; const char* name; bool gemm; bool coll; };
  for (const Named& n : {Named{&gemm_alone, roles::kGemmAlone, true, false},
                         Named{&coll_alone, roles::kCollectiveAlone, false, true},
                         Named{&gemm_over, roles::kGemmOverlapped, true, false},
                         Named{&coll_over, roles::kCollectiveOverlapped, false, true},
                         Named{&both, roles::kBoth, false, false}}) {
    n.m->name = n.name;
    n.m->labels = {{"op", CollectiveOpName(p.op)},
                   {"collective_bytes", std::to_string(p.collective_bytes)},
                   {"gemm", std::to_string(p.gemm_m) + "x" + std::to_string(p.gemm_n) + "x" +
                                std::to_string(p.gemm_k)},
                   {"compute_dtype", "fp32"}};
    if (n.gemm) n.m->flops = flops;
    if (n.coll) {
      n.m->bytes = static_cast<double>(p.collective_bytes);
      n.m->bus_factor = bus;
      n.m->verified = p.timing.verify;
    }
    n.m->Finalize();
  }
  const double tg = gemm_alone.PlannerSeconds(), tc = coll_alone.PlannerSeconds();
  const double tb = both.PlannerSeconds();
  both.values[roles::kValueHiddenFraction] = tc > 0 ? std::clamp((tg + tc - tb) / tc, 0.0, 1.0) : 0.0;
  both.values[roles::kValueGemmSlowdown] = tg > 0 ? gemm_over.PlannerSeconds() / tg : 0.0;
  both.values[roles::kValueCollectiveSlowdown] = tc > 0 ? coll_over.PlannerSeconds() / tc : 0.0;
  for (Measurement* m : {&gemm_alone, &coll_alone, &gemm_over, &coll_over, &both}) {
    result->measurements.push_back(std::move(*m));
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cpu
