// The one engine's CPU gates: the four-season population model at P = 1 and the time per particle at P = 4096.
// The model: X ~ Poisson(50); each season X = Binomial(X, 0.26) + Poisson(lam_t); observe
// Binomial(X, 0.2). It uses only the Graph calls that every version of the runtime has, so that the same source
// measures the runtime before and after a change (bench/RESULTS.md, "One engine").
#include <benchmark/benchmark.h>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace {

using namespace tally;
using namespace tally::runtime;

double four_seasons(std::size_t particles) {
  Graph g(particles, 1);
  const double lam[] = {0.0, 30.0, 35.0, 40.0};
  const std::int64_t y[] = {10, 12, 9, 14};
  Variable X = g.assume(Poisson(50.0));
  double total = 0.0;
  for (int t = 0; t < 4; ++t) {
    if (t > 0) X = g.add(g.assume(X, Thinning(0.26)), g.assume(Poisson(lam[t])));
    total += g.observe(g.assume(X, Thinning(0.2)), y[t])[0];
  }
  return total;
}

void BM_FourSeasons(benchmark::State& state) {
  const auto P = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(four_seasons(P));
  state.counters["per_particle_us"] =
      benchmark::Counter(static_cast<double>(P) * 1e-6, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_FourSeasons)->Arg(1)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
