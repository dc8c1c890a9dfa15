// JointPmf against 50-digit enumeration: construction, outer products, entries, marginals, slices, truncation.
#include <catch2/catch.hpp>
#include <limits>

#include "joint_brute_force.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"

namespace test_joint_pmf {

using namespace tally;
using test::big;
using test::JointLaw;

TEST_CASE("joint: outer product of marginals, entries down to 1e-250 under a log scale", "[joint][pmf]") {
  std::mt19937_64 gen(101);
  for (int k = 1; k <= 3; ++k) {
    CAPTURE(k);
    std::vector<Pmf> m;
    for (int a = 0; a < k; ++a) {
      const Pmf p = test::tiny_pmf(gen, -3 + 5 * a, 7 + 3 * a, std::pow(10.0, -250.0 / k), 250.0 / k);
      m.push_back(Pmf(p.lo(), p.weights(), -300.0 * a, 1e-14 * a));  // scales far below 1e-300
    }
    const JointPmf d = independent(m);
    REQUIRE(d.rank() == k);
    test::JointLaw partial{{{}, big(1)}};
    for (const Pmf& p : m) {
      JointLaw next;
      for (const auto& [x, v] : partial)
        for (const auto& [y, w] : test::law_of(p)) {
          Coordinates z = x;
          z.push_back(y);
          next[z] = v * w;
        }
      partial = std::move(next);
    }
    test::require_joint(d, partial, 1e-13);
    REQUIRE(test::smallest_ratio(test::joint_law_of(d)) < 1e-240);
    double growth = 1.0;
    for (const Pmf& p : m) growth *= 1.0 + p.error_bound();
    REQUIRE(d.error_bound() == Approx(growth - 1.0).epsilon(1e-12));
    // every entry by log_pdf, and points outside the box
    // a log is exact to a few ulps of its magnitude (entries of 1e-250 under scales of 1e-260 are logs near -1200)
    for (const auto& [x, v] : partial) {
      const double log_v = static_cast<double>(boost::multiprecision::log(v));
      REQUIRE(std::abs(log_pdf(d, x) - log_v) <= 4e-16 * std::max(1.0, std::abs(log_v)));
    }
    Coordinates out(static_cast<std::size_t>(k), 1000);
    REQUIRE(log_pdf(d, out) == -std::numeric_limits<double>::infinity());
    REQUIRE(pdf(d, out) == 0.0);
    REQUIRE_THROWS_AS(log_pdf(d, Coordinates(static_cast<std::size_t>(k + 1), 0)), shape_error);
  }
}

TEST_CASE("joint: a rank-1 joint is its pmf", "[joint][pmf][one]") {
  std::mt19937_64 gen(102);
  const Pmf x = test::random_pmf(gen, 4, 30, 200.0).with_error_bound(3e-15);
  const JointPmf j = joint(x);
  REQUIRE(j.rank() == 1);
  REQUIRE(j.lo(0) == x.lo());
  REQUIRE(j.hi(0) == x.hi());
  REQUIRE(j.error_bound() == x.error_bound());
  REQUIRE(j.log_mass() == Approx(x.log_mass()).epsilon(1e-15));
  const Pmf back = marginal(j, 0);
  test::require_law(back, test::law_of(x), 1e-15);
  for (std::int64_t v = x.lo() - 1; v <= x.hi() + 1; ++v) {
    const Coordinates at{v};
    REQUIRE(log_pdf(j, at) == log_pdf(x, v));
  }
}

TEST_CASE("joint: construction flushes, trims and validates", "[joint][pmf][errors]") {
  Eigen::VectorXd w(12);  // a 3 x 4 box whose first row and last column are zero
  w << 0, 0, 0, 0,  //
      0.5, 1e-310, 2, 0,  //
      4, 0, 1, 0;
  const JointPmf d({10, -2}, {3, 4}, w, 1.0);
  REQUIRE(d.lo() == Coordinates{11, -2});
  REQUIRE(d.shape() == Coordinates{2, 3});
  REQUIRE(d.weights().maxCoeff() == 1.0);
  REQUIRE(d.log_scale() == Approx(1.0 + std::log(4.0)).epsilon(1e-15));
  REQUIRE(d.error_bound() > 0.0);  // the flushed 1e-310 (below 2^-1000 of 4)
  REQUIRE(d.error_bound() <= 1e-310 / 7.5 * 1.0000001);
  REQUIRE(pdf(d, Coordinates{11, -1}) == 0.0);
  REQUIRE(pdf(d, Coordinates{12, -2}) == Approx(4.0 * std::exp(1.0)).epsilon(1e-15));
  REQUIRE(std::exp(d.normalized().log_mass()) == Approx(1.0).epsilon(1e-15));
  REQUIRE_THROWS_AS(JointPmf({}, {}, Eigen::VectorXd::Ones(1)), shape_error);
  REQUIRE_THROWS_AS(JointPmf({0}, {2, 2}, Eigen::VectorXd::Ones(4)), shape_error);
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, Eigen::VectorXd::Ones(3)), shape_error);
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 0}, Eigen::VectorXd::Ones(0)), shape_error);
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, Eigen::VectorXd::Zero(4)), shape_error);
  Eigen::VectorXd bad = Eigen::VectorXd::Ones(4);
  bad[2] = -1.0;
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, bad), domain_error);
  bad[2] = std::nan("");
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, bad), domain_error);
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, Eigen::VectorXd::Ones(4), std::numeric_limits<double>::infinity()), domain_error);
  REQUIRE_THROWS_AS(JointPmf({0, 0}, {2, 2}, Eigen::VectorXd::Ones(4), 0.0, -1.0), domain_error);
  REQUIRE_THROWS_AS(JointPmf({0, std::numeric_limits<std::int64_t>::max()}, {2, 2}, Eigen::VectorXd::Ones(4)), overflow_error);
  REQUIRE_THROWS_AS(independent({}), shape_error);
  // log weights: -inf is zero mass, +inf and NaN are not weights
  Eigen::VectorXd lw(4);
  lw << -1000.0, -std::numeric_limits<double>::infinity(), -1001.0, -1200.0;
  const JointPmf from_log = JointPmf::from_log({0, 0}, {2, 2}, lw);
  REQUIRE(log_pdf(from_log, Coordinates{1, 1}) == Approx(-1200.0).epsilon(1e-15));
  REQUIRE(pdf(from_log, Coordinates{0, 1}) == 0.0);
  lw[1] = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_AS(JointPmf::from_log({0, 0}, {2, 2}, lw), domain_error);
}

TEST_CASE("joint: the outer product refuses tables above max_size, naming the size", "[joint][pmf][errors]") {
  const Pmf big_pmf(0, Eigen::VectorXd::Ones(2000));
  Truncation t;
  t.max_size = 1'000'000;
  REQUIRE_THROWS_AS(independent({big_pmf, big_pmf}, t), overflow_error);
  REQUIRE_THROWS_WITH(independent({big_pmf, big_pmf}, t), Catch::Contains("4000000"));
  REQUIRE(independent({big_pmf, Pmf(0, Eigen::VectorXd::Ones(500))}, t).size() == 1'000'000);
}

TEST_CASE("joint: marginals, marginalizing out and slices of a dependent law", "[joint][pmf][marginal]") {
  std::mt19937_64 gen(103);
  const JointPmf d = test::random_joint(gen, {-2, 0, 5}, {4, 5, 3}, 250.0, -800.0);
  const JointLaw law = test::joint_law_of(d);
  REQUIRE(test::smallest_ratio(law) < 1e-200);
  for (int a = 0; a < 3; ++a) {
    CAPTURE(a);
    test::Law m;
    JointLaw rest;
    for (const auto& [x, p] : law) {
      m[x[static_cast<std::size_t>(a)]] += p;
      Coordinates y = x;
      y.erase(y.begin() + a);
      rest[y] += p;
    }
    test::require_pmf(marginal(d, a), m, 1e-13);
    test::require_joint(marginalize_out(d, a), rest, 1e-13);
    for (std::int64_t v = d.lo(a); v <= d.hi(a); ++v) {
      JointLaw s;
      for (const auto& [x, p] : law)
        if (x[static_cast<std::size_t>(a)] == v) {
          Coordinates y = x;
          y.erase(y.begin() + a);
          s[y] = p;
        }
      if (test::mass(s) == 0) continue;
      test::require_joint(slice(d, a, v), s, 1e-12);  // the log scale, 800, has ulps of 1e-13
    }
  }
  REQUIRE_THROWS_AS(marginal(d, 3), shape_error);
  REQUIRE_THROWS_AS(marginal(d, -1), shape_error);
  REQUIRE_THROWS_AS(marginalize_out(joint(Pmf::point(3)), 0), shape_error);
  REQUIRE_THROWS_AS(slice(d, 0, 100), shape_error);
  // the error bound of a slice carries all of the dropped mass onto it
  const JointPmf e = d.with_error_bound(1e-12);
  const JointPmf s = slice(e, 1, 2);
  REQUIRE(s.error_bound() == Approx(1e-12 * std::exp(e.log_mass() - s.log_mass())).epsilon(1e-12));
}

TEST_CASE("joint: truncate drops little tails and bounds what it dropped", "[joint][pmf][truncation]") {
  // X, Y independent Poissons: the tails along both axes are tiny
  const JointPmf d = independent({to_pmf(Poisson(3.0), {1e-300}), to_pmf(Poisson(20.0), {1e-300})});
  const JointLaw exact = test::joint_law_of(d);
  for (double tol : {1e-3, 1e-8, 1e-15}) {
    CAPTURE(tol);
    Truncation t;
    t.tolerance = tol;
    const JointPmf c = truncate(d, t);
    REQUIRE(c.size() < d.size());
    const JointLaw kept = test::joint_law_of(c);
    big dropped = 0;
    for (const auto& [x, p] : exact) {
      if (kept.count(x) == 0) {
        dropped += p;
      } else {
        REQUIRE(test::relative_error(static_cast<double>(kept.at(x)), p) <= 1e-15);
      }
    }
    REQUIRE(dropped > 0);
    REQUIRE(static_cast<double>(dropped / test::mass(exact)) <= tol);
    // the bound bounds the L1 distance to the exact law, relative to the kept mass, and is not loose
    const double l1 = static_cast<double>(dropped / test::mass(kept));
    REQUIRE(l1 <= c.error_bound() * (1 + 1e-12));
    REQUIRE(c.error_bound() <= (d.error_bound() + l1) * 1.000001);
  }
  REQUIRE_THROWS_AS(truncate(d, Truncation{1.5}), domain_error);
}

}  // namespace test_joint_pmf
