// Conditioning on sums and on observed children: reweight, normalize, and bound the error of the result.
#include "tally/distributions/condition.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "parent_checks.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/beta_binomial.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally {
namespace {


// Products of weights above this stay normal doubles with full precision; below it we work in logs.
constexpr double direct_floor = 0x1p-900;

/// An impossible observation: exactly so when the operands carry no error, otherwise only under the stored laws.
Conditioned impossible(double error_bound) { return {std::nullopt, neg_inf, error_bound > 0.0 ? inf : 0.0}; }

/// The result from posterior weights v_j over [lo, lo + size) with log L = log_l, given rho = delta / L', the
/// bound on the likelihood's error relative to its stored value: |L - L'| <= rho L'.
/// Then |log L - log L'| <= -log(1 - rho), and the normalized posterior is within 2 rho in L1 (capped at 2).
Conditioned finish(std::int64_t lo, Eigen::VectorXd v, double log_l, double rho) {
  const double log_error = rho < 1.0 ? -std::log1p(-rho) : inf;
  const double posterior_error = std::min(2.0, 2.0 * rho);
  return {Pmf(lo, std::move(v), 0.0, posterior_error).normalized(), log_l, log_error};
}

/// Whether x's entry i has weight (reweight reads log-likelihoods only there: the others need not be computed).
bool weighed(const Pmf& x, Eigen::Index i) { return x.weights()[i] > 0.0; }

/// Posterior proportional to x times a likelihood given by its logs on x's support, where the likelihood of every
/// value (in or out of the stored support) is at most 1, so that delta <= e_x M_x.
Conditioned reweight(const Pmf& x, const Eigen::VectorXd& log_lik) {
  const auto& w = x.weights();
  double top = neg_inf;
  for (Eigen::Index i = 0; i < w.size(); ++i)
    if (w[i] > 0.0) top = std::max(top, log_lik[i]);
  if (top == neg_inf) return impossible(x.error_bound());
  Eigen::VectorXd v(w.size());
  for (Eigen::Index i = 0; i < w.size(); ++i) v[i] = w[i] > 0.0 ? w[i] * std::exp(log_lik[i] - top) : 0.0;
  const double total = v.sum();  // >= the weight at the argmax, which is >= flush_fraction
  const double log_l = x.log_scale() + top + std::log(total);
  const double rho = x.error_bound() == 0.0 ? 0.0 : std::exp(std::log(x.error_bound()) + x.log_mass() - log_l);
  return finish(x.lo(), std::move(v), log_l, rho);
}

}  // namespace

Conditioned condition_on_sum(const Pmf& x, const Pmf& y, std::int64_t z) {
  const double e_x = x.error_bound(), e_y = y.error_bound();
  // the diagonal: lo_x <= j <= hi_x and lo_y <= z - j <= hi_y; computed in 128 bits so that no z overflows
  const detail::int128 lo128 = std::max<detail::int128>(x.lo(), static_cast<detail::int128>(z) - y.hi());
  const detail::int128 hi128 = std::min<detail::int128>(x.hi(), static_cast<detail::int128>(z) - y.lo());
  if (lo128 > hi128) return impossible(e_x + e_y);
  const auto lo = static_cast<std::int64_t>(lo128), hi = static_cast<std::int64_t>(hi128);
  const Eigen::Index n = hi - lo + 1;
  const auto& wx = x.weights();
  const auto& wy = y.weights();
  const Eigen::Index ix = lo - x.lo();                       // first index into x
  const Eigen::Index iy = static_cast<Eigen::Index>(static_cast<detail::int128>(z) - lo - y.lo());  // index into y, going down
  Eigen::VectorXd v(n);
  for (Eigen::Index j = 0; j < n; ++j) v[j] = wx[ix + j] * wy[iy - j];
  double log_top = 0.0;  // v is stored relative to exp(log_top)
  if (!(v.maxCoeff() >= direct_floor)) {
    // the products may have underflowed: redo them in logs, relative to their largest
    Eigen::VectorXd lv(n);
    for (Eigen::Index j = 0; j < n; ++j) lv[j] = std::log(wx[ix + j]) + std::log(wy[iy - j]);
    log_top = lv.maxCoeff();
    if (log_top == neg_inf) return impossible(e_x + e_y);
    v = (lv.array() - log_top).exp();
  }
  const double log_sum = log_top + std::log(v.sum());
  const double log_l = x.log_scale() + y.log_scale() + log_sum;
  // |L - L'| <= e^{s_x + s_y} (e_x W_x + e_y W_y + 2 e_x e_y W_x W_y), W = sum of weights (largest weight 1)
  const double wsx = wx.sum(), wsy = wy.sum();
  const double d = e_x * wsx + e_y * wsy + 2.0 * e_x * e_y * wsx * wsy;
  const double rho = d == 0.0 ? 0.0 : std::exp(std::log(d) - log_sum);
  return finish(lo, std::move(v), log_l, rho);
}

Conditioned condition_on_difference(const Pmf& x, const Pmf& y, std::int64_t d) {
  return condition_on_sum(x, negate(y), d);
}

Conditioned condition_affine(const Pmf& x, std::int64_t a, std::int64_t c, std::int64_t v) {
  if (a == 0) {
    if (v != c) return impossible(0.0);  // c = v is a statement about constants: no error
    return {x.normalized(), x.log_mass(), 0.0};
  }
  const detail::int128 diff = static_cast<detail::int128>(v) - c;
  if (diff % a != 0) return impossible(0.0);  // a X + c = v has no integer solution, whatever the law of X
  const detail::int128 k128 = diff / a;
  if (k128 < x.lo() || k128 > x.hi() || x.weights()[static_cast<Eigen::Index>(k128 - x.lo())] == 0.0)
    return impossible(x.error_bound());
  const auto k = static_cast<std::int64_t>(k128);
  const double log_l = log_pdf(x, k);
  const double rho = x.error_bound() == 0.0 ? 0.0 : std::exp(std::log(x.error_bound()) + x.log_mass() - log_l);
  // X is then known exactly: the posterior is the point mass, with no error
  return {Pmf::point(k), log_l, rho < 1.0 ? -std::log1p(-rho) : inf};
}

Conditioned condition(const Pmf& x, const Thinning& k, std::int64_t y) {
  detail::require_count(x, "tally::condition(Thinning)");
  Eigen::VectorXd ll(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) ll[i] = weighed(x, i) ? log_binomial_pmf(x.lo() + i, y, k.keep) : 0.0;
  return reweight(x, ll);
}

Conditioned condition(const Pmf& x, const ScaledPoisson& k, std::int64_t y) {
  detail::require_count(x, "tally::condition(ScaledPoisson)");
  Eigen::VectorXd ll(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i)
    ll[i] = weighed(x, i) ? log_poisson_pmf(y, k.scale * static_cast<double>(x.lo() + i)) : 0.0;
  return reweight(x, ll);
}

Conditioned condition(const Pmf& x, const MarkovStep& k, std::int64_t y) {
  const auto& T = k.transition;
  detail::require_states(x, T.rows(), "tally::condition(MarkovStep)", "states (rows) of T");
  if (y < 0 || y >= T.cols()) return impossible(0.0);  // no row of T reaches y
  Eigen::VectorXd ll(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) ll[i] = std::log(T(x.lo() + i, y));
  return reweight(x, ll);
}

Conditioned condition(const Pmf& x, const IndexedPoisson& k, std::int64_t y) {
  detail::require_states(x, k.rates.size(), "tally::condition(IndexedPoisson)");
  Eigen::VectorXd ll(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) ll[i] = weighed(x, i) ? log_poisson_pmf(y, k.rates[x.lo() + i]) : 0.0;
  return reweight(x, ll);
}

Conditioned condition_on_beta_thinning(const Pmf& x, double alpha, double beta, std::int64_t y) {
  detail::require_count(x, "tally::condition_on_beta_thinning");
  Eigen::VectorXd ll(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const std::int64_t n = x.lo() + i;
    // the beta-binomial's mass (<= 1, as reweight needs); BetaBinomial checks alpha and beta
    ll[i] = y < 0 || y > n ? neg_inf : weighed(x, i) ? log_pdf(BetaBinomial(n, alpha, beta), y) : 0.0;
  }
  return reweight(x, ll);
}

}  // namespace tally
