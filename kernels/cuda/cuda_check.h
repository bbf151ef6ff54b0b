// Error wrapping and RAII holders for the CUDA probes (std + CUDA only).
// Every CUDA runtime, cuBLAS(Lt) and NCCL call goes through one of the
// MOETUNE_CUDA / _CUBLAS / _NCCL macros so that the failing call's text and
// its error string land in the returned ProbeStatus:
//   INTERNAL: cudaMalloc(&p, bytes): out of memory (cudaErrorMemoryAllocation)
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "kernels/probe_status.h"

namespace moetune::kernels::cuda {

inline ProbeStatus CudaError(cudaError_t e, const char* call) {
  const ProbeCode code = e == cudaErrorMemoryAllocation ? ProbeCode::kResourceExhausted
                         : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
                             ? ProbeCode::kUnavailable
                             : ProbeCode::kInternal;
  return ProbeStatus(code, std::string(call) + ": " + cudaGetErrorString(e) + " (" +
                               cudaGetErrorName(e) + ")");
}

// NOT_SUPPORTED (also what cublasLtMatmulAlgoGetHeuristic answers when it
// has no algorithm for the problem) and ARCH_MISMATCH mean this library or
// device cannot run the call: Unimplemented. ALLOC_FAILED is out of memory.
inline ProbeCode CublasStatusCode(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH: return ProbeCode::kUnimplemented;
    case CUBLAS_STATUS_ALLOC_FAILED: return ProbeCode::kResourceExhausted;
    default: return ProbeCode::kInternal;
  }
}

inline ProbeStatus CublasError(cublasStatus_t s, const char* call) {
  return ProbeStatus(CublasStatusCode(s), std::string(call) + ": " + cublasGetStatusString(s) + " (" +
                                              cublasGetStatusName(s) + ")");
}

inline ProbeStatus NcclError(ncclResult_t r, const char* call, ncclComm_t comm = nullptr) {
  const char* last = ncclGetLastError(comm);
  const ProbeCode code = (r == ncclRemoteError || r == ncclSystemError) ? ProbeCode::kUnavailable
                                                                        : ProbeCode::kInternal;
  return ProbeStatus(code, std::string(call) + ": " + ncclGetErrorString(r) +
                               (last != nullptr && *last ? std::string(" (") + last + ")" : ""));
}

}  // namespace moetune::kernels::cuda

#define MOETUNE_CUDA(call)                                                        \
  do {                                                                            \
    cudaError_t _e = (call);                                                      \
    if (_e != cudaSuccess) return ::moetune::kernels::cuda::CudaError(_e, #call); \
  } while (false)

#define MOETUNE_CUBLAS(call)                                                               \
  do {                                                                                     \
    cublasStatus_t _s = (call);                                                            \
    if (_s != CUBLAS_STATUS_SUCCESS) return ::moetune::kernels::cuda::CublasError(_s, #call); \
  } while (false)

// ncclInProgress is a success of a non-blocking communicator's call: the
// operation completes asynchronously and NcclGroup::Settle waits for it.
#define MOETUNE_NCCL(call)                                                        \
  do {                                                                            \
    ncclResult_t _r = (call);                                                     \
    if (_r != ncclSuccess && _r != ncclInProgress)                                \
      return ::moetune::kernels::cuda::NcclError(_r, #call);                      \
  } while (false)

namespace moetune::kernels::cuda {

// Makes `device` current for the lifetime of the guard and restores the
// previous device afterwards. Releases of CUDA objects go through it: a
// process that drives several GPUs frees each object under its own device
// (cudaFree, cudaStreamDestroy, cublasDestroy act on the current device's
// context), whatever device happens to be current when the holder dies.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      switched_ = cudaSetDevice(device) == cudaSuccess;
    }
  }
  ~ScopedDevice() {
    if (switched_) cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

// The current device, for the holders below (0 if the query fails: the
// creation call that follows reports the real error).
inline int CurrentDevice() {
  int d = 0;
  return cudaGetDevice(&d) == cudaSuccess ? d : 0;
}

// RAII holders. Create() returns the wrapped call's status and remembers the
// device that was current; Reset()/destructors release on every path, under
// that device (errors of the release itself are ignored: nothing useful can
// be done with them in a destructor).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_), device_(o.device_) {
    o.ptr_ = nullptr;
  }
  ~DeviceBuffer() { Reset(); }
  ProbeStatus Create(size_t bytes) {
    Reset();
    device_ = CurrentDevice();
    MOETUNE_CUDA(cudaMalloc(&ptr_, bytes == 0 ? 16 : bytes));
    bytes_ = bytes;
    return ProbeStatus::Ok();
  }
  void Reset() {
    if (ptr_ != nullptr) {
      ScopedDevice on(device_);
      cudaFree(ptr_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

// Page-locked (cudaMallocHost) or pageable (new[]) host memory.
class HostMemory {
 public:
  HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory() { Reset(); }
  ProbeStatus Create(size_t bytes, bool pinned) {
    Reset();
    pinned_ = pinned;
    if (pinned) {
      MOETUNE_CUDA(cudaMallocHost(&ptr_, bytes == 0 ? 16 : bytes));
    } else {
      ptr_ = new (std::nothrow) char[bytes == 0 ? 16 : bytes];
      if (ptr_ == nullptr) return ResourceExhausted("new char[" + std::to_string(bytes) + "] failed");
    }
    return ProbeStatus::Ok();
  }
  void Reset() {
    if (ptr_ == nullptr) return;
    if (pinned_) {
      cudaFreeHost(ptr_);
    } else {
      delete[] static_cast<char*>(ptr_);
    }
    ptr_ = nullptr;
  }
  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  bool pinned_ = false;
};

class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& o) noexcept : s_(o.s_), device_(o.device_) { o.s_ = nullptr; }
  ~Stream() { Reset(); }
  ProbeStatus Create() {
    Reset();
    device_ = CurrentDevice();
    MOETUNE_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    return ProbeStatus::Ok();
  }
  // Pending work still completes (cudaStreamDestroy does not wait for it).
  void Reset() {
    if (s_ == nullptr) return;
    ScopedDevice on(device_);
    cudaStreamDestroy(s_);
    s_ = nullptr;
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(o.e_), device_(o.device_) { o.e_ = nullptr; }
  ~Event() {
    if (e_ == nullptr) return;
    ScopedDevice on(device_);
    cudaEventDestroy(e_);
  }
  ProbeStatus Create() {
    device_ = CurrentDevice();
    MOETUNE_CUDA(cudaEventCreate(&e_));
    return ProbeStatus::Ok();
  }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
  int device_ = 0;
};

// Seconds between two recorded events (waits for `end`).
inline ProbeStatus ElapsedSeconds(const Event& start, const Event& end, double* seconds) {
  MOETUNE_CUDA(cudaEventSynchronize(end.get()));
  float ms = 0;
  MOETUNE_CUDA(cudaEventElapsedTime(&ms, start.get(), end.get()));
  *seconds = ms * 1e-3;
  return ProbeStatus::Ok();
}

class CublasHandle {
 public:
  CublasHandle() = default;
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (h_ == nullptr) return;
    ScopedDevice on(device_);
    cublasDestroy(h_);
  }
  ProbeStatus Create() {
    device_ = CurrentDevice();
    MOETUNE_CUBLAS(cublasCreate(&h_));
    return ProbeStatus::Ok();
  }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
  int device_ = 0;
};

class CublasLtHandle {
 public:
  CublasLtHandle() = default;
  CublasLtHandle(const CublasLtHandle&) = delete;
  CublasLtHandle& operator=(const CublasLtHandle&) = delete;
  ~CublasLtHandle() {
    if (h_ == nullptr) return;
    ScopedDevice on(device_);
    cublasLtDestroy(h_);
  }
  ProbeStatus Create() {
    device_ = CurrentDevice();
    MOETUNE_CUBLAS(cublasLtCreate(&h_));
    return ProbeStatus::Ok();
  }
  cublasLtHandle_t get() const { return h_; }

 private:
  cublasLtHandle_t h_ = nullptr;
  int device_ = 0;
};

// Host-side bf16 <-> fp32 (round to nearest even), no CUDA headers needed.
inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  static_assert(sizeof(u) == sizeof(f), "float is 32 bits");
  std::memcpy(&u, &f, sizeof(u));
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) return 0x7fc0;  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16ToFloat(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

}  // namespace moetune::kernels::cuda
