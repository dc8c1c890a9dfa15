// The device side of a build without CUDA: there is never a device, and the CUDA entry points say so.
#include <string>

#include "tally/error.hpp"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/random.hpp"

namespace tally::gpu {
bool cuda_compiled() { return false; }
namespace detail {
bool probe_device(std::string& why) {
  why = "CPU (tally was built without CUDA)";
  return false;
}
}  // namespace detail
}  // namespace tally::gpu

namespace tally::gpu::cuda {
void uniforms(std::uint64_t, std::uint64_t, std::uint64_t, std::span<double>) {
  throw cuda_error("tally::gpu::cuda::uniforms: tally was built without CUDA");
}
void convolve(std::span<const double>, std::span<const double>, std::span<double>) {
  throw cuda_error("tally::gpu::cuda::convolve: tally was built without CUDA");
}
void convolve(std::span<const float>, std::span<const float>, std::span<float>) {
  throw cuda_error("tally::gpu::cuda::convolve: tally was built without CUDA");
}
void convolve_skew(std::span<const double>, std::span<const double>, std::span<double>) {
  throw cuda_error("tally::gpu::cuda::convolve_skew: tally was built without CUDA");
}
void convolve_device(const double*, std::size_t, const double*, std::size_t, double*, void*) {
  throw cuda_error("tally::gpu::cuda::convolve_device: tally was built without CUDA");
}
void convolve_device(const float*, std::size_t, const float*, std::size_t, float*, void*) {
  throw cuda_error("tally::gpu::cuda::convolve_device: tally was built without CUDA");
}
void convolve_skew_device(const double*, std::size_t, const double*, std::size_t, double*, void*) {
  throw cuda_error("tally::gpu::cuda::convolve_skew_device: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda
