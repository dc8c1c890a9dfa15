// Example: the wet-grass Bayesian network (cloudy -> sprinkler, rain -> wet grass: a diamond), its exact
// posterior from tally's joint laws printed as a fraction and checked against enumeration in integers.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>

#include "gnuplot.hpp"
#include "joint_programs.hpp"
#include "results.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
namespace mj = tally::models::joint;

namespace {

constexpr std::int64_t unit = 100LL * 100 * 100 * 100;  // every joint probability is a multiple of 100^-4

/// P(wet) and P(x = 1, wet) for x = cloudy, sprinkler, rain, in units of 100^-4, by enumerating the 8 worlds.
struct Counts {
  std::int64_t wet = 0, cloudy = 0, sprinkler = 0, rain = 0;
};
Counts enumerate(const mj::WetGrass& n) {
  Counts out;
  for (int c = 0; c < 2; ++c)
    for (int s = 0; s < 2; ++s)
      for (int r = 0; r < 2; ++r) {
        const std::int64_t w = std::int64_t(c ? n.cloudy : 100 - n.cloudy) * (s ? n.sprinkler[c] : 100 - n.sprinkler[c]) *
                               (r ? n.rain[c] : 100 - n.rain[c]) * n.wet[2 * s + r];
        out.wet += w;
        out.cloudy += c ? w : 0;
        out.sprinkler += s ? w : 0;
        out.rain += r ? w : 0;
      }
  return out;
}

/// A probability tally computed, read as a multiple of 100^-4 (it must be one: false if it is not within 1e-6).
bool as_count(double p, std::int64_t& count) {
  const double scaled = p * double(unit);
  count = std::llround(scaled);
  return std::abs(scaled - double(count)) < 1e-6;
}

std::string fraction(std::int64_t num, std::int64_t den) {
  const std::int64_t d = std::gcd(num, den);
  return std::to_string(num / d) + "/" + std::to_string(den / d);
}

bool plot(const double prior[3], const double post[3], const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  if (gp == nullptr) return false;
  const char* names[3] = {"cloudy", "sprinkler", "rain"};
  std::fprintf(gp, "$d << EOD\n");
  for (int k = 0; k < 3; ++k) std::fprintf(gp, "%s %g %g\n", names[k], prior[k], post[k]);
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 800,500 font 'sans,11'\nset output %s\n"
               "set title 'Wet grass: prior and exact posterior given wet grass'\nset ylabel 'P(= 1)'\n"
               "set yrange [0:1]\nset style data histograms\nset style fill solid 0.6\nset grid ytics\n"
               "plot $d using 2:xtic(1) title 'prior', $d using 3 title 'posterior | wet'\n",
               models::gnuplot_quote(path).c_str());
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: the wet-grass Bayesian network, a diamond, solved exactly"};
  std::string plot_path;
  bool results = false;
  app.add_option("--plot", plot_path, "PNG file for a plot (needs gnuplot; none by default)");
  models::add_results_flag(app, results);
  CLI11_PARSE(app, argc, argv);
  try {
    if (!plot_path.empty()) models::check_plot(plot_path);  // before the run: a plot that cannot be drawn fails at once
    const mj::WetGrass n;
    std::printf("Wet grass: cloudy ~ Bernoulli(%.2f); sprinkler | cloudy ~ Bernoulli(%.2f, %.2f); rain | cloudy ~ "
                "Bernoulli(%.2f, %.2f);\nwet | sprinkler, rain ~ Bernoulli(%.2f, %.2f, %.2f, %.2f); observed: wet = 1\n\n",
                n.cloudy / 100.0, n.sprinkler[0] / 100.0, n.sprinkler[1] / 100.0, n.rain[0] / 100.0,
                n.rain[1] / 100.0, n.wet[0] / 100.0, n.wet[1] / 100.0, n.wet[2] / 100.0, n.wet[3] / 100.0);
    Graph g;
    g.strict(true);  // nothing may be sampled
    double prior[3];  // P(x = 1) before the observation, from the tables
    const Counts want = enumerate(n);
    const mj::WetGrassRun r = mj::run_wet_grass(g, n);
    const double evidence = std::exp(r.wet[0]);
    const runtime::Variable vars[3] = {r.cloudy, r.sprinkler, r.rain};
    const std::int64_t joint_want[3] = {want.cloudy, want.sprinkler, want.rain};
    const char* names[3] = {"cloudy", "sprinkler", "rain"};
    prior[0] = n.cloudy / 100.0;
    prior[1] = (n.sprinkler[0] * (100 - n.cloudy) + n.sprinkler[1] * n.cloudy) / 1e4;
    prior[2] = (n.rain[0] * (100 - n.cloudy) + n.rain[1] * n.cloudy) / 1e4;
    double post[3];
    bool all_match = true;
    std::int64_t wet_count = 0;
    const bool wet_ok = as_count(evidence, wet_count) && wet_count == want.wet;
    all_match = all_match && wet_ok;
    std::printf("P(wet) = %s = %.15f   enumeration: %s  %s\n", fraction(wet_count, unit).c_str(), evidence,
                fraction(want.wet, unit).c_str(), wet_ok ? "(equal)" : "(DIFFERENT)");
    for (int k = 0; k < 3; ++k) {
      post[k] = pdf(g.marginal(vars[k])[0], 1);
      std::int64_t c = 0;
      const bool ok = as_count(post[k] * evidence, c) && c == joint_want[k];
      all_match = all_match && ok;
      std::printf("P(%s | wet) = %s = %.15f   enumeration: %s  %s\n", names[k], fraction(c, wet_count).c_str(), post[k],
                  fraction(joint_want[k], want.wet).c_str(), ok ? "(equal)" : "(DIFFERENT)");
      if (results) std::printf("RESULT model=wet_grass variable=%s posterior=%.17g\n", names[k], post[k]);
    }
    std::printf("exactness: %s\n", r.wet.exactness().describe().c_str());
    if (!all_match) {
      std::fprintf(stderr, "error: tally's posterior differs from the enumeration\n");
      return 1;
    }
    if (!plot_path.empty()) {
      plot(prior, post, plot_path);
      std::printf("plot: %s\n", plot_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
