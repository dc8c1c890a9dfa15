// The tutorial's model in C++ (docs/tutorial.md): bats in a roost, counted once a week.
//
// N_0 ~ Poisson(40) bats at the start; each week every bat stays with probability 0.9 and Poisson(5) new ones
// arrive, N_t = Binomial(N_{t-1}, 0.9) + Poisson(5); the count sees each bat with probability 0.75,
// y_t ~ Binomial(N_t, 0.75). First the exact log-evidence and posterior (one particle, strict mode), then a particle
// filter whose particles each draw their own N_t, on the CPU or on a GPU.
//
// Usage: roost [cpu|cuda|automatic] [particles]
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tally/distributions.hpp>
#include <tally/error.hpp>
#include <tally/gpu/backend.hpp>
#include <tally/runtime/graph.hpp>

using namespace tally;
using runtime::Device;
using runtime::Graph;
using runtime::Observation;
using runtime::Variable;

namespace {

const std::vector<std::int64_t> counts{31, 28, 33, 30, 36, 34, 29, 32};  // y_0 .. y_7
constexpr double start = 40, stay = 0.9, arrive = 5, seen = 0.75;

/// One particle: every N_t stays marginalized, so each observation is exact and nothing is drawn.
double exact() {
  Graph g(1, /*seed=*/1, Device::cpu);
  g.strict(true);  // any sampling would throw runtime::inexact_error instead
  Variable n = g.assume(Poisson(start));
  g.name(n, "N0");
  double log_evidence = 0;
  for (std::size_t t = 0; t < counts.size(); ++t) {
    if (t > 0) {
      Variable arrivals = g.assume(Poisson(arrive));
      g.name(arrivals, "arrivals" + std::to_string(t));
      n = g.add(g.binomial(n, stay), arrivals);  // a thinning plus a convolution, exactly
    }
    const Observation o = g.observe(g.binomial(n, seen), counts[t]);  // log p(y_t | y_0 .. y_{t-1})
    log_evidence += o[0];
    std::printf("week %zu: y = %2lld  log p(y_t | past) = %9.5f  %s\n", t, static_cast<long long>(counts[t]), o[0],
                o.exactness().describe().c_str());
  }
  const Pmf posterior = g.marginal(n)[0];  // the law of N_7 given all eight counts
  std::printf("exact log-evidence %.10f; N_7 | y: mean %.3f, 90%% in [%lld, %lld]\n", log_evidence, mean(posterior),
              static_cast<long long>(quantile(posterior, 0.05)), static_cast<long long>(quantile(posterior, 0.95)));
  return log_evidence;
}

/// P particles; after each count every particle draws its own N_t from its exact posterior, so the weights differ
/// and the population is resampled (the way an engine runs a program that reads its state).
double particle_filter(std::size_t particles, Device device) {
  Graph g(particles, /*seed=*/7, device);
  Variable n = g.assume(Poisson(start));
  double log_evidence = 0;
  const double bands[] = {0.05, 0.95};
  for (std::size_t t = 0; t < counts.size(); ++t) {
    if (t > 0) n = g.add(g.binomial(n, stay), g.assume(Poisson(arrive)));
    g.observe(g.binomial(n, seen), counts[t]);  // exact p(y_t | N_{t-1}) in each particle
    g.realize(n);                               // each particle draws N_t from its exact posterior
    const gpu::WeightedSummary s = g.summarize(n, bands);  // where the particles live
    const Graph::Resampling step = g.resample_by_weight();  // always: nothing counted twice
    log_evidence += step.log_mean_weight;
    std::printf("week %zu: N_t mean %6.2f  90%% [%lld, %lld]  ESS %8.1f\n", t, s.mean,
                static_cast<long long>(s.quantiles[0]), static_cast<long long>(s.quantiles[1]), s.ess);
  }
  std::printf("%zu particles on %s: log-evidence estimate %.6f\n", particles,
              g.backend() == gpu::Backend::cuda ? "cuda" : "cpu", log_evidence);
  return log_evidence;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string where = argc > 1 ? argv[1] : "cpu";
  const std::size_t particles = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
  const Device device = where == "cuda" ? Device::cuda : where == "automatic" ? Device::automatic : Device::cpu;
  const double z = exact();
  const std::string note = gpu::device_fallback();  // why a CUDA build runs on the CPU ("" when it does not)
  if (!note.empty()) std::printf("note: %s\n", note.c_str());
  try {
    const double estimate = particle_filter(particles, device);
    std::printf("estimate - exact = %+.6f\n", estimate - z);
    return std::isfinite(estimate) ? 0 : 1;
  } catch (const cuda_error& e) {  // Device::cuda where no device can be used
    std::printf("no GPU here: %s\n", e.what());
    return 1;
  }
}
