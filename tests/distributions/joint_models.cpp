// Joint laws composed as a model uses them: two coupled populations with migration, against a 50-digit recursion.
#include <catch2/catch.hpp>
#include <cmath>
#include <iomanip>
#include <map>
#include <tuple>
#include <vector>

#include "joint_brute_force.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/geometric.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/poisson.hpp"

namespace test_joint_models {

using namespace tally;
using test::big;
using test::JointLaw;

namespace {
struct Season {
  std::int64_t count_a, count_b;
};
}  // namespace

// Each season a Binomial(A, m) share of compartment A migrates to B, the rest of A survives with probability phi,
// B receives Poisson(iota) immigrants, and both are counted through Binomial(., p). The migrants are a count split
// in two parts that both go on (A's survivors and B), so A and B are coupled: no product of marginals is exact.
TEST_CASE("joint: two coupled populations with migration, exact evidence over four seasons", "[joint][model]") {
  const double m = 0.3, phi = 0.8, iota = 1.5, p = 0.6;
  const std::vector<Season> data = {{4, 3}, {2, 4}, {2, 2}, {1, 5}};
  // tally: the joint of (A, B), as an engine would drive it
  JointPmf d = independent({to_pmf(Binomial(9, 0.5)), to_pmf(Binomial(6, 0.4))});
  const Pmf immigration = to_pmf(Poisson(iota), {1e-300});  // truncated where no kept entry can see it
  double log_evidence = 0.0, log_error = 0.0;
  for (const Season& s : data) {
    d = split(d, 0, m);                        // (A - M, B, M)
    d = sum_of_coordinates(d, 1, 2, 1);        // (A - M, B + M, M): B + M in place of B
    d = marginalize_out(d, 2);                 // (A - M, B + M)
    d = marginalize_out(split(d, 0, 1.0 - phi), 2);  // survivors of A: (A - M) - deaths
    d = add_independent(d, 1, immigration);   // immigrants to B
    for (int axis : {0, 1}) {
      const JointConditioned c = condition(d, axis, Thinning(p), axis == 0 ? s.count_a : s.count_b);
      REQUIRE(c.posterior.has_value());
      log_evidence += c.log_likelihood;
      log_error += c.log_likelihood_error;
      d = *c.posterior;
    }
  }
  // the same recursion over a map of (a, b) in 50 digits, immigration cut where its tail is below 1e-40; the
  // 50-digit pmfs are tabulated once (each is an lgamma in 50 digits)
  std::map<std::tuple<std::int64_t, std::int64_t, double>, big> binomials;
  const auto binomial = [&](std::int64_t n, std::int64_t k, double q) -> const big& {
    const auto key = std::make_tuple(n, k, q);
    auto it = binomials.find(key);
    if (it == binomials.end()) it = binomials.emplace(key, test::binomial_big(n, k, q)).first;
    return it->second;
  };
  std::vector<big> immigrants;
  for (std::int64_t imm = 0; imm <= 45; ++imm) immigrants.push_back(test::poisson_big(imm, iota));
  JointLaw law;
  for (std::int64_t a = 0; a <= 9; ++a)
    for (std::int64_t b = 0; b <= 6; ++b) law[{a, b}] = binomial(9, a, 0.5) * binomial(6, b, 0.4);
  big evidence = 1;
  for (const Season& s : data) {
    JointLaw next;
    for (const auto& [x, w] : law)
      for (std::int64_t mig = 0; mig <= x[0]; ++mig)
        for (std::int64_t live = 0; live <= x[0] - mig; ++live) {
          const big q = w * binomial(x[0], mig, m) * binomial(x[0] - mig, live, phi);
          for (std::int64_t imm = 0; imm < static_cast<std::int64_t>(immigrants.size()); ++imm)
            next[{live, x[1] + mig + imm}] += q * immigrants[static_cast<std::size_t>(imm)];
        }
    JointLaw observed;
    for (const auto& [x, w] : next) {
      const big l = w * binomial(x[0], s.count_a, p) * binomial(x[1], s.count_b, p);
      if (l > 0) observed[x] = l;
    }
    const big mass = test::mass(observed);
    evidence *= mass / test::mass(law);
    law = test::normalized(observed);
  }
  const double want = static_cast<double>(boost::multiprecision::log(evidence));
  INFO("log evidence " << std::setprecision(17) << log_evidence << " want " << want << " error bound " << log_error);
  REQUIRE(std::abs(log_evidence - want) <= 1e-13 * std::abs(want));
  // (the carried bound bounds it, but loosely: each observation multiplies the relative error bound by 2 M / L, as
  // the 1-D conditionings do; see bench/RESULTS.md, "Joint laws' error bound")
  REQUIRE(std::abs(log_evidence - want) <= log_error + 1e-13 * std::abs(want));
  // the posterior of (A, B) after the last count, every entry the recursion has exactly (B <= 45: no immigrants
  // beyond its cut) above 1e-250
  const JointLaw got = test::joint_law_of(d.normalized());
  std::size_t checked = 0;
  for (const auto& [x, w] : law) {
    if (x[1] > 45 || w < 1e-250) continue;
    ++checked;
    CAPTURE(x);
    REQUIRE(got.count(x) == 1);
    REQUIRE(test::relative_error_big(got.at(x), w) <= 1e-12);
  }
  REQUIRE(checked > 200);
}

// An HMM whose Poisson emission rates are unknown counts: S_t a two-state Markov chain, R_0, R_1 Geometric
// counts, y_t ~ Poisson(a R_{S_t}). Every emission couples S_t with both rates, so the filter runs on the joint of
// (S, R_0, R_1); the forward algorithm over that joint in 50 digits is the reference.
TEST_CASE("joint: an HMM with Poisson emissions whose rates are unknown counts", "[joint][model][hmm]") {
  const double a = 1.5;
  Eigen::MatrixXd T(2, 2);
  T << 0.9, 0.1,  //
      0.2, 0.8;
  const std::vector<std::int64_t> ys = {1, 0, 2, 9, 12, 7, 1, 0, 11};
  const Pmf r0 = to_pmf(Geometric(0.5), {1e-40}), r1 = to_pmf(Geometric(0.15), {1e-40});
  JointPmf d = independent({Pmf(0, Eigen::Vector2d(0.5, 0.5)), r0, r1});
  const SelectedScaledPoisson emission(0, {1, 2}, a);
  double log_evidence = 0.0;
  for (std::int64_t y : ys) {
    d = markov_step(d, 0, MarkovStep(T));
    const JointConditioned c = condition(d, emission, y);
    REQUIRE(c.posterior.has_value());
    log_evidence += c.log_likelihood;
    d = *c.posterior;
  }
  // forward algorithm over (s, r0, r1) on the same truncated priors, in 50 digits
  JointLaw law;
  for (const auto& [u, pu] : test::law_of(r0))
    for (const auto& [v, pv] : test::law_of(r1))
      for (std::int64_t s = 0; s < 2; ++s) law[{s, u, v}] = big(0.5) * pu * pv;
  std::map<std::pair<std::int64_t, std::int64_t>, big> poissons;  // Poisson(y; a r), each an lgamma in 50 digits
  const auto poisson = [&](std::int64_t y, std::int64_t r) -> const big& {
    auto it = poissons.find({y, r});
    if (it == poissons.end()) it = poissons.emplace(std::make_pair(y, r), test::poisson_big(y, a * static_cast<double>(r))).first;
    return it->second;
  };
  big evidence = 1;
  for (std::int64_t y : ys) {
    JointLaw next;
    for (const auto& [x, w] : law)
      for (std::int64_t s = 0; s < 2; ++s) {
        const big& lik = poisson(y, x[static_cast<std::size_t>(1 + s)]);
        if (lik > 0) next[{s, x[1], x[2]}] += w * big(T(x[0], s)) * lik;
      }
    const big step = test::mass(next) / test::mass(law);
    evidence *= step;
    law = next;
  }
  const double want = static_cast<double>(boost::multiprecision::log(evidence));
  REQUIRE(std::abs(log_evidence - want) <= 1e-13 * std::abs(want));
  test::require_joint(d, test::normalized(law), 1e-11);
  // the posterior of each rate
  for (int axis : {1, 2}) {
    test::Law m;
    for (const auto& [x, w] : test::normalized(law)) m[x[static_cast<std::size_t>(axis)]] += w;
    const test::Law got = test::law_of(marginal(d, axis));
    for (const auto& [k, w] : m)
      if (w > 1e-250) REQUIRE(test::relative_error_big(got.at(k), w) <= 1e-11);
  }
}

// A diamond: cloudy C -> rain R, C -> sprinkler S, (R, S) -> wet grass W observed. R and S share C, so W's
// likelihood cannot be taken on independent marginals. A table child of two coordinates is a Markov step of the
// coordinate 2 R + S (a linear combination that indexes the rows of the table).
TEST_CASE("joint: a diamond-shaped Bayesian network, exact posterior", "[joint][model][diamond]") {
  Eigen::MatrixXd rain(2, 2), sprinkler(2, 2), wet(4, 2);
  rain << 0.8, 0.2,  //
      0.2, 0.8;
  sprinkler << 0.5, 0.5,  //
      0.9, 0.1;
  wet << 1.0, 0.0,  // R = 0, S = 0
      0.1, 0.9,     // R = 0, S = 1
      0.1, 0.9,     // R = 1, S = 0
      0.01, 0.99;   // R = 1, S = 1
  JointPmf d = joint(Pmf(0, Eigen::Vector2d(0.5, 0.5)));  // C
  d = add_child(d, 0, MarkovStep(rain));                    // (C, R)
  d = add_child(d, 0, MarkovStep(sprinkler));               // (C, R, S)
  d = linear_combination(d, {0, 2, 1}, 0);                  // (C, R, S, 2R + S)
  const JointConditioned c = condition(d, 3, MarkovStep(wet), 1);
  REQUIRE(c.posterior.has_value());
  big evidence = 0, rain_and_wet = 0, sprinkler_and_wet = 0;
  for (std::int64_t cc = 0; cc < 2; ++cc)
    for (std::int64_t r = 0; r < 2; ++r)
      for (std::int64_t s = 0; s < 2; ++s) {
        const big p = big(0.5) * big(rain(cc, r)) * big(sprinkler(cc, s)) * big(wet(2 * r + s, 1));
        evidence += p;
        if (r == 1) rain_and_wet += p;
        if (s == 1) sprinkler_and_wet += p;
      }
  test::require_log_likelihood(c.log_likelihood, evidence, 1e-14);
  REQUIRE(test::relative_error(pdf(marginal(*c.posterior, 1), 1), rain_and_wet / evidence) <= 1e-14);
  REQUIRE(test::relative_error(pdf(marginal(*c.posterior, 2), 1), sprinkler_and_wet / evidence) <= 1e-14);
  // P(R = 1 | W = 1) = 0.4581 / 0.6471 on these tables
  REQUIRE(pdf(marginal(*c.posterior, 1), 1) == Approx(0.4581 / 0.6471).epsilon(1e-12));
}

}  // namespace test_joint_models
