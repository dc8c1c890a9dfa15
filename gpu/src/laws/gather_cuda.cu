// The CUDA forms of resampling's gathers: laws, values and columns by ancestors, several at once, and the index
// columns of a sharded resampling.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "cuda_check.cuh"
#include "length_scan.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// One warp per law: law i of the result is law index[i] of the two sources, at the scanned offsets (k < nx: x's law
/// k, else y's k - nx).
__global__ void gather_two_laws_kernel(PmfBatchView x, PmfBatchView y, std::size_t nx, const std::size_t* index,
                                       const std::int64_t* offsets, MutablePmfBatchView out) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(out.count)) return;
  const std::size_t k = index[i];
  const PmfBatchView& s = k < nx ? x : y;
  const std::size_t a = k < nx ? k : k - nx;
  const std::int64_t from = s.offset[a], m = s.offset[a + 1] - from, to = offsets[i];
  for (std::int64_t j = lane; j < m; j += 32) out.weights[to + j] = s.weights[from + j];
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = offsets[i + 1];
    out.lo[i] = s.lo[a];
    out.log_scale[i] = s.log_scale[a];
  }
}

/// lengths[i] = the length of law index[i] of the two sources (i < count), 0 at i = count (the scan's end).
__global__ void gathered_two_lengths_kernel(const std::int64_t* x_offset, const std::int64_t* y_offset, std::size_t nx,
                                            const std::size_t* index, std::size_t count, std::int64_t* lengths) {
  const long long i = thread_index();
  if (i > static_cast<long long>(count)) return;
  if (i == static_cast<long long>(count)) {
    lengths[i] = 0;
    return;
  }
  const std::size_t k = index[i];
  const std::int64_t* offset = k < nx ? x_offset : y_offset;
  const std::size_t a = k < nx ? k : k - nx;
  lengths[i] = offset[a + 1] - offset[a];
}

/// One warp per law of the result: law i is x's law a = i / times, the r = i % times-th of its copies. The copies of
/// law a follow each other where a's `times` copies start: out.offset_i = times (x.offset_a - x.offset_0) + r len_a
/// (every law before a copied `times` times, then r copies of a), so no scan of lengths is needed.
__global__ void repeated_laws_kernel(PmfBatchView x, std::size_t times, MutablePmfBatchView out) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(out.count)) return;
  const auto t = static_cast<long long>(times);
  const long long a = i / t, r = i % t;
  const std::int64_t from = x.offset[a], m = x.offset[a + 1] - from, to = t * (from - x.offset[0]) + r * m;
  for (std::int64_t j = lane; j < m; j += 32) out.weights[to + j] = x.weights[from + j];
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = to + m;
    out.lo[i] = x.lo[a];
    out.log_scale[i] = x.log_scale[a];
  }
}

}  // namespace

Laws repeated(const Laws& x, std::size_t times) {
  // room for times copies of x's room (x's laws may use less of it after a conditioning: so will the copies)
  Laws out = Laws::allocate(Backend::cuda, x.size() * times, x.total() * times, x.max_length(), "tally::gpu::repeated");
  if (out.size() > 0) repeated_laws_kernel<<<warp_blocks(out.size()), block>>>(x.view(), times, out.mutable_view());
  launched();
  return out;
}

Column<std::int64_t> gather(const Column<std::int64_t>& x, const Column<std::size_t>& ancestors) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, ancestors.size(), "tally::gpu::gather");
  const std::int64_t* xp = x.data();
  const std::size_t* ap = ancestors.data();
  std::int64_t* o = out.data();
  each(ancestors.size(), [=] __device__(long long i) { o[i] = xp[ap[i]]; });
  return out;
}

Column<std::size_t> index_ranges(std::span<const detail::IndexRange> ranges, std::size_t total) {
  // the nonempty ranges as (where it starts in out, its first index); entry i belongs to the last range starting at
  // or before i (a binary search over the few ranges)
  std::vector<std::size_t> table;
  for (std::size_t start = 0; const detail::IndexRange& r : ranges) {
    if (r.count == 0) continue;
    table.push_back(start);
    table.push_back(r.first);
    start += r.count;
  }
  auto out = Column<std::size_t>::allocate(Backend::cuda, total, "tally::gpu::detail::index_ranges");
  if (total == 0) return out;
  const auto starts = Column<std::size_t>::from_host(table, Backend::cuda);
  const std::size_t* t = starts.data();
  const auto n = static_cast<long long>(table.size() / 2);
  std::size_t* o = out.data();
  each(total, [=] __device__(long long i) {
    long long lo = 0, hi = n - 1;  // t[2 lo] <= i (t[0] = 0); find the last such range
    while (lo < hi) {
      const long long mid = (lo + hi + 1) / 2;
      if (t[2 * mid] <= static_cast<std::size_t>(i)) lo = mid;
      else hi = mid - 1;
    }
    o[i] = t[2 * lo + 1] + (static_cast<std::size_t>(i) - t[2 * lo]);
  });
  return out;
}

Column<std::size_t> shifted_slice(const Column<std::size_t>& x, std::size_t first, std::size_t count,
                                  std::size_t shift) {
  auto out = Column<std::size_t>::allocate(Backend::cuda, count, "tally::gpu::detail::shifted_slice");
  const std::size_t* xp = x.data() + first;
  std::size_t* o = out.data();
  each(count, [=] __device__(long long i) { o[i] = xp[i] - shift; });
  return out;
}

namespace {
template <class T>
Column<T> gather_two_columns(const Column<T>& x, const Column<T>& y, const Column<std::size_t>& a) {
  auto out = Column<T>::allocate(Backend::cuda, a.size(), "tally::gpu::detail::gather_two");
  const T *xp = x.data(), *yp = y.data();
  const std::size_t nx = x.size();
  const std::size_t* ap = a.data();
  T* o = out.data();
  each(a.size(), [=] __device__(long long i) {
    const std::size_t k = ap[i];
    o[i] = k < nx ? xp[k] : yp[k - nx];
  });
  return out;
}
}  // namespace

Column<std::int64_t> gather_two(const Column<std::int64_t>& x, const Column<std::int64_t>& y,
                                const Column<std::size_t>& a) {
  return gather_two_columns(x, y, a);
}
Column<double> gather_two(const Column<double>& x, const Column<double>& y, const Column<std::size_t>& a) {
  return gather_two_columns(x, y, a);
}

Laws gather_two(const Laws& x, const Laws& y, const Column<std::size_t>& a, std::size_t max_length) {
  constexpr const char* who = "tally::gpu::detail::gather_two";
  const std::size_t count = a.size();
  auto lengths = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto report = Column<LengthReport>::allocate(Backend::cuda, 1, who);
  init_report<<<1, 1>>>(report.data(), count);
  // (an empty source's views are never read: every index falls in the other)
  const std::int64_t* y_offset = y.size() > 0 ? y.view().offset : nullptr;
  gathered_two_lengths_kernel<<<thread_blocks(count + 1), block>>>(x.size() > 0 ? x.view().offset : nullptr, y_offset,
                                                                   x.size(), a.data(), count, lengths.data());
  launched();
  const LengthReport r = scan_lengths(lengths.data(), offsets.data(), count, report.data());
  Laws out = Laws::allocate(Backend::cuda, count, static_cast<std::size_t>(r.total), max_length, who);
  if (count > 0) {
    const PmfBatchView none{};
    const PmfBatchView xv = x.size() > 0 ? x.view() : none, yv = y.size() > 0 ? y.view() : none;
    gather_two_laws_kernel<<<warp_blocks(count), block>>>(xv, yv, x.size(), a.data(), offsets.data(),
                                                          out.mutable_view());
  }
  launched();
  return out;
}

Column<std::size_t> kept_first_placement(const Column<std::size_t>& x, std::size_t at, std::size_t first,
                                         std::size_t count, std::size_t lo) {
  auto out = Column<std::size_t>::allocate(Backend::cuda, count, "tally::gpu::detail::kept_first_placement");
  const std::size_t* xp = x.data() + at;
  std::size_t* o = out.data();
  const std::size_t below = lo < first ? first - lo : 0, above = std::max(first + count, lo);  // (the host's rule)
  each(count, [=] __device__(long long i) {
    const std::size_t v = xp[i];
    o[i] = v >= first && v < first + count ? v - first : v < first ? count + (v - lo) : count + below + (v - above);
  });
  return out;
}

detail::ForeignRequests foreign_requests(const Column<std::size_t>& x, std::span<const std::size_t> bounds,
                                         std::size_t me) {
  constexpr const char* who = "tally::gpu::detail::foreign_requests";
  const std::size_t count = x.size(), shards = bounds.size() - 1, first = bounds[me], last = bounds[me + 1];
  const auto n = static_cast<long long>(count);
  const std::size_t* xp = x.data();
  // flag_i = 1 where x_i is another shard's and the first of its run; its inclusive scan numbers the requests
  auto scanned = Column<std::size_t>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  std::size_t* s = scanned.data();
  each(count, [=] __device__(long long i) {
    const std::size_t v = xp[i];
    s[i] = (v < first || v >= last) && (i == 0 || xp[i - 1] != v) ? 1 : 0;
  });
  if (count > 0) {
    std::size_t bytes = 0;
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, s, s, n));
    auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, s, s, n));
  }
  // each shard's requests: the scan's rise over the run of x within its bounds (found by binary search)
  const auto bounds_column = Column<std::size_t>::from_host(std::vector<std::size_t>(bounds.begin(), bounds.end()),
                                                            Backend::cuda);
  const std::size_t* b = bounds_column.data();
  auto per_shard = Column<std::size_t>::allocate(Backend::cuda, shards, who);
  std::size_t* ps = per_shard.data();
  each(shards, [=] __device__(long long q) {
    auto before = [&](std::size_t bound) {  // the requests among the x_i < bound
      long long lo = 0, hi = n;           // the first i with x_i >= bound
      while (lo < hi) {
        const long long mid = lo + (hi - lo) / 2;
        if (xp[mid] < bound) lo = mid + 1;
        else hi = mid;
      }
      return lo > 0 ? s[lo - 1] : std::size_t{0};
    };
    ps[q] = before(b[q + 1]) - before(b[q]);
  });
  detail::ForeignRequests out{Column<std::size_t>(), Column<std::size_t>::allocate(Backend::cuda, count, who),
                              per_shard.to_host()};  // (the wait)
  std::size_t total = 0;
  for (const std::size_t k : out.per_shard) total += k;
  out.requests = Column<std::size_t>::allocate(Backend::cuda, total, who);
  std::size_t* r = out.requests.data();
  std::size_t* p = out.placement.data();
  each(count, [=] __device__(long long i) {
    const std::size_t v = xp[i];
    const bool own = v >= first && v < last;
    if (!own && (i == 0 || xp[i - 1] != v)) r[s[i] - 1] = v;
    p[i] = own ? v - first : count + s[i] - 1;
  });
  return out;
}

Column<std::int64_t> law_lengths(const Laws& x) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, x.size(), "tally::gpu::detail::law_lengths");
  const std::int64_t* offset = x.view().offset;
  std::int64_t* o = out.data();
  each(x.size(), [=] __device__(long long i) { o[i] = offset[i + 1] - offset[i]; });
  return out;
}

Laws laws_of_lengths(const Column<std::int64_t>& lengths, std::size_t total, std::size_t max_length, const char* who) {
  const std::size_t count = lengths.size();
  Laws out = Laws::allocate(Backend::cuda, count, total, max_length, who);
  std::int64_t* offset = out.mutable_view().offset;
  if (count > 0) {
    std::size_t bytes = 0;
    const auto n = static_cast<long long>(count);
    TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, lengths.data(), offset, n));
    auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
    TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, lengths.data(), offset, n));
  }
  const auto end = static_cast<std::int64_t>(total);
  each(1, [=] __device__(long long) { offset[count] = end; });
  return out;
}

Column<double> gather(const Column<double>& x, const Column<std::size_t>& ancestors) {
  auto out = Column<double>::allocate(Backend::cuda, ancestors.size(), "tally::gpu::gather");
  const double* xp = x.data();
  const std::size_t* ap = ancestors.data();
  double* o = out.data();
  each(ancestors.size(), [=] __device__(long long i) { o[i] = xp[ap[i]]; });
  return out;
}

namespace {
/// The columns of one launch of gather_columns_kernel, passed as the kernel's parameters (no table to copy over).
inline constexpr std::size_t columns_per_launch = 32;
template <class T>
struct ColumnPointers {
  const T* in[columns_per_launch];
  T* out[columns_per_launch];
};

/// out_k[i] = in_k[ancestors_i] (in_k[i] without ancestors) for k = blockIdx.y (one row of blocks per column).
template <class T>
__global__ void gather_columns_kernel(ColumnPointers<T> columns, const std::size_t* ancestors, std::size_t n) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(n)) return;
  columns.out[blockIdx.y][i] = columns.in[blockIdx.y][ancestors != nullptr ? ancestors[i] : static_cast<std::size_t>(i)];
}

/// Gathered (ancestors) or copied (null) columns of n values each, columns_per_launch to a launch.
template <class T>
std::vector<Column<T>> gather_columns(std::span<const Column<T>* const> xs, const std::size_t* ancestors,
                                      std::size_t n, const char* who) {
  std::vector<Column<T>> out;
  out.reserve(xs.size());
  for (std::size_t k = 0; k < xs.size(); ++k) out.push_back(Column<T>::allocate(Backend::cuda, n, who));
  if (n == 0) return out;
  for (std::size_t first = 0; first < xs.size(); first += columns_per_launch) {
    const std::size_t k = std::min(columns_per_launch, xs.size() - first);
    ColumnPointers<T> p{};
    for (std::size_t j = 0; j < k; ++j) {
      p.in[j] = xs[first + j]->data();
      p.out[j] = out[first + j].data();
    }
    gather_columns_kernel<T><<<dim3(thread_blocks(n), static_cast<unsigned>(k)), block>>>(p, ancestors, n);
    launched();
  }
  return out;
}

template <class T>
std::vector<Column<T>> gather_columns(std::span<const Column<T>* const> xs, const Column<std::size_t>& ancestors) {
  return gather_columns(xs, ancestors.data(), ancestors.size(), "tally::gpu::gather");
}
}  // namespace

std::vector<Column<double>> copies(std::span<const Column<double>* const> xs) {
  const std::size_t n = xs.empty() ? 0 : xs.front()->size();
  return gather_columns(xs, nullptr, n, "tally::gpu::copies");
}

std::vector<Column<std::int64_t>> gather(std::span<const Column<std::int64_t>* const> xs,
                                         const Column<std::size_t>& ancestors) {
  return gather_columns(xs, ancestors);
}
std::vector<Column<double>> gather(std::span<const Column<double>* const> xs, const Column<std::size_t>& ancestors) {
  return gather_columns(xs, ancestors);
}

Laws gather(const Laws& x, const Column<std::size_t>& ancestors) {
  return gather_two(x, Laws{}, ancestors, x.max_length());  // (the host's gather: no second source)
}

}  // namespace tally::gpu::population_cuda
