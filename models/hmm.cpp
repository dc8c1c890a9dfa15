// Example: a 3-state hidden Markov model with Poisson emissions, filtered by tally against the forward algorithm.
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <numeric>
#include <vector>

#include "device_note.hpp"
#include "filter.hpp"
#include "gnuplot.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/runtime/graph.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using tally::runtime::Graph;
using tally::runtime::Variable;

namespace {

constexpr int K = 3;

/// x_0 ~ Categorical(init); x_t | x_{t-1} ~ Categorical(T_{x_{t-1}, .}); y_t | x_t ~ Poisson(rates_{x_t}).
struct Model {
  Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
  Eigen::MatrixXd T = (Eigen::MatrixXd(K, K) << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80).finished();
  Eigen::VectorXd rates = Eigen::Vector3d(2, 10, 25);
};

using Probs = std::vector<double>;  // P(x_t = k | y_0..y_t), k = 0 .. K-1

struct Run : models::FilterStats {
  double log_bound = 0;  // exact run: first-order truncation bound on |log-evidence error|, sum_t e_t / p_t
  std::vector<Probs> filtered;
};

/// Simulates the chain and its emissions from RandomStream(seed, 0); returns (y, x).
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> simulate(const Model& m, std::size_t steps,
                                                                         std::uint64_t seed) {
  RandomStream rng(seed, 0);
  std::vector<std::int64_t> y, x;
  std::int64_t s = sample(to_pmf(Categorical(m.init)), rng);
  for (std::size_t t = 0; t < steps; ++t) {
    if (t > 0) s = sample(to_pmf(Categorical(m.T.row(s).transpose())), rng);
    x.push_back(s);
    y.push_back(sample(to_pmf(Poisson(m.rates[s])), rng));
  }
  return {y, x};
}

long double log_sum_exp(const std::vector<long double>& v) {
  const long double m = *std::max_element(v.begin(), v.end());
  long double s = 0;
  for (long double a : v) s += std::exp(a - m);
  return m + std::log(s);
}

/// The forward algorithm in log space (long double):
/// \f$\alpha_0(k) = \log \pi_k + \log \mathrm{Pois}(y_0; r_k)\f$,
/// \f$\alpha_t(j) = \mathrm{lse}_k(\alpha_{t-1}(k) + \log T_{kj}) + \log \mathrm{Pois}(y_t; r_j)\f$,
/// \f$\log p(y) = \mathrm{lse}_k \alpha_{T-1}(k)\f$, filtered \f$P(x_t = k | y_{0..t}) = e^{\alpha_t(k) - \mathrm{lse}\,\alpha_t}\f$.
std::pair<long double, std::vector<Probs>> forward(const Model& m, const std::vector<std::int64_t>& y) {
  auto log_pois = [&](std::int64_t v, int k) {
    const long double r = m.rates[k];
    return static_cast<long double>(v) * std::log(r) - r - std::lgamma(static_cast<long double>(v) + 1);
  };
  std::vector<long double> a(K), next(K), terms(K);
  std::vector<Probs> filtered;
  for (std::size_t t = 0; t < y.size(); ++t) {
    for (int j = 0; j < K; ++j) {
      if (t == 0) {
        next[j] = std::log(static_cast<long double>(m.init[j])) + log_pois(y[t], j);
        continue;
      }
      for (int k = 0; k < K; ++k) terms[k] = a[k] + std::log(static_cast<long double>(m.T(k, j)));
      next[j] = log_sum_exp(terms) + log_pois(y[t], j);
    }
    a = next;
    const long double z = log_sum_exp(a);
    Probs f(K);
    for (int k = 0; k < K; ++k) f[k] = static_cast<double>(std::exp(a[k] - z));
    filtered.push_back(f);
  }
  return {log_sum_exp(a), filtered};
}

/// The normalized probabilities of a law on {0, .., K-1}.
Probs probs(const Pmf& law) {
  Probs f(K);
  for (int k = 0; k < K; ++k) f[k] = std::exp(log_pdf(law, k) - law.log_mass());
  return f;
}

/// One particle, nothing sampled: x_t = MarkovStep(T) of the marginalized x_{t-1} has the law mu^T T, and observing
/// y_t ~ IndexedPoisson(rates) of it returns log p(y_t | y_0..y_{t-1}) and conditions x_t: the forward algorithm,
/// run by delayed sampling. Old handles are dropped (the filtered law of x_t is all the next step needs).
Run exact_run(const Model& m, const std::vector<std::int64_t>& y) {
  const auto start = std::chrono::steady_clock::now();
  Graph g(1, 1);
  Run out;
  Variable x = g.assume(Categorical(m.init));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) x = g.assume(x, MarkovStep(m.T));
    const Variable obs = g.assume(x, IndexedPoisson(m.rates));
    const double e = g.marginal(obs)[0].error_bound();
    const double ll = g.observe(obs, y[t])[0];
    out.log_evidence += ll;
    out.log_bound += e / std::exp(ll);
    out.filtered.push_back(probs(g.marginal(x)[0]));
  }
  out.seconds = models::seconds_since(start);
  return out;
}

/// The weighted frequencies of the particles' states x_t under their current log-weights.
Probs weighted_states(const std::vector<std::int64_t>& state, const std::vector<double>& lw) {
  const double m = *std::max_element(lw.begin(), lw.end());
  Probs f(K, 0.0);
  if (m == -std::numeric_limits<double>::infinity()) return f;
  double total = 0;
  for (std::size_t i = 0; i < lw.size(); ++i) {
    const double w = std::exp(lw[i] - m);
    f[static_cast<std::size_t>(state[i])] += w;
    total += w;
  }
  for (double& v : f) v /= total;
  return f;
}

/// The two particle filters on a Graph of P particles (host or device), which differ only in when x_t is drawn:
/// - delayed sampling (`delayed`): x_t = MarkovStep(T) of the realized x_{t-1} stays marginalized, so observing
///   y_t weighs each particle by the exact p(y_t | x_{t-1}) = sum_j T_{x_{t-1} j} Pois(y_t; r_j) and conditions
///   x_t; then x_t is drawn from that posterior (the locally optimal proposal). Left undrawn, every particle would
///   be the exact run.
/// - bootstrap: x_t drawn forward first, so that observing y_t adds log Pois(y_t; r_{x_t}).
/// Resampling (systematic) when ESS < P/2; `summaries`: the weighted state frequencies per step (host copies).
Run particle_filter(const Model& m, const std::vector<std::int64_t>& y, const models::FilterOptions& o,
                    std::uint64_t seed, bool delayed, bool summaries) {
  const auto start = std::chrono::steady_clock::now();
  runtime::Graph pop(o.particles, seed, o.backend());
  Run out;
  runtime::Variable x = pop.assume(Categorical(m.init));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) x = pop.assume(x, MarkovStep(m.T));
    if (!delayed) pop.realize(x);
    pop.observe(pop.assume(x, IndexedPoisson(m.rates)), y[t]);
    out.note_bytes(pop);
    if (delayed) pop.realize(x);
    if (summaries) out.filtered.push_back(weighted_states(pop.value(x), pop.log_weights()));
    out.end_of_step(pop, t + 1 == y.size());
    models::progress(delayed ? "delayed sampling" : "bootstrap", "step", t, y.size(), start);
  }
  out.seconds = models::seconds_since(start);
  return out;
}

bool plot(const std::vector<std::int64_t>& y, const std::vector<std::int64_t>& x, const std::vector<Probs>& f,
          const std::string& path) {
  FILE* gp = models::open_gnuplot(path);
  std::fprintf(gp, "$d << EOD\n");
  for (std::size_t t = 0; t < y.size(); ++t)
    std::fprintf(gp, "%zu %lld %lld %g %g %g\n", t, static_cast<long long>(y[t]), static_cast<long long>(x[t]),
                 f[t][0], f[t][1], f[t][2]);
  std::fprintf(gp, "EOD\n");
  std::fprintf(gp,
               "set terminal pngcairo size 1000,700 font 'sans,11'\nset output %s\nset multiplot layout 2,1\n"
               "set title 'HMM: Poisson counts and the true state'\nset grid\nset ylabel 'count'\n"
               "plot $d using 1:2 with linespoints pt 7 title 'y', $d using 1:3 axes x1y2 with steps title 'x (true)'\n"
               "set title 'filtered P(x_t = k | y_{0..t}) (exact, by tally)'\nset ylabel 'probability'\n"
               "set yrange [0:1]\nset xlabel 'step'\n"
               "plot $d using 1:4 with lines lw 2 title 'k = 0', $d using 1:5 with lines lw 2 title 'k = 1', "
               "$d using 1:6 with lines lw 2 title 'k = 2'\nunset multiplot\n",
               models::gnuplot_quote(path).c_str());
  return models::close_gnuplot(gp, path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tally example: a 3-state HMM with Poisson emissions; the forward algorithm against "
               "delayed sampling and particle filters"};
  Model m;
  models::FilterOptions options;
  options.add_to(app);
  std::size_t steps = 50;
  std::uint64_t data_seed = 11;
  app.add_option("--steps", steps, "steps T of synthetic data")->check(CLI::Range(1, 1000000));
  app.add_option("--data-seed", data_seed, "seed of the synthetic data");
  CLI11_PARSE(app, argc, argv);
  tally::models::note_device_fallback();
  try {
    if (!options.plot.empty()) models::check_plot(options.plot);  // before the run: a plot that cannot be drawn fails at once
    const auto [y, x] = simulate(m, steps, data_seed);
    std::printf("HMM: K = 3 states, rates (2, 10, 25), init (0.5, 0.3, 0.2), T = [.85 .10 .05; .10 .80 .10; "
                ".05 .15 .80];\n%zu steps simulated with data seed %llu\ny:", steps,
                static_cast<unsigned long long>(data_seed));
    for (auto v : y) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\nx:");
    for (auto v : x) std::printf(" %lld", static_cast<long long>(v));
    std::printf("\n\n");

    const auto t0 = std::chrono::steady_clock::now();
    const auto [fwd, fwd_filtered] = forward(m, y);
    const double fwd_seconds = models::seconds_since(t0);
    const Run exact = exact_run(m, y);
    const double diff = exact.log_evidence - static_cast<double>(fwd);
    double max_prob_diff = 0;
    for (std::size_t t = 0; t < y.size(); ++t)
      for (int k = 0; k < K; ++k) max_prob_diff = std::max(max_prob_diff, std::abs(exact.filtered[t][k] - fwd_filtered[t][k]));
    // "exact" only when it agrees with the forward algorithm (the runtime's propagated truncation bound is
    // worst-case and grows with every conditioning: it is printed, not relied on)
    const bool is_exact = std::abs(diff) <= 1e-10 * std::abs(static_cast<double>(fwd)) && max_prob_diff <= 1e-10;
    std::printf("forward algorithm (long double, log space):        log-evidence %.12Lf  (%.4f s)\n", fwd, fwd_seconds);
    std::printf("delayed sampling, 1 particle, nothing sampled:     log-evidence %.12f  (%.4f s)\n", exact.log_evidence,
                exact.seconds);
    std::printf("  difference %.3e; runtime's propagated truncation bound %.2e; filtered probabilities differ by <= %.2e: %s\n", diff,
                exact.log_bound, max_prob_diff,
                is_exact ? "exact (the chain stays marginalized: delayed sampling runs the forward algorithm)"
                         : "NOT exact");
    {  // the same on a population of one particle where the filters run (host or device): nothing drawn
      const auto start = std::chrono::steady_clock::now();
      runtime::Graph pop(1, options.seed, options.backend());
      runtime::Variable state = pop.assume(Categorical(m.init));
      for (std::size_t t = 0; t < y.size(); ++t) {
        if (t > 0) state = pop.assume(state, MarkovStep(m.T));
        pop.observe(pop.assume(state, IndexedPoisson(m.rates)), y[t]);
      }
      const double lw = pop.log_weights()[0];
      std::printf("delayed sampling, Graph on the %s, 1 particle: log-evidence %.12f  (%.4f s; difference %.3e)\n",
                  options.device.c_str(), lw, models::seconds_since(start), lw - static_cast<double>(fwd));
    }
    const Run delayed = particle_filter(m, y, options, options.seed, true, true);
    const Run boot = particle_filter(m, y, options, options.seed, false, true);
    std::printf("\nparticle filters on the %s:\n", options.device.c_str());
    models::print_estimates({{"delayed sampling", &delayed}, {"bootstrap", &boot}}, static_cast<double>(fwd),
                            options);
    {  // the estimates' spread (and, with --results, the RESULT lines): runs with seeds seed .. seed + runs - 1, with
       // nothing copied to the host but each step's weight summary
      std::vector<double> evidence[2];
      std::vector<double> seconds[2];
      std::size_t bytes[2] = {0, 0};
      for (int r = 0; r < options.runs; ++r)
        for (int f = 0; f < 2; ++f) {
          const Run run = particle_filter(m, y, options, options.seed + std::uint64_t(r), f == 0, false);
          evidence[f].push_back(run.log_evidence);
          seconds[f].push_back(run.seconds);
          bytes[f] = std::max(bytes[f], run.state_bytes);
        }
      std::printf("over %d runs (exact %.6f):\n", options.runs, static_cast<double>(fwd));
      for (int f = 0; f < 2; ++f) {
        const models::Spread s = models::spread(evidence[f]);
        std::printf("  %-16s mean %.6f  sd %.6f  (mean - exact %+.6f)  %.3f s per run\n",
                    f == 0 ? "delayed sampling" : "bootstrap", s.mean, s.sd, s.mean - static_cast<double>(fwd),
                    std::accumulate(seconds[f].begin(), seconds[f].end(), 0.0) / options.runs);
        models::print_result("hmm", f == 0 ? "delayed" : "bootstrap", options, y.size(), evidence[f], seconds[f],
                             bytes[f]);
      }
    }

    std::printf("\nfiltered P(x_t = k | y_0..y_t) at a few steps: forward algorithm vs tally (exact run)\n");
    for (std::size_t t : {std::size_t{0}, y.size() / 4, y.size() / 2, y.size() - 1}) {
      std::printf("  t = %3zu:", t);
      for (int k = 0; k < K; ++k) std::printf("  k=%d %.12f / %.12f", k, fwd_filtered[t][k], exact.filtered[t][k]);
      std::printf("\n");
    }
    std::printf("\nfiltered probabilities per step: exact | delayed-sampling filter | bootstrap (k = 0, 1, 2)\n");
    for (std::size_t t = 0; t < y.size(); ++t) {
      std::printf("  %3zu y=%3lld x=%lld ", t, static_cast<long long>(y[t]), static_cast<long long>(x[t]));
      for (const Run* r : {&exact, &delayed, &boot})
        std::printf(" | %.3f %.3f %.3f", r->filtered[t][0], r->filtered[t][1], r->filtered[t][2]);
      std::printf("\n");
    }
    if (!options.plot.empty() && plot(y, x, exact.filtered, options.plot)) std::printf("plot: %s\n", options.plot.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
