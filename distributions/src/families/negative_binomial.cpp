// NegativeBinomial(r, p): pmf by Loader's method with real r, cdf and quantile by Boost.Math, truncation.
#include "tally/distributions/negative_binomial.hpp"

#include <array>
#include <boost/math/distributions/negative_binomial.hpp>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "../boost_support.hpp"
#include "../quad_beta.hpp"
#include "../tabulate.hpp"
#include "family_helpers.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"

namespace tally {
namespace detail {
namespace {

// Stirling's error log Gamma(y+1) - log(sqrt(2 pi y) (y/e)^y) for real y > 0. From 16 on, the asymptotic series
// (first omitted term below 3e-20); below, shifted up by m to y + m >= 16 through Gamma(y+1) = Gamma(y+m+1) /
// ((y+1)...(y+m)), which needs no lgamma (and so no global signgam: thread-safe). Integers below 16 come from a
// table, and the last four other values below 16 are remembered (a family passes the same r for every k).
long double stirling_series(long double y) {
  const long double v = 1.0L / (y * y);
  return (1.0L / 12 - v * (1.0L / 360 - v * (1.0L / 1260 - v * (1.0L / 1680 - v * (1.0L / 1188 - v * (691.0L / 360360 - v / 156)))))) / y;
}
long double stirling_shifted(long double y) {
  long double z = y, product = 1.0L;
  while (z < 16.0L) {
    z += 1.0L;
    product *= z;  // (y+1)(y+2)...(y+m)
  }
  // log Gamma(y+1) = log Gamma(z+1) - log(product), log Gamma(x+1) = (x+1/2) log x - x + log sqrt(2 pi) + s(x)
  return stirling_series(z) + (z + 0.5L) * std::log(z) - z - std::log(product) - (y + 0.5L) * std::log(y) + y;
}
long double stirling_error_real(long double y) {
  if (y >= 16.0L) return stirling_series(y);
  static const auto table = [] {
    std::array<long double, 16> t{};
    for (int i = 1; i < 16; ++i) t[i] = stirling_shifted(i);
    return t;
  }();
  if (y == std::floor(y)) return table[static_cast<std::size_t>(y)];
  // (a BetaBinomial needs three such values, alpha, beta and alpha + beta, for every k)
  thread_local std::array<std::pair<long double, long double>, 4> seen{};
  thread_local std::size_t next = 0;
  for (const auto& [at, value] : seen)
    if (at == y) return value;
  seen[next] = {y, stirling_shifted(y)};
  const long double value = seen[next].second;
  next = (next + 1) % seen.size();
  return value;
}

// log p from whichever of p and q = 1 - p is the more accurate
long double log_of(long double p, long double q) { return q < 0.5L ? std::log1p(-q) : std::log(p); }

}  // namespace

long double log_binomial_term(long double x, long double m, long double p, long double q) {
  constexpr long double log_zero = -std::numeric_limits<long double>::infinity();
  if (x == 0.0L) return m == 0.0L ? 0.0L : q == 0.0L ? log_zero : m * log_of(q, p);
  if (m == 0.0L) return p == 0.0L ? log_zero : x * log_of(p, q);
  if (p == 0.0L || q == 0.0L) return log_zero;
  const long double n = x + m;
  const long double lc = stirling_error_real(n) - stirling_error_real(x) - stirling_error_real(m) -
                         deviance_extended(x, n * p) - deviance_extended(m, n * q);
  return lc - 0.5L * std::log(2.0L * std::numbers::pi_v<long double> * (x * m / n));
}

long double log_negative_binomial_term(std::int64_t k, long double r, long double p, long double q) {
  if (k < 0) return -std::numeric_limits<long double>::infinity();
  if (k == 0) return r * log_of(p, q);
  const auto x = static_cast<long double>(k);
  // Gamma(k+r) / (k! Gamma(r)) = r/(k+r) * Gamma(k+r+1) / (Gamma(r+1) k!)
  return std::log(r / (x + r)) + log_binomial_term(r, x, p, q);
}

}  // namespace detail

namespace {
boost::math::negative_binomial_distribution<double, detail::boost_policy> as_boost(const NegativeBinomial& d) {
  return {d.successes(), d.success()};
}
/// r or the mean past quad_beta_limit: the cdf is refused (quad_beta.hpp).
void check_quad_range(const NegativeBinomial& d, const char* who) {
  const double m = d.successes() * (1.0 - d.success()) / d.success();
  if (d.successes() > double(detail::quad_beta_limit) || !(m <= double(detail::quad_beta_limit)))
    detail::fail<overflow_error>(who, ": r = ", d.successes(), ", p = ", d.success(), " (mean ", m,
                                 ") is past 2^40: its cdf is not computed (double arithmetic is inexact there, "
                                 "113-bit arithmetic takes seconds)");
}
// P(X > k)
double upper_tail(const NegativeBinomial& d, std::int64_t k) {
  if (k < 0) return 1.0;
  if (d.success() == 1.0) return 0.0;
  check_quad_range(d, "tally::cdf(NegativeBinomial) (upper tail)");
  if (k > detail::quad_beta_threshold || d.successes() > double(detail::quad_beta_threshold))
    return detail::boost_guard(
        [&] { return detail::quad_ibeta(d.successes(), static_cast<long double>(k) + 1, d.success(), true); },
        "tally::cdf(NegativeBinomial) (upper tail)", "r = ", d.successes(), ", p = ", d.success(), ", k = ", k);
  return detail::boost_guard(
      [&] { return boost::math::cdf(boost::math::complement(as_boost(d), static_cast<double>(k))); },
                             "tally::cdf(NegativeBinomial) (upper tail)", "r = ", d.successes(), ", p = ", d.success(),
                             ", k = ", k);
}

// (q = 1 - p is exact in long double unless p < 2^-11, where its relative error is below 1e-19 anyway)
long double log_pmf(const NegativeBinomial& d, std::int64_t k) {
  const long double p = d.success();
  return detail::log_negative_binomial_term(k, d.successes(), p, 1.0L - p);
}
}  // namespace

NegativeBinomial::NegativeBinomial(double successes, double success) : successes_(successes), success_(success) {
  detail::check_positive(successes, "tally::NegativeBinomial", "number of successes r");
  detail::check_probability(success, "tally::NegativeBinomial", "success probability p");
  if (success == 0.0)
    detail::fail<domain_error>(
        "tally::NegativeBinomial: success probability p = 0 must be in (0, 1] (no success ever: no distribution)");
}

double log_pdf(const NegativeBinomial& d, std::int64_t k) { return static_cast<double>(log_pmf(d, k)); }
// exp of the long double log: relative error about 1e-16 (Boost's pdf reaches 6e-14 at r = 1e6)
double pdf(const NegativeBinomial& d, std::int64_t k) { return static_cast<double>(std::exp(log_pmf(d, k))); }

// P(X <= k) = I_p(r, k + 1): in 113 bits where r or k passes 2^16 (quad_beta.hpp), else Boost's double cdf; refused
// for r or a mean past 2^40 (quad_beta_limit).
double cdf(const NegativeBinomial& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (d.success() == 1.0) return 1.0;
  check_quad_range(d, "tally::cdf(NegativeBinomial)");
  if (k > detail::quad_beta_threshold || d.successes() > double(detail::quad_beta_threshold))
    return detail::boost_guard([&] { return detail::quad_ibeta(d.successes(), static_cast<long double>(k) + 1, d.success(), false); },
                               "tally::cdf(NegativeBinomial)", "r = ", d.successes(), ", p = ", d.success(),
                               ", k = ", k);
  return detail::boost_guard([&] { return boost::math::cdf(as_boost(d), static_cast<double>(k)); },
                             "tally::cdf(NegativeBinomial)", "r = ", d.successes(), ", p = ", d.success(),
                             ", k = ", k);
}

std::int64_t quantile(const NegativeBinomial& d, double prob) {
  detail::check_probability(prob, "tally::quantile(NegativeBinomial)", "prob");
  if (d.success() == 1.0 || prob == 0.0) return 0;
  if (prob == 1.0) detail::fail<domain_error>("tally::quantile(NegativeBinomial): prob = 1 has no finite quantile");
  if (!(mean(d) < 0x1p62))
    detail::fail<overflow_error>("tally::quantile(NegativeBinomial): r = ", d.successes(), ", p = ", d.success(),
                                 " has mean ", mean(d), ", beyond the 64-bit integer range");
  const double guess = detail::boost_guard([&] { return boost::math::quantile(as_boost(d), prob); },
                                           "tally::quantile(NegativeBinomial)", "r = ", d.successes(),
                                           ", p = ", d.success(), ", prob = ", prob);
  const auto k = detail::discrete_quantile(prob, guess, 0, std::numeric_limits<std::int64_t>::max(),
                                           [&](std::int64_t j) { return cdf(d, j); });
  if (cdf(d, k) < prob)
    detail::fail<overflow_error>("tally::quantile(NegativeBinomial): the quantile at prob = ", prob, " (about ", guess,
                                 ") is beyond the 64-bit integer range");
  return k;
}

std::pair<std::int64_t, std::int64_t> support(const NegativeBinomial& d) {
  return {0, d.success() == 1.0 ? 0 : std::numeric_limits<std::int64_t>::max()};
}
double mean(const NegativeBinomial& d) { return d.successes() * (1.0 - d.success()) / d.success(); }
double variance(const NegativeBinomial& d) {
  return d.successes() * (1.0 - d.success()) / (d.success() * d.success());
}

Pmf to_pmf(const NegativeBinomial& d, const Truncation& t) {
  if (d.success() == 1.0) return Pmf::point(0);
  const char* who = "tally::to_pmf(NegativeBinomial)";
  const double half = t.tolerance / 2;
  const bool sane = t.tolerance > 0.0 && t.tolerance < 1.0;
  // a mean past 2^62 cannot be held (and Boost's quantile cannot bracket it): refuse before asking Boost
  if (!(mean(d) < 0x1p62))
    detail::fail<overflow_error>(who, ": r = ", d.successes(), ", p = ", d.success(), " has mean ", mean(d),
                                 ", beyond what a dense pmf over int64 can hold");
  const auto quantile_at = [&](bool upper) {
    return detail::boost_guard(
        [&] {
          return upper ? boost::math::quantile(boost::math::complement(as_boost(d), half))
                       : boost::math::quantile(as_boost(d), half);
        },
        who, "r = ", d.successes(), ", p = ", d.success(), ", tolerance = ", t.tolerance);
  };
  const double top = sane ? quantile_at(true) : 0.0;
  detail::check_tail_reach(top, who);
  const auto guess_lo = sane ? static_cast<std::int64_t>(quantile_at(false)) : 0;
  const auto guess_hi = static_cast<std::int64_t>(top);
  const auto kept = detail::truncate_tails(
      t.tolerance, 0, guess_lo, guess_hi, [&](std::int64_t k) { return cdf(d, k); },
      [&](std::int64_t k) { return upper_tail(d, k); }, who);
  return detail::tabulate(kept.lo, kept.hi, [&](std::int64_t k) { return log_pdf(d, k); },
                          kept.dropped / (1.0 - kept.dropped), t, who);
}

}  // namespace tally
