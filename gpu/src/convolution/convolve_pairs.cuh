// Private: a batch of convolution pairs as the CUDA kernels see it (the single convolution is a batch of one).
#pragma once

#include <cstdint>

namespace tally::gpu::cuda::kernels {

/// Operands and outputs of P convolutions in flat device arrays. Batched (x_offset != nullptr): pair i convolves
/// x[x_offset[i], x_offset[i+1]) with y's law b = floor(i / y_per), y[y_offset[b], y_offset[b+1]) (y_per = 1: a law
/// of y a pair; more: a law of y shared by each block of y_per pairs), into out from
///   x_offset[i] + y_per (y_offset[b] - b) + (i - b y_per)(n_b - 1)
/// on: its m_i + n_b - 1 outputs follow those of pairs 0..i-1 (x's weights before i, and n - 1 more for each earlier
/// pair: y_per (n_b' - 1) for each block b' < b, whose sum is y_per (y_offset[b] - b), and n_b - 1 for each earlier
/// pair of block b). With y_per = 1 that is x_offset[i] + y_offset[i] - i. Single (x_offset == nullptr): one pair
/// of lengths m and n.
template <class T>
struct Pairs {
  const T* x = nullptr;
  const T* y = nullptr;
  T* out = nullptr;
  const std::int64_t* x_offset = nullptr;
  const std::int64_t* y_offset = nullptr;
  long long m = 0, n = 0;
  long long count = 1;
  long long y_per = 1;
};

/// One pair, its longer operand as x (length l) and its shorter as y (length s): every kernel's work grows with s
/// (the batched tensor-core kernel swaps them back: convolve_tensor.cu's toeplitz_operands says why).
template <class T>
struct Pair {
  const T* x;
  long long l;
  const T* y;
  long long s;
  long long out;      // offset of this pair's output 0 in the output array
  long long outputs;  // l + s - 1
  long long y_law;    // which law of y (i / y_per)
};

/// Swaps a pair's operands (x with y, l with s).
template <class T>
__device__ inline void swap_operands(Pair<T>& r) {
  const T* t = r.x;
  r.x = r.y;
  r.y = t;
  const long long u = r.l;
  r.l = r.s;
  r.s = u;
}

template <class T>
__device__ inline Pair<T> pair_at(const Pairs<T>& p, long long i) {
  long long x0 = 0, m = p.m, y0 = 0, n = p.n, out = 0, b = 0;
  if (p.x_offset) {
    b = i / p.y_per;
    x0 = p.x_offset[i];
    m = p.x_offset[i + 1] - x0;
    y0 = p.y_offset[b];
    n = p.y_offset[b + 1] - y0;
    out = x0 + p.y_per * (y0 - b) + (i - b * p.y_per) * (n - 1);
  }
  Pair<T> r{p.x + x0, m, p.y + y0, n, out, m + n - 1, b};
  if (r.s > r.l) swap_operands(r);
  return r;
}

/// The "rescale after" of a batched convolution, fused into the kernels that see a whole pair (all pointers set),
/// or not wanted (x_lo == nullptr): pair i's outputs are divided by their maximum M_i, and its offset, lo and
/// log_scale written: out_offset[i + 1] = end of its outputs, out_lo[i] = x_lo[i] + y_lo[b],
/// out_log_scale[i] = x_log_scale[i] + y_log_scale[b] + log M_i (-inf when M_i = 0), b the pair's law of y.
struct Rescale {
  const std::int64_t* x_lo = nullptr;
  const std::int64_t* y_lo = nullptr;
  const double* x_log_scale = nullptr;
  const double* y_log_scale = nullptr;
  std::int64_t* out_offset = nullptr;
  std::int64_t* out_lo = nullptr;
  double* out_log_scale = nullptr;
};

/// Writes pair i's offset, lo and log_scale after its outputs were divided by `max` (one thread per pair).
template <class T>
__device__ inline void write_rescaled_pair(const Rescale& r, long long i, const Pair<T>& p, double max) {
  if (i == 0) r.out_offset[0] = 0;
  r.out_offset[i + 1] = p.out + p.outputs;
  r.out_lo[i] = r.x_lo[i] + r.y_lo[p.y_law];
  r.out_log_scale[i] = max > 0.0 ? r.x_log_scale[i] + r.y_log_scale[p.y_law] + log(max) : -HUGE_VAL;
}

__device__ inline double warp_max(double v) {
  for (int d = 16; d >= 1; d /= 2) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

}  // namespace tally::gpu::cuda::kernels
