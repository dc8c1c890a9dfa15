// Graph::touches: hand cases with known answers, search against closure on random programs, a large graph, misuse.
#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"
#include "sanitizers.hpp"

namespace test_dependence {

using namespace tally;
using namespace tally::runtime;

namespace {
using Answer = std::vector<std::vector<std::size_t>>;
constexpr DependenceMethod methods[] = {DependenceMethod::search, DependenceMethod::closure,
                                        DependenceMethod::automatic};

/// The answer of every method, checked to be the same; returns it.
template <class Targets>
Answer touches(const Graph& g, const std::vector<Variable>& observations, const Targets& targets) {
  const Answer reference = g.touches(observations, targets, DependenceMethod::search);
  REQUIRE(g.touches(observations, targets, DependenceMethod::closure) == reference);
  REQUIRE(g.touches(observations, targets, DependenceMethod::automatic) == reference);
  REQUIRE(g.touches(observations, targets) == reference);
  return reference;
}

/// Handles kept by a random program.
struct Handles {
  std::vector<Variable> vars;
  std::vector<Continuous> params;
};

/// A random program: roots, chains of thinnings and Markov-like children, affine maps, sums and differences,
/// counts of Beta parameters, observations, values and marginals, so that nodes end up initialized, marginalized,
/// tied or realized.
void random_program(std::mt19937_64& gen, Graph& g, Handles& h, int steps) {
  std::uniform_int_distribution<int> pick(0, 99);
  auto any = [&]() -> const Variable& { return h.vars[static_cast<std::size_t>(pick(gen)) % h.vars.size()]; };
  for (int s = 0; s < steps; ++s) {
    const int r = pick(gen);
    try {
      if (h.vars.empty() || r < 12) {
        h.vars.push_back(r % 2 ? g.assume(Binomial(3 + r % 5, 0.4)) : g.assume(Poisson(1.0 + r % 3)));
      } else if (r < 35) {
        h.vars.push_back(g.assume(r < 25 ? h.vars.back() : any(), Thinning(0.6)));  // mostly chains
      } else if (r < 42) {
        h.vars.push_back(g.affine(any(), 1 + r % 2, r % 3));
      } else if (r < 60) {
        const Variable& a = any();
        const Variable& b = any();
        h.vars.push_back(r % 2 ? g.add(a, b) : g.subtract(a, b));
      } else if (r < 68) {
        if (h.params.empty() || r % 3 == 0) h.params.push_back(g.assume(Beta(2, 2)));
        h.vars.push_back(g.binomial(2 + r % 4, h.params[static_cast<std::size_t>(pick(gen)) % h.params.size()]));
      } else if (r < 80) {
        try {
          g.observe(any(), pick(gen) % 5);
        } catch (const usage_error&) {  // already realized
        }
      } else if (r < 87) {
        g.value(any());
      } else if (r < 92) {
        g.marginal(any());
      } else if (r < 95 && !h.params.empty()) {
        g.value(h.params[static_cast<std::size_t>(pick(gen)) % h.params.size()]);
      } else if (h.vars.size() > 2) {
        h.vars.erase(h.vars.begin() + static_cast<std::ptrdiff_t>(pick(gen) % static_cast<int>(h.vars.size())));
      }
    } catch (const tally::domain_error&) {  // thinning a variable that can be negative, say: refused
    }
  }
}
}  // namespace

TEST_CASE("touches: hand cases with known answers", "[runtime][dependence]") {
  const auto live = Graph::live_nodes();
  {
    Graph g;
    auto a = g.assume(Poisson(3.0));
    auto b = g.assume(Binomial(5, 0.5));
    SECTION("two independent roots do not touch; each touches itself") {
      REQUIRE(touches(g, {a, b}, std::vector<Variable>{a, b}) == Answer{{0}, {1}});
    }
    SECTION("a parent and its child touch, both ways; a grandchild too") {
      auto c = g.assume(a, Thinning(0.5));
      auto d = g.assume(c, Thinning(0.5));
      REQUIRE(touches(g, {a, c, d, b}, std::vector<Variable>{d, b}) == Answer{{0}, {0}, {0}, {1}});
      g.marginal(d);  // marginalized: the edges are mparents now
      REQUIRE(touches(g, {a, c, d, b}, std::vector<Variable>{d, b}) == Answer{{0}, {0}, {0}, {1}});
    }
    SECTION("siblings touch through their parent until it is realized; realized nodes touch nothing") {
      auto y1 = g.assume(a, Thinning(0.5));
      auto y2 = g.assume(a, ScaledPoisson(2.0));
      REQUIRE(touches(g, {y1}, std::vector<Variable>{y1, y2, a, b}) == Answer{{0, 1, 2}});
      g.value(a);
      REQUIRE(touches(g, {y1, a}, std::vector<Variable>{y1, y2, a, b}) == Answer{{0}, {}});
      REQUIRE(touches(g, {y2}, std::vector<Variable>{a}) == Answer{{}});
    }
    SECTION("a sum touches its operands; observing it makes it a constant and ties the operands") {
      auto z = g.add(a, b);
      REQUIRE(touches(g, {z, a, b}, std::vector<Variable>{a, b, z}) == Answer{{0, 1, 2}, {0, 2}, {1, 2}});
      REQUIRE(g.touches({z}, {a, b}) == Answer{{0, 1}});  // braced lists pick the Variable overload (README)
      g.observe(z, 4);
      REQUIRE(touches(g, {z, a, b}, std::vector<Variable>{a, b, z}) == Answer{{}, {0, 1}, {0, 1}});
      g.value(b);  // realizes a with it
      REQUIRE(touches(g, {a, b}, std::vector<Variable>{a, b}) == Answer{{}, {}});
    }
    SECTION("counts touch their conjugate parameter, and each other through it, until it is realized") {
      auto rho = g.assume(Beta(2, 3));
      auto lambda = g.assume(Gamma(2, 1));
      auto k1 = g.binomial(5, rho), k2 = g.bernoulli(rho), n = g.poisson(lambda);
      const std::vector<Continuous> params{rho, lambda};
      REQUIRE(touches(g, {k1, k2, n}, params) == Answer{{0}, {0}, {1}});
      REQUIRE(touches(g, {k1}, std::vector<Variable>{k1, k2, n}) == Answer{{0, 1}});
      g.observe(k1, 2);  // k1 is a constant now; k2 still depends on rho
      REQUIRE(touches(g, {k1, k2}, params) == Answer{{}, {0}});
      g.value(rho);
      REQUIRE(touches(g, {k2, n}, params) == Answer{{}, {1}});
      REQUIRE(touches(g, {k2}, std::vector<Variable>{k2, n}) == Answer{{0}});
    }
    SECTION("empty lists give empty answers") {
      REQUIRE(touches(g, {}, std::vector<Variable>{a}).empty());
      REQUIRE(touches(g, {a, b}, std::vector<Variable>{}) == Answer{{}, {}});
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("touches: empty handles and handles of another Graph are usage errors", "[runtime][dependence]") {
  const auto live = Graph::live_nodes();
  {
    Graph g, other;
    auto x = g.assume(Poisson(2.0));
    auto foreign = other.assume(Poisson(2.0));
    auto rho = other.assume(Beta(1, 1));
    for (auto method : methods) {
      REQUIRE_THROWS_AS(g.touches({Variable{}}, std::vector<Variable>{x}, method), usage_error);
      REQUIRE_THROWS_AS(g.touches({x}, std::vector<Variable>{x, Variable{}}, method), usage_error);
      REQUIRE_THROWS_AS(g.touches({foreign}, std::vector<Variable>{x}, method), usage_error);
      REQUIRE_THROWS_AS(g.touches({x}, std::vector<Variable>{foreign}, method), usage_error);
      REQUIRE_THROWS_AS(g.touches({x}, std::vector<Continuous>{Continuous{}}, method), usage_error);
      REQUIRE_THROWS_AS(g.touches({x}, std::vector<Continuous>{rho}, method), usage_error);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("touches: search and closure agree on random programs (P = 1 and 3)", "[runtime][dependence]") {
  const auto live = Graph::live_nodes();
  std::mt19937_64 gen(61);
  std::int64_t pairs = 0, touching = 0;
  for (int program = 0; program < tally::test::runs(400, 4); ++program) {
    const std::size_t particles = program % 4 == 3 ? 3 : 1;
    Graph g(particles, static_cast<std::uint64_t>(program));
    Handles h;
    random_program(gen, g, h, 10 + program % 40);
    INFO("program " << program << ", " << h.vars.size() << " variables, " << h.params.size() << " parameters");
    const Answer a = touches(g, h.vars, h.vars);
    touches(g, h.vars, h.params);
    // the relation is symmetric
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j : a[i]) REQUIRE(std::find(a[j].begin(), a[j].end(), i) != a[j].end());
    pairs += static_cast<std::int64_t>(h.vars.size() * h.vars.size());
    for (const auto& row : a) touching += static_cast<std::int64_t>(row.size());
  }
  // both answers occur often: the programs are not all independent nor all connected
  REQUIRE(touching > pairs / 10);
  REQUIRE(touching < pairs * 9 / 10);
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("touches: a chain of 3000 and a sum of 1000 roots, cut by a realized node", "[runtime][dependence]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(2, 7);
    constexpr std::size_t n = 3000, cut = 1500;
    std::vector<Variable> x{g.assume(Poisson(20.0))};
    for (std::size_t t = 1; t < n; ++t) x.push_back(g.assume(x.back(), Thinning(0.999)));
    std::vector<Variable> roots, totals;
    for (int i = 0; i < 1000; ++i) {
      roots.push_back(g.assume(Bernoulli(0.5)));
      totals.push_back(i == 0 ? roots[0] : g.add(totals.back(), roots.back()));
    }
    g.value(x[cut]);  // x_0..x_1499 become marginalized, x_1500 a constant
    std::mt19937_64 gen(5);
    std::vector<Variable> observations, variables;
    std::vector<std::size_t> obs_at, var_at;  // chain positions, or n + i for totals[i], 2n + i for roots[i]
    auto draw = [&](std::vector<Variable>& into, std::vector<std::size_t>& at) {
      const std::size_t k = gen() % 4000;
      if (k < n) {
        into.push_back(x[k]);
        at.push_back(k);
      } else if (k % 2) {
        into.push_back(totals[k - n]);
        at.push_back(n + (k - n));
      } else {
        into.push_back(roots[k - n]);
        at.push_back(2 * n + (k - n));
      }
    };
    for (int i = 0; i < 40; ++i) draw(observations, obs_at);
    for (int i = 0; i < 40; ++i) draw(variables, var_at);
    // known: the chain splits at the cut; totals[i] depends on roots[0..i] and totals[0..i]; chain and sums apart
    auto expect = [&](std::size_t o, std::size_t v) {
      if (o < n || v < n) {
        if (o >= n || v >= n || o == cut || v == cut) return false;
        return (o < cut) == (v < cut);
      }
      const bool o_root = o >= 2 * n, v_root = v >= 2 * n;
      const std::size_t i = o_root ? o - 2 * n : o - n, j = v_root ? v - 2 * n : v - n;
      if (o_root && v_root) return i == j;
      if (o_root) return i <= j;
      if (v_root) return j <= i;
      return true;  // two totals share roots[0]
    };
    Answer expected(observations.size());
    for (std::size_t i = 0; i < observations.size(); ++i)
      for (std::size_t j = 0; j < variables.size(); ++j)
        if (expect(obs_at[i], var_at[j])) expected[i].push_back(j);
    REQUIRE(touches(g, observations, variables) == expected);
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_dependence
