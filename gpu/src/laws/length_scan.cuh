// Private: the lengths pass that laws of per-particle lengths share before their weights are written: a report of
// the longest law and the first bad particle, the exclusive scan of the lengths and its total, read back once.
#pragma once

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda_check.cuh"
#include "population_kernels.cuh"

namespace tally::gpu::population_cuda::kernels {
namespace {  // kernels of each translation unit's own (no device linking)

/// What the lengths pass reports: the longest law, the first particle with bad parameters (count: none), the total.
struct LengthReport {
  unsigned long long longest;
  unsigned long long first_bad;
  long long total;
  long long chunks;  // parameter laws only: their chunks of law_chunk weights
};

__global__ void init_report(LengthReport* r, std::size_t count) {
  r->longest = 0;
  r->first_bad = count;
  r->total = 0;
  r->chunks = 0;
}

/// The largest of the warp's values, folded into *r by lane 0 (one atomic per warp, not per particle).
__device__ inline void warp_fold_max(unsigned long long v, unsigned long long* r) {
  for (int d = 16; d >= 1; d /= 2) {
    const unsigned long long o = __shfl_xor_sync(full_warp, v, d);
    v = o > v ? o : v;
  }
  if ((threadIdx.x & 31) == 0 && v > 0) atomicMax(r, v);
}

__global__ void total_kernel(const std::int64_t* offset, std::size_t count, LengthReport* r) {
  r->total = offset[count];
}

/// Exclusive scan of count + 1 lengths into offsets (offset[count] = the total), nothing read back.
void scan_lengths_on_device(const std::int64_t* lengths, std::int64_t* offsets, std::size_t count) {
  std::size_t bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, lengths, offsets, static_cast<long long>(count + 1)));
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), "tally::gpu scan");
  TALLY_CUDA_CHECK(
      cub::DeviceScan::ExclusiveSum(temp.data(), bytes, lengths, offsets, static_cast<long long>(count + 1)));
}

/// Exclusive scan of count + 1 lengths into offsets (offset[count] = the total), and the report read back.
LengthReport scan_lengths(const std::int64_t* lengths, std::int64_t* offsets, std::size_t count, LengthReport* report) {
  scan_lengths_on_device(lengths, offsets, count);
  total_kernel<<<1, 1>>>(offsets, count, report);
  launched();
  LengthReport host{};
  TALLY_CUDA_CHECK(cudaMemcpy(&host, report, sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace
}  // namespace tally::gpu::population_cuda::kernels
