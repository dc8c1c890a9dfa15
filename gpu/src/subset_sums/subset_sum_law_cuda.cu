// Subset-sum enumeration on the device: Gray-code runs per thread, equal sums merged by CUB sort and reduce-by-key.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "convolve_tensor.cuh"
#include "cuda_check.cuh"
#include "subset_walk.hpp"

namespace tally::gpu::cuda {
namespace kernels {

using detail::Compensated;
using detail::Scaled;
using detail::WalkItem;

// ---- tuning knobs -------------------------------------------------------------------------------------------------
/// The table path: a warp's step covers 2^9 subsets. Its 32 lanes hold the 32 subsets of the lane items (walk items
/// 4..8), and each lane walks the 16 subsets of the run items (0..3) in Gray-code order; the remaining items are
/// fixed per tile (tile t: gray(t) on items 9..). All lanes toggle the same run item at each step, so two lanes'
/// totals coincide exactly when their lane items' sums do: a fixed pattern, known before the launch.
constexpr int run_items = static_cast<int>(detail::run_length);
constexpr int lane_items = 5;
constexpr int tile_log2 = detail::run_log2 + lane_items;  // 512 subsets
/// The sort path writes chunks of at most 2^24 subsets (keys and values: 256 MiB, twice for the sort).
constexpr int chunk_log2 = 24;
constexpr int pairs_threads = 256;

/// The walk's items into shared memory (every thread of the block calls it; it synchronizes the block).
template <class W>
__device__ inline void load_items(const WalkItem<W>* items, int n, WalkItem<W>* s_items) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) s_items[i] = items[i];
  __syncthreads();
}

// ---- the table path -----------------------------------------------------------------------------------------------
/// Lanes whose lane items sum alike: member[l][0 .. size) lists, for a group's first lane l, the lanes of its group
/// in order (l first); -1 elsewhere (and for every other lane, whose total the first lane adds).
struct LaneGroups {
  int size;
  std::int8_t member[32][32];
};

/// A warp's table holds plain doubles (8 bytes a total, so twice as many warps fit in shared memory as with
/// compensated sums); every flush_tiles tiles (at most 16 * 64 = 1024 adds to a total) it is added into the warp's
/// compensated partial table in global memory and cleared. So each total carries at most 1024 roundings of plain
/// sums before compensation.
constexpr int flush_tiles = 64;

/// One warp per block; warp b walks tiles b, b + grid, ...: at each of a tile's 16 steps every lane has one subset,
/// the group's first lane sums its group's weights (in lane order, by shuffles; nothing when every group is one
/// lane) and adds them to the warp's own table (span + 1 entries, dynamic shared memory). The lanes that write hold
/// distinct totals, and no other warp writes the table: no atomics, deterministic. The table is flushed into
/// partial[b][...] (compensated sums, written by this warp only) every flush_tiles tiles and at the end.
template <class W>
__global__ void __launch_bounds__(32)
    enumerate_into_tables(const WalkItem<W>* items, int n, std::uint64_t tiles, std::uint32_t span,
                          const LaneGroups* groups, Compensated* partial) {
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  __shared__ std::int8_t s_member[32][32];
  extern __shared__ double table[];  // span + 1 entries
  Compensated* const mine = partial + static_cast<std::size_t>(blockIdx.x) * (span + 1);
  const int lane = static_cast<int>(threadIdx.x);
  load_items(items, n, s_items);
  for (int k = 0; k < 32; ++k) s_member[lane][k] = groups->member[lane][k];
  for (std::uint32_t k = lane; k <= span; k += 32) {
    table[k] = 0.0;
    mine[k] = Compensated{};
  }
  const int group_size = groups->size;
  const bool first_of_group = groups->member[lane][0] == lane;
  auto flush = [&] {
    __syncwarp();
    for (std::uint32_t k = lane; k <= span; k += 32) {
      mine[k].add(table[k]);
      table[k] = 0.0;
    }
    __syncwarp();
  };
  __syncwarp();
  int unflushed = 0;
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::uint64_t mask = (detail::gray(t) << tile_log2) | (static_cast<std::uint64_t>(lane) << detail::run_log2);
    auto v = detail::from_scratch(s_items, n, mask, typename detail::Accumulator<W>::type{});
#pragma unroll
    for (int j = 0; j < run_items; ++j) {
      if (j > 0) {  // Gray code of the run: item ctz(j) changes, and is in the subset after the step when gray(j) says
        const int b = detail::ctz(j);
        const bool on = (detail::gray(j) >> b) & 1u;
        detail::step(v.sum, s_items[b].w, on);
        v.weight = detail::times(v.weight, on ? s_items[b].on : s_items[b].off);
      }
      const double x = detail::value(v.weight);
      double total = x;
      if (group_size > 1) {
        total = 0.0;
        for (int k = 0; k < group_size; ++k) {
          const int from = s_member[lane][k];
          const double y = __shfl_sync(0xffffffffu, x, from < 0 ? lane : from);
          if (from >= 0) total += y;
        }
      }
      if (first_of_group) table[static_cast<std::uint32_t>(v.sum)] += total;
      __syncwarp();  // this step's updates (distinct totals) before the next step's, which may hit the same ones
    }
    if (++unflushed == flush_tiles) {  // the same count in every lane: the warp flushes together
      flush();
      unflushed = 0;
    }
  }
  flush();
}

/// out[k] = sum over blocks b (in order) of partial[b][k]: one thread per total.
__global__ void add_tables(const Compensated* partial, int blocks, std::uint32_t span, double* out) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > span) return;
  Compensated sum;
  for (int b = 0; b < blocks; ++b) sum.add(partial[static_cast<std::size_t>(b) * (span + 1) + k].value());
  out[k] = sum.value();
}

// ---- the sort path ------------------------------------------------------------------------------------------------
/// Subsets [first, first + count) of the walk, one Gray-code run per thread: their sort keys and weights. A
/// thread's j-th subset goes to position j * runs + run (the order does not matter before the sort), so that each
/// store of a warp is coalesced.
template <class W>
__global__ void enumerate_pairs(const WalkItem<W>* items, int n, typename detail::Accumulator<W>::type start,
                                std::uint64_t first, std::uint64_t count, std::uint64_t* keys, double* weights) {
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  load_items(items, n, s_items);
  const std::uint64_t run = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::uint64_t offset = run * run_items;
  if (offset >= count) return;
  if (count >= detail::run_length) {  // every walk but those with n < 4: count is a multiple of 16
    const std::uint64_t runs = count / run_items;
    std::uint64_t at = run;
    detail::walk_run(s_items, n, start, first + offset, detail::run_length, [&](W s, Scaled x) {
      keys[at] = detail::sort_key(s);
      weights[at] = detail::value(x);
      at += runs;
    });
  } else {
    std::uint64_t at = 0;
    detail::walk_run(s_items, n, start, first, static_cast<std::uint32_t>(count), [&](W s, Scaled x) {
      keys[at] = detail::sort_key(s);
      weights[at] = detail::value(x);
      ++at;
    });
  }
}

/// The seed-000 baseline: one thread per subset, its mask's n bits looped over (the same products, from scratch).
template <class W>
__global__ void per_mask_pairs(const WalkItem<W>* items, int n, typename detail::Accumulator<W>::type start,
                               std::uint64_t first, std::uint64_t count, std::uint64_t* keys, double* weights) {
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  load_items(items, n, s_items);
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const auto v = detail::from_scratch(s_items, n, first + i, start);
  keys[i] = detail::sort_key(detail::total(v.sum));
  weights[i] = detail::value(v.weight);
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;

using kernels::multiprocessors;

template <class W>
DeviceBuffer<detail::WalkItem<W>> upload_items(const detail::Walk<W>& walk) {
  DeviceBuffer<detail::WalkItem<W>> items(std::max(walk.n(), 1));
  if (walk.n() > 0)
    TALLY_CUDA_CHECK(cudaMemcpy(items.data(), walk.items.data(), walk.items.size() * sizeof(walk.items[0]),
                                cudaMemcpyHostToDevice));
  return items;
}

/// The walk with its items reordered for the table path: the 5 lane items chosen so that as few of their 32 subset
/// sums coincide as possible (the largest group of equal sums costs one shuffle per subset), then the run items.
struct TableWalk {
  detail::Walk<std::int64_t> walk;
  kernels::LaneGroups groups{};
};
TableWalk arrange_for_table(const detail::Walk<std::int64_t>& walk) {
  const int n = walk.n();
  std::vector<int> best_lane;
  int best_size = 33;
  std::uint64_t state = 0x5eed;  // a fixed sequence of candidate 5-sets: the same arrangement every run
  for (int attempt = 0; attempt < 256 && best_size > 1; ++attempt) {
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    for (int i = 0; i < kernels::lane_items; ++i) {  // partial Fisher-Yates with splitmix64
      state = detail::mix64(state + 0x9e3779b97f4a7c15ull);
      std::swap(order[i], order[i + static_cast<int>(state % static_cast<std::uint64_t>(n - i))]);
    }
    std::vector<int> lane(order.begin(), order.begin() + kernels::lane_items);
    std::vector<std::int64_t> sums(32, 0);
    for (int l = 0; l < 32; ++l)
      for (int b = 0; b < kernels::lane_items; ++b)
        if ((l >> b) & 1) sums[l] += walk.items[lane[b]].w;
    int size = 0;
    for (int l = 0; l < 32; ++l) size = std::max<int>(size, static_cast<int>(std::count(sums.begin(), sums.end(), sums[l])));
    if (size < best_size) {
      best_size = size;
      best_lane = lane;
    }
  }
  TableWalk out{walk, {}};
  std::vector<int> rest;
  for (int i = 0; i < n; ++i)
    if (std::find(best_lane.begin(), best_lane.end(), i) == best_lane.end()) rest.push_back(i);
  // items 0..3: the run; 4..8: the lanes; then the tile items
  std::vector<int> order(rest.begin(), rest.begin() + detail::run_log2);
  order.insert(order.end(), best_lane.begin(), best_lane.end());
  order.insert(order.end(), rest.begin() + detail::run_log2, rest.end());
  for (int i = 0; i < n; ++i) out.walk.items[i] = walk.items[order[i]];
  std::vector<std::int64_t> sums(32, 0);
  for (int l = 0; l < 32; ++l)
    for (int b = 0; b < kernels::lane_items; ++b)
      if ((l >> b) & 1) sums[l] += out.walk.items[detail::run_log2 + b].w;
  out.groups.size = best_size;
  for (int l = 0; l < 32; ++l) {
    for (int k = 0; k < 32; ++k) out.groups.member[l][k] = -1;
    const bool first = std::find(sums.begin(), sums.end(), sums[l]) - sums.begin() == l;
    if (!first) continue;
    int k = 0;
    for (int m = l; m < 32; ++m)
      if (sums[m] == sums[l]) out.groups.member[l][k++] = static_cast<std::int8_t>(m);
  }
  return out;
}

SubsetSumLaw<std::int64_t> table_path(const detail::Walk<std::int64_t>& input, const char* who) {
  const TableWalk arranged = arrange_for_table(input);
  const auto& walk = arranged.walk;
  const auto span = static_cast<std::uint32_t>(walk.span);
  const std::uint64_t tiles = walk.subsets() >> kernels::tile_log2;
  const std::size_t table_bytes = (span + 1) * sizeof(double);
  auto kernel = kernels::enumerate_into_tables<std::int64_t>;
  TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(table_bytes)));
  int per_sm = 0;
  TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 32, table_bytes));
  // as many warps as fit, but at least flush_tiles tiles each where there are enough: a warp's table costs an
  // initialization, flushes and a final add of span + 1 entries
  const std::uint64_t resident = std::uint64_t(std::max(per_sm, 1)) * multiprocessors();
  const int blocks = static_cast<int>(
      std::min(resident, std::max<std::uint64_t>(std::min<std::uint64_t>(tiles, multiprocessors()),
                                                 tiles / kernels::flush_tiles)));
  detail::require_device_memory(double(blocks + 1) * (span + 1) * 16.0, who, "the table path");
  auto items = upload_items(walk);
  DeviceBuffer<kernels::LaneGroups> groups(1);
  TALLY_CUDA_CHECK(cudaMemcpy(groups.data(), &arranged.groups, sizeof arranged.groups, cudaMemcpyHostToDevice));
  DeviceBuffer<detail::Compensated> partial(static_cast<std::size_t>(blocks) * (span + 1));
  DeviceBuffer<double> table(span + 1);
  kernel<<<blocks, 32, table_bytes>>>(items.data(), walk.n(), tiles, span, groups.data(), partial.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  kernels::add_tables<<<(span + 256) / 256, 256>>>(partial.data(), blocks, span, table.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
  std::vector<double> weights(span + 1);
  TALLY_CUDA_CHECK(cudaMemcpy(weights.data(), table.data(), weights.size() * 8, cudaMemcpyDeviceToHost));
  std::vector<std::uint64_t> keys(span + 1);
  for (std::uint32_t k = 0; k <= span; ++k) keys[k] = k;
  return detail::finish_walk(walk, keys, weights);  // drops the totals of weight 0
}

/// Sorts `count` (key, weight) pairs by key and sums the weights of equal keys into (out_keys, out_weights);
/// returns the number of distinct keys. `temp` is grown as needed.
std::size_t sort_and_reduce(DeviceBuffer<std::uint64_t>& keys, DeviceBuffer<double>& weights,
                            DeviceBuffer<std::uint64_t>& sorted_keys, DeviceBuffer<double>& sorted_weights,
                            std::uint64_t count, int key_bits, std::uint64_t* out_keys, double* out_weights,
                            std::unique_ptr<DeviceBuffer<char>>& temp, DeviceBuffer<std::int64_t>& runs) {
  std::size_t sort_bytes = 0, reduce_bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), sorted_keys.data(),
                                                   weights.data(), sorted_weights.data(), count, 0, key_bits));
  TALLY_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(nullptr, reduce_bytes, sorted_keys.data(), out_keys,
                                                  sorted_weights.data(), out_weights, runs.data(), ::cuda::std::plus<>{},
                                                  count));
  const std::size_t bytes = std::max(sort_bytes, reduce_bytes);
  if (!temp || temp->size() < bytes) temp = std::make_unique<DeviceBuffer<char>>(bytes);
  TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp->data(), sort_bytes, keys.data(), sorted_keys.data(),
                                                   weights.data(), sorted_weights.data(), count, 0, key_bits));
  TALLY_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(temp->data(), reduce_bytes, sorted_keys.data(), out_keys,
                                                  sorted_weights.data(), out_weights, runs.data(), ::cuda::std::plus<>{},
                                                  count));
  std::int64_t distinct = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&distinct, runs.data(), sizeof distinct, cudaMemcpyDeviceToHost));
  return static_cast<std::size_t>(distinct);
}

template <class W>
SubsetSumLaw<W> sort_path(const detail::Walk<W>& walk, bool per_mask, const char* who) {
  const int n = walk.n();
  const int chunk_log2 = std::min(n, kernels::chunk_log2);
  const std::uint64_t chunk = std::uint64_t{1} << chunk_log2, chunks = std::uint64_t{1} << (n - chunk_log2);
  // distinct totals: at most 2^n, and at most span + 1 for integers; each chunk yields at most min(chunk, that)
  double distinct = std::ldexp(1.0, n);
  if constexpr (std::is_integral_v<W>) distinct = std::min(distinct, double(walk.span) + 1.0);
  const double merged = double(chunks) * std::min(double(chunk), distinct);
  // chunk pairs and their sorted copies, the chunks' distinct sums and their sorted copies, sort space (~ a copy)
  detail::require_device_memory(32.0 * double(chunk) + 32.0 * merged + 16.0 * std::max(double(chunk), merged), who,
                 "merging the subset sums by sorting");
  const int key_bits = std::is_integral_v<W> ? std::max(1, static_cast<int>(std::bit_width(std::uint64_t(walk.span)))) : 63;
  auto items = upload_items(walk);
  DeviceBuffer<std::uint64_t> keys(chunk), sorted_keys(chunk);
  DeviceBuffer<double> weights(chunk), sorted_weights(chunk);
  DeviceBuffer<std::uint64_t> acc_keys(static_cast<std::size_t>(merged));
  DeviceBuffer<double> acc_weights(static_cast<std::size_t>(merged));
  DeviceBuffer<std::int64_t> runs(1);
  std::unique_ptr<DeviceBuffer<char>> temp;
  std::size_t filled = 0;
  for (std::uint64_t c = 0; c < chunks; ++c) {
    const std::uint64_t first = c << chunk_log2;
    if (per_mask) {
      const auto blocks = static_cast<unsigned>((chunk + kernels::pairs_threads - 1) / kernels::pairs_threads);
      kernels::per_mask_pairs<<<blocks, kernels::pairs_threads>>>(items.data(), n, walk.start, first, chunk,
                                                                  keys.data(), weights.data());
    } else {
      const std::uint64_t threads = (chunk + kernels::run_items - 1) / kernels::run_items;
      const auto blocks = static_cast<unsigned>((threads + kernels::pairs_threads - 1) / kernels::pairs_threads);
      kernels::enumerate_pairs<<<blocks, kernels::pairs_threads>>>(items.data(), n, walk.start, first, chunk,
                                                                   keys.data(), weights.data());
    }
    TALLY_CUDA_CHECK(cudaGetLastError());
    filled += sort_and_reduce(keys, weights, sorted_keys, sorted_weights, chunk, key_bits, acc_keys.data() + filled,
                              acc_weights.data() + filled, temp, runs);
  }
  std::vector<std::uint64_t> host_keys;
  std::vector<double> host_weights;
  if (chunks == 1) {
    host_keys.resize(filled);
    host_weights.resize(filled);
    TALLY_CUDA_CHECK(cudaMemcpy(host_keys.data(), acc_keys.data(), filled * 8, cudaMemcpyDeviceToHost));
    TALLY_CUDA_CHECK(cudaMemcpy(host_weights.data(), acc_weights.data(), filled * 8, cudaMemcpyDeviceToHost));
    return detail::finish_walk(walk, host_keys, host_weights);
  }
  // the chunks' distinct sums, merged the same way
  DeviceBuffer<std::uint64_t> all_keys(filled), out_keys(filled);
  DeviceBuffer<double> all_weights(filled), out_weights(filled);
  const std::size_t distinct_total =
      sort_and_reduce(acc_keys, acc_weights, all_keys, all_weights, filled, key_bits, out_keys.data(),
                      out_weights.data(), temp, runs);
  host_keys.resize(distinct_total);
  host_weights.resize(distinct_total);
  TALLY_CUDA_CHECK(cudaMemcpy(host_keys.data(), out_keys.data(), distinct_total * 8, cudaMemcpyDeviceToHost));
  TALLY_CUDA_CHECK(cudaMemcpy(host_weights.data(), out_weights.data(), distinct_total * 8, cudaMemcpyDeviceToHost));
  return detail::finish_walk(walk, host_keys, host_weights);
}

template <class W>
SubsetSumLaw<W> law(std::span<const W> w, std::span<const double> p, SubsetMerge merge) {
  const char* who = "tally::gpu::cuda::subset_sum_law";
  const auto walk = detail::prepare_walk(w, p, who);
  detail::require_device(who);
  bool table_applies = false;
  if constexpr (std::is_integral_v<W>) table_applies = walk.span <= max_table_span && walk.n() >= kernels::tile_log2;
  if (merge == SubsetMerge::table && !table_applies)
    detail::fail<shape_error>(who, ": the table merge needs integer weights with a total <= ", max_table_span,
                              " and at least ", kernels::tile_log2, " weights with 0 < p < 1");
  if (walk.n() == 0) {
    const std::uint64_t key = detail::sort_key(detail::total(walk.start));
    const double one = 1.0;
    return detail::finish_walk(walk, std::span<const std::uint64_t>(&key, 1), std::span<const double>(&one, 1));
  }
  if constexpr (std::is_integral_v<W>) {
    if (table_applies && (merge == SubsetMerge::automatic || merge == SubsetMerge::table)) return table_path(walk, who);
  }
  return sort_path(walk, merge == SubsetMerge::per_mask, who);
}

}  // namespace

SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p,
                                          SubsetMerge merge) {
  return law(w, p, merge);
}
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p, SubsetMerge merge) {
  return law(w, p, merge);
}

}  // namespace tally::gpu::cuda
