// 50-digit reference values (Boost.Multiprecision cpp_bin_float_50) and relative-error helpers for the tests.
#pragma once

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tally::test {

using big = boost::multiprecision::cpp_bin_float_50;

/// log(n!) in 50 digits (exact sum of logs for small n, lgamma otherwise).
inline big log_factorial(std::int64_t n) { return boost::multiprecision::lgamma(big(n + 1)); }

/// log of the Binomial(n, p) pmf at k, 50 digits.
inline big log_binomial(std::int64_t n, std::int64_t k, const big& p) {
  using boost::multiprecision::log;
  big r = log_factorial(n) - log_factorial(k) - log_factorial(n - k);
  if (k > 0) r += big(k) * log(p);
  if (n - k > 0) r += big(n - k) * log(1 - p);
  return r;
}

/// log of the Poisson(lambda) pmf at k, 50 digits.
inline big log_poisson(std::int64_t k, const big& lambda) {
  using boost::multiprecision::log;
  return big(k) * log(lambda) - lambda - log_factorial(k);
}

/// |log(a) - log_b| as a relative error of a against exp(log_b) (with a in double).
inline double relative_error_log(double log_a, const big& log_b) {
  using boost::multiprecision::expm1;
  return std::abs(static_cast<double>(expm1(big(log_a) - log_b)));
}

/// relative error of a double against a 50-digit value.
inline double relative_error(double a, const big& b) {
  if (b == 0) return a == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(abs((big(a) - b) / b));
}

}  // namespace tally::test
