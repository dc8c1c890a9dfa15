// Subset-sum enumeration on the device: Gray-code runs per thread, equal sums merged by CUB sort and reduce-by-key.
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

#include "cuda_check.cuh"
#include "subset_walk.hpp"

namespace tally::gpu::cuda {
namespace kernels {

using detail::Compensated;
using detail::Scaled;
using detail::WalkItem;

// ---- tuning knobs -------------------------------------------------------------------------------------------------
/// A table-path tile: 256 threads, one Gray-code run of 16 subsets each (run_length), sorted together in shared memory.
constexpr int table_threads = 256;
constexpr int run_items = static_cast<int>(detail::run_length);
constexpr int tile_log2 = 12;  // 256 x 16 = 4096 subsets
static_assert(table_threads * run_items == 1 << tile_log2);
/// The sort path writes chunks of at most 2^24 subsets (keys and values: 256 MiB, twice for the sort).
constexpr int chunk_log2 = 24;
constexpr int pairs_threads = 256;

// ---- the table path -----------------------------------------------------------------------------------------------
/// The shared memory of a table-path block besides its table: the sort's space, reused for the sorted tile.
using TileSort = cub::BlockRadixSort<std::uint32_t, table_threads, run_items, double>;
union TileStorage {
  typename TileSort::TempStorage sort;
  struct {
    std::uint32_t keys[table_threads * run_items];
    double weights[table_threads * run_items];
  } sorted;
};

/// Block b walks tiles b, b + grid, ...: each thread one run of 16 subsets (Gray code), the tile sorted by total
/// (block radix sort over the bits that totals <= span need), each distinct total's weights summed by the thread
/// holding its first entry and added to the block's table. Every total is added once per tile, by one thread, in
/// tile order: no atomics, deterministic. The table (span + 1 compensated sums) goes to partial[b][...] at the end.
/// Dynamic shared memory: sizeof(TileStorage) + (span + 1) * sizeof(Compensated).
template <class W>
__global__ void __launch_bounds__(table_threads)
    enumerate_into_tables(const WalkItem<W>* items, int n, std::uint64_t tiles, std::uint32_t span, int key_bits,
                          double* partial) {
  constexpr int tile = table_threads * run_items;
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  extern __shared__ double dynamic_shared[];
  auto& tmp = *reinterpret_cast<TileStorage*>(dynamic_shared);
  auto* table = reinterpret_cast<Compensated*>(dynamic_shared + (sizeof(TileStorage) + 15) / 16 * 2);
  for (int i = threadIdx.x; i < n; i += blockDim.x) s_items[i] = items[i];
  for (std::uint32_t k = threadIdx.x; k <= span; k += blockDim.x) table[k] = Compensated{};
  __syncthreads();
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    std::uint32_t keys[run_items];
    double weights[run_items];
    int j = 0;
    const std::uint64_t first = (t << tile_log2) + static_cast<std::uint64_t>(threadIdx.x) * run_items;
    detail::walk_run(s_items, n, typename detail::Accumulator<W>::type{}, first, detail::run_length,
                     [&](W s, Scaled x) {
                       keys[j] = static_cast<std::uint32_t>(s);
                       weights[j] = detail::value(x);
                       ++j;
                     });
    TileSort(tmp.sort).Sort(keys, weights, 0, key_bits);  // blocked: thread i holds entries 16 i .. 16 i + 15
    __syncthreads();
    for (int m = 0; m < run_items; ++m) {
      tmp.sorted.keys[threadIdx.x * run_items + m] = keys[m];
      tmp.sorted.weights[threadIdx.x * run_items + m] = weights[m];
    }
    __syncthreads();
    for (int m = 0; m < run_items; ++m) {
      const int i = threadIdx.x * run_items + m;
      if (i > 0 && tmp.sorted.keys[i - 1] == keys[m]) continue;  // not the first entry of its total
      Compensated sum;
      for (int r = i; r < tile && tmp.sorted.keys[r] == keys[m]; ++r) sum.add(tmp.sorted.weights[r]);
      table[keys[m]].add(sum.value());
    }
    __syncthreads();
  }
  for (std::uint32_t k = threadIdx.x; k <= span; k += blockDim.x)
    partial[static_cast<std::size_t>(blockIdx.x) * (span + 1) + k] = table[k].value();
}

/// out[k] = sum over blocks b (in order) of partial[b][k]: one thread per total.
__global__ void add_tables(const double* partial, int blocks, std::uint32_t span, double* out) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k > span) return;
  Compensated sum;
  for (int b = 0; b < blocks; ++b) sum.add(partial[static_cast<std::size_t>(b) * (span + 1) + k]);
  out[k] = sum.value();
}

// ---- the sort path ------------------------------------------------------------------------------------------------
/// Subsets [first, first + count) of the walk, one Gray-code run per thread: their sort keys and weights.
template <class W>
__global__ void enumerate_pairs(const WalkItem<W>* items, int n, typename detail::Accumulator<W>::type start,
                                std::uint64_t first, std::uint64_t count, std::uint64_t* keys, double* weights) {
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s_items[i] = items[i];
  __syncthreads();
  const std::uint64_t offset = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * run_items;
  if (offset >= count) return;
  const auto length = static_cast<std::uint32_t>(count - offset < run_items ? count - offset : run_items);
  std::uint64_t* k = keys + offset;
  double* v = weights + offset;
  if (length == detail::run_length) {  // every run but those of walks with n < 4
    detail::walk_run(s_items, n, start, first + offset, detail::run_length, [&](W s, Scaled x) {
      *k++ = detail::sort_key(s);
      *v++ = detail::value(x);
    });
  } else {
    detail::walk_run(s_items, n, start, first + offset, length, [&](W s, Scaled x) {
      *k++ = detail::sort_key(s);
      *v++ = detail::value(x);
    });
  }
}

/// The seed-000 baseline: one thread per subset, its mask's n bits looped over (the same products, from scratch).
template <class W>
__global__ void per_mask_pairs(const WalkItem<W>* items, int n, typename detail::Accumulator<W>::type start,
                               std::uint64_t first, std::uint64_t count, std::uint64_t* keys, double* weights) {
  __shared__ WalkItem<W> s_items[max_enumerated_weights];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s_items[i] = items[i];
  __syncthreads();
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const auto v = detail::from_scratch(s_items, n, first + i, start);
  keys[i] = detail::sort_key(detail::total(v.sum));
  weights[i] = detail::value(v.weight);
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;

int multiprocessors() {
  int device = 0, count = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

/// Throws overflow_error when `bytes` exceed the device's free memory.
void require_memory(double bytes, const char* who, const char* what) {
  std::size_t free = 0, total = 0;
  TALLY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (bytes > 0.9 * static_cast<double>(free))
    detail::fail<overflow_error>(who, ": ", what, " needs ", bytes, " bytes of device memory; ", free,
                                 " bytes are free");
}

template <class W>
DeviceBuffer<detail::WalkItem<W>> upload_items(const detail::Walk<W>& walk) {
  DeviceBuffer<detail::WalkItem<W>> items(std::max(walk.n(), 1));
  if (walk.n() > 0)
    TALLY_CUDA_CHECK(cudaMemcpy(items.data(), walk.items.data(), walk.items.size() * sizeof(walk.items[0]),
                                cudaMemcpyHostToDevice));
  return items;
}

SubsetSumLaw<std::int64_t> table_path(const detail::Walk<std::int64_t>& walk, const char* who) {
  const auto span = static_cast<std::uint32_t>(walk.span);
  const std::uint64_t tiles = walk.subsets() >> kernels::tile_log2;
  const std::size_t table_bytes =
      (sizeof(kernels::TileStorage) + 15) / 16 * 16 + (span + 1) * sizeof(detail::Compensated);
  auto kernel = kernels::enumerate_into_tables<std::int64_t>;
  TALLY_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(table_bytes)));
  int per_sm = 0;
  TALLY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kernels::table_threads, table_bytes));
  const int blocks = static_cast<int>(std::min<std::uint64_t>(tiles, std::uint64_t(std::max(per_sm, 1)) * multiprocessors()));
  require_memory(double(blocks + 1) * (span + 1) * 8.0, who, "the table path");
  auto items = upload_items(walk);
  DeviceBuffer<double> partial(static_cast<std::size_t>(blocks) * (span + 1)), table(span + 1);
  const int key_bits = std::max(1, static_cast<int>(std::bit_width(span)));
  kernel<<<blocks, kernels::table_threads, table_bytes>>>(items.data(), walk.n(), tiles, span, key_bits,
                                                           partial.data());
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
  require_memory(32.0 * double(chunk) + 32.0 * merged + 16.0 * std::max(double(chunk), merged), who,
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
