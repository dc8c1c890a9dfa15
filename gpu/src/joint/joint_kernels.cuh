// Private: the block-level pieces of the joint-law kernels (device views of a batch, block reductions, the
// rescaling of a law's logarithms), shared by joint_laws_cuda.cu and joint_ops_cuda.cu.
#pragma once

#include <cmath>

#include "joint_math.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu::joint_kernels {

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

inline JointView view(const JointLaws& x) {
  return {x.rank(), x.weights().data(), x.log_scale().data(), x.offset_column().data(), x.lo_column().data(),
          x.shape_column().data()};
}
/// A launch's grid: a block per law.
inline unsigned blocks(const JointLaws& x) { return static_cast<unsigned>(x.size()); }

inline MutableJointView mutable_view(JointLaws& x) {
  return {x.rank(), x.weights().data(), x.log_scale().data(), x.offset_column().data(), x.lo_column().data(),
          x.shape_column().data()};
}

__device__ inline JointBox box_of(int rank, const std::int64_t* lo, const std::int64_t* shape, long long i) {
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
__device__ inline double exponentiate(double* o, std::int64_t n) {
  double top = -INFINITY;
  for (std::int64_t e = threadIdx.x; e < n; e += joint_block) top = fmax(top, o[e]);
  top = block_reduce<true>(top);
  for (std::int64_t e = threadIdx.x; e < n; e += joint_block) o[e] = top == -INFINITY ? 0.0 : exp(o[e] - top);
  return top;
}

}  // namespace tally::gpu::joint_kernels
