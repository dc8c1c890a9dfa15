// Joint algebra against 50-digit enumeration: convolution along an axis, linear combinations, Markov steps, split.
#include <catch2/catch.hpp>
#include <limits>

#include "joint_brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/error.hpp"

namespace test_joint_algebra {

using namespace tally;
using test::big;
using test::JointLaw;

TEST_CASE("joint: adding an independent law to one coordinate", "[joint][algebra][convolution]") {
  std::mt19937_64 gen(201);
  const JointPmf d = test::random_joint(gen, {0, -3, 2}, {3, 6, 4}, 200.0, -400.0).with_error_bound(1e-14);
  const Pmf y = Pmf(-2, test::random_pmf(gen, -2, 9, 200.0).weights(), -500.0, 2e-15);
  const JointLaw law = test::joint_law_of(d);
  const test::Law ly = test::law_of(y);
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    JointLaw want;
    for (const auto& [x, p] : law)
      for (const auto& [j, q] : ly) {
        Coordinates z = x;
        z[static_cast<std::size_t>(axis)] += j;
        want[z] += p * q;
      }
    const JointPmf s = add_independent(d, axis, y);
    test::require_joint(s, want, 1e-12);
    REQUIRE(test::smallest_ratio(test::joint_law_of(s)) < 1e-200);
    REQUIRE(s.error_bound() == Approx(1e-14 + 2e-15 + 2e-29).epsilon(1e-12));
  }
  REQUIRE_THROWS_AS(add_independent(d, 3, y), shape_error);
  REQUIRE_THROWS_AS(add_independent(d, 0, Pmf(std::numeric_limits<std::int64_t>::max() - 1, Eigen::VectorXd::Ones(1))),
                    overflow_error);
}

namespace {
// the law of (X, V) or (X_{-r}, V) for V = c + kappa . X, by enumeration
JointLaw linear_law(const JointLaw& law, const Coordinates& kappa, std::int64_t c, int replace) {
  JointLaw want;
  for (const auto& [x, p] : law) {
    std::int64_t v = c;
    for (std::size_t a = 0; a < x.size(); ++a) v += kappa[a] * x[a];
    Coordinates z = x;
    if (replace < 0)
      z.push_back(v);
    else
      z[static_cast<std::size_t>(replace)] = v;
    want[z] += p;
  }
  return want;
}
}  // namespace

TEST_CASE("joint: sums, differences and affine maps of coordinates", "[joint][algebra][linear]") {
  std::mt19937_64 gen(202);
  const JointPmf d = test::random_joint(gen, {1, -4, 0}, {5, 4, 3}, 250.0, 300.0);
  const JointLaw law = test::joint_law_of(d);
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      for (int replace : {-1, a}) {
        CAPTURE(a, b, replace);
        Coordinates plus(3, 0), minus(3, 0);
        plus[static_cast<std::size_t>(a)] += 1;
        plus[static_cast<std::size_t>(b)] += 1;
        minus[static_cast<std::size_t>(a)] += 1;
        minus[static_cast<std::size_t>(b)] -= 1;
        test::require_joint(sum_of_coordinates(d, a, b, replace), linear_law(law, plus, 0, replace), 1e-13);
        if (a != b)
          test::require_joint(difference_of_coordinates(d, a, b, replace), linear_law(law, minus, 0, replace), 1e-13);
      }
  for (int axis = 0; axis < 3; ++axis)
    for (std::int64_t s : {-3, -1, 0, 1, 2})
      for (std::int64_t c : {-7, 0, 5}) {
        CAPTURE(axis, s, c);
        Coordinates kappa(3, 0);
        kappa[static_cast<std::size_t>(axis)] = s;
        test::require_joint(affine(d, axis, s, c), linear_law(law, kappa, c, axis), 1e-13);
      }
  // a general combination appended, and the error bound carried unchanged
  const Coordinates kappa{2, -1, 3};
  const JointPmf e = d.with_error_bound(1e-13);
  const JointPmf l = linear_combination(e, kappa, 11);
  test::require_joint(l, linear_law(law, kappa, 11, -1), 1e-13);
  REQUIRE(l.error_bound() == 1e-13);
  REQUIRE(l.rank() == 4);
  REQUIRE_THROWS_AS(linear_combination(d, {1, 1}, 0), shape_error);
  REQUIRE_THROWS_AS(linear_combination(d, kappa, 0, 3), shape_error);
  REQUIRE_THROWS_AS(sum_of_coordinates(d, 0, 5), shape_error);
  REQUIRE_THROWS_AS(affine(d, 0, std::numeric_limits<std::int64_t>::max(), 0), overflow_error);
  Truncation small;
  small.max_size = 100;
  REQUIRE_THROWS_WITH(affine(d, 0, 1000, 0, small), Catch::Contains("max_size"));
}

TEST_CASE("joint: the law of a linear form, read without its table", "[joint][algebra][linear]") {
  // linear_form_law(d, kappa, c) is the last marginal of linear_combination(d, kappa, c), for fresh random tables
  // and forms (zero, negative and repeated coefficients), with d's error bound
  std::mt19937_64 gen(204);
  std::uniform_int_distribution<std::int64_t> coefficient(-3, 3), constant(-9, 9);
  for (int trial = 0; trial < 40; ++trial) {
    const JointPmf d = test::random_joint(gen, {1, -4, 0}, {5, 4, 3}, 250.0, 300.0).with_error_bound(1e-13);
    const Coordinates kappa{coefficient(gen), coefficient(gen), coefficient(gen)};
    const std::int64_t c = constant(gen);
    CAPTURE(trial, kappa[0], kappa[1], kappa[2], c);
    const Pmf got = linear_form_law(d, kappa, c);
    const JointPmf full = linear_combination(d, kappa, c);
    const Pmf want = marginal(full, full.rank() - 1);
    REQUIRE(got.error_bound() == d.error_bound());
    REQUIRE(got.log_mass() == Approx(want.log_mass()).epsilon(1e-13));
    for (std::int64_t v = std::min(got.lo(), want.lo()); v <= std::max(got.hi(), want.hi()); ++v)
      REQUIRE(pdf(got, v) == Approx(pdf(want, v)).epsilon(1e-13).margin(1e-300));
  }
  REQUIRE_THROWS_AS(linear_form_law(test::random_joint(gen, {0, 0}, {2, 2}, 1.0, 0.0), {1}, 0), shape_error);
  Truncation small;
  small.max_size = 10;
  REQUIRE_THROWS_AS(linear_form_law(test::random_joint(gen, {0, 0}, {5, 5}, 1.0, 0.0), {10, 1}, 0, small),
                    overflow_error);
}

TEST_CASE("joint: a Markov step of one coordinate", "[joint][algebra][markov]") {
  Eigen::MatrixXd T(4, 3);
  T << 0.5, 0.25, 0.25,  //
      0.0, 0.1, 0.9,     //
      1e-200, 0.5, 0.5 - 1e-200,  //
      0.3, 0.3, 0.4;
  std::mt19937_64 gen(203);
  const JointPmf d = test::random_joint(gen, {0, 1, -5}, {4, 3, 2}, 100.0, -1000.0);
  const JointLaw law = test::joint_law_of(d);
  for (int axis : {0, 1}) {
    CAPTURE(axis);
    const JointPmf in_range = axis == 0 ? d : affine(d, 1, 1, -1);  // axis 1 shifted into the states 0..2
    const JointLaw prior = test::joint_law_of(in_range);
    JointLaw want;
    for (const auto& [x, p] : prior)
      for (Eigen::Index y = 0; y < T.cols(); ++y) {
        Coordinates z = x;
        z[static_cast<std::size_t>(axis)] = y;
        want[z] += p * big(T(x[static_cast<std::size_t>(axis)], y));
      }
    test::require_joint(markov_step(in_range, axis, MarkovStep(T)), want, 1e-13);
  }
  REQUIRE_THROWS_AS(markov_step(d, 2, MarkovStep(T)), domain_error);  // values -5, -4 are not states
  REQUIRE_THROWS_AS(markov_step(affine(d, 0, 2, 0), 0, MarkovStep(T)), domain_error);  // 6 is not a state
  (void)law;
}

TEST_CASE("joint: the binomial split X -> (X - Y, Y)", "[joint][algebra][split]") {
  std::mt19937_64 gen(204);
  const JointPmf d = test::random_joint(gen, {0, 3}, {4, 40}, 250.0, -200.0).with_error_bound(5e-15);
  const JointLaw law = test::joint_law_of(d);
  for (double q : {0.0, 0.03, 0.5, 0.97, 1.0})
    for (int axis : {0, 1}) {
      CAPTURE(q, axis);
      JointLaw want;
      for (const auto& [x, p] : law) {
        const std::int64_t n = x[static_cast<std::size_t>(axis)];
        for (std::int64_t y = 0; y <= n; ++y) {
          Coordinates z = x;
          z[static_cast<std::size_t>(axis)] = n - y;
          z.push_back(y);
          want[z] += p * test::binomial_big(n, y, q);
        }
      }
      const JointPmf s = split(d, axis, q);
      test::require_joint(s, want, 1e-12);
      REQUIRE(s.error_bound() >= 5e-15);
      REQUIRE(s.error_bound() <= 5e-15 + 1e-290);
      if (q == 0.5) REQUIRE(test::smallest_ratio(test::joint_law_of(s)) < 1e-240);
    }
  REQUIRE_THROWS_AS(split(d, 0, 1.5), domain_error);
  REQUIRE_THROWS_AS(split(d, 0, std::nan("")), domain_error);
  REQUIRE_THROWS_WITH(split(affine(d, 0, 1, -1), 0, 0.5), Catch::Contains("count >= 0"));
  REQUIRE_THROWS_AS(split(d, 2, 0.5), shape_error);
}

TEST_CASE("joint: on k = 1 the joint algebra is the 1-D algebra", "[joint][algebra][one]") {
  std::mt19937_64 gen(205);
  const Pmf x = test::random_pmf(gen, 2, 40, 250.0).with_error_bound(1e-15);
  const Pmf y = test::random_pmf(gen, -5, 30, 250.0);
  const Pmf s = marginal(add_independent(joint(x), 0, y), 0);
  test::require_law(s, test::law_of(sum(x, y)), 1e-12);
  REQUIRE(s.error_bound() == sum(x, y).error_bound());
  test::require_law(marginal(affine(joint(x), 0, -3, 4), 0), test::law_of(affine(x, -3, 4)), 1e-15);
  test::require_law(marginal(sum_of_coordinates(independent({x, y}), 0, 1), 2), test::law_of(sum(x, y)), 1e-12);
  test::require_law(marginal(difference_of_coordinates(independent({x, y}), 0, 1, 0), 0),
                    test::law_of(difference(x, y)), 1e-12);
  // the split's moved part is the thinning, its kept part the complementary thinning
  const JointPmf sp = split(joint(x), 0, 0.3);
  test::require_law(marginal(sp, 1), test::law_of(marginal(x, Thinning(0.3))), 1e-12);
  test::require_law(marginal(sp, 0), test::law_of(marginal(x, Thinning(0.7))), 1e-12);
  Eigen::MatrixXd T = Eigen::MatrixXd::Constant(45, 2, 0.5);
  T.col(0).setLinSpaced(0.01, 0.99);
  T.col(1) = 1.0 - T.col(0).array();
  test::require_law(marginal(markov_step(joint(x), 0, MarkovStep(T)), 0), test::law_of(marginal(x, MarkovStep(T))), 1e-13);
}

}  // namespace test_joint_algebra
