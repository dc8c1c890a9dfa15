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

/// What both thinning kernels read of law i (its warp, every lane) before their steps: its probability, where its
/// result goes and how long it is, its source, and the exact power of two 2^-e that brings its largest weight on 0 ..
/// len - 1 (the window's positive weights all lie there) to [1, 2) (e = 0 for a law without mass).
struct ThinnedLaw {
  double keep, drop;
  std::int64_t at, len;    // the result: offsets[i] and its length
  std::int64_t lo, m;      // the source's lower bound and its number of weights
  const double* w;         // the source's weights
  bool mass;               // a positive weight on 0 .. len - 1
  int e;
  double scale;            // 2^-e
};

__device__ inline ThinnedLaw thinned_law(PmfBatchView x, double q_all, const double* q_each,
                                         const std::int64_t* offsets, long long i, int lane) {
  ThinnedLaw t;
  t.keep = q_each ? q_each[i] : q_all;
  t.drop = 1.0 - t.keep;
  t.at = offsets[i];
  t.len = offsets[i + 1] - t.at;
  t.lo = x.lo[i];
  t.m = x.offset[i + 1] - x.offset[i];
  t.w = x.weights + x.offset[i];
  double w_max = 0.0;
  for (std::int64_t n = lane; n < t.len; n += 32)
    if (n - t.lo >= 0 && n - t.lo < t.m) w_max = fmax(w_max, t.w[n - t.lo]);
  w_max = warp_max(w_max);
  t.mass = w_max > 0.0;
  t.e = t.mass ? detail::thinning_scale_exponent(w_max) : 0;
  t.scale = ldexp(1.0, -t.e);
  return t;
}

/// Lane 0 writes law i's offset, lower bound 0 and log-scale: the source's plus log(2^e top), top the largest entry
/// of the accumulator, which the weights were divided by (-inf without mass).
__device__ inline void finish_thinned(PmfBatchView x, const std::int64_t* offsets, long long i, int lane,
                                      const ThinnedLaw& t, double top, MutablePmfBatchView out) {
  if (lane != 0) return;
  if (i == 0) out.offset[0] = 0;
  out.offset[i + 1] = offsets[i + 1];
  out.lo[i] = 0;
  out.log_scale[i] = top > 0.0 ? x.log_scale[i] + (static_cast<double>(t.e) * detail::ln_two + log(top)) : -INFINITY;
}

/// One warp per law: Horner's rule (detail::horner_thinning_entry) from n = len - 1 down to 0, the accumulator in
/// place in the result (for laws too long for thin_registers_kernel). Each step updates its entries from
/// the highest chunk of 32 down: a chunk reads a_{base - 1} .. a_{base + 31} before it writes a_base .. a_{base + 31},
/// and a_{base - 1} is written only by the next chunk (lower), so every entry is computed from the previous step's
/// values, as the CPU's descending loop does. The weights enter scaled by 2^-e (w_max in [1, 2)), an exact scaling
/// that the log-scale takes back. q_each: law i's own probability q_each[i] (null: q_all for every law).
__global__ void thin_kernel(PmfBatchView x, double q_all, const double* q_each, const std::int64_t* offsets,
                            MutablePmfBatchView out) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;
  const ThinnedLaw t = thinned_law(x, q_all, q_each, offsets, i, lane);
  const double keep = t.keep, drop = t.drop, scale = t.scale, *w = t.w;
  const std::int64_t at = t.at, len = t.len, lo = t.lo, m = t.m;
  double* acc = out.weights + at;
  for (std::int64_t j = lane; j < len; j += 32) acc[j] = 0.0;
  __syncwarp();
  if (t.mass) {
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
  finish_thinned(x, offsets, i, lane, t, top, out);
}

/// The longest law whose Horner accumulator a warp keeps in its registers (32 lanes x register_thinning_chunk
/// entries); longer laws use thin_kernel.
inline constexpr int register_thinning_chunk = 32;

/// thin_kernel's steps with the accumulator in registers: lane L holds a_j for j = L C .. L C + C - 1 (C = chunk,
/// 32 C >= len). Step n computes every entry from the previous step's values, the same operations as thin_kernel
/// (so the same results, bit for bit): a lane reads the old a_{L C - 1} of the lane below by a shuffle before it
/// updates, then its own entries from the highest down (a_c reads the old a_{c - 1}, written after it). A lane whose
/// lowest entry L C is at or past the step's size (entries 0 .. size - 1 can be nonzero) holds zeros that stay zero
/// (drop 0 + keep 0), so it skips the step. The weights w_n reach lane 0 by a shuffle from a window of 32 of them
/// that the warp loads together every 32 steps (one coalesced read instead of one read per step).
template <int chunk>
__global__ void thin_registers_kernel(PmfBatchView x, double q_all, const double* q_each, const std::int64_t* offsets,
                                      MutablePmfBatchView out) {
  const long long i = warp_index();
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;
  const ThinnedLaw t = thinned_law(x, q_all, q_each, offsets, i, lane);
  const double keep = t.keep, drop = t.drop, scale = t.scale, *w = t.w;
  const std::int64_t at = t.at, len = t.len, lo = t.lo, m = t.m;
  double a[chunk];
#pragma unroll
  for (int c = 0; c < chunk; ++c) a[c] = 0.0;
  const std::int64_t first = static_cast<std::int64_t>(lane) * chunk;  // this lane's lowest entry
  if (t.mass) {
    double window = 0.0;  // lane k: w_{top - k} scaled, for the 32 steps from n = top down
    std::int64_t top = len - 1;
    for (std::int64_t n = len - 1; n >= 0; --n) {
      if ((top - n) % 32 == 0) {
        top = n;
        const std::int64_t v = n - lane - lo;
        window = n - lane >= 0 && v >= 0 && v < m ? w[v] * scale : 0.0;
      }
      const double wn = __shfl_sync(full_warp, window, static_cast<int>(top - n));
      const double below = __shfl_up_sync(full_warp, a[chunk - 1], 1);
      if (first < len - n) {
#pragma unroll
        for (int c = chunk - 1; c >= 1; --c) a[c] = detail::horner_thinning_entry(keep, drop, a[c], a[c - 1]);
        a[0] = detail::horner_thinning_entry(keep, drop, a[0], lane == 0 ? 0.0 : below) + (lane == 0 ? wn : 0.0);
      }
    }
  }
  double top = 0.0;
#pragma unroll
  for (int c = 0; c < chunk; ++c) top = fmax(top, a[c]);
  top = warp_max(top);
#pragma unroll
  for (int c = 0; c < chunk; ++c)
    if (first + c < len) out.weights[at + first + c] = top > 0.0 ? a[c] / top : 0.0;
  finish_thinned(x, offsets, i, lane, t, top, out);
}

/// thin_registers_kernel with the least chunk (a power of two) that holds `longest` entries in a warp.
void launch_thin_registers(std::int64_t longest, std::size_t count, PmfBatchView x, double q, const double* q_each,
                           const std::int64_t* offsets, MutablePmfBatchView out) {
  const unsigned blocks = warp_blocks(count);
  if (longest <= 32) thin_registers_kernel<1><<<blocks, block>>>(x, q, q_each, offsets, out);
  else if (longest <= 64) thin_registers_kernel<2><<<blocks, block>>>(x, q, q_each, offsets, out);
  else if (longest <= 128) thin_registers_kernel<4><<<blocks, block>>>(x, q, q_each, offsets, out);
  else if (longest <= 256) thin_registers_kernel<8><<<blocks, block>>>(x, q, q_each, offsets, out);
  else if (longest <= 512) thin_registers_kernel<16><<<blocks, block>>>(x, q, q_each, offsets, out);
  else thin_registers_kernel<register_thinning_chunk><<<blocks, block>>>(x, q, q_each, offsets, out);
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
    if (longest <= 32 * register_thinning_chunk)
      launch_thin_registers(longest, count, x.view(), q, q_each, offsets.data(), out.mutable_view());
    else
      thin_kernel<<<warp_blocks(count), block>>>(x.view(), q, q_each, offsets.data(), out.mutable_view());
  }
  launched();
  return out;
}

}  // namespace

Laws thin(const Laws& x, double q) { return thin_with(x, q, nullptr); }
Laws thin(const Laws& x, const Column<double>& q) { return thin_with(x, 0.0, q.data()); }

}  // namespace tally::gpu::population_cuda
