// Private: the host side of the batched joint laws' operations (each law's box, argument checks, output boxes, the
// CPU reference's rescaling), shared by joint_laws.cpp and joint_ops.cpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "child_math.hpp"
#include "joint_math.hpp"
#include "tally/error.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu::detail {

constexpr double minus_inf = -std::numeric_limits<double>::infinity();

/// Law i's box.
inline JointBox box(const JointLaws& x, std::size_t i) {
  const auto k = static_cast<std::size_t>(x.rank());
  return joint_box(x.rank(), x.lo().data() + i * k, x.shape().data() + i * k);
}

inline void check_axis(const JointLaws& x, int axis, const char* who) {
  if (axis < 0 || axis >= x.rank())
    tally::detail::fail<shape_error>(who, ": axis ", axis, " is not one of the ", x.rank(), " axes");
}

/// Every law's values on `axis` are >= 0 (a count), from the host's boxes.
inline void check_counts(const JointLaws& x, int axis, const char* who) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x.lo()[i * static_cast<std::size_t>(x.rank()) + static_cast<std::size_t>(axis)] < 0)
      tally::detail::fail<domain_error>(who, ": law ", i, " has negative values on axis ", axis,
                                        " (a binomial needs a count)");
}

/// Every law's values on `axis` lie in [0, states) (a state of a table or a list), from the host's boxes.
inline void check_states(const JointLaws& x, int axis, std::int64_t states, const char* who) {
  const auto k = static_cast<std::size_t>(x.rank()), a = static_cast<std::size_t>(axis);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t lo = x.lo()[i * k + a], hi = lo + x.shape()[i * k + a] - 1;
    if (lo < 0 || hi >= states)
      tally::detail::fail<domain_error>(who, ": law ", i, " has values ", lo, " .. ", hi, " on axis ", axis,
                                        ", outside the ", states, " states");
  }
}

/// A child of one set per law (ChildKernel::per_set) fits x: sets x per laws, its scalars where the laws are
/// (shape_error otherwise). Returns the states a table child's rows index (each set's K), 0 for a scalar child.
inline std::int64_t check_child_sets(const JointLaws& x, const ChildKernel& child, const char* who) {
  const bool table = child.kind == ChildKernel::Kind::indexed_poisson || child.kind == ChildKernel::Kind::categorical;
  if (child.per == 0) return table ? static_cast<std::int64_t>(child.table.rows) : 0;
  if (child.per * child.sets != x.size())
    tally::detail::fail<shape_error>(who, ": a child per set of ", child.sets, " sets of ", child.per, " laws for ",
                                     x.size(), " laws");
  if (!table && child.q_each.where() != x.where())
    tally::detail::fail<shape_error>(who, ": the sets' scalars are not where the laws are");
  return table ? static_cast<std::int64_t>(child.set_rows) : 0;
}

/// A table child (indexed Poisson, categorical) fits x: its table non-empty and where the laws are (shape_error),
/// every law's values on `axis` among its rows' states (check_child_sets' count; domain_error).
inline void check_table_child(const JointLaws& x, int axis, const ChildKernel& child, std::int64_t states,
                              const char* who) {
  if (child.table.where() != x.where() || child.table.rows == 0)
    tally::detail::fail<shape_error>(who, ": the child's table is empty or not where the laws are");
  check_states(x, axis, states, who);
}

/// The child's view where it lives (law i's own child: view.at(i)).
inline ChildView joint_child_view(const ChildKernel& child) {
  const double* q_each = child.per > 0 && child.q_each.size() > 0 ? child.q_each.data() : nullptr;
  return child_view(child, child.table.values.data(), q_each);
}

/// The output boxes, law by law, from `make` (a JointBox -> JointBox map), as count x rank arrays.
template <class Make>
JointLaws allocate_like(const JointLaws& x, int rank, Make make, const char* who) {
  std::vector<std::int64_t> lo, shape;
  lo.reserve(x.size() * static_cast<std::size_t>(rank));
  shape.reserve(lo.capacity());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox b = make(box(x, i));
    lo.insert(lo.end(), b.lo, b.lo + rank);
    shape.insert(shape.end(), b.shape, b.shape + rank);
  }
  return JointLaws::allocate(x.where(), rank, std::move(lo), std::move(shape), who);
}

/// A child appended to x fits its rank (shape_error past max_joint_rank).
inline void check_appended_rank(const JointLaws& x, const char* who) {
  if (x.rank() + 1 > max_joint_rank)
    tally::detail::fail<shape_error>(who, ": a child of rank ", x.rank(), " would pass rank ", max_joint_rank);
}

/// The laws (allocated, weights unset) of x with Y appended on the window [y_lo_i, y_hi_i] of law i: shape_error for
/// windows of another count or a rank past max_joint_rank, domain_error for a window that is not 0 <= y_lo_i <=
/// y_hi_i (Y a count).
inline JointLaws appended_on_windows(const JointLaws& x, const std::vector<std::int64_t>& y_lo,
                                     const std::vector<std::int64_t>& y_hi, const char* who) {
  check_appended_rank(x, who);
  if (y_lo.size() != x.size() || y_hi.size() != x.size())
    tally::detail::fail<shape_error>(who, ": ", y_lo.size(), " and ", y_hi.size(), " window ends for ", x.size(),
                                     " laws");
  for (std::size_t i = 0; i < x.size(); ++i)
    if (y_lo[i] < 0 || y_hi[i] < y_lo[i])
      tally::detail::fail<domain_error>(who, ": law ", i, "'s window ", y_lo[i], " .. ", y_hi[i], " of a count");
  std::size_t i = 0;
  return allocate_like(
      x, x.rank() + 1,
      [&](const JointBox& b) {
        const JointBox o = append_axis_box(b, y_lo[i], y_hi[i] - y_lo[i] + 1);
        ++i;
        return o;
      },
      who);
}

/// Law i's weights l_e (logarithms, -inf for none) turned into e^{l_e - M}, M the largest; returns M.
inline double exponentiate(double* w, std::int64_t n) {
  double top = minus_inf;
  for (std::int64_t e = 0; e < n; ++e) top = std::max(top, w[e]);
  for (std::int64_t e = 0; e < n; ++e) w[e] = top == minus_inf ? 0.0 : std::exp(w[e] - top);
  return top;
}

struct JointLikelihood;

/// Every law given an observation v_i whose log-likelihood at each entry is l (joint_likelihood.hpp):
/// \f$\pi_i(x) \propto \mu_i(x)\, e^{l(x)}\f$ normalized, \f$\log L_i\f$ added to log_likelihood, the law kept (and
/// -inf added) where the observation is impossible; on the CPU or the device, where x is (joint_ops.cpp). The caller
/// checks the observation's parameters; shape_error for observations or log-likelihoods of another size or place.
JointLaws condition_joint(const JointLaws& x, const JointLikelihood& l, const Column<std::int64_t>& v,
                          Column<double>& log_likelihood, const char* who);

/// out (allocated on x's boxes with Y appended last) from x: \f$\mu'(x, y) = \mu(x)\, e^{l(x, y)}\f$, l = log p(y |
/// x) the likelihood (joint_likelihood.hpp) at y, law i's child its own, each entry formed in logarithms and scaled
/// by the law's largest (joint_add_child's rule), on the CPU or the device. The caller checks the arguments.
void add_into(const JointLaws& x, const JointLikelihood& l, JointLaws& out);

}  // namespace tally::gpu::detail
