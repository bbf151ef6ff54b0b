// EP dispatch/combine over NCCL. Per plan stage (kernels/dispatch_plan.h):
// a permute kernel gathers the rows for each destination into one contiguous
// send buffer, then grouped ncclSend/ncclRecv exchange them. The stand-in
// experts scale each received row by sum_j w_j * scale(e_j); combine sends the
// rows back along the same stages and a reduce kernel sums every row's
// returned copies (fp32 accumulation, bf16 storage). Payload: bf16.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>

#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/cuda/nccl_group.h"
#include "kernels/cuda/timing.h"
#include "kernels/dispatch_plan.h"
#include "kernels/measurement_roles.h"

namespace moetune::kernels::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;

// dst[r] = src[idx[r]], rows of h bf16 (h % 8 == 0: 16-byte vectors).
__global__ void GatherRows(const bf16* src, const int64_t* idx, int64_t rows, int64_t h, bf16* dst) {
  const int64_t vecs = h / 8;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const uint4* s = reinterpret_cast<const uint4*>(src + idx[r] * h);
    uint4* d = reinterpret_cast<uint4*>(dst + r * h);
    for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) d[c] = s[c];
  }
}

// out[r] = in[r] * sum_j w_j * (1 + (e_j % 8) / 8): the stand-in experts.
__global__ void ApplyExperts(const bf16* in, const int64_t* offsets, const int32_t* ids, const float* weights,
                             int64_t rows, int64_t h, bf16* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float f = 0;
    for (int64_t j = offsets[r]; j < offsets[r + 1]; ++j) f += weights[j] * (1.0f + (ids[j] % 8) / 8.0f);
    for (int64_t c = threadIdx.x; c < h; c += blockDim.x) {
      out[r * h + c] = __float2bfloat16(__bfloat162float(in[r * h + c]) * f);
    }
  }
}

// out[r] = sum of ret[pos[j]] for j in [offsets[r], offsets[r+1]).
__global__ void ReduceRows(const bf16* ret, const int64_t* offsets, const int64_t* pos, int64_t rows, int64_t h,
                           bf16* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (int64_t c = threadIdx.x; c < h; c += blockDim.x) {
      float acc = 0;
      for (int64_t j = offsets[r]; j < offsets[r + 1]; ++j) acc += __bfloat162float(ret[pos[j] * h + c]);
      out[r * h + c] = __float2bfloat16(acc);
    }
  }
}

int Blocks(int64_t rows) { return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, 65535))); }

template <typename T>
ProbeStatus UploadVector(const std::vector<T>& v, DeviceBuffer* d) {
  MOETUNE_PROBE_RETURN_IF_ERROR(d->Create(std::max<size_t>(1, v.size()) * sizeof(T)));
  if (!v.empty()) MOETUNE_CUDA(cudaMemcpy(d->get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return ProbeStatus::Ok();
}

// Device state of one local rank.
struct RankState {
  LocalRank* lr = nullptr;
  DispatchPlan plan;
  std::vector<DeviceBuffer> bufs, cbufs, send, ret;
  std::vector<DeviceBuffer> gather_idx, reduce_off, reduce_pos;
  std::vector<std::vector<int64_t>> send_counts;  // [stage][peer] rows, = send_rows[peer].size()
  DeviceBuffer expert_out, expert_off, expert_ids, expert_w;
  std::vector<float> tokens;  // bf16-rounded inputs
  Event start, stop;
};

class Runner {
 public:
  Runner(const DispatchCombineParams& p, NcclGroup* group) : p_(p), h_(p.hidden), group_(group) {}

  ProbeStatus Init(const std::vector<Routing>& routing) {
    for (auto& lr : group_->ranks()) {
      auto st = std::make_unique<RankState>();
      st->lr = lr.get();
      st->plan = BuildDispatchPlan(p_, lr->rank, routing);
      MOETUNE_CUDA(cudaSetDevice(lr->device));
      const DispatchPlan& pl = st->plan;
      const size_t n = pl.stages.size();
      st->bufs.resize(n + 1);
      st->cbufs.resize(n + 1);
      st->send.resize(n);
      st->ret.resize(n);
      st->gather_idx.resize(n);
      st->reduce_off.resize(n);
      st->reduce_pos.resize(n);
      st->send_counts.resize(n);
      for (size_t s = 0; s <= n; ++s) {
        MOETUNE_PROBE_RETURN_IF_ERROR(st->bufs[s].Create(pl.buffer_rows[s] * h_ * sizeof(bf16)));
        MOETUNE_PROBE_RETURN_IF_ERROR(st->cbufs[s].Create(pl.buffer_rows[s] * h_ * sizeof(bf16)));
      }
      for (size_t s = 0; s < n; ++s) {
        const ExchangeStage& es = pl.stages[s];
        MOETUNE_PROBE_RETURN_IF_ERROR(st->send[s].Create(es.RowsSent() * h_ * sizeof(bf16)));
        MOETUNE_PROBE_RETURN_IF_ERROR(st->ret[s].Create(es.RowsSent() * h_ * sizeof(bf16)));
        std::vector<int64_t> idx;
        for (const auto& rows : es.send_rows) {
          idx.insert(idx.end(), rows.begin(), rows.end());
          st->send_counts[s].push_back(static_cast<int64_t>(rows.size()));
        }
        MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(idx, &st->gather_idx[s]));
        MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(es.reduce_offsets, &st->reduce_off[s]));
        MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(es.reduce_positions, &st->reduce_pos[s]));
      }
      MOETUNE_PROBE_RETURN_IF_ERROR(st->expert_out.Create(pl.buffer_rows[n] * h_ * sizeof(bf16)));
      MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(pl.expert_offsets, &st->expert_off));
      MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(pl.expert_ids, &st->expert_ids));
      MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(pl.expert_weights, &st->expert_w));
      // Tokens, rounded to bf16 (the reference uses the rounded values).
      st->tokens = MakeTokens(p_, lr->rank);
      std::vector<uint16_t> hb(st->tokens.size());
      for (size_t i = 0; i < hb.size(); ++i) {
        hb[i] = FloatToBf16(st->tokens[i]);
        st->tokens[i] = Bf16ToFloat(hb[i]);
      }
      MOETUNE_CUDA(cudaMemcpy(st->bufs[0].get(), hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
      // Pageable cudaMemcpy may return before its DMA lands; the rank's stream
      // does not synchronize with the legacy stream.
      MOETUNE_CUDA(cudaDeviceSynchronize());
      MOETUNE_PROBE_RETURN_IF_ERROR(st->start.Create());
      MOETUNE_PROBE_RETURN_IF_ERROR(st->stop.Create());
      states_.push_back(std::move(st));
    }
    return ProbeStatus::Ok();
  }

  ProbeStatus Dispatch() {
    const size_t n = states_[0]->plan.stages.size();
    for (size_t s = 0; s < n; ++s) {
      for (auto& st : states_) {  // permute
        MOETUNE_CUDA(cudaSetDevice(st->lr->device));
        const int64_t rows = st->plan.stages[s].RowsSent();
        if (rows > 0) {
          GatherRows<<<Blocks(rows), kThreads, 0, st->lr->stream.get()>>>(
              st->bufs[s].get<bf16>(), st->gather_idx[s].get<int64_t>(), rows, h_, st->send[s].get<bf16>());
          MOETUNE_CUDA(cudaGetLastError());
        }
      }
      NcclGroupCall call(group_);
      MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
      for (auto& st : states_) {
        const ExchangeStage& es = st->plan.stages[s];
        MOETUNE_PROBE_RETURN_IF_ERROR(
            Exchange(st->lr, st->send[s].get<bf16>(), st->send_counts[s], st->bufs[s + 1].get<bf16>(), es.recv_counts));
      }
      MOETUNE_PROBE_RETURN_IF_ERROR(call.End());
    }
    return ProbeStatus::Ok();
  }

  ProbeStatus Experts() {
    for (auto& st : states_) {
      MOETUNE_CUDA(cudaSetDevice(st->lr->device));
      const int64_t rows = st->plan.buffer_rows.back();
      if (rows == 0) continue;
      ApplyExperts<<<Blocks(rows), kThreads, 0, st->lr->stream.get()>>>(
          st->bufs.back().get<bf16>(), st->expert_off.get<int64_t>(), st->expert_ids.get<int32_t>(),
          st->expert_w.get<float>(), rows, h_, st->expert_out.get<bf16>());
      MOETUNE_CUDA(cudaGetLastError());
    }
    return ProbeStatus::Ok();
  }

  ProbeStatus Combine() {
    const size_t n = states_[0]->plan.stages.size();
    for (size_t s = n; s-- > 0;) {
      NcclGroupCall call(group_);
      MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
      for (auto& st : states_) {
        const ExchangeStage& es = st->plan.stages[s];
        bf16* src = s + 1 == n ? st->expert_out.get<bf16>() : st->cbufs[s + 1].get<bf16>();
        // Reverse direction: what we received from each rank goes back to it.
        MOETUNE_PROBE_RETURN_IF_ERROR(Exchange(st->lr, src, es.recv_counts, st->ret[s].get<bf16>(), st->send_counts[s]));
      }
      MOETUNE_PROBE_RETURN_IF_ERROR(call.End());
      for (auto& st : states_) {  // un-permute + reduce
        MOETUNE_CUDA(cudaSetDevice(st->lr->device));
        const int64_t rows = st->plan.buffer_rows[s];
        ReduceRows<<<Blocks(rows), kThreads, 0, st->lr->stream.get()>>>(
            st->ret[s].get<bf16>(), st->reduce_off[s].get<int64_t>(), st->reduce_pos[s].get<int64_t>(), rows, h_,
            st->cbufs[s].get<bf16>());
        MOETUNE_CUDA(cudaGetLastError());
      }
    }
    return ProbeStatus::Ok();
  }

  // Times `op` on every local rank, t.iters_per_sample back to back per
  // sample after a barrier (kernels/cuda/timing.h); the sample is the
  // slowest local rank's.
  ProbeStatus TimeOp(const TimingOptions& t, ProbeStatus (Runner::*op)(), Measurement* m) {
    std::vector<TimedStream> streams;
    for (auto& st : states_) streams.push_back({st->lr->stream.get(), st->lr->device, &st->start, &st->stop});
    return TimeBackToBack(
        t, streams, [&] { return group_->Barrier(); }, [&] { return (this->*op)(); },
        [&](const Event& e) { return group_->Wait(e); }, m);
  }

  // Poisons the outputs, runs a round trip and checks every element against
  // x[t] * sum_k w_k * scale(e_k) (bf16 tolerance).
  ProbeStatus Verify(const std::vector<Routing>& routing, double* max_err) {
    for (auto& st : states_) {
      MOETUNE_CUDA(cudaSetDevice(st->lr->device));
      MOETUNE_CUDA(cudaMemsetAsync(st->cbufs[0].get(), 0xff, st->cbufs[0].bytes(), st->lr->stream.get()));
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(Dispatch());
    MOETUNE_PROBE_RETURN_IF_ERROR(Experts());
    MOETUNE_PROBE_RETURN_IF_ERROR(Combine());
    for (auto& st : states_) {
      MOETUNE_CUDA(cudaSetDevice(st->lr->device));
      MOETUNE_PROBE_RETURN_IF_ERROR(group_->WaitStream(st->lr->stream.get()));
      std::vector<uint16_t> out(st->tokens.size());
      MOETUNE_CUDA(cudaMemcpy(out.data(), st->cbufs[0].get(), out.size() * 2, cudaMemcpyDeviceToHost));
      const std::vector<double> want = ExpectedCombine(p_, routing[st->lr->rank], st->tokens);
      for (size_t i = 0; i < want.size(); ++i) {
        const double got = Bf16ToFloat(out[i]);
        double err = std::fabs(got - want[i]) / (std::fabs(want[i]) + 1e-2);
        if (!(err == err)) err = 1e300;
        *max_err = std::max(*max_err, err);
        if (err > 2e-2) {
          return DataLoss("dispatch_combine (cuda, " + std::string(DispatchModeName(p_.mode)) + ", rank " +
                          std::to_string(st->lr->rank) + "): token " + std::to_string(i / h_) + " element " +
                          std::to_string(i % h_) + ": got " + std::to_string(got) + ", want " +
                          std::to_string(want[i]));
        }
      }
    }
    return ProbeStatus::Ok();
  }

  const std::vector<std::unique_ptr<RankState>>& states() const { return states_; }

 private:
  // Grouped send/recv of one rank: rows per peer, contiguous in peer order.
  ProbeStatus Exchange(LocalRank* lr, const bf16* send, const std::vector<int64_t>& send_rows, bf16* recv,
                       const std::vector<int64_t>& recv_rows) {
    int64_t off = 0;
    for (size_t d = 0; d < send_rows.size(); ++d) {
      const int64_t n = send_rows[d] * h_;
      if (n > 0) {
        MOETUNE_NCCL(ncclSend(send + off, n, ncclBfloat16, static_cast<int>(d), lr->comm, lr->stream.get()));
      }
      off += n;
    }
    off = 0;
    for (size_t s = 0; s < recv_rows.size(); ++s) {
      const int64_t n = recv_rows[s] * h_;
      if (n > 0) {
        MOETUNE_NCCL(ncclRecv(recv + off, n, ncclBfloat16, static_cast<int>(s), lr->comm, lr->stream.get()));
      }
      off += n;
    }
    return ProbeStatus::Ok();
  }

  const DispatchCombineParams& p_;
  const int64_t h_;
  NcclGroup* group_;
  std::vector<std::unique_ptr<RankState>> states_;
};

// This process's rank's own routing, all-gathered over NCCL: expert ids
// (exact in fp32 below 2^24) then weights, tokens_per_rank * top_k each.
ProbeStatus ExchangeRouting(const DispatchCombineParams& p, NcclGroup* g, std::vector<Routing>* routing) {
  LocalRank* lr = g->ranks()[0].get();
  const Routing mine = MakeRouting(p, lr->rank);
  const size_t n = mine.experts.size();
  std::vector<float> send(2 * n), all(2 * n * static_cast<size_t>(p.ep_size));
  for (size_t i = 0; i < n; ++i) {
    send[i] = static_cast<float>(mine.experts[i]);
    send[n + i] = mine.weights[i];
  }
  MOETUNE_CUDA(cudaSetDevice(lr->device));
  DeviceBuffer dsend, dall;
  MOETUNE_PROBE_RETURN_IF_ERROR(UploadVector(send, &dsend));
  MOETUNE_PROBE_RETURN_IF_ERROR(dall.Create(all.size() * sizeof(float)));
  {
    NcclGroupCall call(g);
    MOETUNE_PROBE_RETURN_IF_ERROR(call.Start());
    MOETUNE_NCCL(ncclAllGather(dsend.get(), dall.get(), send.size(), ncclFloat32, lr->comm, lr->stream.get()));
    MOETUNE_PROBE_RETURN_IF_ERROR(call.End());
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(g->WaitStream(lr->stream.get()));
  MOETUNE_CUDA(cudaMemcpy(all.data(), dall.get(), all.size() * sizeof(float), cudaMemcpyDeviceToHost));
  routing->assign(static_cast<size_t>(p.ep_size), mine);
  for (int64_t r = 0; r < p.ep_size; ++r) {
    const float* src = all.data() + r * 2 * n;
    for (size_t i = 0; i < n; ++i) {
      (*routing)[r].experts[i] = static_cast<int32_t>(src[i]);
      (*routing)[r].weights[i] = src[n + i];
    }
  }
  return ProbeStatus::Ok();
}

}  // namespace

ProbeStatus RunDispatchCombine(const DispatchCombineParams& p, const GroupSpec& group, ProbeResult* result) {
  MOETUNE_PROBE_RETURN_IF_ERROR(ValidateGroup(group, p.ep_size));
  if (p.hidden % 8 != 0) {
    return InvalidArgument("dispatch_combine (cuda): hidden (" + std::to_string(p.hidden) +
                           ") must be a multiple of 8 (16-byte bf16 rows)");
  }
  if (p.dtype != DType::kBf16) {
    return Unimplemented(std::string("dispatch_combine (cuda): payload dtype ") + DTypeName(p.dtype) +
                         " is not implemented (bf16 is)");
  }
  std::unique_ptr<NcclGroup> nccl;
  MOETUNE_PROBE_RETURN_IF_ERROR(NcclGroup::Create(group, &nccl));
  // Routing: one process driving all ranks draws every rank's; ranks in
  // separate processes draw their own and all-gather them once (untimed), so
  // that every plan is built from the same routing whatever each host's libm
  // makes of the Zipf weights.
  std::vector<Routing> routing;
  MOETUNE_PROBE_RETURN_IF_ERROR(nccl->EndPhase("routing", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(nccl->agreement().InjectedFailure("routing"));
    if (group.store == nullptr) {
      for (int r = 0; r < p.ep_size; ++r) routing.push_back(MakeRouting(p, r));
      return ProbeStatus::Ok();
    }
    return ExchangeRouting(p, nccl.get(), &routing);
  }()));
  Runner runner(p, nccl.get());
  MOETUNE_PROBE_RETURN_IF_ERROR(nccl->EndPhase("setup", runner.Init(routing)));
  double max_err = 0;
  if (p.timing.verify) {
    MOETUNE_PROBE_RETURN_IF_ERROR(nccl->EndPhase("verify", [&]() -> ProbeStatus {
      MOETUNE_PROBE_RETURN_IF_ERROR(nccl->agreement().InjectedFailure("verify"));
      return runner.Verify(routing, &max_err);
    }()));
  }

  Measurement dispatch, combine;
  MOETUNE_PROBE_RETURN_IF_ERROR(nccl->EndPhase("time/dispatch", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(nccl->agreement().InjectedFailure("time/dispatch"));
    return runner.TimeOp(p.timing, &Runner::Dispatch, &dispatch);
  }()));
  MOETUNE_PROBE_RETURN_IF_ERROR(runner.Experts());
  MOETUNE_PROBE_RETURN_IF_ERROR(nccl->EndPhase("time/combine", [&]() -> ProbeStatus {
    MOETUNE_PROBE_RETURN_IF_ERROR(nccl->agreement().InjectedFailure("time/combine"));
    return runner.TimeOp(p.timing, &Runner::Combine, &combine);
  }()));

  // Bytes: the samples are the slowest local rank's time, so the bytes are
  // the busiest local rank's (the most rows sent; with Zipf routing ranks
  // differ several-fold), not rank 0's.
  const RankState* busiest = runner.states()[0].get();
  int64_t busiest_rows = -1;
  for (const auto& st : runner.states()) {
    int64_t rows = 0;
    for (const ExchangeStage& es : st->plan.stages) rows += es.RowsSent();
    if (rows > busiest_rows) busiest_rows = rows, busiest = st.get();
  }
  const DispatchPlan& plan = busiest->plan;
  int64_t rows_sent = 0, rows_remote = 0;
  for (const ExchangeStage& st : plan.stages) {
    rows_sent += st.RowsSent();
    rows_remote += st.RowsSentRemote(plan.rank);
  }
  const double row_bytes = static_cast<double>(p.hidden) * 2;
  for (auto [m, name] : {std::pair<Measurement*, const char*>{&dispatch, roles::kDispatch}, {&combine, roles::kCombine}}) {
    m->name = name;
    m->labels = {{"phase", name},
                 {"mode", DispatchModeName(p.mode)},
                 {"dtype", "bf16"},
                 {"ep_size", std::to_string(p.ep_size)},
                 {"ranks", group.store ? std::to_string(group.rank) : "all local (slowest)"},
                 {"bytes_of_rank", std::to_string(plan.rank)}};
    m->bytes = rows_sent * row_bytes;
    m->bus_factor = rows_sent > 0 ? static_cast<double>(rows_remote) / rows_sent : 0;
    m->values["rows_sent"] = static_cast<double>(rows_sent);
    m->values["rows_sent_remote"] = static_cast<double>(rows_remote);
    m->values["stages"] = static_cast<double>(plan.stages.size());
    m->verified = p.timing.verify;
    m->max_rel_error = max_err;
    m->Finalize();
    result->measurements.push_back(*m);
  }
  return nccl->Finish();
}

}  // namespace moetune::kernels::cuda
