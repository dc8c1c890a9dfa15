// Example: the exact likelihood surface of the population model over a grid of (phi, p), one group per parameter
// set, and bootstrap filters of the same sets for comparison.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "gnuplot.hpp"
#include "population_groups.hpp"
#include "results.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
using tally::runtime::Variable;
using models::population::Model;

namespace {

/// The grid: phi in [0.5, 0.95] along one side, p in [0.3, 0.9] along the other (side x side sets, set k at
/// (k % side, k / side)); set 0 is moved to (0.8, 0.6), the data's own parameters.
struct Grid {
  std::size_t side;
  std::vector<double> phi, p;
  explicit Grid(std::size_t s) : side(s) {
    for (std::size_t k = 0; k < s * s; ++k) {
      phi.push_back(0.5 + 0.45 * double(k % s) / double(std::max<std::size_t>(s - 1, 1)));
      p.push_back(0.3 + 0.6 * double(k / s) / double(std::max<std::size_t>(s - 1, 1)));
    }
    phi[0] = 0.8;
    p[0] = 0.6;
  }
  std::size_t size() const { return phi.size(); }
};

/// Each set's log-likelihood (population::group_log_likelihoods) and the seconds it took: the graph's whole
/// program, the log-evidence copied back to the host included.
struct Surface {
  std::vector<double> log_likelihood;
  double seconds = 0;
};
Surface run(const Model& m, const std::vector<std::int64_t>& y, const Grid& grid, std::size_t per_group,
            bool bootstrap, const models::FilterOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  auto evidence =
      models::population::group_log_likelihoods(m, y, grid.phi, grid.p, per_group, bootstrap, o.seed, o.backend());
  return {std::move(evidence), models::seconds_since(start)};
}

/// The same set's log-likelihood from a one-particle graph of constant parameters (the check).
double one_set(const Model& m, const std::vector<std::int64_t>& y, double phi, double p) {
  Graph g(1, 1, runtime::Device::cpu);
  g.strict(true);
  Variable n = g.assume(Poisson(m.lambda0));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) n = g.add(g.binomial(n, phi), g.assume(Poisson(m.iota)));
    g.observe(g.binomial(n, p), y[t]);
  }
  return g.log_weights()[0];
}

bool plot(const Grid& grid, const std::vector<double>& ll, std::size_t best, const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  std::fprintf(gp, "$d << EOD\n");
  const std::size_t s = grid.side;
  for (std::size_t b = 0; b < s; ++b) {
    for (std::size_t a = 0; a < s; ++a) {
      const std::size_t k = b * s + a;
      // set 0 was moved to (0.8, 0.6): its grid point is drawn from its neighbour
      const std::size_t shown = k == 0 && s > 1 ? 1 : k;
      const double phi = 0.5 + 0.45 * double(a) / double(std::max<std::size_t>(s - 1, 1));
      const double p = 0.3 + 0.6 * double(b) / double(std::max<std::size_t>(s - 1, 1));
      std::fprintf(gp, "%.6f %.6f %.6f\n", phi, p, std::max(ll[shown] - ll[best], -60.0));
    }
    std::fprintf(gp, "\n");
  }
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 900,750\nset output %s\n"
               "set title 'population model: exact log-likelihood surface, relative to its maximum (%zu sets)'\n"
               "set xlabel 'phi (survival)'\nset ylabel 'p (detection)'\nset xrange [0.5:0.95]\nset yrange [0.3:0.9]\n"
               "set view map\nset contour base\n"
               "set cntrparam levels discrete -1,-2,-5,-10,-20,-40\nset palette rgb 33,13,10\n"
               "set label 1 at %.4f,%.4f 'max' front point pt 7 ps 1.5 lc rgb 'white' offset 1,1 tc rgb 'white'\n"
               "splot $d using 1:2:3 with pm3d notitle, $d using 1:2:3 with lines nosurface lc rgb 'black' "
               "notitle\n",
               models::gnuplot_quote(path).c_str(), grid.size(), grid.phi[best], grid.p[best]);
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: the exact likelihood surface of the population model over a grid of (phi, p), one "
               "group per parameter set, against bootstrap filters of the same sets"};
  Model m;
  models::FilterOptions options;
  options.particles = 256;
  std::size_t side = 64, seasons = 20;
  std::uint64_t data_seed = 7;
  app.add_option("--side", side, "grid side: side x side parameter sets")->check(CLI::Range(1, 4096));
  app.add_option("--particles", options.particles, "particles of each set's bootstrap filter (0: none)")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("--seasons", seasons, "seasons T of synthetic data")->check(CLI::Range(1, 100000));
  app.add_option("--data-seed", data_seed, "seed of the synthetic data");
  app.add_option("--seed", options.seed, "seed of the bootstrap filters");
  app.add_option("--device", options.device, "where the groups run: cpu (one core) or gpu (CUDA)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_option("--runs", options.runs, "timed runs of each (the fastest is reported)")->check(CLI::Range(1, 1000));
  app.add_option("--plot", options.plot, "PNG file for the surface's contour plot (needs gnuplot; none by default)");
  models::add_results_flag(app, options.results);
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  try {
    if (!options.plot.empty()) models::check_plot(options.plot);
    const auto [y, truth] = models::population::simulate(m, seasons, data_seed);
    const Grid grid(side);
    std::printf("Population model, %zu seasons (data seed %llu); %zu parameter sets (phi in [0.5, 0.95], p in "
                "[0.3, 0.9]), one group each, on the %s\n",
                seasons, static_cast<unsigned long long>(data_seed), grid.size(), options.device.c_str());
    Surface exact;
    for (int r = 0; r < options.runs; ++r) {
      Surface s = run(m, y, grid, 1, false, options);
      if (r == 0 || s.seconds < exact.seconds) exact = std::move(s);
    }
    const std::size_t best = static_cast<std::size_t>(
        std::max_element(exact.log_likelihood.begin(), exact.log_likelihood.end()) - exact.log_likelihood.begin());
    std::printf("exact surface (delayed sampling, 1 particle a set, nothing sampled): %.3f s, %.3f us a set and "
                "season\n",
                exact.seconds, 1e6 * exact.seconds / double(grid.size() * seasons));
    std::printf("  maximum: log-likelihood %.6f at phi = %.4f, p = %.4f; the data's own (0.8, 0.6): %.10f\n",
                exact.log_likelihood[best], grid.phi[best], grid.p[best], exact.log_likelihood[0]);
    // the check: sets spread over the grid, each against its own one-particle graph
    double worst = 0;
    const std::size_t checks = std::min<std::size_t>(grid.size(), 16);
    for (std::size_t c = 0; c < checks; ++c) {
      const std::size_t k = c * (grid.size() / checks);
      const double one = one_set(m, y, grid.phi[k], grid.p[k]);
      worst = std::max(worst, std::abs(exact.log_likelihood[k] - one) / std::abs(one));
    }
    std::printf("  check: %zu sets against their own one-particle graphs, largest relative difference %.2e\n", checks,
                worst);
    if (options.particles > 0) {
      Surface boot;
      for (int r = 0; r < options.runs; ++r) {
        Surface s = run(m, y, grid, options.particles, true, options);
        if (r == 0 || s.seconds < boot.seconds) boot = std::move(s);
      }
      // a set whose particles were all impossible at some season has log-likelihood -inf (the filter lost it)
      double mean_error = 0, square_error = 0;
      std::size_t lost = 0;
      for (std::size_t k = 0; k < grid.size(); ++k) lost += !std::isfinite(boot.log_likelihood[k]);
      for (std::size_t k = 0; k < grid.size(); ++k) {
        if (!std::isfinite(boot.log_likelihood[k])) continue;
        const double e = boot.log_likelihood[k] - exact.log_likelihood[k];
        mean_error += e / double(grid.size() - lost);
        square_error += e * e / double(grid.size() - lost);
      }
      std::printf("bootstrap filters (%zu particles a set, each set resampled within itself every season): %.3f s, "
                  "%.3f us a set and season\n",
                  options.particles, boot.seconds, 1e6 * boot.seconds / double(grid.size() * seasons));
      std::printf("  their log-likelihoods against the exact ones: mean error %.4f, root mean square %.4f (the exact "
                  "surface's: 0);\n  %zu of %zu sets lost (every particle impossible at some season: -inf)\n",
                  mean_error, std::sqrt(square_error), lost, grid.size());
      if (options.results)
        std::printf("RESULT surface bootstrap sets=%zu particles=%zu seasons=%zu seconds=%.6f rms=%.6f lost=%zu\n",
                    grid.size(), options.particles, seasons, boot.seconds, std::sqrt(square_error), lost);
    }
    if (options.results)
      std::printf("RESULT surface exact sets=%zu seasons=%zu seconds=%.6f max_relative_difference=%.3e "
                  "data_parameters=%.10f\n",
                  grid.size(), seasons, exact.seconds, worst, exact.log_likelihood[0]);
    if (!options.plot.empty() && plot(grid, exact.log_likelihood, best, options.plot))
      std::printf("plot: %s\n", options.plot.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
