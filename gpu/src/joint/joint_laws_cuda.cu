// The CUDA forms of the batched joint-law operations: one block per law, the entries strided over its threads.
#include <cmath>

#include "cuda_check.cuh"
#include "joint_cuda.hpp"
#include "joint_math.hpp"
#include "population_math.hpp"

namespace tally::gpu::joint_cuda {

namespace {

using detail::joint_block;
using detail::JointBox;

/// Views of a batch of joint laws on the device.
struct JointView {
  int rank;
  const double* weights;
  const double* log_scale;
  const std::int64_t* offset;
  const std::int64_t* lo;
  const std::int64_t* shape;
};
struct MutableJointView {
  int rank;
  double* weights;
  double* log_scale;
  const std::int64_t* offset;
  const std::int64_t* lo;
  const std::int64_t* shape;
};

JointView view(const JointLaws& x) {
  return {x.rank(), x.weights().data(), x.log_scale().data(), x.offset_column().data(), x.lo_column().data(),
          x.shape_column().data()};
}
MutableJointView mutable_view(JointLaws& x) {
  return {x.rank(), x.weights().data(), x.log_scale().data(), x.offset_column().data(), x.lo_column().data(),
          x.shape_column().data()};
}

__device__ JointBox box_of(int rank, const std::int64_t* lo, const std::int64_t* shape, long long i) {
  return detail::joint_box(rank, lo + i * rank, shape + i * rank);
}

/// The largest (max) or the sum (!max) of v over the block; every thread gets it.
template <bool max>
__device__ double block_reduce(double v) {
  __shared__ double partial[joint_block / 32];
  __syncthreads();  // partial may still be read by a previous reduction
  for (int d = 16; d >= 1; d /= 2) {
    const double o = __shfl_xor_sync(0xffffffffu, v, d);
    v = max ? fmax(v, o) : v + o;
  }
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  v = partial[0];
  for (int k = 1; k < joint_block / 32; ++k) v = max ? fmax(v, partial[k]) : v + partial[k];
  return v;
}

/// Law blockIdx.x's logarithms l_e already in o: o_e = e^{l_e - M}; returns M (the block's largest l).
__device__ double exponentiate(double* o, std::int64_t n) {
  double top = -INFINITY;
  for (std::int64_t e = threadIdx.x; e < n; e += joint_block) top = fmax(top, o[e]);
  top = block_reduce<true>(top);
  for (std::int64_t e = threadIdx.x; e < n; e += joint_block) o[e] = top == -INFINITY ? 0.0 : exp(o[e] - top);
  return top;
}

__global__ void __launch_bounds__(joint_block) split_kernel(JointView x, int axis, double q, MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) {
    std::int64_t n = 0, y = 0;
    const std::int64_t at = detail::split_source(in, to, axis, e, n, y);
    o[e] = at >= 0 && w[at] > 0.0 ? log(w[at]) + detail::binomial_log_mass(n, y, q) : -INFINITY;
  }
  const double top = exponentiate(o, to.size);
  if (threadIdx.x == 0) out.log_scale[i] = top == -INFINITY ? -INFINITY : x.log_scale[i] + top;
}

__global__ void __launch_bounds__(joint_block) condition_kernel(JointView x, int axis, double q, const std::int64_t* v,
                                                                double* log_likelihood, MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox b = box_of(x.rank, x.lo, x.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  const double s = x.log_scale[i];
  const std::int64_t vi = v[i];
  for (std::int64_t e = threadIdx.x; e < b.size; e += joint_block)
    o[e] = w[e] > 0.0 ? log(w[e]) + detail::binomial_log_mass(detail::joint_coordinate(b, e, axis), vi, q) : -INFINITY;
  const double top = exponentiate(o, b.size);
  if (top == -INFINITY || s == -INFINITY) {  // impossible here, or no mass before: the law as it was
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

__global__ void __launch_bounds__(joint_block) sum_out_kernel(JointView x, int axis, MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  double top = 0.0;
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) {
    const std::int64_t first = detail::sum_out_first(in, to, axis, e);
    double sum = 0.0;
    for (std::int64_t t = 0; t < in.shape[axis]; ++t) sum += w[first + t * in.stride[axis]];
    top = fmax(top, o[e] = sum);
  }
  top = block_reduce<true>(top);
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) o[e] = top > 0.0 ? o[e] / top : 0.0;
  if (threadIdx.x == 0) out.log_scale[i] = top > 0.0 ? x.log_scale[i] + log(top) : -INFINITY;
}

unsigned blocks(const JointLaws& x) { return static_cast<unsigned>(x.size()); }

}  // namespace

void split(const JointLaws& x, int axis, double q, JointLaws& out) {
  if (x.size() == 0) return;
  split_kernel<<<blocks(x), joint_block>>>(view(x), axis, q, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void condition_on_thinning(const JointLaws& x, int axis, double q, const Column<std::int64_t>& v,
                           Column<double>& log_likelihood, JointLaws& out) {
  if (x.size() == 0) return;
  condition_kernel<<<blocks(x), joint_block>>>(view(x), axis, q, v.data(), log_likelihood.data(), mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sum_out(const JointLaws& x, int axis, JointLaws& out) {
  if (x.size() == 0) return;
  sum_out_kernel<<<blocks(x), joint_block>>>(view(x), axis, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::gpu::joint_cuda
