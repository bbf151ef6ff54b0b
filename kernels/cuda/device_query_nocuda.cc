#include "kernels/cuda/device_query.h"
namespace moetune::kernels::cuda {
int CountDevices(std::string* error) { *error = "built without CUDA"; return -1; }
}
