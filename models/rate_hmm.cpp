// Example: a hidden Markov model whose Poisson emission rates are unknown counts with Geometric priors;
// exact log-evidence and each rate's posterior from tally's joint laws (each emission has three random parents).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "filter.hpp"
#include "gnuplot.hpp"
#include "joint_programs.hpp"
#include "results.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
namespace mj = tally::models::joint;

namespace {

bool plot(const std::vector<Pmf>& rates, const std::vector<double>& state1, const std::vector<std::int64_t>& y,
          double log_evidence, const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  if (gp == nullptr) return false;
  for (std::size_t k = 0; k < rates.size(); ++k) {
    std::fprintf(gp, "$r%zu << EOD\n", k);
    const Pmf n = rates[k].normalized();
    for (std::int64_t v = n.lo(); v <= std::min<std::int64_t>(n.hi(), 40); ++v) std::fprintf(gp, "%lld %g\n", static_cast<long long>(v), pdf(n, v));
    std::fprintf(gp, "EOD\n");
  }
  std::fprintf(gp, "$s << EOD\n");
  for (std::size_t t = 0; t < y.size(); ++t) std::fprintf(gp, "%zu %lld %g\n", t, static_cast<long long>(y[t]), state1[t]);
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,700 font 'sans,11'\nset output %s\nset multiplot layout 2,1\n"
               "set title \"Posterior of the unknown emission rates R_0, R_1 (exact; log-evidence %.4f)\"\n"
               "set xlabel 'rate'\nset ylabel 'probability'\nset grid\nset style fill solid 0.5\n"
               "plot $r0 using 1:2 with boxes title 'R_0', $r1 using 1:2 with boxes title 'R_1'\n"
               "set title 'Counts and P(s_t = 1 | y_0..y_t)'\nset xlabel 't'\nset ylabel 'count'\n"
               "set y2label 'probability'\nset y2range [0:1]\nset y2tics\n"
               "plot $s using 1:2 with linespoints pt 7 title 'y', $s using 1:3 axes x1y2 with steps lw 2 "
               "title 'P(s_t = 1 | y_0..t)'\nunset multiplot\n",
               models::gnuplot_quote(path).c_str(), log_evidence);
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: an HMM whose Poisson emission rates are unknown counts with Geometric "
               "priors; exact log-evidence and rate posteriors"};
  mj::RateHmm h;
  std::string plot_path;
  bool results = false;
  app.add_option("--plot", plot_path, "PNG file for a plot (needs gnuplot; none by default)");
  models::add_results_flag(app, results);
  CLI11_PARSE(app, argc, argv);
  try {
    if (!plot_path.empty()) models::check_plot(plot_path);  // before the run: a plot that cannot be drawn fails at once
    std::printf("Rate HMM: R_k ~ Geometric(%g), %g (prior means %g, %g); s_0 ~ Categorical(%g, %g), 2-state Markov "
                "chain;\ny_t | s_t, R ~ Poisson(%g R_{s_t}); %zu counts:",
                h.q[0], h.q[1], (1 - h.q[0]) / h.q[0], (1 - h.q[1]) / h.q[1], h.init[0], h.init[1], h.a, h.y.size());
    for (auto v : h.y) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n");
    const auto t0 = std::chrono::steady_clock::now();
    Graph g;
    g.strict(true);  // nothing may be sampled
    // the program of models/joint_programs.hpp, step by step, to read P(s_t = 1 | y_0..t) on the way
    std::vector<runtime::Variable> rates;
    for (Eigen::Index k = 0; k < h.q.size(); ++k) rates.push_back(g.assume(Geometric(h.q[k])));
    runtime::Variable s;
    double log_evidence = 0, bound = 0;
    std::vector<double> state1;
    for (std::size_t t = 0; t < h.y.size(); ++t) {
      s = t == 0 ? g.assume(Categorical(h.init)) : g.assume(s, MarkovStep(h.T));
      const runtime::Observation o = g.observe(g.poisson(s, rates, h.a), h.y[t]);
      log_evidence += o[0];
      bound = std::max(bound, o.exactness().truncation_error);
      state1.push_back(pdf(g.marginal(s)[0], 1));
    }
    std::vector<Pmf> post;
    for (const auto& r : rates) post.push_back(g.marginal(r)[0].normalized());
    const double seconds = models::seconds_since(t0);
    std::printf("\nexact log-evidence (strict mode: nothing sampled): %.10f  (%.3f s)\n", log_evidence, seconds);
    std::printf("  carried truncation bound on the last likelihood's relative error: %.2e\n", bound);
    for (std::size_t k = 0; k < post.size(); ++k) {
      double mean = 0, c = 0, lo = NAN, hi = NAN, mode_p = 0;
      std::int64_t mode = 0;
      for (std::int64_t v = post[k].lo(); v <= post[k].hi(); ++v) {
        const double q = pdf(post[k], v);
        mean += q * double(v);
        c += q;
        if (std::isnan(lo) && c >= 0.05) lo = double(v);
        if (std::isnan(hi) && c >= 0.95) hi = double(v);
        if (q > mode_p) mode_p = q, mode = v;
      }
      std::printf("  R_%zu | y: mean %.4f, mode %lld (%.4f), 90%% interval [%g, %g]\n", k, mean,
                  static_cast<long long>(mode), mode_p, lo, hi);
      if (results) std::printf("RESULT model=rate_hmm rate=%zu mean=%.12g mode=%lld\n", k, mean, static_cast<long long>(mode));
    }
    if (results) std::printf("RESULT model=rate_hmm log_evidence=%.12g seconds=%.6g\n", log_evidence, seconds);
    if (!plot_path.empty()) {
      plot(post, state1, h.y, log_evidence, plot_path);
      std::printf("plot: %s\n", plot_path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
