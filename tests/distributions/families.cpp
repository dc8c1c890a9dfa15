// The eight families beyond Binomial and Poisson: pmfs against 50-digit references, cdf/quantile, to_pmf, errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <tuple>

#include "reference_families.hpp"
#include "tally/distributions/bernoulli.hpp"
#include "tally/distributions/beta_binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/delta.hpp"
#include "tally/distributions/geometric.hpp"
#include "tally/distributions/hypergeometric.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/uniform_int.hpp"
#include "tally/error.hpp"

namespace test_families {

using namespace tally;
using tally::test::big;

namespace {
constexpr double not_a_number = std::numeric_limits<double>::quiet_NaN(), infinity = std::numeric_limits<double>::infinity();
constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max(),
                       int64_min = std::numeric_limits<std::int64_t>::min();
}  // namespace

// the exception type and a message naming the parameter
#define REQUIRE_THROWS_NAMING(expr, type, text) \
  REQUIRE_THROWS_AS(expr, type);                \
  REQUIRE_THROWS_WITH(expr, Catch::Contains(text))

TEST_CASE("Bernoulli: pmf, cdf, quantile, pmf and errors", "[families][bernoulli]") {
  for (double p : {0.0, 1e-300, 0.3, 0.5, 0.999999, 1.0}) {
    const Bernoulli d(p);
    INFO("p = " << p);
    const big bp(p);
    if (p > 0) test::check_pmf_at(d, 1, boost::multiprecision::log(bp));
    if (p < 1) test::check_pmf_at(d, 0, boost::multiprecision::log(1 - bp));
    REQUIRE(pdf(d, p > 0 ? 0 : 1) + pdf(d, p > 0 ? 1 : 0) == Approx(1.0).epsilon(1e-15));
    REQUIRE(pdf(d, -1) == 0.0);
    REQUIRE(log_pdf(d, 2) == -infinity);
    test::check_cdf_quantile(d);
    test::check_bounded_pmf(d);
    test::check_moments(d);
    REQUIRE(to_pmf(d).size() == (p == 0.0 || p == 1.0 ? 1 : 2));
  }
  REQUIRE(pdf(Bernoulli(0.0), 1) == 0.0);
  REQUIRE(log_pdf(Bernoulli(1.0), 0) == -infinity);
  REQUIRE_THROWS_NAMING(Bernoulli(1.5), domain_error, "tally::Bernoulli: success probability p");
  REQUIRE_THROWS_NAMING(Bernoulli(-0.1), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(Bernoulli(not_a_number), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(quantile(Bernoulli(0.5), 1.5), domain_error, "prob");
}

TEST_CASE("Geometric: pmf to far tails, cdf, truncation and errors", "[families][geometric]") {
  for (double p : {0.9, 0.3, 1e-3, 1e-8}) {
    const Geometric d(p);
    INFO("p = " << p);
    // out to where the pmf is about e^-20000
    const auto far = static_cast<std::int64_t>(2e4 / -std::log1p(-p));
    for (std::int64_t k = 0; k <= far; k += k < 50 ? 1 : 1 + far / 300)
      test::check_pmf_at(d, k, test::log_geometric(k, big(p)));
    // cdf against the closed form 1 - (1-p)^(k+1): relative error on the smaller of the cdf and its complement
    for (std::int64_t k = 0; k <= far / 20; k += 1 + far / 2000) {
      const big above = test::exp_big(big(k + 1) * boost::multiprecision::log(1 - big(p)));
      if (above < 0.5)
        REQUIRE(static_cast<double>(abs((1 - big(cdf(d, k))) - above)) <= 1e-13 * static_cast<double>(above) + 2e-16);
      else
        REQUIRE(test::relative_error(cdf(d, k), 1 - above) <= 1e-13);
    }
    test::check_cdf_quantile(d);
    if (p < 1e-3) continue;  // p = 1e-8 keeps some 1e9 values even at tolerance 1e-3
    for (double tol : {1e-3, 1e-9, 1e-15}) test::check_truncation(d, tol);
    test::check_moments(d);
  }
  const Geometric one(1.0);
  REQUIRE(pdf(one, 0) == 1.0);
  REQUIRE(pdf(one, 3) == 0.0);
  REQUIRE(support(one).second == 0);
  REQUIRE(quantile(one, 1.0) == 0);
  REQUIRE(to_pmf(one).size() == 1);
  REQUIRE(support(Geometric(0.5)).second == int64_max);
  REQUIRE_THROWS_NAMING(Geometric(0.0), domain_error, "tally::Geometric: success probability p = 0");
  REQUIRE_THROWS_NAMING(Geometric(1.5), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(Geometric(not_a_number), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(quantile(Geometric(0.5), 1.0), domain_error, "prob = 1");
  REQUIRE_THROWS_NAMING(quantile(Geometric(0.5), -0.5), domain_error, "prob");
  REQUIRE_THROWS_AS(to_pmf(Geometric(0.5), {0.0}), domain_error);
  REQUIRE_THROWS_AS(to_pmf(Geometric(1e-300)), overflow_error);
  REQUIRE_THROWS_AS(quantile(Geometric(1e-300), 0.5), overflow_error);
  REQUIRE_THROWS_AS(to_pmf(Geometric(1e-6), {1e-15, 1000}), overflow_error);
}

TEST_CASE("NegativeBinomial: pmf to far tails with real r, cdf, truncation and errors", "[families][negative_binomial]") {
  for (double r : {1e-3, 0.5, 3.0, 17.3, 1000.0, 1e6}) {
    for (double p : {0.99, 0.5, 0.1, 1e-4}) {
      const NegativeBinomial d(r, p);
      INFO("r = " << r << ", p = " << p);
      const double m = mean(d), sd = std::sqrt(variance(d));
      const auto far = static_cast<std::int64_t>(m + 80 * sd + 500);  // pmf down to e^-3000 and beyond
      for (std::int64_t k = 0; k <= far; k += k < 30 ? 1 : 1 + far / 200)
        test::check_pmf_at(d, k, test::log_negative_binomial(k, big(r), big(p)));
      test::check_cdf_quantile(d);
      if (sd < 1e6) test::check_truncation(d, 1e-9);
    }
  }
  const NegativeBinomial small(2.5, 0.3);
  test::check_cdf_sums(small, 0, 400,  // the reference tail beyond 400 is below 1e-55
                        [](std::int64_t k) { return test::log_negative_binomial(k, big(2.5), big(0.3)); });
  for (double tol : {1e-3, 1e-15}) test::check_truncation(small, tol);
  test::check_moments(small);
  test::check_moments(NegativeBinomial(0.01, 0.2));
  for (std::int64_t k : {0, 1, 7, 300}) REQUIRE(pdf(NegativeBinomial(1.0, 0.2), k) == Approx(pdf(Geometric(0.2), k)).epsilon(1e-15));
  REQUIRE(to_pmf(NegativeBinomial(4.0, 1.0)).size() == 1);
  REQUIRE(pdf(NegativeBinomial(4.0, 1.0), 0) == 1.0);
  REQUIRE_THROWS_NAMING(NegativeBinomial(0.0, 0.5), domain_error, "tally::NegativeBinomial: number of successes r");
  REQUIRE_THROWS_NAMING(NegativeBinomial(-2.0, 0.5), domain_error, "number of successes r");
  REQUIRE_THROWS_NAMING(NegativeBinomial(infinity, 0.5), domain_error, "number of successes r");
  REQUIRE_THROWS_NAMING(NegativeBinomial(not_a_number, 0.5), domain_error, "number of successes r");
  REQUIRE_THROWS_NAMING(NegativeBinomial(2.0, 0.0), domain_error, "success probability p = 0");
  REQUIRE_THROWS_NAMING(NegativeBinomial(2.0, 1.01), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(NegativeBinomial(2.0, not_a_number), domain_error, "success probability p");
  REQUIRE_THROWS_NAMING(quantile(small, 1.0), domain_error, "prob = 1");
  REQUIRE_THROWS_AS(to_pmf(small, {2.0}), domain_error);
}

TEST_CASE("Categorical: normalized weights, subnormal and huge ones, cdf and errors", "[families][categorical]") {
  Eigen::VectorXd w(6);
  w << 2.0, 0.0, 6.0, 1e-310, 3.0, 0.5;
  const Categorical d(w);
  big total = 0;
  for (double x : w) total += big(x);
  for (std::int64_t k = 0; k < 6; ++k) {
    if (w[k] > 0) test::check_pmf_at(d, k, boost::multiprecision::log(big(w[k]) / total));
    REQUIRE(d.probabilities()[k] == pdf(d, k));
  }
  REQUIRE(pdf(d, 1) == 0.0);
  REQUIRE(log_pdf(d, 1) == -infinity);
  REQUIRE(pdf(d, 6) == 0.0);
  REQUIRE(log_pdf(d, -1) == -infinity);
  REQUIRE(support(d).second == 5);
  test::check_cdf_sums(d, 0, 5, [&](std::int64_t k) {
    return w[k] > 0 ? boost::multiprecision::log(big(w[k]) / total) : big(-1e6);  // exp(-1e6) is far below 1e-300
  });
  test::check_cdf_quantile(d);
  test::check_moments(d);
  const Pmf pmf = to_pmf(d);
  REQUIRE(std::abs(pmf.log_mass()) <= 1e-15);
  REQUIRE(pdf(pmf, 4) == Approx(3.0 / 11.5).epsilon(1e-15));
  // weights near DBL_MAX do not overflow their sum
  Eigen::VectorXd huge(3);
  huge << 1e308, 1e308, 0.0;
  const Categorical h(huge);
  REQUIRE(pdf(h, 0) == 0.5);
  REQUIRE(to_pmf(h).size() == 2);  // the zero at the end is trimmed
  REQUIRE(quantile(h, 0.5) == 0);
  REQUIRE(quantile(h, 0.5000001) == 1);
  REQUIRE_THROWS_AS(to_pmf(d, {1e-15, 3}), overflow_error);
  REQUIRE_THROWS_NAMING(Categorical(Eigen::VectorXd()), shape_error, "tally::Categorical: probabilities");
  for (double bad : {-1.0, not_a_number, infinity}) {
    Eigen::VectorXd b = w;
    b[2] = bad;
    REQUIRE_THROWS_NAMING(Categorical(b), domain_error, "probabilities[2]");
  }
  REQUIRE_THROWS_NAMING(Categorical(Eigen::VectorXd::Zero(4)), domain_error, "probabilities are all zero");
  REQUIRE_THROWS_NAMING(quantile(d, not_a_number), domain_error, "prob");
}

TEST_CASE("UniformInt: flat pmf, ranges at the ends of int64, and errors", "[families][uniform_int]") {
  const UniformInt d(-3, 7);
  for (std::int64_t k = -3; k <= 7; ++k) test::check_pmf_at(d, k, -boost::multiprecision::log(big(11)));
  REQUIRE(pdf(d, 8) == 0.0);
  REQUIRE(log_pdf(d, -4) == -infinity);
  test::check_cdf_sums(d, -3, 7, [](std::int64_t) { return -boost::multiprecision::log(big(11)); });
  test::check_cdf_quantile(d);
  test::check_bounded_pmf(d);
  test::check_moments(d);
  test::check_moments(UniformInt(5, 5));
  // 2^63 - 1 values: everything but the count works
  const UniformInt wide(int64_min, -2);
  test::check_pmf_at(wide, -2, -boost::multiprecision::log(big(int64_max)));
  REQUIRE(quantile(wide, 0.0) == int64_min);
  // the cdf in double reaches 1 a few hundred values before hi (1 - 2^-54 rounds to 1)
  REQUIRE(cdf(wide, quantile(wide, 1.0)) == 1.0);
  REQUIRE(quantile(wide, 1.0) >= -2 - 2048);
  REQUIRE(quantile(wide, 0.5) == Approx(-0x1p62).epsilon(1e-12));
  test::check_cdf_quantile(wide);
  REQUIRE(mean(wide) == Approx(-0x1p62));
  REQUIRE_THROWS_NAMING(to_pmf(wide), overflow_error, "max_size");
  const Pmf top = to_pmf(UniformInt(int64_max - 2, int64_max));
  REQUIRE(top.lo() == int64_max - 2);
  REQUIRE(top.hi() == int64_max);
  REQUIRE(to_pmf(UniformInt(int64_min, int64_min + 4)).size() == 5);
  REQUIRE_THROWS_NAMING(UniformInt(4, 3), domain_error, "tally::UniformInt: lower end lo = 4 is above upper end hi = 3");
  REQUIRE_THROWS_NAMING(UniformInt(0, int64_max), overflow_error, "hi - lo + 1");
  REQUIRE_THROWS_NAMING(UniformInt(int64_min, int64_max), overflow_error, "hi - lo + 1");
  REQUIRE_THROWS_NAMING(UniformInt(-1, int64_max), overflow_error, "hi - lo + 1");
  REQUIRE_NOTHROW(UniformInt(int64_max, int64_max));
  REQUIRE_THROWS_NAMING(quantile(d, 2.0), domain_error, "prob");
}

TEST_CASE("Hypergeometric: pmf for N up to 5e9, cdf by tail sums, pmf and errors", "[families][hypergeometric]") {
  struct Case {
    std::int64_t big_n, big_k, n;
  };
  for (const Case c : {Case{50, 20, 10}, Case{1000, 300, 400}, Case{1000000, 300000, 200000}, Case{100000000, 10, 5000000},
                       Case{5000000000, 2000000000, 3000}, Case{20, 15, 12}}) {
    const Hypergeometric d(c.big_n, c.big_k, c.n);
    INFO("N = " << c.big_n << ", K = " << c.big_k << ", n = " << c.n);
    const auto [first, last] = support(d);
    REQUIRE(first == std::max<std::int64_t>(0, c.n + c.big_k - c.big_n));
    REQUIRE(last == std::min(c.n, c.big_k));
    for (std::int64_t k = first; k <= last; k += 1 + (last - first) / 400)  // the whole support, far tails included
      test::check_pmf_at(d, k, test::log_hypergeometric(c.big_n, c.big_k, c.n, k));
    REQUIRE(pdf(d, first - 1) == 0.0);
    REQUIRE(log_pdf(d, last + 1) == -infinity);
    test::check_cdf_quantile(d);
    test::check_cdf_against_pmf(d);
    test::check_bounded_pmf(d);
    test::check_moments(d);
  }
  for (const Case c : {Case{50, 20, 10}, Case{1000, 300, 400}, Case{20, 15, 12}}) {
    const Hypergeometric d(c.big_n, c.big_k, c.n);
    test::check_cdf_sums(d, support(d).first, support(d).second,
                         [&](std::int64_t k) { return test::log_hypergeometric(c.big_n, c.big_k, c.n, k); });
  }
  // the degenerate laws are point masses
  for (const Case c : {Case{10, 0, 5}, Case{10, 10, 5}, Case{10, 4, 10}, Case{10, 4, 0}, Case{0, 0, 0}}) {
    const Hypergeometric d(c.big_n, c.big_k, c.n);
    const std::int64_t at = c.big_k == c.big_n ? c.n : c.n == c.big_n ? c.big_k : 0;
    REQUIRE(support(d) == std::pair<std::int64_t, std::int64_t>{at, at});
    REQUIRE(pdf(d, at) == 1.0);
    REQUIRE(to_pmf(d).size() == 1);
    REQUIRE(quantile(d, 0.5) == at);
    REQUIRE(variance(d) == 0.0);
  }
  REQUIRE_THROWS_NAMING(Hypergeometric(-1, 0, 0), domain_error, "tally::Hypergeometric: population size N");
  REQUIRE_THROWS_NAMING(Hypergeometric(10, 11, 3), domain_error, "number of successes K = 11");
  REQUIRE_THROWS_NAMING(Hypergeometric(10, -1, 3), domain_error, "number of successes K");
  REQUIRE_THROWS_NAMING(Hypergeometric(10, 3, 11), domain_error, "number of draws n = 11");
  REQUIRE_THROWS_NAMING(Hypergeometric(10, 3, -2), domain_error, "number of draws n");
  REQUIRE_THROWS_NAMING(quantile(Hypergeometric(10, 3, 2), -0.1), domain_error, "prob");
  REQUIRE_THROWS_AS(to_pmf(Hypergeometric(1000000, 500000, 500000), {1e-15, 100}), overflow_error);
}

TEST_CASE("BetaBinomial: pmf in every shape, cdf by sums, pmf and errors", "[families][beta_binomial]") {
  struct Case {
    std::int64_t n;
    double alpha, beta;
  };
  // unimodal, U-shaped, flat, J-shaped, alpha + beta = 2 (monotone), huge and tiny parameters
  for (const Case c : {Case{10, 2.0, 3.0}, Case{200, 0.5, 0.3}, Case{200, 1.0, 1.0}, Case{200, 0.2, 3.0},
                       Case{200, 1.5, 0.5}, Case{1000, 50.0, 20.0}, Case{1000000, 3.5, 1e4}, Case{1000000, 0.01, 1e6},
                       Case{5000, 1e9, 2e9}, Case{300, 1e-5, 2.0}}) {
    const BetaBinomial d(c.n, c.alpha, c.beta);
    INFO("n = " << c.n << ", alpha = " << c.alpha << ", beta = " << c.beta);
    for (std::int64_t k = 0; k <= c.n; k += 1 + c.n / 300)
      test::check_pmf_at(d, k, test::log_beta_binomial(c.n, big(c.alpha), big(c.beta), k));
    test::check_pmf_at(d, c.n, test::log_beta_binomial(c.n, big(c.alpha), big(c.beta), c.n));
    test::check_cdf_quantile(d);
    test::check_cdf_against_pmf(d);
    test::check_bounded_pmf(d);
    test::check_moments(d);
    if (c.n <= 200)
      test::check_cdf_sums(d, 0, c.n, [&](std::int64_t k) { return test::log_beta_binomial(c.n, big(c.alpha), big(c.beta), k); });
  }
  REQUIRE(to_pmf(BetaBinomial(200, 0.5, 0.3)).size() == 201);  // U-shaped: the whole support
  for (std::int64_t k : {0, 17, 40}) REQUIRE(pdf(BetaBinomial(40, 1.0, 1.0), k) == Approx(1.0 / 41).epsilon(1e-15));
  REQUIRE(pdf(BetaBinomial(0, 2.0, 3.0), 0) == 1.0);
  REQUIRE(log_pdf(BetaBinomial(5, 2.0, 3.0), 6) == -infinity);
  REQUIRE_THROWS_NAMING(BetaBinomial(-1, 1.0, 1.0), domain_error, "tally::BetaBinomial: number of trials n");
  for (double bad : {0.0, -1.0, not_a_number, infinity}) {
    REQUIRE_THROWS_NAMING(BetaBinomial(5, bad, 1.0), domain_error, "alpha");
    REQUIRE_THROWS_NAMING(BetaBinomial(5, 1.0, bad), domain_error, "beta");
  }
  REQUIRE_THROWS_NAMING(quantile(BetaBinomial(5, 1.0, 1.0), 1.1), domain_error, "prob");
  REQUIRE_THROWS_AS(to_pmf(BetaBinomial(1000, 0.5, 0.5), {1e-15, 100}), overflow_error);
}

TEST_CASE("Delta: the point mass", "[families][delta]") {
  for (std::int64_t v : {std::int64_t{-7}, std::int64_t{0}, int64_max, int64_min}) {
    const Delta d(v);
    REQUIRE(d.value() == v);
    REQUIRE(pdf(d, v) == 1.0);
    REQUIRE(log_pdf(d, v) == 0.0);
    if (v != int64_min) REQUIRE(pdf(d, v - 1) == 0.0);
    if (v != int64_max) REQUIRE(log_pdf(d, v + 1) == -infinity);
    if (v != int64_min) REQUIRE(cdf(d, v - 1) == 0.0);
    REQUIRE(cdf(d, v) == 1.0);
    for (double prob : {0.0, 0.3, 1.0}) REQUIRE(quantile(d, prob) == v);
    REQUIRE(support(d) == std::pair<std::int64_t, std::int64_t>{v, v});
    REQUIRE(mean(d) == static_cast<double>(v));
    REQUIRE(variance(d) == 0.0);
    const Pmf pmf = to_pmf(d);
    REQUIRE(pmf.lo() == v);
    REQUIRE(pmf.hi() == v);
  }
  REQUIRE_THROWS_NAMING(quantile(Delta(3), not_a_number), domain_error, "tally::quantile(Delta): prob");
}

TEST_CASE("BetaBinomial to_pmf (by ratios, re-anchored) matches log_pdf entry by entry", "[families][betabinomial]") {
  for (auto [n, a, b] : {std::tuple{10, 2.0, 2.0}, {763, 2.0, 2.0}, {500, 0.5, 0.3}, {20000, 40.0, 7.5}, {3, 1.0, 1.0}}) {
    INFO("n = " << n << ", alpha = " << a << ", beta = " << b);
    const BetaBinomial d(n, a, b);
    const Pmf p = to_pmf(d);
    for (std::int64_t k = p.lo(); k <= p.hi(); ++k) {
      if (p.weights()[k - p.lo()] < 1e-250) continue;
      REQUIRE(std::abs(std::expm1(log_pdf(p, k) - log_pdf(d, k))) <= 1e-13);
    }
  }
}

}  // namespace test_families
