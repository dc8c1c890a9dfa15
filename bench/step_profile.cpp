// Where a filter step spends its time on the device: one of the examples' steps (models/sir.cpp, population.cpp,
// hmm.cpp, as they write them) with the wall time of each engine call, the device synchronized after each, against
// the same steps unsynchronized (at small P the unsynchronized column is the host's time in each call: launches, and
// waits for the device where a call reads something back). Usage:
//   bench_step_profile [P] [runs] [program] [free]   program: sir (the delayed filter, default), sir-bootstrap,
//                      population, population-bootstrap, hmm, hmm-bootstrap, groups, groups-bootstrap (one
//                      iteration of models/population_pmmh: P / 1024 groups of 1024 particles, a (phi, p) per
//                      group), groups-hmm (hmm with a transition matrix and rates per group), gamma-counts (counts
//                      of an unknown Gamma rate, each drawn: a negative binomial law per particle), wide-drawn (the
//                      wide-law population model with its count drawn every season: each particle's survivors' law
//                      its own, plus immigrants' law shared by all), dirichlet (categorical counts of a Dirichlet
//                      over 6 categories, one drawn and one observed each step: the parameters per particle),
//                      beta-thinning (Poisson counts observed through Binomial(X, rho) with rho ~ Beta, each then
//                      drawn: the beta-binomial conditioning with rho's parameters per particle); free: the
//                      free-running runs only (for bench/host_sampler.cpp's profile of the host)   (a developer's
//                      tool)
// The free-running runs sit between cudaProfilerStart and cudaProfilerStop: traced with bench/cupti_trace.cpp, they
// give scripts/trace-summary its window (it divides by runs x steps, the number printed as "steps traced").
// TALLY_BENCH_THINNING_LAWS=8|16|32 forces the laws a warp of the thinning observation's kernel (to compare them
// in one binary).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "tally/distributions/categorical.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/conjugate.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using runtime::Graph;
using runtime::Variable;

namespace {

struct Clock {
  bool sync;
  std::map<std::string, double> seconds;
  std::vector<std::string> order;
  template <class F>
  auto operator()(const std::string& what, F f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto stop = [&] {
      if (sync) cudaDeviceSynchronize();
      if (!seconds.count(what)) order.push_back(what);
      seconds[what] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      stop();
    } else {
      auto r = f();
      stop();
      return r;
    }
  }
};

constexpr double band[] = {0.05, 0.95};

/// The sir model's 14 days (delayed or bootstrap filter).
std::size_t sir(Graph& pop, Clock& clock, bool delayed) {
  const std::vector<std::int64_t> in_bed{3, 8, 26, 76, 225, 298, 258, 233, 189, 128, 68, 29, 14, 4};
  const std::int64_t N = 763, I0 = 3;
  const double c = 10.0 / double(N);
  const auto delta = pop.assume(runtime::Beta(2, 2)), gamma = pop.assume(runtime::Beta(2, 2));
  if (!delayed) {
    pop.realize(delta);
    pop.realize(gamma);
  }
  Variable S = pop.constant(N - I0), I = pop.constant(I0), R = pop.constant(0);
  for (std::size_t t = 1; t <= in_bed.size(); ++t) {
    auto q = clock("hazard", [&] { return gpu::hazard_probabilities(pop.values(I), c); });
    const Variable tau = clock("binomial(S, q)", [&] { return pop.binomial(S, std::move(q)); });
    clock("realize tau", [&] { pop.realize(tau); });
    const Variable n = clock("binomial(tau, delta)", [&] { return pop.binomial(tau, delta); });
    const Variable r = clock("binomial(I, gamma)", [&] { return pop.binomial(I, gamma); });
    if (delayed) {
      const Variable d = clock("subtract(n, r)", [&] { return pop.subtract(n, r); });
      const Variable change = clock("change", [&] { return pop.subtract(pop.constant(in_bed[t - 1]), I); });
      clock("observe d", [&] { pop.observe(d, change); });
      clock("bytes", [&] { return pop.bytes(); });
      S = clock("S - n", [&] { return pop.subtract(S, n); });
      I = clock("I + d", [&] { return pop.add(I, d); });
    } else {
      clock("realize n", [&] { pop.realize(n); });
      clock("realize r", [&] { pop.realize(r); });
      S = clock("S - n", [&] { return pop.subtract(S, n); });
      I = clock("I + n - r", [&] { return pop.add(I, pop.subtract(n, r)); });
      clock("observe I", [&] { pop.observe(I, in_bed[t - 1]); });
      clock("bytes", [&] { return pop.bytes(); });
    }
    R = clock("R + r", [&] { return pop.add(R, r); });
    const Variable both[] = {S, R};
    clock("summarize S, R", [&] { return pop.summarize(both, band); });
    clock("resample", [&] { return pop.resample_by_weight(1.0); });
  }
  return in_bed.size();
}

/// The population model's 20 seasons (models/population.cpp, its default parameters and data seed 7's counts).
std::size_t population(Graph& pop, Clock& clock, bool delayed) {
  const std::vector<std::int64_t> y{30, 25, 28, 31, 27, 33, 29, 26, 30, 32, 28, 27, 31, 29, 30, 28, 26, 29, 31, 30};
  const double phi = 0.8, iota = 10, p = 0.6;
  Variable N = clock("assume N0", [&] { return pop.assume(Poisson(50.0)); });
  if (!delayed) clock("realize N", [&] { pop.realize(N); });
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) {
      const Variable S = clock("binomial(N, phi)", [&] { return pop.binomial(N, phi); });
      const Variable I = clock("assume I", [&] { return pop.assume(Poisson(iota)); });
      if (!delayed) {
        clock("realize S", [&] { pop.realize(S); });
        clock("realize I", [&] { pop.realize(I); });
      }
      N = clock("add(S, I)", [&] { return pop.add(S, I); });
    }
    const Variable obs = clock("binomial(N, p)", [&] { return pop.binomial(N, p); });
    clock("observe y", [&] { pop.observe(obs, y[t]); });
    clock("bytes", [&] { return pop.bytes(); });
    if (delayed) clock("realize N", [&] { pop.realize(N); });
    clock("summarize N", [&] { return pop.summarize(N, band); });
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == y.size() ? 0.0 : 0.5); });
  }
  return y.size();
}

/// One iteration of models/population_pmmh's chains (models/population_groups.hpp): P / 1024 groups of 1024
/// particles, the population model with a survival and a detection probability per group, 20 seasons.
std::size_t groups(Graph& pop, Clock& clock, bool delayed) {
  const std::vector<std::int64_t> y{30, 25, 28, 31, 27, 33, 29, 26, 30, 32, 28, 27, 31, 29, 30, 28, 26, 29, 31, 30};
  std::vector<Thinning> survive, detect;
  for (std::size_t g = 0; g < pop.groups(); ++g) {
    survive.emplace_back(0.7 + 0.2 * double(g) / double(pop.groups()));
    detect.emplace_back(0.5 + 0.2 * double(g) / double(pop.groups()));
  }
  Variable N = clock("assume N0", [&] { return pop.assume(Poisson(50.0)); });
  if (!delayed) clock("realize N", [&] { pop.realize(N); });
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) {
      const Variable S = clock("assume(N, phi_g)", [&] { return pop.assume(N, survive); });
      const Variable I = clock("assume I", [&] { return pop.assume(Poisson(10.0)); });
      if (!delayed) {
        clock("realize S", [&] { pop.realize(S); });
        clock("realize I", [&] { pop.realize(I); });
      }
      N = clock("add(S, I)", [&] { return pop.add(S, I); });
    }
    const Variable obs = clock("assume(N, p_g)", [&] { return pop.assume(N, detect); });
    clock("observe y", [&] { pop.observe(obs, y[t]); });
    if (!delayed) clock("resample_groups", [&] { return pop.resample_groups(1.0).log_mean_weight.to_host(); });
  }
  if (delayed) clock("resample_groups(0)", [&] { return pop.resample_groups(0.0).log_mean_weight.to_host(); });
  return y.size();
}

/// The hmm model's 50 steps (3 states, Poisson emissions; counts cycling through typical values).
std::size_t hmm(Graph& pop, Clock& clock, bool delayed) {
  Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
  Eigen::MatrixXd T(3, 3);
  T << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80;
  const Eigen::VectorXd rates = Eigen::Vector3d(2, 10, 25);
  const std::size_t steps = 50;
  Variable x = clock("assume x0", [&] { return pop.assume(Categorical(init)); });
  for (std::size_t t = 0; t < steps; ++t) {
    const std::int64_t y = (t % 7) * 4;
    if (t > 0) x = clock("markov step", [&] { return pop.assume(x, MarkovStep(T)); });
    if (!delayed) clock("realize x", [&] { pop.realize(x); });
    const Variable e = clock("emission", [&] { return pop.assume(x, IndexedPoisson(rates)); });
    clock("observe y", [&] { pop.observe(e, y); });
    clock("bytes", [&] { return pop.bytes(); });
    if (delayed) clock("realize x", [&] { pop.realize(x); });
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == steps ? 0.0 : 0.5); });
  }
  return steps;
}

/// hmm()'s program with a transition matrix and emission rates per group (P / 1024 groups of 1024 particles): each
/// group's chain a little more or less sticky, its rates scaled.
std::size_t groups_hmm(Graph& pop, Clock& clock) {
  Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
  std::vector<MarkovStep> steps_of;
  std::vector<IndexedPoisson> emissions;
  for (std::size_t g = 0; g < pop.groups(); ++g) {
    const double stay = 0.75 + 0.15 * double(g) / double(pop.groups()), move = (1.0 - stay) / 2;
    Eigen::MatrixXd T(3, 3);
    T << stay, move, move, move, stay, move, move, move, stay;
    steps_of.emplace_back(T);
    emissions.emplace_back(Eigen::Vector3d(2, 10, 25) * (0.8 + 0.4 * double(g) / double(pop.groups())));
  }
  const std::size_t steps = 50;
  Variable x = clock("assume x0", [&] { return pop.assume(Categorical(init)); });
  for (std::size_t t = 0; t < steps; ++t) {
    const std::int64_t y = (t % 7) * 4;
    if (t > 0) x = clock("markov step", [&] { return pop.assume(x, steps_of); });
    const Variable e = clock("emission", [&] { return pop.assume(x, emissions); });
    clock("observe y", [&] { pop.observe(e, y); });
    clock("realize x", [&] { pop.realize(x); });
    clock("resample_groups", [&] { return pop.resample_groups(t + 1 == steps ? 0.0 : 0.5); });
  }
  return steps;
}

/// An unknown Poisson rate with Gamma prior: each step a count x_t ~ Poisson(lambda), Binomial(x_t, 0.6) observed,
/// x_t drawn from its posterior (so that lambda's posterior is each particle's own from the second step on: the
/// count's law is then a negative binomial per particle), resampling by ESS.
std::size_t gamma_counts(Graph& pop, Clock& clock) {
  const std::size_t steps = 10;
  const runtime::Continuous lambda = clock("assume lambda", [&] { return pop.assume(runtime::Gamma(2.0, 0.1)); });
  for (std::size_t t = 0; t < steps; ++t) {
    const std::int64_t y = 8 + static_cast<std::int64_t>(t % 4) * 3;
    const Variable x = clock("count", [&] { return pop.poisson(lambda, 1.0); });
    const Variable seen = clock("detected", [&] { return pop.binomial(x, 0.6); });
    clock("observe y", [&] { pop.observe(seen, y); });
    clock("realize x", [&] { pop.realize(x); });
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == steps ? 0.0 : 0.5); });
  }
  return steps;
}

/// The wide-law population model (bench/equal_laws.cpp) with X drawn every season, 8 seasons: X_0 ~ Poisson(230),
/// X_t = Binomial(x_{t-1}, 0.6) + Poisson(lam_t) with lam_t from 300 to 420, Binomial(X_t, 0.5) observed, X_t drawn
/// from its posterior; resampling by ESS. Each season's sum convolves every particle's own binomial law (about 470
/// to 920 entries) with the immigrants' law (about 330 entries), shared by all. In the synchronized runs the drawn
/// values are read back to count the convolution's terms (printed at the end), outside the calls timed.
double wide_terms = 0.0;
std::size_t wide_drawn(Graph& pop, Clock& clock) {
  const double lam[] = {300.0, 330.0, 360.0, 390.0, 420.0, 390.0, 360.0, 330.0};
  const std::int64_t y[] = {115, 234, 320, 387, 442, 460, 456, 439};
  Variable x = clock("assume X0", [&] { return pop.assume(Poisson(230.0)); });
  for (std::size_t t = 0; t < 8; ++t) {
    if (t > 0) {
      const Variable s = clock("binomial(x, 0.6)", [&] { return pop.binomial(x, 0.6); });
      const Variable i = clock("assume I", [&] { return pop.assume(Poisson(lam[t])); });
      x = clock("add(S, I)", [&] { return pop.add(s, i); });
    }
    const Variable obs = clock("binomial(X, 0.5)", [&] { return pop.binomial(x, 0.5); });
    clock("observe y", [&] { pop.observe(obs, y[t]); });
    clock("realize X", [&] { pop.realize(x); });
    if (clock.sync && t + 1 < 8) {  // the next season's terms: (x_i + 1) survivors' entries by the immigrants' law
      const std::size_t immigrants = tally::to_pmf(Poisson(lam[t + 1])).size();
      for (const std::int64_t v : pop.values(x).to_host()) wide_terms += double(v + 1) * double(immigrants);
    }
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == 8 ? 0.0 : 0.5); });
  }
  return 8;
}

/// pi ~ Dirichlet(1, 2, 3, 1, 0.5, 2); each of 10 steps draws one Categorical(pi) count in each particle (so that the
/// parameters differ between particles), observes another at y_t, and resamples by ESS.
std::size_t dirichlet(Graph& pop, Clock& clock) {
  const std::size_t steps = 10;
  Eigen::VectorXd alpha(6);
  alpha << 1.0, 2.0, 3.0, 1.0, 0.5, 2.0;
  const runtime::Continuous pi = clock("assume pi", [&] { return pop.assume(runtime::Dirichlet(alpha)); });
  for (std::size_t t = 0; t < steps; ++t) {
    clock("draw a category", [&] { pop.realize(pop.categorical(pi)); });
    const Variable c = clock("categorical(pi)", [&] { return pop.categorical(pi); });
    clock("observe y", [&] { pop.observe(c, static_cast<std::int64_t>((3 * t + 1) % 6)); });
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == steps ? 0.0 : 0.5); });
  }
  return steps;
}

/// rho ~ Beta(2, 3); each of 10 steps: X_t ~ Poisson(40 + 5 t) observed through Binomial(X_t, rho) at y_t (the
/// beta-binomial conditioning of each particle's X with rho's parameters), X_t drawn (rho's posterior per particle
/// then), a resampling by ESS.
std::size_t beta_thinning(Graph& pop, Clock& clock) {
  const std::size_t steps = 10;
  const runtime::Continuous rho = clock("assume rho", [&] { return pop.assume(runtime::Beta(2.0, 3.0)); });
  for (std::size_t t = 0; t < steps; ++t) {
    const Variable x = clock("assume X", [&] { return pop.assume(Poisson(40.0 + 5.0 * double(t))); });
    const Variable seen = clock("binomial(X, rho)", [&] { return pop.binomial(x, rho); });
    clock("observe y", [&] { pop.observe(seen, static_cast<std::int64_t>(16 + 2 * t)); });
    clock("realize X", [&] { pop.realize(x); });
    clock("resample", [&] { return pop.resample_by_weight(t + 1 == steps ? 0.0 : 0.5); });
  }
  return steps;
}

double run(const std::string& program, std::size_t P, std::uint64_t seed, Clock& clock, std::size_t& steps) {
  cudaDeviceSynchronize();
  const auto t0 = std::chrono::steady_clock::now();
  {
    const bool grouped = program == "groups" || program == "groups-bootstrap" || program == "groups-hmm";
    Graph pop = grouped ? Graph(runtime::Groups{std::max<std::size_t>(P / 1024, 1), std::min<std::size_t>(P, 1024)},
                                seed, runtime::Device::cuda)
                        : Graph(P, seed, runtime::Device::cuda);
    if (program == "groups-hmm") steps = groups_hmm(pop, clock);
    else if (grouped) steps = groups(pop, clock, program == "groups");
    else if (program == "sir" || program == "sir-bootstrap") steps = sir(pop, clock, program == "sir");
    else if (program == "population" || program == "population-bootstrap")
      steps = population(pop, clock, program == "population");
    else if (program == "hmm" || program == "hmm-bootstrap") steps = hmm(pop, clock, program == "hmm");
    else if (program == "gamma-counts") steps = gamma_counts(pop, clock);
    else if (program == "wide-drawn") steps = wide_drawn(pop, clock);
    else if (program == "dirichlet") steps = dirichlet(pop, clock);
    else if (program == "beta-thinning") steps = beta_thinning(pop, clock);
    else {
      std::fprintf(stderr, "unknown program %s\n", program.c_str());
      std::exit(2);
    }
  }
  cudaDeviceSynchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t P = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1u << 20);
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string program = argc > 3 ? argv[3] : "sir";
  const bool free_only = argc > 4 && std::string(argv[4]) == "free";
  if (const char* laws = std::getenv("TALLY_BENCH_THINNING_LAWS")) {
    try {
      gpu::detail::set_thinning_laws_per_warp(std::atoi(laws));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "TALLY_BENCH_THINNING_LAWS: %s\n", e.what());
      return 2;
    }
  }
  std::size_t steps = 0;
  Clock warm{false, {}, {}};
  run(program, P, 99, warm, steps);  // the device's start, the memory pool's growth
  Clock free_running{false, {}, {}}, synced{true, {}, {}};
  double total = 0, total_synced = 0;
  cudaProfilerStart();  // the marks of a bench/cupti_trace.cpp trace: the free-running runs only
  for (int k = 0; k < runs; ++k) total += run(program, P, 1 + k, free_running, steps);
  cudaProfilerStop();
  for (int k = 0; k < runs && !free_only; ++k) total_synced += run(program, P, 1 + k, synced, steps);
  const double all = double(steps) * runs;
  std::printf("steps traced: %.0f\n", all);
  std::printf("%s, P = %zu, %d runs of %zu steps: %.3f ms per step unsynchronized, %.3f ms synchronized after each "
              "call\n",
              program.c_str(), P, runs, steps, 1e3 * total / all, 1e3 * total_synced / all);
  std::printf("%-22s %12s %12s\n", "call", "ms/step", "(no sync)");
  for (const auto& what : synced.order)
    std::printf("%-22s %12.3f %12.3f\n", what.c_str(), 1e3 * synced.seconds[what] / all,
                1e3 * free_running.seconds[what] / all);
  if (wide_terms > 0.0)
    std::printf("convolution terms (multiply-adds) per step, from the synchronized runs' draws: %.4g\n",
                wide_terms / all);
  return 0;
}
