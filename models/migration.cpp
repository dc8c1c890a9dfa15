// Example: two populations coupled by migration, kept exact by tally's joint laws (at P = 1 and in a
// P-particle filter), against the same filter with joint laws off (the runtime samples the coupled counts).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "gnuplot.hpp"
#include "joint_programs.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
namespace mj = tally::models::joint;

namespace {

struct Season {
  double mean_a, lo_a, hi_a, mean_b, lo_b, hi_b;
};

/// Mean and 5% / 95% quantiles of a law.
void summarize(const Pmf& p, double& mean, double& lo, double& hi) {
  const Pmf n = p.normalized();
  double m = 0, c = 0;
  lo = hi = NAN;
  for (std::int64_t k = n.lo(); k <= n.hi(); ++k) {
    const double q = pdf(n, k);
    m += q * double(k);
    c += q;
    if (std::isnan(lo) && c >= 0.05) lo = double(k);
    if (std::isnan(hi) && c >= 0.95) hi = double(k);
  }
  mean = m;
}

/// log (1/P) sum_i exp(l_i).
double log_mean_exp(const std::vector<double>& l) {
  const double top = *std::max_element(l.begin(), l.end());
  if (top == -std::numeric_limits<double>::infinity()) return top;
  double s = 0;
  for (double v : l) s += std::exp(v - top);
  return top + std::log(s / double(l.size()));
}

struct FilterRun {
  std::vector<double> log_evidence;  // per particle: the sum of its observations' log-likelihoods
  std::size_t sampled = 0;           // variables the runtime sampled on its own (all observations, all particles)
  double seconds = 0;
};

FilterRun filter(const mj::Migration& w, const models::FilterOptions& o, std::uint64_t seed, bool joint) {
  Truncation t;
  if (!joint) t.max_joint_bytes = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Graph g(o.particles, seed, o.backend(), t);
  const mj::MigrationRun r = mj::run_migration(g, w);
  FilterRun f;
  f.log_evidence.assign(o.particles, 0.0);
  for (const auto& obs : r.observations) {
    f.sampled += obs.exactness().sampled.size();
    for (std::size_t i = 0; i < o.particles; ++i) f.log_evidence[i] += obs[i];
  }
  f.seconds = models::seconds_since(t0);
  return f;
}

bool plot(const mj::Migration& w, const std::vector<Season>& s, double log_evidence, const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  if (gp == nullptr) return false;
  std::fprintf(gp, "$d << EOD\n");
  for (std::size_t t = 0; t < s.size(); ++t)
    std::fprintf(gp, "%zu %g %g %g %g %g %g %g %g\n", t, s[t].mean_a, s[t].lo_a, s[t].hi_a, s[t].mean_b, s[t].lo_b,
                 s[t].hi_b, double(w.ya[t]) / w.p, double(w.yb[t]) / w.p);
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,620 font 'sans,11'\nset output %s\n"
               "set title \"Two populations coupled by migration, filtered exactly by tally's joint laws "
               "(log-evidence %.4f)\"\n"
               "set xlabel 'season'\nset ylabel 'animals'\nset key outside right top\nset grid\n"
               "plot $d using 1:3:4 with filledcurves fc rgb '#1f77b4' fs transparent solid 0.25 noborder "
               "title 'A: 90%% band',\\\n"
               "     $d using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'A: filtered mean',\\\n"
               "     $d using 1:8 with points pt 7 lc rgb '#1f77b4' title 'A: count / p',\\\n"
               "     $d using 1:6:7 with filledcurves fc rgb '#d62728' fs transparent solid 0.25 noborder "
               "title 'B: 90%% band',\\\n"
               "     $d using 1:5 with lines lw 2 lc rgb '#d62728' title 'B: filtered mean',\\\n"
               "     $d using 1:9 with points pt 5 lc rgb '#d62728' title 'B: count / p'\n",
               models::gnuplot_quote(path).c_str(), log_evidence);
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: two populations coupled by migration; exact log-evidence with joint laws, "
               "and a P-particle filter with and without them"};
  mj::Migration w;
  models::FilterOptions options;
  options.particles = 32;
  options.add_to(app);
  app.add_option("--migration", w.m, "share of A that moves to B each season")->check(CLI::Range(0.0, 1.0));
  app.add_option("--survival", w.s, "survival probability")->check(CLI::Range(0.0, 1.0));
  app.add_option("--p", w.p, "detection probability")->check(CLI::Range(0.0, 1.0));
  bool counted = false;
  app.add_flag("--counted", counted,
               "also count the migrants as they leave A (each seen with probability 1/2): the migrants then have "
               "three children that go on, still exact");
  bool fallback_only = false;
  app.add_flag("--fallback-only", fallback_only,
               "run only the filter with joint laws off (the joint filter's estimate is the exact one anyway)");
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  if (counted) w.counted = {4, 3, 4, 3, 3};
  try {
    if (!options.plot.empty()) models::check_plot(options.plot);  // before the run: a plot that cannot be drawn fails at once
    std::printf("Migration: A_0 ~ Poisson(%g), B_0 ~ Poisson(%g); each season M ~ Binomial(A, %g) moves to B,\n"
                "A' = Binomial(A - M, %g) + Poisson(%g), B' = Binomial(B + M, %g) + Poisson(%g); counts "
                "ya ~ Binomial(A, %g), yb ~ Binomial(B, %g)\n",
                w.lambda_a, w.lambda_b, w.m, w.s, w.iota_a, w.s, w.iota_b, w.p, w.p);
    if (!w.counted.empty()) std::printf("migrants counted as they leave A: Binomial(M, %g), seasons 1..5\n", w.c);
    // exact, one particle
    const auto t0 = std::chrono::steady_clock::now();
    Graph g(1, options.seed, runtime::Device::cpu);
    g.strict(true);  // nothing may be sampled: a fallback would throw
    std::vector<Season> seasons;
    const mj::MigrationRun r = mj::run_migration(g, w, [&](std::size_t, const mj::MigrationRun& now) {
      Season s{};
      summarize(g.marginal(now.a)[0], s.mean_a, s.lo_a, s.hi_a);
      summarize(g.marginal(now.b)[0], s.mean_b, s.lo_b, s.hi_b);
      seasons.push_back(s);
    });
    double log_evidence = 0, bound = 0;
    for (const auto& o : r.observations) {
      log_evidence += o[0];
      bound = std::max(bound, o.exactness().truncation_error);
    }
    const double exact_seconds = models::seconds_since(t0);
    std::printf("\nexact log-evidence (1 particle, strict mode: nothing sampled): %.10f  (%.3f s)\n", log_evidence,
                exact_seconds);
    std::printf("  carried truncation bound on the last likelihood's relative error: %.2e\n", bound);
    std::printf("\n  %3s %4s %4s   %-22s %-22s\n", "t", "ya", "yb", "A | y_0..t: mean [5%, 95%]", "B | y_0..t");
    for (std::size_t t = 0; t < seasons.size(); ++t)
      std::printf("  %3zu %4lld %4lld   %6.2f [%3.0f, %3.0f]      %6.2f [%3.0f, %3.0f]\n", t,
                  static_cast<long long>(w.ya[t]), static_cast<long long>(w.yb[t]), seasons[t].mean_a, seasons[t].lo_a,
                  seasons[t].hi_a, seasons[t].mean_b, seasons[t].lo_b, seasons[t].hi_b);

    // P particles, with joint laws (exact in every particle) and without (the coupled counts sampled)
    std::printf("\nfilters with %zu particles on %s:\n", options.particles, options.device.c_str());
    for (int run = 0; run < options.runs; ++run) {
      const std::uint64_t seed = options.seed + static_cast<std::uint64_t>(run);
      for (bool joint : {true, false}) {
        if (joint && fallback_only) continue;
        FilterRun f;
        try {
          f = filter(w, options, seed, joint);
        } catch (const std::exception& e) {  // reported, and the other filter still runs
          std::printf("  %-16s failed: %s\n", joint ? "joint laws" : "joint laws off", e.what());
          continue;
        }
        const auto [lo, hi] = std::minmax_element(f.log_evidence.begin(), f.log_evidence.end());
        std::printf("  %-16s estimate %.10f  particle spread %.3e  sampled %6zu variables  %.3f s\n",
                    joint ? "joint laws" : "joint laws off", log_mean_exp(f.log_evidence), *hi - *lo, f.sampled,
                    f.seconds);
        if (options.results)
          std::printf("RESULT model=migration method=%s device=%s particles=%zu seed=%llu estimate=%.12g spread=%.6g "
                      "sampled=%zu seconds=%.6g exact=%.12g\n",
                      joint ? "joint" : "fallback", options.device.c_str(), options.particles,
                      static_cast<unsigned long long>(seed), log_mean_exp(f.log_evidence), *hi - *lo, f.sampled,
                      f.seconds, log_evidence);
      }
    }
    if (!options.plot.empty()) {
      plot(w, seasons, log_evidence, options.plot);
      std::printf("plot: %s\n", options.plot.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
