// Soak test: the hmm and population models' delayed-sampling filters for many steps, memory watched.
//
//   soak --model hmm|population --steps N --particles P --device cpu|gpu [--checkpoints C] [--seed S]
//
// Runs models/hmm.cpp's and models/population.cpp's delayed-sampling particle filter (the same Graph calls, data
// simulated step by step from the model, so that nothing grows with N but what the engine keeps) for N steps, and
// prints at C checkpoints: the step, seconds per step, the log-evidence so far, the resident set (now and peak),
// what the graph holds (Graph::bytes), the device memory tally's allocations hold (the pool's used bytes) and the
// live nodes (Graph::live_nodes). Exits non-zero when the live nodes or the device memory at a checkpoint differ
// from the first checkpoint's, when the resident set grew by more than --rss-slack-mb after the first checkpoint,
// or when the log-evidence is not finite. Not run by ctest (bench/RESULTS.md, "Reliability": soak).
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
using tally::runtime::Variable;

namespace {

/// The resident set now, in bytes (/proc/self/statm), and the peak (getrusage).
double rss_now() {
  std::ifstream statm("/proc/self/statm");
  double size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}
double rss_peak() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024.0;
}

/// One model's filter: start() makes the first state, step(t) runs step t (new data simulated from the truth).
struct Filter {
  virtual ~Filter() = default;
  virtual void step(Graph& g, std::size_t t, RandomStream& truth) = 0;
};

/// models/hmm.cpp's delayed filter: x_t = MarkovStep(T) of x_{t-1}, y_t ~ IndexedPoisson(rates) observed, x_t drawn.
struct Hmm : Filter {
  Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
  Eigen::MatrixXd T = (Eigen::MatrixXd(3, 3) << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80).finished();
  Eigen::VectorXd rates = Eigen::Vector3d(2, 10, 25);
  std::int64_t state = 0;
  Variable x;
  void step(Graph& g, std::size_t t, RandomStream& truth) override {
    state = t == 0 ? sample(to_pmf(Categorical(init)), truth) : sample(to_pmf(Categorical(T.row(state).transpose())), truth);
    const std::int64_t y = sample(to_pmf(Poisson(rates[state])), truth);
    x = t == 0 ? g.assume(Categorical(init)) : g.assume(x, MarkovStep(T));
    g.observe(g.assume(x, IndexedPoisson(rates)), y);
    g.realize(x);
  }
};

/// models/population.cpp's delayed filter: N_t = Binomial(N_{t-1}, phi) + Poisson(iota) marginalized,
/// y_t ~ Binomial(N_t, p) observed, N_t drawn and summarized.
struct Population : Filter {
  double lambda0 = 50, phi = 0.8, iota = 10, p = 0.6;
  std::int64_t n = 0;
  Variable N;
  void step(Graph& g, std::size_t t, RandomStream& truth) override {
    n = t == 0 ? sample(to_pmf(Poisson(lambda0)), truth)
               : sample(to_pmf(Binomial(n, phi)), truth) + sample(to_pmf(Poisson(iota)), truth);
    const std::int64_t y = sample(to_pmf(Binomial(n, p)), truth);
    N = t == 0 ? g.assume(Poisson(lambda0)) : g.add(g.binomial(N, phi), g.assume(Poisson(iota)));
    g.observe(g.binomial(N, p), y);
    g.realize(N);
    static constexpr double band[] = {0.05, 0.95};
    (void)g.summarize(N, band);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally soak test: a model's delayed-sampling filter for many steps, memory and live nodes watched"};
  std::string model = "population", device = "cpu";
  std::size_t steps = 100000, particles = 1024, checkpoints = 10;
  std::uint64_t seed = 1;
  double rss_slack_mb = 16;
  app.add_option("--model", model, "hmm or population")->check(CLI::IsMember({"hmm", "population"}));
  app.add_option("--steps", steps, "filter steps")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  app.add_option("--particles", particles, "particles")->check(CLI::Range(1, 1 << 24));
  app.add_option("--device", device, "cpu or gpu")->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_option("--checkpoints", checkpoints, "lines printed (evenly spaced, the last at the last step)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed", seed, "seed of the data and of the filter");
  app.add_option("--rss-slack-mb", rss_slack_mb, "growth of the resident set allowed after the first checkpoint");
  CLI11_PARSE(app, argc, argv);
  try {
    Graph g(particles, seed, device == "gpu" ? runtime::Device::cuda : runtime::Device::cpu);
    Hmm hmm;
    Population population;
    Filter& f = model == "hmm" ? static_cast<Filter&>(hmm) : static_cast<Filter&>(population);
    RandomStream truth(seed ^ 0x7472'7574'68ull, 0);
    std::printf("soak: %s, delayed-sampling filter, %zu particles on the %s, %zu steps (%s)\n", model.c_str(),
                particles, device.c_str(), steps, gpu::device_description().c_str());
    std::printf("%12s %10s %14s %18s %10s %10s %12s %14s %6s\n", "step", "ms/step", "live nodes", "log-evidence",
                "RSS MB", "peak MB", "graph bytes", "device bytes", "ok");
    double log_evidence = 0;
    std::size_t resamplings = 0;
    bool ok = true;
    bool first = true;
    std::int64_t first_live = 0;
    std::size_t first_device = 0;
    double first_rss = 0;
    auto last = std::chrono::steady_clock::now();
    std::size_t last_step = 0;
    for (std::size_t t = 0; t < steps; ++t) {
      f.step(g, t, truth);
      const std::size_t done = t + 1;
      const bool checkpoint = done * checkpoints / steps != t * checkpoints / steps || done == steps;
      // the models' resampling (systematic, when ESS < P/2), and at a checkpoint the evidence so far
      const Graph::Resampling r = g.resample_by_weight(checkpoint ? 0.0 : 0.5);
      if (r.resampled) {
        log_evidence += r.log_mean_weight;
        ++resamplings;
      }
      if (!checkpoint) continue;
      const double evidence = log_evidence + r.log_mean_weight;  // not resampled: the weights carry the rest
      const auto now = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(now - last).count() / double(done - last_step);
      last = now;
      last_step = done;
      const std::int64_t live = Graph::live_nodes();
      const std::size_t device_bytes = gpu::detail::device_bytes_in_use();
      const double rss = rss_now();
      bool here = std::isfinite(evidence);
      if (first) {
        first = false;
        first_live = live;
        first_device = device_bytes;
        first_rss = rss;
      } else {
        here = here && live == first_live && device_bytes == first_device && rss <= first_rss + rss_slack_mb * 1048576.0;
      }
      ok = ok && here;
      std::printf("%12zu %10.4f %14lld %18.6f %10.1f %10.1f %12zu %14zu %6s\n", done, ms, static_cast<long long>(live),
                  evidence, rss / 1048576.0, rss_peak() / 1048576.0, g.bytes(), device_bytes, here ? "yes" : "NO");
      std::fflush(stdout);
    }
    std::printf("soak: %s after %zu steps (%zu resamplings): live nodes, device memory and resident set %s\n",
                ok ? "passed" : "FAILED", steps, resamplings, ok ? "flat, log-evidence finite" : "NOT flat or evidence not finite");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
