// Poisson(rate): pmf by Loader's method, tails and quantile by Boost.Math, truncation at a tolerance.
#include "tally/distributions/poisson.hpp"

#include <boost/math/distributions/poisson.hpp>
#include <cmath>
#include <limits>

#include "../boost_support.hpp"
#include "../tabulate.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
/// A Boost.Math evaluation f for d, whose exceptions become tally::overflow_error naming Poisson and its
/// parameters (detail::boost_guard).
template <class F>
double boosted(const Poisson& d, F f) {
  return detail::boost_guard(f, "tally::Poisson", "rate = ", d.rate());
}
boost::math::poisson_distribution<double, detail::boost_policy> as_boost(const Poisson& d) { return {d.rate()}; }
// P(X > k)
double upper_tail(const Poisson& d, std::int64_t k) {
  if (k < 0) return 1.0;
  if (d.rate() == 0.0) return 0.0;
  return boosted(d, [&] { return boost::math::cdf(boost::math::complement(as_boost(d), static_cast<double>(k))); });
}
}  // namespace

Poisson::Poisson(double rate) : rate_(rate) { detail::check_nonnegative(rate, "tally::Poisson", "rate"); }

double log_pdf(const Poisson& d, std::int64_t k) { return log_poisson_pmf(k, d.rate()); }
double pdf(const Poisson& d, std::int64_t k) { return std::exp(log_pdf(d, k)); }

double cdf(const Poisson& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (d.rate() == 0.0) return 1.0;
  return boosted(d, [&] { return boost::math::cdf(as_boost(d), static_cast<double>(k)); });
}

std::int64_t quantile(const Poisson& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Poisson)", "prob");
  if (d.rate() == 0.0 || prob == 0.0) return 0;
  if (prob == 1.0) detail::fail<domain_error>("tally::quantile(Poisson): prob = 1 has no finite quantile");
  const double guess = boosted(d, [&] { return boost::math::quantile(as_boost(d), prob); });
  return detail::discrete_quantile(prob, guess, 0, std::numeric_limits<std::int64_t>::max(),
                                   [&](std::int64_t k) { return cdf(d, k); });
}

std::pair<std::int64_t, std::int64_t> support(const Poisson& d) {
  return {0, d.rate() == 0.0 ? 0 : std::numeric_limits<std::int64_t>::max()};
}
double mean(const Poisson& d) { return d.rate(); }
double variance(const Poisson& d) { return d.rate(); }

Pmf to_pmf(const Poisson& d, const Truncation& t) {
  if (d.rate() == 0.0) return Pmf::point(0);
  if (!(d.rate() < 0x1p62))
    detail::fail<overflow_error>("tally::to_pmf(Poisson): rate ", d.rate(), " puts the support beyond the int64 range");
  const double half = t.tolerance / 2;
  const bool sane = t.tolerance > 0.0 && t.tolerance < 1.0;
  const auto guess_lo =
      sane ? static_cast<std::int64_t>(boosted(d, [&] { return boost::math::quantile(as_boost(d), half); })) : 0;
  const auto guess_hi =
      sane ? static_cast<std::int64_t>(
                 boosted(d, [&] { return boost::math::quantile(boost::math::complement(as_boost(d), half)); }))
           : 0;
  const auto kept = detail::truncate_tails(
      t.tolerance, 0, guess_lo, guess_hi, [&](std::int64_t k) { return cdf(d, k); },
      [&](std::int64_t k) { return upper_tail(d, k); }, "tally::to_pmf(Poisson)");
  return detail::tabulate(kept.lo, kept.hi, [&](std::int64_t k) { return log_pdf(d, k); }, kept.dropped / (1.0 - kept.dropped), t,
                          "tally::to_pmf(Poisson)");
}

}  // namespace tally
