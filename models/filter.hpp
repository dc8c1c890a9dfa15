// What the population and hmm examples share: a filter's evidence and resampling step, progress lines, options.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "smc.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::models {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// A progress line on stderr for step t of T, once a run has taken more than 2 s.
inline void progress(const char* name, const char* unit, std::size_t t, std::size_t T,
                     std::chrono::steady_clock::time_point start) {
  const double s = seconds_since(start);
  if (s > 2.0) std::fprintf(stderr, "%s: %s %zu/%zu (%.1f s)\n", name, unit, t + 1, T, s);
}

/// What a P-particle filter accumulates: its log-evidence estimate, how often it resampled, its smallest ESS.
struct FilterStats {
  double log_evidence = 0;
  std::size_t resamplings = 0;
  double min_ess = 0;
  std::size_t steps = 0;
  double seconds = 0;

  /// The end of a step, with the step's observations in g's log-weights: the ESS is recorded; at the last step the
  /// evidence gains \f$\log \frac1P \sum_i w_i\f$, else, when the ESS is below P/2, g is resampled by weight (which
  /// adds the same increment and resets the weights).
  void end_of_step(runtime::Graph& g, bool last) {
    const auto& lw = g.log_weights();
    const double ess = effective_sample_size(lw);
    min_ess = steps++ == 0 ? ess : std::min(min_ess, ess);
    if (last) {
      log_evidence += log_mean_exp(lw);
    } else if (ess < 0.5 * double(g.particles())) {
      log_evidence += g.resample_by_weight().log_mean_weight;
      ++resamplings;
    }
  }
};

/// The options both examples take: --particles, --seed, --device cpu|gpu, --plot.
struct FilterOptions {
  std::size_t particles = 1024;
  std::uint64_t seed = 1;
  std::string device = "cpu", plot;

  void add_to(CLI::App& app) {
    app.add_option("--particles", particles, "particles of each filter")->check(CLI::Range(1, 1 << 22));
    app.add_option("--seed", seed, "seed of the filters");
    app.add_option("--device", device, "cpu, or gpu (device populations are not built yet)")
        ->check(CLI::IsMember({"cpu", "gpu"}));
    app.add_option("--plot", plot, "PNG file for a plot (needs gnuplot; none by default)");
  }
  /// True, after saying why on stderr, when --device gpu asks for what is not built yet.
  bool device_refused() const {
    if (device != "gpu") return false;
    std::fprintf(stderr, "--device gpu: device populations (issue 7) are not built yet; run with --device cpu\n");
    return true;
  }
};

/// The lines comparing the filters' estimates with the exact log-evidence.
inline void print_estimates(const std::vector<std::pair<const char*, const FilterStats*>>& runs, double exact,
                            const FilterOptions& o) {
  std::printf("%zu particles, seed %llu, resampling (systematic) when ESS < P/2:\n", o.particles,
              static_cast<unsigned long long>(o.seed));
  for (const auto& [name, r] : runs)
    std::printf("  %-16s log-evidence %.6f  (estimate - exact %+.6f)  resamplings %zu, min ESS %.1f  (%.3f s)\n",
                name, r->log_evidence, r->log_evidence - exact, r->resamplings, r->min_ess, r->seconds);
}

}  // namespace tally::models
