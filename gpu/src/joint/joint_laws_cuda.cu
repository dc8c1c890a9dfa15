// The CUDA forms of the batched joint-law operations of joint_laws.cpp (split, appended child, sum out): one block
// per law, the entries strided over its threads.
#include <cmath>

#include "cuda_check.cuh"
#include "joint_cuda.hpp"
#include "joint_kernels.cuh"
#include "joint_likelihood.hpp"
#include "joint_math.hpp"
#include "population_math.hpp"

namespace tally::gpu::joint_cuda {

namespace {

using detail::joint_block;
using detail::JointBox;
using namespace joint_kernels;

/// joint_laws.cpp's joint_split: law i's thinning probability from its own child (one per set, or one for all).
__global__ void __launch_bounds__(joint_block) split_kernel(JointView x, int axis, detail::ChildView thinning,
                                                            MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  const double q = thinning.at(i).q;
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) {
    std::int64_t n = 0, y = 0;
    const std::int64_t at = detail::split_source(in, to, axis, e, n, y);
    o[e] = at >= 0 && w[at] > 0.0 ? log(w[at]) + detail::binomial_log_mass(n, y, q) : -INFINITY;
  }
  const double top = exponentiate(o, to.size);
  if (threadIdx.x == 0) out.log_scale[i] = top == -INFINITY ? -INFINITY : x.log_scale[i] + top;
}

/// joint_laws.cpp's add_into: log w + log p(y | x) at each entry of the box with Y appended, exponentiated.
__global__ void __launch_bounds__(joint_block) add_kernel(JointView x, detail::JointLikelihood l,
                                                          MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  detail::JointLikelihood li = l;  // law i's own child where there is one per set
  li.child = l.child.at(i);
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block) {
    const std::int64_t at = detail::appended_source(in, to, e), y = detail::joint_coordinate(to, e, in.rank);
    o[e] = w[at] > 0.0 ? log(w[at]) + detail::joint_log_likelihood(li, in, at, y) : -INFINITY;
  }
  const double top = exponentiate(o, to.size);
  if (threadIdx.x == 0) out.log_scale[i] = top == -INFINITY ? -INFINITY : x.log_scale[i] + top;
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

}  // namespace

void split(const JointLaws& x, int axis, const detail::ChildView& thinning, JointLaws& out) {
  if (x.size() == 0) return;
  split_kernel<<<blocks(x), joint_block>>>(view(x), axis, thinning, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void add(const JointLaws& x, const detail::JointLikelihood& l, JointLaws& out) {
  if (x.size() == 0) return;
  add_kernel<<<blocks(x), joint_block>>>(view(x), l, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void sum_out(const JointLaws& x, int axis, JointLaws& out) {
  if (x.size() == 0) return;
  sum_out_kernel<<<blocks(x), joint_block>>>(view(x), axis, mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::gpu::joint_cuda
