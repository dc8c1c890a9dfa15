// Private: what the population kernels share: launch shapes, warp and lane-group reductions, elementwise launches,
// and the conditioning of each law, by a group of lanes sized to the laws, on an observation by a per-value likelihood.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "cuda_check.cuh"
#include "deferred_checks.cuh"
#include "population_cuda.hpp"
#include "population_math.hpp"
#include "tally/gpu/pmf_batch.hpp"

namespace tally::gpu::population_cuda::kernels {

inline constexpr int block = detail::population_block;
/// Weights a thread of the parameter laws' kernels computes in a row (a chunk of a law).
inline constexpr int chunk = detail::law_chunk;
inline constexpr unsigned full_warp = 0xffffffffu;

/// Blocks for n laws of `lanes` lanes each (block / lanes laws a block): one thread per particle, one warp per law.
inline unsigned group_blocks(std::size_t n, int lanes) {
  const std::size_t laws_per_block = static_cast<std::size_t>(block / lanes);
  return static_cast<unsigned>(std::max<std::size_t>(1, (n + laws_per_block - 1) / laws_per_block));
}
inline unsigned thread_blocks(std::size_t n) { return group_blocks(n, 1); }
inline unsigned warp_blocks(std::size_t n) { return group_blocks(n, 32); }

/// The lanes a law of at most `length` entries gets in the kernels that give each law a group of lanes: the least
/// power of two >= length, from 1 to 32, so that short laws (a Markov chain's few states) do not leave most of a warp
/// idle: G lanes per law, 32 / G laws a warp.
inline int lanes_for(std::size_t length) {
  int g = 1;
  while (g < 32 && static_cast<std::size_t>(g) < length) g *= 2;
  return g;
}

/// launch(std::integral_constant<int, G>{}) for G = lanes_for(length): a kernel templated on its lanes per law.
template <class Launch>
void with_lanes(std::size_t length, Launch launch) {
  switch (lanes_for(length)) {
    case 1: launch(std::integral_constant<int, 1>{}); break;
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    case 8: launch(std::integral_constant<int, 8>{}); break;
    case 16: launch(std::integral_constant<int, 16>{}); break;
    default: launch(std::integral_constant<int, 32>{}); break;
  }
}

/// The largest and the sum of v over a group of G lanes (G a power of two up to 32, groups aligned in the warp;
/// every lane of the warp takes part).
template <int G>
__device__ inline double group_max(double v) {
  for (int d = G / 2; d >= 1; d /= 2) v = fmax(v, __shfl_xor_sync(full_warp, v, d));
  return v;
}
template <int G>
__device__ inline double group_sum(double v) {
  for (int d = G / 2; d >= 1; d /= 2) v += __shfl_xor_sync(full_warp, v, d);
  return v;
}
__device__ inline double warp_max(double v) { return group_max<32>(v); }
__device__ inline double warp_sum(double v) { return group_sum<32>(v); }
/// Up to `inline_words` 8-byte values sent in a kernel's own parameters (2 KB) rather than through device memory: a
/// small law or table goes over with the launch, without a copy of its own (a pinned staging slot, its event and a
/// copy a step). Taken by value as a `const __grid_constant__` parameter.
inline constexpr std::size_t inline_words = 256;
template <class T>
struct InlineValues {
  static_assert(sizeof(T) == 8);
  T values[inline_words];
};
/// The first n (<= inline_words) of `small`'s values, put in the block's shared memory `shared` (one barrier).
template <class T>
__device__ inline const T* to_shared(const InlineValues<T>& small, long long n, T* shared) {
  for (long long k = threadIdx.x; k < n; k += blockDim.x) shared[k] = small.values[k];
  __syncthreads();
  return shared;
}
/// The law (warp) and lane of this thread.
__device__ inline long long warp_index() { return (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5; }
__device__ inline long long thread_index() { return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; }

inline void launched() { TALLY_CUDA_CHECK(cudaGetLastError()); }

/// The first particle a kernel flags with atomicMin(data(), i), checked at once or deferred (deferred_checks.cuh).
using detail::CheckPayload;
using detail::FirstBad;

template <class F>
__global__ void each_kernel(std::size_t count, F f) {
  const long long i = thread_index();
  if (i < static_cast<long long>(count)) f(i);
}

/// f(i) for i < count, one thread each.
template <class F>
void each(std::size_t count, F f) {
  if (count == 0) return;
  each_kernel<<<thread_blocks(count), block>>>(count, f);
  launched();
}

/// One group of G lanes per law i (G = 32: a warp): \f$ w'_{i,k} \propto w_{i,k}\, e^{\ell(i, lo_i + k)} \f$ (max 1
/// again, log_scale the normalizer) and \f$ \log L_i = \mathrm{log\_scale}_i + \log \sum_k w_{i,k} e^{\ell(i, lo_i + k)}
/// \f$ added to log_likelihood: the CPU loop of population_condition.hpp, its sums taken by the group. A dead particle
/// or an impossible observation adds -inf and leaves the law as it was (a dead one stays dead). `log_lik(i, k)` is a
/// device functor. A group past the last law (i >= x.count) takes part in the shuffles and writes nothing.
template <int G = 32, class LogLik>
__device__ void condition_law(PmfBatchView x, const LogLik& log_lik, MutablePmfBatchView out, double* log_likelihood,
                              long long i, int lane);

template <int G, class LogLik>
__global__ void condition_kernel(PmfBatchView x, LogLik log_lik, MutablePmfBatchView out, double* log_likelihood) {
  const long long i = thread_index() / G;
  const int lane = static_cast<int>(threadIdx.x % G);
  if (G == 32 && i >= static_cast<long long>(x.count)) return;  // whole warps leave together
  condition_law<G>(x, log_lik, out, log_likelihood, i, lane);
}

/// condition_kernel's work on law i, by its group (lane: this thread's).
template <int G, class LogLik>
__device__ void condition_law(PmfBatchView x, const LogLik& log_lik, MutablePmfBatchView out, double* log_likelihood,
                              long long i, int lane) {
  const bool here = i < static_cast<long long>(x.count);
  const std::int64_t begin = here ? x.offset[i] : 0, m = here ? x.offset[i + 1] - begin : 0, lo = here ? x.lo[i] : 0;
  const double* w = x.weights + begin;
  double* o = out.weights + begin;
  double top = -INFINITY;
  for (std::int64_t k = lane; k < m; k += G) {
    const double l = w[k] > 0.0 ? log(w[k]) + log_lik(i, lo + k) : -INFINITY;
    top = fmax(top, o[k] = l);
  }
  top = group_max<G>(top);
  const bool dead = !here || top == -INFINITY || x.log_scale[i] == -INFINITY;  // impossible here, or dead before
  double sum = 0.0;
  for (std::int64_t k = lane; k < m; k += G) sum += (o[k] = dead ? w[k] : exp(o[k] - top));
  sum = group_sum<G>(sum);
  if (here && lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = x.offset[i + 1];
    out.lo[i] = lo;
    out.log_scale[i] = dead ? x.log_scale[i] : -log(sum);
    log_likelihood[i] = dead ? -INFINITY : log_likelihood[i] + x.log_scale[i] + top + log(sum);
  }
}

/// condition_kernel over every law of x (out allocated like x), each law a group of lanes_for(x.max_length()) lanes.
template <class LogLik>
void condition_laws(const Laws& x, const LogLik& log_lik, Laws& out, Column<double>& log_likelihood) {
  const std::size_t n = x.size();
  if (n == 0) return;
  with_lanes(x.max_length(), [&](auto lanes) {
    constexpr int G = decltype(lanes)::value;
    condition_kernel<G><<<group_blocks(n, G), block>>>(x.view(), log_lik, out.mutable_view(), log_likelihood.data());
  });
  launched();
}

}  // namespace tally::gpu::population_cuda::kernels
