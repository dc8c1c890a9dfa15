// Private: the per-entry formulas of the batched joint laws (boxes, strides, coordinates), shared by CPU and CUDA.
#pragma once

#include <math.h>

#include <cstdint>

#include "tally/gpu/joint_laws.hpp"
#include "tally/gpu/philox.hpp"

namespace tally::gpu::detail {

/// Threads a law of the joint kernels (one block per law): a tuning knob, here only.
inline constexpr int joint_block = 256;

/// A law's box: lo, extents and row-major strides of its rank axes; size the product of the extents.
struct JointBox {
  int rank;
  std::int64_t lo[max_joint_rank], shape[max_joint_rank], stride[max_joint_rank];
  std::int64_t size;
};

/// The box of rank axes from lo[0 .. rank) and shape[0 .. rank): stride_{k-1} = 1, stride_a = stride_{a+1}
/// shape_{a+1}.
TALLY_HOST_DEVICE inline JointBox joint_box(int rank, const std::int64_t* lo, const std::int64_t* shape) {
  JointBox b{};
  b.rank = rank;
  std::int64_t s = 1;
  for (int a = rank - 1; a >= 0; --a) {
    b.lo[a] = lo[a];
    b.shape[a] = shape[a];
    b.stride[a] = s;
    s *= shape[a];
  }
  b.size = s;
  return b;
}

/// Coordinate `axis` of entry e of the box: lo_a + floor(e / stride_a) mod shape_a.
TALLY_HOST_DEVICE inline std::int64_t joint_coordinate(const JointBox& b, std::int64_t e, int axis) {
  return b.lo[axis] + (e / b.stride[axis]) % b.shape[axis];
}

/// The split's output box from its input box (see joint_split): axis a becomes 0 .. hi_a, and a last axis 0 .. hi_a
/// is appended.
TALLY_HOST_DEVICE inline JointBox split_box(const JointBox& in, int axis) {
  std::int64_t lo[max_joint_rank], shape[max_joint_rank];
  const std::int64_t hi = in.lo[axis] + in.shape[axis] - 1;
  for (int a = 0; a < in.rank; ++a) {
    lo[a] = a == axis ? 0 : in.lo[a];
    shape[a] = a == axis ? hi + 1 : in.shape[a];
  }
  lo[in.rank] = 0;
  shape[in.rank] = hi + 1;
  return joint_box(in.rank + 1, lo, shape);
}

/// The input entry of split output entry e (coordinates z on `axis` and y last, x = z + y), or -1 where x lies
/// outside the input's axis; y and x are returned for the binomial term.
TALLY_HOST_DEVICE inline std::int64_t split_source(const JointBox& in, const JointBox& out, int axis, std::int64_t e,
                                                   std::int64_t& x, std::int64_t& y) {
  y = joint_coordinate(out, e, out.rank - 1);
  x = joint_coordinate(out, e, axis) + y;
  if (x < in.lo[axis] || x > in.lo[axis] + in.shape[axis] - 1) return -1;
  std::int64_t at = (x - in.lo[axis]) * in.stride[axis];
  for (int a = 0; a < in.rank; ++a)
    if (a != axis) at += (joint_coordinate(out, e, a) - in.lo[a]) * in.stride[a];
  return at;
}

/// The box without `axis` (the later axes move down).
TALLY_HOST_DEVICE inline JointBox sum_out_box(const JointBox& in, int axis) {
  std::int64_t lo[max_joint_rank], shape[max_joint_rank];
  for (int a = 0, b = 0; a < in.rank; ++a)
    if (a != axis) {
      lo[b] = in.lo[a];
      shape[b++] = in.shape[a];
    }
  return joint_box(in.rank - 1, lo, shape);
}

/// The first input entry summed into output entry e of sum_out (the others follow at stride_axis).
TALLY_HOST_DEVICE inline std::int64_t sum_out_first(const JointBox& in, const JointBox& out, int axis, std::int64_t e) {
  std::int64_t at = 0;
  for (int a = 0, b = 0; a < in.rank; ++a)
    if (a != axis) at += (joint_coordinate(out, e, b++) - in.lo[a]) * in.stride[a];
  return at;
}

}  // namespace tally::gpu::detail
