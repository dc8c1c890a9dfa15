// BetaBinomial(n, alpha, beta): log-pmf as three negative-binomial Loader terms, cdf and quantile by summation.
#include "tally/distributions/beta_binomial.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../tabulate.hpp"
#include "family_helpers.hpp"
#include "tally/error.hpp"

// Boost.Math 1.74 has no beta-binomial distribution.

namespace tally {
namespace {
// pmf(k + 1) / pmf(k) = (n - k)(k + alpha) / ((k + 1)(n - k - 1 + beta)), for 0 <= k < n
long double ratio(const BetaBinomial& d, std::int64_t k) {
  const std::int64_t n = d.trials();
  return static_cast<long double>(n - k) * (static_cast<long double>(k) + d.alpha()) /
         (static_cast<long double>(k + 1) * (static_cast<long double>(n - k - 1) + d.beta()));
}

// ratio(k) > 1 exactly when k (2 - alpha - beta) + n (alpha - 1) + 1 - beta > 0, a linear function of k: for
// alpha + beta >= 2 it changes sign at most once, from + to -, so the pmf rises to a mode and then falls (and once
// it falls it keeps falling, in either direction); for alpha + beta < 2 it may fall and then rise (U-shaped).
bool unimodal(const BetaBinomial& d) { return static_cast<long double>(d.alpha()) + d.beta() >= 2.0L; }

// For a unimodal law: the smallest k with ratio(k) <= 1, from the root of the linear function above.
std::int64_t mode(const BetaBinomial& d) {
  const std::int64_t n = d.trials();
  const long double a = d.alpha(), b = d.beta(), c = a + b - 2.0L;
  const long double guess = c > 0.0L ? std::ceil((static_cast<long double>(n) * (a - 1.0L) + 1.0L - b) / c)
                                     : (a > 1.0L ? static_cast<long double>(n) : 0.0L);
  const std::int64_t m = guess <= 0.0L ? 0 : guess >= static_cast<long double>(n) ? n : static_cast<std::int64_t>(guess);
  // rising(k) = ratio(k) > 1 is true then false: gallop from the guess to bracket its first false, then bisect
  // (the guess is off by rounding only, but by how much grows with n and with huge alpha, beta: never step by one)
  const auto rising = [&](std::int64_t k) { return k < n && ratio(d, k) > 1.0L; };
  std::int64_t lo = m, hi = m;  // rising(lo - 1) (or lo = 0) ... !rising(hi)
  if (rising(m)) {
    for (std::int64_t step = 1; rising(hi); step = step > (std::int64_t{1} << 61) ? step : 2 * step) {
      lo = hi + 1;
      hi = n - hi <= step ? n : hi + step;
    }
  } else {
    for (std::int64_t step = 1; lo > 0 && !rising(lo - 1); step = step > (std::int64_t{1} << 61) ? step : 2 * step) {
      hi = lo - 1;
      lo = lo <= step ? 0 : lo - step;
    }
  }
  while (lo < hi) {  // the first k in [lo, hi] with !rising(k)
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (rising(mid))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

long double log_pmf(const BetaBinomial& d, std::int64_t k) {
  const std::int64_t n = d.trials();
  if (k < 0 || k > n) return -std::numeric_limits<long double>::infinity();
  if (n == 0) return 0.0L;
  // C(n,k) B(k+a, n-k+b) / B(a,b) = NB(k; a, p) NB(n-k; b, p) / NB(n; a+b, p) for any p (the powers p^(a+b) q^n
  // cancel); p = (a+b)/(n+a+b) puts the denominator at its mean n, so that no term is much larger than the result
  const long double a = d.alpha(), b = d.beta(), s = a + b, m = static_cast<long double>(n) + s;
  const long double p = s / m, q = static_cast<long double>(n) / m;
  return detail::log_negative_binomial_term(k, a, p, q) + detail::log_negative_binomial_term(n - k, b, p, q) -
         detail::log_negative_binomial_term(n, s, p, q);
}
}  // namespace

BetaBinomial::BetaBinomial(std::int64_t trials, double alpha, double beta) : trials_(trials), alpha_(alpha), beta_(beta) {
  detail::check_count(trials, "tally::BetaBinomial", "number of trials n");
  detail::check_positive(alpha, "tally::BetaBinomial", "alpha");
  detail::check_positive(beta, "tally::BetaBinomial", "beta");
}

double log_pdf(const BetaBinomial& d, std::int64_t k) { return static_cast<double>(log_pmf(d, k)); }
// exp of the long double log: relative error about 1e-16 wherever the value is a normal double
double pdf(const BetaBinomial& d, std::int64_t k) { return static_cast<double>(std::exp(log_pmf(d, k))); }

double cdf(const BetaBinomial& d, std::int64_t k) {
  const std::int64_t n = d.trials();
  if (k < 0) return 0.0;
  if (k >= n) return 1.0;
  auto lp = [&](std::int64_t j) { return log_pdf(d, j); };
  auto r = [&](std::int64_t j) { return ratio(d, j); };
  // unimodal: sum the tail away from the mode (it stops early); otherwise the side with fewer terms, in full
  const bool lower = unimodal(d) ? k < mode(d) : k + 1 <= n - k;
  if (lower) return std::min(1.0, detail::sum_pmf(k, 0, unimodal(d), lp, r, "tally::cdf(BetaBinomial)"));
  return std::max(0.0, 1.0 - detail::sum_pmf(k + 1, n, unimodal(d), lp, r, "tally::cdf(BetaBinomial)"));
}

std::int64_t quantile(const BetaBinomial& d, double prob) {
  detail::check_probability(prob, "tally::quantile(BetaBinomial)", "prob");
  const std::int64_t n = d.trials();
  // unimodal: from the mode (its cdf's sum stops early); U-shaped: from the end whose side holds prob
  const std::int64_t start = unimodal(d) ? mode(d) : prob <= 0.5 ? 0 : n;
  return detail::walk_quantile(
      prob, 0, n, start, [&](std::int64_t k) { return cdf(d, k); }, [&](std::int64_t k) { return log_pdf(d, k); },
      [&](std::int64_t k) { return ratio(d, k); }, "tally::quantile(BetaBinomial)");
}

std::pair<std::int64_t, std::int64_t> support(const BetaBinomial& d) { return {0, d.trials()}; }
double mean(const BetaBinomial& d) {
  const long double a = d.alpha(), b = d.beta();
  return static_cast<double>(static_cast<long double>(d.trials()) * a / (a + b));
}
double variance(const BetaBinomial& d) {
  const long double n = static_cast<long double>(d.trials()), a = d.alpha(), b = d.beta(), s = a + b;
  return static_cast<double>(n * (a / s) * (b / s) * (s + n) / (s + 1.0L));
}

namespace {
/// The pmf on [lo, hi], by the ratio P(k+1)/P(k) = (n-k)(k+alpha) / ((k+1)(n-k-1+beta)), one multiply per entry,
/// re-anchored on the exact log-pmf every `anchor_every` entries so that rounding cannot build up (at most about
/// 2 anchor_every units of roundoff per entry). Tabulating entry by entry through lgamma costs ~20x more.
Pmf tabulate_by_ratios(const BetaBinomial& d, std::int64_t lo, std::int64_t hi, double error, const Truncation& t,
                       const char* who) {
  constexpr std::int64_t anchor_every = 16;
  detail::check_dense_size(lo, hi, t, who);
  const double a = d.alpha(), b = d.beta();
  // offsets from lo, not k itself, step the loops: hi may be INT64_MAX, where k += anchor_every would overflow
  const std::int64_t size = hi - lo + 1;
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < size; i += anchor_every) top = std::max(top, log_pdf(d, lo + i));
  Eigen::VectorXd w(size);
  for (std::int64_t i0 = 0; i0 < size; i0 += anchor_every) {
    const std::int64_t k0 = lo + i0;
    double v = std::exp(log_pdf(d, k0) - top);
    w[i0] = v;
    for (std::int64_t k = k0; k < lo + std::min(size - 1, i0 + anchor_every - 1); ++k) {
      const double kd = static_cast<double>(k), rest = static_cast<double>(d.trials() - k);  // n - k exactly
      v *= rest * (kd + a) / ((kd + 1.0) * (rest - 1.0 + b));
      w[k + 1 - lo] = v;
    }
  }
  return Pmf(lo, std::move(w), top, error);
}
}  // namespace

Pmf to_pmf(const BetaBinomial& d, const Truncation& t) {
  const std::int64_t n = d.trials();
  auto lp = [&](std::int64_t k) { return log_pdf(d, k); };
  const char* who = "tally::to_pmf(BetaBinomial)";
  if (!unimodal(d)) return tabulate_by_ratios(d, 0, n, no_error, t, who);
  const auto [lo, hi] = detail::significant_range(mode(d), 0, n, lp);
  // each of the entries left out is below flush_fraction times the mode (<= the mass)
  const double flushed = static_cast<double>(n - (hi - lo)) * flush_fraction;
  return tabulate_by_ratios(d, lo, hi, flushed, t, who);
}

}  // namespace tally
