// Marginals of a child given its integer parent: thinning by Horner's rule, scaled Poisson mixtures, Markov steps.
#include "tally/distributions/child_laws.hpp"

#include <cmath>

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

namespace {
void require_count(const Pmf& x, const char* who) {
  if (x.lo() < 0) detail::fail<domain_error>(who, ": the parent must be a count >= 0, but its support starts at ", x.lo());
}
}  // namespace

Pmf marginal(const Pmf& x, const Thinning& k) {
  require_count(x, "tally::marginal(Thinning)");
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

Pmf marginal(const Pmf& x, const ScaledPoisson& k, const Truncation& t) {
  require_count(x, "tally::marginal(ScaledPoisson)");
  const double a = k.scale;
  if (a == 0.0 || x.hi() == 0) return Pmf(0, Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  // the upper tail of Poisson(a x) grows with x and the lower tail shrinks: the extreme parents bound both cuts
  const std::int64_t y_lo = to_pmf(Poisson(a * static_cast<double>(x.lo())), t).lo();
  const std::int64_t y_hi = to_pmf(Poisson(a * static_cast<double>(x.hi())), t).hi();
  if (y_hi - y_lo + 1 > t.max_size)
    detail::fail<overflow_error>("tally::marginal(ScaledPoisson): the result needs ", y_hi - y_lo + 1,
                                 " entries, more than max_size = ", t.max_size);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(y_hi - y_lo + 1);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double w = x.weights()[i];
    if (w == 0.0) continue;
    const double rate = a * static_cast<double>(x.lo() + i);
    for (std::int64_t y = y_lo; y <= y_hi; ++y) r[y - y_lo] += w * std::exp(log_poisson_pmf(y, rate));
  }
  return Pmf(y_lo, std::move(r), x.log_scale(), x.error_bound() + t.tolerance * (1.0 + x.error_bound()));
}

Pmf marginal(const Pmf& x, const MarkovStep& k) {
  const auto& T = k.transition;
  if (x.lo() < 0 || x.hi() >= T.rows())
    detail::fail<domain_error>("tally::marginal(MarkovStep): the parent's support [", x.lo(), ", ", x.hi(),
                               "] is not within the ", T.rows(), " states (rows) of T");
  Eigen::VectorXd r = T.middleRows(x.lo(), x.size()).transpose() * x.weights();
  return Pmf(0, std::move(r), x.log_scale(), x.error_bound());
}

}  // namespace tally
