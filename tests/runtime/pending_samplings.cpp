// Graph::pending_samplings(): what the runtime sampled on its own since the last observation, before that
// observation reports it; a fallback about the whole population (fuzz_engine's P = 1 against P = 8 finding).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_pending_samplings {

using namespace tally;
using namespace tally::runtime;

namespace {

std::vector<Fallback> reasons(const std::vector<Sampled>& s) {
  std::vector<Fallback> r;
  for (const auto& e : s) r.push_back(e.reason);
  return r;
}

/// fuzz/corpus/engine/regress-p1p8-joint-b330d4eb07 as a program: rho ~ Beta, x ~ NegativeBinomial(r, rho), rho
/// drawn, y ~ Binomial(x, q), z = x - y, marginal(y) (y joins an M-path of its own), then z's law. With the fuzz
/// target's truncation (max_size 2^13), z's joint law with x (held by its handle) needs 122^2 entries in particle 5
/// of 8, more than max_size: every particle draws x (one representation per population), and says so.
struct SplitProgram {
  explicit SplitProgram(std::size_t particles) : g(particles, 4184749468738713749ull, Device::cpu, truncation()) {
    const Continuous rho = g.assume(Beta(0.31960784313725488, 0.31818709642958443));
    x = g.negative_binomial(0.31960784313725488, rho);
    g.name(x, "x");
    g.value(rho);
    y = g.assume(x, Thinning(0.49460849026218057));
    g.name(y, "y");
    z = g.subtract(x, y);
  }
  static Truncation truncation() {
    Truncation t;
    t.max_size = std::int64_t{1} << 13;
    t.max_work = std::int64_t{1} << 18;
    return t;
  }
  Graph g;
  Variable x, y, z;
};

}  // namespace

TEST_CASE("pending_samplings lists what marginal() drew until the next observation reports it", "[runtime][engine]") {
  Truncation off;
  off.max_joint_bytes = 0;  // joint laws off: marginal(x) prunes its marginalized child instead of keeping it
  Graph g(1, 2, Device::cpu, off);
  const Variable x = g.assume(Poisson(6.0));
  const Variable y = g.assume(x, Thinning(0.5));
  g.name(y, "y");
  CHECK(g.pending_samplings().empty());
  g.observe(g.assume(y, Thinning(0.5)), 1);  // y is x's marginalized child, with what it absorbed
  CHECK(g.pending_samplings().empty());
  g.marginal(x);  // prunes: y is drawn
  REQUIRE(g.pending_samplings().size() == 1);
  CHECK(g.pending_samplings()[0].variable == "y");
  CHECK(g.pending_samplings()[0].reason == Fallback::joint_limit);
  const Observation o = g.observe(g.assume(Binomial(3, 0.5)), 1);
  CHECK(reasons(o.exactness().sampled) == std::vector<Fallback>{Fallback::joint_limit});
  CHECK(g.pending_samplings().empty());
}

TEST_CASE("a joint law past max_size in one particle draws its variables in every particle, and says so",
          "[runtime][engine][joint]") {
  SplitProgram one(1), eight(8);
  one.g.marginal(one.y);
  eight.g.marginal(eight.y);
  CHECK(one.g.pending_samplings().empty());
  CHECK(eight.g.pending_samplings().empty());
  const auto z1 = one.g.marginal(one.z);
  const auto z8 = eight.g.marginal(eight.z);
  // P = 1: x and y (x's marginalized child) are taken over by one joint law, which z joins: nothing drawn
  CHECK(one.g.pending_samplings().empty());
  CHECK(z1[0].size() > 1);
  // P = 8: that law is past max_size in particle 5, so every particle draws instead, and says so
  REQUIRE_FALSE(eight.g.pending_samplings().empty());
  for (const Fallback f : reasons(eight.g.pending_samplings())) CHECK(f == Fallback::joint_limit);
  const auto drawn = reasons(eight.g.pending_samplings());
  const Observation o = eight.g.observe(eight.z, z8[0].lo());
  CHECK(reasons(o.exactness().sampled) == drawn);
  CHECK(eight.g.pending_samplings().empty());
  // strict mode refuses the population's fallback before anything is drawn
  SplitProgram strict(8);
  strict.g.marginal(strict.y);
  strict.g.strict(true);
  CHECK_THROWS_AS(strict.g.marginal(strict.z), inexact_error);
}

TEST_CASE("a population-wide path choice changes no marginal beyond its error bound", "[runtime][engine][joint]") {
  // fuzz/corpus/engine/regress-p1p8-support-f05a84ca7a: z = x + y with y ~ Binomial(x, q) and x held. P = 1 keeps
  // (x, z) in one joint law; in P = 8 another particle's table is past max_size, so every particle takes the ordinary
  // enumeration of z over x. Both are exact; their tails are cut at other points (z's support ends at 24 and 30).
  const auto run = [](std::size_t particles) {
    Graph g(particles, 4182779143899248789ull, Device::cpu, SplitProgram::truncation());
    const Continuous rho = g.assume(Beta(0.31960784313725488, 0.3196127388415746));
    const Variable x = g.negative_binomial(0.31960784313725488, rho);
    g.value(rho);
    const Variable z = g.add(x, g.assume(x, Thinning(0.38067944590733094)));
    const Pmf law = g.marginal(z)[0].normalized();
    CHECK(g.pending_samplings().empty());
    return law;
  };
  const Pmf one = run(1), eight = run(8);
  double distance = 0.0;  // total variation, over both supports
  for (std::int64_t k = std::min(one.lo(), eight.lo()); k <= std::max(one.hi(), eight.hi()); ++k)
    distance += std::abs(pdf(one, k) - pdf(eight, k));
  CHECK(distance <= one.error_bound() + eight.error_bound() + 1e-14);
  CHECK(quantile(one, 1e-3) == quantile(eight, 1e-3));
  CHECK(quantile(one, 1 - 1e-3) == quantile(eight, 1 - 1e-3));
}

TEST_CASE("a sum whose joint law is past max_size in some particle conditions its operands when drawn (found by "
          "fuzz_engine: regress-p1p8-jointsum-408018b8d4)",
          "[runtime][engine][joint]") {
  // x ~ NegativeBinomial(a, rho) with rho drawn (a wide law in some particles), y ~ Binomial(x, q), z = y - x. With
  // one particle the pair joins a joint law; with eight, one particle's table passes max_size and every particle
  // takes the ordinary enumeration of z over x. That path used to leave x in a group of its own, which then held
  // x's law: drawing z did not condition x, and a later child of x was observed under x's prior, reported exact.
  const std::uint64_t seed = 4185874269131436181ull;
  const double a = 3.5208382931200095, b = 2.4549019607843134;
  std::vector<double> first_ll;
  for (const std::size_t particles : {std::size_t{1}, std::size_t{8}}) {
    INFO(particles << " particles");
    Truncation t;
    t.max_size = std::int64_t{1} << 13;
    t.max_work = std::int64_t{1} << 18;
    Graph g(particles, seed, Device::cpu, t);
    const Continuous rho = g.assume(Beta(a, b));
    const Variable x = g.negative_binomial(a, rho);
    (void)g.value(rho);
    const Variable y = g.assume(x, Thinning(1e-145));  // y = 0 but in a far tail: z = -x, in effect
    const Variable z = g.subtract(y, x);
    const std::vector<std::int64_t> drawn = g.value(z);
    const std::vector<Pmf> laws = g.marginal(x);
    for (std::size_t i = 0; i < particles; ++i) {
      INFO("particle " << i << ", z = " << drawn[i]);
      REQUIRE(pdf(laws[i], -drawn[i]) > 1.0 - 1e-9);  // x = y - z = -z, but for the far tail of y
    }
    const Observation o = g.observe(g.assume(x, ScaledPoisson(0.29411760200609405)), 60);
    REQUIRE(o.exactness().exact());
    first_ll.push_back(o[0]);
    // each particle's evidence is sum_x p(x | z) Poisson(60; 0.294 x), over x's law after the draw of z
    for (std::size_t i = 0; i < particles; ++i) {
      double evidence = 0.0;
      for (std::int64_t k = laws[i].lo(); k <= laws[i].hi(); ++k)
        evidence += pdf(laws[i], k) * pdf(Poisson(0.29411760200609405 * static_cast<double>(k)), 60);
      CHECK(o[i] == Approx(std::log(evidence)).epsilon(1e-9));
    }
  }
  CHECK(first_ll[0] == Approx(first_ll[1]).epsilon(1e-12));  // particle 0 draws the same in both
}

}  // namespace test_pending_samplings
