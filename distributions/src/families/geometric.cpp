// Geometric(p): pmf in closed form (extended precision), cdf and quantile by Boost.Math, truncation at a tolerance.
#include "tally/distributions/geometric.hpp"

#include <boost/math/distributions/geometric.hpp>
#include <cmath>
#include <limits>

#include "../boost_support.hpp"
#include "../tabulate.hpp"
#include "family_helpers.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
/// A Boost.Math evaluation f for d, whose exceptions become tally::overflow_error naming Geometric and its
/// parameters (detail::boost_guard).
template <class F>
double boosted(const Geometric& d, F f) {
  return detail::boost_guard(f, "tally::Geometric", "p = ", d.success());
}
boost::math::geometric_distribution<double, detail::boost_policy> as_boost(const Geometric& d) { return {d.success()}; }
// P(X > k) = (1-p)^(k+1)
double upper_tail(const Geometric& d, std::int64_t k) {
  if (k < 0) return 1.0;
  if (d.success() == 1.0) return 0.0;
  return boosted(d, [&] { return boost::math::cdf(boost::math::complement(as_boost(d), static_cast<double>(k))); });
}
}  // namespace

Geometric::Geometric(double success) : success_(success) {
  detail::check_probability(success, "tally::Geometric", "success probability p");
  if (success == 0.0)
    detail::fail<domain_error>("tally::Geometric: success probability p = 0 must be in (0, 1] (no success ever: no distribution)");
}

// Boost's pdf forms p (1-p)^k with 1-p rounded to double, a relative error of k ulps; this one is exact to rounding.
double pdf(const Geometric& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (d.success() == 1.0) return k == 0 ? 1.0 : 0.0;
  const long double p = d.success();
  return static_cast<double>(p * std::exp(static_cast<long double>(k) * std::log1p(-p)));
}

double log_pdf(const Geometric& d, std::int64_t k) {
  if (k < 0) return -std::numeric_limits<double>::infinity();
  if (d.success() == 1.0) return k == 0 ? 0.0 : -std::numeric_limits<double>::infinity();
  const long double p = d.success();
  return static_cast<double>(std::log(p) + static_cast<long double>(k) * std::log1p(-p));
}

double cdf(const Geometric& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (d.success() == 1.0) return 1.0;
  return boosted(d, [&] { return boost::math::cdf(as_boost(d), static_cast<double>(k)); });
}

std::int64_t quantile(const Geometric& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Geometric)", "prob");
  if (d.success() == 1.0 || prob == 0.0) return 0;
  if (prob == 1.0) detail::fail<domain_error>("tally::quantile(Geometric): prob = 1 has no finite quantile");
  const double guess = boosted(d, [&] { return boost::math::quantile(as_boost(d), prob); });
  const auto k = detail::discrete_quantile(prob, guess, 0, std::numeric_limits<std::int64_t>::max(),
                                           [&](std::int64_t j) { return cdf(d, j); });
  if (cdf(d, k) < prob)
    detail::fail<overflow_error>("tally::quantile(Geometric): the quantile at prob = ", prob, " (about ", guess,
                                 ") is beyond the 64-bit integer range");
  return k;
}

std::pair<std::int64_t, std::int64_t> support(const Geometric& d) {
  return {0, d.success() == 1.0 ? 0 : std::numeric_limits<std::int64_t>::max()};
}
double mean(const Geometric& d) { return (1.0 - d.success()) / d.success(); }
double variance(const Geometric& d) { return (1.0 - d.success()) / (d.success() * d.success()); }

Pmf to_pmf(const Geometric& d, const Truncation& t) {
  if (d.success() == 1.0) return Pmf::point(0);
  const double half = t.tolerance / 2;
  const bool sane = t.tolerance > 0.0 && t.tolerance < 1.0;
  const double top =
      sane ? boosted(d, [&] { return boost::math::quantile(boost::math::complement(as_boost(d), half)); }) : 0.0;
  detail::check_tail_reach(top, "tally::to_pmf(Geometric)");
  const auto guess_lo =
      sane ? static_cast<std::int64_t>(boosted(d, [&] { return boost::math::quantile(as_boost(d), half); })) : 0;
  const auto guess_hi = static_cast<std::int64_t>(top);
  const auto kept = detail::truncate_tails(
      t.tolerance, 0, guess_lo, guess_hi, [&](std::int64_t k) { return cdf(d, k); },
      [&](std::int64_t k) { return upper_tail(d, k); }, "tally::to_pmf(Geometric)");
  return detail::tabulate(kept.lo, kept.hi, [&](std::int64_t k) { return log_pdf(d, k); },
                          kept.dropped / (1.0 - kept.dropped), t, "tally::to_pmf(Geometric)");
}

}  // namespace tally
