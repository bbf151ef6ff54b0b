// Grouped GEMM probe on the GPU: a loop of cuBLASLt matmuls, one
// cublasGemmGroupedBatchedEx call, and a dense cuBLASLt GEMM of the same FLOPs
// (the reference), for the forward and the two backward GEMMs.
//
// Row-major math (as in the CPU twin) is mapped onto column-major cuBLAS by
// computing the transposed product: row-major C = A B  <=>  col-major
// C^T = B^T A^T, so every GEMM below lists (B, A) in cuBLAS order.
//
// fp8 (E4M3 inputs, bf16 output, fp32 accumulation, unit scales): cuBLASLt
// only runs the "TN" form (op(A) = T, op(B) = N), so the operands are stored
// in that form: W^T for the forward GEMM, and for the weight gradient X^T and
// dY^T with every expert's token range padded with zero columns to a multiple
// of 16 (16-byte leading dimensions). cublasGemmGroupedBatchedEx has no fp8
// path, so fp8 measures the cuBLASLt loop against the dense reference only.
// mxfp8 (block scales, Blackwell) is not implemented yet.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <memory>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/random.h"
#include "kernels/reference.h"

namespace moetune::kernels::cuda {
namespace {

constexpr size_t kLtWorkspaceBytes = 32 << 20;

struct TypeInfo {
  cudaDataType_t in_type;   // A and B
  size_t in_bytes;
  cudaDataType_t out_type;  // C and D
  size_t out_bytes;
};

// One column-major GEMM C[m,n] = op(A) op(B), plus its row-major check.
struct ColGemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  const void* a;
  int lda;
  const void* b;
  int ldb;
  void* c;
  int ldc;
  // Row-major verification: C_row[rm, rn] = op(A_row) op(B_row).
  bool r_ta, r_tb;
  int64_t rm, rn, rk;
  const float* ra;
  int64_t rlda;
  const float* rb;
  int64_t rldb;
  size_t c_offset_elems;  // offset of C in its output buffer
  int64_t rldc;
  double Flops() const { return GemmFlops(m, n, k); }
};

// Largest power of two (<= 256) dividing the address.
uint32_t Alignment(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

// A cuBLASLt matmul prepared once (descriptors + chosen algorithm).
class LtMatmul {
 public:
  LtMatmul() = default;
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  ~LtMatmul() {
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (c_) cublasLtMatrixLayoutDestroy(c_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }
  ProbeStatus Create(cublasLtHandle_t lt, const ColGemm& g, cudaDataType_t in_type, cudaDataType_t out_type) {
    g_ = g;
    MOETUNE_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof(g.ta)));
    MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof(g.tb)));
    const bool an = g.ta == CUBLAS_OP_N, bn = g.tb == CUBLAS_OP_N;
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, in_type, an ? g.m : g.k, an ? g.k : g.m, g.lda));
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, in_type, bn ? g.k : g.n, bn ? g.n : g.k, g.ldb));
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&c_, out_type, g.m, g.n, g.ldc));
    cublasLtMatmulPreference_t pref = nullptr;
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kLtWorkspaceBytes;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                            &ws, sizeof(ws));
    // The heuristic assumes 256-byte aligned operands unless told otherwise;
    // per-expert slices can be less aligned.
    const uint32_t align_a = Alignment(g.a), align_b = Alignment(g.b), align_c = Alignment(g.c);
    const std::pair<cublasLtMatmulPreferenceAttributes_t, const uint32_t*> aligns[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c}};
    for (const auto& [attr, value] : aligns) {
      if (s == CUBLAS_STATUS_SUCCESS) s = cublasLtMatmulPreferenceSetAttribute(pref, attr, value, sizeof(*value));
    }
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = cublasLtMatmulAlgoGetHeuristic(lt, desc_, a_, b_, c_, c_, pref, 1, &heuristic_, &found);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS) {
      return CublasError(s, "cublasLtMatmulPreferenceSetAttribute / cublasLtMatmulAlgoGetHeuristic");
    }
    if (found == 0) {
      return Unimplemented("cublasLtMatmulAlgoGetHeuristic: no algorithm for m=" + std::to_string(g.m) +
                           " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k));
    }
    return ProbeStatus::Ok();
  }
  ProbeStatus Run(cublasLtHandle_t lt, void* workspace, cudaStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    MOETUNE_CUBLAS(cublasLtMatmul(lt, desc_, &alpha, g_.a, a_, g_.b, b_, &beta, g_.c, c_, g_.c, c_,
                                  &heuristic_.algo, workspace, kLtWorkspaceBytes, stream));
    return ProbeStatus::Ok();
  }

 private:
  ColGemm g_{};
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
};

// Uploads `values` (fp32) as `type`, and rounds the host copy the same way so
// the reference sees exactly what the GPU multiplies.
ProbeStatus Upload(std::vector<float>* values, cudaDataType_t type, DeviceBuffer* dev) {
  const size_t n = values->size();
  if (type == CUDA_R_32F) {
    MOETUNE_PROBE_RETURN_IF_ERROR(dev->Create(n * 4));
    MOETUNE_CUDA(cudaMemcpy(dev->get(), values->data(), n * 4, cudaMemcpyHostToDevice));
    return ProbeStatus::Ok();
  }
  if (type == CUDA_R_8F_E4M3) {
    std::vector<__nv_fp8_e4m3> h(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = __nv_fp8_e4m3((*values)[i]);
      (*values)[i] = static_cast<float>(h[i]);
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(dev->Create(n));
    MOETUNE_CUDA(cudaMemcpy(dev->get(), h.data(), n, cudaMemcpyHostToDevice));
    return ProbeStatus::Ok();
  }
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i) {
    if (type == CUDA_R_16BF) {
      h[i] = FloatToBf16((*values)[i]);
      (*values)[i] = Bf16ToFloat(h[i]);
    } else {
      const __half v = __float2half_rn((*values)[i]);
      h[i] = static_cast<__half_raw>(v).x;
      (*values)[i] = __half2float(v);
    }
  }
  MOETUNE_PROBE_RETURN_IF_ERROR(dev->Create(n * 2));
  MOETUNE_CUDA(cudaMemcpy(dev->get(), h.data(), n * 2, cudaMemcpyHostToDevice));
  return ProbeStatus::Ok();
}

ProbeStatus Download(const DeviceBuffer& dev, size_t n, cudaDataType_t type, std::vector<float>* out) {
  out->resize(n);
  if (type == CUDA_R_32F) {
    MOETUNE_CUDA(cudaMemcpy(out->data(), dev.get(), n * 4, cudaMemcpyDeviceToHost));
    return ProbeStatus::Ok();
  }
  std::vector<uint16_t> h(n);
  MOETUNE_CUDA(cudaMemcpy(h.data(), dev.get(), n * 2, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; ++i) {
    if (type == CUDA_R_16BF) {
      (*out)[i] = Bf16ToFloat(h[i]);
    } else {
      __half_raw r;
      r.x = h[i];
      (*out)[i] = __half2float(__half(r));
    }
  }
  return ProbeStatus::Ok();
}

enum class Impl { kDense, kLtLoop, kGroupedEx };
const char* ImplName(Impl i) {
  return i == Impl::kDense ? "dense_ref" : i == Impl::kLtLoop ? "cublaslt_loop" : "cublas_grouped";
}

struct Pass {
  const char* name;
  std::vector<ColGemm> experts;  // non-empty GEMMs only
  std::vector<std::pair<void*, size_t>> zero_fill;  // outputs of empty experts (bytes)
  ColGemm dense;
  DeviceBuffer* out;        // the experts' output buffer
  size_t out_elems;
};

}  // namespace

ProbeStatus RunGroupedGemm(const GroupedGemmParams& p, int device, ProbeResult* result) {
  TypeInfo type;
  switch (p.dtype) {
    case DType::kFp32: type = {CUDA_R_32F, 4, CUDA_R_32F, 4}; break;
    case DType::kBf16: type = {CUDA_R_16BF, 2, CUDA_R_16BF, 2}; break;
    case DType::kFp16: type = {CUDA_R_16F, 2, CUDA_R_16F, 2}; break;
    case DType::kFp8E4M3: type = {CUDA_R_8F_E4M3, 1, CUDA_R_16BF, 2}; break;
    default:
      return Unimplemented(std::string("grouped_gemm (cuda): dtype ") + DTypeName(p.dtype) +
                           " is not implemented yet (fp32, bf16, fp16, fp8_e4m3 are)");
  }
  const bool fp8 = p.dtype == DType::kFp8E4M3;
  if (fp8) {
    int major = 0, minor = 0;
    MOETUNE_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    MOETUNE_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (major * 10 + minor < 89) {
      return Unimplemented("grouped_gemm (cuda): fp8 needs compute capability 8.9 or newer, this device is " +
                           std::to_string(major) + "." + std::to_string(minor));
    }
    if (p.hidden % 16 != 0 || p.ffn_hidden % 16 != 0) {
      return InvalidArgument("grouped_gemm (cuda, fp8): hidden (" + std::to_string(p.hidden) + ") and ffn_hidden (" +
                             std::to_string(p.ffn_hidden) + ") must be multiples of 16");
    }
  }
  const std::vector<int64_t> counts = ExpertTokenCounts(p);
  const int64_t e_count = p.num_experts;
  const int k_dim = static_cast<int>(p.hidden), n_dim = static_cast<int>(p.ffn_hidden);
  int64_t tokens = 0;
  std::vector<int64_t> off(e_count + 1, 0);
  for (int64_t e = 0; e < e_count; ++e) off[e + 1] = off[e] + counts[e];
  tokens = off[e_count];
  if (tokens > INT32_MAX || p.hidden > INT32_MAX || p.ffn_hidden > INT32_MAX) {
    return InvalidArgument("grouped_gemm (cuda): dimensions must fit in int32, tokens = " + std::to_string(tokens));
  }

  const uint64_t seed = p.timing.seed;
  std::vector<float> hx = UniformValues(StreamSeed(seed, 0, 10), tokens * k_dim);
  std::vector<float> hw = UniformValues(StreamSeed(seed, 0, 11), e_count * k_dim * n_dim);
  std::vector<float> hdy = UniformValues(StreamSeed(seed, 0, 12), tokens * n_dim);
  DeviceBuffer x, w, dy, y, dx, dw, dense_out, workspace;
  MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hx, type.in_type, &x));
  MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hw, type.in_type, &w));
  MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hdy, type.in_type, &dy));
  MOETUNE_PROBE_RETURN_IF_ERROR(y.Create(tokens * n_dim * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(dx.Create(tokens * k_dim * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(dw.Create(e_count * k_dim * n_dim * type.out_bytes));
  const size_t dense_elems = std::max<size_t>(tokens * std::max(n_dim, k_dim), size_t(k_dim) * n_dim);
  MOETUNE_PROBE_RETURN_IF_ERROR(dense_out.Create(dense_elems * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(workspace.Create(kLtWorkspaceBytes));

  auto in_at = [&](const DeviceBuffer& b, int64_t elems) {
    return static_cast<const void*>(b.get<char>() + elems * type.in_bytes);
  };
  auto out_at = [&](const DeviceBuffer& b, int64_t elems) {
    return static_cast<void*>(b.get<char>() + elems * type.out_bytes);
  };
  const int kd = k_dim, nd = n_dim, t_all = static_cast<int>(tokens);

  // fp8 only: the TN-form operands (see the top of this file). The values
  // are the already-rounded fp8 values, so rounding again is exact.
  DeviceBuffer wt, xt, dyt;
  std::vector<int64_t> poff(e_count + 1, 0);  // padded token offsets
  for (int64_t e = 0; e < e_count; ++e) poff[e + 1] = poff[e] + (counts[e] + 15) / 16 * 16;
  const int64_t padded = poff[e_count];
  if (fp8) {
    std::vector<float> h(size_t(e_count) * kd * nd);
    for (int64_t e = 0; e < e_count; ++e) {  // Wt_e[N,K] = W_e[K,N]^T
      for (int64_t k = 0; k < kd; ++k) {
        for (int64_t n = 0; n < nd; ++n) h[e * kd * nd + n * kd + k] = hw[e * kd * nd + k * nd + n];
      }
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&h, type.in_type, &wt));
    std::vector<float> hxt(size_t(kd) * padded, 0.0f), hdyt(size_t(nd) * padded, 0.0f);
    for (int64_t e = 0; e < e_count; ++e) {  // X^T [K, P], dY^T [N, P], zero padding
      for (int64_t t = 0; t < counts[e]; ++t) {
        for (int64_t k = 0; k < kd; ++k) hxt[k * padded + poff[e] + t] = hx[(off[e] + t) * kd + k];
        for (int64_t n = 0; n < nd; ++n) hdyt[n * padded + poff[e] + t] = hdy[(off[e] + t) * nd + n];
      }
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hxt, type.in_type, &xt));
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hdyt, type.in_type, &dyt));
  }
  const int pd = static_cast<int>(padded);
  // cudaMemcpy from pageable memory may return before its DMA lands, and the
  // probe's stream does not synchronize with the legacy stream: wait here.
  MOETUNE_CUDA(cudaDeviceSynchronize());

  std::vector<Pass> passes;
  if (p.forward) {  // Y[t,N] = X[t,K] W[K,N]  ->  col: Y^T = W^T X^T
    Pass pass{"fwd", {}, {}, {}, &y, size_t(tokens) * nd};
    // fp8: A = Wt stored [K x N] col-major, op T.
    const cublasOperation_t ta = fp8 ? CUBLAS_OP_T : CUBLAS_OP_N;
    const DeviceBuffer& wa = fp8 ? wt : w;
    const int lda = fp8 ? kd : nd;
    pass.dense = {ta, CUBLAS_OP_N, nd, t_all, kd, wa.get(), lda, x.get(), kd, dense_out.get(), nd,
                  false, false, tokens, nd, kd, hx.data(), kd, hw.data(), nd, 0, nd};
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) continue;
      const int t = static_cast<int>(counts[e]);
      pass.experts.push_back({ta, CUBLAS_OP_N, nd, t, kd, in_at(wa, e * kd * nd), lda, in_at(x, off[e] * kd), kd,
                              out_at(y, off[e] * nd), nd, false, false, t, nd, kd, hx.data() + off[e] * kd, kd,
                              hw.data() + e * kd * nd, nd, size_t(off[e]) * nd, nd});
    }
    passes.push_back(std::move(pass));
  }
  if (p.backward_data) {  // dX[t,K] = dY[t,N] W^T  ->  col: dX^T = W dY^T (already TN)
    Pass pass{"bwd_data", {}, {}, {}, &dx, size_t(tokens) * kd};
    pass.dense = {CUBLAS_OP_T, CUBLAS_OP_N, kd, t_all, nd, w.get(), nd, dy.get(), nd, dense_out.get(), kd,
                  false, true, tokens, kd, nd, hdy.data(), nd, hw.data(), nd, 0, kd};
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) continue;
      const int t = static_cast<int>(counts[e]);
      pass.experts.push_back({CUBLAS_OP_T, CUBLAS_OP_N, kd, t, nd, in_at(w, e * kd * nd), nd, in_at(dy, off[e] * nd),
                              nd, out_at(dx, off[e] * kd), kd, false, true, t, kd, nd, hdy.data() + off[e] * nd, nd,
                              hw.data() + e * kd * nd, nd, size_t(off[e]) * kd, kd});
    }
    passes.push_back(std::move(pass));
  }
  if (p.backward_weight) {  // dW[K,N] = X^T dY  ->  col: dW^T = dY^T X
    Pass pass{"bwd_weight", {}, {}, {}, &dw, size_t(e_count) * kd * nd};
    if (fp8) {  // A = dY^T stored [P x N] col-major (ld P), op T; B = X^T stored [P x K] (ld P)
      pass.dense = {CUBLAS_OP_T, CUBLAS_OP_N, nd, kd, pd, dyt.get(), pd, xt.get(), pd, dense_out.get(), nd,
                    true, false, kd, nd, tokens, hx.data(), kd, hdy.data(), nd, 0, nd};
    } else {
      pass.dense = {CUBLAS_OP_N, CUBLAS_OP_T, nd, kd, t_all, dy.get(), nd, x.get(), kd, dense_out.get(), nd,
                    true, false, kd, nd, tokens, hx.data(), kd, hdy.data(), nd, 0, nd};
    }
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) {  // no tokens: the gradient is zero
        pass.zero_fill.push_back({out_at(dw, e * kd * nd), size_t(kd) * nd * type.out_bytes});
        continue;
      }
      const int t = static_cast<int>(counts[e]);
      if (fp8) {
        const int tp = static_cast<int>(poff[e + 1] - poff[e]);
        pass.experts.push_back({CUBLAS_OP_T, CUBLAS_OP_N, nd, kd, tp, in_at(dyt, poff[e]), pd, in_at(xt, poff[e]), pd,
                                out_at(dw, e * kd * nd), nd, true, false, kd, nd, t, hx.data() + off[e] * kd, kd,
                                hdy.data() + off[e] * nd, nd, size_t(e) * kd * nd, nd});
      } else {
        pass.experts.push_back({CUBLAS_OP_N, CUBLAS_OP_T, nd, kd, t, in_at(dy, off[e] * nd), nd, in_at(x, off[e] * kd),
                                kd, out_at(dw, e * kd * nd), nd, true, false, kd, nd, t, hx.data() + off[e] * kd, kd,
                                hdy.data() + off[e] * nd, nd, size_t(e) * kd * nd, nd});
      }
    }
    passes.push_back(std::move(pass));
  }

  Stream stream;
  MOETUNE_PROBE_RETURN_IF_ERROR(stream.Create());
  CublasHandle blas;
  MOETUNE_PROBE_RETURN_IF_ERROR(blas.Create());
  MOETUNE_CUBLAS(cublasSetStream(blas.get(), stream.get()));
  MOETUNE_CUBLAS(cublasSetMathMode(blas.get(), CUBLAS_DEFAULT_MATH));  // no TF32 for fp32
  CublasLtHandle lt;
  MOETUNE_PROBE_RETURN_IF_ERROR(lt.Create());
  Event start, stop;
  MOETUNE_PROBE_RETURN_IF_ERROR(start.Create());
  MOETUNE_PROBE_RETURN_IF_ERROR(stop.Create());
  const double tol = DTypeRelTolerance(p.dtype);

  for (Pass& pass : passes) {
    // Prepared once, as a framework caches them.
    LtMatmul dense_mm;
    MOETUNE_PROBE_RETURN_IF_ERROR(dense_mm.Create(lt.get(), pass.dense, type.in_type, type.out_type));
    std::vector<std::unique_ptr<LtMatmul>> loop;
    for (const ColGemm& g : pass.experts) {
      loop.push_back(std::make_unique<LtMatmul>());
      MOETUNE_PROBE_RETURN_IF_ERROR(loop.back()->Create(lt.get(), g, type.in_type, type.out_type));
    }
    // cublasGemmGroupedBatchedEx: one group per expert (ragged sizes); the
    // per-group arrays live on the host, the pointer arrays on the device.
    const int groups = static_cast<int>(pass.experts.size());
    std::vector<cublasOperation_t> ta(groups), tb(groups);
    std::vector<int> gm(groups), gn(groups), gk(groups), lda(groups), ldb(groups), ldc(groups), gsize(groups, 1);
    std::vector<float> alpha(groups, 1.0f), beta(groups, 0.0f);
    std::vector<const void*> pa(groups), pb(groups);
    std::vector<void*> pc(groups);
    for (int i = 0; i < groups; ++i) {
      const ColGemm& g = pass.experts[i];
      ta[i] = g.ta, tb[i] = g.tb, gm[i] = g.m, gn[i] = g.n, gk[i] = g.k;
      lda[i] = g.lda, ldb[i] = g.ldb, ldc[i] = g.ldc;
      pa[i] = g.a, pb[i] = g.b, pc[i] = g.c;
    }
    DeviceBuffer dpa, dpb, dpc;
    MOETUNE_PROBE_RETURN_IF_ERROR(dpa.Create(groups * sizeof(void*)));
    MOETUNE_PROBE_RETURN_IF_ERROR(dpb.Create(groups * sizeof(void*)));
    MOETUNE_PROBE_RETURN_IF_ERROR(dpc.Create(groups * sizeof(void*)));
    MOETUNE_CUDA(cudaMemcpy(dpa.get(), pa.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
    MOETUNE_CUDA(cudaMemcpy(dpb.get(), pb.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
    MOETUNE_CUDA(cudaMemcpy(dpc.get(), pc.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
    MOETUNE_CUDA(cudaDeviceSynchronize());  // see the note after the uploads

    auto zero_fill = [&]() -> ProbeStatus {
      for (const auto& [ptr, bytes] : pass.zero_fill) MOETUNE_CUDA(cudaMemsetAsync(ptr, 0, bytes, stream.get()));
      return ProbeStatus::Ok();
    };
    auto run = [&](Impl impl) -> ProbeStatus {
      switch (impl) {
        case Impl::kDense:
          return dense_mm.Run(lt.get(), workspace.get(), stream.get());
        case Impl::kLtLoop:
          MOETUNE_PROBE_RETURN_IF_ERROR(zero_fill());
          for (const auto& mm : loop) MOETUNE_PROBE_RETURN_IF_ERROR(mm->Run(lt.get(), workspace.get(), stream.get()));
          return ProbeStatus::Ok();
        case Impl::kGroupedEx:
          MOETUNE_PROBE_RETURN_IF_ERROR(zero_fill());
          if (groups == 0) return ProbeStatus::Ok();
          MOETUNE_CUBLAS(cublasGemmGroupedBatchedEx(
              blas.get(), ta.data(), tb.data(), gm.data(), gn.data(), gk.data(), alpha.data(),
              dpa.get<const void* const>(), type.in_type, lda.data(), dpb.get<const void* const>(),
              type.in_type, ldb.data(), beta.data(), dpc.get<void* const>(), type.out_type, ldc.data(),
              groups, gsize.data(), CUBLAS_COMPUTE_32F));
          return ProbeStatus::Ok();
      }
      return Internal("unknown implementation");
    };

    double dense_seconds = 0;
    for (Impl impl : {Impl::kDense, Impl::kLtLoop, Impl::kGroupedEx}) {
      if (impl == Impl::kGroupedEx && fp8) continue;  // no fp8 path in cublasGemmGroupedBatchedEx
      Measurement m;
      m.name = std::string(pass.name) + "/" + ImplName(impl);
      m.labels = {{"pass", pass.name},
                  {"impl", ImplName(impl)},
                  {"dtype", DTypeName(p.dtype)},
                  {"compute_dtype", "fp32_accumulate"},
                  {"output_dtype", fp8 ? "bf16" : DTypeName(p.dtype)},
                  {"experts", std::to_string(e_count)},
                  {"tokens", std::to_string(tokens)}};
      const bool dense = impl == Impl::kDense;
      DeviceBuffer* out = dense ? &dense_out : pass.out;
      if (p.timing.verify) {
        // Poison (0xFF bytes are NaN in every float type), run once, check.
        MOETUNE_CUDA(cudaMemsetAsync(out->get(), 0xff, out->bytes(), stream.get()));
        MOETUNE_PROBE_RETURN_IF_ERROR(run(impl));
        MOETUNE_CUDA(cudaStreamSynchronize(stream.get()));
        std::vector<float> host;
        MOETUNE_PROBE_RETURN_IF_ERROR(Download(*out, dense ? dense_elems : pass.out_elems, type.out_type, &host));
        std::vector<const ColGemm*> checks;
        if (dense) {
          checks.push_back(&pass.dense);
        } else {
          for (const ColGemm& g : pass.experts) checks.push_back(&g);
        }
        // Sampled rows of every GEMM (fewer per GEMM when there are many, to
        // keep the double-precision reference within seconds).
        const int rows_per_gemm = checks.size() > 16 ? 2 : 4;
        for (const ColGemm* g : checks) {
          std::string worst;
          const double err =
              CheckGemmRows(g->r_ta, g->r_tb, g->rm, g->rn, g->rk, g->ra, g->rlda, g->rb, g->rldb,
                            host.data() + g->c_offset_elems, g->rldc, SampleRows(g->rm, rows_per_gemm), &worst);
          m.max_rel_error = std::max(m.max_rel_error, err);
          if (err > tol) {
            return DataLoss("grouped_gemm " + m.name + " (cuda, " + DTypeName(p.dtype) + "): " + worst +
                            ", relative error " + std::to_string(err) + " > " + std::to_string(tol));
          }
        }
        if (!dense) {  // empty experts' gradients must be zero
          for (int64_t e = 0; e < e_count && pass.name == std::string("bwd_weight"); ++e) {
            if (counts[e] != 0) continue;
            for (int64_t i = 0; i < int64_t(kd) * nd; i += std::max<int64_t>(1, int64_t(kd) * nd / 64)) {
              if (host[e * kd * nd + i] != 0.0f) {
                return DataLoss("grouped_gemm " + m.name + " (cuda): expert " + std::to_string(e) +
                                " has no tokens but its weight gradient is not zero");
              }
            }
          }
        }
        m.verified = true;
      }
      for (int i = 0; i < p.timing.warmup_iters + p.timing.timed_iters; ++i) {
        MOETUNE_CUDA(cudaEventRecord(start.get(), stream.get()));
        MOETUNE_PROBE_RETURN_IF_ERROR(run(impl));
        MOETUNE_CUDA(cudaEventRecord(stop.get(), stream.get()));
        double s = 0;
        MOETUNE_PROBE_RETURN_IF_ERROR(ElapsedSeconds(start, stop, &s));
        if (i >= p.timing.warmup_iters) m.samples_seconds.push_back(s);
      }
      if (dense) {
        m.flops = pass.dense.Flops();
      } else {
        for (const ColGemm& g : pass.experts) m.flops += g.Flops();
      }
      m.Finalize();
      if (dense) dense_seconds = m.PlannerSeconds();
      if (m.PlannerSeconds() > 0) m.efficiency_vs_reference = dense_seconds / m.PlannerSeconds();
      result->measurements.push_back(std::move(m));
    }
  }
  return ProbeStatus::Ok();
}

}  // namespace moetune::kernels::cuda
