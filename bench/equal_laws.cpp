// Equal laws computed once: programs whose particles all hold the same exact laws, on a CUDA graph of P particles
// against one particle on one CPU core (the wide-law population model, the HMM of two unknown rates, a count of a
// Gamma rate).
//
// Usage: bench_equal_laws [P ...]       (default: 1 65536 1048576); each row the fastest of 3 runs, the whole program
// from the graph's construction to the log-weights read back on the host.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/joint_programs.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Device;
using tally::runtime::Graph;
using tally::runtime::Continuous;
using tally::runtime::Gamma;
using tally::runtime::Variable;

namespace {

/// Four seasons of the population model with wide laws: X_0 ~ Poisson(230); X_t = Binomial(X_{t-1}, 0.6) +
/// Poisson(lam_t), lam = 300, 360, 420; Binomial(X_t, 0.5) observed each season. The laws span about a thousand
/// values; every particle holds the same ones (nothing is drawn).
std::vector<double> wide_population(std::size_t particles, Device device) {
  Graph g(particles, 1, device);
  g.strict(true);
  const double lam[] = {230.0, 300.0, 360.0, 420.0};
  const std::int64_t y[] = {118, 215, 290, 352};
  Variable x = g.assume(Poisson(lam[0]));
  for (int t = 0; t < 4; ++t) {
    if (t > 0) x = g.add(g.binomial(x, 0.6), g.assume(Poisson(lam[t])));
    g.observe(g.binomial(x, 0.5), y[t]);
  }
  return g.log_weights();
}

/// models/rate_hmm's program (two unknown Geometric rates, 20 steps), its joint law the same in every particle.
std::vector<double> rate_hmm(std::size_t particles, Device device) {
  Graph g(particles, 1, device);
  g.strict(true);
  tally::models::joint::run_rate_hmm(g, tally::models::joint::RateHmm{});
  return g.log_weights();
}

/// A count of an unknown rate: lambda ~ Gamma(3, 0.5), X | lambda ~ Poisson(2 lambda) marginalized (its law a
/// negative binomial), Binomial(X, 0.4) observed five times, X's posterior read; the same in every particle.
std::vector<double> gamma_count(std::size_t particles, Device device) {
  Graph g(particles, 1, device);
  g.strict(true);
  const Continuous lambda = g.assume(Gamma(3.0, 0.5));
  const Variable x = g.poisson(lambda, 2.0);
  const std::int64_t y[] = {5, 3, 6, 4, 5};
  for (const std::int64_t v : y) g.observe(g.binomial(x, 0.4), v);
  return g.log_weights();
}

template <class Program>
void row(const char* name, Program program, std::size_t particles, Device device, double reference) {
  double best = 1e300;
  std::vector<double> lw;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    lw = program(particles, device);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  double spread = 0.0;
  for (const double v : lw) spread = std::max(spread, std::abs(v - reference));
  std::printf("| %s | %s | %zu | %.4f | %.3f | %.12f | %.1e |\n", name, device == Device::cpu ? "cpu" : "cuda",
              particles, best, 1e6 * best / double(particles), lw[0], spread);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int k = 1; k < argc; ++k) sizes.push_back(std::strtoull(argv[k], nullptr, 10));
  if (sizes.empty()) sizes = {1, 65536, 1048576};
  std::printf("| program | graph | P | seconds | us a particle | log-evidence (particle 0) | largest difference from "
              "the CPU's P = 1 |\n|---|---|---:|---:|---:|---:|---:|\n");
  const double wide = wide_population(1, Device::cpu)[0], hmm = rate_hmm(1, Device::cpu)[0];
  row("wide-law population, 4 seasons", wide_population, 1, Device::cpu, wide);
  for (const std::size_t p : sizes) row("wide-law population, 4 seasons", wide_population, p, Device::cuda, wide);
  row("HMM of two unknown rates, 20 steps", rate_hmm, 1, Device::cpu, hmm);
  for (const std::size_t p : sizes) row("HMM of two unknown rates, 20 steps", rate_hmm, p, Device::cuda, hmm);
  const double count = gamma_count(1, Device::cpu)[0];
  row("Poisson count of a Gamma rate, 5 observations", gamma_count, 1, Device::cpu, count);
  for (const std::size_t p : sizes) row("Poisson count of a Gamma rate, 5 observations", gamma_count, p, Device::cuda, count);
  return 0;
}
