// CUDA batched convolution (one launch for all pairs, one to rescale) and batched conditioning on sums (one launch).
#include <algorithm>
#include <cmath>
#include <limits>

#include "batch_math.hpp"
#include "batch_shapes.hpp"
#include "convolve_tensor.cuh"
#include "cuda_check.cuh"
#include "tally/error.hpp"
#include "tally/gpu/convolve_batched.hpp"

namespace tally::gpu::cuda {
namespace {

// ---- tuning knobs, in one place --------------------------------------------------------------------------------
constexpr int rescale_threads = 128;       // threads per pair in the rescale pass
constexpr int condition_warps = 4;         // pairs per block of the conditioning kernel (one warp each)
constexpr int small_warps = 4;             // pairs per block of the small-pair kernel (one warp each)
constexpr long long small_max_outputs = 256;  // most outputs of a pair for the small-pair kernel; tensor cores above
constexpr long long fused_max_outputs = 512;   // pairs of at most one tensor-core warp tile get the fused rescale

using kernels::warp_max;
__device__ inline double warp_sum(double v) {
  for (int d = 16; d >= 1; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}
__device__ inline int warp_max_int(int v) {
  for (int d = 16; d >= 1; d /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

/// Small pairs (at most G R outputs), G = 32 or 16 lanes per pair (one or two pairs a warp), the rescale fused: lane
/// t of a pair's G owns the outputs o = R t .. R t + R - 1. The shorter operand y has s <= (G / 2) R terms (s <= l
/// and l + s - 1 <= G R), the longer x at most G R. With x padded by (G / 2) R zeros in front, xp[u] =
/// x_{u - GR/2}, output o + i = sum_{j < s} y_j xp[o + i - j + GR/2], and as j grows the lane's window
/// xp[o + [0, R) - j + GR/2] slides down by one: one new shared load and R FMAs per term. The index
/// o + i - j + GR/2 lies in [1, (3G/2) R - 1] (o + i <= G R - 1, j <= G R / 2 - 1), inside xp's (3G/2) R entries.
/// Every output is the same sum in the same order whatever G and R (zeros of the padding add nothing), so the
/// choice changes the speed only: two pairs a warp (G = 16) halve what is per pair and not per term (the operands'
/// loads, the maximum, the write-back), and their terms run side by side.
///
/// Banks: the lanes of a pair read xp[R t + c] together (c the same for all), 64-bit words R apart. Stored at
/// slot(u) = u + floor(u / R) for even R (one pad word every R), the words are R + 1 apart; for odd R they are
/// R apart: an odd stride either way, so the 16 lanes of each half-warp hit 16 different bank pairs (with
/// stride R = 8 unpadded, 8 lanes shared each pair: the 8-way conflicts that bound the first version).
/// The outputs go back through the same buffer, so that the global stores are coalesced.
template <int R, int G>
struct SmallPairLayout {
  static_assert(G == 32 || G == 16);
  static constexpr int shorter = G / 2 * R, padded = 3 * G / 2 * R;
  static constexpr int slots = R % 2 == 0 ? padded + padded / R : padded;
  __device__ static int slot(int u) { return R % 2 == 0 ? u + u / R : u; }
};

/// The largest of v over the G lanes of a pair (xor distances below G stay inside the pair's lanes).
template <int G>
__device__ inline double pair_max(double v) {
  for (int d = G / 2; d >= 1; d /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

template <int R, int G>
__global__ void __launch_bounds__(32 * small_warps) small_kernel(kernels::Pairs<double> pairs, kernels::Rescale rescale) {
  using L = SmallPairLayout<R, G>;
  constexpr int LM = L::shorter, per_warp = 32 / G;
  __shared__ double xs[small_warps * per_warp][L::slots];
  __shared__ double ys[small_warps * per_warp][LM];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & (G - 1), half = (threadIdx.x & 31) / G;
  const long long first = (static_cast<long long>(blockIdx.x) * small_warps + warp) * per_warp;
  if (first >= pairs.count) return;  // the whole warp; the kernel synchronizes warps only
  const long long i = first + half;
  const bool valid = i < pairs.count;  // a warp's second pair may be past the end: its lanes only keep step
  const auto p = kernels::pair_at(pairs, valid ? i : first);
  double* xp = xs[warp * per_warp + half];
  double* yp = ys[warp * per_warp + half];
  for (int u = lane; u < L::padded; u += G) xp[L::slot(u)] = (u >= LM && u - LM < p.l) ? p.x[u - LM] : 0.0;
  for (int u = lane; u < LM; u += G) yp[u] = u < p.s ? p.y[u] : 0.0;
  __syncwarp();
  // Step j adds y_j times the window x_{o + k - j} (padded index o + k - j + LM) to output o + k, k < R. The window
  // is a ring: at step j its k-th value lives in b[(k - j) mod R], so moving on by one step only overwrites the
  // value that leaves (window k = R - 1, slot (-j - 1) mod R) with the one that enters (window 0); unrolled by R,
  // every slot index is a constant and nothing is copied between registers (the same products and sums in the same
  // order as a shifted window: the same results).
  const int o = R * lane;
  double b[R], acc[R];
#pragma unroll
  for (int k = 0; k < R; ++k) {
    b[k] = xp[L::slot(o + k + LM)];
    acc[k] = 0.0;
  }
  // In a round of R steps from j (a multiple of R), the entering values have padded indices u_r = R c - 1 - r,
  // r < R, with c = lane + G/2 - j/R (o + LM = R (lane + G/2)): all in [R (c - 1), R c - 1], so slot(u_r) =
  // (R + 1) c - 2 - r for even R and R c - 1 - r for odd R: one base a round and constant offsets.
  const auto round_base = [&](int c) { return xp + (R % 2 == 0 ? (R + 1) * c - 2 : R * c - 1); };
  const int s = static_cast<int>(p.s);
  int j = 0, c = lane + G / 2;
  for (; j + R <= s; j += R, --c) {
    const double* enter = round_base(c);
    const double* y = yp + j;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const double yj = y[r];
#pragma unroll
      for (int k = 0; k < R; ++k) acc[k] = fma(yj, b[(k - r + R) % R], acc[k]);
      b[R - 1 - r] = enter[-r];
    }
  }
  {  // the last s mod R steps
    const double* enter = round_base(c);
    const double* y = yp + j;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (j + r < s) {
        const double yj = y[r];
#pragma unroll
        for (int k = 0; k < R; ++k) acc[k] = fma(yj, b[(k - r + R) % R], acc[k]);
        b[R - 1 - r] = enter[-r];
      }
    }
  }
  const int outputs = static_cast<int>(p.outputs);
  double mx = 0.0;
#pragma unroll
  for (int k = 0; k < R; ++k)
    if (o + k < outputs) mx = fmax(mx, acc[k]);
  mx = pair_max<G>(mx);
  __syncwarp();  // every lane is done reading xp
#pragma unroll
  for (int k = 0; k < R; ++k) xp[L::slot(o + k)] = acc[k];
  __syncwarp();
  if (!valid) return;
  double* out = pairs.out + p.out;
  for (int u = lane; u < outputs; u += G) out[u] = mx > 0.0 ? xp[L::slot(u)] / mx : 0.0;
  if (lane == 0) kernels::write_rescaled_pair(rescale, i, p, mx);
}

/// Launches small_kernel<R, G> for the least R with G R >= max_outputs (<= 256): two pairs a warp (G = 16, R = 2 ..
/// 10) up to 160 outputs, one (G = 32, R = 6 or 8) above.
void launch_small(const kernels::Pairs<double>& pairs, const kernels::Rescale& rescale, long long max_outputs,
                  cudaStream_t s) {
  const auto launch = [&](auto kernel, int per_warp) {
    const long long per_block = static_cast<long long>(small_warps) * per_warp;
    const auto blocks = static_cast<unsigned>((pairs.count + per_block - 1) / per_block);
    kernel<<<blocks, 32 * small_warps, 0, s>>>(pairs, rescale);
  };
  if (max_outputs <= 16 * 10) {
    const long long r = (max_outputs + 15) / 16;
    if (r <= 2)
      launch(small_kernel<2, 16>, 2);
    else if (r == 3)
      launch(small_kernel<3, 16>, 2);
    else if (r == 4)
      launch(small_kernel<4, 16>, 2);
    else if (r == 5)
      launch(small_kernel<5, 16>, 2);
    else if (r == 6)
      launch(small_kernel<6, 16>, 2);
    else if (r == 7)
      launch(small_kernel<7, 16>, 2);
    else if (r == 8)
      launch(small_kernel<8, 16>, 2);
    else if (r == 9)
      launch(small_kernel<9, 16>, 2);
    else
      launch(small_kernel<10, 16>, 2);
    return;
  }
  const long long r = (max_outputs + 31) / 32;
  if (r <= 6)
    launch(small_kernel<6, 32>, 1);
  else
    launch(small_kernel<8, 32>, 1);
}

/// Pair blockIdx.x: divide its m + n - 1 raw outputs by their maximum; write offset, lo and log_scale.
__global__ void __launch_bounds__(rescale_threads) rescale_kernel(kernels::Pairs<double> pairs, kernels::Rescale rescale) {
  __shared__ double warp_maxima[rescale_threads / 32];
  const long long i = blockIdx.x;
  const auto p = kernels::pair_at(pairs, i);
  double* w = pairs.out + p.out;
  double mx = 0.0;
  for (long long k = threadIdx.x; k < p.outputs; k += rescale_threads) mx = fmax(mx, w[k]);
  mx = warp_max(mx);
  if ((threadIdx.x & 31) == 0) warp_maxima[threadIdx.x >> 5] = mx;
  __syncthreads();
  mx = warp_maxima[0];
  for (int v = 1; v < rescale_threads / 32; ++v) mx = fmax(mx, warp_maxima[v]);
  for (long long k = threadIdx.x; k < p.outputs; k += rescale_threads) w[k] = mx > 0.0 ? w[k] / mx : 0.0;
  if (threadIdx.x == 0) kernels::write_rescaled_pair(rescale, i, p, mx);
}

/// One warp per pair i: the products x_a y_{c-a} along the diagonal c = z_i - lo_x - lo_y with their common binary
/// exponent moved out, their sum (log-likelihood) and maximum (posterior weights with maximum 1).
__global__ void __launch_bounds__(32 * condition_warps) condition_kernel(PmfBatchView x, PmfBatchView y,
                                                                         const std::int64_t* z,
                                                                         MutablePmfBatchView post,
                                                                         double* log_likelihood) {
  const long long i = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (i >= static_cast<long long>(x.count)) return;  // the whole warp
  const std::int64_t m = x.offset[i + 1] - x.offset[i], n = y.offset[i + 1] - y.offset[i];
  const std::int64_t c = z[i] - x.lo[i] - y.lo[i];
  const auto range = detail::diagonal(c, m, n);
  const double* xi = x.weights + x.offset[i];
  const double* yi = y.weights + y.offset[i];
  double* w = post.weights + x.offset[i];
  int shift = detail::no_exponent;
  for (std::int64_t a = range.first + lane; a <= range.last; a += 32)
    if (xi[a] > 0.0 && yi[c - a] > 0.0) shift = max(shift, detail::product_exponent(xi[a], yi[c - a]));
  shift = warp_max_int(shift);
  // the sum and maximum over the diagonal first (lane l takes a = l mod 32, as over the whole law: the same sums),
  // then every weight written once: v / mx on the diagonal (v where mx = 0), 0 off it
  const bool any = shift != detail::no_exponent;
  double sum = 0.0, mx = 0.0;
  if (any)
    for (std::int64_t a = range.first + (lane - range.first % 32 + 32) % 32; a <= range.last; a += 32) {
      const double v = detail::scaled_product(xi[a], yi[c - a], shift);
      sum += v;
      mx = fmax(mx, v);
    }
  sum = warp_sum(sum);
  mx = warp_max(mx);
  for (std::int64_t a = lane; a < m; a += 32) {
    const double v = (any && a >= range.first && a <= range.last) ? detail::scaled_product(xi[a], yi[c - a], shift) : 0.0;
    w[a] = mx > 0.0 ? v / mx : v;
  }
  if (lane == 0) {
    if (i == 0) post.offset[0] = 0;
    post.offset[i + 1] = x.offset[i + 1];
    post.lo[i] = x.lo[i];
    const auto res = detail::conditioning_result(sum, mx, shift, x.log_scale[i], y.log_scale[i]);
    post.log_scale[i] = res.posterior_log_scale;
    log_likelihood[i] = res.log_likelihood;
  }
}

/// A PmfBatch copied to the device (owning) and its views.
struct DeviceBatch {
  detail::DeviceBuffer<double> weights, log_scale;
  detail::DeviceBuffer<std::int64_t> offset, lo;
  std::size_t count;

  DeviceBatch(std::size_t weight_count, std::size_t pmfs)
      : weights(weight_count), log_scale(pmfs), offset(pmfs + 1), lo(pmfs), count(pmfs) {}
  explicit DeviceBatch(const PmfBatch& b) : DeviceBatch(b.weights.size(), b.size()) {
    TALLY_CUDA_CHECK(cudaMemcpy(weights.data(), b.weights.data(), b.weights.size() * sizeof(double), cudaMemcpyHostToDevice));
    TALLY_CUDA_CHECK(cudaMemcpy(log_scale.data(), b.log_scale.data(), count * sizeof(double), cudaMemcpyHostToDevice));
    TALLY_CUDA_CHECK(cudaMemcpy(offset.data(), b.offset.data(), (count + 1) * sizeof(std::int64_t), cudaMemcpyHostToDevice));
    TALLY_CUDA_CHECK(cudaMemcpy(lo.data(), b.lo.data(), count * sizeof(std::int64_t), cudaMemcpyHostToDevice));
  }
  PmfBatchView view() { return {weights.data(), offset.data(), lo.data(), log_scale.data(), count}; }
  MutablePmfBatchView mutable_view() { return {weights.data(), offset.data(), lo.data(), log_scale.data(), count}; }
  PmfBatch to_host() {
    PmfBatch b;
    b.weights.resize(weights.size());
    b.log_scale.resize(count);
    b.offset.resize(count + 1);
    b.lo.resize(count);
    TALLY_CUDA_CHECK(cudaMemcpy(b.weights.data(), weights.data(), b.weights.size() * sizeof(double), cudaMemcpyDeviceToHost));
    TALLY_CUDA_CHECK(cudaMemcpy(b.log_scale.data(), log_scale.data(), count * sizeof(double), cudaMemcpyDeviceToHost));
    TALLY_CUDA_CHECK(cudaMemcpy(b.offset.data(), offset.data(), (count + 1) * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
    TALLY_CUDA_CHECK(cudaMemcpy(b.lo.data(), lo.data(), count * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
    return b;
  }
};

/// Law i of x with law i / y_per of y, into out (the kernels' view of two batches).
kernels::Pairs<double> pairs_of(PmfBatchView x, PmfBatchView y, MutablePmfBatchView out, long long y_per) {
  kernels::Pairs<double> pairs;
  pairs.x = x.weights;
  pairs.y = y.weights;
  pairs.out = out.weights;
  pairs.x_offset = x.offset;
  pairs.y_offset = y.offset;
  pairs.count = static_cast<long long>(x.count);
  pairs.y_per = y_per;
  return pairs;
}

/// The kernels of a batch of pairs, by the longest output a pair has and the longest operand: the small-pair
/// kernel (rescale fused) up to 256 outputs, the tensor cores above (one warp a pair with the rescale fused while
/// one 512-output tile holds a pair, a warp a tile and the rescale pass beyond), or the kernel asked for.
void run_pairs(const kernels::Pairs<double>& pairs, const kernels::Rescale& rescale, long long longest_output,
               long long longest_operand, Kernel kernel, cudaStream_t s) {
  if (kernel == Kernel::automatic && longest_output <= small_max_outputs) {  // one launch, rescale fused
    launch_small(pairs, rescale, longest_output, s);
    TALLY_CUDA_CHECK(cudaGetLastError());
    return;
  }
  if (kernel == Kernel::automatic || kernel == Kernel::tensor_core) {
    if (longest_output <= fused_max_outputs) {  // one warp tile per pair: one launch, rescale fused
      kernels::tensor_convolve_rescaled(pairs, rescale, s);
      return;
    }
    // longer pairs: a warp per 512-output tile (more warps than pairs), then the rescale pass
    kernels::tensor_convolve(pairs, longest_output, 0, kernels::TensorLayout::narrow, 1, nullptr, s);
  } else if (kernel == Kernel::direct) {
    kernels::simt_convolve(pairs, longest_output, s);
  } else {
    kernels::skew_convolve(pairs, longest_operand, longest_operand, s);
  }
  rescale_kernel<<<static_cast<unsigned>(pairs.count), rescale_threads, 0, s>>>(pairs, rescale);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void convolve_batched_device(PmfBatchView x, PmfBatchView y, std::size_t max_length, MutablePmfBatchView out,
                             void* stream, Kernel kernel, std::size_t max_outputs) {
  if (x.count != y.count || out.count != x.count)
    tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_batched_device: batches of ", x.count, ", ", y.count,
                                     " and ", out.count, " pmfs");
  if (x.count == 0) return;
  const kernels::Pairs<double> pairs = pairs_of(x, y, out, 1);
  if (x.count > 0x7fffffffULL) throw cuda_error("tally::gpu::cuda::convolve_batched_device: batch too large");
  const kernels::Rescale rescale{x.lo, y.lo, x.log_scale, y.log_scale, out.offset, out.lo, out.log_scale};
  const auto longest_output = static_cast<long long>(
      max_outputs > 0 ? std::min(max_outputs, 2 * max_length - 1) : 2 * max_length - 1);
  run_pairs(pairs, rescale, longest_output, static_cast<long long>(max_length), kernel,
            static_cast<cudaStream_t>(stream));
}

void convolve_shared_device(PmfBatchView x, PmfBatchView y, std::size_t per, std::size_t x_max_length,
                            std::size_t shared_max_length, MutablePmfBatchView out, void* stream, Kernel kernel) {
  const bool one_for_all = y.count == 1 && per >= x.count;
  if (out.count != x.count || per == 0 || (!one_for_all && y.count * per != x.count))
    tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_shared_device: ", x.count, " laws against ", y.count,
                                     " shared by ", per, " each, into ", out.count);
  if (x.count == 0) return;
  if (x.count > 0x7fffffffULL) throw cuda_error("tally::gpu::cuda::convolve_shared_device: batch too large");
  const kernels::Pairs<double> pairs =
      pairs_of(x, y, out, one_for_all ? static_cast<long long>(x.count) : static_cast<long long>(per));
  const kernels::Rescale rescale{x.lo, y.lo, x.log_scale, y.log_scale, out.offset, out.lo, out.log_scale};
  run_pairs(pairs, rescale, static_cast<long long>(x_max_length + shared_max_length - 1),
            static_cast<long long>(std::max(x_max_length, shared_max_length)), kernel,
            static_cast<cudaStream_t>(stream));
}

void condition_on_sum_batched_device(PmfBatchView x, PmfBatchView y, const std::int64_t* z,
                                     MutablePmfBatchView post, double* log_likelihood, void* stream) {
  if (x.count != y.count || post.count != x.count)
    tally::detail::fail<shape_error>("tally::gpu::cuda::condition_on_sum_batched_device: batches of ", x.count, ", ",
                                     y.count, " and ", post.count, " pmfs");
  if (x.count == 0) return;
  const std::size_t blocks = (x.count + condition_warps - 1) / condition_warps;
  if (blocks > 0x7fffffffULL) throw cuda_error("tally::gpu::cuda::condition_on_sum_batched_device: batch too large");
  condition_kernel<<<static_cast<unsigned>(blocks), 32 * condition_warps, 0, static_cast<cudaStream_t>(stream)>>>(
      x, y, z, post, log_likelihood);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y, Kernel kernel) {
  constexpr const char* who = "tally::gpu::cuda::convolve_batched";
  detail::check_pair_batches(x, y, who);
  for (std::size_t i = 0; i < x.size(); ++i) tally::detail::checked_add(x.lo[i], y.lo[i], who);
  detail::require_device(who);
  DeviceBatch dx(x), dy(y), dr(x.weights.size() + y.weights.size() - x.size(), x.size());
  std::size_t longest_output = 0;
  for (std::size_t i = 0; i < x.size(); ++i) longest_output = std::max(longest_output, x.length(i) + y.length(i) - 1);
  convolve_batched_device(dx.view(), dy.view(), std::max(x.max_length(), y.max_length()), dr.mutable_view(), nullptr,
                          kernel, longest_output);
  return dr.to_host();
}

SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z) {
  constexpr const char* who = "tally::gpu::cuda::condition_on_sum_batched";
  detail::check_pair_batches(x, y, who);
  detail::check_observations(x, y, z, who);
  detail::require_device(who);
  DeviceBatch dx(x), dy(y), post(x.weights.size(), x.size());
  detail::DeviceBuffer<std::int64_t> dz(z.size());
  detail::DeviceBuffer<double> dl(z.size());
  TALLY_CUDA_CHECK(cudaMemcpy(dz.data(), z.data(), z.size_bytes(), cudaMemcpyHostToDevice));
  condition_on_sum_batched_device(dx.view(), dy.view(), dz.data(), post.mutable_view(), dl.data());
  SumConditioning result{post.to_host(), std::vector<double>(z.size())};
  TALLY_CUDA_CHECK(cudaMemcpy(result.log_likelihood.data(), dl.data(), z.size() * sizeof(double), cudaMemcpyDeviceToHost));
  return result;
}

}  // namespace tally::gpu::cuda
