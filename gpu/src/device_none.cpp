// The device probe of a build without CUDA: there is never a device.
#include <string>

namespace tally::gpu {
bool cuda_compiled() { return false; }
namespace detail {
bool probe_device(std::string& why) {
  why = "CPU (tally was built without CUDA)";
  return false;
}
}  // namespace detail
}  // namespace tally::gpu
