// Children of joint coordinates against 50-digit enumeration: new axes, conditioning, truncation bounds, errors.
#include <catch2/catch.hpp>
#include <functional>
#include <limits>

#include "joint_brute_force.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/error.hpp"

namespace test_joint_children {

using namespace tally;
using test::big;
using test::JointLaw;

namespace {

using Likelihood = std::function<big(const Coordinates&, std::int64_t)>;

// (X, Y) by enumeration over y in [y_lo, y_hi]
JointLaw with_child(const JointLaw& law, std::int64_t y_lo, std::int64_t y_hi, const Likelihood& lik) {
  JointLaw out;
  for (const auto& [x, p] : law)
    for (std::int64_t y = y_lo; y <= y_hi; ++y) {
      Coordinates z = x;
      z.push_back(y);
      const big l = lik(x, y);
      if (l > 0) out[z] = p * l;
    }
  return out;
}

// the posterior and log-likelihood of an observed child, checked against enumeration
void require_conditioned(const JointConditioned& c, const JointLaw& law, std::int64_t y, const Likelihood& lik) {
  JointLaw post;
  for (const auto& [x, p] : law) {
    const big l = lik(x, y);
    if (l > 0) post[x] = p * l;
  }
  if (post.empty()) {
    REQUIRE_FALSE(c.posterior.has_value());
    REQUIRE(c.log_likelihood == -std::numeric_limits<double>::infinity());
    return;
  }
  REQUIRE(c.posterior.has_value());
  test::require_log_likelihood(c.log_likelihood, test::mass(post), 1e-12);
  test::require_joint(*c.posterior, test::normalized(post), 1e-12);
}

// a bounded child added as an axis is exact; a Poisson child is exact on its kept range, and its error bound
// bounds the mass it dropped (and is not more than 1e3 times looser than it where that mass is not tiny)
void require_child(const JointPmf& got, const JointLaw& law, const Likelihood& lik, bool truncated, double e_prior) {
  const std::int64_t y_lo = got.lo(got.rank() - 1), y_hi = got.hi(got.rank() - 1);
  const JointLaw want = with_child(law, truncated ? y_lo : 0, y_hi, lik);
  test::require_joint(got, want, 1e-12);
  if (!truncated) {
    REQUIRE(got.error_bound() <= e_prior + 1e-290);  // only flushed entries below 1e-301 can add to it
    return;
  }
  const big dropped = test::mass(law) - test::mass(want);
  const double l1 = static_cast<double>(dropped / test::mass(test::joint_law_of(got)));
  INFO("dropped " << std::scientific << l1 << ", bound " << got.error_bound() - e_prior);
  REQUIRE(l1 >= 0.0);
  REQUIRE(l1 <= got.error_bound() - e_prior);
}

}  // namespace

TEST_CASE("joint: thinning child of a coordinate, as an axis and observed", "[joint][child][thinning]") {
  std::mt19937_64 gen(301);
  const JointPmf d = test::random_joint(gen, {0, 2}, {3, 30}, 250.0, -600.0);
  const JointLaw law = test::joint_law_of(d);
  for (double q : {0.0, 0.2, 0.9, 1.0}) {
    CAPTURE(q);
    const Likelihood lik = [q](const Coordinates& x, std::int64_t y) { return test::binomial_big(x[1], y, q); };
    require_child(add_child(d, 1, Thinning(q)), law, lik, false, 0.0);
    for (std::int64_t y : {-1, 0, 1, 7, 20, 31, 32}) {
      CAPTURE(y);
      require_conditioned(condition(d, 1, Thinning(q), y), law, y, lik);
    }
  }
  const JointConditioned none = condition(d, 1, Thinning(0.5), 40);
  REQUIRE_FALSE(none.posterior.has_value());
  REQUIRE(none.log_likelihood_error == 0.0);
  REQUIRE(std::isinf(condition(d.with_error_bound(1e-15), 1, Thinning(0.5), 40).log_likelihood_error));
  REQUIRE_THROWS_WITH(add_child(affine(d, 0, 1, -1), 0, Thinning(0.5)), Catch::Contains("count >= 0"));
  REQUIRE_THROWS_AS(condition(affine(d, 0, 1, -1), 0, Thinning(0.5), 0), domain_error);
  REQUIRE_THROWS_AS(add_child(d, 2, Thinning(0.5)), shape_error);
}

TEST_CASE("joint: Poisson(a X) child: truncated axis, error bound and observations", "[joint][child][poisson]") {
  std::mt19937_64 gen(302);
  const JointPmf d = test::random_joint(gen, {0, 0}, {3, 25}, 100.0, 50.0).with_error_bound(1e-14);
  const JointLaw law = test::joint_law_of(d);
  const double a = 1.3;
  const Likelihood lik = [a](const Coordinates& x, std::int64_t y) {
    return test::poisson_big(y, a * static_cast<double>(x[1]));
  };
  for (double tol : {1e-3, 1e-9, 1e-15}) {
    CAPTURE(tol);
    Truncation t;
    t.tolerance = tol;
    const JointPmf c = add_child(d, 1, ScaledPoisson(a), t);
    require_child(c, law, lik, true, 1e-14);
    // the bound bounds the dropped mass and is within 1e3 of it where that mass is well above rounding
    const JointLaw want = with_child(law, c.lo(2), c.hi(2), lik);
    const double l1 = static_cast<double>((test::mass(law) - test::mass(want)) / test::mass(want));
    if (tol >= 1e-9) REQUIRE(c.error_bound() - 1e-14 <= 1e3 * l1 * (1 + 1e-14) + 2e-14);
  }
  for (std::int64_t y : {-1, 0, 3, 30, 200}) {
    CAPTURE(y);
    require_conditioned(condition(d, 1, ScaledPoisson(a), y), law, y, lik);
  }
  // the bound of an observation's likelihood follows from the prior's
  const JointConditioned c = condition(d, 1, ScaledPoisson(a), 3);
  const double rho = 1e-14 * std::exp(d.log_mass() - c.log_likelihood);
  REQUIRE(c.log_likelihood_error == Approx(-std::log1p(-rho)).epsilon(1e-9));
  REQUIRE(c.posterior->error_bound() == Approx(2.0 * std::expm1(c.log_likelihood_error)).epsilon(1e-6));
  // a table above max_size is refused, naming its size
  Truncation small;
  small.max_size = 500;
  REQUIRE_THROWS_AS(add_child(d, 1, ScaledPoisson(a), small), overflow_error);
  REQUIRE_THROWS_WITH(add_child(d, 1, ScaledPoisson(a), small), Catch::Contains("entries, more than max_size = 500"));
}

TEST_CASE("joint: indexed Poisson and Markov-step children of a state coordinate", "[joint][child][state]") {
  std::mt19937_64 gen(303);
  const JointPmf d = test::random_joint(gen, {0, 5}, {3, 4}, 200.0);
  const JointLaw law = test::joint_law_of(d);
  Eigen::VectorXd rates(3);
  rates << 0.5, 4.0, 30.0;
  const Likelihood pois = [&](const Coordinates& x, std::int64_t y) { return test::poisson_big(y, rates[x[0]]); };
  require_child(add_child(d, 0, IndexedPoisson(rates), {1e-12}), law, pois, true, 0.0);
  for (std::int64_t y : {0, 2, 25, 90}) require_conditioned(condition(d, 0, IndexedPoisson(rates), y), law, y, pois);
  Eigen::MatrixXd T(3, 4);
  T << 0.5, 0.25, 0.25, 0.0,  //
      0.0, 0.1, 0.6, 0.3,     //
      0.2, 0.2, 0.2, 0.4;
  const Likelihood step = [&](const Coordinates& x, std::int64_t y) {
    return y < 0 || y > 3 ? big(0) : big(T(x[0], y));
  };
  require_child(add_child(d, 0, MarkovStep(T)), law, step, false, 0.0);
  for (std::int64_t y : {-1, 0, 1, 3, 4}) require_conditioned(condition(d, 0, MarkovStep(T), y), law, y, step);
  REQUIRE(condition(d, 0, MarkovStep(T), 4).log_likelihood_error == 0.0);
  REQUIRE_THROWS_AS(add_child(d, 1, MarkovStep(T)), domain_error);  // values 5..8 are not states
  REQUIRE_THROWS_AS(condition(d, 1, IndexedPoisson(rates), 1), domain_error);
}

TEST_CASE("joint: Binomial(X, q_S), a thinning selected by a state", "[joint][child][selected]") {
  std::mt19937_64 gen(304);
  const JointPmf d = test::random_joint(gen, {0, 0, 10}, {2, 20, 3}, 250.0, -300.0);
  const JointLaw law = test::joint_law_of(d);
  Eigen::VectorXd q(2);
  q << 0.15, 0.8;
  const SelectedThinning k(1, 0, q);
  const Likelihood lik = [&](const Coordinates& x, std::int64_t y) { return test::binomial_big(x[1], y, q[x[0]]); };
  require_child(add_child(d, k), law, lik, false, 0.0);
  for (std::int64_t y : {0, 4, 13, 19, 20}) require_conditioned(condition(d, k, y), law, y, lik);
  REQUIRE_THROWS_AS(SelectedThinning(1, 0, Eigen::VectorXd::Constant(2, 1.5)), domain_error);
  REQUIRE_THROWS_AS(SelectedThinning(1, 0, Eigen::VectorXd(0)), shape_error);
  REQUIRE_THROWS_AS(add_child(d, SelectedThinning(1, 2, q)), domain_error);  // states 10..12
  REQUIRE_THROWS_AS(condition(d, SelectedThinning(1, 0, Eigen::VectorXd::Constant(1, 0.5)), 0), domain_error);
  REQUIRE_THROWS_AS(add_child(d, SelectedThinning(3, 0, q)), shape_error);
}

TEST_CASE("joint: Poisson(a R_S), emissions whose rate is a count selected by a state", "[joint][child][selected]") {
  // S a state in {0, 1}, rates R_0, R_1 unknown counts (Geometric-like priors): a dependent joint of the three
  std::mt19937_64 gen(305);
  const JointPmf d = test::random_joint(gen, {0, 0, 1}, {2, 15, 12}, 150.0, -700.0);
  const JointLaw law = test::joint_law_of(d);
  const double a = 0.7;
  const SelectedScaledPoisson k(0, {1, 2}, a);
  const Likelihood lik = [&](const Coordinates& x, std::int64_t y) {
    return test::poisson_big(y, a * static_cast<double>(x[static_cast<std::size_t>(1 + x[0])]));
  };
  for (double tol : {1e-6, 1e-15}) {
    Truncation t;
    t.tolerance = tol;
    require_child(add_child(d, k, t), law, lik, true, 0.0);
  }
  for (std::int64_t y : {-2, 0, 1, 6, 40}) require_conditioned(condition(d, k, y), law, y, lik);
  REQUIRE_THROWS_AS(SelectedScaledPoisson(0, {1, 2}, -1.0), domain_error);
  REQUIRE_THROWS_AS(SelectedScaledPoisson(0, {}, 1.0), shape_error);
  REQUIRE_THROWS_AS(add_child(d, SelectedScaledPoisson(0, {1}, a)), domain_error);  // state 1 has no rate
  REQUIRE_THROWS_AS(condition(affine(d, 1, 1, -1), k, 0), domain_error);  // a negative rate count
}

TEST_CASE("joint: on k = 1 children agree with the 1-D child laws", "[joint][child][one]") {
  std::mt19937_64 gen(306);
  const Pmf x = test::random_pmf(gen, 0, 40, 200.0).with_error_bound(2e-15);
  const JointPmf j = joint(x);
  const auto same = [](const JointConditioned& got, const Conditioned& want) {
    REQUIRE(got.posterior.has_value() == want.posterior.has_value());
    REQUIRE(got.log_likelihood == Approx(want.log_likelihood).epsilon(1e-13));
    REQUIRE(got.log_likelihood_error == Approx(want.log_likelihood_error).epsilon(1e-6));
    if (!want.posterior) return;
    test::require_law(marginal(*got.posterior, 0), test::law_of(*want.posterior), 1e-12);
    REQUIRE(got.posterior->error_bound() == Approx(want.posterior->error_bound()).epsilon(1e-6));
  };
  for (std::int64_t y : {0, 5, 39, 41}) same(condition(j, 0, Thinning(0.4), y), condition(x, Thinning(0.4), y));
  for (std::int64_t y : {0, 5, 80}) same(condition(j, 0, ScaledPoisson(1.5), y), condition(x, ScaledPoisson(1.5), y));
  test::require_law(marginal(add_child(j, 0, Thinning(0.4)), 1), test::law_of(marginal(x, Thinning(0.4))), 1e-12);
  // Poisson mixtures: equal where both keep the entry
  const Pmf m1 = marginal(add_child(j, 0, ScaledPoisson(1.5), {1e-300}), 1);
  const Pmf m2 = marginal(x, ScaledPoisson(1.5), {1e-300});
  REQUIRE(m1.lo() == m2.lo());
  REQUIRE(m1.hi() == m2.hi());
  for (std::int64_t y = m1.lo(); y <= m1.hi(); ++y)
    if (log_pdf(m2, y) > m2.log_scale() - 600.0) REQUIRE(log_pdf(m1, y) == Approx(log_pdf(m2, y)).epsilon(1e-13));
  const Pmf s(0, Eigen::VectorXd::Ones(3));
  Eigen::VectorXd rates(3);
  rates << 1.0, 2.0, 9.0;
  for (std::int64_t y : {0, 4, 20}) same(condition(joint(s), 0, IndexedPoisson(rates), y), condition(s, IndexedPoisson(rates), y));
}

}  // namespace test_joint_children
