// The CUDA forms of joint_trim.cpp's operations (gather, trim): one block per law, its entries strided over the
// block's threads.
#include <cmath>

#include "cuda_check.cuh"
#include "joint_cuda.hpp"
#include "joint_kernels.cuh"
#include "joint_math.hpp"

namespace tally::gpu::joint_cuda {

namespace {

using detail::joint_block;
using detail::JointBox;
using detail::trim_lanes;
using namespace joint_kernels;

/// Law blockIdx.x of out: x's law index[j] (its weights at source[j]) copied with its log scale.
__global__ void __launch_bounds__(joint_block) gather_kernel(JointView x, const std::int64_t* source,
                                                             const std::int64_t* index, MutableJointView out) {
  const long long j = blockIdx.x;
  const std::int64_t n = out.offset[j + 1] - out.offset[j];
  const double* w = x.weights + source[j];
  double* o = out.weights + out.offset[j];
  for (std::int64_t e = threadIdx.x; e < n; e += joint_block) o[e] = w[e];
  if (threadIdx.x == 0) out.log_scale[j] = x.log_scale[index[j]];
}

/// joint_trim.cpp's first pass for law blockIdx.x: the marginals (one warp per marginal entry, trim_lanes strided
/// sums combined by the butterfly), the cut points, then the cut mass and the largest kept weight.
__global__ void __launch_bounds__(joint_block) trim_cuts_kernel(JointView x, double tolerance,
                                                                const std::int64_t* marginal_offset, double* marginals,
                                                                std::int64_t* kept_lo, std::int64_t* kept_shape,
                                                                double* sums) {
  const long long i = blockIdx.x;
  const JointBox b = box_of(x.rank, x.lo, x.shape, i);
  const double* w = x.weights + x.offset[i];
  double* m = marginals + marginal_offset[i];
  const int lane = threadIdx.x % trim_lanes, warp = threadIdx.x / trim_lanes, warps = joint_block / trim_lanes;
  std::int64_t pairs = 0;
  for (int a = 0; a < b.rank; ++a) pairs += b.shape[a];
  for (std::int64_t p = warp; p < pairs; p += warps) {
    int a = 0;
    std::int64_t v = p;
    while (v >= b.shape[a]) v -= b.shape[a++];
    const std::int64_t n = b.size / b.shape[a];
    double s = 0.0;
    for (std::int64_t j = lane; j < n; j += trim_lanes) s += w[detail::slab_entry(b, a, v, j)];
    for (int d = trim_lanes / 2; d >= 1; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    if (lane == 0) m[p] = s;
  }
  __syncthreads();
  __shared__ std::int64_t first[max_joint_rank], last[max_joint_rank];
  __shared__ double total;
  if (threadIdx.x < b.rank) {
    double t = 0.0;  // M_i: the sequential sum of axis 0's marginal (every axis thread the same)
    for (std::int64_t v = 0; v < b.shape[0]; ++v) t += m[v];
    std::int64_t at = 0;
    for (int a = 0; a < static_cast<int>(threadIdx.x); ++a) at += b.shape[a];
    const int a = static_cast<int>(threadIdx.x);
    detail::trim_cut_points(m + at, b.shape[a], tolerance * t / (2.0 * b.rank), first[a], last[a]);
    if (a == 0) total = t;
  }
  __syncthreads();
  std::int64_t lo[max_joint_rank], shape[max_joint_rank];
  for (int a = 0; a < b.rank; ++a) {
    lo[a] = b.lo[a] + first[a];
    shape[a] = last[a] - first[a] + 1;
  }
  const JointBox to = detail::joint_box(b.rank, lo, shape);
  double cut = 0.0, top = 0.0;
  for (std::int64_t e = threadIdx.x; e < b.size; e += joint_block) {
    if (detail::inside_box(b, to, e))
      top = fmax(top, w[e]);
    else
      cut += w[e];
  }
  cut = block_reduce<false>(cut);
  top = block_reduce<true>(top);
  if (threadIdx.x == 0) {
    for (int a = 0; a < b.rank; ++a) {
      kept_lo[i * b.rank + a] = lo[a];
      kept_shape[i * b.rank + a] = shape[a];
    }
    sums[3 * i] = total;
    sums[3 * i + 1] = cut;
    sums[3 * i + 2] = top;
  }
}

/// joint_trim.cpp's second pass for law blockIdx.x: the kept box's weights over the largest.
__global__ void __launch_bounds__(joint_block) trim_copy_kernel(JointView x, const double* sums, MutableJointView out) {
  const long long i = blockIdx.x;
  const JointBox in = box_of(x.rank, x.lo, x.shape, i), to = box_of(out.rank, out.lo, out.shape, i);
  const double* w = x.weights + x.offset[i];
  double* o = out.weights + out.offset[i];
  const double top = sums[3 * i + 2];
  for (std::int64_t e = threadIdx.x; e < to.size; e += joint_block)
    o[e] = top > 0.0 ? w[detail::trimmed_source(in, to, e)] / top : 0.0;
  if (threadIdx.x == 0) {
    const double s = x.log_scale[i];
    out.log_scale[i] = top > 0.0 && s > -INFINITY ? s + log(top) : -INFINITY;
  }
}

}  // namespace

void gather(const JointLaws& x, const Column<std::int64_t>& source, const Column<std::int64_t>& index,
            JointLaws& out) {
  if (out.size() == 0) return;
  gather_kernel<<<blocks(out), joint_block>>>(view(x), source.data(), index.data(), mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void trim_cuts(const JointLaws& x, double tolerance, const Column<std::int64_t>& marginal_offset,
               Column<double>& marginals, Column<std::int64_t>& kept_lo, Column<std::int64_t>& kept_shape,
               Column<double>& sums) {
  if (x.size() == 0) return;
  trim_cuts_kernel<<<blocks(x), joint_block>>>(view(x), tolerance, marginal_offset.data(), marginals.data(),
                                               kept_lo.data(), kept_shape.data(), sums.data());
  TALLY_CUDA_CHECK(cudaGetLastError());
}

void trim_copy(const JointLaws& x, const Column<double>& sums, JointLaws& out) {
  if (x.size() == 0) return;
  trim_copy_kernel<<<blocks(x), joint_block>>>(view(x), sums.data(), mutable_view(out));
  TALLY_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tally::gpu::joint_cuda
