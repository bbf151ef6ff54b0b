// CPU twin of the grouped GEMM probe (see cpu_probes.h): OpenBLAS sgemm.
#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>

#include <cblas.h>

#include "kernels/cpu/cpu_probes_internal.h"
#include "kernels/cpu/cpu_util.h"
#include "kernels/measurement_roles.h"
#include "kernels/random.h"
#include "kernels/reference.h"

namespace moetune::kernels::cpu {
namespace {

// One row-major GEMM C = op(A) op(B); k == 0 means C = 0.
struct GemmOp {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  double Flops() const { return GemmFlops(m, n, k); }
};

void RunOp(const GemmOp& op) {
  if (op.m == 0 || op.n == 0) return;
  if (op.k == 0) {
    for (int64_t i = 0; i < op.m; ++i) std::memset(op.c + i * op.ldc, 0, op.n * sizeof(float));
    return;
  }
  cblas_sgemm(CblasRowMajor, op.trans_a ? CblasTrans : CblasNoTrans,
              op.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(op.m),
              static_cast<blasint>(op.n), static_cast<blasint>(op.k), 1.0f, op.a,
              static_cast<blasint>(op.lda), op.b, static_cast<blasint>(op.ldb), 0.0f, op.c,
              static_cast<blasint>(op.ldc));
}

void Poison(const GemmOp& op) {
  for (int64_t i = 0; i < op.m; ++i) {
    std::fill(op.c + i * op.ldc, op.c + i * op.ldc + op.n, std::numeric_limits<float>::quiet_NaN());
  }
}

// fp32 GEMMs with fp32 outputs (kernels/reference.h GemmTolerance).
constexpr GemmTolerance kCpuTolerance{kFp32UnitRoundoff, kFp32UnitRoundoff, 8};

GemmCheckResult Check(const GemmOp& op) {
  return CheckGemmRows(op.trans_a, op.trans_b, op.m, op.n, op.k, op.a, op.lda, op.b, op.ldb, op.c,
                       op.ldc, SampleRows(op.m, 4), kCpuTolerance);
}

// Largest-first assignment of ops to workers by FLOPs (LPT schedule).
std::vector<std::vector<size_t>> Assign(const std::vector<GemmOp>& ops, int workers) {
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return ops[x].Flops() > ops[y].Flops(); });
  std::vector<std::vector<size_t>> out(workers);
  std::vector<double> load(workers, 0);
  for (size_t i : order) {
    const int w = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    out[w].push_back(i);
    load[w] += ops[i].Flops();
  }
  return out;
}

// Restores OpenBLAS's thread count when leaving a scope that changed it.
class BlasThreads {
 public:
  explicit BlasThreads(int n) : saved_(openblas_get_num_threads()) { openblas_set_num_threads(n); }
  ~BlasThreads() { openblas_set_num_threads(saved_); }

 private:
  int saved_;
};

using roles::GemmImpl;
using roles::GemmPass;

}  // namespace

MxEmulatedInputs EmulateMxInputs(const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& dy, const std::vector<int64_t>& counts,
                                 int64_t hidden, int64_t ffn_hidden) {
  const int64_t k = hidden, n = ffn_hidden, experts = static_cast<int64_t>(counts.size());
  const int64_t tokens = static_cast<int64_t>(x.size()) / k;
  MxEmulatedInputs mx;
  mx.x_fwd.resize(x.size());
  mx.w_fwd.resize(w.size());
  mx.dy_bd.resize(dy.size());
  mx.w_bd.resize(w.size());
  mx.x_bw.resize(x.size());
  mx.dy_bw.resize(dy.size());
  // Element (r, c) of each quantized view sits at r * row_stride + c * col_stride.
  auto round_trip = [](const float* src, float* dst, int64_t rows, int64_t cols, int64_t row_stride,
                       int64_t col_stride) {
    DequantizeMx(QuantizeMx(src, rows, cols, row_stride, col_stride), dst, row_stride, col_stride);
  };
  round_trip(x.data(), mx.x_fwd.data(), tokens, k, k, 1);         // rows of X along K
  round_trip(dy.data(), mx.dy_bd.data(), tokens, n, n, 1);        // rows of dY along N
  round_trip(w.data(), mx.w_bd.data(), experts * k, n, n, 1);     // rows of W along N
  int64_t off = 0;
  for (int64_t e = 0; e < experts; ++e) {
    // Columns of W_e along K: view (n, k) at k * N + n.
    round_trip(w.data() + e * k * n, mx.w_fwd.data() + e * k * n, n, k, 1, n);
    if (counts[e] > 0) {  // columns of X_e / dY_e along the expert's tokens
      round_trip(x.data() + off * k, mx.x_bw.data() + off * k, k, counts[e], 1, k);
      round_trip(dy.data() + off * n, mx.dy_bw.data() + off * n, n, counts[e], 1, n);
    }
    off += counts[e];
  }
  return mx;
}

ProbeStatus RunGroupedGemm(const GroupedGemmParams& p, ProbeResult* result) {
  const std::vector<int64_t> counts = ExpertTokenCounts(p);
  const int64_t e_count = p.num_experts, k_dim = p.hidden, n_dim = p.ffn_hidden;
  int64_t tokens = 0, max_tokens = 0;
  for (int64_t c : counts) tokens += c, max_tokens = std::max(max_tokens, c);
  std::vector<int64_t> offsets(e_count + 1, 0);
  for (int64_t e = 0; e < e_count; ++e) offsets[e + 1] = offsets[e] + counts[e];

  const uint64_t seed = p.timing.seed;
  // Mixed-magnitude inputs (kernels/random.h), the same on both backends.
  const std::vector<float> x = MixedMagnitudeValues(StreamSeed(seed, 0, 10), tokens, k_dim);
  const std::vector<float> w = MixedMagnitudeValues(StreamSeed(seed, 0, 11), e_count * k_dim, n_dim);
  const std::vector<float> dy = MixedMagnitudeValues(StreamSeed(seed, 0, 12), tokens, n_dim);
  std::vector<float> y(tokens * n_dim), dx(tokens * k_dim), dw(e_count * k_dim * n_dim);
  std::vector<float> dense_out(std::max(tokens * std::max(n_dim, k_dim), k_dim * n_dim));

  struct Pass {
    GemmPass pass;
    std::vector<GemmOp> grouped;
    GemmOp dense;
  };
  // mxfp8 has no CPU GEMM: its numerics are emulated (inputs MX-quantized and
  // dequantized once, before timing) and the GEMMs run in fp32 on the
  // dequantized values. Other dtypes run in fp32 on the unrounded inputs.
  const bool mx = p.dtype == DType::kMxfp8;
  MxEmulatedInputs emulated;
  if (mx) emulated = EmulateMxInputs(x, w, dy, counts, k_dim, n_dim);
  const float* x_fwd = mx ? emulated.x_fwd.data() : x.data();
  const float* w_fwd = mx ? emulated.w_fwd.data() : w.data();
  const float* dy_bd = mx ? emulated.dy_bd.data() : dy.data();
  const float* w_bd = mx ? emulated.w_bd.data() : w.data();
  const float* x_bw = mx ? emulated.x_bw.data() : x.data();
  const float* dy_bw = mx ? emulated.dy_bw.data() : dy.data();

  std::vector<Pass> passes;
  if (p.forward) {  // Y_e[t,N] = X_e[t,K] W_e[K,N]
    Pass pass{GemmPass::kFwd, {}, {false, false, tokens, n_dim, k_dim, x_fwd, k_dim, w_fwd, n_dim,
                          dense_out.data(), n_dim}};
    for (int64_t e = 0; e < e_count; ++e) {
      pass.grouped.push_back({false, false, counts[e], n_dim, k_dim, x_fwd + offsets[e] * k_dim,
                              k_dim, w_fwd + e * k_dim * n_dim, n_dim, y.data() + offsets[e] * n_dim,
                              n_dim});
    }
    passes.push_back(std::move(pass));
  }
  if (p.backward_data) {  // dX_e[t,K] = dY_e[t,N] W_e^T[N,K]
    Pass pass{GemmPass::kBwdData, {}, {false, true, tokens, k_dim, n_dim, dy_bd, n_dim, w_bd, n_dim,
                               dense_out.data(), k_dim}};
    for (int64_t e = 0; e < e_count; ++e) {
      pass.grouped.push_back({false, true, counts[e], k_dim, n_dim, dy_bd + offsets[e] * n_dim,
                              n_dim, w_bd + e * k_dim * n_dim, n_dim,
                              dx.data() + offsets[e] * k_dim, k_dim});
    }
    passes.push_back(std::move(pass));
  }
  if (p.backward_weight) {  // dW_e[K,N] = X_e^T[K,t] dY_e[t,N]
    Pass pass{GemmPass::kBwdWeight, {}, {true, false, k_dim, n_dim, tokens, x_bw, k_dim, dy_bw, n_dim,
                                 dense_out.data(), n_dim}};
    for (int64_t e = 0; e < e_count; ++e) {
      pass.grouped.push_back({true, false, k_dim, n_dim, counts[e], x_bw + offsets[e] * k_dim,
                              k_dim, dy_bw + offsets[e] * n_dim, n_dim,
                              dw.data() + e * k_dim * n_dim, n_dim});
    }
    passes.push_back(std::move(pass));
  }

  const int workers = std::max(1u, std::thread::hardware_concurrency());
  WorkerPool pool(workers);
  for (Pass& pass : passes) {
    const auto assignment = Assign(pass.grouped, workers);
    const std::vector<GemmOp> dense_only(1, pass.dense);
    double dense_seconds = 0;
    std::vector<Measurement> ms;
    for (GemmImpl impl : {GemmImpl::kDenseRef, GemmImpl::kLoop, GemmImpl::kGrouped}) {
      std::function<void()> run;
      const std::vector<GemmOp>& outputs = impl == GemmImpl::kDenseRef ? dense_only : pass.grouped;
      if (impl == GemmImpl::kDenseRef) {
        run = [&] { RunOp(pass.dense); };
      } else if (impl == GemmImpl::kLoop) {
        run = [&] {
          for (const GemmOp& op : pass.grouped) RunOp(op);
        };
      } else {
        run = [&] {
          BlasThreads one(1);
          pool.Run([&](int wk) {
            for (size_t i : assignment[wk]) RunOp(pass.grouped[i]);
          });
        };
      }
      Measurement m;
      m.name = roles::GroupedGemmName(pass.pass, impl);
      m.labels = {{roles::kLabelPass, roles::Name(pass.pass)},
                  {roles::kLabelImpl, roles::Name(impl)},
                  {roles::kLabelDType, DTypeName(p.dtype)},
                  {"compute_dtype", "fp32"},
                  {"tokens", std::to_string(tokens)}};
      roles::SetGemmShapeLabels(roles::GroupedGemmShape(pass.pass, impl, e_count, tokens, max_tokens, k_dim, n_dim),
                                &m.labels);
      if (mx) {
        m.labels["emulated"] =
            "mxfp8 numerics: inputs quantized to E4M3 with a UE8M0 scale per 32 along each GEMM's "
            "reduction axis, dequantized to fp32 before timing; the timed GEMMs are fp32";
      }
      // Correctness first: poison, run once, check sampled rows of every GEMM.
      if (p.timing.verify) {
        for (const GemmOp& op : outputs) Poison(op);
        run();
        GemmCheckResult all;
        for (size_t i = 0; i < outputs.size(); ++i) {
          const GemmCheckResult r = Check(outputs[i]);
          if (!r.ok()) {
            return DataLoss("grouped_gemm " + m.name + " (cpu, fp32): GEMM " + std::to_string(i) +
                            " (m " + std::to_string(outputs[i].m) + ", n " + std::to_string(outputs[i].n) +
                            ", k " + std::to_string(outputs[i].k) + "): " + std::to_string(r.bad) + " of " +
                            std::to_string(r.checked) + " checked elements outside tolerance, worst " +
                            r.worst + ", relative error norm " + std::to_string(r.RelativeErrorNorm()));
          }
          all.Merge(r);
        }
        m.max_rel_error = all.RelativeErrorNorm();
        m.values["checked_elements"] = static_cast<double>(all.checked);
        m.verified = true;
      }
      MOETUNE_PROBE_RETURN_IF_ERROR(TimeSamples(p.timing, nullptr, [&] {
        run();
        return ProbeStatus::Ok();
      }, &m.samples_seconds));
      for (const GemmOp& op : outputs) m.flops += op.Flops();
      m.Finalize();
      if (impl == GemmImpl::kDenseRef) dense_seconds = m.PlannerSeconds();
      if (m.PlannerSeconds() > 0) m.efficiency_vs_reference = dense_seconds / m.PlannerSeconds();
      ms.push_back(std::move(m));
    }
    for (auto& m : ms) result->measurements.push_back(std::move(m));
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cpu
