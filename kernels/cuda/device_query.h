#pragma once
#include <string>
namespace moetune::kernels::cuda {
// Returns the number of CUDA devices, or -1 with `error` set.
int CountDevices(std::string* error);
}
