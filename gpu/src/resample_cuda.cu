// Resampling on the device, composed of CUB reductions and a scan through transform iterators, and one kernel.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_check.cuh"
#include "resample_check.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu::cuda {
namespace kernels {

static_assert(sizeof(std::size_t) == sizeof(unsigned long long), "ancestors are 64-bit on both sides");

/// e^{l - m}: the weight relative to the largest.
struct RelativeWeight {
  double m;
  __device__ double operator()(double l) const { return exp(l - m); }
};
/// (e^{l - m}, e^{2(l - m)}) for the sums of the weights and of their squares, in one pass.
struct WeightAndSquare {
  double m;
  __device__ double2 operator()(double l) const {
    const double w = exp(l - m);
    return make_double2(w, w * w);
  }
};
struct AddPairs {
  __device__ double2 operator()(double2 a, double2 b) const { return make_double2(a.x + b.x, a.y + b.y); }
};

/// k_i = floor(P c_i / c_{P-1} + u), capped at P (and P for the last particle): the end of particle i's positions.
__device__ inline std::size_t systematic_end(const double* c, std::size_t i, std::size_t p, double u) {
  if (i + 1 == p) return p;
  const double k = floor(double(p) * (c[i] / c[p - 1]) + u);
  return k >= double(p) ? p : static_cast<std::size_t>(k);
}

/// Particle i writes itself at positions [k_{i-1}, k_i): P writes in all, ancestors in increasing order.
__global__ void systematic_ancestors(const double* c, std::size_t p, double u, unsigned long long* out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p) return;
  const std::size_t first = i == 0 ? 0 : systematic_end(c, i - 1, p, u), end = systematic_end(c, i, p, u);
  for (std::size_t k = first; k < end; ++k) out[k] = i;
}

/// Draw j: the first prefix sum above u_j c_{P-1} (else the first reaching c_{P-1}), by binary search.
__global__ void multinomial_ancestors(const double* c, std::size_t p, std::uint64_t seed, std::uint64_t counter,
                                      unsigned long long* out) {
  const std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= p) return;
  const double total = c[p - 1];
  const double target = philox_uniform(seed, j, counter) * total;
  const bool rounded_up = !(target < total);
  std::size_t lo = 0, hi = p - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (rounded_up ? c[mid] >= total : c[mid] > target) hi = mid; else lo = mid + 1;
  }
  out[j] = lo;
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;

struct DeviceWeights {
  DeviceBuffer<double> log_w;
  double m;
};

/// The log-weights on the device and their maximum.
DeviceWeights upload_and_max(std::span<const double> log_w, DeviceBuffer<char>& temp) {
  DeviceBuffer<double> d(log_w.size());
  TALLY_CUDA_CHECK(cudaMemcpy(d.data(), log_w.data(), log_w.size() * 8, cudaMemcpyHostToDevice));
  DeviceBuffer<double> m(1);
  std::size_t bytes = 0;
  const auto n = static_cast<std::int64_t>(log_w.size());
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, d.data(), m.data(), n));
  if (temp.size() < bytes) temp = DeviceBuffer<char>(bytes);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), bytes, d.data(), m.data(), n));
  double host_m = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&host_m, m.data(), 8, cudaMemcpyDeviceToHost));
  return {std::move(d), host_m};
}

}  // namespace

WeightSummary summarize_log_weights(std::span<const double> log_w) {
  const char* who = "tally::gpu::cuda::summarize_log_weights";
  detail::check_log_weights(log_w, who);
  detail::require_device(who);
  DeviceBuffer<char> temp(1);
  auto [d, m] = upload_and_max(log_w, temp);
  auto pairs = thrust::make_transform_iterator(d.data(), kernels::WeightAndSquare{m});
  DeviceBuffer<double2> sums(1);
  std::size_t bytes = 0;
  const auto n = static_cast<std::int64_t>(log_w.size());
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, pairs, sums.data(), n, kernels::AddPairs{},
                                             make_double2(0.0, 0.0)));
  if (temp.size() < bytes) temp = DeviceBuffer<char>(bytes);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, pairs, sums.data(), n, kernels::AddPairs{},
                                             make_double2(0.0, 0.0)));
  double2 s{};
  TALLY_CUDA_CHECK(cudaMemcpy(&s, sums.data(), sizeof s, cudaMemcpyDeviceToHost));
  return {m, m + std::log(s.x), s.x * s.x / s.y};
}

void resample_device(void* temp, std::size_t& temp_bytes, const double* log_w, std::size_t p, Resampler kind,
                     std::uint64_t seed, std::uint64_t counter, std::size_t* ancestors, void* stream) {
  // temporary storage: the maximum and the prefix sums, then CUB's space (the larger of its two calls)
  const auto n = static_cast<std::int64_t>(p);
  const auto s = static_cast<cudaStream_t>(stream);
  const std::size_t header = (8 + 8 * p + 255) / 256 * 256;
  double* m = nullptr;
  double* c = nullptr;
  if (temp != nullptr) {
    m = static_cast<double*>(temp);
    c = m + 1;
  }
  auto weights = thrust::make_transform_iterator(log_w, kernels::RelativeWeight{0.0});
  std::size_t max_bytes = 0, scan_bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, max_bytes, log_w, m, n, s));
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, weights, c, n, s));
  if (temp == nullptr) {
    temp_bytes = header + std::max(max_bytes, scan_bytes);
    return;
  }
  void* cub_temp = static_cast<char*>(temp) + header;
  std::size_t cub_bytes = temp_bytes - header;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(cub_temp, cub_bytes, log_w, m, n, s));
  double host_m = 0;
  TALLY_CUDA_CHECK(cudaMemcpyAsync(&host_m, m, 8, cudaMemcpyDeviceToHost, s));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(s));
  cub_bytes = temp_bytes - header;
  weights = thrust::make_transform_iterator(log_w, kernels::RelativeWeight{host_m});
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(cub_temp, cub_bytes, weights, c, n, s));
  auto* out = reinterpret_cast<unsigned long long*>(ancestors);
  const auto blocks = static_cast<unsigned>((p + 255) / 256);
  if (kind == Resampler::systematic) {
    kernels::systematic_ancestors<<<blocks, 256, 0, s>>>(c, p, philox_uniform(seed, 0, counter), out);
  } else {
    kernels::multinomial_ancestors<<<blocks, 256, 0, s>>>(c, p, seed, counter, out);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter) {
  const char* who = "tally::gpu::cuda::resample";
  detail::check_log_weights(log_w, who);
  detail::require_device(who);
  const std::size_t p = log_w.size();
  DeviceBuffer<double> d(p);
  TALLY_CUDA_CHECK(cudaMemcpy(d.data(), log_w.data(), p * 8, cudaMemcpyHostToDevice));
  std::size_t bytes = 0;
  resample_device(nullptr, bytes, d.data(), p, kind, seed, counter, nullptr);
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<std::size_t> ancestors(p);
  resample_device(temp.data(), bytes, d.data(), p, kind, seed, counter, ancestors.data());
  std::vector<std::size_t> out(p);
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), ancestors.data(), p * 8, cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace tally::gpu::cuda
