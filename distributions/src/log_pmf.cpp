// Loader's saddle-point log-pmfs ("Fast and accurate computation of binomial probabilities", 2000).
#include "tally/distributions/log_pmf.hpp"
#include "infinities.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <numbers>

namespace tally {
namespace {


// delta(n) for n = 0..15, in long double: lgammal(n+1) has an absolute error near 1e-18 there, so each entry
// (at least 5e-3) keeps a relative error below 1e-15. delta(0) is not used (k = 0 and k = n are special cases).
const std::array<double, 16>& small_table() {
  static const std::array<double, 16> table = [] {
    std::array<double, 16> t{};
    for (int n = 1; n < 16; ++n) {
      const long double x = n;
      t[n] = static_cast<double>(std::lgamma(x + 1.0L) - (x + 0.5L) * std::log(x) + x - 0.918938533204672741780329736406L);
    }
    return t;
  }();
  return table;
}

}  // namespace

double stirling_error(std::int64_t n) {
  constexpr double s0 = 1.0 / 12, s1 = 1.0 / 360, s2 = 1.0 / 1260, s3 = 1.0 / 1680, s4 = 1.0 / 1188;
  if (n < 16) return small_table()[static_cast<std::size_t>(n)];
  const double x = static_cast<double>(n), xx = x * x;
  if (n > 500) return (s0 - s1 / xx) / x;
  if (n > 80) return (s0 - (s1 - s2 / xx) / xx) / x;
  if (n > 35) return (s0 - (s1 - (s2 - s3 / xx) / xx) / xx) / x;
  return (s0 - (s1 - (s2 - (s3 - s4 / xx) / xx) / xx) / xx) / x;
}

double deviance(double x, double lambda) { return static_cast<double>(deviance_extended(x, lambda)); }

long double deviance_extended(long double x, long double lambda) {
  // Summed in extended precision: far from lambda the three terms are large and partly cancel
  // (x log(x/l) = 357 for a result of 70, say), and a double sum would leave an error near 1e-13 in the log-pmf.
  if (std::abs(x - lambda) < 0.1L * (x + lambda)) {
    // x log(x/l) + l - x = (x-l) v + 2x sum_{j>=1} v^(2j+1)/(2j+1),  v = (x-l)/(x+l), |v| < 0.1
    long double v = (x - lambda) / (x + lambda);
    long double sum = (x - lambda) * v;
    long double term = 2.0L * x * v;
    v *= v;
    for (int j = 1; j < 1000; ++j) {
      term *= v;
      const long double next = sum + term / (2 * j + 1);
      if (next == sum) break;
      sum = next;
    }
    return sum;
  }
  return x * std::log(x / lambda) + lambda - x;
}

double log_binomial_pmf(std::int64_t n, std::int64_t k, double p) {
  if (k < 0 || k > n) return neg_inf;
  if (n == 0) return 0.0;  // the point mass at 0 (the deviance terms below would be 0 log(0/0))
  const double q = 1.0 - p;
  if (p == 0.0) return k == 0 ? 0.0 : neg_inf;
  if (p == 1.0) return k == n ? 0.0 : neg_inf;
  // n p and n q = n - n p in extended precision: 1 - p is not a double in general, and rounding it would tilt
  // the far tails (by about (k - np) * 1e-16 in the log).
  const double nd = static_cast<double>(n);
  const long double np = static_cast<long double>(n) * p, nq = static_cast<long double>(n) - np;
  if (k == 0) return p < 0.1 ? static_cast<double>(-deviance_extended(n, nq) - np) : nd * std::log1p(-p);
  if (k == n) return q < 0.1 ? static_cast<double>(-deviance_extended(n, np) - nq) : nd * std::log(p);
  const double kd = static_cast<double>(k);
  const double lc = stirling_error(n) - stirling_error(k) - stirling_error(n - k) -
                    static_cast<double>(deviance_extended(k, np) + deviance_extended(n - k, nq));
  // log(1 - k/n): by log1p where k/n < 1/2; past it from the exact integer n - k (k/n rounds to 1 when n - k is
  // far below n / 2^53, and log1p(-1) = -inf would make the pmf +inf)
  const std::int64_t rest = n - k;
  const double log_rest = rest < k ? std::log(static_cast<double>(rest)) - std::log(nd) : std::log1p(-kd / nd);
  const double lf = std::log(2.0 * std::numbers::pi) + std::log(kd) + log_rest;
  return lc - 0.5 * lf;
}

double log_poisson_pmf(std::int64_t k, double lambda) {
  if (k < 0) return neg_inf;
  if (lambda == 0.0) return k == 0 ? 0.0 : neg_inf;
  if (k == 0) return -lambda;
  const double kd = static_cast<double>(k);
  return -stirling_error(k) - deviance(kd, lambda) - 0.5 * std::log(2.0 * std::numbers::pi * kd);
}

}  // namespace tally
