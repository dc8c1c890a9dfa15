// CUDA convolution kernels: the direct tiled kernel (register windows over shared memory) and the skew baseline.
#include <algorithm>

#include "cuda_check.cuh"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "convolve_shapes.hpp"
#include "tally/gpu/convolve.hpp"

namespace tally::gpu::cuda {
namespace {

// ---- tuning knobs, in one place --------------------------------------------------------------------------------
constexpr int tile_threads = 128;    // threads per block of the direct kernel
constexpr int run = 9;               // consecutive outputs per thread (odd: conflict-free shared reads of doubles)
constexpr int tile_outputs = tile_threads * run;
constexpr int chunk = 256;           // contraction terms per shared-memory stage (and per partial sum)

/// r = x (*) y, y the shorter operand (length s), x of length l, outputs l + s - 1.
/// Block b computes outputs [k0, k0 + tile_outputs), k0 = b tile_outputs; thread t the run [k0 + t run, + run).
/// For a contraction stage j in [j0, j0 + chunk), output k needs x[k - j], k - j in
/// [k0 - j0 - chunk + 1, k0 + tile_outputs - 1 - j0]: a window of tile_outputs + chunk - 1 entries starting at
/// base = k0 - j0 - chunk + 1 (zeros outside [0, l)). In the window, output o = k - k0 and term jj = j - j0 read
/// x_s[o + chunk - 1 - jj]: as jj grows, a thread's run slides down by one, so it keeps the run in registers and
/// loads one new entry per term (plus the broadcast y_s[jj]).
template <class T>
__global__ void __launch_bounds__(tile_threads) direct_kernel(const T* __restrict__ x, long long l,
                                                              const T* __restrict__ y, long long s, T* __restrict__ r,
                                                              long long outputs) {
  __shared__ T x_s[tile_outputs + chunk - 1];
  __shared__ T y_s[chunk];
  const long long k0 = static_cast<long long>(blockIdx.x) * tile_outputs;
  const int o0 = threadIdx.x * run;  // first output of this thread, relative to k0
  T total[run];
#pragma unroll
  for (int i = 0; i < run; ++i) total[i] = T(0);

  for (long long j0 = 0; j0 < s; j0 += chunk) {
    const long long base = k0 - j0 - chunk + 1;
    __syncthreads();
    for (int w = threadIdx.x; w < tile_outputs + chunk - 1; w += tile_threads) {
      const long long g = base + w;
      x_s[w] = (g >= 0 && g < l) ? x[g] : T(0);
    }
    for (int w = threadIdx.x; w < chunk; w += tile_threads) y_s[w] = (j0 + w < s) ? y[j0 + w] : T(0);
    __syncthreads();

    // window[i] = x_s[o0 + i + chunk - 1 - jj]
    T window[run];
#pragma unroll
    for (int i = 0; i < run; ++i) window[i] = x_s[o0 + i + chunk - 1];
    T partial[run];
#pragma unroll
    for (int i = 0; i < run; ++i) partial[i] = T(0);
    for (int jj = 0; jj < chunk; ++jj) {
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
    if (k < outputs) r[k] = total[i];
  }
}

/// Seed 004's idea, our implementation: a 32 x 32 tile of the outer product p q^T per block of 32 warps. Warp w,
/// lane t takes element (t, (w - t) mod 32), whose skew diagonal is w (lanes t <= w) or w + 32 (lanes t > w); two
/// butterfly sums over the warp give both diagonals' partial sums, added atomically to r.
__global__ void skew_kernel(const double* __restrict__ p, long long m, const double* __restrict__ q, long long n,
                            double* __restrict__ r) {
  const int lane = threadIdx.x, warp = threadIdx.y;
  const long long x = static_cast<long long>(blockIdx.x) * 32 + lane;
  const long long yy = static_cast<long long>(blockIdx.y) * 32 + ((warp - lane) & 31);
  const double v = (x < m && yy < n) ? p[x] * q[yy] : 0.0;
  double low = lane <= warp ? v : 0.0, high = lane <= warp ? 0.0 : v;
#pragma unroll
  for (int d = 16; d >= 1; d /= 2) {
    low += __shfl_xor_sync(0xffffffffu, low, d);
    high += __shfl_xor_sync(0xffffffffu, high, d);
  }
  if (lane == 0) {
    const long long diagonal = static_cast<long long>(blockIdx.x) * 32 + static_cast<long long>(blockIdx.y) * 32 + warp;
    if (diagonal < m + n - 1) atomicAdd(r + diagonal, low);
    if (warp < 31 && diagonal + 32 < m + n - 1) atomicAdd(r + diagonal + 32, high);
  }
}

template <class T>
void direct_device(const T* p, std::size_t m, const T* q, std::size_t n, T* r, cudaStream_t stream) {
  if (m == 0 || n == 0) tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_device: an operand is empty");
  const T* x = p;
  const T* y = q;
  if (n > m) {
    std::swap(x, y);
    std::swap(m, n);
  }
  const std::size_t outputs = m + n - 1;
  const auto blocks = static_cast<unsigned>((outputs + tile_outputs - 1) / tile_outputs);
  direct_kernel<T><<<blocks, tile_threads, 0, stream>>>(x, static_cast<long long>(m), y, static_cast<long long>(n), r,
                                                        static_cast<long long>(outputs));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void direct(std::span<const T> p, std::span<const T> q, std::span<T> r) {
  detail::check_convolution_shapes(p.size(), q.size(), r.size(), "tally::gpu::cuda::convolve");
  detail::require_device("tally::gpu::cuda::convolve");
  detail::DeviceBuffer<T> dp(p.size()), dq(q.size()), dr(r.size());
  TALLY_CUDA_CHECK(cudaMemcpy(dp.data(), p.data(), p.size_bytes(), cudaMemcpyHostToDevice));
  TALLY_CUDA_CHECK(cudaMemcpy(dq.data(), q.data(), q.size_bytes(), cudaMemcpyHostToDevice));
  direct_device(dp.data(), p.size(), dq.data(), q.size(), dr.data(), nullptr);
  TALLY_CUDA_CHECK(cudaMemcpy(r.data(), dr.data(), r.size_bytes(), cudaMemcpyDeviceToHost));
}

}  // namespace

void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r) { direct(p, q, r); }
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r) { direct(p, q, r); }

void convolve_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r, void* stream) {
  direct_device(p, m, q, n, r, static_cast<cudaStream_t>(stream));
}
void convolve_device(const float* p, std::size_t m, const float* q, std::size_t n, float* r, void* stream) {
  direct_device(p, m, q, n, r, static_cast<cudaStream_t>(stream));
}

void convolve_skew_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r, void* stream) {
  if (m == 0 || n == 0) tally::detail::fail<shape_error>("tally::gpu::cuda::convolve_skew_device: an operand is empty");
  const auto s = static_cast<cudaStream_t>(stream);
  TALLY_CUDA_CHECK(cudaMemsetAsync(r, 0, (m + n - 1) * sizeof(double), s));
  const dim3 block(32, 32), grid(static_cast<unsigned>((m + 31) / 32), static_cast<unsigned>((n + 31) / 32));
  skew_kernel<<<grid, block, 0, s>>>(p, static_cast<long long>(m), q, static_cast<long long>(n), r);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void convolve_skew(std::span<const double> p, std::span<const double> q, std::span<double> r) {
  detail::check_convolution_shapes(p.size(), q.size(), r.size(), "tally::gpu::cuda::convolve_skew");
  detail::require_device("tally::gpu::cuda::convolve_skew");
  detail::DeviceBuffer<double> dp(p.size()), dq(q.size()), dr(r.size());
  TALLY_CUDA_CHECK(cudaMemcpy(dp.data(), p.data(), p.size_bytes(), cudaMemcpyHostToDevice));
  TALLY_CUDA_CHECK(cudaMemcpy(dq.data(), q.data(), q.size_bytes(), cudaMemcpyHostToDevice));
  convolve_skew_device(dp.data(), p.size(), dq.data(), q.size(), dr.data(), nullptr);
  TALLY_CUDA_CHECK(cudaMemcpy(r.data(), dr.data(), r.size_bytes(), cudaMemcpyDeviceToHost));
}

}  // namespace tally::gpu::cuda
