// Batched inverse-cdf sampling: one draw from each pmf of a batch, the same draws on the CPU and on the GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "tally/gpu/pmf_batch.hpp"

namespace tally::gpu {

/// One draw from each pmf i of the batch by inversion: with u_i = philox_uniform(seed, i, counter) and the prefix
/// sums \f$C_j = \sum_{k \le j} w_{i,k}\f$ (formed in the fixed order of scan_math.hpp), the draw is lo_i + j for
/// the smallest j with \f$C_j > u_i C_{m-1}\f$. So P(draw = lo_i + j) = w_{i,j} / sum_k w_{i,k} up to the rounding
/// of the sums, a weight of 0 is never drawn, and the CPU and the GPU return the same values for the same seed
/// and counter. Should rounding leave no such j (u_i C within an ulp of C), the last index of positive weight is
/// drawn; a pmf with no mass (log_scale -inf, all weights 0: a particle of weight 0) draws lo_i.
/// Throws what check(batch) throws. The dispatch point: CUDA when built, a device is present and the batch has at
/// least 2^20 weights.
std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter);

namespace cpu {
std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter);
}  // namespace cpu

namespace cuda {
enum class SampleKernel {
  automatic,  ///< warp_per_pmf
  /// One warp per pmf, 256 weights at a time (8 loads per lane in flight): a pass of chunk scans for the total,
  /// a second (from registers up to 256 weights, else from cache) that stops at the chunk holding the draw.
  warp_per_pmf,
  /// The CUB composition, for benchmarks: DeviceScan::InclusiveScanByKey over all weights (keys: the pmf of each
  /// weight), then one thread per pmf searching its scanned run. Its sums are added in CUB's order, so its draws
  /// may differ from the CPU's where u_i C lands within an ulp of a prefix sum.
  cub_scan_by_key,
};
/// The CUDA implementation (host batch in, values out; copies included). tally::cuda_error without a device.
std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter,
                                         SampleKernel kernel = SampleKernel::automatic);
/// Device form: draws into `out` (count entries), asynchronous on `stream`. No temporary storage (warp_per_pmf).
void sample_batched_device(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                           void* stream = nullptr);
}  // namespace cuda

}  // namespace tally::gpu
