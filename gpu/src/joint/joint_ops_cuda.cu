// The CUDA forms of the batched joint-law operations of joint_ops.cpp: one block per law.
#include <cmath>
#include <cstdint>

#include "cuda_check.cuh"
#include "joint_cuda.hpp"
#include "joint_kernels.cuh"
#include "joint_likelihood.hpp"
#include "joint_math.hpp"

namespace tally::gpu::joint_cuda {

namespace {

using detail::joint_block;
using detail::JointBox;
using namespace joint_kernels;

/// Output entries of a convolution along `axis` with law i of a rank-1 batch (whose log scale adds).
struct AddEntry {
  int axis;
  JointView y;
  __device__ double operator()(long long i, const JointBox& in, const JointBox& to, const double* w,
                               std::int64_t e) const {
    return detail::add_entry(in, to, axis, w, y.weights + y.offset[i], y.lo[i], y.shape[i], e);
  }
  __device__ double extra(long long i) const { return y.log_scale[i]; }
};

/// Output entries of the outer product with law i of y (whose log scale adds).
struct OuterEntry {
  JointView y;
  __device__ double operator()(long long i, const JointBox&, const JointBox&, const double* w, std::int64_t e) const {
    const std::int64_t first = y.offset[i];
    return detail::outer_entry(w, y.weights + first, y.offset[i + 1] - first, e);
  }
  __device__ double extra(long long i) const { return y.log_scale[i]; }
};

/// Output entries of a linear combination.
struct LinearEntry {
  detail::JointLinear f;
  __device__ double operator()(long long, const JointBox& in, const JointBox& to, const double* w,
                               std::int64_t e) const {
    return detail::linear_entry(f, in, to, w, e);
  }
  __device__ double extra(long long) const { return 0.0; }
};

/// Output entries of a Markov step of `axis` with the K x C table t.
struct MarkovEntry {
  int axis;
  const double* t;
  std::int64_t cols;
  __device__ double operator()(long long, const JointBox& in, const JointBox& to, const double* w,
                               std::int64_t e) const {
    return detail::markov_entry(in, to, axis, w, t, cols, e);
  }
  __device__ double extra(long long) const { return 0.0; }
};

/// Law i of out from entry (sums of weights), rescaled to largest 1: joint_ops.cpp's rescaled_loop, one block a law.
template <class Entry>
__global__ void __launch_bounds__(joint_block) rescaled_kernel(JointView x, Entry entry, MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  double top = 0.0;
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) top = fmax(top, o[e] = entry(i, in, to, w, e));
  top = block_reduce<true>(top);
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) o[e] = top > 0.0 ? o[e] / top : 0.0;
  if (threadIdx.x == 0) {
    const double s = x.log_scale[i] + entry.extra(i);
    out.log_scale[i] = top > 0.0 && s > -INFINITY ? s + log(top) : -INFINITY;
  }
}

/// joint_ops.cpp's condition_with: o = log w + l(e) exponentiated and normalized, log L_i added.
__global__ void __launch_bounds__(joint_block) condition_kernel(JointView x, detail::JointLikelihood l,
                                                                const std::int64_t* v, double* log_likelihood,
                                                                MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox b = box_of(x.rank, x.lo, x.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  const double s = x.log_scale[i];
  const std::int64_t vi = v[i];
  detail::JointLikelihood li = l;  // law i's own child where there is one per set
  li.child = l.child.at(i);
  for (std::int64_t e = threadIdx.x; e < b.size; e += joint_block)
    o[e] = w[e] > 0.0 ? log(w[e]) + detail::joint_log_likelihood(li, b, e, vi) : -INFINITY;
  const double top = exponentiate(o, b.size);
  if (top == -INFINITY || s == -INFINITY) {
    for (std::int64_t e = threadIdx.x; e < b.size; e += joint_block) o[e] = w[e];
    if (threadIdx.x == 0) {
      out.log_scale[i] = s;
      log_likelihood[i] = -INFINITY;
    }
    return;
  }
  double sum = 0.0;
  for (std::int64_t e = threadIdx.x; e < b.size; e += joint_block) sum += o[e];
  sum = block_reduce<false>(sum);
  if (threadIdx.x == 0) {
    out.log_scale[i] = -log(sum);
    log_likelihood[i] += s + top + log(sum);
  }
}

/// The smallest (min) or largest (!min) of v over the block; every thread gets it.
template <bool min>
__device__ long long block_extreme(long long v) {
  __shared__ long long partial[joint_block / 32];
  __syncthreads();
  for (int d = 16; d >= 1; d /= 2) {
    const long long o = __shfl_xor_sync(0xffffffffu, v, d);
    v = min ? (o < v ? o : v) : (o > v ? o : v);
  }
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  v = partial[0];
  for (int k = 1; k < joint_block / 32; ++k) v = min ? (partial[k] < v ? partial[k] : v) : (partial[k] > v ? partial[k] : v);
  return v;
}

/// joint_ops.cpp's sample_entry: joint_math.hpp's sample rule over the n weights weight(e) with the uniform u,
/// thread t owning chunk t; every thread gets the drawn entry.
template <class Weight>
__device__ std::int64_t block_sample(std::int64_t n, double u, Weight weight) {
  __shared__ double start[joint_block + 1];
  const std::int64_t chunk = detail::sample_chunk(n), first = threadIdx.x * chunk;
  const std::int64_t end = first + chunk < n ? first + chunk : n;
  double sum = 0.0;
  long long last_positive = 0;
  for (std::int64_t e = first; e < end; ++e) {
    const double we = weight(e);
    sum += we;
    if (we > 0.0) last_positive = e;
  }
  start[threadIdx.x + 1] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    start[0] = 0.0;
    for (int t = 0; t < joint_block; ++t) start[t + 1] = start[t] + start[t + 1];
  }
  __syncthreads();
  const double target = u * start[joint_block], base = start[threadIdx.x];
  long long pick = INT64_MAX;
  double run = 0.0;
  for (std::int64_t e = first; e < end; ++e) {
    run += weight(e);
    if (base + run > target) {
      pick = e;
      break;
    }
  }
  pick = block_extreme<true>(pick);
  last_positive = block_extreme<false>(last_positive);
  return pick != INT64_MAX ? pick : last_positive;
}

/// joint_ops.cpp's joint_sample: one draw of the tuple of law blockIdx.x.
__global__ void __launch_bounds__(joint_block) sample_kernel(JointView x, const double* uniforms, std::int64_t* out) {
  const long long i = blockIdx.x;
  const JointBox b = box_of(x.rank, x.lo, x.shape, i);
  const double* w = x.weights + x.offset[i];
  const std::int64_t pick = block_sample(b.size, uniforms[i], [w](std::int64_t e) { return w[e]; });
  if (threadIdx.x == 0) detail::joint_coordinates(b, pick, out + i * x.rank);
}

/// joint_ops.cpp's joint_sample_coordinate: X_axis of law blockIdx.x drawn from its marginal (each marginal entry
/// computed where it is needed, by the CPU's formula), then the slice at it normalized (when rest has weights).
__global__ void __launch_bounds__(joint_block) sample_coordinate_kernel(JointView x, int axis, const double* uniforms,
                                                                        std::int64_t* value, MutableJointView rest) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i);
  const bool has_rest = rest.weights != nullptr;
  const JointBox to = has_rest ? box_of(rest.rank, rest.lo, rest.shape, i) : detail::joint_box(0, nullptr, nullptr);
  const double* w = x.weights + x.offset[i];
  const std::int64_t j = block_sample(in.shape[axis], uniforms[i],
                                      [&](std::int64_t k) { return detail::marginal_entry(in, to, axis, w, k); });
  if (threadIdx.x == 0) value[i] = in.lo[axis] + j;
  if (!has_rest) return;
  double* o = rest.weights + rest.offset[i];
  const std::int64_t at = j * in.stride[axis];
  double top = 0.0;
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block)
    top = fmax(top, o[e] = w[detail::sum_out_first(in, to, axis, e) + at]);
  top = block_reduce<true>(top);
  double sum = 0.0;
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) sum += o[e] = top > 0.0 ? o[e] / top : 0.0;
  sum = block_reduce<false>(sum);
  if (threadIdx.x == 0) rest.log_scale[i] = top > 0.0 && x.log_scale[i] > -INFINITY ? -log(sum) : -INFINITY;
}

}  // namespace

void add_independent(const JointLaws& x, int axis, const JointLaws& y, JointLaws& out) {
  if (x.size() == 0) return;
  rescaled_kernel<<<blocks(x), joint_block>>>(view(x), AddEntry{axis, view(y)}, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void outer(const JointLaws& x, const JointLaws& y, JointLaws& out) {
  if (x.size() == 0) return;
  rescaled_kernel<<<blocks(x), joint_block>>>(view(x), OuterEntry{view(y)}, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void linear_combination(const JointLaws& x, const detail::JointLinear& f, JointLaws& out) {
  if (x.size() == 0) return;
  rescaled_kernel<<<blocks(x), joint_block>>>(view(x), LinearEntry{f}, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void markov_step(const JointLaws& x, int axis, const Table& t, JointLaws& out) {
  if (x.size() == 0) return;
  rescaled_kernel<<<blocks(x), joint_block>>>(
      view(x), MarkovEntry{axis, t.values.data(), static_cast<std::int64_t>(t.cols)}, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void condition(const JointLaws& x, const detail::JointLikelihood& l, const Column<std::int64_t>& v,
               Column<double>& log_likelihood, JointLaws& out) {
  if (x.size() == 0) return;
  condition_kernel<<<blocks(x), joint_block>>>(view(x), l, v.data(), log_likelihood.data(), mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sample(const JointLaws& x, const Column<double>& uniforms, Column<std::int64_t>& out) {
  if (x.size() == 0) return;
  sample_kernel<<<blocks(x), joint_block>>>(view(x), uniforms.data(), out.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sample_coordinate(const JointLaws& x, int axis, const Column<double>& uniforms, Column<std::int64_t>& value,
                       JointLaws* rest) {
  if (x.size() == 0) return;
  const MutableJointView none{x.rank() - 1, nullptr, nullptr, nullptr, nullptr, nullptr};
  sample_coordinate_kernel<<<blocks(x), joint_block>>>(view(x), axis, uniforms.data(), value.data(),
                                                       rest ? mutable_view(*rest) : none);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::gpu::joint_cuda
