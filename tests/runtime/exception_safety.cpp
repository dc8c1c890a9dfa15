// Exception safety of the Graph: operations that throw part-way leave a usable graph with its invariants
// and no leak (these run under ASan and LSan in CI), and the operations documented strong change nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "tally/distributions.hpp"
#include "sanitizers.hpp"
#include "tally/runtime/graph.hpp"

namespace test_exception_safety {

using namespace tally;
using namespace tally::runtime;

namespace {

/// Every particle's log-weight is finite or -inf (never NaN or +inf).
void require_weights_sane(const Graph& g) {
  for (double l : g.log_weights()) {
    REQUIRE(!std::isnan(l));
    REQUIRE(l < std::numeric_limits<double>::infinity());
  }
}

/// Every particle's marginal of x is a normalized law.
void require_law_sane(Graph& g, const Variable& x) {
  for (const Pmf& l : g.marginal(x)) {
    REQUIRE(std::abs(std::exp(l.log_mass()) - 1.0) <= 1e-9);
    REQUIRE(l.weights().minCoeff() >= 0.0);
  }
}

/// A truncation small enough that a scaled Poisson child of a modest count overflows max_size when grafted.
Truncation small() {
  Truncation t;
  t.max_size = 4096;
  return t;
}

}  // namespace

TEST_CASE("a graft that fails part-way (overflow_error) leaves the graph usable, and frees every node",
          "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  for (std::size_t particles : {std::size_t{1}, std::size_t{4}}) {
    INFO("P = " << particles);
    Graph g(particles, 7, Device::cpu, small());
    const Variable a = g.assume(Binomial(60, 0.5));
    const Variable b = g.assume(a, Thinning(0.5));
    // c | b ~ Poisson(1e4 b): b up to 60 needs a law over ~6e5 values, more than max_size
    const Variable c = g.assume(b, ScaledPoisson(1e4));
    REQUIRE_THROWS_AS(g.marginal(c), tally::overflow_error);
    require_weights_sane(g);
    // the path a -> b was marginalized before c failed: it is intact and exact
    require_law_sane(g, b);
    const double lb = g.observe(b, 12)[0];
    REQUIRE(std::isfinite(lb));
    REQUIRE(lb == Approx(std::log(pdf(Binomial(60, 0.25), 12))).epsilon(1e-12));
    // a given b = 12 is 12 + Binomial(48, 1/3): the conditioning went through a
    const Pmf pa = g.marginal(a)[0];
    REQUIRE(pa.lo() == 12);
    REQUIRE(pdf(pa, 20) == Approx(pdf(Binomial(48, 1.0 / 3.0), 8)).epsilon(1e-10));
    // c's parent is now realized: c | b = 12 ~ Poisson(1.2e5), a law of ~5e3 entries: still too large here, and
    // still refused cleanly; observing c needs no table, so it works
    REQUIRE_THROWS_AS(g.marginal(c), tally::overflow_error);
    const double lc = g.observe(c, 120000)[0];
    REQUIRE(lc == Approx(std::log(pdf(Poisson(1.2e5), 120000))).epsilon(1e-10));
    require_weights_sane(g);
    REQUIRE(g.value(a).size() == particles);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("an observation that fails while conditioning a chain leaves the graph usable", "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(2, 3, Device::cpu, small());
    Variable x = g.assume(Poisson(5.0));
    std::vector<Variable> chain{x};
    for (int i = 0; i < 4; ++i) chain.push_back(g.assume(chain.back(), Thinning(0.9)));
    const Variable huge = g.assume(chain.back(), ScaledPoisson(1e5));
    // observing `huge` conditions the chain without its law, but the posterior over the chain is fine; asking
    // for a law of it after is what fails
    REQUIRE_THROWS_AS(g.marginal(huge), tally::overflow_error);
    const std::vector<double> before = g.log_weights();
    // the chain below the failed child keeps working, and the log-weights were not touched by the failure
    require_law_sane(g, chain[4]);
    REQUIRE(g.log_weights() == before);
    const Observation o = g.observe(chain[4], 3);
    REQUIRE(std::isfinite(o[0]));
    require_weights_sane(g);
    REQUIRE(g.value(chain[0])[0] >= 3);
    REQUIRE(g.value(chain[2])[0] >= 3);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("impossible observations give -inf and the graph goes on", "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(3, 11);
    const Variable x = g.assume(Binomial(10, 0.5));
    const Variable y = g.assume(x, Thinning(0.5));
    const Variable s = g.add(x, g.assume(Poisson(2.0)));
    REQUIRE(g.observe(y, 11)[0] == -std::numeric_limits<double>::infinity());
    require_weights_sane(g);
    // every particle is dead: resampling changes nothing and says so
    const auto r = g.resample_by_weight();
    REQUIRE(r.log_mean_weight == -std::numeric_limits<double>::infinity());
    REQUIRE_FALSE(r.resampled);
    // the rest of the program still runs: its likelihoods are finite, the weights stay -inf until reset
    const double ls = g.observe(s, 4)[0];
    REQUIRE(std::isfinite(ls));
    for (double l : g.log_weights()) REQUIRE(l == -std::numeric_limits<double>::infinity());
    g.reset_log_weights();
    const Variable z = g.assume(Poisson(3.0));
    REQUIRE(g.observe(z, 2)[0] == Approx(std::log(pdf(Poisson(3.0), 2))).epsilon(1e-13));
    require_weights_sane(g);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("misuse is refused before anything changes (the strong guarantee)", "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(2, 5), other(2, 5);
    const Variable x = g.assume(Binomial(20, 0.4));
    const Variable y = g.assume(x, Thinning(0.5));
    const Variable stranger = other.assume(Poisson(1.0));
    const double l0 = g.observe(y, 3)[0];
    const std::vector<double> weights = g.log_weights();
    const Pmf law = g.marginal(x)[0];
    const auto nodes = Graph::live_nodes();

    REQUIRE_THROWS_AS(g.observe(stranger, 1), usage_error);
    REQUIRE_THROWS_AS(g.add(x, stranger), usage_error);
    REQUIRE_THROWS_AS(g.assume(stranger, Thinning(0.5)), usage_error);
    REQUIRE_THROWS_AS(g.value(Variable()), usage_error);
    REQUIRE_THROWS_AS(g.observe(y, 4), usage_error);  // observing an observed variable again
    REQUIRE_THROWS_AS(g.observe(x, std::vector<std::int64_t>{1, 2, 3}), tally::shape_error);
    REQUIRE_THROWS_AS(g.constant(std::vector<std::int64_t>{1}), tally::shape_error);
    REQUIRE_THROWS_AS(g.binomial(x, std::vector<double>{0.5, 1.5}), tally::domain_error);

    // nothing changed: weights, laws, the number of nodes
    REQUIRE(g.log_weights() == weights);
    const Pmf again = g.marginal(x)[0];
    REQUIRE(again.lo() == law.lo());
    REQUIRE(again.weights() == law.weights());
    REQUIRE(Graph::live_nodes() == nodes);
    REQUIRE(std::isfinite(l0));
    // and the graph goes on
    REQUIRE(g.value(x)[0] >= 3);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("strict mode refuses a fallback before sampling, and the same program runs after it is lifted",
          "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  {
    Truncation no_joint_laws;  // joint laws off: the coupling below is a fallback (with them on it is exact)
    no_joint_laws.max_joint_bytes = 0;
    Graph g(2, 9, no_joint_laws);
    const Variable a = g.assume(Binomial(12, 0.5));
    const Variable b1 = g.assume(a, Thinning(0.5));
    const Variable b2 = g.assume(a, Thinning(0.5));
    const Variable s = g.add(b1, b2);  // shares a with itself: not a convolution, a would be sampled
    g.strict(true);
    const std::vector<double> before = g.log_weights();
    REQUIRE_THROWS_AS(g.observe(s, 4), inexact_error);
    REQUIRE(g.log_weights() == before);
    // a was not sampled: its law is still the prior
    const Pmf pa = g.marginal(a)[0];
    REQUIRE(pa.size() == 13);
    g.strict(false);
    const Observation o = g.observe(s, 4);
    REQUIRE(std::isfinite(o[0]));
    REQUIRE_FALSE(o.exactness().exact());
    require_weights_sane(g);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("a conjugate count with impossible data and bad parameters leaves the graph usable",
          "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(2, 13);
    REQUIRE_THROWS_AS(g.assume(Beta(-1.0, 2.0)), tally::domain_error);
    const Continuous rho = g.assume(Beta(2.0, 3.0));
    const Variable k = g.binomial(5, rho);
    REQUIRE_THROWS_AS(g.binomial(std::vector<std::int64_t>{5}, rho), tally::shape_error);
    REQUIRE(g.observe(k, 6)[0] == -std::numeric_limits<double>::infinity());
    require_weights_sane(g);
    g.reset_log_weights();
    const Variable k2 = g.binomial(4, rho);
    const double l = g.observe(k2, 2)[0];
    REQUIRE(std::isfinite(l));
    for (const auto& v : g.scalar_value(rho)) {
      REQUIRE(v >= 0.0);
      REQUIRE(v <= 1.0);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("a child law that does not fit its parent, found only when grafted, leaves the graph usable",
          "[runtime][exception_safety]") {
  const auto live = Graph::live_nodes();
  for (std::size_t particles : {std::size_t{1}, std::size_t{3}}) {
    INFO("P = " << particles);
    Graph g(particles, 17, Device::cpu);
    const Variable x = g.assume(Binomial(20, 0.4));
    const Variable kept = g.assume(x, Thinning(0.5));
    // a Markov step on 3 states of a count up to 20: accepted when recorded, refused when x's law meets it
    const Variable bad = g.assume(x, MarkovStep(Eigen::MatrixXd::Identity(3, 3)));
    const std::vector<double> before = g.log_weights();
    REQUIRE_THROWS_AS(g.observe(bad, 1), tally::domain_error);
    REQUIRE_THROWS_AS(g.marginal(bad), tally::domain_error);
    REQUIRE(g.log_weights() == before);
    // the sibling and the parent are intact and exact
    const double l = g.observe(kept, 4)[0];
    REQUIRE(l == Approx(std::log(pdf(Binomial(20, 0.2), 4))).epsilon(1e-12));
    const auto vx = g.value(x);
    for (std::int64_t v : vx) REQUIRE(v >= 4);
    // once x is a value the Markov step is a law of a realized parent: refused again where x >= 3
    for (std::size_t i = 0; i < particles; ++i) REQUIRE(vx[i] >= 3);
    REQUIRE_THROWS_AS(g.marginal(bad), tally::domain_error);
    require_weights_sane(g);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("a sum of a variable and its child past max_work is refused at once, and exact below it",
          "[runtime][exception_safety][reliability]") {
  // fuzz/corpus/engine/regress-slow-marginal-* and regress-slow-value-* (were fuzz/open): Z = X + Y with
  // Y | X ~ Poisson(1.25 X) and X over thousands of values is enumerated jointly over X, each value costing a
  // Poisson law; it ran for seconds per particle past the work bound the rest of the algebra keeps
  // (fuzz/engine.cpp's max_work = 2^18)
  const auto live = Graph::live_nodes();
  Truncation bounded;
  bounded.max_work = std::int64_t{1} << 18;
  for (std::size_t particles : {std::size_t{1}, std::size_t{8}}) {
    INFO("P = " << particles);
    Graph g(particles, 23, Device::cpu, bounded);
    const Variable x = g.assume(Poisson(20000.0));
    const Variable z = g.add(x, g.assume(x, ScaledPoisson(1.25)));
    const std::vector<double> before = g.log_weights();
    REQUIRE_THROWS_AS(g.marginal(z), tally::overflow_error);
    REQUIRE_THROWS_WITH(g.value(z), Catch::Contains("max_work"));
    REQUIRE_THROWS_AS(g.observe(z, 45000), tally::overflow_error);
    REQUIRE(g.log_weights() == before);
    require_law_sane(g, x);  // the parent is intact

    // a small X: the joint enumeration runs, and agrees with sum_x P(X = x) Poisson(z - x; 1.25 x)
    const Variable s = g.assume(Poisson(5.0));
    const Variable sz = g.add(s, g.assume(s, ScaledPoisson(1.25)));
    const Pmf law = g.marginal(sz)[0];
    for (std::int64_t v : {0, 3, 11, 25}) {
      double expected = 0.0;
      for (std::int64_t k = 0; k <= v; ++k)
        expected += pdf(Poisson(5.0), k) * (k == 0 ? (v == 0 ? 1.0 : 0.0) : pdf(Poisson(1.25 * double(k)), v - k));
      REQUIRE(std::exp(log_pdf(law, v) - law.log_mass()) == Approx(expected).epsilon(1e-9).margin(1e-300));
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("a graph too large for the host's memory says how many particles would fit", "[runtime][exception_safety]") {
  if (tally::test::sanitized) {  // (AddressSanitizer aborts on an allocation it cannot make, before any bad_alloc)
    WARN("skipped under AddressSanitizer");
    return;
  }
  const std::size_t particles = std::size_t{1} << 40;  // 8 TiB of log-weights
  try {
    Graph g(particles, 1, Device::cpu);
    FAIL("a graph of 2^40 particles was made");
  } catch (const tally::host_memory_error& e) {
    const std::string what = e.what();
    CHECK(what.find("1099511627776 particles") != std::string::npos);
    CHECK(what.find("would fit") != std::string::npos);
    CHECK(e.requested == 8 * particles);
  }
  Graph small(4, 1, Device::cpu);  // and the next graph is made as usual
  CHECK(small.particles() == 4);
}

}  // namespace test_exception_safety
