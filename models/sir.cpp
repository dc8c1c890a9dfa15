// The main example: an SIR epidemic fitted to the 1978 boarding-school influenza outbreak by a particle filter
// whose infections and recoveries tally keeps marginalized and enumerates exactly, against a bootstrap filter.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <numeric>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "smc.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/runtime/conjugate.hpp"
#include "gnuplot.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::models::close_gnuplot;
using tally::models::gnuplot_quote;
using tally::models::open_gnuplot;
using tally::runtime::Beta;

using tally::runtime::Graph;
using tally::runtime::Variable;

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

/// The outbreak (BMJ 1978, "Influenza in a boarding school"): 763 pupils, 3 infected on day 0, and the number in
/// bed on days 1 to 14.
struct Outbreak {
  std::int64_t pupils = 763;
  std::int64_t infected0 = 3;
  std::vector<std::int64_t> in_bed{3, 8, 26, 76, 225, 298, 258, 233, 189, 128, 68, 29, 14, 4};
  std::size_t days() const { return in_bed.size(); }
  /// I(t) for t = 0 .. days.
  std::int64_t infected(std::size_t t) const { return t == 0 ? infected0 : in_bed[t - 1]; }
};

/// A particle summary of one compartment on one day: weighted mean and 5% / 95% quantiles.
using models::Band;

struct DayStats {
  Band S, R;
  double ess = 0;  // effective sample size of the day's weights, before resampling
};

struct RunResult {
  double log_evidence = 0;
  std::size_t failed_day = 0;  // the day on which every particle had weight zero (0: none)
  double delta_mean = 0, gamma_mean = 0;
  std::vector<DayStats> days;  // days 0 .. T (day 0 is the known initial state)
  double seconds = 0;
  std::size_t state_bytes = 0;  // the most the population held just after a day's observation
};

DayStats initial_stats(const Outbreak& data) {
  const auto s0 = static_cast<double>(data.pupils - data.infected0);
  return {{s0, s0, s0}, {0, 0, 0}, 0};
}

/// The end of day t, shared by both filters: summarize the weighted S and R (where the population lives: a few
/// numbers copied back), then resample every live node of the population systematically and add the day's
/// log-evidence increment. False (and the day recorded) when every particle has weight zero.
bool end_of_day(RunResult& out, std::size_t t, Graph& pop, const Variable& S, const Variable& R) {
  const Variable both[] = {S, R};
  const std::vector<models::Band> bands = models::weighted_bands(pop, both);
  const models::Band &s = bands[0], &r = bands[1];
  const Graph::Resampling step = pop.resample_by_weight(1.0);
  if (step.log_mean_weight == neg_inf) {
    out.log_evidence = neg_inf;
    out.failed_day = t;
    return false;
  }
  out.log_evidence += step.log_mean_weight;
  out.days.push_back({s, r, step.ess});
  return true;
}

/// The delayed-sampling filter: delta and gamma stay Beta (conjugate), new and rec stay beta-binomial until
/// I(t) - I(t-1) = new - rec is observed; tally then weighs each particle by the exact P(new - rec = change) (one
/// skew diagonal, no convolution) and draws new and rec from their exact joint posterior, which updates the Betas.
/// The contacts tau ~ Binomial(S, 1 - exp(-lambda I / N)) are drawn (a chain binomial).
RunResult delayed_filter(const Outbreak& data, Graph& pop, double lambda) {
  const auto start = std::chrono::steady_clock::now();
  const auto P = static_cast<double>(pop.shard().total);  // the population's particles (a shard holds some)
  const auto delta = pop.assume(Beta(2, 2));  // the probability that a contact infects
  const auto gamma = pop.assume(Beta(2, 2));  // the daily probability of recovery
  Variable S = pop.constant(data.pupils - data.infected0), I = pop.constant(data.infected0), R = pop.constant(0);
  const double c = lambda / static_cast<double>(data.pupils);
  RunResult out;
  out.days.push_back(initial_stats(data));
  for (std::size_t t = 1; t <= data.days(); ++t) {
    // the chain binomial: each susceptible escapes each of I infectious contacts at rate c
    const Variable tau = pop.binomial(S, gpu::hazard_probabilities(pop.values(I), c));
    pop.realize(tau);
    const Variable n = pop.binomial(tau, delta);  // new infections
    const Variable r = pop.binomial(I, gamma);    // recoveries
    const Variable d = pop.subtract(n, r);
    pop.observe(d, pop.subtract(pop.constant(data.infected(t)), I));  // new and rec drawn given d
    out.state_bytes = std::max(out.state_bytes, pop.bytes());
    S = pop.subtract(S, n);
    I = pop.add(I, d);
    R = pop.add(R, r);
    if (!end_of_day(out, t, pop, S, R)) break;
  }
  out.seconds = models::seconds_since(start);  // the steps; the posterior means below are read on the host
  if (out.failed_day == 0) {
    // exact Rao-Blackwellized posterior means: the mean of each particle's Beta, averaged (equal weights)
    for (const auto& b : pop.beta(delta)) out.delta_mean += runtime::mean(b) / P;
    for (const auto& b : pop.beta(gamma)) out.gamma_mean += runtime::mean(b) / P;
    out.delta_mean = models::population_sum(pop, out.delta_mean);
    out.gamma_mean = models::population_sum(pop, out.gamma_mean);
    const auto last = pop.value(I);
    for (std::size_t i = 0; i < last.size(); ++i)
      if (last[i] != data.infected(data.days()))
        std::fprintf(stderr, "warning: particle %zu has I = %lld, not the observed %lld\n", pop.shard().first + i,
                     static_cast<long long>(last[i]), static_cast<long long>(data.infected(data.days())));
  }
  return out;
}

/// The bootstrap filter: every variable drawn forward (delta and gamma too), weight 1 if the simulated I(t) equals
/// the data, else 0.
RunResult bootstrap_filter(const Outbreak& data, Graph& pop, double lambda) {
  const auto start = std::chrono::steady_clock::now();
  const auto P = static_cast<double>(pop.shard().total);
  const auto delta = pop.assume(Beta(2, 2)), gamma = pop.assume(Beta(2, 2));
  pop.realize(delta);
  pop.realize(gamma);
  Variable S = pop.constant(data.pupils - data.infected0), I = pop.constant(data.infected0), R = pop.constant(0);
  const double c = lambda / static_cast<double>(data.pupils);
  RunResult out;
  out.days.push_back(initial_stats(data));
  for (std::size_t t = 1; t <= data.days(); ++t) {
    // the chain binomial: each susceptible escapes each of I infectious contacts at rate c
    const Variable tau = pop.binomial(S, gpu::hazard_probabilities(pop.values(I), c));
    pop.realize(tau);
    const Variable n = pop.binomial(tau, delta), r = pop.binomial(I, gamma);  // Binomial(tau_i, delta_i), ...
    pop.realize(n);
    pop.realize(r);
    S = pop.subtract(S, n);
    I = pop.add(I, pop.subtract(n, r));
    R = pop.add(R, r);
    pop.observe(I, data.infected(t));
    out.state_bytes = std::max(out.state_bytes, pop.bytes());
    if (!end_of_day(out, t, pop, S, R)) break;
  }
  out.seconds = models::seconds_since(start);  // the steps; the posterior means below are read on the host
  if (out.failed_day == 0) {
    for (double v : pop.scalar_value(delta)) out.delta_mean += v / P;
    for (double v : pop.scalar_value(gamma)) out.gamma_mean += v / P;
    out.delta_mean = models::population_sum(pop, out.delta_mean);
    out.gamma_mean = models::population_sum(pop, out.gamma_mean);
  }
  return out;
}

void print_run(const char* name, const Outbreak& data, const RunResult& run) {
  std::printf("%s\n", name);
  if (run.failed_day != 0) {
    std::printf("  every particle had weight zero on day %zu: log-evidence -inf (%.2f s)\n\n", run.failed_day,
                run.seconds);
    return;
  }
  std::printf("  log-evidence log p(I(1..%zu)) = %.4f   (%.2f s)\n", data.days(), run.log_evidence, run.seconds);
  std::printf("  posterior mean of delta (infection per contact) = %.4f, of gamma (daily recovery) = %.4f\n",
              run.delta_mean, run.gamma_mean);
  std::printf("  %3s %5s  %-24s %-24s %7s\n", "day", "I", "S mean [5%, 95%]", "R mean [5%, 95%]", "ESS");
  for (std::size_t t = 0; t < run.days.size(); ++t) {
    const auto& d = run.days[t];
    char s[64], r[64];
    std::snprintf(s, sizeof s, "%6.1f [%3.0f, %3.0f]", d.S.mean, d.S.lo, d.S.hi);
    std::snprintf(r, sizeof r, "%6.1f [%3.0f, %3.0f]", d.R.mean, d.R.lo, d.R.hi);
    if (t == 0)
      std::printf("  %3zu %5lld  %-24s %-24s %7s\n", t, static_cast<long long>(data.infected(t)), s, r, "-");
    else
      std::printf("  %3zu %5lld  %-24s %-24s %7.1f\n", t, static_cast<long long>(data.infected(t)), s, r, d.ess);
  }
  std::printf("\n");
}

/// Draws the data and the filtered S and R with their 90% bands into a PNG; throws models::plot_error on failure.
bool plot(const Outbreak& data, const RunResult& run, double lambda, const std::string& path) {
  FILE* gp = open_gnuplot(path);
  std::fprintf(gp, "$run << EOD\n");
  for (std::size_t t = 0; t < run.days.size(); ++t) {
    const auto& d = run.days[t];
    std::fprintf(gp, "%zu %lld %g %g %g %g %g %g\n", t, static_cast<long long>(data.infected(t)), d.S.mean, d.S.lo,
                 d.S.hi, d.R.mean, d.R.lo, d.R.hi);
  }
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,620 font 'sans,11'\n"
               "set output %s\n"
               "set title \"Boarding-school influenza, 1978 (N = %lld): SIR filtered by tally, lambda = %g\\n"
               "log-evidence %.3f, posterior means delta = %.3f, gamma = %.3f\"\n"
               "set xlabel 'day'\nset ylabel 'pupils'\nset key outside right top\nset grid\n"
               "set xrange [0:%zu]\nset yrange [0:%lld]\n"
               "plot $run using 1:4:5 with filledcurves fc rgb '#1f77b4' fs transparent solid 0.25 noborder "
               "title 'S: 90%% band',\\\n"
               "     $run using 1:3 with lines lw 2 lc rgb '#1f77b4' title 'S: filtered mean',\\\n"
               "     $run using 1:7:8 with filledcurves fc rgb '#2ca02c' fs transparent solid 0.25 noborder "
               "title 'R: 90%% band',\\\n"
               "     $run using 1:6 with lines lw 2 lc rgb '#2ca02c' title 'R: filtered mean',\\\n"
               "     $run using 1:2 with linespoints pt 7 ps 1.2 lw 1 lc rgb '#d62728' title 'I: in bed (data)'\n",
               gnuplot_quote(path).c_str(), static_cast<long long>(data.pupils), lambda, run.log_evidence,
               run.delta_mean, run.gamma_mean, data.days(), static_cast<long long>(data.pupils));
  return close_gnuplot(gp, path);
}

/// "-71.2345", or "-inf (every weight zero on day 5)".
std::string outcome(const RunResult& r) {
  char buf[64];
  if (r.failed_day != 0)
    std::snprintf(buf, sizeof buf, "-inf (every weight zero on day %zu)", r.failed_day);
  else
    std::snprintf(buf, sizeof buf, "%.4f", r.log_evidence);
  return buf;
}

struct Summary {
  double mean = 0, sd = 0, variance = 0, seconds = 0;
  std::size_t finite = 0, failed = 0;
};

Summary summarize(const std::vector<RunResult>& runs) {
  Summary s;
  double sum = 0;
  for (const auto& r : runs) {
    s.seconds += r.seconds / static_cast<double>(runs.size());
    if (r.log_evidence == neg_inf) {
      ++s.failed;
    } else {
      ++s.finite;
      sum += r.log_evidence;
    }
  }
  if (s.finite == 0) return {neg_inf, 0, 0, s.seconds, 0, s.failed};
  s.mean = sum / static_cast<double>(s.finite);
  for (const auto& r : runs)
    if (r.log_evidence != neg_inf) s.variance += (r.log_evidence - s.mean) * (r.log_evidence - s.mean);
  s.variance = s.finite > 1 ? s.variance / static_cast<double>(s.finite - 1) : 0.0;
  s.sd = std::sqrt(s.variance);
  return s;
}

/// Runs both filters `runs` times on `data` and prints the log-evidence table; returns the delayed runs.
std::pair<std::vector<RunResult>, std::vector<RunResult>> compare(const Outbreak& data, const models::FilterOptions& o,
                                                                  int runs, double lambda) {
  const std::size_t particles = o.particles;
  const std::uint64_t seed = o.seed;
  std::vector<RunResult> delayed, bootstrap;
  for (int k = 0; k < runs; ++k) {
    const std::uint64_t s = seed + static_cast<std::uint64_t>(k);
    delayed.push_back(
        models::on_population(o, "delayed", s, [&](Graph& pop) { return delayed_filter(data, pop, lambda); }));
    bootstrap.push_back(
        models::on_population(o, "bootstrap", s, [&](Graph& pop) { return bootstrap_filter(data, pop, lambda); }));
    if (runs > 1)
      std::fprintf(stderr, "days 1..%zu, run %d/%d (seed %llu): delayed sampling %s (%.2f s), bootstrap %s (%.2f s)\n",
                   data.days(), k + 1, runs, static_cast<unsigned long long>(s), outcome(delayed.back()).c_str(),
                   delayed.back().seconds, outcome(bootstrap.back()).c_str(), bootstrap.back().seconds);
  }
  std::printf("Log-evidence of I(1..%zu) over %d runs (seeds %llu .. %llu); mean, sd and variance over the finite runs\n",
              data.days(), runs, static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed) + static_cast<unsigned>(runs) - 1);
  std::printf("  %-17s %9s %12s %10s %12s %7s %13s\n", "method", "particles", "mean", "sd", "variance", "-inf",
              "time per run");
  const std::pair<const char*, const std::vector<RunResult>*> rows[] = {{"delayed sampling", &delayed},
                                                                        {"bootstrap", &bootstrap}};
  Summary sums[2];
  for (int k = 0; k < 2; ++k) {
    const Summary s = sums[k] = summarize(*rows[k].second);
    char stats[64];
    if (s.finite == 0)
      std::snprintf(stats, sizeof stats, "%12s %10s %12s", "-inf", "-", "-");
    else if (s.finite == 1)
      std::snprintf(stats, sizeof stats, "%12.4f %10s %12s", s.mean, "-", "-");
    else
      std::snprintf(stats, sizeof stats, "%12.4f %10.4f %12.5f", s.mean, s.sd, s.variance);
    std::printf("  %-17s %9zu %s %3zu/%-3d %11.3f s\n", rows[k].first, particles, stats, s.failed, runs, s.seconds);
  }
  for (int k = 0; k < 2; ++k) {
    if (sums[k].failed == 0) continue;
    std::printf("  %s: every particle had weight zero (log-evidence -inf, infinite variance) in %zu of %d runs, on "
                "day(s)",
                rows[k].first, sums[k].failed, runs);
    for (const auto& r : *rows[k].second)
      if (r.failed_day != 0) std::printf(" %zu", r.failed_day);
    std::printf("\n");
  }
  if (sums[0].finite > 1 && sums[1].finite > 1 && sums[0].variance > 0)
    std::printf("  variance ratio bootstrap / delayed sampling: %.3g\n", sums[1].variance / sums[0].variance);
  std::printf("\n");
  return {std::move(delayed), std::move(bootstrap)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: SIR epidemic on the 1978 boarding-school influenza outbreak (delayed sampling vs "
               "bootstrap particle filter)"};
  std::size_t particles = 1024;
  std::uint64_t seed = 1;
  int runs = 20;
  std::size_t days = 14;
  double lambda = 10.0;
  std::string plot_path = "sir.png";
  app.add_option("--particles", particles, "number of particles of each filter")->check(CLI::Range(1, 1 << 24));
  app.add_option("--seed", seed, "seed of the first run (run r uses seed + r)");
  app.add_option("--runs", runs, "independent runs of each filter for the log-evidence table")
      ->check(CLI::Range(1, 100000));
  app.add_option("--lambda", lambda, "contact rate: a susceptible meets an infected with prob 1 - exp(-lambda I/N)")
      ->check(CLI::Range(1e-9, 1e6));
  const CLI::Option* plot_option = app.add_option("--plot", plot_path, "PNG file for the plot ('' for none)");
  std::string device = "cpu";
  app.add_option("--device", device, "where the particle populations run: cpu (one core) or gpu (CUDA)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_option("--days", days, "fit only the first DAYS observations (1 to 14)")->check(CLI::Range(1, 14));
  std::size_t compare_days = 3;
  int compare_runs = 40;
  app.add_option("--compare-days", compare_days, "also compare the filters on the first DAYS days (0: no)")
      ->check(CLI::Range(0, 14));
  app.add_option("--compare-runs", compare_runs, "runs of that comparison")->check(CLI::Range(2, 100000));
  bool result_lines = false;  // --results
  models::add_results_flag(app, result_lines);
  models::FilterOptions options;
  options.add_sharding_to(app);
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  if (plot_option->count() == 0 && !models::gnuplot_found()) {  // the default plot, where none can be drawn: go on
    std::fprintf(stderr, "note: gnuplot not found, so no %s (apt-get install gnuplot-nox draws it)\n",
                 plot_path.c_str());
    plot_path.clear();
  }

  Outbreak data;
  data.in_bed.resize(days);
  try {
    const auto mpi = models::join_nccl(options, argc, argv);
    if (!plot_path.empty()) models::check_plot(plot_path);  // before the run: a plot that cannot be drawn fails at once
    std::printf("SIR epidemic, boarding-school influenza 1978: N = %lld pupils, I(0) = %lld, I(1..%zu) observed\n",
                static_cast<long long>(data.pupils), static_cast<long long>(data.infected0), data.days());
    std::printf("per day: tau ~ Binomial(S, 1 - exp(-%g I/N)) contacts (sampled), new ~ Binomial(tau, delta),\n"
                "rec ~ Binomial(I, gamma), delta, gamma ~ Beta(2, 2); observed I(t) - I(t-1) = new - rec\n"
                "%zu particles on the %s, systematic resampling every day, seed %llu\n\n",
                lambda, particles, device.c_str(), static_cast<unsigned long long>(seed));
    std::fflush(stdout);  // the title before the runs' progress lines (stderr), also where stdout is a pipe

    options.particles = particles;
    options.seed = seed;
    options.device = device;
    options.results = result_lines;
    auto [delayed, bootstrap] = compare(data, options, runs, lambda);
    const std::pair<const char*, const std::vector<RunResult>*> methods[] = {{"delayed", &delayed},
                                                                             {"bootstrap", &bootstrap}};
    for (const auto& [name, results] : methods) {
      std::vector<double> evidence, seconds;
      std::vector<std::size_t> days_run;  // a run whose weights all fell to zero stopped on that day
      std::size_t bytes = 0;
      for (const RunResult& r : *results) {
        evidence.push_back(r.log_evidence), seconds.push_back(r.seconds), bytes = std::max(bytes, r.state_bytes);
        days_run.push_back(r.failed_day != 0 ? r.failed_day : data.days());
      }
      models::print_result("sir", name, options, data.days(), evidence, seconds, bytes, days_run);
    }
    print_run("Delayed sampling (tally: delta, gamma, new, rec marginalized; new - rec enumerated exactly)", data,
              delayed.front());
    print_run("Bootstrap filter (everything sampled; weight 1 if the simulated I(t) equals the data, else 0)", data,
              bootstrap.front());
    if (compare_days > 0 && compare_days < data.days()) {
      // The bootstrap filter rarely survives the peak of the epidemic: compare the two on the first days too.
      Outbreak early = data;
      early.in_bed.resize(compare_days);
      std::printf("The same comparison on the first %zu days only, where the bootstrap filter can survive:\n",
                  compare_days);
      compare(early, options, compare_runs, lambda);
    }

    if (plot_path.empty()) return 0;  // --plot '': none asked for
    if (delayed.front().failed_day != 0)
      std::printf("no plot: the delayed-sampling run of seed %llu lost every particle\n",
                  static_cast<unsigned long long>(seed));
    else if (plot(data, delayed.front(), lambda, plot_path))
      std::printf("plot: %s\n", plot_path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
