// UniformInt(lo, hi): the flat law, with the count hi - lo + 1 checked against the 64-bit range.
#include "tally/distributions/uniform_int.hpp"

#include <cmath>
#include <limits>

#include "../boost_support.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
// hi - lo + 1, known to fit once the constructor has run (computed in unsigned arithmetic: no overflow on the way)
std::int64_t count(const UniformInt& d) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(d.hi()) - static_cast<std::uint64_t>(d.lo()) + 1u);
}
}  // namespace

UniformInt::UniformInt(std::int64_t lo, std::int64_t hi) : lo_(lo), hi_(hi) {
  if (lo > hi) detail::fail<domain_error>("tally::UniformInt: lower end lo = ", lo, " is above upper end hi = ", hi);
  if (lo < hi) {
    // hi - lo + 1 = (hi - (lo + 1)) + 2: lo + 1 and its negation cannot overflow when lo < hi
    const char* who = "tally::UniformInt: the number of values hi - lo + 1";
    detail::checked_add(detail::checked_add(hi, -(lo + 1), who), 2, who);
  }
}

double pdf(const UniformInt& d, std::int64_t k) {
  return k < d.lo() || k > d.hi() ? 0.0 : static_cast<double>(1.0L / static_cast<long double>(count(d)));
}

double log_pdf(const UniformInt& d, std::int64_t k) {
  if (k < d.lo() || k > d.hi()) return -std::numeric_limits<double>::infinity();
  return static_cast<double>(-std::log(static_cast<long double>(count(d))));
}

double cdf(const UniformInt& d, std::int64_t k) {
  if (k < d.lo()) return 0.0;
  if (k >= d.hi()) return 1.0;
  // k - lo + 1 <= hi - lo fits
  return static_cast<double>(static_cast<long double>(k - d.lo() + 1) / static_cast<long double>(count(d)));
}

std::int64_t quantile(const UniformInt& d, double prob) {
  detail::check_probability(prob, "tally::quantile(UniformInt)", "prob");
  const std::int64_t n = count(d);
  // offsets j = k - lo in [0, n - 1]; the smallest with (j + 1) / n >= prob is ceil(prob n) - 1
  const double guess = std::ceil(prob * static_cast<double>(n)) - 1.0;
  const std::int64_t j =
      detail::discrete_quantile(prob, guess, 0, n - 1, [&](std::int64_t i) { return cdf(d, d.lo() + i); });
  return d.lo() + j;
}

std::pair<std::int64_t, std::int64_t> support(const UniformInt& d) { return {d.lo(), d.hi()}; }
double mean(const UniformInt& d) {
  return static_cast<double>((static_cast<long double>(d.lo()) + static_cast<long double>(d.hi())) / 2);
}
double variance(const UniformInt& d) {
  const auto n = static_cast<long double>(count(d));
  return static_cast<double>((n * n - 1.0L) / 12);
}

Pmf to_pmf(const UniformInt& d, const Truncation& t) {
  const std::int64_t n = count(d);
  // (not check_dense_size: it forms -lo, which overflows at lo = INT64_MIN)
  if (n > t.max_size)
    detail::fail<overflow_error>("tally::to_pmf(UniformInt): a dense pmf over [", d.lo(), ", ", d.hi(), "] needs ", n,
                                 " entries, more than max_size = ", t.max_size,
                                 " (raise Truncation::max_size or use a sparse form)");
  return Pmf(d.lo(), Eigen::VectorXd::Ones(n), log_pdf(d, d.lo()));
}

}  // namespace tally
