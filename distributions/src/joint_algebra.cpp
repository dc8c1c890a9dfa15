// Convolution along an axis, linear combinations of coordinates, Markov steps and the binomial split of joint laws.
#include "tally/distributions/joint_algebra.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "joint_detail.hpp"
#include "tally/distributions/joint_child_laws.hpp"
#include "tally/error.hpp"

namespace tally {

JointPmf add_independent(const JointPmf& d, int axis, const Pmf& y, const Truncation& t) {
  const char* who = "tally::add_independent";
  detail::check_axis(d, axis, who);
  const auto sa = static_cast<std::size_t>(axis);
  Coordinates lo = d.lo(), shape = d.shape();
  lo[sa] = detail::checked_add(d.lo(axis), y.lo(), "tally::add_independent (lower end of the axis)");
  detail::checked_add(d.hi(axis), y.hi(), "tally::add_independent (upper end of the axis)");
  shape[sa] = d.extent(axis) + static_cast<std::int64_t>(y.size()) - 1;
  const std::int64_t total = detail::checked_table_size(shape, t, who);
  const auto stride = detail::strides_of(shape);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(total);
  const Eigen::VectorXd& wy = y.weights();
  // products of weights >= 2^-1000 may underflow only far below flush_fraction of the largest result entry (>= 1)
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    const double v = d.weights()[flat];
    if (v == 0.0) return;
    std::int64_t to = 0;
    for (std::size_t a = 0; a < idx.size(); ++a) to += idx[a] * stride[a];
    for (Eigen::Index j = 0; j < wy.size(); ++j) w[to + j * stride[sa]] += v * wy[j];
  });
  const double e = d.spread_error_bound(), ey = y.error_bound();
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), d.log_scale() + y.log_scale(), e + ey + e * ey);
  return detail::carry_dropped(
      d, r, [&](const JointPmf& x) { return std::optional(add_independent(x, axis, y, t)); }, 1.0 + ey);
}

JointPmf add_independent(const JointPmf& d, int axis, const Pmf& y, const Pmf& y_dropped, double y_rest,
                         const Truncation& t) {
  const char* who = "tally::add_independent";
  if (!(y_rest >= 0.0)) detail::fail<domain_error>(who, ": the rest of the dropped mass ", y_rest, " must be >= 0");
  // exact Y = y + y_dropped + r_y, exact X = d + x + r (x: d's dropped measure, r: its spread): the product less
  // d y is x y + (d + x) y_dropped (located) plus r (y + y_dropped + r_y) + (d + x) r_y (spread; the first call
  // counts r y, d r_y, r r_y and x r_y, the term r y_dropped is added here)
  const JointPmf r0 = add_independent(d, axis, y.with_error_bound(y_rest), t);
  const double y_dropped_ratio = std::exp(y_dropped.log_mass() - y.log_mass());
  const JointPmf r = r0.with_spread_error_bound(r0.spread_error_bound() + d.spread_error_bound() * y_dropped_ratio);
  try {
    const JointPmf whole = d.dropped() ? add_measures(d.with_dropped(std::nullopt), *d.dropped()) : d;
    JointPmf more = add_independent(whole.with_error_bound(0.0), axis, y_dropped.with_error_bound(0.0), t);
    return r.with_dropped(r.dropped() ? add_measures(*r.dropped(), more) : more);
  } catch (const overflow_error&) {
    return r.with_spread_error_bound(r.spread_error_bound() + y_dropped_ratio * (1.0 + d.error_bound()));
  }
}

namespace {
/// The range [lo, hi] of \f$c + \kappa \cdot x\f$ over d's box (each term at its smaller and its larger end), in
/// 128 bits; overflow_error where it leaves int64.
std::pair<detail::int128, detail::int128> form_range(const JointPmf& d, const Coordinates& coefficients,
                                                     std::int64_t constant, const char* who) {
  detail::int128 v_lo = constant, v_hi = constant;
  for (int a = 0; a < d.rank(); ++a) {
    const detail::int128 c = coefficients[static_cast<std::size_t>(a)];
    const detail::int128 p = c * d.lo(a), q = c * d.hi(a);
    v_lo += std::min(p, q);
    v_hi += std::max(p, q);
  }
  if (v_lo < std::numeric_limits<std::int64_t>::min() || v_hi > std::numeric_limits<std::int64_t>::max())
    detail::fail<overflow_error>(who, ": the linear form's range leaves the 64-bit integer range");
  return {v_lo, v_hi};
}
}  // namespace

Pmf linear_form_law(const JointPmf& d, const Coordinates& coefficients, std::int64_t constant, const Truncation& t) {
  const char* who = "tally::linear_form_law";
  const int k = d.rank();
  if (static_cast<int>(coefficients.size()) != k)
    detail::fail<shape_error>(who, ": ", coefficients.size(), " coefficients for a joint law of rank ", k);
  const auto range = form_range(d, coefficients, constant, who);  // (no structured binding: lambdas capture it)
  const detail::int128 v_lo = range.first, v_hi = range.second;
  if (v_hi - v_lo + 1 > t.max_size)
    detail::fail<overflow_error>(who, ": the law needs ", static_cast<double>(v_hi - v_lo + 1),
                                 " entries, more than max_size = ", t.max_size);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(v_hi - v_lo + 1));
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    const double x = d.weights()[flat];
    if (x == 0.0) return;
    detail::int128 v = constant;
    for (std::size_t a = 0; a < idx.size(); ++a)
      v += static_cast<detail::int128>(coefficients[a]) * (d.lo()[a] + idx[a]);
    w[static_cast<Eigen::Index>(v - v_lo)] += x;
  });
  return Pmf(static_cast<std::int64_t>(v_lo), std::move(w), d.log_scale(), d.error_bound());
}

JointPmf linear_combination(const JointPmf& d, const Coordinates& coefficients, std::int64_t constant, int replace,
                            const Truncation& t) {
  const char* who = "tally::linear_combination";
  const int k = d.rank();
  if (static_cast<int>(coefficients.size()) != k)
    detail::fail<shape_error>(who, ": ", coefficients.size(), " coefficients for a joint law of rank ", k);
  if (replace < -1 || replace >= k) detail::fail<shape_error>(who, ": replace = ", replace, " is not in [-1, ", k, ")");
  const auto range = form_range(d, coefficients, constant, who);  // (no structured binding: lambdas capture it)
  const detail::int128 v_lo = range.first, v_hi = range.second;
  Coordinates lo = d.lo(), shape = d.shape();
  const std::size_t target = replace < 0 ? shape.size() : static_cast<std::size_t>(replace);
  if (replace < 0) {
    lo.push_back(0);
    shape.push_back(0);
  }
  lo[target] = static_cast<std::int64_t>(v_lo);
  if (v_hi - v_lo + 1 > t.max_size)
    detail::fail<overflow_error>(who, ": the new axis needs ", static_cast<double>(v_hi - v_lo + 1),
                                 " entries, more than max_size = ", t.max_size);
  shape[target] = static_cast<std::int64_t>(v_hi - v_lo + 1);
  const std::int64_t total = detail::checked_table_size(shape, t, who);
  const auto stride = detail::strides_of(shape);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(total);
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    const double x = d.weights()[flat];
    if (x == 0.0) return;
    detail::int128 v = constant;
    std::int64_t to = 0;
    for (std::size_t a = 0; a < idx.size(); ++a) {
      v += static_cast<detail::int128>(coefficients[a]) * (d.lo()[a] + idx[a]);
      if (a != target) to += idx[a] * stride[a];
    }
    to += static_cast<std::int64_t>(v - v_lo) * stride[target];
    w[to] += x;
  });
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return detail::carry_dropped(d, r, [&](const JointPmf& x) {
    return std::optional(linear_combination(x, coefficients, constant, replace, t));
  });
}

namespace {
Coordinates unit(int k, int a, std::int64_t s) {
  Coordinates c(static_cast<std::size_t>(k), 0);
  c[static_cast<std::size_t>(a)] = s;
  return c;
}
}  // namespace

JointPmf sum_of_coordinates(const JointPmf& d, int a, int b, int replace, const Truncation& t) {
  detail::check_axis(d, a, "tally::sum_of_coordinates");
  detail::check_axis(d, b, "tally::sum_of_coordinates");
  Coordinates c = unit(d.rank(), a, 1);
  c[static_cast<std::size_t>(b)] += 1;
  return linear_combination(d, c, 0, replace, t);
}

JointPmf difference_of_coordinates(const JointPmf& d, int a, int b, int replace, const Truncation& t) {
  detail::check_axis(d, a, "tally::difference_of_coordinates");
  detail::check_axis(d, b, "tally::difference_of_coordinates");
  Coordinates c = unit(d.rank(), a, 1);
  c[static_cast<std::size_t>(b)] -= 1;
  return linear_combination(d, c, 0, replace, t);
}

JointPmf affine(const JointPmf& d, int axis, std::int64_t s, std::int64_t c, const Truncation& t) {
  detail::check_axis(d, axis, "tally::affine(JointPmf)");
  return linear_combination(d, unit(d.rank(), axis, s), c, axis, t);
}

JointPmf markov_step(const JointPmf& d, int axis, const MarkovStep& k, const Truncation& t) {
  const char* who = "tally::markov_step(JointPmf)";
  detail::check_axis(d, axis, who);
  const auto& T = k.transition;
  if (d.lo(axis) < 0 || d.hi(axis) >= T.rows())
    detail::fail<domain_error>(who, ": coordinate ", axis, "'s support [", d.lo(axis), ", ", d.hi(axis),
                               "] is not within the ", T.rows(), " states (rows) of T");
  const auto sa = static_cast<std::size_t>(axis);
  Coordinates lo = d.lo(), shape = d.shape();
  lo[sa] = 0;
  shape[sa] = T.cols();
  const std::int64_t total = detail::checked_table_size(shape, t, who);
  const auto stride = detail::strides_of(shape);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(total);
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    const double x = d.weights()[flat];
    if (x == 0.0) return;
    std::int64_t to = 0;
    for (std::size_t a = 0; a < idx.size(); ++a)
      if (a != sa) to += idx[a] * stride[a];
    const std::int64_t state = d.lo(axis) + idx[sa];
    for (Eigen::Index y = 0; y < T.cols(); ++y) w[to + y * stride[sa]] += x * T(state, y);
  });
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return detail::carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(markov_step(x, axis, k, t)); },
                               T.rowwise().sum().maxCoeff());
}

JointPmf split(const JointPmf& d, int axis, double q, const Truncation& t) {
  const char* who = "tally::split";
  detail::check_axis(d, axis, who);
  detail::check_probability(q, who, "q");
  // (X, Y) with Y | X ~ Binomial(X, q) appended, then X - Y in place of X: a bijection of entries, no rounding
  const JointPmf with_child = add_child(d, axis, Thinning(q), t);
  Coordinates c = unit(with_child.rank(), axis, 1);
  c.back() = -1;
  return linear_combination(with_child, c, 0, axis, t);
}

}  // namespace tally
