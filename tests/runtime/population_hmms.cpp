// A hidden Markov model in a Graph (Markov steps, Poisson emissions): the forward algorithm's evidence in
// every particle, filters, errors, bounded live nodes on long chains, and the device against the host.
#include <algorithm>
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"

namespace test_population_hmms {

using namespace tally;
using namespace tally::runtime;

namespace {
Device on(gpu::Backend b) { return b == gpu::Backend::cuda ? Device::cuda : Device::cpu; }
}  // namespace

namespace {

constexpr int K = 3;
const Eigen::Vector3d init(0.5, 0.3, 0.2);
const Eigen::MatrixXd T = (Eigen::MatrixXd(K, K) << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80).finished();
const Eigen::Vector3d rates(2, 10, 25);
const std::vector<std::int64_t> ys{3, 1, 9, 12, 30, 22, 27, 8, 11, 2, 0, 4, 19, 26, 60};  // 60: far in the tail

/// The forward algorithm in long double: log p(y_0..y_t) for each t and the filtered P(x_t = k | y_0..y_t).
struct Forward {
  std::vector<long double> log_evidence;
  std::vector<std::vector<long double>> filtered;
};
Forward forward(const std::vector<std::int64_t>& y) {
  Forward f;
  std::vector<long double> alpha(K), next(K);
  long double log_z = 0;
  for (std::size_t t = 0; t < y.size(); ++t) {
    for (int j = 0; j < K; ++j) {
      long double prior = 0;
      if (t == 0) prior = init[j];
      else for (int k = 0; k < K; ++k) prior += alpha[std::size_t(k)] * static_cast<long double>(T(k, j));
      const long double r = rates[j], v = static_cast<long double>(y[t]);
      next[std::size_t(j)] = prior * std::exp(v * std::log(r) - r - std::lgamma(v + 1));
    }
    long double total = 0;
    for (long double a : next) total += a;
    for (int k = 0; k < K; ++k) alpha[std::size_t(k)] = next[std::size_t(k)] / total;
    log_z += std::log(total);
    f.log_evidence.push_back(log_z);
    f.filtered.push_back(alpha);
  }
  return f;
}

/// What one population run records: the log-weights after every step, and the filtered laws (host copies).
struct Trace {
  std::vector<std::vector<double>> log_w;
  std::vector<std::vector<Pmf>> laws;
  std::vector<std::vector<std::int64_t>> states;  // the drawn x_t (sampled runs only)
};

/// The HMM in a population: x_0 ~ init; x_t = MarkovStep(T) of x_{t-1}; y_t ~ IndexedPoisson(rates) observed.
/// `sampled`: x_t drawn from its posterior after each observation (the locally optimal filter); else nothing is
/// drawn and every particle runs the forward algorithm.
Trace run_hmm(gpu::Backend where, std::size_t P, std::uint64_t seed, bool sampled) {
  Graph pop(P, seed, on(where));
  Trace out;
  Variable x = pop.assume(Categorical(init));
  for (std::size_t t = 0; t < ys.size(); ++t) {
    if (t > 0) x = pop.assume(x, MarkovStep(T));
    pop.observe(pop.assume(x, IndexedPoisson(rates)), ys[t]);
    out.log_w.push_back(pop.log_weights());
    out.laws.push_back(pop.marginal(x));
    if (sampled) {
      out.states.push_back(pop.value(x));
      pop.resample_by_weight(0.5);
    }
  }
  return out;
}

double log_prob(const std::vector<Pmf>& b, std::size_t i, std::int64_t k) { return log_pdf(b[i], k); }

}  // namespace

TEST_CASE("an HMM population with nothing drawn carries the forward algorithm in every particle", "[population]") {
  const auto live = Graph::live_nodes();
  {
    const Forward f = forward(ys);
    const Trace tr = run_hmm(gpu::Backend::cpu, 64, 7, false);
    for (std::size_t t = 0; t < ys.size(); ++t)
      for (std::size_t i = 0; i < 64; ++i) {
        INFO("step " << t << ", particle " << i);
        REQUIRE(std::abs(tr.log_w[t][i] - double(f.log_evidence[t])) <= 1e-12 * std::abs(double(f.log_evidence[t])));
        for (int k = 0; k < K; ++k)
          REQUIRE(std::abs(std::exp(log_prob(tr.laws[t], i, k)) - double(f.filtered[t][std::size_t(k)])) <= 1e-13);
      }
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("an HMM filter drawing each state from its posterior estimates the evidence", "[population]") {
  const Forward f = forward(ys);
  const std::size_t P = 4000;
  Graph pop(P, 3);
  Variable x = pop.assume(Categorical(init));
  double log_evidence = 0;
  const auto live = Graph::live_nodes();
  for (std::size_t t = 0; t < ys.size(); ++t) {
    if (t > 0) x = pop.assume(x, MarkovStep(T));
    pop.observe(pop.assume(x, IndexedPoisson(rates)), ys[t]);
    pop.realize(x);  // x_t | y_t, x_{t-1}: the locally optimal proposal; the weight was p(y_t | x_{t-1})
    const Graph::Resampling s = pop.resample_by_weight(t + 1 == ys.size() ? 0.0 : 0.5);
    if (s.resampled || t + 1 == ys.size()) log_evidence += s.log_mean_weight;
    CHECK(Graph::live_nodes() - live <= 3);  // the chain is not kept: x_t, its emission, at most one more
  }
  // the estimate's sd is about 0.02 at this P (measured over seeds); 0.15 is 7 sd
  CHECK(std::abs(log_evidence - double(f.log_evidence.back())) < 0.15);
}

TEST_CASE("HMM graph errors: states must be in the table; the graph stays usable", "[population]") {
  for (const gpu::Backend where : {gpu::Backend::cpu, gpu::Backend::cuda}) {
    if (where == gpu::Backend::cuda && tally::test::skip_without_device()) continue;
    INFO((where == gpu::Backend::cuda ? "CUDA graph" : "CPU graph"));
    Graph pop(8, 1, on(where));
    Variable x = pop.assume(Categorical(init));
    Variable y = pop.assume(x, IndexedPoisson(rates));
    Variable big = pop.add(x, pop.constant(2));  // on 2 .. 4: leaves the 3 states
    CHECK_THROWS_WITH(pop.value(pop.assume(big, MarkovStep(T))), Catch::Contains("3 states"));
    Variable z = pop.constant(5);
    CHECK_THROWS_WITH(pop.value(pop.assume(z, MarkovStep(T))), Catch::Contains("3 states"));
    pop.observe(y, 4);  // still works after the errors
    CHECK(std::isfinite(pop.log_weights()[0]));
    CHECK(pop.value(x).size() == 8);
  }
}

TEST_CASE("HMM graph errors: a realized state outside the matrix, on either device", "[population]") {
  for (const gpu::Backend where : {gpu::Backend::cpu, gpu::Backend::cuda}) {
    if (where == gpu::Backend::cuda && tally::test::skip_without_device()) continue;
    INFO((where == gpu::Backend::cuda ? "CUDA graph" : "CPU graph"));
    Graph pop(8, 1, on(where));
    Variable z = pop.constant(5);
    CHECK_THROWS_WITH(pop.value(pop.assume(z, MarkovStep(T))), Catch::Contains("3 states"));
    Variable s = pop.assume(Categorical(init));
    pop.realize(s);  // drawn states, each particle's step a row of the matrix
    Variable next = pop.assume(s, MarkovStep(T));
    pop.observe(pop.assume(next, IndexedPoisson(rates)), 7);
    const std::vector<std::int64_t> v = pop.value(next);
    CHECK(v.size() == 8);
    CHECK(std::all_of(v.begin(), v.end(), [](std::int64_t k) { return k >= 0 && k < K; }));
    CHECK(std::isfinite(pop.log_weights()[0]));
  }
}

TEST_CASE("an HMM population on the device agrees with the host", "[population][device]") {
  if (tally::test::skip_without_device()) return;
  for (const bool sampled : {false, true}) {
    INFO((sampled ? "states drawn" : "nothing drawn"));
    const Trace host = run_hmm(gpu::Backend::cpu, 3000, 11, sampled), device = run_hmm(gpu::Backend::cuda, 3000, 11, sampled);
    REQUIRE(host.states == device.states);  // identical draws
    for (std::size_t t = 0; t < ys.size(); ++t) {
      INFO("step " << t);
      for (std::size_t i = 0; i < 3000; ++i)
        REQUIRE(std::abs(host.log_w[t][i] - device.log_w[t][i]) <= 1e-12 * std::max(1.0, std::abs(host.log_w[t][i])));
      for (std::size_t i = 0; i < 3000; ++i)
        for (int k = 0; k < K; ++k)
          REQUIRE(std::abs(pdf(host.laws[t][i], k) - pdf(device.laws[t][i], k)) <= 1e-13);
    }
  }
}

}  // namespace test_population_hmms
