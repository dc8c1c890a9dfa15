// Acyclic ownership: every node is freed when its last handle goes, random programs leak nothing, long chains free.
#include <malloc.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <random>

#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using namespace tally::runtime;

namespace {
#if defined(__SANITIZE_ADDRESS__)
constexpr std::int64_t chain_length = 1'000'000;  // ASan's redzones: 10^6 still overflows any recursive destructor
#else
constexpr std::int64_t chain_length = 10'000'000;
#endif

/// One random program: roots, thinnings, Poisson children, sums and differences, conjugate parents, observations
/// (possible or not), values, marginals, and handles dropped at random points.
void random_program(std::mt19937_64& gen, Graph& g) {
  std::uniform_int_distribution<int> pick(0, 99);
  std::vector<Variable> vars;
  std::vector<Continuous> params;
  const int steps = 4 + pick(gen) % 10;
  for (int s = 0; s < steps; ++s) {
    const int r = pick(gen);
    try {
    if (vars.empty() || r < 15) {
      vars.push_back(r % 2 ? g.assume(Binomial(3 + r % 5, 0.4)) : g.assume(Poisson(1.0 + r % 3)));
    } else if (r < 30) {
      vars.push_back(g.assume(vars[pick(gen) % vars.size()], Thinning(0.5)));
    } else if (r < 40) {
      vars.push_back(g.affine(vars[pick(gen) % vars.size()], 1 + r % 2, r % 3));
    } else if (r < 55) {
      const auto& a = vars[pick(gen) % vars.size()];
      const auto& b = vars[pick(gen) % vars.size()];
      vars.push_back(r % 2 ? g.add(a, b) : g.subtract(a, b));
    } else if (r < 65) {
      if (params.empty() || r % 3 == 0) params.push_back(g.assume(Beta(2, 2)));
      vars.push_back(g.binomial(2 + r % 4, params[pick(gen) % params.size()]));
    } else if (r < 80) {
      const auto& v = vars[pick(gen) % vars.size()];
      try {
        g.observe(v, pick(gen) % 6);
      } catch (const usage_error&) {  // already realized: allowed to be refused
      }
    } else if (r < 88) {
      g.value(vars[pick(gen) % vars.size()]);
    } else if (r < 94) {
      g.marginal(vars[pick(gen) % vars.size()]);
    } else {
      vars.erase(vars.begin() + static_cast<std::ptrdiff_t>(pick(gen) % vars.size()));  // drop a handle
    }
    } catch (const tally::domain_error&) {
      // bad input by construction (thinning a difference that can be negative, say): refused with a clear
      // error, and nothing may leak because of it
    }
  }
}
}  // namespace

TEST_CASE("10^4 random programs free every node (LeakSanitizer in CI checks the heap too)", "[runtime][ownership]") {
  const auto before = Graph::live_nodes();
  std::mt19937_64 gen(2026);
  for (int program = 0; program < 10000; ++program) {
    Graph g(1, static_cast<std::uint64_t>(program));
    random_program(gen, g);
  }
  REQUIRE(Graph::live_nodes() == before);
  // the same with populations
  for (int program = 0; program < 200; ++program) {
    Graph g(8, static_cast<std::uint64_t>(program));
    random_program(gen, g);
    std::vector<std::size_t> ancestors(8);
    for (auto& a : ancestors) a = gen() % 8;
    g.resample(ancestors);
  }
  REQUIRE(Graph::live_nodes() == before);
}

TEST_CASE("a variable outlives its graph object, and dropping handles in any order frees", "[runtime][ownership]") {
  const auto before = Graph::live_nodes();
  Variable z;
  {
    Graph g;
    auto x = g.assume(Binomial(10, 0.5));
    auto y = g.assume(x, Thinning(0.3));
    z = g.add(x, y);
    REQUIRE(Graph::live_nodes() == before + 3);
  }
  REQUIRE(Graph::live_nodes() == before + 3);  // z owns its (initialized) parents
  z = Variable();
  REQUIRE(Graph::live_nodes() == before);
}

TEST_CASE("a chain of 10^7 nodes is built and dropped without recursion, and its memory per node", "[runtime][ownership][chain]") {
  const auto before = Graph::live_nodes();
  const auto heap_before = mallinfo2().uordblks;
  {
    Graph g;
    Variable x = g.assume(Binomial(3, 0.5));
    for (std::int64_t i = 1; i < chain_length; ++i) x = g.assume(x, Thinning(0.5));  // each node owns its parent
    REQUIRE(Graph::live_nodes() == before + chain_length);
    const double per_node = static_cast<double>(mallinfo2().uordblks - heap_before) / static_cast<double>(chain_length);
    std::printf("chain of %lld initialized nodes: %.0f bytes of heap per node\n", static_cast<long long>(chain_length),
                per_node);
    REQUIRE(per_node < 1024);
  }  // the last handle goes: ~Node releases the chain iteratively
  REQUIRE(Graph::live_nodes() == before);
}

TEST_CASE("a marginalized chain (an HMM filtered for 10^5 steps) frees too", "[runtime][ownership][chain]") {
  const auto before = Graph::live_nodes();
  {
    Graph g;
    Eigen::MatrixXd T(2, 2);
    T << 0.9, 0.1, 0.3, 0.7;
    Variable x = g.assume(Categorical(Eigen::Vector2d(0.5, 0.5)));
    Variable first = x;  // keep the root: the whole M-path stays reachable from it
    for (int t = 1; t < 100000; ++t) x = g.assume(x, MarkovStep(T));
    g.marginal(x);  // grafts the whole chain iteratively: 10^5 marginalized nodes owned parent to child
    REQUIRE(Graph::live_nodes() >= before + 2);
  }
  REQUIRE(Graph::live_nodes() == before);
}
