// Conditioning joint laws on observed children and linear combinations of coordinates; sampling from them.
#include "tally/distributions/joint_condition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "joint_child.hpp"
#include "joint_detail.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally {
namespace {


JointConditioned impossible_joint(double error_bound) { return {std::nullopt, neg_inf, error_bound > 0.0 ? inf : 0.0}; }

/// Posterior proportional to d times a likelihood at most 1, given as log-likelihoods per entry (-inf allowed).
/// With top = max_x (log w_x + ll_x), each entry is w_x exp(ll_x - top): at most 1, never overflowing (ll_x - top
/// <= -log w_x <= 1000 log 2), and an entry kept (>= 2^-1000) never underflows; its only rounding is that of
/// exp at ll_x - top, so the weight w_x itself goes through no logarithm (an indicator likelihood leaves it exact).
JointConditioned reweight(const JointPmf& d, const Eigen::VectorXd& log_lik) {
  const auto& w = d.weights();
  double top = neg_inf;
  for (Eigen::Index i = 0; i < w.size(); ++i)
    if (w[i] > 0.0) top = std::max(top, std::log(w[i]) + log_lik[i]);
  if (top == neg_inf) return impossible_joint(d.error_bound());
  Eigen::VectorXd v(w.size());
  for (Eigen::Index i = 0; i < w.size(); ++i) v[i] = w[i] > 0.0 ? w[i] * std::exp(log_lik[i] - top) : 0.0;
  const double log_l = d.log_scale() + top + std::log(v.sum());
  // |L - L'| <= e M (each likelihood is at most 1), so rho = e M / L' (e: the spread part; the dropped measure is
  // weighed by its own likelihood in conditioned())
  const double e = d.spread_error_bound();
  const double rho = e == 0.0 ? 0.0 : std::exp(std::log(e) + d.log_mass() - log_l);
  const double log_error = rho < 1.0 ? -std::log1p(-rho) : inf;
  JointPmf posterior(d.lo(), d.shape(), std::move(v), 0.0, std::min(2.0, 2.0 * rho));
  return {posterior.normalized(), log_l, log_error, 0.0, rho};
}

/// cond(x) conditions x (its likelihood computed over x's own box): on d, then on d's dropped measure, which is
/// weighed by its own likelihood and becomes the posterior's dropped measure (see JointConditioned).
template <class Cond>
JointConditioned conditioned(const JointPmf& d, Cond cond) {
  JointConditioned c = cond(d);
  const JointPmf* x = d.dropped();
  if (!c.posterior || x == nullptr) return c;
  const JointConditioned cx = cond(*x);
  if (!cx.posterior) return c;  // no dropped mass where the observation is possible
  const double log_located = cx.log_likelihood - c.log_likelihood;
  const double located = std::exp(log_located), rho = located + c.spread_error;
  c.located_error = located;
  if (!(rho < 1.0)) {
    c.log_likelihood_error = inf;
    c.posterior = c.posterior->with_error_bound(2.0);
    return c;
  }
  c.log_likelihood_error = -std::log1p(-rho);
  // the dropped measure times l / L, in the posterior's units (its mass relative to the posterior's: located)
  const JointPmf& px = *cx.posterior;
  const JointPmf moved(px.lo(), px.shape(), px.weights(), px.log_scale() + log_located + c.posterior->log_scale() +
                                                              std::log(c.posterior->weights().sum()));
  // the normalized exact posterior is k (posterior + moved + r l / L) with |k - 1| <= rho / (1 - rho), so the rest
  // beyond posterior + moved is at most (rho (1 + rho) + spread) / (1 - rho)
  c.posterior = c.posterior->with_spread_error_bound(std::min(2.0, (rho * (1.0 + rho) + c.spread_error) / (1.0 - rho)))
                    .with_dropped(moved);
  return c;
}

JointConditioned condition_child_here(const JointPmf& d, const detail::ChildLaw& law, std::int64_t y) {
  Coordinates values(d.lo());
  std::unordered_map<double, double> poisson_log_pmf;
  const auto k = values.size();
  Eigen::VectorXd ll(d.size());
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    if (d.weights()[flat] == 0.0) {
      ll[flat] = neg_inf;
      return;
    }
    for (std::size_t a = 0; a < k; ++a) values[a] = d.lo()[a] + idx[a];
    if (!law.poisson) {
      ll[flat] = law.log_lik(values, y);
      return;
    }
    // a Poisson child's rate takes few values over the box (one per value of the coordinates it reads): each
    // log-pmf is computed once
    const double rate = law.rate(values);
    const auto [it, fresh] = poisson_log_pmf.try_emplace(rate, 0.0);
    if (fresh) it->second = log_poisson_pmf(y, rate);
    ll[flat] = it->second;
  });
  return reweight(d, ll);
}

/// make_law(x) forms the child's law for x's box.
template <class MakeLaw>
JointConditioned condition_child(const JointPmf& d, MakeLaw make_law, std::int64_t y) {
  return conditioned(d, [&](const JointPmf& x) { return condition_child_here(x, make_law(x), y); });
}

}  // namespace

JointConditioned condition(const JointPmf& d, int axis, const Thinning& k, std::int64_t y) {
  detail::child_law(d, axis, k, "tally::condition(JointPmf, Thinning)");  // checks the parents
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, axis, k, "tally::condition(JointPmf, Thinning)"); }, y);
}
JointConditioned condition(const JointPmf& d, int axis, const ScaledPoisson& k, std::int64_t y) {
  detail::child_law(d, axis, k, "tally::condition(JointPmf, ScaledPoisson)");  // checks the parents
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, axis, k, "tally::condition(JointPmf, ScaledPoisson)"); }, y);
}
JointConditioned condition(const JointPmf& d, int axis, const IndexedPoisson& k, std::int64_t y) {
  detail::child_law(d, axis, k, "tally::condition(JointPmf, IndexedPoisson)");  // checks the parents
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, axis, k, "tally::condition(JointPmf, IndexedPoisson)"); }, y);
}
JointConditioned condition(const JointPmf& d, int axis, const MarkovStep& k, std::int64_t y) {
  detail::child_law(d, axis, k, "tally::condition(JointPmf, MarkovStep)");  // checks the states
  if (y < 0 || y >= k.transition.cols()) return impossible_joint(0.0);  // no row of T reaches y
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, axis, k, "tally::condition(JointPmf, MarkovStep)"); }, y);
}
JointConditioned condition(const JointPmf& d, const SelectedThinning& k, std::int64_t y) {
  detail::child_law(d, k, "tally::condition(JointPmf, SelectedThinning)");  // checks the parents
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, k, "tally::condition(JointPmf, SelectedThinning)"); }, y);
}
JointConditioned condition(const JointPmf& d, const SelectedScaledPoisson& k, std::int64_t y) {
  detail::child_law(d, k, "tally::condition(JointPmf, SelectedScaledPoisson)");  // checks the parents
  return condition_child(d, [&](const JointPmf& x) { return detail::child_law(x, k, "tally::condition(JointPmf, SelectedScaledPoisson)"); }, y);
}

JointConditioned condition_on_linear(const JointPmf& d, const Coordinates& coefficients, std::int64_t z) {
  const int k = d.rank();
  if (static_cast<int>(coefficients.size()) != k)
    detail::fail<shape_error>("tally::condition_on_linear: ", coefficients.size(), " coefficients for a joint law of rank ", k);
  return conditioned(d, [&](const JointPmf& x) {
    Eigen::VectorXd ll(x.size());
    detail::for_each_index(x.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
      detail::int128 v = 0;
      for (std::size_t a = 0; a < idx.size(); ++a) v += static_cast<detail::int128>(coefficients[a]) * (x.lo()[a] + idx[a]);
      ll[flat] = v == z ? 0.0 : neg_inf;
    });
    return reweight(x, ll);
  });
}

JointConditioned condition_on_sum(const JointPmf& d, const std::vector<int>& axes, std::int64_t z) {
  Coordinates c(static_cast<std::size_t>(d.rank()), 0);
  for (int a : axes) {
    detail::check_axis(d, a, "tally::condition_on_sum(JointPmf)");
    c[static_cast<std::size_t>(a)] += 1;
  }
  return condition_on_linear(d, c, z);
}

JointConditioned condition_on_difference(const JointPmf& d, int a, int b, std::int64_t v) {
  detail::check_axis(d, a, "tally::condition_on_difference(JointPmf)");
  detail::check_axis(d, b, "tally::condition_on_difference(JointPmf)");
  Coordinates c(static_cast<std::size_t>(d.rank()), 0);
  c[static_cast<std::size_t>(a)] += 1;
  c[static_cast<std::size_t>(b)] -= 1;
  return condition_on_linear(d, c, v);
}

JointConditioned condition_on_value(const JointPmf& d, int axis, std::int64_t v) {
  return condition_on_sum(d, {axis}, v);
}

Coordinates sample(const JointPmf& d, RandomStream& rng) {
  const double u = rng.uniform();
  const auto& w = d.weights();
  std::vector<double> cum(static_cast<std::size_t>(w.size()));
  std::partial_sum(w.begin(), w.end(), cum.begin());
  // the search of sample(const Pmf&): the first cumulative weight >= u total, stepping back over zero weights
  auto it = std::lower_bound(cum.begin(), cum.end(), u * cum.back());
  if (it == cum.end()) --it;
  auto i = it - cum.begin();
  while (i > 0 && cum[static_cast<std::size_t>(i)] == cum[static_cast<std::size_t>(i - 1)]) --i;
  Coordinates x(d.lo());
  std::int64_t rest = i;
  for (int a = d.rank(); a-- > 0;) {
    x[static_cast<std::size_t>(a)] += rest % d.extent(a);
    rest /= d.extent(a);
  }
  return x;
}

CoordinateDraw sample_coordinate(const JointPmf& d, int axis, RandomStream& rng) {
  detail::check_axis(d, axis, "tally::sample_coordinate");
  const std::int64_t v = tally::sample(marginal(d, axis), rng);
  if (d.rank() == 1) return {v, std::nullopt};
  return {v, slice(d, axis, v).normalized()};
}

}  // namespace tally
