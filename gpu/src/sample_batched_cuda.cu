// Batched inverse-cdf sampling on the device: one warp per pmf (chunked warp scans), and the CUB composition.
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <vector>

#include "cuda_check.cuh"
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::cuda {
namespace kernels {

constexpr int sample_threads = 256;  // 8 pmfs per block
constexpr unsigned full_mask = 0xffffffffu;

/// The warp's inclusive scan of one chunk (Kogge-Stone: the order scan_math.hpp's host copy follows).
__device__ inline double warp_scan(double x, int lane) {
#pragma unroll
  for (int d = 1; d < detail::scan_chunk; d *= 2) {
    const double y = __shfl_up_sync(full_mask, x, d);
    if (lane >= d) x = x + y;
  }
  return x;
}

/// A warp reads a pmf in groups of 8 chunks (256 weights): 8 loads per lane in flight before any scan.
constexpr int group_chunks = 8;
constexpr std::int64_t group_size = 32 * group_chunks;

/// The chunk scans of the group starting at g (chunks past the end are skipped: the condition is warp-uniform).
__device__ inline void scan_group(const double* w, std::int64_t m, std::int64_t g, int lane,
                                  double (&x)[group_chunks], double (&s)[group_chunks]) {
#pragma unroll
  for (int k = 0; k < group_chunks; ++k) {
    const std::int64_t j = g + 32 * k + lane;
    x[k] = j < m ? w[j] : 0.0;
  }
#pragma unroll
  for (int k = 0; k < group_chunks; ++k) s[k] = g + 32 * k < m ? warp_scan(x[k], lane) : 0.0;
}

/// Warp w draws from pmf w. Pass 1 scans every chunk, in order, for the total and the last positive index; pass 2
/// adds the chunk totals again in the same order and stops at the first chunk whose prefix sum exceeds u C_{m-1}:
/// from registers when the pmf is one group (m <= 256), else reading each group again (from cache).
__global__ void __launch_bounds__(sample_threads)
    sample_warp_per_pmf(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out) {
  const std::size_t pmf = (static_cast<std::size_t>(blockIdx.x) * sample_threads + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (pmf >= pmfs.count) return;  // whole warps leave together
  const double* w = pmfs.weights + pmfs.offset[pmf];
  const std::int64_t m = pmfs.offset[pmf + 1] - pmfs.offset[pmf];
  double x[group_chunks], s[group_chunks];
  double carry = 0.0;
  std::int64_t last_positive = 0;
  for (std::int64_t g = 0; g < m; g += group_size) {
    scan_group(w, m, g, lane, x, s);
#pragma unroll
    for (int k = 0; k < group_chunks; ++k) {
      if (g + 32 * k >= m) break;
      const unsigned positive = __ballot_sync(full_mask, x[k] > 0.0);
      if (positive != 0) last_positive = g + 32 * k + 31 - __clz(static_cast<int>(positive));
      carry = carry + __shfl_sync(full_mask, s[k], 31);
    }
  }
  const double target = philox_uniform(seed, pmf, counter) * carry;
  std::int64_t draw = last_positive;
  double before = 0.0;
  bool found = false;
  for (std::int64_t g = 0; g < m && !found; g += group_size) {
    if (m > group_size) scan_group(w, m, g, lane, x, s);
#pragma unroll
    for (int k = 0; k < group_chunks; ++k) {
      if (found || g + 32 * k >= m) break;
      const unsigned above = __ballot_sync(full_mask, g + 32 * k + lane < m && before + s[k] > target);
      if (above != 0) {
        draw = g + 32 * k + __ffs(static_cast<int>(above)) - 1;
        found = true;
      } else {
        before = before + __shfl_sync(full_mask, s[k], 31);
      }
    }
  }
  if (lane == 0) out[pmf] = pmfs.lo[pmf] + draw;
}

// ---- the CUB composition (a benchmark baseline) --------------------------------------------------------------------
/// The pmf that weight k belongs to (binary search over the offsets).
struct PmfOfWeight {
  const std::int64_t* offset;
  std::size_t count;
  __device__ std::int64_t operator()(std::int64_t k) const {
    std::size_t lo = 0, hi = count - 1;
    while (lo < hi) {
      const std::size_t mid = (lo + hi + 1) / 2;
      if (offset[mid] <= k) lo = mid; else hi = mid - 1;
    }
    return static_cast<std::int64_t>(lo);
  }
};

/// One thread per pmf: the first prefix sum above u times the last, by binary search over its scanned run.
__global__ void search_scanned(PmfBatchView pmfs, const double* scanned, std::uint64_t seed, std::uint64_t counter,
                               std::int64_t* out) {
  const std::size_t pmf = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pmf >= pmfs.count) return;
  const double* c = scanned + pmfs.offset[pmf];
  const std::int64_t m = pmfs.offset[pmf + 1] - pmfs.offset[pmf];
  const double target = philox_uniform(seed, pmf, counter) * c[m - 1];
  std::int64_t lo = 0, hi = m - 1;  // the first index with c > target, or m - 1
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (c[mid] > target) hi = mid; else lo = mid + 1;
  }
  out[pmf] = pmfs.lo[pmf] + lo;
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;
using detail::upload;


}  // namespace

void sample_batched_device(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                           void* stream) {
  if (pmfs.count == 0) return;
  const auto blocks = static_cast<unsigned>((pmfs.count * 32 + kernels::sample_threads - 1) / kernels::sample_threads);
  kernels::sample_warp_per_pmf<<<blocks, kernels::sample_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      pmfs, seed, counter, out);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter,
                                         SampleKernel kernel) {
  const char* who = "tally::gpu::cuda::sample_batched";
  check(pmfs, who);
  detail::require_device(who);
  std::vector<std::int64_t> out(pmfs.size());
  if (pmfs.size() == 0) return out;
  auto weights = upload(pmfs.weights);
  auto offset = upload(pmfs.offset);
  auto lo = upload(pmfs.lo);
  auto log_scale = upload(pmfs.log_scale);
  DeviceBuffer<std::int64_t> draws(pmfs.size());
  const PmfBatchView view{weights.data(), offset.data(), lo.data(), log_scale.data(), pmfs.size()};
  if (kernel == SampleKernel::cub_scan_by_key) {
    const auto n = static_cast<std::int64_t>(pmfs.weights.size());
    DeviceBuffer<double> scanned(pmfs.weights.size());
    auto keys = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                kernels::PmfOfWeight{offset.data(), pmfs.size()});
    std::size_t bytes = 0;
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, bytes, keys, weights.data(), scanned.data(), n));
    DeviceBuffer<char> temp(std::max<std::size_t>(bytes, 1));
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSumByKey(temp.data(), bytes, keys, weights.data(), scanned.data(), n));
    kernels::search_scanned<<<static_cast<unsigned>((pmfs.size() + 255) / 256), 256>>>(view, scanned.data(), seed,
                                                                                       counter, draws.data());
    TALLY_CUDA_CHECK(cudaGetLastError());
  } else {
    sample_batched_device(view, seed, counter, draws.data());
  }
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), draws.data(), out.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace tally::gpu::cuda
