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
// of 16 (16-byte leading dimensions).
//
// mxfp8 (Blackwell, compute capability 10.0+): E4M3 elements with one UE8M0
// scale per 32 consecutive elements along the reduction axis K of each GEMM,
// quantized on the host by kernels/reference.h (QuantizeMx) so the check
// multiplies exactly the values the GPU sees; cuBLASLt block scaling
// (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 on A and B, scale type and
// compute fp32, bf16 C/D) is again TN only, so both operands of every GEMM
// are stored K-contiguous: row-major Out[P,Q] = L[P,R] Rt[Q,R]^T becomes A =
// Rt, B = L. The scales must follow the GEMM's reduction axis, so X, W and dY
// are each quantized twice, once per orientation (as MXFP8 training does):
//   fwd        Y  = X  W    R = K: X along K, W^T along K
//   bwd_data   dX = dY W^T  R = N: dY along N, W along N
//   bwd_weight dW = X^T dY  R = tokens: X^T and dY^T along tokens, each
//              expert's range zero-padded to a multiple of 32 so that no
//              block straddles two experts.
// Each GEMM gets its own scale tensors in cuBLASLt's tiled layout
// (kernels/block_scale_layout.h), 512-byte aligned inside one buffer.
//
// cublasGemmGroupedBatchedEx: the cuBLAS documentation of the grouped
// batched GEMMs (cublas<t>gemmGroupedBatched / cublasGemmGroupedBatchedEx,
// parameter table) places the per-group arrays -- transa/transb, m/n/k,
// lda/ldb/ldc, alpha/beta and group_size, one entry per group -- in host
// memory, and the A/B/C pointer arrays (one entry per problem, problem_count =
// sum of group_size) in device memory; NVIDIA's gemmGroupedBatched sample does
// the same. That is what RunGroupedGemm passes (pointer mode set to host for
// alpha/beta). The function has no 8-bit input type and no way to pass scale
// tensors (see its declaration in cublas_api.h), so for fp8 and mxfp8 its
// measurement is recorded as unimplemented with that reason.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <memory>

#include "kernels/block_scale_layout.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_probes_internal.h"
#include "kernels/cuda/timing.h"
#include "kernels/measurement_roles.h"
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
  // mxfp8: byte offsets of A's and B's tiled UE8M0 scale tensors in the
  // probe's scale buffer (-1: no block scaling).
  int64_t a_scale_offset = -1;
  int64_t b_scale_offset = -1;
};

// Largest power of two (<= 256) dividing the address.
uint32_t Alignment(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align != 0) align /= 2;
  return align;
}

class LtPreference {
 public:
  LtPreference() = default;
  LtPreference(const LtPreference&) = delete;
  LtPreference& operator=(const LtPreference&) = delete;
  ~LtPreference() {
    if (p_ != nullptr) cublasLtMatmulPreferenceDestroy(p_);
  }
  ProbeStatus Create() {
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceCreate(&p_));
    return ProbeStatus::Ok();
  }
  cublasLtMatmulPreference_t get() const { return p_; }

 private:
  cublasLtMatmulPreference_t p_ = nullptr;
};

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
  // `scales`: the device buffer that g.a/b_scale_offset point into.
  ProbeStatus Create(cublasLtHandle_t lt, const ColGemm& g, cudaDataType_t in_type, cudaDataType_t out_type,
                     const uint8_t* scales) {
    g_ = g;
    MOETUNE_CUBLAS(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &g.ta, sizeof(g.ta)));
    MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &g.tb, sizeof(g.tb)));
    if (g.a_scale_offset >= 0 || g.b_scale_offset >= 0) {
      if (scales == nullptr || g.a_scale_offset < 0 || g.b_scale_offset < 0) {
        return Internal("grouped_gemm (cuda): block-scaled GEMM without both scale tensors");
      }
      const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;  // the attribute is an int32_t
      const void* a_scale = scales + g.a_scale_offset;
      const void* b_scale = scales + g.b_scale_offset;
      MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode)));
      MOETUNE_CUBLAS(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode)));
      MOETUNE_CUBLAS(
          cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale, sizeof(a_scale)));
      MOETUNE_CUBLAS(
          cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale, sizeof(b_scale)));
    }
    const bool an = g.ta == CUBLAS_OP_N, bn = g.tb == CUBLAS_OP_N;
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&a_, in_type, an ? g.m : g.k, an ? g.k : g.m, g.lda));
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&b_, in_type, bn ? g.k : g.n, bn ? g.n : g.k, g.ldb));
    MOETUNE_CUBLAS(cublasLtMatrixLayoutCreate(&c_, out_type, g.m, g.n, g.ldc));
    LtPreference pref;
    MOETUNE_PROBE_RETURN_IF_ERROR(pref.Create());
    size_t ws = kLtWorkspaceBytes;
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                        sizeof(ws)));
    // The heuristic assumes 256-byte aligned operands unless told otherwise;
    // per-expert slices can be less aligned.
    const uint32_t align_a = Alignment(g.a), align_b = Alignment(g.b), align_c = Alignment(g.c);
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                        &align_a, sizeof(align_a)));
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                        &align_b, sizeof(align_b)));
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                        &align_c, sizeof(align_c)));
    MOETUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                        &align_c, sizeof(align_c)));
    int found = 0;
    const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc_, a_, b_, c_, c_, pref.get(), 1, &heuristic_,
                                                             &found);
    // "No algorithm" comes back as CUBLAS_STATUS_NOT_SUPPORTED (or, in
    // principle, success with zero results): Unimplemented naming the
    // problem. tools/gpu_check counts it as a failure, not a skip, where the
    // device has the precision's tensor cores (kernels/check_outcome.h).
    if (hs != CUBLAS_STATUS_SUCCESS && hs != CUBLAS_STATUS_NOT_SUPPORTED) {
      return CublasError(hs, "cublasLtMatmulAlgoGetHeuristic");
    }
    if (hs == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) {
      return Unimplemented("cublasLtMatmulAlgoGetHeuristic: no algorithm for m=" + std::to_string(g.m) +
                           " n=" + std::to_string(g.n) + " k=" + std::to_string(g.k) +
                           (g.a_scale_offset >= 0 ? " (mxfp8 block scaling)" : ""));
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

ProbeStatus UploadBytes(const std::vector<uint8_t>& bytes, DeviceBuffer* dev) {
  MOETUNE_PROBE_RETURN_IF_ERROR(dev->Create(bytes.size()));
  if (!bytes.empty()) MOETUNE_CUDA(cudaMemcpy(dev->get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
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

// The three implementations; measurement names use the role ("<pass>/loop",
// "<pass>/grouped", "<pass>/dense_ref": the CPU twin's names, which the
// server's fitting reads), the "impl" label the library call.
// (kernels/measurement_roles.h).
enum class Impl { kDense, kLtLoop, kGroupedEx };
roles::GemmImpl RoleOf(Impl i) {
  return i == Impl::kDense ? roles::GemmImpl::kDenseRef : i == Impl::kLtLoop ? roles::GemmImpl::kLoop
                                                                              : roles::GemmImpl::kGrouped;
}
const char* RoleName(Impl i) { return roles::Name(RoleOf(i)); }
const char* ImplName(Impl i) {
  return i == Impl::kDense ? "cublaslt_dense" : i == Impl::kLtLoop ? "cublaslt_loop" : "cublas_grouped_batched_ex";
}

struct Pass {
  const char* name;  // roles::Name(pass)
  roles::GemmPass pass;
  std::vector<ColGemm> experts;  // non-empty GEMMs only
  std::vector<std::pair<void*, size_t>> zero_fill;  // outputs of empty experts (bytes)
  ColGemm dense;
  DeviceBuffer* out;        // the experts' output buffer
  size_t out_elems;
};

// Row-major Out[P, Q] = L[P, R] * Rt[Q, R]^T with L and Rt stored
// R-contiguous (leading dimensions ldl, ldr) as the column-major TN GEMM
// Out^T[Q x P] = op(A) op(B), A = Rt (op T), B = L (op N), ldc = ldo.
ColGemm TnGemm(int q, int p, int r, const void* rt, int ldr, const void* l, int ldl, void* out, int ldo) {
  ColGemm g{};
  g.ta = CUBLAS_OP_T;
  g.tb = CUBLAS_OP_N;
  g.m = q;
  g.n = p;
  g.k = r;
  g.a = rt;
  g.lda = ldr;
  g.b = l;
  g.ldb = ldl;
  g.c = out;
  g.ldc = ldo;
  return g;
}

// Fills the row-major check of g (see ColGemm).
void SetCheck(ColGemm* g, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, size_t c_offset, int64_t ldc) {
  g->r_ta = ta;
  g->r_tb = tb;
  g->rm = m;
  g->rn = n;
  g->rk = k;
  g->ra = a;
  g->rlda = lda;
  g->rb = b;
  g->rldb = ldb;
  g->c_offset_elems = c_offset;
  g->rldc = ldc;
}

// mxfp8 operands: E4M3 elements on the device, the tiled scale tensors of
// every GEMM in one buffer, and the dequantized values (laid out like the
// fp32 inputs X [T,K], W [E,K,N], dY [T,N]) that the check multiplies.
struct MxOperands {
  DeviceBuffer x_k, wt_k, dy_n, w_n, xt_t, dyt_t;  // <operand>_<blocked axis>
  DeviceBuffer scales;
  std::vector<uint8_t> host_scales;
  std::vector<float> x_fwd, w_fwd, dy_bd, w_bd, x_bw, dy_bw;

  // Appends the tiled tensor of rows [row0, row0 + rows) x blocks [block0,
  // block0 + blocks) of q's scales; returns its byte offset (a multiple of
  // 512: every tiled tensor is a whole number of 512-byte tiles).
  int64_t AddScales(const MxMatrix& q, int64_t row0, int64_t rows, int64_t block0, int64_t blocks) {
    const std::vector<uint8_t> t = TileBlockScales(q.scales.data() + row0 * q.BlocksPerRow(), q.BlocksPerRow(),
                                                   rows, block0, blocks, kUe8m0One);
    const int64_t offset = static_cast<int64_t>(host_scales.size());
    host_scales.insert(host_scales.end(), t.begin(), t.end());
    return offset;
  }
};

// Builds the mxfp8 passes (see the top of this file). off: token offsets of
// the experts; poff: their offsets in the 32-padded token axis (padded =
// poff.back()).
ProbeStatus BuildMxPasses(const GroupedGemmParams& p, const std::vector<float>& hx, const std::vector<float>& hw,
                          const std::vector<float>& hdy, const std::vector<int64_t>& counts,
                          const std::vector<int64_t>& off, const std::vector<int64_t>& poff, DeviceBuffer* y,
                          DeviceBuffer* dx, DeviceBuffer* dw, DeviceBuffer* dense_out, MxOperands* mx,
                          std::vector<Pass>* passes) {
  const int64_t e_count = p.num_experts, kd = p.hidden, nd = p.ffn_hidden, tokens = off.back();
  const int64_t padded = poff.back();
  const int64_t kb = kd / kMxBlockElems, nb = nd / kMxBlockElems, pb = padded / kMxBlockElems;
  auto at = [](const DeviceBuffer& b, int64_t bytes) { return static_cast<const void*>(b.get<char>() + bytes); };
  auto out_at = [](const DeviceBuffer& b, int64_t elems) { return static_cast<void*>(b.get<char>() + elems * 2); };
  const int t_all = static_cast<int>(tokens), k_i = static_cast<int>(kd), n_i = static_cast<int>(nd);

  if (p.forward) {  // R = K: X [T,K] along K; W_e^T [N,K] along K
    const MxMatrix qx = QuantizeMx(hx.data(), tokens, kd, kd, 1);
    std::vector<MxMatrix> qwt;
    std::vector<uint8_t> wt_bytes;
    mx->x_fwd.resize(hx.size());
    mx->w_fwd.resize(hw.size());
    DequantizeMx(qx, mx->x_fwd.data(), kd, 1);
    for (int64_t e = 0; e < e_count; ++e) {
      qwt.push_back(QuantizeMx(hw.data() + e * kd * nd, nd, kd, 1, nd));
      DequantizeMx(qwt.back(), mx->w_fwd.data() + e * kd * nd, 1, nd);
      wt_bytes.insert(wt_bytes.end(), qwt.back().elements.begin(), qwt.back().elements.end());
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(qx.elements, &mx->x_k));
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(wt_bytes, &mx->wt_k));
    Pass pass{"fwd", roles::GemmPass::kFwd, {}, {}, {}, y, size_t(tokens) * nd};
    pass.dense = TnGemm(n_i, t_all, k_i, mx->wt_k.get(), k_i, mx->x_k.get(), k_i, dense_out->get(), n_i);
    SetCheck(&pass.dense, false, false, tokens, nd, kd, mx->x_fwd.data(), kd, mx->w_fwd.data(), nd, 0, nd);
    pass.dense.a_scale_offset = mx->AddScales(qwt[0], 0, nd, 0, kb);
    pass.dense.b_scale_offset = mx->AddScales(qx, 0, tokens, 0, kb);
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) continue;
      const int t = static_cast<int>(counts[e]);
      ColGemm g = TnGemm(n_i, t, k_i, at(mx->wt_k, e * nd * kd), k_i, at(mx->x_k, off[e] * kd), k_i,
                         out_at(*y, off[e] * nd), n_i);
      SetCheck(&g, false, false, t, nd, kd, mx->x_fwd.data() + off[e] * kd, kd, mx->w_fwd.data() + e * kd * nd, nd,
               size_t(off[e]) * nd, nd);
      g.a_scale_offset = mx->AddScales(qwt[e], 0, nd, 0, kb);
      g.b_scale_offset = mx->AddScales(qx, off[e], t, 0, kb);
      pass.experts.push_back(g);
    }
    passes->push_back(std::move(pass));
  }
  if (p.backward_data) {  // R = N: dY [T,N] along N; W [E*K,N] along N
    const MxMatrix qdy = QuantizeMx(hdy.data(), tokens, nd, nd, 1);
    const MxMatrix qw = QuantizeMx(hw.data(), e_count * kd, nd, nd, 1);
    mx->dy_bd.resize(hdy.size());
    mx->w_bd.resize(hw.size());
    DequantizeMx(qdy, mx->dy_bd.data(), nd, 1);
    DequantizeMx(qw, mx->w_bd.data(), nd, 1);
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(qdy.elements, &mx->dy_n));
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(qw.elements, &mx->w_n));
    Pass pass{"bwd_data", roles::GemmPass::kBwdData, {}, {}, {}, dx, size_t(tokens) * kd};
    pass.dense = TnGemm(k_i, t_all, n_i, mx->w_n.get(), n_i, mx->dy_n.get(), n_i, dense_out->get(), k_i);
    SetCheck(&pass.dense, false, true, tokens, kd, nd, mx->dy_bd.data(), nd, mx->w_bd.data(), nd, 0, kd);
    pass.dense.a_scale_offset = mx->AddScales(qw, 0, kd, 0, nb);
    pass.dense.b_scale_offset = mx->AddScales(qdy, 0, tokens, 0, nb);
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) continue;
      const int t = static_cast<int>(counts[e]);
      ColGemm g = TnGemm(k_i, t, n_i, at(mx->w_n, e * kd * nd), n_i, at(mx->dy_n, off[e] * nd), n_i,
                         out_at(*dx, off[e] * kd), k_i);
      SetCheck(&g, false, true, t, kd, nd, mx->dy_bd.data() + off[e] * nd, nd, mx->w_bd.data() + e * kd * nd, nd,
               size_t(off[e]) * kd, kd);
      g.a_scale_offset = mx->AddScales(qw, e * kd, kd, 0, nb);
      g.b_scale_offset = mx->AddScales(qdy, off[e], t, 0, nb);
      pass.experts.push_back(g);
    }
    passes->push_back(std::move(pass));
  }
  if (p.backward_weight) {  // R = tokens: X^T [K,P] and dY^T [N,P] along the padded token axis
    MxMatrix qxt, qdyt;
    {
      std::vector<float> hxt(size_t(kd) * padded, 0.0f), hdyt(size_t(nd) * padded, 0.0f);
      for (int64_t e = 0; e < e_count; ++e) {
        for (int64_t t = 0; t < counts[e]; ++t) {
          for (int64_t k = 0; k < kd; ++k) hxt[k * padded + poff[e] + t] = hx[(off[e] + t) * kd + k];
          for (int64_t n = 0; n < nd; ++n) hdyt[n * padded + poff[e] + t] = hdy[(off[e] + t) * nd + n];
        }
      }
      qxt = QuantizeMx(hxt.data(), kd, padded, padded, 1);
      qdyt = QuantizeMx(hdyt.data(), nd, padded, padded, 1);
    }
    mx->x_bw.resize(hx.size());
    mx->dy_bw.resize(hdy.size());
    for (int64_t e = 0; e < e_count; ++e) {  // back to [T,K] / [T,N], without the padding
      for (int64_t t = 0; t < counts[e]; ++t) {
        for (int64_t k = 0; k < kd; ++k) mx->x_bw[(off[e] + t) * kd + k] = static_cast<float>(qxt.Value(k, poff[e] + t));
        for (int64_t n = 0; n < nd; ++n) {
          mx->dy_bw[(off[e] + t) * nd + n] = static_cast<float>(qdyt.Value(n, poff[e] + t));
        }
      }
    }
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(qxt.elements, &mx->xt_t));
    MOETUNE_PROBE_RETURN_IF_ERROR(UploadBytes(qdyt.elements, &mx->dyt_t));
    const int pd = static_cast<int>(padded);
    Pass pass{"bwd_weight", roles::GemmPass::kBwdWeight, {}, {}, {}, dw, size_t(e_count) * kd * nd};
    pass.dense = TnGemm(n_i, k_i, pd, mx->dyt_t.get(), pd, mx->xt_t.get(), pd, dense_out->get(), n_i);
    SetCheck(&pass.dense, true, false, kd, nd, tokens, mx->x_bw.data(), kd, mx->dy_bw.data(), nd, 0, nd);
    pass.dense.a_scale_offset = mx->AddScales(qdyt, 0, nd, 0, pb);
    pass.dense.b_scale_offset = mx->AddScales(qxt, 0, kd, 0, pb);
    for (int64_t e = 0; e < e_count; ++e) {
      if (counts[e] == 0) {  // no tokens: the gradient is zero
        pass.zero_fill.push_back({out_at(*dw, e * kd * nd), size_t(kd) * nd * 2});
        continue;
      }
      const int64_t tp = poff[e + 1] - poff[e];
      ColGemm g = TnGemm(n_i, k_i, static_cast<int>(tp), at(mx->dyt_t, poff[e]), pd, at(mx->xt_t, poff[e]), pd,
                         out_at(*dw, e * kd * nd), n_i);
      SetCheck(&g, true, false, kd, nd, counts[e], mx->x_bw.data() + off[e] * kd, kd,
               mx->dy_bw.data() + off[e] * nd, nd, size_t(e) * kd * nd, nd);
      g.a_scale_offset = mx->AddScales(qdyt, 0, nd, poff[e] / kMxBlockElems, tp / kMxBlockElems);
      g.b_scale_offset = mx->AddScales(qxt, 0, kd, poff[e] / kMxBlockElems, tp / kMxBlockElems);
      pass.experts.push_back(g);
    }
    passes->push_back(std::move(pass));
  }
  return UploadBytes(mx->host_scales, &mx->scales);
}

}  // namespace

ProbeStatus RunGroupedGemm(const GroupedGemmParams& p, int device, ProbeResult* result) {
  TypeInfo type{CUDA_R_32F, 4, CUDA_R_32F, 4};
  switch (p.dtype) {
    case DType::kFp32: break;
    case DType::kBf16: type = {CUDA_R_16BF, 2, CUDA_R_16BF, 2}; break;
    case DType::kFp16: type = {CUDA_R_16F, 2, CUDA_R_16F, 2}; break;
    case DType::kFp8E4M3:
    case DType::kMxfp8: type = {CUDA_R_8F_E4M3, 1, CUDA_R_16BF, 2}; break;
  }
  const bool fp8 = p.dtype == DType::kFp8E4M3;
  const bool mx = p.dtype == DType::kMxfp8;
  if (fp8 || mx) {
    // Checked before any host-side work: on the wrong GPU this answers at once.
    int major = 0, minor = 0;
    MOETUNE_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    MOETUNE_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const std::string cc = std::to_string(major) + "." + std::to_string(minor);
    if (fp8 && major * 10 + minor < 89) {
      return Unimplemented("grouped_gemm (cuda): fp8_e4m3 needs FP8 tensor cores (compute capability 8.9 or newer), "
                           "this device has compute capability " + cc);
    }
    if (mx && major < 10) {
      return Unimplemented("grouped_gemm (cuda): mxfp8 needs block-scaled FP8 tensor cores (compute capability 10.0 "
                           "or newer, Blackwell), this device has compute capability " + cc);
    }
    if (mx && cublasLtGetVersion() < 120800) {
      return Unimplemented("grouped_gemm (cuda): mxfp8 needs cuBLASLt 12.8 or newer (VEC32_UE8M0 block scaling), "
                           "the loaded cuBLASLt is " + std::to_string(cublasLtGetVersion()));
    }
    const int64_t multiple = mx ? kMxBlockElems : 16;
    if (p.hidden % multiple != 0 || p.ffn_hidden % multiple != 0) {
      return InvalidArgument(std::string("grouped_gemm (cuda, ") + DTypeName(p.dtype) + "): hidden (" +
                             std::to_string(p.hidden) + ") and ffn_hidden (" + std::to_string(p.ffn_hidden) +
                             ") must be multiples of " + std::to_string(multiple) +
                             (mx ? " (one scale per 32 elements along each GEMM's reduction axis)" : ""));
    }
  }
  const std::vector<int64_t> counts = ExpertTokenCounts(p);
  const int64_t e_count = p.num_experts;
  const int k_dim = static_cast<int>(p.hidden), n_dim = static_cast<int>(p.ffn_hidden);
  std::vector<int64_t> off(e_count + 1, 0);
  for (int64_t e = 0; e < e_count; ++e) off[e + 1] = off[e] + counts[e];
  const int64_t tokens = off[e_count];
  const int64_t max_tokens = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  // fp8 / mxfp8 weight gradient: each expert's token range padded to 16 / 32.
  const int64_t pad_to = mx ? kMxBlockElems : 16;
  std::vector<int64_t> poff(e_count + 1, 0);
  for (int64_t e = 0; e < e_count; ++e) poff[e + 1] = poff[e] + (counts[e] + pad_to - 1) / pad_to * pad_to;
  const int64_t padded = poff[e_count];
  if (padded > INT32_MAX || p.hidden > INT32_MAX || p.ffn_hidden > INT32_MAX) {
    return InvalidArgument("grouped_gemm (cuda): dimensions must fit in int32, tokens = " + std::to_string(tokens) +
                           " (padded " + std::to_string(padded) + ")");
  }

  const uint64_t seed = p.timing.seed;
  // Mixed-magnitude inputs (kernels/random.h): MX blocks, experts and tiles
  // get different scales, so a scale applied to the wrong block shows; the
  // same values as the CPU twin's.
  std::vector<float> hx = MixedMagnitudeValues(StreamSeed(seed, 0, 10), tokens, k_dim);
  std::vector<float> hw = MixedMagnitudeValues(StreamSeed(seed, 0, 11), e_count * k_dim, n_dim);
  std::vector<float> hdy = MixedMagnitudeValues(StreamSeed(seed, 0, 12), tokens, n_dim);
  DeviceBuffer x, w, dy, y, dx, dw, dense_out, workspace;
  MOETUNE_PROBE_RETURN_IF_ERROR(y.Create(tokens * n_dim * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(dx.Create(tokens * k_dim * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(dw.Create(e_count * k_dim * n_dim * type.out_bytes));
  const size_t dense_elems = std::max<size_t>(tokens * std::max(n_dim, k_dim), size_t(k_dim) * n_dim);
  MOETUNE_PROBE_RETURN_IF_ERROR(dense_out.Create(dense_elems * type.out_bytes));
  MOETUNE_PROBE_RETURN_IF_ERROR(workspace.Create(kLtWorkspaceBytes));

  std::vector<Pass> passes;
  MxOperands mxo;
  DeviceBuffer wt, xt, dyt;  // fp8 only: the TN-form operands
  if (mx) {
    MOETUNE_PROBE_RETURN_IF_ERROR(
        BuildMxPasses(p, hx, hw, hdy, counts, off, poff, &y, &dx, &dw, &dense_out, &mxo, &passes));
  } else {
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hx, type.in_type, &x));
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hw, type.in_type, &w));
    MOETUNE_PROBE_RETURN_IF_ERROR(Upload(&hdy, type.in_type, &dy));
    auto in_at = [&](const DeviceBuffer& b, int64_t elems) {
      return static_cast<const void*>(b.get<char>() + elems * type.in_bytes);
    };
    auto out_at = [&](const DeviceBuffer& b, int64_t elems) {
      return static_cast<void*>(b.get<char>() + elems * type.out_bytes);
    };
    const int kd = k_dim, nd = n_dim, t_all = static_cast<int>(tokens);
    // fp8 only: the TN-form operands (see the top of this file). The values
    // are the already-rounded fp8 values, so rounding again is exact.
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
    if (p.forward) {  // Y[t,N] = X[t,K] W[K,N]  ->  col: Y^T = W^T X^T
      Pass pass{"fwd", roles::GemmPass::kFwd, {}, {}, {}, &y, size_t(tokens) * nd};
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
      Pass pass{"bwd_data", roles::GemmPass::kBwdData, {}, {}, {}, &dx, size_t(tokens) * kd};
      pass.dense = {CUBLAS_OP_T, CUBLAS_OP_N, kd, t_all, nd, w.get(), nd, dy.get(), nd, dense_out.get(), kd,
                    false, true, tokens, kd, nd, hdy.data(), nd, hw.data(), nd, 0, kd};
      for (int64_t e = 0; e < e_count; ++e) {
        if (counts[e] == 0) continue;
        const int t = static_cast<int>(counts[e]);
        pass.experts.push_back({CUBLAS_OP_T, CUBLAS_OP_N, kd, t, nd, in_at(w, e * kd * nd), nd,
                                in_at(dy, off[e] * nd), nd, out_at(dx, off[e] * kd), kd, false, true, t, kd, nd,
                                hdy.data() + off[e] * nd, nd, hw.data() + e * kd * nd, nd, size_t(off[e]) * kd, kd});
      }
      passes.push_back(std::move(pass));
    }
    if (p.backward_weight) {  // dW[K,N] = X^T dY  ->  col: dW^T = dY^T X
      Pass pass{"bwd_weight", roles::GemmPass::kBwdWeight, {}, {}, {}, &dw, size_t(e_count) * kd * nd};
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
          pass.experts.push_back({CUBLAS_OP_T, CUBLAS_OP_N, nd, kd, tp, in_at(dyt, poff[e]), pd, in_at(xt, poff[e]),
                                  pd, out_at(dw, e * kd * nd), nd, true, false, kd, nd, t, hx.data() + off[e] * kd,
                                  kd, hdy.data() + off[e] * nd, nd, size_t(e) * kd * nd, nd});
        } else {
          pass.experts.push_back({CUBLAS_OP_N, CUBLAS_OP_T, nd, kd, t, in_at(dy, off[e] * nd), nd,
                                  in_at(x, off[e] * kd), kd, out_at(dw, e * kd * nd), nd, true, false, kd, nd, t,
                                  hx.data() + off[e] * kd, kd, hdy.data() + off[e] * nd, nd, size_t(e) * kd * nd,
                                  nd});
        }
      }
      passes.push_back(std::move(pass));
    }
  }
  // cudaMemcpy from pageable memory may return before its DMA lands, and the
  // probe's stream does not synchronize with the legacy stream: wait here.
  MOETUNE_CUDA(cudaDeviceSynchronize());

  Stream stream;
  MOETUNE_PROBE_RETURN_IF_ERROR(stream.Create());
  CublasHandle blas;
  MOETUNE_PROBE_RETURN_IF_ERROR(blas.Create());
  MOETUNE_CUBLAS(cublasSetStream(blas.get(), stream.get()));
  MOETUNE_CUBLAS(cublasSetMathMode(blas.get(), CUBLAS_DEFAULT_MATH));  // no TF32 for fp32
  MOETUNE_CUBLAS(cublasSetPointerMode(blas.get(), CUBLAS_POINTER_MODE_HOST));  // alpha/beta arrays on the host
  CublasLtHandle lt;
  MOETUNE_PROBE_RETURN_IF_ERROR(lt.Create());
  Event start, stop;
  MOETUNE_PROBE_RETURN_IF_ERROR(start.Create());
  MOETUNE_PROBE_RETURN_IF_ERROR(stop.Create());
  // Output rounding of the stored type (bf16 for fp8/mxfp8) plus fp32
  // accumulation, per element (kernels/reference.h GemmTolerance).
  const GemmTolerance tol{DTypeUnitRoundoff(fp8 || mx ? DType::kBf16 : p.dtype), kFp32UnitRoundoff, 8};
  const uint8_t* scales = mx ? mxo.scales.get<uint8_t>() : nullptr;
  const char* grouped_ex_unsupported =
      mx ? "cublasGemmGroupedBatchedEx cannot run mxfp8: its declaration (cublas_api.h) has no parameter for "
           "block-scale tensors, and its documented type combinations have no 8-bit inputs"
         : fp8 ? "cublasGemmGroupedBatchedEx cannot run fp8: its documented type combinations have no 8-bit "
                 "inputs and it takes no scale pointers"
               : nullptr;

  for (Pass& pass : passes) {
    // Prepared once, as a framework caches them.
    LtMatmul dense_mm;
    MOETUNE_PROBE_RETURN_IF_ERROR(dense_mm.Create(lt.get(), pass.dense, type.in_type, type.out_type, scales));
    std::vector<std::unique_ptr<LtMatmul>> loop;
    for (const ColGemm& g : pass.experts) {
      loop.push_back(std::make_unique<LtMatmul>());
      MOETUNE_PROBE_RETURN_IF_ERROR(loop.back()->Create(lt.get(), g, type.in_type, type.out_type, scales));
    }
    // cublasGemmGroupedBatchedEx: one group of one problem per non-empty
    // expert (ragged sizes). Per-group arrays on the host, A/B/C pointer
    // arrays on the device (see the top of this file).
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
    if (grouped_ex_unsupported == nullptr) {
      MOETUNE_PROBE_RETURN_IF_ERROR(dpa.Create(groups * sizeof(void*)));
      MOETUNE_PROBE_RETURN_IF_ERROR(dpb.Create(groups * sizeof(void*)));
      MOETUNE_PROBE_RETURN_IF_ERROR(dpc.Create(groups * sizeof(void*)));
      if (groups > 0) {
        MOETUNE_CUDA(cudaMemcpy(dpa.get(), pa.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
        MOETUNE_CUDA(cudaMemcpy(dpb.get(), pb.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
        MOETUNE_CUDA(cudaMemcpy(dpc.get(), pc.data(), groups * sizeof(void*), cudaMemcpyHostToDevice));
      }
      MOETUNE_CUDA(cudaDeviceSynchronize());  // see the note after the uploads
    }

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
      Measurement m;
      m.name = std::string(pass.name) + "/" + RoleName(impl);
      m.labels = {{"pass", pass.name},
                  {"impl", ImplName(impl)},
                  {"dtype", DTypeName(p.dtype)},
                  {"compute_dtype", "fp32_accumulate"},
                  {"output_dtype", fp8 || mx ? "bf16" : DTypeName(p.dtype)},
                  {"tokens", std::to_string(tokens)}};
      roles::SetGemmShapeLabels(roles::GroupedGemmShape(pass.pass, RoleOf(impl), e_count, tokens, max_tokens,
                                                        k_dim, n_dim),
                                &m.labels);
      if (mx) m.labels["scales"] = "ue8m0 per 32 along the reduction axis";
      if (impl == Impl::kGroupedEx && grouped_ex_unsupported != nullptr) {
        // Reported, not timed: no samples, so nothing downstream fits it.
        m.labels["unimplemented"] = grouped_ex_unsupported;
        m.Finalize();
        result->measurements.push_back(std::move(m));
        continue;
      }
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
        GemmCheckResult all;
        for (const ColGemm* g : checks) {
          const GemmCheckResult r =
              CheckGemmRows(g->r_ta, g->r_tb, g->rm, g->rn, g->rk, g->ra, g->rlda, g->rb, g->rldb,
                            host.data() + g->c_offset_elems, g->rldc, SampleRows(g->rm, rows_per_gemm), tol);
          if (!r.ok()) {
            return DataLoss("grouped_gemm " + m.name + " (cuda, " + DTypeName(p.dtype) + ", " + ImplName(impl) +
                            ", m " + std::to_string(g->rm) + " n " + std::to_string(g->rn) + " k " +
                            std::to_string(g->rk) + "): " + std::to_string(r.bad) + " of " +
                            std::to_string(r.checked) + " checked elements outside tolerance, worst " + r.worst +
                            ", relative error norm " + std::to_string(r.RelativeErrorNorm()));
          }
          all.Merge(r);
        }
        m.max_rel_error = all.RelativeErrorNorm();
        m.values["checked_elements"] = static_cast<double>(all.checked);
        if (!dense) {  // empty experts' gradients must be zero
          for (int64_t e = 0; e < e_count && pass.name == std::string("bwd_weight"); ++e) {
            if (counts[e] != 0) continue;
            for (int64_t i = 0; i < int64_t(k_dim) * n_dim; i += std::max<int64_t>(1, int64_t(k_dim) * n_dim / 64)) {
              if (host[e * k_dim * n_dim + i] != 0.0f) {
                return DataLoss("grouped_gemm " + m.name + " (cuda): expert " + std::to_string(e) +
                                " has no tokens but its weight gradient is not zero");
              }
            }
          }
        }
        m.verified = true;
      }
      // Back-to-back iterations between one pair of events (kernels/cuda/
      // timing.h): the loop's 64 cuBLASLt launches are not in the samples
      // unless the host cannot keep up (then host_bound says so).
      MOETUNE_PROBE_RETURN_IF_ERROR(TimeBackToBack(p.timing, {TimedStream{stream.get(), device, &start, &stop}},
                                                   nullptr, [&] { return run(impl); }, SynchronizeEvent, &m));
      // Useful FLOPs (the row-major problem): the real token counts, not the
      // zero padding of fp8's and mxfp8's weight gradient.
      if (dense) {
        m.flops = GemmFlops(pass.dense.rm, pass.dense.rn, pass.dense.rk);
      } else {
        for (const ColGemm& g : pass.experts) m.flops += GemmFlops(g.rm, g.rn, g.rk);
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
