// The dense Pmf: invariants checked at construction, rescaling, flushing and trimming, and its summaries.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tally/distributions/pmf.hpp"
#include "tally/error.hpp"

namespace test_pmf {

using tally::Pmf;

TEST_CASE("Pmf rescales to a unit maximum and keeps the measure", "[pmf]") {
  Eigen::VectorXd w(4);
  w << 0.0, 0.2, 0.5, 0.3;
  const Pmf d(10, w);
  REQUIRE(d.lo() == 11);  // the leading zero is trimmed
  REQUIRE(d.hi() == 13);
  REQUIRE(d.weights().maxCoeff() == 1.0);
  REQUIRE(pdf(d, 12) == Approx(0.5));
  REQUIRE(pdf(d, 10) == 0.0);
  REQUIRE(d.log_mass() == Approx(0.0).margin(1e-15));
  REQUIRE(mean(d) == Approx(0.2 * 11 + 0.5 * 12 + 0.3 * 13));
  REQUIRE(cdf(d, 12) == Approx(0.7));
  REQUIRE(quantile(d, 0.7) == 12);
  REQUIRE(quantile(d, 0.71) == 13);
  REQUIRE(quantile(d, 0.0) == 11);
}

TEST_CASE("Pmf keeps entries far below 1e-300 through its log scale", "[pmf]") {
  Eigen::VectorXd lw(3);
  lw << -2000.0, -2001.0, -2003.0;
  const Pmf d = Pmf::from_log(-5, lw);
  REQUIRE(log_pdf(d, -5) == Approx(-2000.0).epsilon(1e-15));
  REQUIRE(log_pdf(d, -3) == Approx(-2003.0).epsilon(1e-15));
  REQUIRE(pdf(d, -5) == 0.0);  // underflows as a plain double, by contract
  const Pmf n = d.normalized();
  REQUIRE(n.log_mass() == Approx(0.0).margin(1e-15));
  REQUIRE(pdf(n, -5) == Approx(1.0 / (1.0 + std::exp(-1.0) + std::exp(-3.0))));
}

TEST_CASE("Pmf flushes negligible entries into its error bound", "[pmf]") {
  Eigen::VectorXd w(3);
  w << 1.0, 1e-305, 1.0;
  const Pmf d(0, w);
  REQUIRE(d.weights()[1] == 0.0);
  REQUIRE(d.error_bound() > 0.0);
  REQUIRE(d.error_bound() <= 1e-305);
}

TEST_CASE("Pmf rejects bad weights with a clear error", "[pmf][errors]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_AS(Pmf(0, Eigen::VectorXd()), tally::shape_error);
  REQUIRE_THROWS_AS(Pmf(0, Eigen::VectorXd::Zero(3)), tally::shape_error);
  REQUIRE_THROWS_WITH(Pmf(0, Eigen::VectorXd::Constant(2, nan)), Catch::Contains("not finite"));
  REQUIRE_THROWS_AS(Pmf(0, Eigen::VectorXd::Constant(2, -1.0)), tally::domain_error);
  REQUIRE_THROWS_AS(Pmf(0, Eigen::VectorXd::Ones(2), std::numeric_limits<double>::infinity()), tally::domain_error);
  REQUIRE_THROWS_AS(Pmf(0, Eigen::VectorXd::Ones(2), 0.0, -1.0), tally::domain_error);
  REQUIRE_THROWS_AS(Pmf(std::numeric_limits<std::int64_t>::max(), Eigen::VectorXd::Ones(2)), tally::overflow_error);
  REQUIRE_THROWS_AS(quantile(Pmf::point(3), 1.5), tally::domain_error);
  Eigen::VectorXd lw(2);
  lw << nan, 0.0;
  REQUIRE_THROWS_AS(Pmf::from_log(0, lw), tally::domain_error);
}

}  // namespace test_pmf
