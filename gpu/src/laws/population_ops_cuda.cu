// The CUDA forms of the population operations: one warp per law, one thread per particle, CUB for the scans.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "length_scan.cuh"
#include "population_kernels.cuh"
#include "binomial_math.hpp"
#include "population_math.hpp"
#include "population_reference.hpp"
#include "resample_check.hpp"
#include "tally/gpu/convolve_batched.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

template <class T>
void check_same(const Column<T>& c, std::size_t count, const char* who) {
  if (c.size() != count) tally::detail::fail<shape_error>(who, ": ", c.size(), " values for ", count, " particles");
}

// ---- laws from parameters: lengths, their scan and total (read back), then the weights -----------------------

/// A law's length and its number of chunks, scanned together (one scan gives the offsets of both).
struct LengthChunks {
  std::int64_t length, chunks;
};
struct AddLengthChunks {
  __host__ __device__ LengthChunks operator()(const LengthChunks& a, const LengthChunks& b) const {
    return {a.length + b.length, a.chunks + b.chunks};
  }
};

/// One thread per law (and one for i = count, whose lengths 0 end the scan with the totals): sizes[i] = (n_i + 1,
/// its law_chunk chunks), the law's constant and its maximum log mass top_i (population_math.hpp's terms); bad
/// parameters (and, where the caller gave a bound, an n_i above it) flagged in r->first_bad, or in `flag` where the
/// check is deferred (then the lengths are not read back and r is not written).
template <class Family>
__global__ void prepare_kernel(const std::int64_t* n, std::size_t count, Family family, LengthChunks* sizes,
                               double* constant, double* top, LengthReport* r, std::int64_t n_max,
                               unsigned long long* flag) {
  const long long i = thread_index();
  unsigned long long length = 0;
  if (i == static_cast<long long>(count)) {
    sizes[i] = {0, 0};
  } else if (i < static_cast<long long>(count)) {
    const std::int64_t ni = n[i];
    if (ni < 0 || ni >= (std::int64_t{1} << 32) || ni > n_max || family.bad(i)) {
      atomicMin(flag != nullptr ? flag : &r->first_bad, static_cast<unsigned long long>(i));
      sizes[i] = {1, 1};
      constant[i] = top[i] = 0.0;
    } else {
      sizes[i] = {ni + 1, ni / detail::law_chunk + 1};
      length = static_cast<unsigned long long>(ni + 1);
      const double c = family.constant(i);
      constant[i] = c;
      top[i] = family.terms(i, c).top();
    }
  }
  if (flag == nullptr) warp_fold_max(length, &r->longest);
}

__global__ void totals_kernel(const LengthChunks* offsets, std::size_t count, LengthReport* r) {
  r->total = offsets[count].length;
  r->chunks = offsets[count].chunks;
}

inline constexpr int fill_warps = block / 32;

/// One thread per law, the warp's 32 laws in turn: law_of[c] = i for the chunks c of law i (coalesced).
__global__ void chunk_law_kernel(const LengthChunks* offsets, std::size_t count, std::uint32_t* law_of) {
  const long long i = thread_index(), first = i - (threadIdx.x & 31);
  const int lane = static_cast<int>(threadIdx.x & 31);
  const bool mine = i < static_cast<long long>(count);
  const std::int64_t from = mine ? offsets[i].chunks : 0, to = mine ? offsets[i + 1].chunks : 0;
  for (int j = 0; j < 32; ++j) {
    const std::int64_t s = __shfl_sync(full_warp, from, j), e = __shfl_sync(full_warp, to, j);
    for (std::int64_t c = s + lane; c < e; c += 32) law_of[c] = static_cast<std::uint32_t>(first + j);
  }
}

/// One thread per chunk c (law_of[c]'s weights (c - chunk_offset_i) law_chunk .. + law_chunk - 1, or fewer at
/// the law's end), one warp per 32 consecutive chunks, which cover a contiguous range of the flat weights: each
/// thread walks its chunk (walk_law) into shared memory, then the warp writes its range out together (coalesced).
/// The thread that holds a law's first weight writes the law's offset, lo and log_scale.
template <class Family>
__global__ void __launch_bounds__(block) walk_fill_kernel(const LengthChunks* offsets, const std::uint32_t* law_of,
                                                          std::size_t count, Family family, const double* constant,
                                                          const double* top, MutablePmfBatchView out) {
  __shared__ double tile[fill_warps][32 * (chunk + 1)];
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const long long first = (static_cast<long long>(blockIdx.x) * fill_warps + warp) * 32, c = first + lane;
  const std::int64_t chunks = offsets[count].chunks;  // the scan's total (the grid may be sized by a bound above it)
  if (first >= chunks) return;  // the whole warp
  const int valid = chunks - first < 32 ? static_cast<int>(chunks - first) : 32;
  double* buf = tile[warp];
  std::int64_t at = 0, end = 0;  // this chunk's flat range
  std::uint32_t i = 0;
  std::int64_t k0 = 0;
  if (lane < valid) {
    i = law_of[c];
    const std::int64_t start = offsets[i].length, m = offsets[i + 1].length - start;
    k0 = (c - offsets[i].chunks) * chunk;
    at = start + k0;
    end = at + (m - k0 < chunk ? m - k0 : chunk);
  }
  const std::int64_t base = __shfl_sync(full_warp, at, 0), stop = __shfl_sync(full_warp, end, valid - 1);
  if (lane < valid) {
    const double t = top[i];
    const auto terms = family.terms(i, constant[i]);
    const int offset = static_cast<int>(at - base);
    detail::walk_law(terms, t, k0, static_cast<int>(end - at), [&](int j, double w) {
      const int p = offset + j;
      buf[p + p / chunk] = w;
    });
    if (k0 == 0) {
      if (i == 0) out.offset[0] = 0;
      out.offset[i + 1] = offsets[i + 1].length;
      out.lo[i] = 0;
      out.log_scale[i] = t;
    }
  }
  __syncwarp();
  const int span = static_cast<int>(stop - base);
  for (int p = lane; p < span; p += 32) out.weights[base + p] = buf[p + p / chunk];
}

struct BinomialFamily {
  const std::int64_t* n;
  const double* q;
  __device__ bool bad(long long i) const { return !(q[i] >= 0.0 && q[i] <= 1.0); }
  __device__ double constant(long long) const { return 0.0; }
  __device__ detail::BinomialTerms terms(long long i, double) const { return detail::BinomialTerms(n[i], q[i]); }
};
struct BetaBinomialFamily {
  const std::int64_t* n;
  const double *a, *b;
  __device__ bool bad(long long i) const {
    return !(a[i] > 0.0 && b[i] > 0.0 && isfinite(a[i]) && isfinite(b[i]));
  }
  __device__ double constant(long long i) const { return detail::BetaBinomialTerms::constant(n[i], a[i], b[i]); }
  __device__ detail::BetaBinomialTerms terms(long long i, double c) const {
    return detail::BetaBinomialTerms(n[i], a[i], b[i], c);
  }
};

/// The domain_error of particle i's parameters (n_i read back by the caller).
[[noreturn]] void fail_parameters(const char* who, const char* law, std::size_t i, std::int64_t ni,
                                  std::optional<std::int64_t> n_max) {
  tally::detail::fail<domain_error>(
      who, ": particle ", i, " asks for ", law, " with n = ", ni,
      ni < 0                                ? " (n must be >= 0)"
      : ni >= (std::int64_t{1} << 32)       ? " (too large for a dense law)"
      : n_max && ni > *n_max                ? " (above the bound n_max its caller gave)"
                                            : " and parameters outside their domain");
}

/// Laws of lengths n_i + 1. Without n_max: the lengths' scan and total are read back (one synchronization), and
/// the room is exact. With n_max (a bound on every n_i known to the caller): room for count (n_max + 1) weights,
/// nothing read back, and bad parameters raised as a deferred check (FirstBad): the kernels after the scan read its
/// totals on the device, so the grids are sized by the bound and their blocks past the totals return at once.
template <class Family>
Laws laws_from_parameters(const Column<std::int64_t>& n, Family family, const char* who, const char* law,
                          std::optional<std::int64_t> n_max) {
  const std::size_t count = n.size();
  if (count >= (std::size_t{1} << 32))
    tally::detail::fail<shape_error>(who, ": ", count, " particles (at most 2^32 - 1 on the device)");
  if (n_max && (*n_max < 0 || *n_max >= (std::int64_t{1} << 32))) n_max.reset();  // no use as room: read back
  // (length, chunks) pairs as two int64 words each
  auto sizes = Column<std::int64_t>::allocate(Backend::cuda, 2 * (count + 1), who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, 2 * (count + 1), who);
  auto* size_pairs = reinterpret_cast<LengthChunks*>(sizes.data());
  auto* offset_pairs = reinterpret_cast<LengthChunks*>(offsets.data());
  auto constant = Column<double>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  auto top = Column<double>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  auto report = Column<LengthReport>::allocate(Backend::cuda, 1, who);
  std::optional<detail::FirstBad> bad;
  if (n_max) bad.emplace(count);
  else init_report<<<1, 1>>>(report.data(), count);
  prepare_kernel<<<thread_blocks(count + 1), block>>>(n.data(), count, family, size_pairs, constant.data(), top.data(),
                                                      report.data(), n_max.value_or(INT64_MAX),
                                                      bad ? bad->data() : nullptr);
  launched();
  // one exclusive scan of the pairs (count + 1 entries: the last is the totals)
  std::size_t bytes = 0;
  const auto entries = static_cast<long long>(count + 1);
  TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(nullptr, bytes, size_pairs, offset_pairs, AddLengthChunks{},
                                                  LengthChunks{0, 0}, entries));
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
  TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(temp.data(), bytes, size_pairs, offset_pairs, AddLengthChunks{},
                                                  LengthChunks{0, 0}, entries));
  std::size_t total = 0, longest = 0, total_chunks = 0;
  if (n_max) {
    const auto m = static_cast<std::size_t>(*n_max);
    total = count * (m + 1);
    longest = m + 1;
    total_chunks = count * (m / detail::law_chunk + 1);
    const std::int64_t* np = n.data();
    const std::optional<std::int64_t> bound = n_max;
    bad->check([=] __device__(long long i) { return detail::CheckPayload{np[i], 0}; },
               [=](std::size_t i, long long ni, long long) { fail_parameters(who, law, i, ni, bound); });
  } else {
    // the report read back (one synchronization)
    totals_kernel<<<1, 1>>>(offset_pairs, count, report.data());
    launched();
    LengthReport r{};
    TALLY_CUDA_CHECK(cudaMemcpy(&r, report.data(), sizeof r, cudaMemcpyDeviceToHost));
    if (r.first_bad < count) {
      const auto i = static_cast<std::size_t>(r.first_bad);
      std::int64_t ni = 0;
      TALLY_CUDA_CHECK(cudaMemcpy(&ni, n.data() + i, sizeof ni, cudaMemcpyDeviceToHost));
      fail_parameters(who, law, i, ni, std::nullopt);
    }
    total = static_cast<std::size_t>(r.total);
    longest = r.longest;
    total_chunks = static_cast<std::size_t>(r.chunks);
  }
  Laws out = Laws::allocate(Backend::cuda, count, total, longest, who);
  auto law_of = Column<std::uint32_t>::allocate(Backend::cuda, total_chunks, who);
  if (count == 0) return out;
  chunk_law_kernel<<<thread_blocks(count), block>>>(offset_pairs, count, law_of.data());
  launched();
  const std::size_t tiles = (total_chunks + 31) / 32, blocks = (tiles + fill_warps - 1) / fill_warps;
  walk_fill_kernel<<<static_cast<unsigned>(std::max<std::size_t>(blocks, 1)), block>>>(
      offset_pairs, law_of.data(), count, family, constant.data(), top.data(), out.mutable_view());
  launched();
  return out;
}

// ---- per-law kernels ---------------------------------------------------------------------------------------------

/// out's count laws, each a copy of the m weights w (Inline: those of `small`, a law of at most inline_words weights
/// such as a prior Poisson(10)'s 48, first put in shared memory): weight j
/// of the flat array is w[j mod m]. A thread steps j by the grid's stride, so its k = j mod m steps by stride mod m
/// (then wraps once at most, both being below m): one division a thread, none a weight (a 64-bit remainder a weight
/// bound the kernel at small counts).
template <bool Inline>
__global__ void broadcast_kernel(const double* w, const __grid_constant__ InlineValues<double> small, std::int64_t m,
                                 std::int64_t lo, double log_scale, MutablePmfBatchView out) {
  if constexpr (Inline) {
    __shared__ double shared_w[inline_words];
    w = to_shared(small, m, shared_w);
  }
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long n = static_cast<long long>(out.count) * m, step = stride % m;
  long long j = thread_index(), k = j % m;
  for (; j < n; j += stride) {
    out.weights[j] = w[k];
    k += step;
    if (k >= m) k -= m;
  }
  for (long long i = thread_index(); i < static_cast<long long>(out.count); i += stride) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = (i + 1) * m;
    out.lo[i] = lo;
    out.log_scale[i] = log_scale;
  }
}

__global__ void point_kernel(const std::int64_t* v, MutablePmfBatchView out) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(out.count)) return;
  if (i == 0) out.offset[0] = 0;
  out.weights[i] = 1.0;
  out.offset[i + 1] = i + 1;
  out.lo[i] = v[i];
  out.log_scale[i] = 0.0;
}

__global__ void negate_kernel(PmfBatchView x, MutablePmfBatchView out) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;
  const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin;
  for (std::int64_t k = lane; k < m; k += 32) out.weights[begin + m - 1 - k] = x.weights[begin + k];
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = x.offset[i + 1];
    out.lo[i] = -(x.lo[i] + m - 1);
    out.log_scale[i] = x.log_scale[i];
  }
}

__global__ void log_mass_kernel(PmfBatchView x, const std::int64_t* v, double* log_likelihood) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(x.count)) return;
  const std::int64_t j = v[i] - x.lo[i], m = x.offset[i + 1] - x.offset[i];
  const double w = j >= 0 && j < m ? x.weights[x.offset[i] + j] : 0.0;
  log_likelihood[i] += w > 0.0 ? log(w) + x.log_scale[i] : -INFINITY;
}

}  // namespace

Laws broadcast(std::span<const double> w, std::int64_t lo, double log_scale, std::size_t count) {
  constexpr const char* who = "tally::gpu::broadcast";
  const auto m = static_cast<std::int64_t>(w.size());
  Laws out = Laws::allocate(Backend::cuda, count, count * w.size(), w.size(), who);
  if (count > 0) {
    const std::size_t n = count * w.size();
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + block - 1) / block, 65536));
    InlineValues<double> small{};
    if (w.size() <= inline_words) {
      std::copy(w.begin(), w.end(), small.values);
      broadcast_kernel<true><<<blocks, block>>>(nullptr, small, m, lo, log_scale, out.mutable_view());
    } else {
      const auto weights = Column<double>::from_host(std::vector<double>(w.begin(), w.end()), Backend::cuda);
      broadcast_kernel<false><<<blocks, block>>>(weights.data(), small, m, lo, log_scale, out.mutable_view());
    }
    launched();
  }
  return out;
}

Laws point_laws(const Column<std::int64_t>& v) {
  Laws out = Laws::allocate(Backend::cuda, v.size(), v.size(), 1, "tally::gpu::point_laws");
  if (v.size() > 0) point_kernel<<<thread_blocks(v.size()), block>>>(v.data(), out.mutable_view());
  launched();
  return out;
}

Laws binomial_laws(const Column<std::int64_t>& n, const Column<double>& q, std::optional<std::int64_t> n_max) {
  return laws_from_parameters(n, BinomialFamily{n.data(), q.data()}, "tally::gpu::binomial_laws", "Binomial(n, q)",
                              n_max);
}

Laws beta_binomial_laws(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                        std::optional<std::int64_t> n_max) {
  return laws_from_parameters(n, BetaBinomialFamily{n.data(), a.data(), b.data()}, "tally::gpu::beta_binomial_laws",
                              "BetaBinomial(n, a, b)", n_max);
}

Column<double> hazard_probabilities(const Column<std::int64_t>& k, double c) {
  auto out = Column<double>::allocate(Backend::cuda, k.size(), "tally::gpu::hazard_probabilities");
  const std::int64_t* kp = k.data();
  double* o = out.data();
  each(k.size(), [=] __device__(long long i) { o[i] = -expm1(-c * static_cast<double>(kp[i])); });
  return out;
}

Laws negate(const Laws& x) {
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), "tally::gpu::negate");
  if (x.size() > 0) negate_kernel<<<warp_blocks(x.size()), block>>>(x.view(), out.mutable_view());
  launched();
  return out;
}

Laws convolve(const Laws& x, const Laws& y) {
  const std::size_t count = x.size();
  Laws out = Laws::allocate(Backend::cuda, count, x.total() + y.total() - count,
                            x.max_length() + y.max_length() - 1, "tally::gpu::convolve");
  if (count > 0)
    cuda::convolve_batched_device(x.view(), y.view(), std::max(x.max_length(), y.max_length()), out.mutable_view(),
                                  nullptr, cuda::Kernel::automatic, x.max_length() + y.max_length() - 1);
  return out;
}

Laws convolve_shared(const Laws& x, const Laws& y, std::size_t per) {
  const std::size_t count = x.size();
  // law i's outputs: x's n_i and m_b(i) - 1 more, at most per (y.total() - y.size()) over all
  Laws out = Laws::allocate(Backend::cuda, count, x.total() + per * (y.total() - y.size()),
                            x.max_length() + y.max_length() - 1, "tally::gpu::convolve_shared");
  if (count > 0)
    cuda::convolve_shared_device(x.view(), y.view(), per, x.max_length(), y.max_length(), out.mutable_view());
  return out;
}

Laws condition_on_sum(const Laws& x, const Laws& y, const Column<std::int64_t>& z, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_sum";
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), who);
  auto ll = Column<double>::allocate(Backend::cuda, x.size(), who);
  if (x.size() > 0) cuda::condition_on_sum_batched_device(x.view(), y.view(), z.data(), out.mutable_view(), ll.data());
  population_cuda::add_to(log_likelihood, ll);
  return out;
}

void add_log_mass(const Laws& x, const Column<std::int64_t>& v, Column<double>& log_likelihood) {
  if (x.size() > 0) log_mass_kernel<<<thread_blocks(x.size()), block>>>(x.view(), v.data(), log_likelihood.data());
  launched();
}

namespace {
/// One warp per law: its first and last entries of positive weight, folded into r[0] (min) and r[1] (max).
__global__ void support_range_kernel(PmfBatchView x, long long* r) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count) || x.log_scale[i] == -INFINITY) return;
  const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin;
  long long first = LLONG_MAX, last = LLONG_MIN;
  for (std::int64_t k = lane; k < m; k += 32)
    if (x.weights[begin + k] > 0.0) {
      first = min(first, static_cast<long long>(k));
      last = max(last, static_cast<long long>(k));
    }
  for (int d = 16; d >= 1; d /= 2) {
    first = min(first, __shfl_xor_sync(full_warp, first, d));
    last = max(last, __shfl_xor_sync(full_warp, last, d));
  }
  if (lane == 0 && first != LLONG_MAX) {
    atomicMin(&r[0], static_cast<long long>(x.lo[i]) + first);
    atomicMax(&r[1], static_cast<long long>(x.lo[i]) + last);
  }
}
}  // namespace

namespace {
/// One warp per law: the log of its mass, summed over the lanes.
__device__ double warp_log_mass(PmfBatchView x, long long i, int lane) {
  const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin;
  double w = 0.0;
  for (std::int64_t k = lane; k < m; k += 32) w += x.weights[begin + k];
  return x.log_scale[i] + log(warp_sum(w));
}

/// ratio_i = M_i / L_i (0 for a law with no mass or an impossible observation).
__global__ void mass_ratio_kernel(PmfBatchView x, PmfBatchView y, bool with_y, const double* before,
                                  const double* after, double* ratio) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;
  double m = warp_log_mass(x, i, lane);
  if (with_y) m += warp_log_mass(y, i, lane);
  if (lane == 0) {
    const double l = after[i] - before[i];
    ratio[i] = isfinite(l) && m > -INFINITY ? exp(m - l) : 0.0;
  }
}
}  // namespace

namespace {
/// The largest of n >= 1 ratios (>= 0) on the device: a CUB reduction, its result left on the device.
DeviceScalar largest_ratio(const Column<double>& ratio, const char* who) {
  const auto n = static_cast<long long>(ratio.size());
  auto top = Column<double>::allocate(Backend::cuda, 1, who);
  std::size_t bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, ratio.data(), top.data(), n));
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), bytes, ratio.data(), top.data(), n));
  return DeviceScalar(std::move(top));  // the ratios are >= 0: CUB's lowest-double identity never wins (n >= 1)
}
}  // namespace

DeviceScalar max_mass_ratio(const Laws& x, const Laws* y, const Column<double>& before, const Column<double>& after) {
  constexpr const char* who = "tally::gpu::max_mass_ratio";
  const std::size_t n = x.size();
  if (n == 0) return 0.0;
  auto ratio = Column<double>::allocate(Backend::cuda, n, who);
  mass_ratio_kernel<<<warp_blocks(n), block>>>(x.view(), y ? y->view() : x.view(), y != nullptr, before.data(),
                                                after.data(), ratio.data());
  launched();
  return largest_ratio(ratio, who);
}

namespace {
/// The blocks of known_mass_ratio_kernel at most: a few per multiprocessor, each folding many particles, so that
/// the atomics (one a block) stay few.
inline constexpr std::size_t ratio_blocks = 1024;
/// max_i ratio_i, ratio_i = e^{m_i} / L_i from a known log mass m_i (0 as above), into *top (zeroed before) in one
/// launch: the ratios are >= 0 (never NaN: L_i is finite where used), and doubles >= 0 are ordered as their bits,
/// so each block's largest goes in by one integer atomicMax (the maximum does not depend on the order). With
/// held_by, i runs over the n particles and takes law held_by[i] of the `laws` (one outside them counts for
/// nothing); without, over the n laws.
__global__ void __launch_bounds__(block) known_mass_ratio_kernel(const double* log_mass, const double* before,
                                                                 const double* after, std::size_t n,
                                                                 const std::int64_t* held_by, std::size_t laws,
                                                                 unsigned long long* top) {
  __shared__ double warp_top[block / 32];
  double r = 0.0;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t k = held_by ? held_by[i] : static_cast<std::int64_t>(i);
    if (k < 0 || static_cast<std::size_t>(k) >= laws) continue;
    const double l = after[k] - before[k], m = log_mass[k];
    r = fmax(r, isfinite(l) && m > -INFINITY ? exp(m - l) : 0.0);
  }
  r = warp_max(r);
  if ((threadIdx.x & 31) == 0) warp_top[threadIdx.x >> 5] = r;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < block / 32; ++w) r = fmax(r, warp_top[w]);
  atomicMax(top, static_cast<unsigned long long>(__double_as_longlong(r)));
}
}  // namespace

namespace {
DeviceScalar known_mass_ratio(const Column<double>& log_mass, const Column<double>& before,
                              const Column<double>& after, const Column<std::int64_t>* held_by) {
  constexpr const char* who = "tally::gpu::max_mass_ratio";
  const std::size_t laws = log_mass.size(), n = held_by ? held_by->size() : laws;
  if (n == 0 || laws == 0) return 0.0;
  auto top = Column<double>::allocate(Backend::cuda, 1, who);
  TALLY_CUDA_CHECK(cudaMemsetAsync(top.data(), 0, sizeof(double), nullptr));  // 0.0: the ratios are >= 0
  known_mass_ratio_kernel<<<static_cast<unsigned>(std::min<std::size_t>(thread_blocks(n), ratio_blocks)), block>>>(
      log_mass.data(), before.data(), after.data(), n, held_by ? held_by->data() : nullptr, laws,
      reinterpret_cast<unsigned long long*>(top.data()));
  launched();
  return DeviceScalar(std::move(top));
}
}  // namespace

DeviceScalar max_mass_ratio(const Column<double>& log_mass, const Column<double>& before,
                            const Column<double>& after) {
  return known_mass_ratio(log_mass, before, after, nullptr);
}

DeviceScalar max_mass_ratio(const Column<double>& log_mass, const Column<double>& before,
                            const Column<double>& after, const Column<std::int64_t>& held_by) {
  return known_mass_ratio(log_mass, before, after, &held_by);
}

ValueRange support_range(const Laws& x) {
  std::vector<std::int64_t> init{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  auto r = Column<std::int64_t>::from_host(init, Backend::cuda);
  if (x.size() > 0)
    support_range_kernel<<<warp_blocks(x.size()), block>>>(x.view(), reinterpret_cast<long long*>(r.data()));
  launched();
  const auto h = r.to_host();
  return {h[0], h[1]};
}

void add_log_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood) {
  const std::int64_t *xp = x.data(), *vp = v.data();
  double* l = log_likelihood.data();
  each(x.size(), [=] __device__(long long i) {
    if (xp[i] != vp[i]) l[i] = -INFINITY;
  });
}

void observe_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood,
                   Column<double>& log_weight) {
  const std::int64_t *xp = x.data(), *vp = v.data();
  double *l = log_likelihood.data(), *w = log_weight.data();
  each(x.size(), [=] __device__(long long i) {
    const double li = xp[i] == vp[i] ? 0.0 : -INFINITY;
    l[i] = li;
    w[i] += li;
  });
}

void add_to(Column<double>& acc, const Column<double>& x) {
  double* a = acc.data();
  const double* xp = x.data();
  each(x.size(), [=] __device__(long long i) { a[i] += xp[i]; });
}

void add_repeated(Column<double>& acc, const Column<double>& x, std::size_t times) {
  double* a = acc.data();
  const double* xp = x.data();
  const auto t = static_cast<long long>(times);
  each(acc.size(), [=] __device__(long long i) { a[i] += xp[i / t]; });
}

Column<std::size_t> block_indices(std::size_t count, std::size_t per) {
  auto out = Column<std::size_t>::allocate(Backend::cuda, count, "tally::gpu::block_indices");
  std::size_t* o = out.data();
  const auto p = static_cast<long long>(per);
  each(count, [=] __device__(long long i) { o[i] = static_cast<std::size_t>(i / p); });
  return out;
}

Column<std::int64_t> sample(const Laws& x, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, x.size(), "tally::gpu::sample");
  if (x.size() > 0)
    cuda::sample_batched_device(x.view(), seed, counter, out.data(), nullptr, first_stream, x.max_length());
  return out;
}

Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, const double* q, double q_value, std::uint64_t seed,
                                     std::uint64_t counter, std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_binomial";
  auto out = Column<std::int64_t>::allocate(Backend::cuda, n.size(), who);
  FirstBad bad(n.size());
  const std::int64_t* np = n.data();
  const double* qp = q;
  std::int64_t* o = out.data();
  unsigned long long* flag = bad.data();
  bad.each<block>(
      n.size(),
      [=] __device__(long long i) {
        const std::int64_t ni = np[i];
        const double qi = qp != nullptr ? qp[i] : q_value;
        if (ni < 0 || ni > detail::binomial_draw_max_n || !(qi >= 0.0 && qi <= 1.0)) {
          atomicMin(flag, static_cast<unsigned long long>(i));
          o[i] = 0;
          return;
        }
        o[i] = detail::binomial_draw(ni, qi,
                                     philox_uniform(seed, first_stream + static_cast<std::uint64_t>(i), counter));
      },
      [=] __device__(long long i) { return CheckPayload{np[i], __double_as_longlong(qp != nullptr ? qp[i] : q_value)}; },
      [who](std::size_t i, long long ni, long long qi) {
        detail::check_binomial(who, i, ni, std::bit_cast<double>(qi));
      });
  return out;
}

Column<double> sample_beta(const Column<double>& a, const Column<double>& b, std::uint64_t seed, std::uint64_t counter,
                           std::uint64_t first_stream) {
  auto out = Column<double>::allocate(Backend::cuda, a.size(), "tally::gpu::sample_beta");
  const double *ap = a.data(), *bp = b.data();
  double* o = out.data();
  each(a.size(), [=] __device__(long long i) {
    o[i] = detail::beta_draw(ap[i], bp[i], seed, first_stream + static_cast<std::uint64_t>(i), counter);
  });
  return out;
}

Column<std::int64_t> linear(const Column<std::int64_t>& x, std::int64_t a, const Column<std::int64_t>& y,
                            std::int64_t b, std::int64_t c) {
  constexpr const char* who = "tally::gpu::linear";
  auto out = Column<std::int64_t>::allocate(Backend::cuda, x.size(), who);
  FirstBad overflow(x.size());
  const std::int64_t *xp = x.data(), *yp = y.data();
  std::int64_t* o = out.data();
  unsigned long long* flag = overflow.data();
  overflow.each<block>(
      x.size(),
      [=] __device__(long long i) {
        const __int128 r = static_cast<__int128>(a) * xp[i] + static_cast<__int128>(b) * yp[i] + c;
        if (r > INT64_MAX || r < INT64_MIN) atomicMin(flag, static_cast<unsigned long long>(i));
        o[i] = static_cast<std::int64_t>(r);
      },
      [=] __device__(long long i) { return CheckPayload{xp[i], yp[i]}; },
      [who, a, b, c](std::size_t first, long long xi, long long yi) {
        tally::detail::fail<overflow_error>(who, ": particle ", first, ": ", a, " * ", xi, " + ", b, " * ", yi, " + ",
                                            c, " overflows the 64-bit integer range");
      });
  return out;
}

Column<std::int64_t> tie_constants(const Column<std::int64_t>& z, int sign, const Column<double>& log_likelihood,
                                   const Column<std::int64_t>& x_lo, const Column<std::int64_t>& y_end) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, z.size(), "tally::gpu::tie_constants");
  const std::int64_t *zp = z.data(), *xp = x_lo.data(), *yp = y_end.data();
  const double* lp = log_likelihood.data();
  std::int64_t* o = out.data();
  each(z.size(), [=] __device__(long long i) {
    o[i] = sign * (lp[i] == -INFINITY ? xp[i] + sign * yp[i] : zp[i]);
  });
  return out;
}

Column<std::int64_t> support_end(const Laws& laws, std::size_t per, std::size_t count, bool hi) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, count, "tally::gpu::support_end");
  const PmfBatchView v = laws.view();
  const auto blocks = static_cast<long long>(per);
  std::int64_t* o = out.data();
  each(count, [=] __device__(long long i) {
    const long long k = i / blocks;
    o[i] = v.lo[k] + (hi ? v.offset[k + 1] - v.offset[k] - 1 : 0);
  });
  return out;
}

Column<std::int64_t> filled(std::int64_t v, std::size_t count) {
  auto out = Column<std::int64_t>::allocate(Backend::cuda, count, "tally::gpu::filled");
  std::int64_t* o = out.data();
  each(count, [=] __device__(long long i) { o[i] = v; });
  return out;
}

Column<double> filled(double v, std::size_t count) {
  auto out = Column<double>::allocate(Backend::cuda, count, "tally::gpu::filled");
  double* o = out.data();
  each(count, [=] __device__(long long i) { o[i] = v; });
  return out;
}

Column<double> repeated(const Column<double>& values, std::size_t times) {
  auto out = Column<double>::allocate(Backend::cuda, values.size() * times, "tally::gpu::repeated");
  const double* v = values.data();
  double* o = out.data();
  const auto t = static_cast<long long>(times);
  each(out.size(), [=] __device__(long long i) { o[i] = v[i / t]; });
  return out;
}

void beta_update(Column<double>& a, Column<double>& b, const Column<std::int64_t>& n, const Column<std::int64_t>& k) {
  double *ap = a.data(), *bp = b.data();
  const std::int64_t *np = n.data(), *kp = k.data();
  each(a.size(), [=] __device__(long long i) {
    if (kp[i] < 0 || kp[i] > np[i]) return;  // an impossible count: the particle's weight is 0
    ap[i] += static_cast<double>(kp[i]);
    bp[i] += static_cast<double>(np[i] - kp[i]);
  });
}

}  // namespace tally::gpu::population_cuda
