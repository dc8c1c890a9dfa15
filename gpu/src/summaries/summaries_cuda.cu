// Weighted summaries on the device, for up to columns_per_launch columns under one set of log-weights in four
// launches: the reports (and bins) set up; each column's range and the largest log-weight; the three sums per block
// with a histogram of the weights by value (values within histogram_bins of each other); one block per column adding
// the blocks' sums in a fixed order, scanning its bins and finding the quantiles. One copy back for all columns; a
// column whose values are spread wider takes a radix sort of (value, weight) pairs and a scan (one more copy back).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "cuda_check.cuh"
#include "population_kernels.cuh"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
namespace {

using population_cuda::kernels::block;
using population_cuda::kernels::launched;
using population_cuda::kernels::thread_blocks;
using population_cuda::kernels::thread_index;

/// The histogram path's bins: values v_min .. v_min + histogram_bins - 1 (one block's shared histogram, 32 KB), and
/// the most blocks of the sums' pass per column (each folding many particles into shared memory and its own sums).
inline constexpr int histogram_bins = 4096;
inline constexpr int histogram_blocks = 264;
static_assert(summary_bins == histogram_bins, "the parts' bins are the kernels' bins");
/// The strides of particles a thread of the range and sums passes loads at once, and the bins a warp of the sums'
/// pass keeps to itself where the values span at most that many (histogram_bins / warps a block: the same shared
/// memory), so that the shared atomics of a block's warps never meet.
inline constexpr int range_unroll = 4;
inline constexpr int warp_bins = histogram_bins / (block / 32);
/// The columns one set of launches summarizes (their addresses are kernel parameters).
inline constexpr std::size_t columns_per_launch = 16;

/// What comes back: the sums, the first bad log-weight's index (count: none), the values' range; the quantiles follow
/// it in the same buffer (one copy back).
struct Report {
  double top, total, weighted, squares;
  unsigned long long first_bad;
  long long lo, hi;
  unsigned long long top_key;  // the maximum log-weight as an ordered integer (atomicMax); top is its double
};
/// A report's 8-byte words in the buffer (its quantiles follow them).
inline constexpr std::size_t report_words = (sizeof(Report) + 7) / 8;

/// One launch's columns: their values, and where their reports (each followed by its quantiles), bins and blocks'
/// sums go.
struct Columns {
  const std::int64_t* values[columns_per_launch];
  std::int64_t* buffer;  // column k's report at buffer + k * stride
  std::size_t stride;
  double* bins;      // column k's at bins + k * histogram_bins
  double* partials;  // column k's blocks' sums at partials + 3 * k * blocks
  __device__ Report* report(unsigned k) const { return reinterpret_cast<Report*>(buffer + k * stride); }
};

/// The launch's Columns for columns[first .. first + k): their reports at buffer + j * stride.
Columns columns_of(std::span<const Column<std::int64_t>* const> columns, std::size_t first, unsigned k,
                   std::int64_t* buffer, std::size_t stride, double* bins, double* partials) {
  Columns c{};
  for (unsigned j = 0; j < k; ++j) c.values[j] = columns[first + j]->data();
  c.buffer = buffer;
  c.stride = stride;
  c.bins = bins;
  c.partials = partials;
  return c;
}

/// A double's bits as an unsigned integer ordered as the doubles are (NaN aside: flagged as bad anyway).
__device__ inline unsigned long long ordered_key(double x) {
  const auto u = static_cast<unsigned long long>(__double_as_longlong(x));
  return (u >> 63) != 0 ? ~u : u | 0x8000000000000000ull;
}
__device__ inline double from_ordered_key(unsigned long long k) {
  const unsigned long long u = (k >> 63) != 0 ? k & 0x7fffffffffffffffull : ~k;
  return __longlong_as_double(static_cast<long long>(u));
}

/// Column blockIdx.y's report set up and its bins zeroed.
__global__ void init_kernel(Columns c, std::size_t count) {
  const long long t = thread_index();
  if (t == 0) {
    Report* r = c.report(blockIdx.y);
    r->top = r->total = r->weighted = r->squares = 0.0;  // (set by finish_kernel; zero until then: a part's words)
    r->first_bad = count;
    r->lo = LLONG_MAX;
    r->hi = LLONG_MIN;
    r->top_key = 0;  // below every double's key: -inf's key is 0x000fffffffffffff
  }
  double* bins = c.bins + static_cast<std::size_t>(blockIdx.y) * histogram_bins;
  for (long long b = t; b < histogram_bins; b += static_cast<long long>(gridDim.x) * blockDim.x) bins[b] = 0.0;
}

/// lo, hi and top folded over the warp (min, max, max).
__device__ inline void warp_fold_range(long long& lo, long long& hi, unsigned long long& top) {
  for (int d = 16; d >= 1; d /= 2) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, d));
    top = max(top, __shfl_xor_sync(0xffffffffu, top, d));
  }
}

/// Column blockIdx.y's smallest and largest value and the largest log-weight, gridDim.x blocks of it over its
/// particles (a grid-stride loop), each block folding its threads' in shared memory and making one atomic of each
/// (one a warp put 3 P / 32 atomics on three addresses: 0.30 ms of a 1.7 ms step at P = 2^22 on an H100); flags a
/// NaN or +inf log-weight.
__global__ void __launch_bounds__(block) range_kernel(Columns c, const double* l, std::size_t count) {
  __shared__ long long block_lo[block / 32], block_hi[block / 32];
  __shared__ unsigned long long block_top[block / 32];
  Report* r = c.report(blockIdx.y);
  const std::int64_t* v = c.values[blockIdx.y];
  long long lo = LLONG_MAX, hi = LLONG_MIN;
  unsigned long long top = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x, n = static_cast<long long>(count);
  auto fold = [&](long long i, long long x, double li) {
    lo = min(lo, x);
    hi = max(hi, x);
    if (isnan(li) || li == INFINITY) atomicMin(&r->first_bad, static_cast<unsigned long long>(i));
    else top = max(top, ordered_key(li));
  };
  long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  // range_unroll strides' loads issued before any is used: a grid of histogram_blocks keeps too few bytes in flight
  // for the device's bandwidth otherwise
  for (; i + (range_unroll - 1) * stride < n; i += range_unroll * stride) {
    long long x[range_unroll];
    double li[range_unroll];
    for (int u = 0; u < range_unroll; ++u) {
      x[u] = static_cast<long long>(v[i + u * stride]);
      li[u] = l[i + u * stride];
    }
    for (int u = 0; u < range_unroll; ++u) fold(i + u * stride, x[u], li[u]);
  }
  for (; i < n; i += stride) fold(i, static_cast<long long>(v[i]), l[i]);
  warp_fold_range(lo, hi, top);
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  if (lane == 0) {
    block_lo[warp] = lo;
    block_hi[warp] = hi;
    block_top[warp] = top;
  }
  __syncthreads();
  if (warp != 0) return;
  lo = lane < block / 32 ? block_lo[lane] : LLONG_MAX;
  hi = lane < block / 32 ? block_hi[lane] : LLONG_MIN;
  top = lane < block / 32 ? block_top[lane] : 0;
  warp_fold_range(lo, hi, top);
  if (lane == 0 && lo <= hi) {
    atomicMin(&r->lo, lo);
    atomicMax(&r->hi, hi);
    atomicMax(&r->top_key, top);
  }
}

/// w_i = e^{l_i - top} (1 when top = -inf; 0 for a bad log-weight, whose error is raised instead), from the report.
__device__ inline double weight_of(double l, const Report* r) {
  const double top = r->top_key == 0 ? -INFINITY : from_ordered_key(r->top_key);
  if (isnan(l) || l == INFINITY) return 0.0;
  return top == -INFINITY ? 1.0 : exp(l - top);
}

/// w_i written out (the sort path's weights).
__global__ void weights_kernel(const double* l, std::size_t count, const Report* r, double* w) {
  const long long i = thread_index();
  if (i < static_cast<long long>(count)) w[i] = weight_of(l[i], r);
}

/// Column blockIdx.y, gridDim.x blocks of it: each block's sums of w, w v and w^2 over its particles (a grid-stride
/// loop) into partials, and, where the values span at most histogram_bins integers, bins[v - lo] += w (shared memory
/// per block, then the block's nonzero bins added to the column's).
__global__ void __launch_bounds__(block) sums_kernel(Columns c, const double* l, std::size_t count) {
  const Report* r = c.report(blockIdx.y);
  const std::int64_t* v = c.values[blockIdx.y];
  const bool narrow = r->hi - r->lo < histogram_bins;
  // per warp where the values span at most warp_bins: warp j's bins at local + j * warp_bins
  const bool per_warp = r->hi - r->lo < warp_bins;
  __shared__ double local[histogram_bins];
  if (narrow) {
    for (int b = threadIdx.x; b < histogram_bins; b += blockDim.x) local[b] = 0.0;
    __syncthreads();
  }
  const long long lo = r->lo;
  double* mine = per_warp ? local + (threadIdx.x >> 5) * warp_bins : local;
  double total = 0.0, weighted = 0.0, squares = 0.0;
  auto add = [&](std::int64_t x, double li) {
    const double w = weight_of(li, r);
    total += w;
    weighted += w * static_cast<double>(x);
    squares += w * w;
    if (narrow && w > 0.0) atomicAdd(&mine[x - lo], w);
  };
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x, n = static_cast<long long>(count);
  long long i = thread_index();
  for (; i + (range_unroll - 1) * stride < n; i += range_unroll * stride) {  // loads first, as in range_kernel
    std::int64_t x[range_unroll];
    double li[range_unroll];
    for (int u = 0; u < range_unroll; ++u) {
      x[u] = v[i + u * stride];
      li[u] = l[i + u * stride];
    }
    for (int u = 0; u < range_unroll; ++u) add(x[u], li[u]);
  }
  for (; i < n; i += stride) add(v[i], l[i]);
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  double sums[3] = {total, weighted, squares};
  double* partial = c.partials + 3 * (static_cast<std::size_t>(blockIdx.y) * gridDim.x + blockIdx.x);
  for (int k = 0; k < 3; ++k) {
    const double s = Reduce(reduce_storage).Sum(sums[k]);
    if (threadIdx.x == 0) partial[k] = s;
    __syncthreads();  // reduce_storage is reused
  }
  if (!narrow) return;
  double* bins = c.bins + static_cast<std::size_t>(blockIdx.y) * histogram_bins;
  if (per_warp) {  // (the __syncthreads above, after the last sum, orders the warps' bins before these reads)
    for (int b = threadIdx.x; b < warp_bins; b += blockDim.x) {
      double sum = 0.0;
      for (int j = 0; j < block / 32; ++j) sum += local[j * warp_bins + b];
      if (sum > 0.0) atomicAdd(&bins[b], sum);
    }
    return;
  }
  for (int b = threadIdx.x; b < histogram_bins; b += blockDim.x)
    if (local[b] > 0.0) atomicAdd(&bins[b], local[b]);
}

/// The probabilities of the quantiles asked for: up to `inline_count` in the kernel's parameters (no copy to the
/// device: a step's summary asks for a few), else in device memory.
struct Probabilities {
  static constexpr std::size_t inline_count = 16;
  double inline_values[inline_count];
  const double* values;  // device memory, or null when they are inline
  std::size_t count;
  __device__ double operator[](std::size_t q) const { return values != nullptr ? values[q] : inline_values[q]; }
};

/// One block per column (blockIdx.x): the blocks' sums added in a fixed order (the same result every run) into the
/// report, top_key turned into top; then, on the histogram path, the inclusive scan (in place) of the bins the values
/// use, lo .. hi (blocks of `block` bins, each scanned by cub::BlockScan and carried into the next: a step's counts
/// use a few hundred bins, and the scan stops there), and one thread per probability finds the first bin whose
/// cumulative weight reaches p of the total (and is positive), else the last bin of positive weight.
__global__ void __launch_bounds__(block) finish_kernel(Columns c, unsigned blocks, Probabilities p) {
  const std::size_t nq = p.count;
  Report* r = c.report(blockIdx.x);
  using Reduce = cub::BlockReduce<double, block>;
  __shared__ typename Reduce::TempStorage reduce_storage;
  const double* partial = c.partials + 3 * static_cast<std::size_t>(blockIdx.x) * blocks;
  double sums[3];
  for (int k = 0; k < 3; ++k) {
    double s = 0.0;
    for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) s += partial[3 * b + k];
    sums[k] = Reduce(reduce_storage).Sum(s);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    r->total = sums[0];
    r->weighted = sums[1];
    r->squares = sums[2];
    r->top = r->top_key == 0 ? -INFINITY : from_ordered_key(r->top_key);
  }
  if (r->hi - r->lo >= histogram_bins || nq == 0) return;
  double* cum = c.bins + static_cast<std::size_t>(blockIdx.x) * histogram_bins;
  std::int64_t* out = c.buffer + blockIdx.x * c.stride + report_words;
  const int used = static_cast<int>(r->hi - r->lo) + 1;  // 1 .. histogram_bins (count >= 1)
  using Scan = cub::BlockScan<double, block>;
  __shared__ typename Scan::TempStorage scan_storage;
  double carry = 0.0;
  for (int base = 0; base < used; base += block) {
    const int b = base + static_cast<int>(threadIdx.x);
    double v = b < used ? cum[b] : 0.0, aggregate = 0.0;
    Scan(scan_storage).InclusiveSum(v, v, aggregate);
    if (b < used) cum[b] = v + carry;
    carry += aggregate;
    __syncthreads();  // scan_storage is reused by the next block of bins
  }
  const double total = cum[used - 1];
  auto first_at_least = [&](double target) {
    int lo = 0, hi = used;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (cum[mid] / total >= target && cum[mid] > 0.0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  for (std::size_t q = threadIdx.x; q < nq; q += blockDim.x) {
    int j = first_at_least(p[q]);
    if (j == used) j = first_at_least(1.0);
    out[q] = r->lo + (j < used ? j : used - 1);
  }
}

/// One thread per probability p_q: the first sorted value whose cumulative weight reaches p_q of the total (and is
/// positive), else the largest value of positive weight (the first j where the scan reaches its end).
__global__ void quantiles_kernel(const double* cum, const std::int64_t* sorted, std::size_t count, Probabilities p,
                                 std::int64_t* out) {
  const std::size_t nq = p.count;
  const long long q = thread_index();
  if (q >= static_cast<long long>(nq)) return;
  const double total = cum[count - 1];
  auto first_at_least = [&](double target) {  // the first j with cum[j] >= target and cum[j] > 0 (count: none)
    std::size_t lo = 0, hi = count;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (cum[mid] / total >= target && cum[mid] > 0.0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  std::size_t j = first_at_least(p[q]);
  if (j == count) j = first_at_least(1.0);
  out[q] = sorted[j < count ? j : count - 1];
}

}  // namespace

std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const> columns,
                                              const Column<double>& log_w, std::span<const double> probabilities,
                                              WeightSummary* weights) {
  constexpr const char* who = "tally::gpu::summarize";
  const std::size_t n = log_w.size(), nq = probabilities.size(), k_columns = columns.size();
  const auto count = static_cast<long long>(n);
  // per column: the report and the quantiles in one stretch of one buffer (8-byte aligned: Report holds 8-byte
  // fields), all copied back at once, then the resampler's totals where asked for; its bins; its blocks' sums
  const std::size_t stride = report_words + std::max<std::size_t>(nq, 1);
  const std::size_t totals_words = weights != nullptr ? (cuda::weight_report_bytes + 7) / 8 : 0;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(histogram_blocks, thread_blocks(n)));
  auto buffer = Column<std::int64_t>::allocate(Backend::cuda, stride * k_columns + totals_words, who);
  auto bins = Column<double>::allocate(Backend::cuda, histogram_bins * std::min(k_columns, columns_per_launch), who);
  auto partials = Column<double>::allocate(Backend::cuda, 3 * std::size_t{blocks} * std::min(k_columns, columns_per_launch), who);
  Probabilities p{{}, nullptr, nq};
  Column<double> p_device;  // only where they do not fit inline
  if (nq <= Probabilities::inline_count) {
    std::copy(probabilities.begin(), probabilities.end(), p.inline_values);
  } else {
    p_device = Column<double>::from_host(std::vector<double>(probabilities.begin(), probabilities.end()), Backend::cuda);
    p.values = p_device.data();
  }
  for (std::size_t first = 0; first < k_columns; first += columns_per_launch) {
    const auto k = static_cast<unsigned>(std::min(columns_per_launch, k_columns - first));
    // (a later launch's columns reuse the bins and sums in stream order)
    const Columns c =
        columns_of(columns, first, k, buffer.data() + first * stride, stride, bins.data(), partials.data());
    init_kernel<<<dim3(histogram_bins / block, k), block>>>(c, n);
    launched();
    range_kernel<<<dim3(blocks, k), block>>>(c, log_w.data(), n);
    launched();
    sums_kernel<<<dim3(blocks, k), block>>>(c, log_w.data(), n);
    launched();
    finish_kernel<<<k, block>>>(c, blocks, p);
    launched();
  }
  if (weights != nullptr) {
    auto temp = Column<unsigned char>::allocate(Backend::cuda, cuda::weight_totals_bytes(n), who);
    cuda::weight_totals(temp.data(), log_w.data(), n, buffer.data() + stride * k_columns);
  }
  std::vector<std::int64_t> host_buffer(buffer.size());
  TALLY_CUDA_CHECK(cudaMemcpy(host_buffer.data(), buffer.data(), buffer.bytes(), cudaMemcpyDeviceToHost));
  raise_checked_after_wait();  // the host waited: a deferred check of an earlier operation raises first
  std::vector<WeightedSummary> out(k_columns);
  for (std::size_t k = 0; k < k_columns; ++k) {
    Report host{};
    std::memcpy(&host, host_buffer.data() + k * stride, sizeof host);
    if (host.first_bad < n)  // (the same log-weights for every column: the first says it)
      tally::detail::fail<domain_error>(who, ": log-weight ", log_w.to_host()[host.first_bad], " of particle ",
                                        host.first_bad);
    WeightedSummary& o = out[k];
    const auto first = host_buffer.begin() + static_cast<std::ptrdiff_t>(k * stride + report_words);
    o.quantiles.assign(first, first + static_cast<std::ptrdiff_t>(nq));
    if (host.hi - host.lo >= histogram_bins && nq > 0) {
      // values too spread for the bins: a radix sort of (value, weight) pairs and a scan instead
      const std::int64_t* values = columns[k]->data();
      std::int64_t* quantiles = buffer.data() + k * stride + report_words;
      const Report* r = reinterpret_cast<const Report*>(buffer.data() + k * stride);
      auto w = Column<double>::allocate(Backend::cuda, n, who);
      weights_kernel<<<thread_blocks(n), block>>>(log_w.data(), n, r, w.data());
      launched();
      auto sorted_w = Column<double>::allocate(Backend::cuda, n, who);
      auto sorted = Column<std::int64_t>::allocate(Backend::cuda, n, who);
      std::size_t sort_bytes = 0, b = 0;
      TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, b, values, sorted.data(), w.data(), sorted_w.data(),
                                                       count));
      sort_bytes = std::max(sort_bytes, b);
      TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, b, sorted_w.data(), w.data(), count));
      sort_bytes = std::max(sort_bytes, b);
      auto sort_temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(sort_bytes, 1), who);
      TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp.data(), sort_bytes, values, sorted.data(), w.data(),
                                                       sorted_w.data(), count));
      double* cum = w.data();  // the weights are sorted into sorted_w: their storage takes the scan
      TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(sort_temp.data(), sort_bytes, sorted_w.data(), cum, count));
      quantiles_kernel<<<thread_blocks(nq), block>>>(cum, sorted.data(), n, p, quantiles);
      launched();
      TALLY_CUDA_CHECK(cudaMemcpy(o.quantiles.data(), quantiles, nq * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
    }
    o.all_impossible = host.top == -INFINITY;
    o.lo = host.lo;
    o.hi = host.hi;
    o.mean = host.weighted / host.total;
    o.ess = host.total * host.total / host.squares;
  }
  if (weights != nullptr) *weights = cuda::weight_summary_of(host_buffer.data() + stride * k_columns);
  return out;
}

namespace {
/// Part 2's population report of each column of a launch: the shards' parts 1 (gathered: G parts of `size` words,
/// column j's at the part's (first + j) summary_range_words) folded into report j (after init_kernel): the largest
/// top's key, the smallest lo, the largest hi.
__global__ void combine_ranges_kernel(Columns c, const std::int64_t* gathered, std::size_t shards, std::size_t size,
                                      std::size_t first) {
  const unsigned j = threadIdx.x;  // (one thread a column of the launch)
  Report* r = c.report(j);
  for (std::size_t q = 0; q < shards; ++q) {
    const Report* s = reinterpret_cast<const Report*>(gathered + q * size + (first + j) * summary_range_words);
    r->top_key = max(r->top_key, s->top_key);
    r->lo = min(r->lo, s->lo);
    r->hi = max(r->hi, s->hi);
  }
}
/// Column j's sums and bins (zeros where its range is wider than the bins) into its block of part 2.
__global__ void pack_sums_kernel(Columns c, double* out, std::size_t first) {
  const unsigned j = blockIdx.y;
  const Report* r = c.report(j);
  double* o = out + (first + j) * summary_sums_size;
  const bool narrow = r->hi - r->lo < histogram_bins;
  const double* bins = c.bins + static_cast<std::size_t>(j) * histogram_bins;
  for (long long b = thread_index(); b < histogram_bins; b += static_cast<long long>(gridDim.x) * blockDim.x)
    o[3 + b] = narrow ? bins[b] : 0.0;
  if (thread_index() == 0) {
    o[0] = r->total;
    o[1] = r->weighted;
    o[2] = r->squares;
  }
}
__global__ void set_word_kernel(std::int64_t* at, std::int64_t value) { *at = value; }
}  // namespace

static_assert(report_words == summary_range_words, "a column's part 1 is its report");

void summary_ranges_device(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                           std::int64_t tag, Column<std::int64_t>& out) {
  constexpr const char* who = "tally::gpu::detail::summary_ranges";
  const std::size_t n = log_w.size(), k_columns = columns.size();
  const std::size_t stride = report_words;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(histogram_blocks, thread_blocks(n)));
  auto bins = Column<double>::allocate(Backend::cuda, histogram_bins * std::min(k_columns, columns_per_launch), who);
  for (std::size_t first = 0; first < k_columns; first += columns_per_launch) {
    const auto k = static_cast<unsigned>(std::min(columns_per_launch, k_columns - first));
    const Columns c = columns_of(columns, first, k, out.data() + first * stride, stride, bins.data(), nullptr);
    init_kernel<<<dim3(1, k), block>>>(c, n);
    launched();
    if (n > 0) range_kernel<<<dim3(blocks, k), block>>>(c, log_w.data(), n);
    launched();
  }
  set_word_kernel<<<1, 1>>>(out.data() + k_columns * stride, tag);
  launched();
}

void summary_sums_device(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                         const Column<std::int64_t>& gathered, Column<double>& out) {
  constexpr const char* who = "tally::gpu::detail::summary_sums";
  const std::size_t n = log_w.size(), k_columns = columns.size();
  const std::size_t stride = report_words, size = k_columns * summary_range_words + 1;
  const std::size_t shards = gathered.size() / size;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>(histogram_blocks, thread_blocks(n)));
  const std::size_t group = std::min(k_columns, columns_per_launch);
  auto buffer = Column<std::int64_t>::allocate(Backend::cuda, std::max<std::size_t>(stride * group, 1), who);
  auto bins = Column<double>::allocate(Backend::cuda, histogram_bins * group, who);
  auto partials = Column<double>::allocate(Backend::cuda, 3 * std::size_t{std::max(blocks, 1u)} * group, who);
  for (std::size_t first = 0; first < k_columns; first += columns_per_launch) {
    const auto k = static_cast<unsigned>(std::min(columns_per_launch, k_columns - first));
    const Columns c = columns_of(columns, first, k, buffer.data(), stride, bins.data(), partials.data());
    init_kernel<<<dim3(histogram_bins / block, k), block>>>(c, n);
    launched();
    // the population's top and ranges in place of this shard's (stream-ordered after the set-up)
    combine_ranges_kernel<<<1, k>>>(c, gathered.data(), shards, size, first);
    launched();
    if (n > 0) sums_kernel<<<dim3(blocks, k), block>>>(c, log_w.data(), n);
    launched();
    finish_kernel<<<k, block>>>(c, blocks, Probabilities{{}, nullptr, 0});  // the blocks' sums in order; no quantiles
    launched();
    pack_sums_kernel<<<dim3(histogram_bins / block, k), block>>>(c, out.data(), first);
    launched();
  }
}

}  // namespace tally::gpu::detail
