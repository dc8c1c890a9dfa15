// Children of joint coordinates: their log-likelihoods over the box, and adding a child as a new axis.
#include "tally/distributions/joint_child_laws.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "joint_child.hpp"
#include "joint_detail.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally {

SelectedThinning::SelectedThinning(int count_axis_, int state_axis_, Eigen::VectorXd keep_)
    : count_axis(count_axis_), state_axis(state_axis_), keep(std::move(keep_)) {
  if (keep.size() == 0) detail::fail<shape_error>("tally::SelectedThinning: no keep probabilities");
  for (double q : keep) detail::check_probability(q, "tally::SelectedThinning", "keep probability q_s");
}

SelectedScaledPoisson::SelectedScaledPoisson(int state_axis_, std::vector<int> rate_axes_, double scale_)
    : state_axis(state_axis_), rate_axes(std::move(rate_axes_)), scale(scale_) {
  if (rate_axes.empty()) detail::fail<shape_error>("tally::SelectedScaledPoisson: no rate axes");
  detail::check_nonnegative(scale, "tally::SelectedScaledPoisson", "rate scale a");
}

namespace detail {
namespace {

void require_count_axis(const JointPmf& d, int axis, const char* who) {
  check_axis(d, axis, who);
  if (d.lo(axis) < 0)
    fail<domain_error>(who, ": coordinate ", axis, " must be a count >= 0, but its support starts at ", d.lo(axis));
}

void require_state_axis(const JointPmf& d, int axis, std::int64_t states, const char* who) {
  check_axis(d, axis, who);
  if (d.lo(axis) < 0 || d.hi(axis) >= states)
    fail<domain_error>(who, ": coordinate ", axis, "'s support [", d.lo(axis), ", ", d.hi(axis), "] is not within the ",
                       states, " states");
}
}  // namespace

ChildLaw child_law(const JointPmf& d, int axis, const Thinning& k, const char* who) {
  require_count_axis(d, axis, who);
  const auto a = static_cast<std::size_t>(axis);
  const double q = k.keep;
  ChildLaw law;
  law.y_hi = d.hi(axis);
  law.log_lik = [a, q](const Coordinates& x, std::int64_t y) { return log_binomial_pmf(x[a], y, q); };
  return law;
}

ChildLaw child_law(const JointPmf& d, int axis, const ScaledPoisson& k, const char* who) {
  require_count_axis(d, axis, who);
  const auto a = static_cast<std::size_t>(axis);
  const double s = k.scale;
  ChildLaw law;
  law.poisson = true;
  law.rate = [a, s](const Coordinates& x) { return s * static_cast<double>(x[a]); };
  return law;
}

ChildLaw child_law(const JointPmf& d, int axis, const IndexedPoisson& k, const char* who) {
  require_state_axis(d, axis, k.rates.size(), who);
  const auto a = static_cast<std::size_t>(axis);
  ChildLaw law;
  law.poisson = true;
  law.rate = [a, rates = k.rates](const Coordinates& x) { return rates[x[a]]; };
  return law;
}

ChildLaw child_law(const JointPmf& d, int axis, const MarkovStep& k, const char* who) {
  require_state_axis(d, axis, k.transition.rows(), who);
  const auto a = static_cast<std::size_t>(axis);
  ChildLaw law;
  law.y_hi = k.transition.cols() - 1;
  law.log_lik = [a, T = k.transition](const Coordinates& x, std::int64_t y) {
    return y < 0 || y >= T.cols() ? neg_inf : std::log(T(x[a], y));
  };
  return law;
}

ChildLaw child_law(const JointPmf& d, const SelectedThinning& k, const char* who) {
  require_count_axis(d, k.count_axis, who);
  require_state_axis(d, k.state_axis, k.keep.size(), who);
  const auto c = static_cast<std::size_t>(k.count_axis), s = static_cast<std::size_t>(k.state_axis);
  ChildLaw law;
  law.y_hi = d.hi(k.count_axis);
  law.log_lik = [c, s, q = k.keep](const Coordinates& x, std::int64_t y) { return log_binomial_pmf(x[c], y, q[x[s]]); };
  return law;
}

ChildLaw child_law(const JointPmf& d, const SelectedScaledPoisson& k, const char* who) {
  const auto states = static_cast<std::int64_t>(k.rate_axes.size());
  require_state_axis(d, k.state_axis, states, who);
  for (int r : k.rate_axes) require_count_axis(d, r, who);
  const auto s = static_cast<std::size_t>(k.state_axis);
  ChildLaw law;
  law.poisson = true;
  law.rate = [s, axes = k.rate_axes, scale = k.scale](const Coordinates& x) {
    return scale * static_cast<double>(x[static_cast<std::size_t>(axes[static_cast<std::size_t>(x[s])])]);
  };
  return law;
}

}  // namespace detail

namespace {

/// The joint (X, Y) for a child law: log entries log w(x) + log P(y | x), exponentiated relative to their largest.
JointPmf append_child(const JointPmf& d, detail::ChildLaw law, const Truncation& t, const char* who) {
  Coordinates values(d.lo());
  const auto k = d.lo().size();
  const auto values_at = [&](const Coordinates& idx) -> const Coordinates& {
    for (std::size_t a = 0; a < k; ++a) values[a] = d.lo()[a] + idx[a];
    return values;
  };
  double added_error = 0.0;  // relative to d's mass, so also to the result's (a child's law has mass 1)
  if (law.poisson) {
    double lo_rate = std::numeric_limits<double>::infinity(), hi_rate = 0.0;
    detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
      if (d.weights()[flat] == 0.0) return;
      const double r = law.rate(values_at(idx));
      lo_rate = std::min(lo_rate, r);
      hi_rate = std::max(hi_rate, r);
    });
    law.y_lo = hi_rate == 0.0 ? 0 : to_pmf(Poisson(lo_rate), t).lo();
    law.y_hi = hi_rate == 0.0 ? 0 : to_pmf(Poisson(hi_rate), t).hi();
    if (hi_rate > 0.0) added_error = t.tolerance / (1.0 - t.tolerance) * (1.0 + d.error_bound());
    law.log_lik = [rate = law.rate](const Coordinates& x, std::int64_t y) { return log_poisson_pmf(y, rate(x)); };
  }
  Coordinates lo = d.lo(), shape = d.shape();
  lo.push_back(law.y_lo);
  shape.push_back(law.y_hi - law.y_lo + 1);
  const std::int64_t total = detail::checked_table_size(shape, t, who);
  const std::int64_t ny = shape.back();
  // log-likelihoods first, then each entry w_x P(y | x) as w_x exp(ll - top) with top = max (log w_x + ll): no
  // entry overflows, none that is kept underflows, and w_x goes through no logarithm (see joint_condition.cpp)
  Eigen::VectorXd ll(total);
  double top = -std::numeric_limits<double>::infinity();
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    const double w = d.weights()[flat];
    const Eigen::Index base = flat * ny;
    if (w == 0.0) {
      ll.segment(base, ny).setConstant(-std::numeric_limits<double>::infinity());
      return;
    }
    const double log_w = std::log(w);
    const Coordinates& x = values_at(idx);
    for (std::int64_t j = 0; j < ny; ++j) {
      ll[base + j] = law.log_lik(x, law.y_lo + j);
      top = std::max(top, log_w + ll[base + j]);
    }
  });
  if (top == -std::numeric_limits<double>::infinity())
    detail::fail<domain_error>(who, ": the child has no possible value on the parent's support");
  Eigen::VectorXd v(total);
  for (Eigen::Index flat = 0; flat < d.size(); ++flat) {
    const double w = d.weights()[flat];
    for (std::int64_t j = 0; j < ny; ++j) {
      const Eigen::Index i = flat * ny + j;
      v[i] = w > 0.0 ? w * std::exp(ll[i] - top) : 0.0;
    }
  }
  const JointPmf r(std::move(lo), std::move(shape), std::move(v), d.log_scale() + top,
                   d.spread_error_bound() + added_error);
  return r;
}

/// make(x) appends the child to x (its law formed for x's box); d's dropped measure goes through the same.
template <class Make>
JointPmf with_child(const JointPmf& d, Make make) {
  return detail::carry_dropped(d, make(d), [&](const JointPmf& x) -> std::optional<JointPmf> {
    try {
      return make(x);
    } catch (const domain_error&) {  // the child has no possible value on the dropped measure's support
      return std::nullopt;
    }
  });
}

}  // namespace

JointPmf add_child(const JointPmf& d, int axis, const Thinning& k, const Truncation& t) {
  const char* who = "tally::add_child(Thinning)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, axis, k, who), t, who); });
}
JointPmf add_child(const JointPmf& d, int axis, const ScaledPoisson& k, const Truncation& t) {
  const char* who = "tally::add_child(ScaledPoisson)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, axis, k, who), t, who); });
}
JointPmf add_child(const JointPmf& d, int axis, const IndexedPoisson& k, const Truncation& t) {
  const char* who = "tally::add_child(IndexedPoisson)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, axis, k, who), t, who); });
}
JointPmf add_child(const JointPmf& d, int axis, const MarkovStep& k, const Truncation& t) {
  const char* who = "tally::add_child(MarkovStep)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, axis, k, who), t, who); });
}
JointPmf add_child(const JointPmf& d, const SelectedThinning& k, const Truncation& t) {
  const char* who = "tally::add_child(SelectedThinning)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, k, who), t, who); });
}
JointPmf add_child(const JointPmf& d, const SelectedScaledPoisson& k, const Truncation& t) {
  const char* who = "tally::add_child(SelectedScaledPoisson)";
  return with_child(d, [&](const JointPmf& x) { return append_child(x, detail::child_law(x, k, who), t, who); });
}

}  // namespace tally
