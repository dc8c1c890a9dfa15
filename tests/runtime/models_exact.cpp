// The population and HMM examples rebuilt small: delayed sampling's evidence against independent exact recursions.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_models_exact {

using namespace tally;
using namespace tally::runtime;

namespace {

long double log_poisson(std::int64_t k, long double rate) {
  return static_cast<long double>(k) * std::log(rate) - rate - std::lgamma(static_cast<long double>(k) + 1);
}
long double log_binomial(std::int64_t n, std::int64_t k, long double q) {
  if (k < 0 || k > n) return -INFINITY;
  long double r = std::lgamma(static_cast<long double>(n) + 1) - std::lgamma(static_cast<long double>(k) + 1) -
                  std::lgamma(static_cast<long double>(n - k) + 1);
  if (k > 0) r += static_cast<long double>(k) * std::log(q);
  if (n - k > 0) r += static_cast<long double>(n - k) * std::log1p(-q);
  return r;
}

/// log p(y_0..y_{T-1}) of the population model by the forward recursion over N in [0, n_max] (long double):
/// a_0(n) = Pois(n; lambda0) Bin(y_0; n, p); a_t(m) = sum_n a_{t-1}(n) K(n, m) Bin(y_t; m, p) with the season's
/// kernel K(n, m) = sum_s Bin(s; n, phi) Pois(m - s; iota); log p(y) = log sum_n a_{T-1}(n). Each step is
/// rescaled by its sum (whose log is accumulated). Mass above n_max is dropped (below 1e-40 here).
long double population_forward(const std::vector<std::int64_t>& y, double lambda0, double phi, double iota, double p,
                               std::int64_t n_max) {
  const auto n = static_cast<std::size_t>(n_max + 1);
  std::vector<long double> pois(n);
  for (std::size_t k = 0; k < n; ++k) pois[k] = std::exp(log_poisson(std::int64_t(k), iota));
  std::vector<long double> kernel(n * n, 0.0L);  // kernel[a * n + b] = K(a, b)
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t s = 0; s <= a; ++s) {
      const long double b = std::exp(log_binomial(std::int64_t(a), std::int64_t(s), phi));
      for (std::size_t m = s; m < n; ++m) kernel[a * n + m] += b * pois[m - s];
    }
  std::vector<long double> alpha(n), next(n);
  long double log_z = 0;
  for (std::size_t t = 0; t < y.size(); ++t) {
    for (std::size_t m = 0; m < n; ++m) {
      long double prior = 0;
      if (t == 0) {
        prior = std::exp(log_poisson(std::int64_t(m), lambda0));
      } else {
        for (std::size_t a = 0; a < n; ++a) prior += alpha[a] * kernel[a * n + m];
      }
      next[m] = prior * std::exp(log_binomial(std::int64_t(m), y[t], p));
    }
    long double total = 0;
    for (long double v : next) total += v;
    for (std::size_t m = 0; m < n; ++m) alpha[m] = next[m] / total;
    log_z += std::log(total);
  }
  return log_z;
}

/// The forward algorithm of a K-state HMM with Poisson emissions, in log space with log-sum-exp (long double).
long double hmm_forward(const std::vector<std::int64_t>& y, const Eigen::VectorXd& init, const Eigen::MatrixXd& T,
                        const Eigen::VectorXd& rates, std::vector<std::vector<double>>* filtered) {
  const auto K = static_cast<std::size_t>(init.size());
  auto lse = [](const std::vector<long double>& v) {
    const long double m = *std::max_element(v.begin(), v.end());
    long double s = 0;
    for (long double a : v) s += std::exp(a - m);
    return m + std::log(s);
  };
  std::vector<long double> a(K), next(K), terms(K);
  for (std::size_t t = 0; t < y.size(); ++t) {
    for (std::size_t j = 0; j < K; ++j) {
      const long double e = log_poisson(y[t], rates[Eigen::Index(j)]);
      if (t == 0) {
        next[j] = std::log(static_cast<long double>(init[Eigen::Index(j)])) + e;
        continue;
      }
      for (std::size_t k = 0; k < K; ++k) terms[k] = a[k] + std::log(static_cast<long double>(T(Eigen::Index(k), Eigen::Index(j))));
      next[j] = lse(terms) + e;
    }
    a = next;
    const long double z = lse(a);
    std::vector<double> f(K);
    for (std::size_t k = 0; k < K; ++k) f[k] = static_cast<double>(std::exp(a[k] - z));
    filtered->push_back(f);
  }
  return lse(a);
}

}  // namespace

TEST_CASE("population model, 5 seasons: delayed sampling's summed log-likelihood is the exact log-evidence",
          "[runtime][models]") {
  const auto live = Graph::live_nodes();
  const double lambda0 = 50, phi = 0.8, iota = 10, p = 0.6;
  // The third data set starts with y_0 = 0 (probability e^-30): its posterior N_0 ~ Poisson(20) lives in the lower
  // tail that Poisson(50) drops at the default tolerance 1e-15, so it needs Truncation{1e-300} (graph.hpp says so).
  const std::vector<std::vector<std::int64_t>> datasets{{30, 33, 28, 31, 35}, {18, 40, 25, 22, 41}, {0, 3, 9, 5, 12}};
  for (std::size_t d = 0; d < datasets.size(); ++d) {
    const auto& y = datasets[d];
    INFO("y_0 = " << y[0] << ", y_1 = " << y[1]);
    const long double exact = population_forward(y, lambda0, phi, iota, p, 260);
    const Truncation truncation{d == 2 ? 1e-300 : 1e-15};
    for (const std::size_t P : {std::size_t{1}, std::size_t{3}}) {
      Graph g(P, 5, truncation);
      double sum = 0;
      Variable N = g.assume(Poisson(lambda0));
      for (std::size_t t = 0; t < y.size(); ++t) {
        if (t > 0) N = g.add(g.assume(N, Thinning(phi)), g.assume(Poisson(iota)));
        sum += g.observe(g.assume(N, Thinning(p)), y[t])[0];
        REQUIRE(Graph::live_nodes() - live <= 8);  // old seasons are freed once their handles go
      }
      CHECK(std::abs(sum - static_cast<double>(exact)) <= 1e-9 * std::abs(static_cast<double>(exact)));
      for (const double lw : g.log_weights()) REQUIRE(lw == sum);  // nothing sampled: every particle is exact
    }
  }
  {  // the default truncation on the third data set: the first count lies in the prior's cut tail, and the
     // observation extends the prior's window from its family, so the evidence is exact (it was 1.3% off)
    const auto& y = datasets[2];
    Graph g;
    double sum = 0;
    Variable N = g.assume(Poisson(lambda0));
    for (std::size_t t = 0; t < y.size(); ++t) {
      if (t > 0) N = g.add(g.assume(N, Thinning(phi)), g.assume(Poisson(iota)));
      sum += g.observe(g.assume(N, Thinning(p)), y[t])[0];
    }
    const double want = static_cast<double>(population_forward(y, lambda0, phi, iota, p, 260));
    CHECK(std::abs(sum - want) <= 1e-9 * std::abs(want));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("population model, 20 seasons: the observations' bounds cover the evidence's error, within 100x",
          "[runtime][models][bound]") {
  // What truncation dropped is followed along the ordinary path (pushed through the thinnings, convolved into the
  // sums, weighed by each observation's likelihood), so the bound stays near the error over a long filter (it was
  // infinite from the sixth season on). The bound counts truncation, not rounding (about 1e-14 here): at the
  // default tolerance the error is rounding's, and the bound is compared with that.
  const double lambda0 = 50, phi = 0.8, iota = 10, p = 0.6;
  const std::vector<std::int64_t> y{36, 28, 29, 29, 18, 24, 25, 22, 25, 27, 37, 24, 24, 27, 32, 32, 35, 30, 33, 20};
  const double exact = static_cast<double>(population_forward(y, lambda0, phi, iota, p, 300));
  constexpr double rounding = 1e-14;
  for (const double tolerance : {1e-15, 1e-9, 1e-6}) {
    Truncation t;
    t.tolerance = tolerance;
    Graph g(1, 1, Device::cpu, t);
    double sum = 0, bound = 0;
    Variable N = g.assume(Poisson(lambda0));
    for (std::size_t s = 0; s < y.size(); ++s) {
      if (s > 0) N = g.add(g.assume(N, Thinning(phi)), g.assume(Poisson(iota)));
      const Observation o = g.observe(g.assume(N, Thinning(p)), y[s]);
      sum += o[0];
      bound += o.exactness().truncation_error;
    }
    const double actual = std::abs(sum - exact);
    INFO("tolerance " << tolerance << ": actual " << actual << ", bound " << bound);
    CHECK(actual <= bound + rounding);
    CHECK(bound <= 100 * std::max(actual, rounding));
  }
}

TEST_CASE("An observation's bound is the same whenever it is read: at once, after the filter, or never before",
          "[runtime][models][bound]") {
  // The tails behind the bounds are computed when a bound is first read (or when a chain of pending steps grows
  // past its depth limit, as it does here over 24 seasons); the order of reading must not change any bound.
  const std::vector<std::int64_t> y{36, 28, 29, 29, 18, 24, 25, 22, 25, 27, 37, 24,
                                    24, 27, 32, 32, 35, 30, 33, 20, 21, 26, 31, 28};
  enum class Reading { at_once, at_end, second_half_only };
  const auto run = [&](Reading reading, std::size_t particles) {
    Truncation t;
    t.tolerance = 1e-9;
    Graph g(particles, 1, Device::cpu, t);
    std::vector<Observation> kept;
    std::vector<double> bounds(y.size(), -1.0);
    Variable N = g.assume(Poisson(50.0));
    for (std::size_t s = 0; s < y.size(); ++s) {
      if (s > 0) N = g.add(g.assume(N, Thinning(0.8)), g.assume(Poisson(10.0)));
      Observation o = g.observe(g.assume(N, Thinning(0.6)), y[s]);
      if (reading == Reading::at_once || (reading == Reading::second_half_only && s >= y.size() / 2))
        bounds[s] = o.exactness().truncation_error;
      kept.push_back(std::move(o));
    }
    for (std::size_t s = 0; s < y.size(); ++s)
      if (bounds[s] < 0 && reading == Reading::at_end) bounds[s] = kept[s].exactness().truncation_error;
    return bounds;
  };
  // (8192 particles: past the pending limit after a few steps, so there the tails are computed at once)
  for (const std::size_t particles : {std::size_t{1}, std::size_t{3}, std::size_t{8192}}) {
    const auto at_once = run(Reading::at_once, particles);
    const auto at_end = run(Reading::at_end, particles);
    const auto second = run(Reading::second_half_only, particles);
    for (std::size_t s = 0; s < y.size(); ++s) {
      INFO("particles " << particles << ", season " << s);
      CHECK(at_once[s] > 0.0);
      CHECK(at_once[s] < 1e-6);
      CHECK(at_end[s] == at_once[s]);
      if (s >= y.size() / 2) CHECK(second[s] == at_once[s]);
    }
  }
}

TEST_CASE("HMM with Poisson emissions: delayed sampling with one particle is the forward algorithm",
          "[runtime][models]") {
  const auto live = Graph::live_nodes();
  {
    const Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
    Eigen::MatrixXd T(3, 3);
    T << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80;
    const Eigen::VectorXd rates = Eigen::Vector3d(2, 10, 25);
    // 50 steps from the model (simulated once here, fixed), with a run of extreme counts at the end
    RandomStream rng(11, 0);
    std::vector<std::int64_t> y;
    std::int64_t s = sample(to_pmf(Categorical(init)), rng);
    for (int t = 0; t < 50; ++t) {
      if (t > 0) s = sample(to_pmf(Categorical(T.row(s).transpose())), rng);
      y.push_back(sample(to_pmf(Poisson(rates[s])), rng));
    }
    y.insert(y.end(), {0, 0, 45, 1});
    std::vector<std::vector<double>> filtered;
    const long double exact = hmm_forward(y, init, T, rates, &filtered);

    Graph g;
    Variable x = g.assume(Categorical(init));
    double sum = 0, max_diff = 0;
    for (std::size_t t = 0; t < y.size(); ++t) {
      if (t > 0) x = g.assume(x, MarkovStep(T));
      sum += g.observe(g.assume(x, IndexedPoisson(rates)), y[t])[0];
      const Pmf law = g.marginal(x)[0];
      for (int k = 0; k < 3; ++k)
        max_diff = std::max(max_diff, std::abs(std::exp(log_pdf(law, k) - law.log_mass()) - filtered[t][std::size_t(k)]));
    }
    CHECK(std::abs(sum - static_cast<double>(exact)) <= 1e-10 * std::abs(static_cast<double>(exact)));
    CHECK(max_diff < 1e-12);
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_models_exact
