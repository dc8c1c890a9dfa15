// Scans along chains on the device: the chain number of every node, then CUB's scan by key.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <vector>

#include "cuda_check.cuh"
#include "tally/gpu/chain_scan.hpp"

namespace tally::gpu::cuda {
namespace kernels {
struct BitOr {
  __device__ std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const { return a | b; }
};
struct Plus {
  __device__ double operator()(double a, double b) const { return a + b; }
};
/// Node 0 starts a chain whatever its flag says.
__global__ void chain_starts(const std::uint8_t* head, std::size_t n, std::uint32_t* start) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) start[i] = (i == 0 || head[i]) ? 1u : 0u;
}
}  // namespace kernels

namespace {
using detail::DeviceBuffer;

template <class T, class Op>
std::vector<T> chain_scan(std::span<const T> x, std::span<const std::uint8_t> head, Op op, const char* who) {
  if (x.size() != head.size())
    tally::detail::fail<shape_error>(who, ": ", x.size(), " values but ", head.size(), " head flags");
  detail::require_device(who);
  const std::size_t n = x.size();
  std::vector<T> out(n);
  if (n == 0) return out;
  DeviceBuffer<T> d_x(n), d_out(n);
  DeviceBuffer<std::uint8_t> d_head(n);
  DeviceBuffer<std::uint32_t> start(n), chain(n);
  TALLY_CUDA_CHECK(cudaMemcpy(d_x.data(), x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  TALLY_CUDA_CHECK(cudaMemcpy(d_head.data(), head.data(), n, cudaMemcpyHostToDevice));
  kernels::chain_starts<<<static_cast<unsigned>((n + 255) / 256), 256>>>(d_head.data(), n, start.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  const auto count = static_cast<std::int64_t>(n);
  std::size_t sum_bytes = 0, scan_bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, sum_bytes, start.data(), chain.data(), count));
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(nullptr, scan_bytes, chain.data(), d_x.data(), d_out.data(), op,
                                                       count));
  DeviceBuffer<char> temp(std::max({sum_bytes, scan_bytes, std::size_t{1}}));
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), sum_bytes, start.data(), chain.data(), count));
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(temp.data(), scan_bytes, chain.data(), d_x.data(), d_out.data(),
                                                       op, count));
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), d_out.data(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return out;
}
}  // namespace

std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head) {
  return chain_scan(x, head, kernels::BitOr{}, "tally::gpu::cuda::chain_prefix_or");
}
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head) {
  return chain_scan(x, head, kernels::Plus{}, "tally::gpu::cuda::chain_prefix_sum");
}

}  // namespace tally::gpu::cuda
