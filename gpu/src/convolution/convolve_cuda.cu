// CUDA convolution of one pair: the SIMT direct kernel, the skew baseline, and the choice of kernel by size.
#include <algorithm>
#include <type_traits>

#include "convolve_shapes.hpp"
#include "convolve_tensor.cuh"
#include "cuda_check.cuh"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu::cuda {
namespace kernels {
namespace {

// ---- tuning knobs of the SIMT direct kernel, in one place -------------------------------------------------------
constexpr int tile_threads = 128;  // threads per block
constexpr int run = 9;             // consecutive outputs per thread (odd: conflict-free shared reads of doubles)
constexpr int tile_outputs = tile_threads * run;
constexpr int chunk = 256;  // contraction terms per shared-memory stage (and per partial sum)

/// Pair blockIdx.x, outputs [k0, k0 + tile_outputs) with k0 = blockIdx.y tile_outputs; thread t the run
/// [k0 + t run, + run). r = x (*) y with y the shorter operand (length s), x of length l.
/// For a contraction stage j in [j0, j0 + chunk), output k needs x[k - j], k - j in
/// [k0 - j0 - chunk + 1, k0 + tile_outputs - 1 - j0]: a window of tile_outputs + chunk - 1 entries starting at
/// base = k0 - j0 - chunk + 1 (zeros outside [0, l)). In the window, output o = k - k0 and term jj = j - j0 read
/// x_s[o + chunk - 1 - jj]: as jj grows, a thread's run slides down by one, so it keeps the run in registers and
/// loads one new entry per term (plus the broadcast y_s[jj]).
template <class T>
__global__ void __launch_bounds__(tile_threads) direct_kernel(Pairs<T> pairs) {
  __shared__ T x_s[tile_outputs + chunk - 1];
  __shared__ T y_s[chunk];
  const Pair<T> p = pair_at(pairs, blockIdx.x);
  const long long k0 = static_cast<long long>(blockIdx.y) * tile_outputs;
  if (k0 >= p.outputs) return;  // the whole block, before any barrier
  const int o0 = threadIdx.x * run;  // first output of this thread, relative to k0
  T total[run];
#pragma unroll
  for (int i = 0; i < run; ++i) total[i] = T(0);

  for (long long j0 = 0; j0 < p.s; j0 += chunk) {
    const long long base = k0 - j0 - chunk + 1;
    const int terms = static_cast<int>(min(static_cast<long long>(chunk), p.s - j0));
    __syncthreads();
    for (int w = threadIdx.x; w < tile_outputs + chunk - 1; w += tile_threads) {
      const long long i = base + w;
      x_s[w] = (i >= 0 && i < p.l) ? p.x[i] : T(0);
    }
    for (int w = threadIdx.x; w < chunk; w += tile_threads) y_s[w] = (w < terms) ? p.y[j0 + w] : T(0);
    __syncthreads();

    // window[i] = x_s[o0 + i + chunk - 1 - jj]
    T window[run];
#pragma unroll
    for (int i = 0; i < run; ++i) window[i] = x_s[o0 + i + chunk - 1];
    T partial[run];
#pragma unroll
    for (int i = 0; i < run; ++i) partial[i] = T(0);
    for (int jj = 0; jj < terms; ++jj) {
      const T yj = y_s[jj];
#pragma unroll
      for (int i = 0; i < run; ++i) partial[i] = fma(yj, window[i], partial[i]);
      // slide: window[i] <- window[i - 1], window[0] <- x_s[o0 + chunk - 2 - jj]
#pragma unroll
      for (int i = run - 1; i > 0; --i) window[i] = window[i - 1];
      window[0] = (jj + 1 < chunk) ? x_s[o0 + chunk - 2 - jj] : T(0);
    }
#pragma unroll
    for (int i = 0; i < run; ++i) total[i] += partial[i];
  }
#pragma unroll
  for (int i = 0; i < run; ++i) {
    const long long k = k0 + o0 + i;
    if (k < p.outputs) pairs.out[p.out + k] = total[i];
  }
}

/// Seed 004's idea, our implementation: a 32 x 32 tile of the outer product x y^T per block of 32 warps (pair
/// blockIdx.z). Warp w, lane t takes element (t, (w - t) mod 32), whose skew diagonal is w (lanes t <= w) or w + 32
/// (lanes t > w); two butterfly sums over the warp give both diagonals' partial sums, added atomically to the
/// (zeroed) outputs.
__global__ void skew_kernel(Pairs<double> pairs) {
  const Pair<double> p = pair_at(pairs, blockIdx.z);
  if (static_cast<long long>(blockIdx.x) * 32 >= p.l || static_cast<long long>(blockIdx.y) * 32 >= p.s) return;
  const int lane = threadIdx.x, warp = threadIdx.y;
  const long long i = static_cast<long long>(blockIdx.x) * 32 + lane;
  const long long j = static_cast<long long>(blockIdx.y) * 32 + ((warp - lane) & 31);
  const double v = (i < p.l && j < p.s) ? p.x[i] * p.y[j] : 0.0;
  double low = lane <= warp ? v : 0.0, high = lane <= warp ? 0.0 : v;
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) {
    low += __shfl_xor_sync(0xffffffffu, low, d);
    high += __shfl_xor_sync(0xffffffffu, high, d);
  }
  if (lane == 0) {
    const long long diagonal = static_cast<long long>(blockIdx.x) * 32 + static_cast<long long>(blockIdx.y) * 32 + warp;
    double* r = pairs.out + p.out;
    if (diagonal < p.outputs) atomicAdd(r + diagonal, low);
    if (warp < 31 && diagonal + 32 < p.outputs) atomicAdd(r + diagonal + 32, high);
  }
}

/// Zeroes the outputs of pair blockIdx.x (the skew kernel accumulates into them).
__global__ void zero_outputs(Pairs<double> pairs) {
  const Pair<double> p = pair_at(pairs, blockIdx.x);
  for (long long k = threadIdx.x; k < p.outputs; k += blockDim.x) pairs.out[p.out + k] = 0.0;
}

}  // namespace

template <class T>
void simt_convolve(const Pairs<T>& pairs, long long max_outputs, cudaStream_t stream) {
  const long long tiles = (max_outputs + tile_outputs - 1) / tile_outputs;
  if (pairs.count > 0x7fffffffLL || tiles > 65535)
    throw cuda_error("tally::gpu::cuda: convolution batch too large for one launch");
  direct_kernel<T><<<dim3(static_cast<unsigned>(pairs.count), static_cast<unsigned>(tiles)), tile_threads, 0, stream>>>(
      pairs);
  TALLY_CUDA_CHECK(cudaGetLastError());
}
template void simt_convolve<double>(const Pairs<double>&, long long, cudaStream_t);
template void simt_convolve<float>(const Pairs<float>&, long long, cudaStream_t);

void skew_convolve(const Pairs<double>& pairs, long long max_l, long long max_s, cudaStream_t stream) {
  const long long bx = (max_l + 31) / 32, by = (max_s + 31) / 32;
  if (pairs.count > 65535 || bx > 0x7fffffffLL || by > 65535)
    throw cuda_error("tally::gpu::cuda: convolution batch too large for one launch of the skew kernel");
  zero_outputs<<<static_cast<unsigned>(pairs.count), 256, 0, stream>>>(pairs);
  TALLY_CUDA_CHECK(cudaGetLastError());
  const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by), static_cast<unsigned>(pairs.count));
  skew_kernel<<<grid, dim3(32, 32), 0, stream>>>(pairs);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace kernels

namespace {

Kernel choose(Kernel wanted, std::size_t m, std::size_t n) {
  if (wanted != Kernel::automatic) return wanted;
  // the tensor-core kernel is 2.3x the SIMT kernel at m = n = 1024 and 5.9x at 65536 on an H200
  // (bench/RESULTS.md); below a shorter operand of 256 its 32 x 32 Toeplitz blocks are mostly padding (a setting)
  return std::min(m, n) >= 256 ? Kernel::tensor_core : Kernel::direct;
}

template <class T>
void run_device(void* temp, std::size_t& temp_bytes, const T* p, std::size_t m, const T* q, std::size_t n, T* r,
                cudaStream_t stream, Kernel kernel) {
  if (m == 0 || n == 0) tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_device: an operand is empty");
  kernel = choose(kernel, m, n);
  if constexpr (!std::is_same_v<T, double>) kernel = Kernel::direct;  // the other kernels are double only
  const auto plan = kernels::tensor_plan(static_cast<long long>(m), static_cast<long long>(n));
  const int splits = kernel == Kernel::tensor_core ? plan.splits : 1;
  const std::size_t outputs = m + n - 1;
  const std::size_t needed = splits > 1 ? splits * outputs * sizeof(double) : 0;
  if (temp == nullptr) {
    temp_bytes = needed;
    return;
  }
  if (temp_bytes < needed)
    tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_device: temporary storage of ", temp_bytes,
                                     " bytes, ", needed, " needed");
  kernels::Pairs<T> pairs;
  pairs.x = p;
  pairs.y = q;
  pairs.out = r;
  pairs.m = static_cast<long long>(m);
  pairs.n = static_cast<long long>(n);
  const auto total = static_cast<long long>(outputs);
  if constexpr (std::is_same_v<T, double>) {
    if (kernel == Kernel::skew) {
      kernels::skew_convolve(pairs, static_cast<long long>(std::max(m, n)), static_cast<long long>(std::min(m, n)),
                             stream);
      return;
    }
    if (kernel == Kernel::tensor_core) {
      kernels::tensor_convolve(pairs, total, total, plan.layout, splits, static_cast<double*>(temp), stream);
      return;
    }
  }
  kernels::simt_convolve(pairs, total, stream);
}

/// The device version without caller-provided temporary storage: stream-ordered allocation of what it needs.
template <class T>
void run_device_alloc(const T* p, std::size_t m, const T* q, std::size_t n, T* r, void* stream, Kernel kernel) {
  const auto s = static_cast<cudaStream_t>(stream);
  std::size_t bytes = 0;
  run_device<T>(nullptr, bytes, p, m, q, n, r, s, kernel);
  void* temp = nullptr;
  if (bytes > 0) {
    ::tally::gpu::detail::count_device_allocation(bytes, "tally::gpu::convolve (temporary storage)");  // the fault-injection hook
    TALLY_CUDA_CHECK(cudaMallocAsync(&temp, bytes, s));
  }
  try {
    char dummy = 0;
    run_device<T>(bytes > 0 ? temp : &dummy, bytes, p, m, q, n, r, s, kernel);
  } catch (...) {
    if (temp) cudaFreeAsync(temp, s);
    throw;
  }
  if (temp) TALLY_CUDA_CHECK(cudaFreeAsync(temp, s));
}

template <class T>
void run_host(std::span<const T> p, std::span<const T> q, std::span<T> r, Kernel kernel, const char* who) {
  detail::check_convolution_shapes(p.size(), q.size(), r.size(), who);
  detail::require_device(who);
  detail::DeviceBuffer<T> dp(p.size()), dq(q.size()), dr(r.size());
  TALLY_CUDA_CHECK(cudaMemcpy(dp.data(), p.data(), p.size_bytes(), cudaMemcpyHostToDevice));
  TALLY_CUDA_CHECK(cudaMemcpy(dq.data(), q.data(), q.size_bytes(), cudaMemcpyHostToDevice));
  run_device_alloc<T>(dp.data(), p.size(), dq.data(), q.size(), dr.data(), nullptr, kernel);
  TALLY_CUDA_CHECK(cudaMemcpy(r.data(), dr.data(), r.size_bytes(), cudaMemcpyDeviceToHost));
}

}  // namespace

void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r, Kernel kernel) {
  run_host(p, q, r, kernel, "tally::gpu::cuda::convolve");
}
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r, Kernel kernel) {
  run_host(p, q, r, kernel, "tally::gpu::cuda::convolve");
}

void convolve_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r, void* stream,
                     Kernel kernel) {
  run_device_alloc(p, m, q, n, r, stream, kernel);
}
void convolve_device(const float* p, std::size_t m, const float* q, std::size_t n, float* r, void* stream,
                     Kernel kernel) {
  run_device_alloc(p, m, q, n, r, stream, kernel);
}
void convolve_device(void* temp, std::size_t& temp_bytes, const double* p, std::size_t m, const double* q,
                     std::size_t n, double* r, void* stream, Kernel kernel) {
  run_device(temp, temp_bytes, p, m, q, n, r, static_cast<cudaStream_t>(stream), kernel);
}

}  // namespace tally::gpu::cuda
