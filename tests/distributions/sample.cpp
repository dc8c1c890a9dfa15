// Inverse-cdf sampling: chi-square goodness of fit with fixed seeds, reproducibility, and bad input.
#include <boost/math/distributions/chi_squared.hpp>
#include <catch2/catch.hpp>

#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/error.hpp"

namespace test_sample {

using namespace tally;

namespace {
/// Pearson's statistic over the support, cells with expected count < 5 pooled into one.
double chi_square(const Pmf& d, const IntVector& draws, int& dof) {
  const double n = static_cast<double>(draws.size());
  Eigen::VectorXd counts = Eigen::VectorXd::Zero(d.size());
  for (auto k : draws) counts[k - d.lo()] += 1;
  const Eigen::VectorXd p = d.normalized().probabilities();
  double stat = 0, pooled_obs = 0, pooled_exp = 0;
  dof = -1;
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    const double e = n * p[i];
    if (e < 5) {
      pooled_obs += counts[i];
      pooled_exp += e;
      continue;
    }
    stat += (counts[i] - e) * (counts[i] - e) / e;
    ++dof;
  }
  if (pooled_exp > 0) {
    stat += (pooled_obs - pooled_exp) * (pooled_obs - pooled_exp) / pooled_exp;
    ++dof;
  }
  return stat;
}
}  // namespace

TEST_CASE("draws fit their pmf (chi-square at the 1e-6 level)", "[sample]") {
  const Pmf d = sum(to_pmf(Binomial(40, 0.3)), Pmf(-5, Eigen::VectorXd::LinSpaced(6, 1.0, 6.0)));
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    RandomStream rng(seed);
    const IntVector draws = sample(d, rng, 200000);
    int dof = 0;
    const double stat = chi_square(d, draws, dof);
    const double critical = boost::math::quantile(boost::math::chi_squared(dof), 1.0 - 1e-6);
    INFO("seed " << seed << ": chi2 = " << stat << " on " << dof << " dof, critical " << critical);
    REQUIRE(dof > 10);
    REQUIRE(stat < critical);
  }
}

TEST_CASE("same seed and stream, same draws, and another stream, other draws", "[sample]") {
  const Pmf d = to_pmf(Binomial(100, 0.5));
  RandomStream a(77, 5), b(77, 5), c(77, 6);
  const IntVector da = sample(d, a, 1000), db = sample(d, b, 1000), dc = sample(d, c, 1000);
  REQUIRE(da == db);
  REQUIRE(da != dc);
  REQUIRE(a.counter() == 1000);
  // single draws follow the same stream as batches
  RandomStream e(77, 5);
  for (int i = 0; i < 10; ++i) REQUIRE(sample(d, e) == da[i]);
}

TEST_CASE("inverse cdf never lands on a zero-mass point", "[sample]") {
  Eigen::VectorXd w(5);
  w << 1.0, 0.0, 0.0, 1.0, 1.0;
  const Pmf d(0, w);
  for (double u : {1e-300, 0.3333, 1.0 / 3.0, 0.5, 0.6666, 2.0 / 3.0, 1.0 - 1e-16}) {
    const auto k = inverse_cdf(d, u);
    REQUIRE(pdf(d, k) > 0.0);
  }
  REQUIRE(inverse_cdf(d, 0.2) == 0);
  REQUIRE(inverse_cdf(d, 0.5) == 3);
  REQUIRE(inverse_cdf(d, 0.9) == 4);
  REQUIRE(inverse_cdf(to_sparse(d), 0.5) == 3);
  REQUIRE_THROWS_AS(inverse_cdf(d, 0.0), domain_error);
  REQUIRE_THROWS_AS(inverse_cdf(d, 1.0), domain_error);
  REQUIRE_THROWS_AS(inverse_cdf(d, std::nan("")), domain_error);
}

}  // namespace test_sample
