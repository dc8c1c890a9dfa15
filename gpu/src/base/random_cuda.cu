// The CUDA kernel for blocks of Philox uniforms: one thread per draw, the same function as the CPU.
#include "cuda_check.cuh"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/random.hpp"

namespace tally::gpu::cuda {
namespace {

constexpr int threads_per_block = 256;  // tuning knob

__global__ void uniforms_kernel(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::size_t n,
                                double* out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = philox_uniform(seed, stream, first + i);
}

}  // namespace

void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out) {
  detail::require_device("tally::gpu::cuda::uniforms");
  if (out.empty()) return;
  detail::DeviceBuffer<double> buffer(out.size());
  const auto blocks = static_cast<unsigned>((out.size() + threads_per_block - 1) / threads_per_block);
  uniforms_kernel<<<blocks, threads_per_block>>>(seed, stream, first, out.size(), buffer.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), buffer.data(), out.size() * sizeof(double), cudaMemcpyDeviceToHost));
}

}  // namespace tally::gpu::cuda
