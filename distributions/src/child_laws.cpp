// Marginals of a child given its integer parent: thinning by Horner's rule, scaled Poisson mixtures, Markov steps.
#include "tally/distributions/child_laws.hpp"

#include <cmath>
#include <limits>

#include "parent_checks.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"

namespace tally {

Thinning::Thinning(double keep_) : keep(keep_) { detail::check_probability(keep_, "tally::Thinning", "keep probability q"); }

ScaledPoisson::ScaledPoisson(double scale_) : scale(scale_) {
  detail::check_nonnegative(scale_, "tally::ScaledPoisson", "rate scale a");
}

MarkovStep::MarkovStep(Eigen::MatrixXd transition_) : transition(std::move(transition_)) {
  const char* who = "tally::MarkovStep";
  if (transition.rows() == 0 || transition.cols() == 0)
    detail::fail<shape_error>(who, ": the transition matrix is empty (", transition.rows(), " x ", transition.cols(), ")");
  for (Eigen::Index i = 0; i < transition.rows(); ++i) {
    for (Eigen::Index j = 0; j < transition.cols(); ++j) {
      const double t = transition(i, j);
      if (!(t >= 0.0) || !std::isfinite(t))
        detail::fail<domain_error>(who, ": entry T(", i, ", ", j, ") = ", t, " is not finite and >= 0");
    }
    const double row = transition.row(i).sum();
    if (std::abs(row - 1.0) > 1e-9) detail::fail<domain_error>(who, ": row ", i, " of T sums to ", row, ", not 1");
  }
}

IndexedPoisson::IndexedPoisson(Eigen::VectorXd rates_) : rates(std::move(rates_)) {
  if (rates.size() == 0) detail::fail<shape_error>("tally::IndexedPoisson: no rates");
  for (Eigen::Index i = 0; i < rates.size(); ++i) detail::check_nonnegative(rates[i], "tally::IndexedPoisson", "rate");
}

Pmf marginal(const Pmf& x, const Thinning& k) {
  detail::require_count(x, "tally::marginal(Thinning)");
  const double q = k.keep, r = 1.0 - q;
  if (q == 0.0) return Pmf(0, Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  const Eigen::VectorXd& w = x.weights();
  const Eigen::Index n = w.size();
  // acc holds sum_{i' >= i} w_{i'} Bernoulli(q)^{*(i' - i)}, as a vector of length n - i
  Eigen::VectorXd acc = Eigen::VectorXd::Zero(n), next = Eigen::VectorXd::Zero(n);
  acc[0] = w[n - 1];
  for (Eigen::Index i = n - 2, len = 1; i >= 0; --i, ++len) {
    // next = acc * [r, q] + w_i delta_0, over indices 0..len
    next[0] = r * acc[0] + w[i];
    next.segment(1, len - 1) = r * acc.segment(1, len - 1) + q * acc.head(len - 1);
    next[len] = q * acc[len - 1];
    acc.swap(next);
  }
  Pmf upper(0, std::move(acc), x.log_scale(), x.error_bound());
  if (x.lo() == 0) return upper;
  return sum(upper, to_pmf(Binomial(x.lo(), q)));  // the lo individuals every x has
}

namespace {
/// sum_x mu_X(x) Poisson(rate(x)), truncated where the smallest and largest rates over X's support put at most
/// tol/2 each beyond the cuts (Poisson tails are monotone in the rate).
template <class Rate>
Pmf poisson_mixture(const Pmf& x, Rate rate, const Truncation& t, const char* who) {
  double lo_rate = std::numeric_limits<double>::infinity(), hi_rate = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    if (x.weights()[i] == 0.0) continue;
    lo_rate = std::min(lo_rate, rate(x.lo() + i));
    hi_rate = std::max(hi_rate, rate(x.lo() + i));
  }
  if (hi_rate == 0.0) return Pmf(0, Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  const std::int64_t y_lo = to_pmf(Poisson(lo_rate), t).lo();
  const std::int64_t y_hi = to_pmf(Poisson(hi_rate), t).hi();
  if (y_hi - y_lo + 1 > t.max_size)
    detail::fail<overflow_error>(who, ": the result needs ", y_hi - y_lo + 1, " entries, more than max_size = ", t.max_size);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(y_hi - y_lo + 1);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double w = x.weights()[i];
    if (w == 0.0) continue;
    const double lambda = rate(x.lo() + i);
    for (std::int64_t y = y_lo; y <= y_hi; ++y) r[y - y_lo] += w * std::exp(log_poisson_pmf(y, lambda));
  }
  return Pmf(y_lo, std::move(r), x.log_scale(), x.error_bound() + t.tolerance * (1.0 + x.error_bound()));
}
}  // namespace

Pmf marginal(const Pmf& x, const ScaledPoisson& k, const Truncation& t) {
  detail::require_count(x, "tally::marginal(ScaledPoisson)");
  return poisson_mixture(x, [&](std::int64_t v) { return k.scale * static_cast<double>(v); }, t,
                         "tally::marginal(ScaledPoisson)");
}

Pmf marginal(const Pmf& x, const IndexedPoisson& k, const Truncation& t) {
  detail::require_states(x, k.rates.size(), "tally::marginal(IndexedPoisson)");
  return poisson_mixture(x, [&](std::int64_t v) { return k.rates[v]; }, t, "tally::marginal(IndexedPoisson)");
}

Pmf marginal(const Pmf& x, const MarkovStep& k) {
  const auto& T = k.transition;
  detail::require_states(x, T.rows(), "tally::marginal(MarkovStep)", "states (rows) of T");
  Eigen::VectorXd r = T.middleRows(x.lo(), x.size()).transpose() * x.weights();
  return Pmf(0, std::move(r), x.log_scale(), x.error_bound());
}

}  // namespace tally
