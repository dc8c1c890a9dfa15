// Counts of Gamma, Beta and Dirichlet parameters whose laws differ between particles (a drawn count entered each
// particle's posterior, or the parameter was drawn): each particle's log-weight against its closed form, on the CPU
// graph and on the CUDA graph (whose laws come from gpu::count_laws and gpu::categorical_laws there), and the two
// graphs' laws against each other.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_conjugate_counts {

using namespace tally;
using namespace tally::runtime;

namespace {

/// log NegativeBinomial(k; r, p) (the test's own formula, lgamma in long double).
double log_negative_binomial(std::int64_t k, double r, double p) {
  const long double kd = static_cast<long double>(k), rd = r, pd = p;
  return static_cast<double>(std::lgamma(kd + rd) - std::lgamma(kd + 1.0L) - std::lgamma(rd) + rd * std::log(pd) +
                             kd * std::log1p(-pd));
}

struct Run {
  std::vector<std::int64_t> drawn;
  std::vector<double> log_weights, rate;
  std::vector<Pmf> laws;
};

/// lambda ~ Gamma(3, rate 0.5); x1 ~ Poisson(lambda) drawn in each particle; x2 ~ Poisson(2 lambda) with
/// Binomial(x2, 0.4) = 5 observed (x2's law per particle: NegativeBinomial(3 + x1, 1.5 / 3.5)); then x2 and lambda
/// drawn, and x3 ~ Poisson(1.5 lambda) with Binomial(x3, 0.3) = 2 observed (a Poisson law per particle). The
/// log-weights after each observation, x2's marginal after its own.
Run gamma_counts(Device device, std::size_t P) {
  Graph g(P, 5, device);
  g.strict(true);
  Run out;
  const Continuous lambda = g.assume(Gamma(3.0, 0.5));
  out.drawn = g.value(g.poisson(lambda, 1.0));
  const Variable x2 = g.poisson(lambda, 2.0);
  REQUIRE(g.observe(g.binomial(x2, 0.4), 5).exact());
  out.laws = g.marginal(x2);
  out.log_weights = g.log_weights();
  g.value(x2);  // (so that lambda's draw is from its conjugate posterior)
  out.rate = g.scalar_value(lambda);
  const Variable x3 = g.poisson(lambda, 1.5);
  REQUIRE(g.observe(g.binomial(x3, 0.3), 2).exact());
  const std::vector<double> after = g.log_weights();
  out.log_weights.insert(out.log_weights.end(), after.begin(), after.end());
  return out;
}

/// rho ~ Beta(5, 3); n1 ~ NegativeBinomial(4, rho) drawn in each particle (its law one for all, a tail of order k^-6:
/// about 10^5 entries at the default tolerance); n2 ~ NegativeBinomial(4, rho) with Binomial(n2, 0.5) = 3 observed
/// (n2's law per particle: a beta-negative-binomial of Beta(9, 3 + n1), a tail of order k^-10).
Run beta_counts(Device device, std::size_t P) {
  Graph g(P, 9, device);
  g.strict(true);
  Run out;
  const Continuous rho = g.assume(Beta(5.0, 3.0));
  out.drawn = g.value(g.negative_binomial(4.0, rho));
  const Variable n2 = g.negative_binomial(4.0, rho);
  REQUIRE(g.observe(g.binomial(n2, 0.5), 3).exact());
  out.laws = g.marginal(n2);
  out.log_weights = g.log_weights();
  return out;
}

}  // namespace

TEST_CASE("counts of Gamma parameters that differ between particles: closed forms on both devices",
          "[runtime][conjugate][device]") {
  std::vector<Device> devices{Device::cpu};
  if (gpu::cuda_available()) devices.push_back(Device::cuda);
  const std::size_t P = 3000;
  for (const Device device : devices) {
    INFO((device == Device::cpu ? "CPU graph" : "CUDA graph"));
    const Run r = gamma_counts(device, P);
    REQUIRE(r.log_weights.size() == 2 * P);
    std::int64_t distinct = 0;
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ": x1 = " << r.drawn[i] << ", lambda = " << r.rate[i]);
      distinct += i > 0 && r.drawn[i] != r.drawn[0];
      // Binomial(x2, 0.4) | lambda ~ Poisson(0.8 lambda), lambda | x1 ~ Gamma(3 + x1, rate 1.5)
      const double first = log_negative_binomial(5, 3.0 + static_cast<double>(r.drawn[i]), 1.5 / 2.3);
      REQUIRE(r.log_weights[i] == Approx(first).epsilon(1e-12));
      // Binomial(x3, 0.3) | lambda ~ Poisson(0.45 lambda), lambda drawn
      const double rate = 0.45 * r.rate[i];
      const double second = 2.0 * std::log(rate) - rate - std::log(2.0);
      REQUIRE(r.log_weights[P + i] - r.log_weights[i] == Approx(second).epsilon(1e-11).margin(1e-12));
    }
    CHECK(distinct > static_cast<std::int64_t>(P / 2));  // (the laws do differ between particles)
  }
  if (devices.size() < 2) return;
  const Run host = gamma_counts(Device::cpu, P), gpu_run = gamma_counts(Device::cuda, P);
  REQUIRE(host.drawn == gpu_run.drawn);  // the same draws on both
  for (std::size_t i = 0; i < P; i += 7) {
    INFO("particle " << i);
    for (std::int64_t k = host.laws[i].lo(); k <= host.laws[i].hi(); ++k)
      REQUIRE(std::abs(pdf(host.laws[i], k) - pdf(gpu_run.laws[i], k)) <= 1e-13);
  }
}

TEST_CASE("counts of Beta parameters that differ between particles: the CUDA graph's laws against the CPU graph's",
          "[runtime][conjugate][device]") {
  const std::size_t P = 2000;
  const Run host = beta_counts(Device::cpu, P);
  std::int64_t distinct = 0;
  for (std::size_t i = 1; i < P; ++i) distinct += host.drawn[i] != host.drawn[0];
  CHECK(distinct > static_cast<std::int64_t>(P / 2));
  // each log-weight against the sum over n2 of its law times Binomial(3; n2, 0.5), the terms by the closed form
  // (runtime::log_marginal_negative_binomial), far past where they matter (k^-10: below 1e-30 by k = 10^4)
  for (std::size_t i = 0; i < P; i += 37) {
    INFO("particle " << i << ": n1 = " << host.drawn[i]);
    const Beta posterior(9.0, 3.0 + static_cast<double>(host.drawn[i]));
    long double total = 0;
    for (std::int64_t k = 3; k < 20000; ++k)
      total += std::exp(static_cast<long double>(log_marginal_negative_binomial(posterior, 4.0, k)) +
                        static_cast<long double>(pdf(Binomial(k, 0.5), 3) > 0 ? std::log(pdf(Binomial(k, 0.5), 3)) : -1e300));
    REQUIRE(host.log_weights[i] == Approx(static_cast<double>(std::log(total))).epsilon(1e-9));
  }
  if (tally::test::skip_without_device()) return;
  const Run device = beta_counts(Device::cuda, P);
  REQUIRE(host.drawn == device.drawn);
  for (std::size_t i = 0; i < P; ++i) {
    INFO("particle " << i << ": n1 = " << host.drawn[i]);
    REQUIRE(device.log_weights[i] == Approx(host.log_weights[i]).epsilon(1e-12));
    if (i % 7 != 0) continue;
    for (std::int64_t k = host.laws[i].lo(); k <= host.laws[i].hi(); ++k)
      REQUIRE(std::abs(pdf(host.laws[i], k) - pdf(device.laws[i], k)) <= 1e-13);
  }
}

namespace {

/// log(alpha_c / sum alpha) (the test's own formula); -inf off 0 .. K - 1.
double log_categorical(const Eigen::VectorXd& alpha, std::int64_t c) {
  if (c < 0 || c >= alpha.size()) return -std::numeric_limits<double>::infinity();
  return std::log(alpha[c] / alpha.sum());
}

struct DirichletRun {
  std::vector<std::int64_t> drawn;
  std::vector<Dirichlet> after_draw, after_resampling;
  std::vector<double> log_weights;
  std::vector<Pmf> laws;
  std::vector<Eigen::VectorXd> pi;
};

/// pi ~ Dirichlet(1, 2, 3, 0.5); c1 ~ Categorical(pi) drawn in each particle (alpha then per particle); c2 observed
/// at particle i's own category i % 5 (4 is impossible: -inf); c3's marginal; a resampling by fixed ancestors (the
/// rows move with the particles); pi drawn; c4 observed at 2 under the drawn pi.
DirichletRun dirichlet_counts(Device device, std::size_t P) {
  Graph g(P, 13, device);
  g.strict(true);
  DirichletRun out;
  const Continuous pi = g.assume(Dirichlet(Eigen::Vector4d(1.0, 2.0, 3.0, 0.5)));
  out.drawn = g.value(g.categorical(pi));
  out.after_draw = g.dirichlet(pi);
  std::vector<std::int64_t> cats(P);
  for (std::size_t i = 0; i < P; ++i) cats[i] = static_cast<std::int64_t>(i % 5);
  REQUIRE(g.observe(g.categorical(pi), cats).exact());
  out.log_weights = g.log_weights();
  out.laws = g.marginal(g.categorical(pi));
  std::vector<std::size_t> ancestors(P);
  for (std::size_t i = 0; i < P; ++i) ancestors[i] = (3 * i + 1) % P;
  g.resample(ancestors);
  out.after_resampling = g.dirichlet(pi);
  out.pi = g.value(pi);
  REQUIRE(g.observe(g.categorical(pi), 2).exact());
  const std::vector<double> after = g.log_weights();
  out.log_weights.insert(out.log_weights.end(), after.begin(), after.end());
  return out;
}

}  // namespace

TEST_CASE("categorical counts of a Dirichlet that differ between particles: closed forms on both devices",
          "[runtime][conjugate][device]") {
  std::vector<Device> devices{Device::cpu};
  if (gpu::cuda_available()) devices.push_back(Device::cuda);
  const std::size_t P = 3000;
  const Eigen::Vector4d alpha(1.0, 2.0, 3.0, 0.5);
  std::vector<DirichletRun> runs;
  for (const Device device : devices) {
    INFO((device == Device::cpu ? "CPU graph" : "CUDA graph"));
    runs.push_back(dirichlet_counts(device, P));
    const DirichletRun& r = runs.back();
    REQUIRE(r.log_weights.size() == 2 * P);
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ": c1 = " << r.drawn[i]);
      Eigen::VectorXd a = alpha;
      a[r.drawn[i]] += 1.0;
      REQUIRE(r.after_draw[i].alpha == a);
      const std::int64_t c = static_cast<std::int64_t>(i % 5);
      const double first = log_categorical(a, c);
      if (std::isinf(first)) REQUIRE(r.log_weights[i] == first);
      else REQUIRE(r.log_weights[i] == Approx(first).epsilon(1e-14));
      if (c < 4) a[c] += 1.0;
      for (std::int64_t k = 0; k < 4; ++k) REQUIRE(pdf(r.laws[i], k) == Approx(a[k] / a.sum()).epsilon(1e-14));
      // after the resampling particle i holds particle (3 i + 1) % P's parameters
      const std::size_t from = (3 * i + 1) % P;
      REQUIRE(r.after_resampling[i].alpha.size() == 4);
      Eigen::VectorXd b = alpha;
      b[r.drawn[from]] += 1.0;
      if (from % 5 < 4) b[static_cast<Eigen::Index>(from % 5)] += 1.0;
      REQUIRE(r.after_resampling[i].alpha == b);
      REQUIRE(r.pi[i].sum() == Approx(1.0).epsilon(1e-14));
      const double second = std::log(r.pi[i][2]);
      if (from % 5 == 4) REQUIRE(r.log_weights[P + i] == -std::numeric_limits<double>::infinity());
      else REQUIRE(r.log_weights[P + i] - r.log_weights[from] == Approx(second).epsilon(1e-12).margin(1e-12));
    }
  }
  if (runs.size() < 2) return;
  const DirichletRun &host = runs[0], &device = runs[1];
  REQUIRE(host.drawn == device.drawn);  // the same draws on both
  for (std::size_t i = 0; i < P; ++i) {
    INFO("particle " << i);
    for (Eigen::Index j = 0; j < 4; ++j) REQUIRE(device.pi[i][j] == Approx(host.pi[i][j]).epsilon(1e-12));
    if (std::isinf(host.log_weights[P + i])) REQUIRE(device.log_weights[P + i] == host.log_weights[P + i]);
    else REQUIRE(device.log_weights[P + i] == Approx(host.log_weights[P + i]).epsilon(1e-12));
  }
}

}  // namespace test_conjugate_counts
