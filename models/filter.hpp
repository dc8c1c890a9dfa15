// What the population, sir and hmm examples share: a filter's evidence and resampling step, summaries, options.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "results.hpp"
#include "smc.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/runtime/communicator.hpp"
#include "tally/runtime/graph.hpp"
#if defined(TALLY_HAVE_NCCL)
#include "tally/runtime/nccl_communicator.hpp"
#endif

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
  std::size_t state_bytes = 0;  ///< the most the population held when noted (for the bandwidth bound)

  /// Notes what the population holds now (the models call it just after each observation, the step's peak).
  void note_bytes(const runtime::Graph& pop) { state_bytes = std::max(state_bytes, pop.bytes()); }

  /// The end of a step, with the step's observations in the population's log-weights: the ESS is recorded; at
  /// the last step the evidence gains \f$\log \frac1P \sum_i w_i\f$ (summarized only), else, when the ESS is below
  /// P/2, the population is resampled (systematic), which adds the same increment and resets the weights.
  void end_of_step(runtime::Graph& pop, bool last) {
    const runtime::Graph::Resampling s = pop.resample_by_weight(last ? 0.0 : 0.5);
    min_ess = steps++ == 0 ? s.ess : std::min(min_ess, s.ess);
    if (last || s.resampled) log_evidence += s.log_mean_weight;
    if (s.resampled) ++resamplings;
  }
};

/// A weighted summary of integer values: the mean and the 5% and 95% quantiles.
struct Band {
  double mean = 0, lo = 0, hi = 0;
};

/// The Band of x under the population's current log-weights, summarized where the population lives
/// (Graph::summarize: on the device for a GPU population, a few numbers copied back). All weights -inf: the
/// unweighted band.
inline constexpr double band_probabilities[] = {0.05, 0.95};
inline Band band_of(const gpu::WeightedSummary& s) {
  return {s.mean, static_cast<double>(s.quantiles[0]), static_cast<double>(s.quantiles[1])};
}
inline Band weighted_band(runtime::Graph& pop, const runtime::Variable& x) {
  return band_of(pop.summarize(x, band_probabilities));
}
/// The Bands of several variables under the same weights (one copy back for all of them on the device).
inline std::vector<Band> weighted_bands(runtime::Graph& pop, std::span<const runtime::Variable> xs) {
  std::vector<Band> out;
  for (const gpu::WeightedSummary& s : pop.summarize(xs, band_probabilities)) out.push_back(band_of(s));
  return out;
}

/// The options the examples take: --particles, --seed, --device cpu|gpu, --plot, --runs, --results, and for a
/// sharded population --shards G (simulated shards in this process) or --nccl (one shard per MPI rank).
struct FilterOptions {
  std::size_t particles = 1024;
  std::uint64_t seed = 1;
  std::string device = "cpu", plot;
  int runs = 1;
  bool results = false;  ///< --results: print_result's machine-readable lines
  std::size_t shards = 1;  ///< --shards: the population cut in this many shards, run in this process
  bool nccl = false;       ///< --nccl: one shard per rank (launcher or MPI), one GPU each (join_nccl sets it)
  std::shared_ptr<runtime::Communicator> communicator;
  /// What rank 0 sent the other shards in each filter's runs so far (on_population's `method`; --nccl or --shards).
  mutable std::map<std::string, runtime::Communicator::Traffic> traffic;

  /// --shards and --nccl (the examples with a particle filter that can be sharded).
  void add_sharding_to(CLI::App& app) {
    app.add_option("--shards", shards,
                   "cut each filter's population in G shards run in this process, one after another (simulated "
                   "shards: the same results as one population; on one device with --device gpu)")
        ->check(CLI::Range(1, 1024));
    app.add_flag("--nccl", nccl,
                 "one shard per rank, one GPU each, collectives through NCCL: scripts/launch-local G <example> "
                 "--nccl --device gpu on one host (needs tally built with NCCL), or mpirun -np G <example> --nccl "
                 "--device gpu (needs NCCL and MPI)");
  }

  void add_to(CLI::App& app) {
    app.add_option("--particles", particles, "particles of each filter")->check(CLI::Range(1, 1 << 24));
    app.add_option("--seed", seed, "seed of the filters (run r uses seed + r)");
    app.add_option("--device", device, "where the particle populations run: cpu (one core) or gpu (CUDA)")
        ->check(CLI::IsMember({"cpu", "gpu"}));
    app.add_option("--plot", plot, "PNG file for a plot (needs gnuplot; none by default)");
    app.add_option("--runs", runs, "independent runs of each filter (the log-evidence's spread)")
        ->check(CLI::Range(1, 100000));
    add_results_flag(app, results);
  }
  runtime::Device backend() const { return device == "gpu" ? runtime::Device::cuda : runtime::Device::cpu; }
};

/// The value of body(pop) for the filter's population: one Graph of o.particles particles; o.shards shards of it in
/// this process (runtime::InProcessGroup: each shard's body runs on its own thread, one after another, so the time is
/// the shards' sum); or, with --nccl, this MPI rank's shard (o.communicator). Every shard's summaries, ESS and
/// evidence are the population's; rank 0's result is returned. What rank 0 sends the others is added to
/// o.traffic[method].
template <class Body>
auto on_population(const FilterOptions& o, const char* method, std::uint64_t seed, Body body) {
  using Result = decltype(body(std::declval<runtime::Graph&>()));
  using Traffic = runtime::Communicator::Traffic;
  auto add = [&](const Traffic& after, const Traffic& before) {
    Traffic& sum = o.traffic[method];
    sum.device_bytes += after.device_bytes - before.device_bytes;
    sum.host_bytes += after.host_bytes - before.host_bytes;
    sum.device_collectives += after.device_collectives - before.device_collectives;
    sum.host_collectives += after.host_collectives - before.host_collectives;
  };
  if (o.communicator) {
    const auto& c = o.communicator;
    const Traffic before = c->traffic();
    runtime::Graph pop(runtime::Shard::even(o.particles, c->size(), c->rank()), c, seed, o.backend());
    Result r = body(pop);
    add(c->traffic(), before);
    return r;
  }
  if (o.shards <= 1) {
    runtime::Graph pop(o.particles, seed, o.backend());
    return body(pop);
  }
  Result out{};
  runtime::InProcessGroup::run(o.shards, [&](std::shared_ptr<runtime::Communicator> c) {
    runtime::Graph pop(runtime::Shard::even(o.particles, o.shards, c->rank()), c, seed, o.backend());
    Result r = body(pop);
    if (c->rank() != 0) return;
    out = std::move(r);
    add(c->traffic(), Traffic{});  // (each run's communicators are new)
  });
  return out;
}

/// The population's sum of one number per shard (x itself for an unsharded graph): an all-gather.
inline double population_sum(const runtime::Graph& pop, double x) {
  const auto& c = pop.communicator();
  if (!c) return x;
  std::vector<double> all(c->size());
  c->all_gather(&x, all.data(), sizeof(double), gpu::Backend::cpu);
  double sum = 0;
  for (const double v : all) sum += v;
  return sum;
}

/// --nccl: this process joins the NCCL communicator of the launched ranks, one GPU each, and its standard output is
/// silenced but on rank 0. Started by scripts/launch-local (TALLY_NCCL_ID_FILE set): rank 0's unique id shared through
/// a file (LauncherBootstrap); otherwise under mpirun: broadcast by MPI (MpiBootstrap, when tally has MPI). The
/// returned object keeps MPI up: hold it until the end of main. Without NCCL, or under neither: std::runtime_error.
inline std::shared_ptr<void> join_nccl(FilterOptions& o, int& argc, char**& argv) {
  if (!o.nccl) return nullptr;
  auto silence_unless = [](std::size_t rank) {
    if (rank != 0 && std::freopen("/dev/null", "w", stdout) == nullptr) throw std::runtime_error("no /dev/null");
  };
#if defined(TALLY_HAVE_NCCL)
  if (runtime::LauncherBootstrap::launched()) {
    const runtime::LauncherBootstrap launch;
    o.communicator = launch.nccl();
    silence_unless(launch.rank());
    return std::make_shared<int>(0);  // nothing to keep up: the communicator lives in o
  }
#endif
#if defined(TALLY_HAVE_MPI)
  auto mpi = std::make_shared<runtime::MpiBootstrap>(&argc, &argv);
  o.communicator = mpi->nccl();
  silence_unless(mpi->rank());
  return mpi;
#else
  (void)argc;
  (void)argv;
  (void)silence_unless;
  throw std::runtime_error(
      "--nccl: start the ranks with scripts/launch-local G <example> --nccl (this tally has no MPI bootstrap; "
      "and NCCL is needed: TALLY_NCCL)");
#endif
}

/// Mean and standard deviation of the finite values (sd 0 for fewer than two), and how many were -inf.
struct Spread {
  double mean = 0, sd = 0;
  std::size_t finite = 0, failed = 0;
};
inline Spread spread(const std::vector<double>& x) {
  Spread s;
  for (double v : x)
    if (std::isfinite(v)) s.mean += v, ++s.finite;
    else ++s.failed;
  if (s.finite == 0) return s;
  s.mean /= double(s.finite);
  for (double v : x)
    if (std::isfinite(v)) s.sd += (v - s.mean) * (v - s.mean);
  s.sd = s.finite > 1 ? std::sqrt(s.sd / double(s.finite - 1)) : 0.0;
  return s;
}

/// One machine-readable line per filter for scripts/bench-populations, only with --results (o.results):
/// RESULT model=... method=... device=... particles=P runs=R steps=T steps_run=... mean=... sd=... failed=...
/// seconds_per_step=... median_seconds_per_step=... first_run_seconds_per_step=... state_bytes=... (the most a
/// population held just after an observation: what a step reads and writes at least). seconds holds each run's time
/// and steps_run the steps it ran (T each when empty; a filter that stops when every weight is zero runs fewer): a
/// run's time per step is its seconds over its steps run, and seconds_per_step is the mean of that over runs 2 .. R
/// when there are several (run 1 also pays for the device's start: its context, its memory pool's first growth, as a
/// JAX program's first call pays for its compilation), else run 1's; median_seconds_per_step is the median over the
/// same runs (one run far off the others, as small steps on a device sometimes take, moves it less);
/// first_run_seconds_per_step is run 1's; steps_run is the mean over the same runs as seconds_per_step. mean and sd
/// are those of the finite log-evidences (failed: the runs at -inf); -inf and inf when every run failed. With
/// --nccl or --shards the line ends with what rank 0 sent the others a step, over all runs (o.traffic[method]):
/// sent_bytes_per_step (device and host buffers), collectives_per_step.
inline void print_result(const char* model, const char* method, const FilterOptions& o, std::size_t steps,
                         const std::vector<double>& evidence, const std::vector<double>& seconds,
                         std::size_t state_bytes, const std::vector<std::size_t>& steps_run = {}) {
  if (!o.results || seconds.empty()) return;
  Spread s = spread(evidence);  // over the finite runs; with none, the log-evidence is -inf and its spread unknown
  if (s.finite == 0) s.mean = -std::numeric_limits<double>::infinity(), s.sd = std::numeric_limits<double>::infinity();
  auto ran = [&](std::size_t r) {
    return static_cast<double>(std::max<std::size_t>(r < steps_run.size() ? steps_run[r] : steps, 1));
  };
  double warm = 0, warm_steps = 0;
  const std::size_t first = seconds.size() > 1 ? 1 : 0;
  std::vector<double> per_step;
  for (std::size_t r = first; r < seconds.size(); ++r) {
    per_step.push_back(seconds[r] / ran(r));
    warm += per_step.back(), warm_steps += ran(r);
  }
  warm /= double(per_step.size());
  warm_steps /= double(per_step.size());
  std::sort(per_step.begin(), per_step.end());
  const std::size_t h = per_step.size() / 2;
  const double median = per_step.size() % 2 == 1 ? per_step[h] : (per_step[h - 1] + per_step[h]) / 2;
  std::printf("RESULT model=%s method=%s device=%s particles=%zu runs=%zu steps=%zu steps_run=%.4g mean=%.6f sd=%.6f "
              "failed=%zu seconds_per_step=%.6g median_seconds_per_step=%.6g first_run_seconds_per_step=%.6g "
              "state_bytes=%zu",
              model, method, o.device.c_str(), o.particles, evidence.size(), steps, warm_steps, s.mean, s.sd,
              s.failed, warm, median, seconds.front() / ran(0), state_bytes);
  if (const auto t = o.traffic.find(method); t != o.traffic.end()) {
    double all_steps = 0;
    for (std::size_t r = 0; r < seconds.size(); ++r) all_steps += ran(r);
    const auto bytes = static_cast<double>(t->second.device_bytes + t->second.host_bytes);
    const auto calls = static_cast<double>(t->second.device_collectives + t->second.host_collectives);
    std::printf(" sent_bytes_per_step=%.6g collectives_per_step=%.4g", bytes / all_steps, calls / all_steps);
  }
  std::printf("\n");
}

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
