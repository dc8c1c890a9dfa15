// Batched inverse-cdf sampling: one draw from each pmf of a batch, the same draws on the CPU and on the GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tally/gpu/pmf_batch.hpp"

namespace tally::gpu {

/// One draw from each pmf i of the batch by inversion, with u_i = philox_uniform(seed, i, counter), in the fixed
/// "lane segment" order of gpu/src/scans/scan_math.hpp. The weights w_0 .. w_{m-1} are read in tiles of 256 (32 lanes
/// x 8: in tile t, lane l holds j = 256 t + 8 l + r, r < 8, and 0 past the end); s_l sums the lane's 8 weights in
/// order, S_l is the Kogge-Stone inclusive scan of s_0 .. s_31 (rounds x_l += x_{l-d}, d = 1, 2, 4, 8, 16), E_l =
/// S_{l-1} (E_0 = 0), the tiles are chained by carry_{t+1} = carry_t + S_31(t) from carry_0 = 0, and the prefix
/// sum at j is \f$C_j\f$ = carry_t + E_l plus w_{8l}, ..., w_{8l+r}, added one by one. With the total C = carry_T
/// and target = u_i C: the tile t* is the first t with carry_{t+1} > target (none: the last tile of positive
/// mass), and the draw is lo_i + j for the smallest j of tile t* with w_{i,j} > 0 and \f$C_j > \f$ target (none:
/// the largest j of tile t* with w_{i,j} > 0). So P(draw = lo_i + j) = w_{i,j} / sum_k w_{i,k} up to the rounding
/// of the sums, a weight of 0 is never drawn, j is the smallest j with C_j > target except where target lies
/// within the rounding of the sums, and the CPU and the GPU return the same values for the same seed and counter.
/// A pmf with no mass (log_scale -inf, all weights 0: a particle of weight 0) draws lo_i.
/// Throws what check(batch) throws. The dispatch point: CUDA when built, a device is present and the batch has at
/// least 2^20 weights.
std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter);

namespace cpu {
/// The CPU reference: the rule above, pmf after pmf.
std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter);
/// The draw of pmf `index` of a batch by the rule above, for one pmf w_k exp(s) on lo, lo + 1, ... held elsewhere
/// (w non-empty, >= 0): lo + j with u = philox_uniform(seed, index, counter). A w of all zeros draws lo. The same
/// value as sample_batched gives for that pmf at that index (the runtime's host laws draw with it, so that they
/// and device laws give the same values for the same seed).
std::int64_t sample_one(std::span<const double> w, std::int64_t lo, std::uint64_t seed, std::uint64_t index,
                        std::uint64_t counter);
}  // namespace cpu

namespace cuda {
/// Which CUDA kernel draws.
enum class SampleKernel {
  automatic,  ///< warp_per_pmf
  /// One warp per pmf, in the lane-segment order above: each lane reads its 8 contiguous weights of a tile (four
  /// 16-byte loads where the pmf is 16-byte aligned) and adds them; one 5-shuffle scan per 256 weights. A first pass
  /// chains the tile totals, the carries of the last (up to) 32 tiles kept in registers, one per lane; then only
  /// the tile of the draw is read again (from cache; not at all when it was the last read, as for m <= 256). Only
  /// when the draw lies before those 32 tiles (m > 8192) are tiles 0, 1, ... chained again up to it.
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
/// Pmf i draws on the stream first_stream + i (a shard of a larger population: see gpu::sample). max_length, when
/// given (> 0), is a bound on the pmfs' lengths known to the caller: at most 128 takes a kernel of two pmfs a warp,
/// at most 8 one of a pmf a thread (the same draws, bit for bit).
void sample_batched_device(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                           void* stream = nullptr, std::uint64_t first_stream = 0, std::size_t max_length = 0);
}  // namespace cuda

}  // namespace tally::gpu
