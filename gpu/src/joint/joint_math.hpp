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

/// The coordinates of entry e of the box, x[0 .. rank).
TALLY_HOST_DEVICE inline void joint_coordinates(const JointBox& b, std::int64_t e, std::int64_t* x) {
  for (int a = 0; a < b.rank; ++a) x[a] = joint_coordinate(b, e, a);
}

/// The box with axis `axis` spanning [lo, lo + shape - 1] instead.
TALLY_HOST_DEVICE inline JointBox replace_axis_box(const JointBox& in, int axis, std::int64_t lo, std::int64_t shape) {
  std::int64_t l[max_joint_rank], s[max_joint_rank];
  for (int a = 0; a < in.rank; ++a) {
    l[a] = a == axis ? lo : in.lo[a];
    s[a] = a == axis ? shape : in.shape[a];
  }
  return joint_box(in.rank, l, s);
}

/// The box with an axis [lo, lo + shape - 1] appended.
TALLY_HOST_DEVICE inline JointBox append_axis_box(const JointBox& in, std::int64_t lo, std::int64_t shape) {
  std::int64_t l[max_joint_rank], s[max_joint_rank];
  for (int a = 0; a < in.rank; ++a) {
    l[a] = in.lo[a];
    s[a] = in.shape[a];
  }
  l[in.rank] = lo;
  s[in.rank] = shape;
  return joint_box(in.rank + 1, l, s);
}

/// The input entry of entry e of a box with one axis appended to the input's (the first in.rank axes are the
/// input's): \f$\sum_{a < k} (x_a - lo_a)\, \mathrm{stride}_a\f$.
TALLY_HOST_DEVICE inline std::int64_t appended_source(const JointBox& in, const JointBox& out, std::int64_t e) {
  std::int64_t at = 0;
  for (int a = 0; a < in.rank; ++a) at += (joint_coordinate(out, e, a) - in.lo[a]) * in.stride[a];
  return at;
}

/// A linear combination \f$V = c + \sum_a \kappa_a X_a\f$ of a law's coordinates, and where V goes: in place of axis
/// `replace` (X_replace summed out), or appended (replace = -1).
struct JointLinear {
  std::int64_t coefficient[max_joint_rank];
  std::int64_t constant;
  int replace;
};

/// V's range over the box: \f$c + \sum_a \min / \max(\kappa_a lo_a, \kappa_a hi_a)\f$.
TALLY_HOST_DEVICE inline void linear_range(const JointLinear& f, const JointBox& b, std::int64_t& lo, std::int64_t& hi) {
  lo = hi = f.constant;
  for (int a = 0; a < b.rank; ++a) {
    const std::int64_t p = f.coefficient[a] * b.lo[a], q = f.coefficient[a] * (b.lo[a] + b.shape[a] - 1);
    lo += p < q ? p : q;
    hi += p < q ? q : p;
  }
}

/// The output box of a linear combination: V's range in place of axis f.replace, or appended.
TALLY_HOST_DEVICE inline JointBox linear_box(const JointLinear& f, const JointBox& in) {
  std::int64_t lo = 0, hi = 0;
  linear_range(f, in, lo, hi);
  return f.replace >= 0 ? replace_axis_box(in, f.replace, lo, hi - lo + 1) : append_axis_box(in, lo, hi - lo + 1);
}

// The entry formulas below read the coordinates they need one at a time (joint_coordinate) and keep no array of
// coordinates: with an array of them indexed at run time, nvcc 13 (sm_90) computed wrong coordinates for the
// entries past a block's first round of the strided loops that call these.

/// \f$c + \kappa \cdot x\f$ at entry e of the box (the caller checked on the host that it fits in int64).
TALLY_HOST_DEVICE inline std::int64_t linear_value(const JointLinear& f, const JointBox& b, std::int64_t e) {
  std::int64_t v = f.constant;
  for (int a = 0; a < b.rank; ++a) v += f.coefficient[a] * joint_coordinate(b, e, a);
  return v;
}

/// Output entry e of a linear combination: \f$\sum_{x_r} w(x)\,[v = c + \kappa \cdot x]\f$ over the replaced axis r
/// in increasing x_r (one term when V is appended), the input weights w in the input box.
TALLY_HOST_DEVICE inline double linear_entry(const JointLinear& f, const JointBox& in, const JointBox& out,
                                             const double* w, std::int64_t e) {
  const int r = f.replace;
  const std::int64_t v = joint_coordinate(out, e, r >= 0 ? r : in.rank);
  std::int64_t at = 0, rest = f.constant;  // the other axes' offset in the input, and c + their part of kappa . x
  for (int a = 0; a < in.rank; ++a) {
    if (a == r) continue;
    const std::int64_t x = joint_coordinate(out, e, a);
    at += (x - in.lo[a]) * in.stride[a];
    rest += f.coefficient[a] * x;
  }
  if (r < 0) return rest == v ? w[at] : 0.0;
  double sum = 0.0;
  for (std::int64_t t = 0; t < in.shape[r]; ++t)
    if (rest + f.coefficient[r] * (in.lo[r] + t) == v) sum += w[at + t * in.stride[r]];
  return sum;
}

/// The input offset of output entry e over every axis but `axis` (the output box equals the input's there).
TALLY_HOST_DEVICE inline std::int64_t offset_but(const JointBox& in, const JointBox& out, int axis, std::int64_t e) {
  std::int64_t at = 0;
  for (int a = 0; a < in.rank; ++a)
    if (a != axis) at += (joint_coordinate(out, e, a) - in.lo[a]) * in.stride[a];
  return at;
}

/// Output entry e of the convolution along `axis` with a 1-D law (weights u on ulo, ulo + 1, ...):
/// \f$\sum_j w(\dots, z - j, \dots)\, u_j\f$ over the j that keep z - j inside the input's axis, in increasing j.
TALLY_HOST_DEVICE inline double add_entry(const JointBox& in, const JointBox& out, int axis, const double* w,
                                          const double* u, std::int64_t ulo, std::int64_t un, std::int64_t e) {
  const std::int64_t z = joint_coordinate(out, e, axis), hi = in.lo[axis] + in.shape[axis] - 1;
  const std::int64_t j0 = z - hi > ulo ? z - hi : ulo, j1 = z - in.lo[axis] < ulo + un - 1 ? z - in.lo[axis] : ulo + un - 1;
  const std::int64_t first = offset_but(in, out, axis, e) + (z - j0 - in.lo[axis]) * in.stride[axis];
  const std::int64_t step = in.stride[axis];
  double sum = 0.0;
  for (std::int64_t j = j0; j <= j1; ++j) sum += w[first - (j - j0) * step] * u[j - ulo];
  return sum;
}

/// Output entry e of the outer product with a law of n weights u (x's axes first): w_{floor(e / n)} u_{e mod n}.
TALLY_HOST_DEVICE inline double outer_entry(const double* w, const double* u, std::int64_t n, std::int64_t e) {
  return w[e / n] * u[e % n];
}

/// Output entry e of a Markov step of `axis` (input values k on that axis, the K x C row-major table t):
/// \f$\sum_k w(\dots, k, \dots)\, T_{k y}\f$ in increasing k, y the output's value on the axis.
TALLY_HOST_DEVICE inline double markov_entry(const JointBox& in, const JointBox& out, int axis, const double* w,
                                             const double* t, std::int64_t cols, std::int64_t e) {
  const std::int64_t y = joint_coordinate(out, e, axis), first = offset_but(in, out, axis, e);
  double sum = 0.0;
  for (std::int64_t k = 0; k < in.shape[axis]; ++k)
    sum += w[first + k * in.stride[axis]] * t[(in.lo[axis] + k) * cols + y];
  return sum;
}

/// Entry j of the marginal of `axis` (its value lo_axis + j): \f$m_j = \sum_{x_{-a}} w(x_{-a}, x_a = lo_a + j)\f$, a
/// sequential sum in the row-major order of the other axes (rest: the box without `axis`, sum_out_box), the same
/// on one core and on the device.
TALLY_HOST_DEVICE inline double marginal_entry(const JointBox& in, const JointBox& rest, int axis, const double* w,
                                               std::int64_t j) {
  double sum = 0.0;
  for (std::int64_t e = 0; e < rest.size; ++e) sum += w[sum_out_first(in, rest, axis, e) + j * in.stride[axis]];
  return sum;
}

/// \f$\log \mathrm{Poisson}(v;\, a\, x_{r_s})\f$ with s = x_state: the selected Poisson emission's log-likelihood
/// at entry x (-inf for a state without a rate axis: the host checked the boxes).
struct SelectedPoisson {
  int state_axis;
  int rate_axes[max_joint_rank];
  int rates;
  double scale;
};

/// Inverse-cdf draw of a law's entry by the joint laws' rule, the same on one core and on the device: the n weights
/// are cut into joint_block chunks of ceil(n / joint_block) entries; chunk t's sum S_t is a sequential sum, its start
/// B_t = S_0 + ... + S_{t-1} a sequential sum, the total B_{joint_block}; with target = u total, chunk t's candidate is
/// its first entry e whose B_t + (w_{first} + ... + w_e) (sequential) exceeds the target, and the draw is the smallest
/// candidate over the chunks (a positive weight: see joint_sample), or the last positive weight when none (u total
/// rounded up to total).
TALLY_HOST_DEVICE inline std::int64_t sample_chunk(std::int64_t n) { return (n + joint_block - 1) / joint_block; }

// ---- trimming (joint_trim) --------------------------------------------------------------------------------------
/// Partial sums of a marginal entry: 32, as a warp's lanes.
inline constexpr int trim_lanes = 32;

/// Entry j (0 <= j < size / shape_axis) of the slab x_axis = lo_axis + v of box b: with the stride s = stride_axis,
/// the outer index j / s (each spanning shape_axis s entries) and the inner j mod s.
TALLY_HOST_DEVICE inline std::int64_t slab_entry(const JointBox& b, int axis, std::int64_t v, std::int64_t j) {
  const std::int64_t s = b.stride[axis];
  return (j / s) * (b.shape[axis] * s) + v * s + j % s;
}

/// From each end of the n marginal entries m, the values whose running sum stays at most budget: first, last are the
/// kept ones (first <= last: never the last value), tally::truncate's cut_tails.
TALLY_HOST_DEVICE inline void trim_cut_points(const double* m, std::int64_t n, double budget, std::int64_t& first,
                                              std::int64_t& last) {
  std::int64_t lo = 0, hi = n - 1;
  double acc = 0.0;
  while (lo < hi && acc + m[lo] <= budget) acc += m[lo++];
  acc = 0.0;
  while (hi > lo && acc + m[hi] <= budget) acc += m[hi--];
  first = lo;
  last = hi;
}

/// Whether entry e of box `in` lies inside the box `to`.
TALLY_HOST_DEVICE inline bool inside_box(const JointBox& in, const JointBox& to, std::int64_t e) {
  for (int a = 0; a < in.rank; ++a) {
    const std::int64_t c = joint_coordinate(in, e, a);
    if (c < to.lo[a] || c >= to.lo[a] + to.shape[a]) return false;
  }
  return true;
}

/// Input entry of entry e of the kept box `to` inside the box `in` (to's corner at or above in's).
TALLY_HOST_DEVICE inline std::int64_t trimmed_source(const JointBox& in, const JointBox& to, std::int64_t e) {
  std::int64_t at = 0;
  for (int a = 0; a < in.rank; ++a) at += (to.lo[a] - in.lo[a] + (e / to.stride[a]) % to.shape[a]) * in.stride[a];
  return at;
}

}  // namespace tally::gpu::detail
