// Sampled supports on the device: one launch sums every sampled subset of every vector; CUB removes duplicates.
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <memory>

#include "cuda_check.cuh"
#include "sampled_check.hpp"
#include "subset_math.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"

namespace tally::gpu::cuda {
namespace kernels {

constexpr int sums_threads = 256;

/// The vector that sample s belongs to: the last i with begin[i] <= s (begin has m + 1 increasing entries).
__device__ inline int vector_of(const std::uint64_t* begin, int m, std::uint64_t s) {
  int lo = 0, hi = m - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (begin[mid] <= s) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/// One thread per sample s (vector i, number j = s - begin[i]): mask pi_i(j), its sum from scratch.
template <class W>
__global__ void sample_sums(const W* weights, const std::uint64_t* weight_begin, const std::uint64_t* sample_begin,
                            int m, std::uint64_t samples, std::uint64_t seed, W* sums) {
  const std::uint64_t s = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= samples) return;
  const int i = vector_of(sample_begin, m, s);
  const W* v = weights + weight_begin[i];
  const int n = static_cast<int>(weight_begin[i + 1] - weight_begin[i]);
  std::uint64_t mask = detail::permute(s - sample_begin[i], n, detail::permutation_key(seed, i));
  typename detail::Accumulator<W>::type sum{};
  for (; mask != 0; mask &= mask - 1) detail::step(sum, v[detail::ctz(mask)], true);
  sums[s] = detail::total(sum);
}

/// flag[s] = 1 where sorted[s] is the first of its value within its vector.
template <class W>
__global__ void first_of_value(const W* sorted, const std::uint64_t* sample_begin, int m, std::uint64_t samples,
                               int* flag) {
  const std::uint64_t s = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s >= samples) return;
  const int i = vector_of(sample_begin, m, s);
  flag[s] = (s == sample_begin[i] || sorted[s] != sorted[s - 1]) ? 1 : 0;
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;
using detail::upload;


template <class W>
std::vector<std::vector<W>> sampled(const std::vector<std::vector<W>>& vectors, std::size_t k, std::uint64_t seed) {
  const char* who = "tally::gpu::cuda::sampled_subset_sums";
  const auto counts = detail::sample_counts(vectors, k, who);
  detail::require_device(who);
  const int m = static_cast<int>(vectors.size());
  std::vector<std::vector<W>> out(vectors.size());
  if (m == 0) return out;
  std::vector<W> flat;
  std::vector<std::uint64_t> weight_begin{0}, sample_begin{0};
  for (int i = 0; i < m; ++i) {
    flat.insert(flat.end(), vectors[i].begin(), vectors[i].end());
    weight_begin.push_back(flat.size());
    sample_begin.push_back(sample_begin.back() + counts[i]);
  }
  const std::uint64_t samples = sample_begin.back();
  detail::require_device_memory(4.0 * sizeof(W) * double(samples), who, "the samples, sorted and deduplicated");
  auto d_weights = upload(flat);
  auto d_weight_begin = upload(weight_begin);
  auto d_sample_begin = upload(sample_begin);
  DeviceBuffer<W> sums(samples), sorted(samples), unique(samples);
  DeviceBuffer<int> flags(samples), per_vector(m), selected(1);
  const auto blocks = static_cast<unsigned>((samples + kernels::sums_threads - 1) / kernels::sums_threads);
  kernels::sample_sums<<<blocks, kernels::sums_threads>>>(d_weights.data(), d_weight_begin.data(),
                                                            d_sample_begin.data(), m, samples, seed, sums.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  // per-vector sort, first-of-value flags, compaction, and the number of distinct values per vector
  const std::uint64_t* begins = d_sample_begin.data();
  const std::uint64_t* ends = d_sample_begin.data() + 1;
  std::size_t sort_bytes = 0, select_bytes = 0, reduce_bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(nullptr, sort_bytes, sums.data(), sorted.data(),
                                                      static_cast<std::int64_t>(samples), m, begins, ends));
  TALLY_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, select_bytes, sorted.data(), flags.data(), unique.data(),
                                              selected.data(), static_cast<std::int64_t>(samples)));
  TALLY_CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(nullptr, reduce_bytes, flags.data(), per_vector.data(), m, begins,
                                                   ends));
  DeviceBuffer<char> temp(std::max({sort_bytes, select_bytes, reduce_bytes, std::size_t{1}}));
  TALLY_CUDA_CHECK(cub::DeviceSegmentedSort::SortKeys(temp.data(), sort_bytes, sums.data(), sorted.data(),
                                                      static_cast<std::int64_t>(samples), m, begins, ends));
  kernels::first_of_value<<<blocks, kernels::sums_threads>>>(sorted.data(), begins, m, samples, flags.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  TALLY_CUDA_CHECK(cub::DeviceSelect::Flagged(temp.data(), select_bytes, sorted.data(), flags.data(), unique.data(),
                                              selected.data(), static_cast<std::int64_t>(samples)));
  TALLY_CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(temp.data(), reduce_bytes, flags.data(), per_vector.data(), m,
                                                   begins, ends));
  std::vector<int> distinct(m);
  int kept = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(distinct.data(), per_vector.data(), m * sizeof(int), cudaMemcpyDeviceToHost));
  TALLY_CUDA_CHECK(cudaMemcpy(&kept, selected.data(), sizeof kept, cudaMemcpyDeviceToHost));
  std::vector<W> values(static_cast<std::size_t>(kept));
  TALLY_CUDA_CHECK(cudaMemcpy(values.data(), unique.data(), values.size() * sizeof(W), cudaMemcpyDeviceToHost));
  std::size_t at = 0;
  for (int i = 0; i < m; ++i) {
    out[i].assign(values.begin() + at, values.begin() + at + distinct[i]);
    at += distinct[i];
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed) {
  return sampled(vectors, k, seed);
}
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed) {
  return sampled(vectors, k, seed);
}

}  // namespace tally::gpu::cuda
