// NCCL collectives sweep and the GEMM + collective overlap probe.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/collective_inputs.h"
#include "kernels/measurement_roles.h"
#include "kernels/random.h"
#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/cuda/fill.h"
#include "kernels/cuda/nccl_group.h"
#include "kernels/cuda/timing.h"

namespace moetune::kernels::cuda {
namespace {

// Writes inputs.Value(rank, j) for j < n in the probe's dtype, on the device
// (kernels/collective_inputs.h: exact sums at any rank count).
template <typename T>
__global__ void FillInput(T* out, int64_t n, int rank, CollectiveInputs inputs) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x) {
    out[j] = static_cast<T>(inputs.Value(rank, j));
  }
}

ProbeStatus Fill(void* dst, int64_t n, int rank, DType dtype, const CollectiveInputs& inputs, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<int64_t>(4096, (n + 255) / 256 + 1));
  switch (dtype) {
    case DType::kFp32: FillInput<<<blocks, 256, 0, stream>>>(static_cast<float*>(dst), n, rank, inputs); break;
    case DType::kBf16:
      FillInput<<<blocks, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dst), n, rank, inputs);
      break;
    case DType::kFp16: FillInput<<<blocks, 256, 0, stream>>>(static_cast<__half*>(dst), n, rank, inputs); break;
    default: return Unimplemented(std::string("collective fill: dtype ") + DTypeName(dtype));
  }
  MOETUNE_CUDA(cudaGetLastError());
  MOETUNE_CUDA(cudaStreamSynchronize(stream));
  return ProbeStatus::Ok();
}

ProbeStatus FromDevice(const void* src, size_t n, DType dtype, std::vector<float>* v) {
  v->resize(n);
  if (dtype == DType::kFp32) {
    MOETUNE_CUDA(cudaMemcpy(v->data(), src, n * 4, cudaMemcpyDeviceToHost));
    return ProbeStatus::Ok();
  }
  std::vector<uint16_t> h(n);
  MOETUNE_CUDA(cudaMemcpy(h.data(), src, n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) {
    if (dtype == DType::kBf16) {
      (*v)[i] = Bf16ToFloat(h[i]);
    } else {
      __half_raw r;
      r.x = h[i];
      (*v)[i] = __half2float(__half(r));
    }
  }
  return ProbeStatus::Ok();
}

struct CollBuffers {
  DeviceBuffer in, out;
  Event start, stop;
};

// Issues `op` for every local rank inside one NCCL group.
ProbeStatus Issue(NcclGroup* g, std::vector<CollBuffers>& b, CollectiveOp op, size_t in_elems,
                  ncclDataType_t type, bool use_compute_stream = false) {
  const size_t elem_bytes = NcclTypeBytes(type);
  NcclGroupCall call(g);
  MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
  const int n = g->world_size();
  for (size_t i = 0; i < g->ranks().size(); ++i) {
    LocalRank* lr = g->ranks()[i].get();
    cudaStream_t s = use_compute_stream ? lr->compute.get() : lr->stream.get();
    switch (op) {
      case CollectiveOp::kAllReduce:
        MOETUNE_NCCL(ncclAllReduce(b[i].in.get(), b[i].out.get(), in_elems, type, ncclSum, lr->comm, s));
        break;
      case CollectiveOp::kAllGather:
        MOETUNE_NCCL(ncclAllGather(b[i].in.get(), b[i].out.get(), in_elems, type, lr->comm, s));
        break;
      case CollectiveOp::kReduceScatter:
        MOETUNE_NCCL(ncclReduceScatter(b[i].in.get(), b[i].out.get(), in_elems / n, type, ncclSum, lr->comm, s));
        break;
      case CollectiveOp::kAllToAll:
#if MOETUNE_NCCL_HAS_ALLTOALL
        MOETUNE_NCCL(ncclAlltoAll(b[i].in.get(), b[i].out.get(), in_elems / n, type, lr->comm, s));
#else
        // NCCL < 2.28 has no ncclAlltoAll: one send and one receive per
        // peer inside the group, what nccl-tests' alltoall does there.
        for (int peer = 0; peer < n; ++peer) {
          const size_t count = in_elems / n, bytes = count * elem_bytes;
          MOETUNE_NCCL(ncclSend(b[i].in.get<char>() + peer * bytes, count, type, peer, lr->comm, s));
          MOETUNE_NCCL(ncclRecv(b[i].out.get<char>() + peer * bytes, count, type, peer, lr->comm, s));
        }
#endif
        break;
    }
  }
  return call.End();
}

}  // namespace

ProbeStatus RunCollectives(const CollectiveParams& p, const GroupSpec& group, ProbeResult* result) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.group_size));
  ncclDataType_t type;
  size_t elem = 0;
  MOETUNE_PROBE_RETURN_IF_ERROR(NcclType(p.dtype, &type, &elem));
  std::unique_ptr<NcclGroup> g;
  MOETUNE_PROBE_RETURN_IF_ERROR(NcclGroup::Create(group, &g));
  const int n = g->world_size();
  for (int64_t size : p.sizes_bytes) {
    const size_t buffer = size / elem;
    size_t in_elems = buffer, out_elems = buffer;
    if (p.op == CollectiveOp::kAllGather) in_elems = buffer / n;
    if (p.op == CollectiveOp::kReduceScatter) out_elems = buffer / n;
    const int64_t chunk = buffer / n;
    const CollectiveInputs inputs = CollectiveInputsFor(p.op, p.dtype, n);
    std::vector<CollBuffers> b(g->ranks().size());
    for (size_t i = 0; i < b.size(); ++i) {
      LocalRank* lr = g->ranks()[i].get();
      MOETUNE_CUDA(cudaSetDevice(lr->device));
      MOETUNE_PROBE_RETURN_IF_ERROR(b[i].in.Create(in_elems * elem));
      MOETUNE_PROBE_RETURN_IF_ERROR(b[i].out.Create(out_elems * elem));
      MOETUNE_PROBE_RETURN_IF_ERROR(b[i].start.Create());
      MOETUNE_PROBE_RETURN_IF_ERROR(b[i].stop.Create());
      MOETUNE_PROBE_RETURN_IF_ERROR(Fill(b[i].in.get(), in_elems, lr->rank, p.dtype, inputs, lr->stream.get()));
    }
    Measurement m;
    m.name = roles::CollectiveName(p.op, size);
    m.labels = {{roles::kLabelOp, CollectiveOpName(p.op)},
                {"impl", p.op == CollectiveOp::kAllToAll ? kNcclAllToAllImpl : "nccl"},
                {roles::kLabelSizeBytes, std::to_string(size)},
                {roles::kLabelGroupSize, std::to_string(n)},
                {roles::kLabelSpan, SpanName(p.span)},
                {"dtype", DTypeName(p.dtype)}};
    const std::string size_name = std::to_string(size);
    // Every phase ends with the ranks' agreement (NcclGroup::EndPhase):
    // a failed check on one rank stops them all, communicators aborted.
    if (p.timing.verify) {
      MOETUNE_PROBE_RETURN_IF_ERROR(g->EndPhase("verify/" + size_name, [&]() -> ProbeStatus {
        MOETUNE_PROBE_RETURN_IF_ERROR(g->agreement().InjectedFailure("verify"));
        for (size_t i = 0; i < b.size(); ++i) {
          // On the rank's own (non-blocking) stream, so it is ordered before the collective.
          MOETUNE_CUDA(cudaSetDevice(g->ranks()[i]->device));
          MOETUNE_CUDA(cudaMemsetAsync(b[i].out.get(), 0xff, out_elems * elem, g->ranks()[i]->stream.get()));
        }
        MOETUNE_PROBE_RETURN_IF_ERROR(Issue(g.get(), b, p.op, in_elems, type));
        for (size_t i = 0; i < b.size(); ++i) {
          LocalRank* lr = g->ranks()[i].get();
          MOETUNE_CUDA(cudaSetDevice(lr->device));
          MOETUNE_PROBE_RETURN_IF_ERROR(g->WaitStream(lr->stream.get()));
          std::vector<float> out;
          MOETUNE_PROBE_RETURN_IF_ERROR(FromDevice(b[i].out.get(), out_elems, p.dtype, &out));
          // Every element up to 4M, else a strided subset plus the last one.
          const size_t stride = std::max<size_t>(1, out_elems / (size_t{4} << 20));
          std::vector<size_t> checked;
          for (size_t j = 0; j < out_elems; j += stride) checked.push_back(j);
          checked.push_back(out_elems - 1);
          for (size_t j : checked) {
            const double want = ExpectedCollectiveValue(inputs, p.op, lr->rank, n, j, chunk);
            if (!(out[j] == want)) {
              return DataLoss(std::string("collective ") + CollectiveOpName(p.op) + " (cuda, " + size_name +
                              " bytes, rank " + std::to_string(lr->rank) + "): element " + std::to_string(j) +
                              ": got " + std::to_string(out[j]) + ", want " + std::to_string(want));
            }
          }
        }
        return ProbeStatus::Ok();
      }()));
      m.verified = true;
    }
    // nccl-tests' protocol: iters_per_sample collectives back to back
    // between one pair of events per rank (kernels/cuda/timing.h).
    std::vector<TimedStream> streams;
    for (size_t i = 0; i < b.size(); ++i) {
      streams.push_back({g->ranks()[i]->stream.get(), g->ranks()[i]->device, &b[i].start, &b[i].stop});
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(g->EndPhase("time/" + size_name, [&]() -> ProbeStatus {
      MOETUNE_PROBE_RETURN_IF_ERROR(g->agreement().InjectedFailure("time"));
      return TimeBackToBack(
          p.timing, streams, [&] { return g->Barrier(); }, [&] { return Issue(g.get(), b, p.op, in_elems, type); },
          [&](const Event& e) { return g->Wait(e); }, &m);
    }()));
    m.bytes = static_cast<double>(size);
    m.bus_factor = BusBandwidthFactor(p.op, n);
    m.Finalize();
    result->measurements.push_back(std::move(m));
  }
  return g->Finish();
}

ProbeStatus RunOverlap(const OverlapParams& p, const GroupSpec& group, ProbeResult* result) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.group_size));
  if (p.gemm_dtype != DType::kBf16) {
    return Unimplemented(std::string("overlap (cuda): GEMM dtype ") + DTypeName(p.gemm_dtype) + " (bf16 is implemented)");
  }
  if (p.op != CollectiveOp::kAllReduce) {
    return Unimplemented(std::string("overlap (cuda): only all_reduce, got ") + CollectiveOpName(p.op));
  }
  if (p.gemm_m > INT32_MAX || p.gemm_n > INT32_MAX || p.gemm_k > INT32_MAX) {
    return InvalidArgument("overlap (cuda): gemm_m/n/k (" + std::to_string(p.gemm_m) + ", " +
                           std::to_string(p.gemm_n) + ", " + std::to_string(p.gemm_k) +
                           ") must fit in int32 (cublasGemmEx's dimensions)");
  }
  std::unique_ptr<NcclGroup> g;
  MOETUNE_PROBE_RETURN_IF_ERROR(NcclGroup::Create(group, &g));
  const size_t local = g->ranks().size();
  const size_t elems = p.collective_bytes / 2;  // bf16 payload
  struct PerRank {
    CublasHandle blas;
    DeviceBuffer a, b, c;
    Event start, gemm_end, coll_end;
  };
  std::vector<std::unique_ptr<PerRank>> pr;
  std::vector<CollBuffers> cb(local);
  const CollectiveInputs ar_inputs = CollectiveInputsFor(CollectiveOp::kAllReduce, DType::kBf16, g->world_size());
  for (size_t i = 0; i < local; ++i) {
    LocalRank* lr = g->ranks()[i].get();
    MOETUNE_CUDA(cudaSetDevice(lr->device));
    auto x = std::make_unique<PerRank>();
    MOETUNE_PROBE_RETURN_IF_ERROR(x->blas.Create());
    MOETUNE_CUBLAS(cublasSetStream(x->blas.get(), lr->compute.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(x->a.Create(p.gemm_m * p.gemm_k * 2));
    MOETUNE_PROBE_RETURN_IF_ERROR(x->b.Create(p.gemm_k * p.gemm_n * 2));
    MOETUNE_PROBE_RETURN_IF_ERROR(x->c.Create(p.gemm_m * p.gemm_n * 2));
    // Random, not zero, inputs: tensor-core power and clocks depend on data.
    MOETUNE_PROBE_RETURN_IF_ERROR(
        FillUniformBf16(x->a.get(), p.gemm_m * p.gemm_k, StreamSeed(p.timing.seed, lr->rank, 30), lr->compute.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(
        FillUniformBf16(x->b.get(), p.gemm_k * p.gemm_n, StreamSeed(p.timing.seed, lr->rank, 31), lr->compute.get()));
    MOETUNE_CUDA(cudaStreamSynchronize(lr->compute.get()));
    for (Event* e : {&x->start, &x->gemm_end, &x->coll_end}) MOETUNE_PROBE_RETURN_IF_ERROR(e->Create());
    MOETUNE_PROBE_RETURN_IF_ERROR(cb[i].in.Create(elems * 2));
    MOETUNE_PROBE_RETURN_IF_ERROR(cb[i].out.Create(elems * 2));
    // Every rank contributes ar_inputs.Value(rank, j); checked below.
    MOETUNE_PROBE_RETURN_IF_ERROR(Fill(cb[i].in.get(), elems, lr->rank, DType::kBf16, ar_inputs, lr->stream.get()));
    pr.push_back(std::move(x));
  }
  auto gemm = [&](size_t i) -> ProbeStatus {
    const float alpha = 1.0f, beta = 0.0f;
    MOETUNE_CUDA(cudaSetDevice(g->ranks()[i]->device));
    MOETUNE_CUBLAS(cublasGemmEx(pr[i]->blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, p.gemm_n, p.gemm_m, p.gemm_k, &alpha,
                                pr[i]->b.get(), CUDA_R_16BF, p.gemm_n, pr[i]->a.get(), CUDA_R_16BF, p.gemm_k, &beta,
                                pr[i]->c.get(), CUDA_R_16BF, p.gemm_n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return ProbeStatus::Ok();
  };
  if (p.timing.verify) {
    MOETUNE_PROBE_RETURN_IF_ERROR(g->EndPhase("verify", [&]() -> ProbeStatus {
      MOETUNE_PROBE_RETURN_IF_ERROR(g->agreement().InjectedFailure("verify"));
      MOETUNE_PROBE_RETURN_IF_ERROR(Issue(g.get(), cb, CollectiveOp::kAllReduce, elems, ncclBfloat16));
      for (size_t i = 0; i < local; ++i) {
        MOETUNE_CUDA(cudaSetDevice(g->ranks()[i]->device));
        MOETUNE_PROBE_RETURN_IF_ERROR(g->WaitStream(g->ranks()[i]->stream.get()));
        std::vector<float> out;
        MOETUNE_PROBE_RETURN_IF_ERROR(FromDevice(cb[i].out.get(), elems, DType::kBf16, &out));
        for (size_t j = 0; j < elems; j += std::max<size_t>(1, elems / 4096)) {
          const double want = ExpectedCollectiveValue(ar_inputs, CollectiveOp::kAllReduce, g->ranks()[i]->rank,
                                                      g->world_size(), j, 0);
          if (out[j] != want) {
            return DataLoss("overlap all_reduce (cuda): element " + std::to_string(j) + ": got " +
                            std::to_string(out[j]) + ", want " + std::to_string(want));
          }
        }
      }
      return ProbeStatus::Ok();
    }()));
  }
  // mode 0: GEMM alone, 1: collective alone, 2: both on separate streams.
  // One GEMM and one 256 MB-class all-reduce per sample: milliseconds each,
  // so the few launches are a negligible share (unlike the small
  // collectives, timed back to back in RunCollectives).
  Measurement gemm_alone, coll_alone, gemm_over, coll_over, both;
  auto elapsed = [&](const Event& from, const Event& to, double* s) -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(g->Wait(to));
    float ms = 0;
    MOETUNE_CUDA(cudaEventElapsedTime(&ms, from.get(), to.get()));
    *s = ms * 1e-3;
    return ProbeStatus::Ok();
  };
  MOETUNE_PROBE_RETURN_IF_ERROR(g->EndPhase("time", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(g->agreement().InjectedFailure("time"));
    for (int mode = 0; mode < 3; ++mode) {
      for (int it = 0; it < p.timing.warmup_iters + p.timing.timed_iters; ++it) {
        MOETUNE_PROBE_RETURN_IF_ERROR(g->Barrier());
        for (size_t i = 0; i < local; ++i) {
          LocalRank* lr = g->ranks()[i].get();
          MOETUNE_CUDA(cudaSetDevice(lr->device));
          MOETUNE_CUDA(cudaEventRecord(pr[i]->start.get(), lr->stream.get()));
          MOETUNE_CUDA(cudaStreamWaitEvent(lr->compute.get(), pr[i]->start.get(), 0));
        }
        if (mode != 1) {
          for (size_t i = 0; i < local; ++i) MOETUNE_PROBE_RETURN_IF_ERROR(gemm(i));
        }
        if (mode != 0) {
          MOETUNE_PROBE_RETURN_IF_ERROR(Issue(g.get(), cb, CollectiveOp::kAllReduce, elems, ncclBfloat16));
        }
        double t_gemm = 0, t_coll = 0;
        for (size_t i = 0; i < local; ++i) {
          LocalRank* lr = g->ranks()[i].get();
          MOETUNE_CUDA(cudaSetDevice(lr->device));
          MOETUNE_CUDA(cudaEventRecord(pr[i]->gemm_end.get(), lr->compute.get()));
          MOETUNE_CUDA(cudaEventRecord(pr[i]->coll_end.get(), lr->stream.get()));
        }
        for (size_t i = 0; i < local; ++i) {
          double tg = 0, tc = 0;
          MOETUNE_PROBE_RETURN_IF_ERROR(elapsed(pr[i]->start, pr[i]->gemm_end, &tg));
          MOETUNE_PROBE_RETURN_IF_ERROR(elapsed(pr[i]->start, pr[i]->coll_end, &tc));
          t_gemm = std::max(t_gemm, tg);
          t_coll = std::max(t_coll, tc);
        }
        if (it < p.timing.warmup_iters) continue;
        if (mode == 0) gemm_alone.samples_seconds.push_back(t_gemm);
        if (mode == 1) coll_alone.samples_seconds.push_back(t_coll);
        if (mode == 2) {
          gemm_over.samples_seconds.push_back(t_gemm);
          coll_over.samples_seconds.push_back(t_coll);
          both.samples_seconds.push_back(std::max(t_gemm, t_coll));
        }
      }
    }
    return ProbeStatus::Ok();
  }()));
  const double flops = GemmFlops(p.gemm_m, p.gemm_n, p.gemm_k);
  const double bus = BusBandwidthFactor(p.op, g->world_size());
  struct Named { Measurement* m; const char* name; bool is_gemm; bool is_coll; };
  for (const Named& nm : {Named{&gemm_alone, roles::kGemmAlone, true, false}, Named{&coll_alone, roles::kCollectiveAlone, false, true},
                          Named{&gemm_over, roles::kGemmOverlapped, true, false},
                          Named{&coll_over, roles::kCollectiveOverlapped, false, true}, Named{&both, roles::kBoth, false, false}}) {
    nm.m->name = nm.name;
    nm.m->labels = {{"op", CollectiveOpName(p.op)},
                    {"collective_bytes", std::to_string(p.collective_bytes)},
                    {"gemm", std::to_string(p.gemm_m) + "x" + std::to_string(p.gemm_n) + "x" + std::to_string(p.gemm_k)},
                    {"dtype", "bf16"}};
    if (nm.is_gemm) nm.m->flops = flops;
    if (nm.is_coll) {
      nm.m->bytes = static_cast<double>(p.collective_bytes);
      nm.m->bus_factor = bus;
      nm.m->verified = p.timing.verify;
    }
    nm.m->Finalize();
  }
  const double tg = gemm_alone.PlannerSeconds(), tc = coll_alone.PlannerSeconds(), tb = both.PlannerSeconds();
  both.values[roles::kValueHiddenFraction] = tc > 0 ? std::clamp((tg + tc - tb) / tc, 0.0, 1.0) : 0.0;
  both.values[roles::kValueGemmSlowdown] = tg > 0 ? gemm_over.PlannerSeconds() / tg : 0.0;
  both.values[roles::kValueCollectiveSlowdown] = tc > 0 ? coll_over.PlannerSeconds() / tc : 0.0;
  for (Measurement* m : {&gemm_alone, &coll_alone, &gemm_over, &coll_over, &both}) result->measurements.push_back(std::move(*m));
  return g->Finish();
}

}  // namespace moetune::kernels::cuda
