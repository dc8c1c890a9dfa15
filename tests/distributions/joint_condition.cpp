// Conditioning joint laws on sums, differences and values of coordinates, and sampling, against enumeration.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "joint_brute_force.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/error.hpp"

namespace test_joint_condition {

using namespace tally;
using test::big;
using test::JointLaw;

namespace {
// the posterior given kappa . X = z and its evidence, by enumeration
void require_linear(const JointConditioned& c, const JointLaw& law, const Coordinates& kappa, std::int64_t z) {
  JointLaw post;
  for (const auto& [x, p] : law) {
    std::int64_t v = 0;
    for (std::size_t a = 0; a < x.size(); ++a) v += kappa[a] * x[a];
    if (v == z) post[x] = p;
  }
  if (post.empty()) {
    REQUIRE_FALSE(c.posterior.has_value());
    REQUIRE(c.log_likelihood == -std::numeric_limits<double>::infinity());
    return;
  }
  REQUIRE(c.posterior.has_value());
  test::require_log_likelihood(c.log_likelihood, test::mass(post), 1e-13);
  test::require_joint(*c.posterior, test::normalized(post), 1e-13);
}
}  // namespace

TEST_CASE("joint: conditioning on observed sums, differences and values of coordinates", "[joint][condition]") {
  std::mt19937_64 gen(401);
  const JointPmf d = test::random_joint(gen, {0, -2, 3}, {5, 6, 4}, 250.0, -900.0);
  const JointLaw law = test::joint_law_of(d);
  for (std::int64_t z = -3; z <= 16; ++z) {
    CAPTURE(z);
    require_linear(condition_on_sum(d, {0, 1, 2}, z), law, {1, 1, 1}, z);
    require_linear(condition_on_sum(d, {0, 2}, z), law, {1, 0, 1}, z);
    require_linear(condition_on_sum(d, {1, 1}, z), law, {0, 2, 0}, z);
    require_linear(condition_on_difference(d, 2, 1, z - 5), law, {0, -1, 1}, z - 5);
    require_linear(condition_on_value(d, 1, z - 5), law, {0, 1, 0}, z - 5);
    require_linear(condition_on_linear(d, {3, -2, 1}, z), law, {3, -2, 1}, z);
  }
  // impossible observations: exactly impossible without error, unknowable with one
  const JointConditioned none = condition_on_sum(d, {0, 1}, 100);
  REQUIRE_FALSE(none.posterior.has_value());
  REQUIRE(none.log_likelihood_error == 0.0);
  REQUIRE(std::isinf(condition_on_sum(d.with_error_bound(1e-15), {0, 1}, 100).log_likelihood_error));
  // the error bounds of a possible observation, from the prior's: rho = e M / L
  const JointPmf e = test::random_joint(gen, {0, -2, 3}, {5, 6, 4}, 1.0, -900.0).with_error_bound(1e-13);
  const JointConditioned c = condition_on_sum(e, {0, 1}, 4);
  const double rho = 1e-13 * std::exp(e.log_mass() - c.log_likelihood);
  REQUIRE(rho < 1e-11);
  REQUIRE(c.log_likelihood_error == Approx(-std::log1p(-rho)).epsilon(1e-9));
  REQUIRE(c.posterior->error_bound() == Approx(std::min(2.0, 2.0 * rho)).epsilon(1e-9));
  // an observation less likely than the dropped mass: the bound says it knows nothing
  const JointConditioned rare = condition_on_sum(d.with_error_bound(1e-3), {0, 1, 2}, -3);
  if (rare.posterior) {
    const double r = 1e-3 * std::exp(d.log_mass() - rare.log_likelihood);
    if (r >= 1.0) REQUIRE(std::isinf(rare.log_likelihood_error));
    REQUIRE(rare.posterior->error_bound() == Approx(std::min(2.0, 2.0 * r)).epsilon(1e-9));
  }
  REQUIRE_THROWS_AS(condition_on_sum(d, {0, 3}, 1), shape_error);
  REQUIRE_THROWS_AS(condition_on_linear(d, {1, 1}, 1), shape_error);
  // no overflow for extreme observations and coefficients
  const std::int64_t big_int = std::numeric_limits<std::int64_t>::max();
  REQUIRE_FALSE(condition_on_linear(d, {big_int, big_int, big_int}, -1).posterior.has_value());
}

TEST_CASE("joint: on k = 2 the observed sum of independent coordinates is condition_on_sum", "[joint][condition][one]") {
  std::mt19937_64 gen(402);
  const Pmf x = test::random_pmf(gen, 1, 30, 200.0).with_error_bound(1e-15);
  const Pmf y = test::random_pmf(gen, -4, 20, 200.0);
  const JointPmf d = independent({x, y});
  for (std::int64_t z : {-10, -3, 0, 12, 40, 45, 46}) {
    CAPTURE(z);
    const JointConditioned got = condition_on_sum(d, {0, 1}, z);
    const Conditioned want = condition_on_sum(x, y, z);
    REQUIRE(got.posterior.has_value() == want.posterior.has_value());
    if (!want.posterior) continue;
    REQUIRE(got.log_likelihood == Approx(want.log_likelihood).epsilon(1e-13));
    test::require_law(marginal(*got.posterior, 0), test::law_of(*want.posterior), 1e-12);
    // the joint bound (e M / L) and the 1-D one (which knows the operands separately) both bound the same error
    REQUIRE(got.log_likelihood_error >= 0.0);
  }
  const Conditioned a = condition_affine(x, 1, 0, 7);
  const JointConditioned b = condition_on_value(joint(x), 0, 7);
  REQUIRE(b.log_likelihood == Approx(a.log_likelihood).epsilon(1e-15));
}

TEST_CASE("joint: draws of the whole tuple fit the table", "[joint][sample]") {
  std::mt19937_64 gen(403);
  Eigen::VectorXd w(12);
  w << 0.1, 0.0, 0.3, 0.05, 0.2, 0.0, 0.15, 0.02, 0.08, 0.0, 0.06, 0.04;
  const JointPmf d({-1, 0, 2}, {2, 3, 2}, w, -1000.0);
  const JointLaw law = test::normalized(test::joint_law_of(d));
  RandomStream rng(7, 3);
  const int n = 200000;
  std::map<Coordinates, int> counts;
  for (int i = 0; i < n; ++i) ++counts[sample(d, rng)];
  for (const auto& [x, c] : counts) REQUIRE(law.count(x) == 1);  // never a point of zero mass
  double chi2 = 0.0;
  for (const auto& [x, p] : law) {
    const double expected = n * static_cast<double>(p);
    const double got = counts.count(x) ? counts.at(x) : 0;
    chi2 += (got - expected) * (got - expected) / expected;
  }
  REQUIRE(chi2 < 40.0);  // 8 degrees of freedom: P(chi2 > 40) < 1e-5
  // a rank-1 joint draws exactly what its pmf draws
  const Pmf x = test::random_pmf(gen, -3, 25);
  RandomStream r1(11, 0), r2(11, 0);
  for (int i = 0; i < 1000; ++i) REQUIRE(sample(joint(x), r1)[0] == sample(x, r2));
}

TEST_CASE("joint: a sampled coordinate, then the others given it", "[joint][sample][coordinate]") {
  std::mt19937_64 gen(404);
  const JointPmf d = test::random_joint(gen, {0, 3, -1}, {3, 4, 2}, 2.0);
  const JointLaw law = test::normalized(test::joint_law_of(d));
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    RandomStream rng(5, static_cast<std::uint64_t>(axis));
    std::map<std::int64_t, int> counts;
    const int n = 50000;
    for (int i = 0; i < n; ++i) {
      const CoordinateDraw draw = sample_coordinate(d, axis, rng);
      ++counts[draw.value];
      if (i < 20) {
        // the rest is the exact conditional law of the others
        JointLaw rest;
        for (const auto& [x, p] : law)
          if (x[static_cast<std::size_t>(axis)] == draw.value) {
            Coordinates y = x;
            y.erase(y.begin() + axis);
            rest[y] = p;
          }
        REQUIRE(draw.rest.has_value());
        test::require_joint(*draw.rest, test::normalized(rest), 1e-13);
      }
    }
    const test::Law m = test::law_of(marginal(d, axis).normalized());
    for (const auto& [v, p] : m) {
      const double expected = n * static_cast<double>(p);
      const double got = counts.count(v) ? counts.at(v) : 0;
      REQUIRE(std::abs(got - expected) <= 6.0 * std::sqrt(expected) + 1.0);
    }
  }
  RandomStream rng(1);
  REQUIRE_FALSE(sample_coordinate(joint(Pmf::point(4)), 0, rng).rest.has_value());
  REQUIRE_THROWS_AS(sample_coordinate(d, 3, rng), shape_error);
}

TEST_CASE("joint: a diamond, exactly (a common cause of two children that meet in an observed sum)", "[joint][diamond]") {
  // N a count; A ~ Binomial(N, 0.3) and B = N - A (the split); D ~ Binomial(B, 0.5); observe A + D = 4: A and D
  // share the ancestor N, so no product of marginals gives this. Compared with enumeration over (N, A, D).
  Eigen::VectorXd w(9);
  w << 0.05, 0.1, 0.15, 0.2, 0.15, 0.12, 0.1, 0.08, 0.05;
  const Pmf n(2, w);
  JointPmf j = split(joint(n), 0, 0.3);  // (N - A, A)
  j = add_child(j, 0, Thinning(0.5));    // (B, A, D) with D ~ Binomial(B, 0.5)
  const JointConditioned c = condition_on_sum(j, {1, 2}, 4);
  big evidence = 0;
  test::Law post_a;
  for (std::int64_t v = 2; v <= 10; ++v)
    for (std::int64_t a = 0; a <= v; ++a)
      for (std::int64_t dd = 0; dd <= v - a; ++dd) {
        if (a + dd != 4) continue;
        const big p = big(w[v - 2]) * test::binomial_big(v, a, 0.3) * test::binomial_big(v - a, dd, 0.5);
        evidence += p;
        post_a[a] += p;
      }
  REQUIRE(c.posterior.has_value());
  test::require_log_likelihood(c.log_likelihood, evidence, 1e-12);
  test::require_pmf(marginal(*c.posterior, 1), test::normalized(post_a), 1e-12);
}

}  // namespace test_joint_condition
