// The carried error bound really bounds the truncation error; tails of sums are exact against 50 digits.
#include <catch2/catch.hpp>

#include "brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/poisson.hpp"

namespace test_truncation_and_tails {

using namespace tally;
using test::big;

namespace {
/// ||a - b||_1 for measures given as pmfs (b: the far less truncated one), in 50 digits.
double l1_distance(const Pmf& a, const Pmf& b) {
  const auto la = test::law_of(a), lb = test::law_of(b);
  big d = 0;
  for (const auto& [k, p] : lb) d += abs(p - (la.count(k) ? la.at(k) : big(0)));
  for (const auto& [k, p] : la)
    if (!lb.count(k)) d += p;
  return static_cast<double>(d);
}
const Truncation coarse{1e-6}, fine{1e-300};
}  // namespace

TEST_CASE("Binomial(2000, 1/2) convolved with itself: every entry down to 1e-250 within 1e-12",
          "[tails][sum]") {
  const Pmf b = to_pmf(Binomial(2000, 0.5));
  const Pmf s = sum(b, b);
  int checked = 0;
  for (std::int64_t k = s.lo(); k <= s.hi(); ++k) {
    const big exact = boost::multiprecision::exp(test::log_binomial(4000, k, big(0.5)));
    if (exact < big(1e-250)) continue;
    INFO("k = " << k);
    REQUIRE(test::relative_error_log(log_pdf(s, k), test::log_binomial(4000, k, big(0.5))) <= 1e-12);
    ++checked;
  }
  REQUIRE(checked > 2000);  // the entries >= 1e-250 are those of [958, 3042]
  // and the stored support reaches beyond them, so no entry >= 1e-250 was dropped
  REQUIRE(log_pdf(s, s.lo()) < std::log(1e-250));
  REQUIRE(log_pdf(s, s.hi()) < std::log(1e-250));
}

TEST_CASE("the carried bound bounds the error of every operation on truncated laws", "[truncation]") {
  const Pmf xc = to_pmf(Poisson(30.0), coarse), xf = to_pmf(Poisson(30.0), fine);
  const Pmf yc = to_pmf(Poisson(12.5), coarse), yf = to_pmf(Poisson(12.5), fine);
  REQUIRE(xc.error_bound() > 0.0);
  REQUIRE(xc.error_bound() <= 1e-6);
  SECTION("the truncated law itself") { REQUIRE(l1_distance(xc, xf) <= xc.error_bound()); }
  SECTION("sum") {
    const Pmf s = sum(xc, yc);
    REQUIRE(l1_distance(s, sum(xf, yf)) <= s.error_bound());
  }
  SECTION("difference") {
    const Pmf d = difference(xc, yc);
    REQUIRE(l1_distance(d, difference(xf, yf)) <= d.error_bound());
  }
  SECTION("thinning") {
    const Pmf t = marginal(xc, Thinning(0.4));
    REQUIRE(l1_distance(t, marginal(xf, Thinning(0.4))) <= t.error_bound());
  }
  SECTION("scaled Poisson") {
    const Pmf t = marginal(xc, ScaledPoisson(0.7), coarse);
    REQUIRE(l1_distance(t, marginal(xf, ScaledPoisson(0.7), fine)) <= t.error_bound());
  }
  SECTION("conditioning on a sum, including an unlikely total") {
    for (std::int64_t z : {42, 20, 75}) {
      const Conditioned c = condition_on_sum(xc, yc, z), f = condition_on_sum(xf, yf, z);
      REQUIRE(c.posterior.has_value());
      INFO("z = " << z << ", bound " << c.posterior->error_bound());
      REQUIRE(l1_distance(*c.posterior, *f.posterior) <= c.posterior->error_bound());
      REQUIRE(std::abs(c.log_likelihood - f.log_likelihood) <= c.log_likelihood_error);
    }
  }
  SECTION("conditioning on a thinned child") {
    const Conditioned c = condition(xc, Thinning(0.5), 25), f = condition(xf, Thinning(0.5), 25);
    REQUIRE(l1_distance(*c.posterior, *f.posterior) <= c.posterior->error_bound());
    REQUIRE(std::abs(c.log_likelihood - f.log_likelihood) <= c.log_likelihood_error);
    REQUIRE(c.log_likelihood_error > 0.0);
  }
}

TEST_CASE("an observation less likely than the dropped mass is flagged as uninformative", "[truncation]") {
  const Pmf xc = to_pmf(Poisson(30.0), coarse), yc = to_pmf(Poisson(12.5), coarse);
  // 150 is far beyond both truncated supports' sum range... or at its edge: either way no trustworthy bound
  const Conditioned c = condition_on_sum(xc, yc, xc.hi() + yc.hi());
  REQUIRE(c.log_likelihood_error == std::numeric_limits<double>::infinity());
  const Conditioned none = condition_on_sum(xc, yc, xc.hi() + yc.hi() + 1);
  REQUIRE_FALSE(none.posterior.has_value());
  REQUIRE(none.log_likelihood_error == std::numeric_limits<double>::infinity());
}

}  // namespace test_truncation_and_tails
