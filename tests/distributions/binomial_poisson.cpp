// Binomial and Poisson pmfs against 50-digit references, down to entries of 1e-300 and beyond in log form.
#include <catch2/catch.hpp>
#include <limits>

#include "reference.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"

namespace test_binomial_poisson {

using namespace tally;
using tally::test::big;

TEST_CASE("log_binomial_pmf is accurate to a few ulps everywhere", "[families][binomial]") {
  for (std::int64_t n : {1, 2, 7, 15, 16, 40, 100, 1000, 2000, 10000, 1000000}) {
    for (double p : {0.5, 0.3, 0.01, 0.999, 1e-6}) {
      const std::int64_t step = n > 1000 ? n / 97 : 1;
      for (std::int64_t k = 0; k <= n; k += step) {
        const big exact = test::log_binomial(n, k, big(p));
        const double got = log_binomial_pmf(n, k, p);
        // absolute error of the log = relative error of the pmf; a double log of size L is itself only good to
        // about L * 1.1e-16, so the bound is a few ulps of the log
        REQUIRE(std::abs(static_cast<double>(big(got) - exact)) <= 1e-14 + 8e-16 * std::abs(got));
      }
    }
  }
}

TEST_CASE("log_poisson_pmf is accurate to a few ulps everywhere", "[families][poisson]") {
  for (double lambda : {1e-3, 0.5, 3.0, 17.5, 1000.0, 1e6}) {
    for (std::int64_t k : {0, 1, 2, 5, 15, 16, 17, 40, 100, 999, 1000, 1001, 5000, 1000000, 1200000}) {
      const big exact = test::log_poisson(k, big(lambda));
      const double got = log_poisson_pmf(k, lambda);
      REQUIRE(std::abs(static_cast<double>(big(got) - exact)) <= 1e-14 + 8e-16 * std::abs(got));
    }
  }
}

TEST_CASE("Binomial(2000, 0.5) as a pmf: every stored entry within 1e-12 relative", "[families][binomial][tails]") {
  const Pmf d = to_pmf(Binomial(2000, 0.5));
  REQUIRE(d.lo() >= 0);
  REQUIRE(d.hi() <= 2000);
  for (std::int64_t k = d.lo(); k <= d.hi(); ++k)
    REQUIRE(test::relative_error_log(log_pdf(d, k), test::log_binomial(2000, k, big(0.5))) <= 1e-12);
  // entries down to 1e-250 are there (pmf at k ~ 140 is about 1e-250)
  REQUIRE(log_pdf(d, 140) < std::log(1e-250));
  REQUIRE(d.error_bound() <= 1e-290);
}

TEST_CASE("Binomial with no trials is the point mass at 0, for every p", "[families][binomial]") {
  for (double p : {0.0, 1e-9, 0.05, 0.5, 0.95, 1.0}) {
    INFO("p = " << p);
    REQUIRE(log_binomial_pmf(0, 0, p) == 0.0);
    REQUIRE(log_binomial_pmf(0, 1, p) == -std::numeric_limits<double>::infinity());
    const Pmf d = to_pmf(Binomial(0, p));
    REQUIRE(d.size() == 1);
    REQUIRE(pdf(d, 0) == 1.0);
  }
}

TEST_CASE("Binomial cdf and quantile invert each other", "[families][binomial]") {
  const Binomial d(57, 0.23);
  for (double prob : {0.0, 1e-9, 0.1, 0.5, 0.77, 0.999999, 1.0}) {
    const auto k = quantile(d, prob);
    REQUIRE(cdf(d, k) >= prob);
    if (k > 0) REQUIRE(cdf(d, k - 1) < prob);
  }
  REQUIRE(mean(d) == Approx(57 * 0.23));
  REQUIRE(support(d).second == 57);
}

TEST_CASE("Poisson truncation drops at most the tolerance and carries it", "[families][poisson][truncation]") {
  for (double lambda : {0.1, 4.0, 1000.0}) {
    for (double tol : {1e-3, 1e-9, 1e-15}) {
      const Pmf d = to_pmf(Poisson(lambda), {tol});
      const double dropped = 1.0 - std::exp(d.log_mass());
      REQUIRE(d.error_bound() <= tol * 1.0000001);
      REQUIRE(dropped <= d.error_bound() * (1 + 1e-6) + 1e-15);
      for (std::int64_t k = d.lo(); k <= d.hi(); ++k)
        REQUIRE(test::relative_error_log(log_pdf(d, k), test::log_poisson(k, big(lambda))) <= 1e-12);
    }
  }
  REQUIRE(to_pmf(Poisson(0.0)).size() == 1);
}

TEST_CASE("Binomial and Poisson reject bad parameters by name", "[families][errors]") {
  REQUIRE_THROWS_WITH(Binomial(10, 1.5), Catch::Contains("success probability p"));
  REQUIRE_THROWS_WITH(Binomial(-1, 0.5), Catch::Contains("number of trials n"));
  REQUIRE_THROWS_AS(Binomial(3, std::nan("")), domain_error);
  REQUIRE_THROWS_WITH(Poisson(-2.0), Catch::Contains("rate"));
  REQUIRE_THROWS_AS(Poisson(std::numeric_limits<double>::infinity()), domain_error);
  REQUIRE_THROWS_AS(to_pmf(Poisson(3.0), {0.0}), domain_error);
  REQUIRE_THROWS_AS(to_pmf(Poisson(1e9), {1e-15, 1000}), overflow_error);
}

}  // namespace test_binomial_poisson
