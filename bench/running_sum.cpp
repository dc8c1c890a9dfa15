// The law of a running sum of n Bernoullis: built with Graph::add() one term at a time and read with marginal(),
// against the fold of tally::sum over the same n laws (the cost a user would pay without the graph).
#include <benchmark/benchmark.h>

#include <cstdint>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace {

double chance(std::int64_t k, std::int64_t n) { return 0.3 + 0.4 * static_cast<double>(k) / static_cast<double>(n); }

// The graph: n priors and n - 1 sums built (timed apart from the marginal: "build" below), then one marginal.
void BM_add_chain_marginal(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    state.PauseTiming();
    tally::runtime::Graph g(1, 1, tally::runtime::Device::cpu);
    tally::runtime::Variable s = g.assume(tally::Bernoulli(chance(0, n)));
    for (std::int64_t k = 1; k < n; ++k) s = g.add(s, g.assume(tally::Bernoulli(chance(k, n))));
    state.ResumeTiming();
    benchmark::DoNotOptimize(g.marginal(s));
    state.PauseTiming();
    s = {};  // the graph's nodes freed outside the timing
    state.ResumeTiming();
  }
}

// The same with the graph's construction timed too.
void BM_add_chain_build_and_marginal(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    tally::runtime::Graph g(1, 1, tally::runtime::Device::cpu);
    tally::runtime::Variable s = g.assume(tally::Bernoulli(chance(0, n)));
    for (std::int64_t k = 1; k < n; ++k) s = g.add(s, g.assume(tally::Bernoulli(chance(k, n))));
    benchmark::DoNotOptimize(g.marginal(s));
  }
}

// The baseline: tally::sum folded over the n laws (default truncation, as the graph's).
void BM_sum_fold(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  for (auto _ : state) {
    tally::Pmf acc = tally::to_pmf(tally::Bernoulli(chance(0, n)));
    for (std::int64_t k = 1; k < n; ++k) acc = tally::sum(acc, tally::to_pmf(tally::Bernoulli(chance(k, n))));
    benchmark::DoNotOptimize(acc);
  }
}

}  // namespace

BENCHMARK(BM_add_chain_marginal)->Arg(1000)->Arg(4000)->Arg(6000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_add_chain_build_and_marginal)->Arg(1000)->Arg(4000)->Arg(6000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_sum_fold)->Arg(1000)->Arg(4000)->Arg(6000)->Unit(benchmark::kMillisecond);
