// The CUDA form of gpu::thin: the law of Binomial(X_i, q_i) for each law of X, by Horner's rule, one warp per law.
#include <algorithm>
#include <cstdint>

#include "cuda_check.cuh"
#include "length_scan.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "thin_math.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// The longest law whose Horner accumulator a block keeps in shared memory: block / 32 warps of this many doubles
/// fill the 48 KB a block may have without asking (longer laws work in place in the result, in global memory).
inline constexpr std::int64_t shared_thinning_length = 48 * 1024 / 8 / (block / 32);

/// lengths[i] = lo_i + j_i + 1 (the thinning's support 0 .. lo_i + j_i), j_i the last entry of positive weight
/// (0 for a law without mass), 0 for i = count. A law with positive weight below 0 is reported (first_bad); a box
/// that starts below 0 with zeros there (a difference's box) is a count's law.
__global__ void thinned_lengths_kernel(PmfBatchView x, std::int64_t* lengths, LengthReport* r) {
  const long long i = thread_index();
  unsigned long long length = 0;
  if (i == static_cast<long long>(x.count)) {
    lengths[i] = 0;
  } else if (i < static_cast<long long>(x.count)) {
    const double* w = x.weights + x.offset[i];
    const std::int64_t m = x.offset[i + 1] - x.offset[i];
    std::int64_t last = m - 1;
    while (last > 0 && !(w[last] > 0.0)) --last;  // usually at once: a posterior's far tail underflows to zeros
    const std::int64_t len = x.lo[i] + last + 1;
    for (std::int64_t j = 0; j < m && x.lo[i] + j < 0; ++j)
      if (w[j] > 0.0) {
        atomicMin(&r->first_bad, static_cast<unsigned long long>(i));
        break;
      }
    lengths[i] = len > 0 ? len : 1;
    length = static_cast<unsigned long long>(lengths[i]);
  }
  warp_fold_max(length, &r->longest);
}

/// One warp per law: Horner's rule (detail::horner_thinning_entry) from n = len - 1 down to 0, the accumulator in
/// shared memory (in_shared: `stride` doubles a warp) or in place in the result. Each step updates its entries from
/// the highest chunk of 32 down: a chunk reads a_{base - 1} .. a_{base + 31} before it writes a_base .. a_{base + 31},
/// and a_{base - 1} is written only by the next chunk (lower), so every entry is computed from the previous step's
/// values, as the CPU's descending loop does. The weights enter scaled by 2^-e (w_max in [1, 2)), an exact scaling
/// that the log-scale takes back. q_each: law i's own probability q_each[i] (null: q_all for every law).
template <bool in_shared>
__global__ void thin_kernel(PmfBatchView x, double q_all, const double* q_each, const std::int64_t* offsets,
                            MutablePmfBatchView out, std::int64_t stride) {
  extern __shared__ double shared_accumulators[];
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;
  const double keep = q_each ? q_each[i] : q_all, drop = 1.0 - keep;
  const std::int64_t at = offsets[i], len = offsets[i + 1] - at, lo = x.lo[i], m = x.offset[i + 1] - x.offset[i];
  const double* w = x.weights + x.offset[i];
  // the largest weight on 0 .. len - 1 (the window's positive weights all lie there)
  double w_max = 0.0;
  for (std::int64_t n = lane; n < len; n += 32)
    if (n - lo >= 0 && n - lo < m) w_max = fmax(w_max, w[n - lo]);
  w_max = warp_max(w_max);
  double* acc = in_shared ? shared_accumulators + (threadIdx.x >> 5) * stride : out.weights + at;
  for (std::int64_t j = lane; j < len; j += 32) acc[j] = 0.0;
  __syncwarp();
  const int e = w_max > 0.0 ? detail::thinning_scale_exponent(w_max) : 0;
  const double scale = ldexp(1.0, -e);
  if (w_max > 0.0) {
    for (std::int64_t n = len - 1; n >= 0; --n) {
      const std::int64_t size = len - n;  // a is nonzero on 0 .. size - 1 after this step
      const double wn = n - lo >= 0 && n - lo < m ? w[n - lo] * scale : 0.0;
      for (std::int64_t base = ((size - 1) / 32) * 32; base >= 0; base -= 32) {
        const std::int64_t j = base + lane;
        const double here = j < size ? acc[j] : 0.0, below = j >= 1 && j < size ? acc[j - 1] : 0.0;
        __syncwarp();
        if (j < size) acc[j] = detail::horner_thinning_entry(keep, drop, here, below) + (j == 0 ? wn : 0.0);
        __syncwarp();
      }
    }
  }
  double top = 0.0;
  for (std::int64_t k = lane; k < len; k += 32) top = fmax(top, acc[k]);
  top = warp_max(top);
  for (std::int64_t k = lane; k < len; k += 32) out.weights[at + k] = top > 0.0 ? acc[k] / top : 0.0;
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = offsets[i + 1];
    out.lo[i] = 0;
    out.log_scale[i] = top > 0.0 ? x.log_scale[i] + (static_cast<double>(e) * detail::ln_two + log(top)) : -INFINITY;
  }
}

Laws thin_with(const Laws& x, double q, const double* q_each) {
  constexpr const char* who = "tally::gpu::thin";
  const std::size_t count = x.size();
  auto lengths = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto report = Column<LengthReport>::allocate(Backend::cuda, 1, who);
  init_report<<<1, 1>>>(report.data(), count);
  thinned_lengths_kernel<<<thread_blocks(count + 1), block>>>(x.view(), lengths.data(), report.data());
  launched();
  const LengthReport r = scan_lengths(lengths.data(), offsets.data(), count, report.data());
  if (r.first_bad < count)
    tally::detail::fail<domain_error>(who, ": particle ", r.first_bad, "'s law has positive weight below 0: not a count");
  Laws out = Laws::allocate(Backend::cuda, count, static_cast<std::size_t>(r.total), r.longest, who);
  if (count > 0) {
    const auto longest = static_cast<std::int64_t>(r.longest);
    if (longest <= shared_thinning_length) {
      const std::size_t bytes = static_cast<std::size_t>(block / 32) * static_cast<std::size_t>(longest) * sizeof(double);
      thin_kernel<true><<<warp_blocks(count), block, bytes>>>(x.view(), q, q_each, offsets.data(), out.mutable_view(),
                                                             longest);
    } else {
      thin_kernel<false><<<warp_blocks(count), block>>>(x.view(), q, q_each, offsets.data(), out.mutable_view(), 0);
    }
  }
  launched();
  return out;
}

}  // namespace

Laws thin(const Laws& x, double q) { return thin_with(x, q, nullptr); }
Laws thin(const Laws& x, const Column<double>& q) { return thin_with(x, 0.0, q.data()); }

}  // namespace tally::gpu::population_cuda
