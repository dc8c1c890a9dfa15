// Binomial(n, p): pmf by Loader's method, cdf and quantile by Boost.Math (the cdf of large n in 113-bit arithmetic).
#include "tally/distributions/binomial.hpp"

#include <boost/math/distributions/binomial.hpp>
#include <cmath>

#include "../boost_support.hpp"
#include "../quad_beta.hpp"
#include "../tabulate.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
/// A Boost.Math evaluation f for d, whose exceptions become tally::overflow_error naming Binomial and its
/// parameters (detail::boost_guard).
template <class F>
double boosted(const Binomial& d, F f) {
  return detail::boost_guard(f, "tally::Binomial", "n = ", d.trials(), ", p = ", d.success());
}
boost::math::binomial_distribution<double, detail::boost_policy> as_boost(const Binomial& d) {
  return {static_cast<double>(d.trials()), d.success()};
}
}  // namespace

Binomial::Binomial(std::int64_t trials, double success) : trials_(trials), success_(success) {
  detail::check_count(trials, "tally::Binomial", "number of trials n");
  detail::check_probability(success, "tally::Binomial", "success probability p");
}

double log_pdf(const Binomial& d, std::int64_t k) { return log_binomial_pmf(d.trials(), k, d.success()); }
double pdf(const Binomial& d, std::int64_t k) { return std::exp(log_pdf(d, k)); }

// P(X <= k) = 1 - I_p(k + 1, n - k): in double arithmetic (Boost's binomial cdf) up to n = 2^16, in 113 bits up to
// 2^40 (quad_beta.hpp: double's ibeta loses about n x 1e-20 of relative accuracy, and is wrong past 2^53), refused
// beyond.
double cdf(const Binomial& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (k >= d.trials()) return 1.0;
  if (d.success() == 0.0) return 1.0;
  if (d.success() == 1.0) return 0.0;
  if (d.trials() <= detail::quad_beta_threshold)
    return boosted(d, [&] { return boost::math::cdf(as_boost(d), static_cast<double>(k)); });
  if (d.trials() > detail::quad_beta_limit)
    detail::fail<overflow_error>("tally::cdf(Binomial): n = ", d.trials(), " trials is past 2^40: its cdf is not "
                                 "computed (double arithmetic is inexact there, 113-bit arithmetic takes seconds); "
                                 "its pmf (log_pdf) is exact");
  return boosted(d, [&] { return detail::quad_ibeta(k + 1, d.trials() - k, d.success(), true); });
}

std::int64_t quantile(const Binomial& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Binomial)", "prob");
  const double guess = prob == 0.0 || prob == 1.0 || d.success() == 0.0 || d.success() == 1.0
                           ? 0.0
                           : boosted(d, [&] { return boost::math::quantile(as_boost(d), prob); });
  return detail::discrete_quantile(prob, guess, 0, d.trials(), [&](std::int64_t k) { return cdf(d, k); });
}

std::pair<std::int64_t, std::int64_t> support(const Binomial& d) { return {0, d.trials()}; }
double mean(const Binomial& d) { return static_cast<double>(d.trials()) * d.success(); }
double variance(const Binomial& d) { return static_cast<double>(d.trials()) * d.success() * (1.0 - d.success()); }

Pmf to_pmf(const Binomial& d, const Truncation& t) {
  const std::int64_t n = d.trials();
  auto lp = [&](std::int64_t k) { return log_pdf(d, k); };
  // mode: floor((n+1) p), clamped to [0, n]
  const double m = std::floor((static_cast<double>(n) + 1.0) * d.success());
  const std::int64_t mode = m < 0 ? 0 : m >= static_cast<double>(n) ? n : static_cast<std::int64_t>(m);  // (>=: double(n) may be 2^63)
  const auto [lo, hi] = detail::significant_range(mode, 0, n, lp);
  // each of the n + 1 - (hi - lo + 1) entries left out is below flush_fraction times the mode (<= the mass)
  const double flushed = static_cast<double>(n - (hi - lo)) * flush_fraction;
  return detail::tabulate(lo, hi, lp, flushed, t, "tally::to_pmf(Binomial)");
}

}  // namespace tally
