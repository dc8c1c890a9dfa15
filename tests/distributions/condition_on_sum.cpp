// X given X + Y = z (one skew diagonal of the outer product) and given affine observations, against enumeration.
#include <catch2/catch.hpp>
#include <limits>

#include "brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace test_condition_on_sum {

using namespace tally;
using test::big;
using test::Law;

TEST_CASE("X | X + Y = z is the normalized skew diagonal, with the evidence", "[condition][sum]") {
  std::mt19937_64 gen(21);
  for (int trial = 0; trial < 30; ++trial) {
    const Pmf x = test::random_pmf(gen, static_cast<std::int64_t>(gen() % 9) - 4, 1 + static_cast<Eigen::Index>(gen() % 40), 10.0);
    const Pmf y = test::random_pmf(gen, static_cast<std::int64_t>(gen() % 9) - 4, 1 + static_cast<Eigen::Index>(gen() % 40), 10.0);
    const auto lx = test::law_of(x), ly = test::law_of(y);
    for (std::int64_t z = x.lo() + y.lo() - 1; z <= x.hi() + y.hi() + 1; ++z) {
      Law joint;
      for (const auto& [i, p] : lx)
        if (ly.count(z - i)) joint[i] = p * ly.at(z - i);
      const Conditioned c = condition_on_sum(x, y, z);
      INFO("z = " << z);
      if (joint.empty()) {
        REQUIRE_FALSE(c.posterior.has_value());
        REQUIRE(c.log_likelihood == -std::numeric_limits<double>::infinity());
        continue;
      }
      REQUIRE(c.posterior.has_value());
      test::require_law(*c.posterior, test::normalized(joint), 1e-13);
      REQUIRE(std::abs(c.log_likelihood - static_cast<double>(log(test::mass(joint)))) <= 1e-13);
      // the evidence is the sum's pmf at z
      REQUIRE(c.log_likelihood == Approx(log_pdf(sum(x, y), z)).epsilon(1e-13));
      // and X - Y = d conditions X the same way as X + (-Y) = d
      const Conditioned d = condition_on_difference(x, negate(y), z);
      REQUIRE(d.log_likelihood == Approx(c.log_likelihood).epsilon(1e-14));
    }
  }
}

TEST_CASE("conditioning on a sum far in the tails keeps relative accuracy", "[condition][sum][tails]") {
  // all products below 1e-600: the likelihood must come out as a log, not as zero
  Eigen::VectorXd lw(4);
  lw << -700.0, -701.0, -702.0, -703.0;
  const Pmf x = Pmf::from_log(0, lw), y = Pmf::from_log(0, lw);
  const Conditioned c = condition_on_sum(x, y, 3);
  REQUIRE(c.posterior.has_value());
  // joint on the diagonal: e^-1403 for each of the 4 pairs
  REQUIRE(c.log_likelihood == Approx(-1403.0 + std::log(4.0)).epsilon(1e-15));
  for (std::int64_t j = 0; j <= 3; ++j) REQUIRE(pdf(*c.posterior, j) == Approx(0.25).epsilon(1e-14));
}

TEST_CASE("observing a X + c = v pins X or is impossible", "[condition][affine]") {
  std::mt19937_64 gen(22);
  const Pmf x = test::random_pmf(gen, -3, 10);
  const Conditioned c = condition_affine(x, 3, 1, 3 * 6 + 1);  // x's last point, 6, has positive mass
  REQUIRE(c.posterior.has_value());
  REQUIRE(pdf(*c.posterior, 6) == 1.0);
  REQUIRE(c.log_likelihood == Approx(log_pdf(x, 6)));
  REQUIRE_FALSE(condition_affine(x, 3, 1, 3 * 2 + 2).posterior.has_value());  // 3 does not divide
  REQUIRE_FALSE(condition_affine(x, 1, 0, 100).posterior.has_value());        // outside the support
  REQUIRE(condition_affine(x, 0, 4, 4).log_likelihood == Approx(0.0).margin(1e-15));
  REQUIRE(condition_affine(x, 0, 4, 5).log_likelihood == -std::numeric_limits<double>::infinity());
  // extreme values do not overflow
  REQUIRE_FALSE(condition_affine(x, -1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max())
                    .posterior.has_value());
  REQUIRE_FALSE(condition_on_sum(x, x, std::numeric_limits<std::int64_t>::min()).posterior.has_value());
}

}  // namespace test_condition_on_sum
