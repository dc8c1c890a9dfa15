// Thinning, scaled-Poisson and Markov-step marginals and conditionings against brute-force enumeration.
#include <catch2/catch.hpp>
#include <limits>

#include "brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace test_child_laws {

using namespace tally;
using test::big;
using test::Law;

namespace {
big binomial_big(std::int64_t n, std::int64_t k, double q) {
  if (k < 0 || k > n) return 0;
  if (q == 0.0) return k == 0 ? 1 : 0;
  if (q == 1.0) return k == n ? 1 : 0;
  return boost::multiprecision::exp(test::log_binomial(n, k, big(q)));
}
big poisson_big(std::int64_t k, double rate) {
  if (rate == 0.0) return k == 0 ? 1 : 0;
  return boost::multiprecision::exp(test::log_poisson(k, big(rate)));
}
// the joint P(X = x, Y = y) for a child law given as a function, enumerated over x's support and y in [0, ymax]
template <class Lik>
Law marginal_of(const Pmf& x, std::int64_t ymax, Lik lik) {
  Law out;
  for (const auto& [k, p] : test::law_of(x))
    for (std::int64_t y = 0; y <= ymax; ++y) out[y] += p * lik(k, y);
  return out;
}
template <class Lik>
void require_posterior(const Conditioned& c, const Pmf& x, std::int64_t y, Lik lik) {
  Law joint;
  for (const auto& [k, p] : test::law_of(x)) joint[k] = p * lik(k, y);
  const big evidence = test::mass(joint);
  REQUIRE(c.posterior.has_value());
  REQUIRE(std::abs(c.log_likelihood - static_cast<double>(boost::multiprecision::log(evidence))) <= 1e-13);
  test::require_law(*c.posterior, test::normalized(joint), 1e-12);
  REQUIRE(c.log_likelihood_error == 0.0);
}
}  // namespace

TEST_CASE("thinning marginal equals sum_x p_x Binomial(y | x, q)", "[child][thinning]") {
  std::mt19937_64 gen(11);
  for (double q : {0.0, 0.1, 0.5, 0.93, 1.0}) {
    for (std::int64_t lo : {0, 3, 40}) {
      const Pmf x = test::random_pmf(gen, lo, 1 + static_cast<Eigen::Index>(gen() % 60), 6.0);
      const Pmf y = marginal(x, Thinning(q));
      const Law want = marginal_of(x, x.hi(), [&](std::int64_t k, std::int64_t v) { return binomial_big(k, v, q); });
      test::require_law(y, want, 1e-12);
    }
  }
}

TEST_CASE("conditioning on a thinned child", "[child][thinning][condition]") {
  std::mt19937_64 gen(12);
  const Pmf x = test::random_pmf(gen, 2, 50);
  for (std::int64_t y : {0, 1, 7, 30, 51}) {
    INFO("y = " << y);
    require_posterior(condition(x, Thinning(0.3), y), x, y,
                      [](std::int64_t k, std::int64_t v) { return binomial_big(k, v, 0.3); });
  }
  // more successes than any parent value: impossible, exactly
  const Conditioned none = condition(x, Thinning(0.3), 52);
  REQUIRE_FALSE(none.posterior.has_value());
  REQUIRE(none.log_likelihood == -std::numeric_limits<double>::infinity());
  REQUIRE(none.log_likelihood_error == 0.0);
  REQUIRE_FALSE(condition(x, Thinning(0.3), -1).posterior.has_value());
}

TEST_CASE("scaled-Poisson marginal and conditioning", "[child][poisson]") {
  std::mt19937_64 gen(13);
  const Pmf x = test::random_pmf(gen, 0, 25);
  const double a = 1.7;
  const Pmf y = marginal(x, ScaledPoisson(a), {1e-300});
  const Law want = marginal_of(x, y.hi(), [&](std::int64_t k, std::int64_t v) { return poisson_big(v, a * static_cast<double>(k)); });
  // compare where the result is well above its truncation bound
  const big top = test::mass(want);
  for (const auto& [k, p] : want) {
    if (p < top * 1e-250) continue;
    INFO("y = " << k);
    REQUIRE(test::relative_error(pdf(y, k), p) <= 1e-12);
  }
  for (std::int64_t obs : {0, 3, 40}) {
    INFO("y = " << obs);
    require_posterior(condition(x, ScaledPoisson(a), obs), x, obs,
                      [&](std::int64_t k, std::int64_t v) { return poisson_big(v, a * static_cast<double>(k)); });
  }
}

TEST_CASE("Markov step marginal and conditioning", "[child][markov]") {
  Eigen::MatrixXd T(3, 4);
  T << 0.5, 0.25, 0.25, 0.0,  //
      0.0, 0.1, 0.6, 0.3,     //
      0.2, 0.2, 0.2, 0.4;
  Eigen::VectorXd w(3);
  w << 0.2, 0.3, 0.5;
  const Pmf x(0, w);
  const Pmf y = marginal(x, MarkovStep(T));
  const Eigen::RowVectorXd want = w.transpose() * T;
  for (std::int64_t k = 0; k < 4; ++k) REQUIRE(pdf(y, k) == Approx(want[k]).epsilon(1e-15));
  for (std::int64_t obs = 0; obs < 4; ++obs)
    require_posterior(condition(x, MarkovStep(T), obs), x, obs,
                      [&](std::int64_t k, std::int64_t v) { return big(T(k, v)); });
  REQUIRE_FALSE(condition(x, MarkovStep(T), 4).posterior.has_value());
  // a parent value that has no row is a shape error of the program, not an observation
  REQUIRE_THROWS_AS(marginal(Pmf(0, Eigen::VectorXd::Ones(4)), MarkovStep(T)), domain_error);
}

TEST_CASE("child laws reject bad parameters by name", "[child][errors]") {
  REQUIRE_THROWS_WITH(Thinning(1.5), Catch::Contains("keep probability q"));
  REQUIRE_THROWS_WITH(ScaledPoisson(-1.0), Catch::Contains("rate scale a"));
  REQUIRE_THROWS_AS(ScaledPoisson(std::nan("")), domain_error);
  Eigen::MatrixXd bad(2, 2);
  bad << 0.5, 0.6, 0.5, 0.5;
  REQUIRE_THROWS_WITH(MarkovStep(bad), Catch::Contains("row 0"));
  bad << 1.5, -0.5, 0.5, 0.5;
  REQUIRE_THROWS_AS(MarkovStep(bad), domain_error);
  REQUIRE_THROWS_AS(MarkovStep(Eigen::MatrixXd(0, 3)), shape_error);
  const Pmf negative(-2, Eigen::VectorXd::Ones(3));
  REQUIRE_THROWS_WITH(marginal(negative, Thinning(0.5)), Catch::Contains("count >= 0"));
  REQUIRE_THROWS_AS(condition(negative, ScaledPoisson(1.0), 3), domain_error);
}

}  // namespace test_child_laws
