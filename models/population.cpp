// Example: an animal population counted over seasons, its exact evidence by delayed sampling, and filters.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "gnuplot.hpp"
#include "population_model.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
using tally::runtime::Variable;

namespace {

using models::population::Model;
using models::population::simulate;

/// A summary of N_t given y_0..y_t: mean and 5% / 95% quantiles.
using models::Band;

struct Run : models::FilterStats {
  double log_bound = 0;  // exact run: the observations' truncation bounds, summed (a bound on the log-evidence's error)
  std::vector<Band> seasons;
};

/// Mean and 5% / 95% quantiles of a law.
Band band(const Pmf& law) { return {mean(law), double(quantile(law, 0.05)), double(quantile(law, 0.95))}; }

/// An independent check of the exact run, by the forward recursion over N in [0, n_max] in long double:
/// a_0(n) = Pois(n; lambda0) Bin(y_0; n, p), a_t(m) = sum_n a_{t-1}(n) K(n, m) Bin(y_t; m, p) with the season's
/// kernel K(n, m) = sum_s Bin(s; n, phi) Pois(m - s; iota), each a_t rescaled by its sum c_t:
/// log p(y) = sum_t log c_t. O(n_max^3) once for K, then O(T n_max^2).
long double forward_recursion(const Model& m, const std::vector<std::int64_t>& y, std::int64_t n_max) {
  auto lgam = [](std::int64_t k) { return std::lgamma(static_cast<long double>(k) + 1); };
  auto pois = [&](std::int64_t k, long double r) { return std::exp(static_cast<long double>(k) * std::log(r) - r - lgam(k)); };
  auto bin = [&](std::int64_t n, std::int64_t k, long double q) -> long double {
    if (k < 0 || k > n) return 0;
    return std::exp(lgam(n) - lgam(k) - lgam(n - k) + static_cast<long double>(k) * std::log(q) +
                    static_cast<long double>(n - k) * std::log1p(-q));
  };
  const auto n = static_cast<std::size_t>(n_max + 1);
  std::vector<long double> kernel(n * n, 0.0L), alpha(n), next(n), immigrants(n);
  for (std::size_t j = 0; j < n; ++j) immigrants[j] = pois(std::int64_t(j), m.iota);
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t s = 0; s <= a; ++s) {
      const long double b = bin(std::int64_t(a), std::int64_t(s), m.phi);
      for (std::size_t j = s; j < n; ++j) kernel[a * n + j] += b * immigrants[j - s];
    }
  long double log_z = 0;
  for (std::size_t t = 0; t < y.size(); ++t) {
    long double total = 0;
    for (std::size_t j = 0; j < n; ++j) {
      long double prior = 0;
      if (t == 0)
        prior = pois(std::int64_t(j), m.lambda0);
      else
        for (std::size_t a = 0; a < n; ++a) prior += alpha[a] * kernel[a * n + j];
      total += next[j] = prior * bin(std::int64_t(j), y[t], m.p);
    }
    for (std::size_t j = 0; j < n; ++j) alpha[j] = next[j] / total;
    log_z += std::log(total);
  }
  return log_z;
}

/// The exact log-evidence log p(y_0..y_{T-1}): one particle, nothing sampled. Each season's S_t, I_t, N_t stay
/// marginalized (N_t = S_t + I_t is a convolution of independent laws, y_t | N_t a thinning), so observe(y_t)
/// returns log p(y_t | y_0..y_{t-1}) exactly up to truncation, and conditions N_t on y_t. Old handles are dropped:
/// the filtered law of N_t is all the next season needs, so the graph holds a few nodes whatever T is.
Run exact_run(const Model& m, const std::vector<std::int64_t>& y) {
  const auto start = std::chrono::steady_clock::now();
  Graph g(1, 1);
  Run out;
  Variable N = g.assume(Poisson(m.lambda0));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) N = g.add(g.assume(N, Thinning(m.phi)), g.assume(Poisson(m.iota)));
    const Variable obs = g.assume(N, Thinning(m.p));
    const runtime::Observation o = g.observe(obs, y[t]);
    out.log_evidence += o[0];
    out.log_bound += o.exactness().truncation_error;  // what truncation dropped, weighed by its likelihood
    out.seasons.push_back(band(g.marginal(N)[0]));
  }
  out.seconds = models::seconds_since(start);
  return out;
}

/// End of season t for a P-particle filter: summarize N_t under the log-weights (where the population lives), then
/// the evidence and resampling step (models::FilterStats::end_of_step).
void end_of_season(Graph& pop, Run& out, const Variable& N, bool last) {
  out.seasons.push_back(models::weighted_band(pop, N));
  out.end_of_step(pop, last);
}

/// The delayed-sampling particle filter: per particle, S_t, I_t, N_t stay marginalized given the realized
/// N_{t-1}, so the weight is the exact p(y_t | N_{t-1}) (one skew-free pass over N_t's law: condition_on_thinning)
/// and N_t is then drawn from its exact posterior p(N_t | N_{t-1}, y_t) (the locally optimal proposal). Realizing
/// N_t is what an engine does when the program reads the state; left unrealized, every particle would be the
/// exact run above, with equal weights. Each operation is one or a few kernel launches for all P particles on the
/// device (--device gpu), or a loop on one core.
Run delayed_filter(const Model& m, const std::vector<std::int64_t>& y, Graph& pop) {
  const auto start = std::chrono::steady_clock::now();
  Run out;
  Variable N = pop.assume(Poisson(m.lambda0));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) N = pop.add(pop.binomial(N, m.phi), pop.assume(Poisson(m.iota)));
    pop.observe(pop.binomial(N, m.p), y[t]);
    out.note_bytes(pop);
    pop.realize(N);
    end_of_season(pop, out, N, t + 1 == y.size());
    models::progress("delayed sampling", "season", t, y.size(), start);
  }
  out.seconds = models::seconds_since(start);
  return out;
}

/// The bootstrap filter: N_0, S_t, I_t and so N_t drawn forward; y_t observed as a thinning of the realized N_t,
/// which adds log Binomial(y_t; N_t, p) to the weight.
Run bootstrap_filter(const Model& m, const std::vector<std::int64_t>& y, Graph& pop) {
  const auto start = std::chrono::steady_clock::now();
  Run out;
  Variable N = pop.assume(Poisson(m.lambda0));
  pop.realize(N);
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) {
      const Variable S = pop.binomial(N, m.phi), I = pop.assume(Poisson(m.iota));
      pop.realize(S);
      pop.realize(I);
      N = pop.add(S, I);
    }
    pop.observe(pop.binomial(N, m.p), y[t]);
    out.note_bytes(pop);
    end_of_season(pop, out, N, t + 1 == y.size());
    models::progress("bootstrap", "season", t, y.size(), start);
  }
  out.seconds = models::seconds_since(start);
  return out;
}

/// Bytes per particle of the delayed-sampling program's live nodes in the middle of a season (after the sum is
/// convolved and conditioned, before N_t is drawn), for the memory report.
void print_memory(const Model& m, const std::vector<std::int64_t>& y, const models::FilterOptions& o) {
  Graph pop(o.particles, o.seed, o.backend());
  Variable N = pop.assume(Poisson(m.lambda0));
  pop.observe(pop.binomial(N, m.p), y[0]);
  pop.realize(N);
  N = pop.add(pop.binomial(N, m.phi), pop.assume(Poisson(m.iota)));
  pop.observe(pop.binomial(N, m.p), y.size() > 1 ? y[1] : y[0]);
  std::printf("memory of the delayed-sampling program (%zu particles on the %s), live nodes mid-season:\n",
              o.particles, o.device.c_str());
  for (const runtime::NodeMemory& n : pop.memory())
    std::printf("  %-22s %12zu bytes  %8.1f bytes per particle\n", n.name.c_str(), n.bytes, n.bytes_per_particle);
  std::printf("  %-22s %12zu bytes  %8.1f bytes per particle (with the log-weights)\n", "total", pop.bytes(),
              double(pop.bytes()) / double(o.particles));
}

bool plot(const std::vector<std::int64_t>& y, const std::vector<std::int64_t>& truth, const Run& exact,
          const Run& delayed, const Run& boot, double p, const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  std::fprintf(gp, "$d << EOD\n");
  for (std::size_t t = 0; t < y.size(); ++t)
    std::fprintf(gp, "%zu %lld %lld %g %g %g %g %g %g\n", t, static_cast<long long>(y[t]),
                 static_cast<long long>(truth[t]), exact.seasons[t].mean, exact.seasons[t].lo, exact.seasons[t].hi,
                 delayed.seasons[t].mean, boot.seasons[t].mean, double(y[t]) / p);
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,620 font 'sans,11'\nset output %s\n"
               "set title \"Population counts: N_t filtered exactly by tally (log-evidence %.4f)\"\n"
               "set xlabel 'season'\nset ylabel 'animals'\nset key outside right top\nset grid\n"
               "plot $d using 1:5:6 with filledcurves fc rgb '#1f77b4' fs transparent solid 0.25 noborder "
               "title 'N: exact 90%% band',\\\n"
               "     $d using 1:4 with lines lw 2 lc rgb '#1f77b4' title 'N: exact filtered mean',\\\n"
               "     $d using 1:7 with lines dt 2 lc rgb '#2ca02c' title 'N: delayed-sampling filter',\\\n"
               "     $d using 1:8 with lines dt 3 lc rgb '#ff7f0e' title 'N: bootstrap filter',\\\n"
               "     $d using 1:3 with points pt 6 lc rgb 'black' title 'N: true (simulated)',\\\n"
               "     $d using 1:2 with linespoints pt 7 lc rgb '#d62728' title 'y: counted'\n",
               models::gnuplot_quote(path).c_str(), exact.log_evidence);
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: a population counted over seasons; exact log-evidence by delayed "
               "sampling, against a delayed-sampling particle filter and a bootstrap filter"};
  Model m;
  models::FilterOptions options;
  options.add_to(app);
  options.add_sharding_to(app);
  std::size_t seasons = 20;
  std::uint64_t data_seed = 7;
  app.add_option("--seasons", seasons, "seasons T of synthetic data")->check(CLI::Range(1, 100000));
  app.add_option("--data-seed", data_seed, "seed of the synthetic data");
  app.add_option("--lambda0", m.lambda0, "N_0 ~ Poisson(lambda0)")->check(CLI::Range(1e-9, 1e6));
  app.add_option("--phi", m.phi, "survival probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--iota", m.iota, "immigrants ~ Poisson(iota)")->check(CLI::Range(1e-9, 1e6));
  app.add_option("--p", m.p, "detection probability")->check(CLI::Range(0.0, 1.0));
  bool memory = false;
  app.add_flag("--memory", memory, "print the bytes per particle of each live node of the delayed-sampling program");
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  try {
    const auto mpi = models::join_nccl(options, argc, argv);
    if (!options.plot.empty()) models::check_plot(options.plot);  // before the run: a plot that cannot be drawn fails at once
    const auto [y, truth] = simulate(m, seasons, data_seed);
    std::printf("Population: N_0 ~ Poisson(%g), S_t ~ Binomial(N_{t-1}, %g), I_t ~ Poisson(%g), N_t = S_t + I_t,\n"
                "y_t ~ Binomial(N_t, %g); %zu seasons simulated with data seed %llu\n",
                m.lambda0, m.phi, m.iota, m.p, seasons, static_cast<unsigned long long>(data_seed));
    std::printf("y:");
    for (auto v : y) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n\n");

    const Run exact = exact_run(m, y);
    std::printf("exact log-evidence (delayed sampling, 1 particle, nothing sampled): %.10f  (%.3f s)\n",
                exact.log_evidence, exact.seconds);
    std::printf("  truncation: tail mass <= %g per law; the observations' bounds, summed (what truncation dropped, "
                "followed\n  through every season and weighed by its likelihood): %.2e\n",
                Truncation{}.tolerance, exact.log_bound);
    const std::int64_t n_max = static_cast<std::int64_t>(
        std::max(m.lambda0, m.iota / std::max(1e-9, 1 - m.phi)) * 3 + 60 + double(*std::max_element(y.begin(), y.end())));
    const auto t0 = std::chrono::steady_clock::now();
    const long double check = n_max <= 3000 ? forward_recursion(m, y, n_max) : NAN;
    std::printf("  independent check, forward recursion over N <= %lld (long double): %.10Lf, difference %.2e  "
                "(%.3f s)\n",
                static_cast<long long>(n_max), check, exact.log_evidence - static_cast<double>(check),
                models::seconds_since(t0));
    if (memory) print_memory(m, y, options);
    std::vector<Run> delayed_runs, boot_runs;
    std::vector<double> delayed_evidence, boot_evidence;
    std::vector<double> delayed_seconds, boot_seconds;
    for (int r = 0; r < options.runs; ++r) {
      const std::uint64_t seed = options.seed + static_cast<std::uint64_t>(r);
      delayed_runs.push_back(
          models::on_population(options, "delayed", seed, [&](Graph& pop) { return delayed_filter(m, y, pop); }));
      boot_runs.push_back(
          models::on_population(options, "bootstrap", seed, [&](Graph& pop) { return bootstrap_filter(m, y, pop); }));
      delayed_evidence.push_back(delayed_runs.back().log_evidence);
      boot_evidence.push_back(boot_runs.back().log_evidence);
      delayed_seconds.push_back(delayed_runs.back().seconds);
      boot_seconds.push_back(boot_runs.back().seconds);
    }
    const Run& delayed = delayed_runs.front();
    const Run& boot = boot_runs.front();
    models::print_estimates({{"delayed sampling", &delayed}, {"bootstrap", &boot}}, exact.log_evidence, options);
    if (options.runs > 1) {
      const models::Spread d = models::spread(delayed_evidence), b = models::spread(boot_evidence);
      std::printf("over %d runs (seeds %llu ..): delayed sampling %.6f sd %.6f, bootstrap %.6f sd %.6f; exact %.6f\n",
                  options.runs, static_cast<unsigned long long>(options.seed), d.mean, d.sd, b.mean, b.sd,
                  exact.log_evidence);
    }
    auto most_bytes = [](const std::vector<Run>& runs) {
      std::size_t b = 0;
      for (const Run& r : runs) b = std::max(b, r.state_bytes);
      return b;
    };
    models::print_result("population", "delayed", options, y.size(), delayed_evidence, delayed_seconds,
                         most_bytes(delayed_runs));
    models::print_result("population", "bootstrap", options, y.size(), boot_evidence, boot_seconds,
                         most_bytes(boot_runs));
    std::printf("\nN_t given y_0..y_t: mean [5%%, 95%%]\n  %3s %4s %5s  %-22s %-22s %-22s\n", "t", "y", "N", "exact",
                "delayed sampling", "bootstrap");
    for (std::size_t t = 0; t < y.size(); ++t) {
      char c[3][40];
      const Run* runs[3] = {&exact, &delayed, &boot};
      for (int k = 0; k < 3; ++k)
        std::snprintf(c[k], sizeof c[k], "%6.1f [%3.0f, %3.0f]", runs[k]->seasons[t].mean, runs[k]->seasons[t].lo,
                      runs[k]->seasons[t].hi);
      std::printf("  %3zu %4lld %5lld  %-22s %-22s %-22s\n", t, static_cast<long long>(y[t]),
                  static_cast<long long>(truth[t]), c[0], c[1], c[2]);
    }
    if (!options.plot.empty() && plot(y, truth, exact, delayed, boot, m.p, options.plot))
      std::printf("plot: %s\n", options.plot.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
