// Benchmarks Graph::touches (which variables an observation can change): depth-first search against the closure.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace {

using namespace tally;
using namespace tally::runtime;

enum Shape : int {
  chain,  ///< a time series x_0 ~ Poisson(50), x_t ~ Binomial(x_{t-1}, 0.9): every node depends on all before it
  sums,   ///< N / 2 independent roots B_i ~ Bernoulli(0.5) added up left to right, s_k = s_{k-1} + B_k (electoral)
  tree,   ///< a branching process: x_0 ~ Poisson(50), x_i ~ Binomial(x_{(i-1)/2}, 0.5), depth log2 N
};

/// A program of about n nodes of one shape, all initialized (as the engine leaves them before it observes), the M
/// observations and M variables queried (uniform over the nodes, fixed seed), and how many nodes they reach.
struct Program {
  Graph graph;
  std::vector<Variable> nodes, observations, variables;
  std::size_t reached = 0;
};

Program build(Shape shape, std::size_t n, std::size_t m) {
  Program p;
  Graph& g = p.graph;
  std::vector<std::vector<std::size_t>> parents;  // the dependence edges, to count the nodes the queries reach
  auto add = [&](Variable v, std::vector<std::size_t> from) {
    p.nodes.push_back(std::move(v));
    parents.push_back(std::move(from));
  };
  if (shape == chain) {
    add(g.assume(Poisson(50.0)), {});
    for (std::size_t t = 1; t < n; ++t) add(g.assume(p.nodes[t - 1], Thinning(0.9)), {t - 1});
  } else if (shape == sums) {
    add(g.assume(Bernoulli(0.5)), {});
    std::size_t total = 0;
    while (p.nodes.size() + 2 <= n) {
      add(g.assume(Bernoulli(0.5)), {});
      const std::size_t root = p.nodes.size() - 1;
      add(g.add(p.nodes[total], p.nodes[root]), {total, root});
      total = p.nodes.size() - 1;
    }
  } else {
    add(g.assume(Poisson(50.0)), {});
    for (std::size_t i = 1; i < n; ++i) add(g.assume(p.nodes[(i - 1) / 2], Thinning(0.5)), {(i - 1) / 2});
  }
  std::mt19937_64 engine(2026);
  std::uniform_int_distribution<std::size_t> pick(0, p.nodes.size() - 1);
  std::vector<char> seen(p.nodes.size(), 0);
  std::vector<std::size_t> stack;
  auto query = [&](std::vector<Variable>& into) {
    const std::size_t q = pick(engine);
    into.push_back(p.nodes[q]);
    for (stack.push_back(q); !stack.empty();) {
      const std::size_t x = stack.back();
      stack.pop_back();
      if (seen[x]) continue;
      seen[x] = 1;
      ++p.reached;
      for (std::size_t y : parents[x]) stack.push_back(y);
    }
  };
  for (std::size_t i = 0; i < m; ++i) query(p.observations);
  for (std::size_t i = 0; i < m; ++i) query(p.variables);
  return p;
}

void BM_touches(benchmark::State& state, Shape shape, std::size_t n, std::size_t m, DependenceMethod method) {
  const Program p = build(shape, n, m);
  std::size_t touched = 0;
  for (auto _ : state) {
    const auto answer = p.graph.touches(p.observations, p.variables, method);
    touched = 0;
    for (const auto& row : answer) touched += row.size();
    benchmark::DoNotOptimize(touched);
  }
  state.counters["reached"] = static_cast<double>(p.reached);  // the closure's N
  state.counters["touched"] = static_cast<double>(touched);    // pairs that touch, of M x M
}

// touches/SHAPE/N:n/M:m/METHOD, for M = K observations and variables.
const bool registered = [] {
  const std::pair<Shape, const char*> shapes[] = {{chain, "chain"}, {sums, "sums"}, {tree, "tree"}};
  const std::pair<DependenceMethod, const char*> methods[] = {
      {DependenceMethod::search, "search"}, {DependenceMethod::closure, "closure"},
      {DependenceMethod::automatic, "automatic"}};
  for (const auto& [shape, shape_name] : shapes)
    for (std::size_t n : {64, 256, 1024, 4096, 16384})
      for (std::size_t m : {1, 4, 16, 256})
        for (const auto& [method, method_name] : methods) {
          const std::string name = std::string("touches/") + shape_name + "/N:" + std::to_string(n) +
                                   "/M:" + std::to_string(m) + "/" + method_name;
          benchmark::RegisterBenchmark(name.c_str(), BM_touches, shape, n, m, method)
              ->MinTime(0.1)
              ->Unit(benchmark::kMicrosecond);
        }
  return true;
}();

}  // namespace
