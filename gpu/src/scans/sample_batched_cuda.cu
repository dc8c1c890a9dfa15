// Batched inverse-cdf sampling on the device: one warp per pmf (lane-segment scans), two a warp or one a thread for
// short pmfs, and the CUB composition.
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuda_check.cuh"
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::cuda {
namespace kernels {

// ---- tuning, in one place -------------------------------------------------------------------------------------------
constexpr int sample_threads = 256;                 // 8 warps: 8 pmfs per block
constexpr int lanes = detail::warp_lanes;           // 32
constexpr int lane_weights = detail::lane_weights;  // 8 contiguous weights per lane and tile (4 16-byte loads)
constexpr std::int64_t tile = detail::scan_tile;    // 256 weights per tile
constexpr std::int64_t kept_tiles = lanes;          // carries kept in registers: one tile per lane, 8192 weights
constexpr unsigned full_mask = 0xffffffffu;
static_assert(lane_weights % 2 == 0 && tile == lanes * lane_weights);

/// Lane `lane`'s weights of tile t, w_j for j = 256 t + 8 lane + r (0 for j >= m). When w is 16-byte aligned, so
/// is every lane's first weight (256 t + 8 lane is even), and a lane whose 8 weights all lie below m (j + 8 <= m)
/// reads them as 4 double2; otherwise 8 scalar reads. `aligned` is the same for the whole warp (one pmf).
__device__ inline void load_lane(const double* w, std::int64_t m, std::int64_t t, int lane, bool aligned,
                                 double (&x)[lane_weights]) {
  const std::int64_t first = t * tile + std::int64_t{lane_weights} * lane;
  if (aligned && first + lane_weights <= m) {
    const auto* p = reinterpret_cast<const double2*>(w + first);
#pragma unroll
    for (int k = 0; k < lane_weights / 2; ++k) {
      const double2 v = __ldg(p + k);
      x[2 * k] = v.x;
      x[2 * k + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int r = 0; r < lane_weights; ++r) x[r] = first + r < m ? __ldg(w + first + r) : 0.0;
  }
}

/// S_l of this lane (scan_math.hpp's order): its weights added in order, then the Kogge-Stone rounds
/// x_l = x_l + x_{l-d} (d = 1 .. 16) over the lane sums, as warp_order_scan runs them on the host.
__device__ inline double scan_lanes(const double (&x)[lane_weights], int lane) {
  double s = x[0];
#pragma unroll
  for (int r = 1; r < lane_weights; ++r) s = s + x[r];
#pragma unroll
  for (int d = 1; d < lanes; d *= 2) {
    const double y = __shfl_up_sync(full_mask, s, d);
    if (lane >= d) s = s + y;
  }
  return s;
}

/// Warp w draws from pmf w by the rule of scan_math.hpp (lane_segment_draw). Pass 1 reads the tiles in order and
/// chains their totals S_31 into the carries; lane k keeps carry_{kept+k+1} of the last group of up to 32 tiles
/// (kept = the first tile of that group), and the warp keeps carry_kept, the last tile of positive mass and its
/// carry. Step 2 finds t*: by a ballot over the kept carries, or, when carry_kept > target already (m > 8192), by
/// chaining tiles 0, 1, ... again until carry_{t+1} > target. Step 3 walks tile t* (still in registers when it
/// was the last tile read, else read again, from cache) and the first lane holding a hit writes the draw.
__global__ void __launch_bounds__(sample_threads)
    sample_warp_per_pmf(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                        std::uint64_t first_stream) {
  const std::size_t pmf = (static_cast<std::size_t>(blockIdx.x) * sample_threads + threadIdx.x) / lanes;
  const int lane = static_cast<int>(threadIdx.x % lanes);
  if (pmf >= pmfs.count) return;  // whole warps leave together
  const std::int64_t begin = pmfs.offset[pmf];
  const std::int64_t m = pmfs.offset[pmf + 1] - begin;
  const double* w = pmfs.weights + begin;
  const bool aligned = reinterpret_cast<std::uintptr_t>(w) % 16 == 0;
  const std::int64_t tiles = (m + tile - 1) / tile;                 // ceil(m / 256) >= 1
  const std::int64_t kept = (tiles - 1) / kept_tiles * kept_tiles;  // tiles kept .. tiles-1: at most 32, one a lane

  // pass 1: the carries
  double x[lane_weights];
  double scan = 0.0;                 // S_l of the tile in x
  std::int64_t held = -1;            // the tile in x
  double carry = 0.0;                // carry_t, finally the total
  double kept_carry = 0.0;           // carry_kept
  double tile_end = 0.0;             // lane k: carry_{kept+k+1}
  std::int64_t last_tile = -1;       // the last tile with S_31 > 0
  double last_carry = 0.0;           // its carry
  // loads tile t into x and scans it: returns S_31, the tile's total
  auto scan_tile = [&](std::int64_t t) {
    load_lane(w, m, t, lane, aligned, x);
    scan = scan_lanes(x, lane);
    held = t;
    return __shfl_sync(full_mask, scan, lanes - 1);
  };
#pragma unroll 1
  for (std::int64_t t = 0; t < tiles; ++t) {
    const double tile_total = scan_tile(t);
    if (t == kept) kept_carry = carry;
    if (tile_total > 0.0) {
      last_tile = t;
      last_carry = carry;
    }
    carry = carry + tile_total;
    if (t - kept == lane) tile_end = carry;
  }
  if (!(carry > 0.0)) {  // step 1: no mass
    if (lane == 0) out[pmf] = pmfs.lo[pmf];
    return;
  }
  const double target = philox_uniform(seed, first_stream + pmf, counter) * carry;

  // step 2: t* and before = carry_{t*}; the fallback (no carry_{t+1} > target) is the last tile of positive mass
  std::int64_t t_star = last_tile;
  double before = last_carry;
  if (kept_carry > target) {  // carry_{t+1} <= carry_kept for t < kept: t* < kept, found by chaining again
    double c = 0.0;
#pragma unroll 1
    for (std::int64_t t = 0; t < kept; ++t) {
      const double tile_total = scan_tile(t);
      if (c + tile_total > target) {  // the same additions as pass 1: carry_{t+1} > target
        t_star = t;
        before = c;
        break;
      }
      c = c + tile_total;
    }
  } else {  // carry_{t+1} <= carry_kept <= target for t < kept: the ballot over the kept carries decides
    const unsigned above = __ballot_sync(full_mask, kept + lane < tiles && tile_end > target);
    const double end_before = __shfl_up_sync(full_mask, tile_end, 1);  // lane k >= 1: carry_{kept+k}
    const int k = above != 0 ? __ffs(static_cast<int>(above)) - 1 : 0;
    const double carry_k = __shfl_sync(full_mask, end_before, k);
    if (above != 0) {
      t_star = kept + k;
      before = k == 0 ? kept_carry : carry_k;
    }
  }
  if (held != t_star) {  // read tile t* again (from cache)
    load_lane(w, m, t_star, lane, aligned, x);
    scan = scan_lanes(x, lane);
  }

  // step 3: c = carry_{t*} + E_l, then the lane's weights one by one; the first hit of positive weight, else the
  // last positive weight of the tile
  const double exclusive = __shfl_up_sync(full_mask, scan, 1);
  double c = before + (lane == 0 ? 0.0 : exclusive);
  int first = lane_weights, last = -1;
#pragma unroll
  for (int r = 0; r < lane_weights; ++r) {
    c = c + x[r];
    if (x[r] > 0.0) {
      if (first == lane_weights && c > target) first = r;
      last = r;
    }
  }
  const unsigned hit = __ballot_sync(full_mask, first < lane_weights);
  const unsigned positive = __ballot_sync(full_mask, last >= 0);  // != 0: tile t* has mass
  const int chosen = hit != 0 ? __ffs(static_cast<int>(hit)) - 1 : lanes - 1 - __clz(static_cast<int>(positive));
  if (lane == chosen)
    out[pmf] = pmfs.lo[pmf] + t_star * tile + std::int64_t{lane_weights} * lane + (hit != 0 ? first : last);
}

/// The same draws for batches whose pmfs all have at most half a tile (128 weights): two pmfs a warp, 16 lanes each.
/// Lane l of a pmf holds its weights 8 l .. 8 l + 7, as lanes 0 .. 15 of sample_warp_per_pmf's single tile do, and
/// the Kogge-Stone rounds d = 1 .. 8 within the 16 lanes give the S_l of those lanes bit for bit: in the full warp,
/// lanes 16 .. 31 hold zeros, the round d = 16 adds to lanes 0 .. 15 nothing, and the tile's total S_31 is
/// (0 + ... + 0) + S_15 = S_15. With one tile, t* = 0 and carry_{t*} = 0, so step 3 is the whole search: the same
/// additions, the same hit, the same draw. What is per pmf (the offsets, the uniform, the ballots) serves two.
__global__ void __launch_bounds__(sample_threads)
    sample_two_per_warp(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                        std::uint64_t first_stream) {
  constexpr int G = lanes / 2;
  const std::size_t first = (static_cast<std::size_t>(blockIdx.x) * sample_threads + threadIdx.x) / lanes * 2;
  if (first >= pmfs.count) return;  // whole warps leave together
  const int lane32 = static_cast<int>(threadIdx.x % lanes), half = lane32 / G, lane = lane32 % G;
  const std::size_t pmf = first + static_cast<std::size_t>(half);
  const bool valid = pmf < pmfs.count;  // the last warp's second half may have no pmf: it keeps step
  const std::size_t at = valid ? pmf : first;
  const std::int64_t begin = pmfs.offset[at];
  const std::int64_t m = valid ? pmfs.offset[at + 1] - begin : 0;
  const double* w = pmfs.weights + begin;
  const bool aligned = reinterpret_cast<std::uintptr_t>(w) % 16 == 0;
  double x[lane_weights];
  load_lane(w, m, 0, lane, aligned, x);
  double scan = x[0];
#pragma unroll
  for (int r = 1; r < lane_weights; ++r) scan = scan + x[r];
#pragma unroll
  for (int d = 1; d < G; d *= 2) {
    const double y = __shfl_up_sync(full_mask, scan, d, G);
    if (lane >= d) scan = scan + y;
  }
  const double total = __shfl_sync(full_mask, scan, G - 1, G);
  const double target = total > 0.0 ? philox_uniform(seed, first_stream + at, counter) * total : 0.0;
  const double exclusive = __shfl_up_sync(full_mask, scan, 1, G);
  double c = 0.0 + (lane == 0 ? 0.0 : exclusive);
  int hit_at = lane_weights, last = -1;
#pragma unroll
  for (int r = 0; r < lane_weights; ++r) {
    c = c + x[r];
    if (x[r] > 0.0) {
      if (hit_at == lane_weights && c > target) hit_at = r;
      last = r;
    }
  }
  const unsigned shift = static_cast<unsigned>(G * half);
  const unsigned hit = (__ballot_sync(full_mask, hit_at < lane_weights) >> shift) & 0xffffu;
  const unsigned positive = (__ballot_sync(full_mask, last >= 0) >> shift) & 0xffffu;
  if (!valid) return;
  if (!(total > 0.0)) {  // no mass
    if (lane == 0) out[pmf] = pmfs.lo[pmf];
    return;
  }
  const int chosen = hit != 0 ? __ffs(static_cast<int>(hit)) - 1 : lanes - 1 - __clz(static_cast<int>(positive));
  if (lane == chosen) out[pmf] = pmfs.lo[pmf] + std::int64_t{lane_weights} * lane + (hit != 0 ? hit_at : last);
}

/// The same draws for batches whose pmfs all have at most one lane's weights (8: a Markov chain's few states, a
/// Bernoulli): one thread a pmf, with sample_two_per_warp's sums bit for bit. There the tile's total is lane 0's sum
/// of its 8 weights in order (the other lanes hold zeros, and the Kogge-Stone rounds add only +0 to it, which
/// changes no sum), and the search walks lane 0's weights from c = 0: both are this thread's loops.
__global__ void __launch_bounds__(sample_threads)
    sample_thread_per_pmf(PmfBatchView pmfs, std::uint64_t seed, std::uint64_t counter, std::int64_t* out,
                          std::uint64_t first_stream) {
  const std::size_t pmf = static_cast<std::size_t>(blockIdx.x) * sample_threads + threadIdx.x;
  if (pmf >= pmfs.count) return;
  const std::int64_t begin = pmfs.offset[pmf];
  const std::int64_t m = pmfs.offset[pmf + 1] - begin;
  double x[lane_weights];
#pragma unroll
  for (int r = 0; r < lane_weights; ++r) x[r] = r < m ? __ldg(pmfs.weights + begin + r) : 0.0;
  double total = x[0];
#pragma unroll
  for (int r = 1; r < lane_weights; ++r) total = total + x[r];
  if (!(total > 0.0)) {  // no mass
    out[pmf] = pmfs.lo[pmf];
    return;
  }
  const double target = philox_uniform(seed, first_stream + pmf, counter) * total;
  double c = 0.0;
  int hit = -1, last = -1;
#pragma unroll
  for (int r = 0; r < lane_weights; ++r) {
    c = c + x[r];
    if (x[r] > 0.0) {
      if (hit < 0 && c > target) hit = r;
      last = r;
    }
  }
  out[pmf] = pmfs.lo[pmf] + (hit >= 0 ? hit : last);
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
                           void* stream, std::uint64_t first_stream, std::size_t max_length) {
  if (pmfs.count == 0) return;
  if (max_length > 0 && max_length <= static_cast<std::size_t>(kernels::lane_weights)) {
    const auto blocks = static_cast<unsigned>((pmfs.count + kernels::sample_threads - 1) / kernels::sample_threads);
    kernels::sample_thread_per_pmf<<<blocks, kernels::sample_threads, 0, static_cast<cudaStream_t>(stream)>>>(
        pmfs, seed, counter, out, first_stream);
    TALLY_CUDA_CHECK(cudaGetLastError());
    return;
  }
  if (max_length > 0 && max_length <= static_cast<std::size_t>(kernels::tile / 2)) {
    const auto blocks =
        static_cast<unsigned>((pmfs.count * 16 + kernels::sample_threads - 1) / kernels::sample_threads);
    kernels::sample_two_per_warp<<<blocks, kernels::sample_threads, 0, static_cast<cudaStream_t>(stream)>>>(
        pmfs, seed, counter, out, first_stream);
    TALLY_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const auto blocks = static_cast<unsigned>((pmfs.count * 32 + kernels::sample_threads - 1) / kernels::sample_threads);
  kernels::sample_warp_per_pmf<<<blocks, kernels::sample_threads, 0, static_cast<cudaStream_t>(stream)>>>(
      pmfs, seed, counter, out, first_stream);
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
    sample_batched_device(view, seed, counter, draws.data(), nullptr, 0, pmfs.max_length());
  }
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), draws.data(), out.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace tally::gpu::cuda
