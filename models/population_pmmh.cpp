// Example: particle marginal Metropolis-Hastings for the population model's (phi, p), with many chains in one graph
// per iteration (one group per chain), the likelihood from delayed sampling (exact) or from a bootstrap filter.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "population_groups.hpp"
#include "results.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using models::population::group_log_likelihoods;
using models::population::Model;

namespace {

/// The prior: phi and p uniform on this box (the proposal's moves outside it are rejected without a filter).
constexpr double phi_lo = 0.3, phi_hi = 0.99, p_lo = 0.1, p_hi = 0.99;

/// A chain's effective sample size (Geyer's initial positive sequence of autocorrelations). A chain that never
/// moved (zero variance: every proposal rejected, as when its likelihood estimates are -inf) holds one sample's worth.
double effective_samples(const std::vector<double>& x) {
  const std::size_t n = x.size();
  if (n < 4) return double(n);
  double mean = 0;
  for (const double v : x) mean += v / double(n);
  auto autocovariance = [&](std::size_t lag) {
    double s = 0;
    for (std::size_t i = 0; i + lag < n; ++i) s += (x[i] - mean) * (x[i + lag] - mean);
    return s / double(n);
  };
  const double c0 = autocovariance(0);
  if (!(c0 > 0)) return 1.0;
  double sum = 0;
  for (std::size_t lag = 0; lag + 1 < n; lag += 2) {
    const double pair = (autocovariance(lag) + autocovariance(lag + 1)) / c0;
    if (pair <= 0) break;
    sum += pair;
  }
  return std::min(double(n), double(n) / std::max(1.0, 2.0 * sum - 1.0));
}

struct Chains {
  std::vector<std::vector<double>> phi, p;  // after burn-in, per chain
  double accepted = 0, seconds = 0;
};

Chains run_chains(const Model& m, const std::vector<std::int64_t>& y, std::size_t chains, std::size_t particles,
                  std::size_t iterations, std::size_t burn_in, double step, bool bootstrap,
                  const models::FilterOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  Chains out;
  out.phi.resize(chains);
  out.p.resize(chains);
  std::vector<RandomStream> rng;
  for (std::size_t c = 0; c < chains; ++c) rng.emplace_back(o.seed + 1000003, c);
  auto normal = [](RandomStream& r) {  // Box-Muller
    const double u = r.uniform(), v = r.uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u)) * std::cos(2.0 * std::numbers::pi * v);
  };
  std::vector<double> phi(chains, 0.7), p(chains, 0.5);
  std::vector<double> ll = group_log_likelihoods(m, y, phi, p, particles, bootstrap, o.seed, o.backend());
  std::size_t moves = 0;
  for (std::size_t it = 0; it < iterations; ++it) {
    std::vector<double> phi_new(chains), p_new(chains);
    std::vector<char> inside(chains);
    for (std::size_t c = 0; c < chains; ++c) {
      phi_new[c] = phi[c] + step * normal(rng[c]);
      p_new[c] = p[c] + step * normal(rng[c]);
      inside[c] = phi_new[c] > phi_lo && phi_new[c] < phi_hi && p_new[c] > p_lo && p_new[c] < p_hi;
      if (!inside[c]) {  // rejected by the prior: the filter runs the current value, its result unused
        phi_new[c] = phi[c];
        p_new[c] = p[c];
      }
    }
    const auto ll_new =
        group_log_likelihoods(m, y, phi_new, p_new, particles, bootstrap, o.seed + 1 + it, o.backend());
    for (std::size_t c = 0; c < chains; ++c) {
      const bool accept = inside[c] && std::log(rng[c].uniform()) < ll_new[c] - ll[c];
      if (accept) {
        phi[c] = phi_new[c];
        p[c] = p_new[c];
        ll[c] = ll_new[c];
      }
      if (it >= burn_in) {
        out.phi[c].push_back(phi[c]);
        out.p[c].push_back(p[c]);
        out.accepted += accept ? 1 : 0;
        ++moves;
      }
    }
  }
  out.accepted /= double(std::max<std::size_t>(moves, 1));
  out.seconds = models::seconds_since(start);
  return out;
}

/// Pooled over the chains: posterior means, effective samples, and the means' Monte Carlo errors sd / sqrt(ESS).
struct Summary {
  double phi_mean = 0, p_mean = 0, ess_phi = 0, ess_p = 0, phi_error = 0, p_error = 0;
};
Summary summarize(const Chains& c) {
  Summary s;
  double n = 0, phi2 = 0, p2 = 0;
  for (std::size_t k = 0; k < c.phi.size(); ++k) {
    for (std::size_t i = 0; i < c.phi[k].size(); ++i) {
      s.phi_mean += c.phi[k][i];
      s.p_mean += c.p[k][i];
      phi2 += c.phi[k][i] * c.phi[k][i];
      p2 += c.p[k][i] * c.p[k][i];
      n += 1;
    }
    s.ess_phi += effective_samples(c.phi[k]);
    s.ess_p += effective_samples(c.p[k]);
  }
  s.phi_mean /= n;
  s.p_mean /= n;
  s.phi_error = std::sqrt(std::max(0.0, phi2 / n - s.phi_mean * s.phi_mean) / s.ess_phi);
  s.p_error = std::sqrt(std::max(0.0, p2 / n - s.p_mean * s.p_mean) / s.ess_p);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: particle marginal Metropolis-Hastings for the population model's survival and "
               "detection probabilities, many chains in one graph per iteration (a group per chain), with the "
               "likelihood by delayed sampling (exact) and by a bootstrap filter"};
  Model m;
  models::FilterOptions options;
  options.particles = 1024;
  std::size_t chains = 64, iterations = 400, burn_in = 100, seasons = 20;
  double step = 0.03;
  std::uint64_t data_seed = 7;
  app.add_option("--chains", chains, "chains, one group each")->check(CLI::Range(1, 1 << 20));
  app.add_option("--particles", options.particles, "particles of each chain's filter")->check(CLI::Range(1, 1 << 20));
  app.add_option("--iterations", iterations, "Metropolis-Hastings iterations")->check(CLI::Range(2, 1000000));
  app.add_option("--burn-in", burn_in, "iterations left out of the summaries")->check(CLI::Range(0, 1000000));
  app.add_option("--step", step, "standard deviation of the random-walk proposal")->check(CLI::Range(1e-6, 1.0));
  app.add_option("--seasons", seasons, "seasons T of synthetic data")->check(CLI::Range(1, 100000));
  app.add_option("--data-seed", data_seed, "seed of the synthetic data");
  app.add_option("--seed", options.seed, "seed of the chains and filters");
  app.add_option("--device", options.device, "where the groups run: cpu (one core) or gpu (CUDA)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  models::add_results_flag(app, options.results);
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  try {
    if (burn_in >= iterations) throw std::invalid_argument("--burn-in must be below --iterations");
    const auto [y, truth] = models::population::simulate(m, seasons, data_seed);
    std::printf("Population model, %zu seasons (data seed %llu); PMMH for (phi, p), uniform prior on [%.2f, %.2f] x "
                "[%.2f, %.2f]; %zu chains x %zu particles, %zu iterations (%zu burn-in), on the %s\n",
                seasons, static_cast<unsigned long long>(data_seed), phi_lo, phi_hi, p_lo, p_hi, chains,
                options.particles, iterations, burn_in, options.device.c_str());
    for (const bool bootstrap : {false, true}) {
      const Chains c = run_chains(m, y, chains, options.particles, iterations, burn_in, step, bootstrap, options);
      const Summary s = summarize(c);
      const char* name = bootstrap ? "bootstrap filter" : "delayed sampling (exact likelihood)";
      std::printf("%s: acceptance %.3f; posterior mean phi %.4f +- %.4f, p %.4f +- %.4f (Monte Carlo errors);\n"
                  "  effective samples phi %.0f, p %.0f; %.2f s: %.1f effective samples of phi a second\n",
                  name, c.accepted, s.phi_mean, s.phi_error, s.p_mean, s.p_error, s.ess_phi, s.ess_p, c.seconds,
                  s.ess_phi / c.seconds);
      if (options.results)
        std::printf("RESULT pmmh method=%s chains=%zu particles=%zu iterations=%zu acceptance=%.4f phi=%.5f p=%.5f "
                    "ess_phi=%.1f ess_p=%.1f seconds=%.4f ess_phi_per_second=%.2f\n",
                    bootstrap ? "bootstrap" : "delayed", chains, options.particles, iterations, c.accepted,
                    s.phi_mean, s.p_mean, s.ess_phi, s.ess_p, c.seconds, s.ess_phi / c.seconds);
    }
    std::printf("(delayed sampling's chains are exact-likelihood Metropolis-Hastings: the bootstrap chains' posterior "
                "means should agree with theirs within their Monte Carlo error)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
