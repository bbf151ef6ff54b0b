// Built instead of the CUDA probes when Bazel finds no CUDA toolkit.
#include "kernels/cuda/cuda_probes.h"

namespace moetune::kernels::cuda {

ProbeStatus RunCudaProbe(const ProbeParams& params, const GroupSpec&, ProbeResult*) {
  return Unimplemented(std::string("cuda backend: built without the CUDA toolkit, cannot run ") +
                       ProbeKindName(KindOf(params)));
}

ProbeStatus CudaDeviceCount(int* count) {
  *count = 0;
  return Unimplemented("cuda backend: built without the CUDA toolkit");
}

ProbeStatus CudaDescribeDevices(std::vector<CudaDeviceDescription>* devices) {
  devices->clear();
  return Unimplemented("cuda backend: built without the CUDA toolkit");
}

}  // namespace moetune::kernels::cuda
