// Hypergeometric(N, K, n): log-pmf as three Loader binomial terms, cdf by summing the tail away from the mode.
#include "tally/distributions/hypergeometric.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../tabulate.hpp"
#include "family_helpers.hpp"
#include "tally/error.hpp"

// Boost.Math's hypergeometric_distribution takes 32-bit unsigned parameters (and forms (int)(n + r) - (int)N in
// its range()), so it cannot serve int64 populations; the tail sums below replace its cdf and quantile.

namespace tally {
namespace {
// pmf(k + 1) / pmf(k) = (K - k)(n - k) / ((k + 1)(N - K - n + k + 1)), for lo <= k < hi
long double ratio(const Hypergeometric& d, std::int64_t k) {
  const std::int64_t big_n = d.population(), big_k = d.successes(), n = d.draws();
  const auto num = static_cast<long double>(big_k - k) * static_cast<long double>(n - k);
  return num / (static_cast<long double>(k + 1) * static_cast<long double>((big_n - big_k) - (n - k) + 1));
}

// The (a) most likely value: floor((n+1)(K+1)/(N+2)), clamped to the support and checked against the ratios.
std::int64_t mode(const Hypergeometric& d) {
  const auto [lo, hi] = support(d);
  const long double guess = std::floor((static_cast<long double>(d.draws()) + 1) *
                                       (static_cast<long double>(d.successes()) + 1) /
                                       (static_cast<long double>(d.population()) + 2));
  std::int64_t m = guess <= static_cast<long double>(lo)   ? lo
                   : guess >= static_cast<long double>(hi) ? hi
                                                           : static_cast<std::int64_t>(guess);
  while (m < hi && ratio(d, m) > 1.0L) ++m;
  while (m > lo && ratio(d, m - 1) < 1.0L) --m;
  return m;
}

long double log_pmf(const Hypergeometric& d, std::int64_t k) {
  const auto [lo, hi] = support(d);
  if (k < lo || k > hi) return -std::numeric_limits<long double>::infinity();
  if (lo == hi) return 0.0L;  // n = 0, n = N, K = 0 or K = N: a point mass
  // here 0 < n < N. C(K,k) C(N-K,n-k) / C(N,n) = Bin(k; K, p) Bin(n-k; N-K, p) / Bin(n; N, p) for any p in (0,1)
  // (the powers p^n q^(N-n) cancel), and p = n/N puts the denominator at its mode, so that no term is much larger
  // than the result. Each term is Loader's form in long double (log_binomial_term: x successes, m failures).
  const std::int64_t big_n = d.population(), big_k = d.successes(), n = d.draws();
  const auto ld = [](std::int64_t v) { return static_cast<long double>(v); };
  const long double p = ld(n) / ld(big_n), q = ld(big_n - n) / ld(big_n);
  return detail::log_binomial_term(ld(k), ld(big_k - k), p, q) +
         detail::log_binomial_term(ld(n - k), ld((big_n - big_k) - (n - k)), p, q) -
         detail::log_binomial_term(ld(n), ld(big_n - n), p, q);
}
}  // namespace

Hypergeometric::Hypergeometric(std::int64_t population, std::int64_t successes, std::int64_t draws)
    : population_(population), successes_(successes), draws_(draws) {
  const char* who = "tally::Hypergeometric";
  detail::check_count(population, who, "population size N");
  if (successes < 0 || successes > population)
    detail::fail<domain_error>(who, ": number of successes K = ", successes, " must be in [0, N] (N = ", population, ")");
  if (draws < 0 || draws > population)
    detail::fail<domain_error>(who, ": number of draws n = ", draws, " must be in [0, N] (N = ", population, ")");
}

double log_pdf(const Hypergeometric& d, std::int64_t k) { return static_cast<double>(log_pmf(d, k)); }
// exp of the long double log: relative error about 1e-16 wherever the value is a normal double
double pdf(const Hypergeometric& d, std::int64_t k) { return static_cast<double>(std::exp(log_pmf(d, k))); }

double cdf(const Hypergeometric& d, std::int64_t k) {
  const auto [lo, hi] = support(d);
  if (k < lo) return 0.0;
  if (k >= hi) return 1.0;
  auto lp = [&](std::int64_t j) { return log_pdf(d, j); };
  auto r = [&](std::int64_t j) { return ratio(d, j); };
  // log-concave: the terms fall monotonically away from the mode, so the tail sum stops early
  if (k < mode(d)) return std::min(1.0, detail::sum_pmf(k, lo, true, lp, r, "tally::cdf(Hypergeometric)"));
  return std::max(0.0, 1.0 - detail::sum_pmf(k + 1, hi, true, lp, r, "tally::cdf(Hypergeometric)"));
}

std::int64_t quantile(const Hypergeometric& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Hypergeometric)", "prob");
  const auto [lo, hi] = support(d);
  return detail::walk_quantile(
      prob, lo, hi, mode(d), [&](std::int64_t k) { return cdf(d, k); }, [&](std::int64_t k) { return log_pdf(d, k); },
      [&](std::int64_t k) { return ratio(d, k); }, "tally::quantile(Hypergeometric)");
}

std::pair<std::int64_t, std::int64_t> support(const Hypergeometric& d) {
  // n + K - N computed as n - (N - K): no overflow
  return {std::max<std::int64_t>(0, d.draws() - (d.population() - d.successes())), std::min(d.draws(), d.successes())};
}

double mean(const Hypergeometric& d) {
  if (d.population() == 0) return 0.0;
  return static_cast<double>(static_cast<long double>(d.draws()) * static_cast<long double>(d.successes()) /
                             static_cast<long double>(d.population()));
}

double variance(const Hypergeometric& d) {
  if (d.population() <= 1) return 0.0;
  const auto big_n = static_cast<long double>(d.population()), big_k = static_cast<long double>(d.successes()),
             n = static_cast<long double>(d.draws());
  return static_cast<double>(n * (big_k / big_n) * ((big_n - big_k) / big_n) * ((big_n - n) / (big_n - 1)));
}

Pmf to_pmf(const Hypergeometric& d, const Truncation& t) {
  const auto [first, last] = support(d);
  auto lp = [&](std::int64_t k) { return log_pdf(d, k); };
  const auto [lo, hi] = detail::significant_range(mode(d), first, last, lp);
  // each of the entries left out is below flush_fraction times the mode (<= the mass)
  const double flushed = static_cast<double>((last - first) - (hi - lo)) * flush_fraction;
  return detail::tabulate(lo, hi, lp, flushed, t, "tally::to_pmf(Hypergeometric)");
}

}  // namespace tally
