#include "kernels/cuda/device_query.h"
#include <cuda_runtime.h>
namespace moetune::kernels::cuda {
int CountDevices(std::string* error) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { *error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e); return -1; }
  return n;
}
}
