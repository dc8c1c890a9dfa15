// A marginal asked of a variable whose component (every held variable an axis) is too large for one joint law: the
// exact posterior by eliminating the rest of the component, nothing drawn and the graph unchanged. Against a 50-digit
// enumeration of weighted Bernoulli units added up and their total observed (electoral's shape), in strict mode.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/enumerate.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_query_marginals {

using namespace tally;
using namespace tally::runtime;
using namespace tally::test;

namespace {

/// votes * Bernoulli(p): the law on {0, votes}.
Pmf weighted_bernoulli(std::int64_t votes, double p) {
  Eigen::VectorXd w = Eigen::VectorXd::Zero(votes + 1);
  w[0] = 1.0 - p;
  w[votes] = p;
  return Pmf(0, w);
}

Law weighted_bernoulli_law(std::int64_t votes, double p) { return {{0, big(1.0 - p)}, {votes, big(p)}}; }

struct Units {
  std::vector<std::int64_t> votes;
  std::vector<double> win;
};

Units units(std::size_t n) {
  Units u;
  for (std::size_t i = 0; i < n; ++i) {
    u.votes.push_back(2 + std::int64_t((i * 7) % 9));
    u.win.push_back(0.15 + 0.7 * double((i * 5) % 11) / 10.0);
  }
  return u;
}

}  // namespace

TEST_CASE("A marginal of a unit of an observed total, every unit held, is exact past the joint laws' budget, and "
          "changes nothing",
          "[runtime][exact][joint]") {
  const std::size_t n = 12;
  const Units u = units(n);
  std::vector<Kernel> kernels;
  std::int64_t all = 0;
  for (std::size_t i = 0; i < n; ++i) {
    kernels.push_back([v = u.votes[i], p = u.win[i]](const Assignment&) { return weighted_bernoulli_law(v, p); });
    all += u.votes[i];
  }
  const Joint joint = enumerate(kernels);
  const std::int64_t half = all / 2;
  const auto total = [](const Assignment& x) {
    std::int64_t t = 0;
    for (const std::int64_t v : x) t += v;
    return t;
  };
  const Event given = [&](const Assignment& x) { return total(x) == half; };
  const auto live = Graph::live_nodes();
  for (const auto& [particles, tree] : {std::pair{std::size_t{1}, false}, std::pair{std::size_t{4}, false},
                                        std::pair{std::size_t{1}, true}, std::pair{std::size_t{3}, true}}) {
    INFO(particles << " particles, " << (tree ? "a balanced tree of sums" : "a chain of sums"));
    Truncation t;
    t.max_joint_bytes = 256 << 10;  // the units' joint law (one axis each) needs far more; one unit's chain, little
    Graph g(particles, 3, Device::cpu, t);
    g.strict(true);
    std::vector<Variable> x;
    for (std::size_t i = 0; i < n; ++i) x.push_back(g.assume(weighted_bernoulli(u.votes[i], u.win[i])));
    Variable sum = x[0];
    if (tree) {  // pairwise, as electoral adds its units
      std::vector<Variable> level = x;
      while (level.size() > 1) {
        std::vector<Variable> next;
        for (std::size_t j = 0; j + 1 < level.size(); j += 2) next.push_back(g.add(level[j], level[j + 1]));
        if (level.size() % 2 == 1) next.push_back(level.back());
        level = std::move(next);
      }
      sum = level[0];
    } else {
      for (std::size_t i = 1; i < n; ++i) sum = g.add(sum, x[i]);
    }
    const Observation o = g.observe(sum, half);
    CHECK(o.exact());
    require_log_prob(o[0], probability(joint, given), 1e-10);
    const std::size_t before = g.bytes();
    for (std::size_t i = 0; i < n; ++i) {
      INFO("unit " << i);
      const std::vector<Pmf> m = g.marginal(x[i]);  // strict mode: nothing may be drawn
      REQUIRE(m.size() == particles);
      for (const Pmf& p : m) require_law_close(p, posterior(joint, i, given), 1e-10, 1e-14);
    }
    CHECK(g.bytes() < before + 1024);  // no joint law was kept (the units' would take megabytes)
    require_law_close(g.marginal(x[3])[0], posterior(joint, 3, given), 1e-10, 1e-14);  // asked again: the same
    // the graph goes on as before the queries: a draw of a unit (past the budget, reported) is one the total allows
    g.strict(false);
    const std::int64_t v = g.value(x[0])[0];
    CHECK((v == 0 || v == u.votes[0]));
    CHECK(posterior(joint, 0, given).count(v) == 1);
    std::int64_t drawn = 0;  // the other units drawn in turn: they add up to the observed total
    for (const Variable& y : x) drawn += g.value(y)[0];
    CHECK(drawn == half);
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_query_marginals
