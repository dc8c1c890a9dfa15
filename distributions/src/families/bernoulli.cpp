// Bernoulli(p): pmf and cdf by Boost.Math, the log-pmf with log1p, the two-point Pmf.
#include "tally/distributions/bernoulli.hpp"

#include <boost/math/distributions/bernoulli.hpp>
#include <cmath>
#include <limits>

#include "../boost_support.hpp"
#include "../tabulate.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
/// A Boost.Math evaluation f for d, whose exceptions become tally::overflow_error naming Bernoulli and its
/// parameters (detail::boost_guard).
template <class F>
double boosted(const Bernoulli& d, F f) {
  return detail::boost_guard(f, "tally::Bernoulli", "p = ", d.success());
}
boost::math::bernoulli_distribution<double, detail::boost_policy> as_boost(const Bernoulli& d) { return {d.success()}; }
}  // namespace

Bernoulli::Bernoulli(double success) : success_(success) {
  detail::check_probability(success, "tally::Bernoulli", "success probability p");
}

double pdf(const Bernoulli& d, std::int64_t k) {
  if (k < 0 || k > 1) return 0.0;
  return boosted(d, [&] { return boost::math::pdf(as_boost(d), static_cast<double>(k)); });
}

double log_pdf(const Bernoulli& d, std::int64_t k) {
  if (k < 0 || k > 1) return -std::numeric_limits<double>::infinity();
  return k == 1 ? std::log(d.success()) : std::log1p(-d.success());
}

double cdf(const Bernoulli& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (k >= 1) return 1.0;
  return boosted(d, [&] { return boost::math::cdf(as_boost(d), 0.0); });
}

std::int64_t quantile(const Bernoulli& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Bernoulli)", "prob");
  return cdf(d, 0) >= prob ? 0 : 1;
}

std::pair<std::int64_t, std::int64_t> support(const Bernoulli&) { return {0, 1}; }
double mean(const Bernoulli& d) { return d.success(); }
double variance(const Bernoulli& d) { return d.success() * (1.0 - d.success()); }

Pmf to_pmf(const Bernoulli& d, const Truncation& t) {
  // zero-mass ends (p = 0 or 1) are -inf log weights, trimmed by Pmf
  return detail::tabulate(0, 1, [&](std::int64_t k) { return log_pdf(d, k); }, no_error, t, "tally::to_pmf(Bernoulli)");
}

}  // namespace tally
