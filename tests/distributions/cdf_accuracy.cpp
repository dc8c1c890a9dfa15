// The cdfs of binomial and negative binomial counts with many trials against 40-digit incomplete beta functions.
#include <catch2/catch.hpp>
#include <boost/math/special_functions/beta.hpp>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <cstdint>

#include "tally/distributions.hpp"
#include "tally/error.hpp"

namespace test_cdf_accuracy {

using namespace tally;

namespace {

using Digits40 = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<40>>;

/// P(X <= k) of Binomial(n, p) = 1 - I_p(k + 1, n - k), in 40 digits.
double binomial_cdf_reference(std::int64_t n, double p, std::int64_t k) {
  return static_cast<double>(boost::math::ibetac(Digits40(k) + 1, Digits40(n) - Digits40(k), Digits40(p)));
}

/// P(X <= k) of NegativeBinomial(r, p) = I_p(r, k + 1), in 40 digits.
double negative_binomial_cdf_reference(double r, double p, std::int64_t k) {
  return static_cast<double>(boost::math::ibeta(Digits40(r), Digits40(k) + 1, Digits40(p)));
}

}  // namespace

TEST_CASE("binomial cdfs of many trials agree with 40-digit incomplete betas", "[distributions][reliability]") {
  // tails (three standard deviations out: fast in 40 digits) from 2^10 to 2^40 trials; Boost's double cdf is off
  // by 3e-7 at 2^45 (and by 1e-4 at 2^53, 25 % near 2^63: cdf = 0.374 at the median)
  for (const double p : {0.5, 0.3, 1e-3}) {
    for (const std::int64_t n : {std::int64_t{1} << 10, std::int64_t{1} << 16, std::int64_t{1} << 20, std::int64_t{1} << 21,
                                 std::int64_t{1} << 33, std::int64_t{1} << 40}) {
      const double mean = static_cast<double>(n) * p, sd = std::sqrt(static_cast<double>(n) * p * (1 - p));
      for (const double off : {-3.0, 2.0}) {
        const auto k = static_cast<std::int64_t>(mean + off * sd);
        if (k < 0) continue;
        INFO("n " << n << ", p " << p << ", k " << k);
        const double want = binomial_cdf_reference(n, p, k);
        CHECK(cdf(Binomial(n, p), k) == Approx(want).epsilon(1e-13).margin(0));
      }
    }
  }
  // near the median (slow in 40 digits: one law)
  const std::int64_t n = std::int64_t{1} << 33;
  const auto k = static_cast<std::int64_t>(0.3 * static_cast<double>(n));
  CHECK(cdf(Binomial(n, 0.3), k) == Approx(binomial_cdf_reference(n, 0.3, k)).epsilon(1e-13).margin(0));
  // past 2^40 trials the cdf is refused, not wrong (Boost's double cdf said 0.374 at the median of 2^63 - 2)
  CHECK_THROWS_AS(cdf(Binomial(9223372036854775806, 0.5), 4611686018427387903), overflow_error);
  CHECK_THROWS_AS(quantile(Binomial(9223372036854775806, 0.5), 0.5), overflow_error);
  CHECK(cdf(Binomial(9223372036854775806, 0.5), -1) == 0.0);  // trivial ends still answer
  CHECK(cdf(Binomial(9223372036854775806, 0.5), 9223372036854775806) == 1.0);
  // quantiles search the same cdf
  const Binomial large(std::int64_t{1} << 40, 0.25);
  const std::int64_t q = quantile(large, 0.1);
  CHECK(cdf(large, q) >= 0.1);
  CHECK(cdf(large, q - 1) < 0.1);
}

TEST_CASE("negative binomial cdfs with large r or k agree with 40-digit incomplete betas",
          "[distributions][reliability]") {
  for (const double r : {3.5, 1e5, 1e7, 1e12}) {
    for (const double p : {0.5, 1e-4}) {
      const double mean = r * (1 - p) / p, sd = std::sqrt(r * (1 - p)) / p;
      if (mean + 3 * sd > 0x1p40) continue;
      for (const double off : {-2.0, 3.0}) {
        const double x = mean + off * sd;
        if (x < 0) continue;
        const auto k = static_cast<std::int64_t>(x);
        INFO("r " << r << ", p " << p << ", k " << k);
        const double want = negative_binomial_cdf_reference(r, p, k);
        CHECK(cdf(NegativeBinomial(r, p), k) == Approx(want).epsilon(1e-13).margin(0));
      }
    }
  }
  CHECK_THROWS_AS(cdf(NegativeBinomial(1e15, 0.5), 10), overflow_error);
}

}  // namespace test_cdf_accuracy
