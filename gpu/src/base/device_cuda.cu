// The device probe of a CUDA build: is there a device of compute capability 9.0 or later that we can use?
#include <cuda_runtime.h>

#include <string>

namespace tally::gpu {
bool cuda_compiled() { return true; }
namespace detail {
bool probe_device(std::string& why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    why = std::string("built with CUDA but no device can be used (") + cudaGetErrorString(status) + ")";
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return false;
  }
  if (count == 0) {
    why = "built with CUDA but this machine has no CUDA device";
    return false;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    why = "built with CUDA but device 0 could not be queried";
    return false;
  }
  why = std::string("CUDA device 0: ") + prop.name + " (compute capability " + std::to_string(prop.major) + "." +
        std::to_string(prop.minor) + ")";
  return true;
}
}  // namespace detail
}  // namespace tally::gpu
