// Graph (P particles of one delayed-sampling program): exact evidence, conjugacy, resampling, errors, memory.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"
#include "tally/runtime/graph.hpp"

namespace test_populations {

using namespace tally;
using namespace tally::runtime;

namespace {
/// A marginal's Pmfs in one batch (the layout the comparisons below read).
gpu::PmfBatch batch(const std::vector<Pmf>& laws) {
  gpu::PmfBatch b;
  for (const Pmf& p : laws) b.push_back(std::span<const double>(p.weights().data(), std::size_t(p.size())), p.lo(), p.log_scale());
  return b;
}
Device on(gpu::Backend b) { return b == gpu::Backend::cuda ? Device::cuda : Device::cpu; }
}  // namespace

namespace {

constexpr double lambda0 = 50, phi = 0.8, iota = 10, p_obs = 0.6;
const std::vector<std::int64_t> data{28, 30, 25, 33, 29, 31};

long double lpois(std::int64_t k, long double rate) {
  return static_cast<long double>(k) * std::log(rate) - rate - std::lgamma(static_cast<long double>(k) + 1);
}
long double lbinom(std::int64_t n, std::int64_t k, long double q) {
  if (k < 0 || k > n) return -std::numeric_limits<long double>::infinity();
  return std::lgamma(static_cast<long double>(n) + 1) - std::lgamma(static_cast<long double>(k) + 1) -
         std::lgamma(static_cast<long double>(n - k) + 1) + static_cast<long double>(k) * std::log(q) +
         static_cast<long double>(n - k) * std::log1p(-q);
}

/// The exact log-evidence of the population model (N_0 ~ Poisson(lambda0); N_t = Bin(N_{t-1}, phi) + Poisson(iota);
/// y_t ~ Bin(N_t, p)) by a forward recursion over N in [0, n_max], long double, in two stages per step (thin, then
/// convolve with the immigration pmf), each step's filter rescaled by its sum.
long double exact_log_evidence(const std::vector<std::int64_t>& y, std::int64_t n_max = 300) {
  const auto n = static_cast<std::size_t>(n_max + 1);
  std::vector<long double> filter(n), thinned(n), prior(n), immigration(n);
  for (std::size_t k = 0; k < n; ++k) immigration[k] = std::exp(lpois(std::int64_t(k), iota));
  long double log_z = 0;
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t == 0) {
      for (std::size_t m = 0; m < n; ++m) prior[m] = std::exp(lpois(std::int64_t(m), lambda0));
    } else {
      std::fill(thinned.begin(), thinned.end(), 0.0L);
      for (std::size_t a = 0; a < n; ++a)
        for (std::size_t s = 0; s <= a; ++s) thinned[s] += filter[a] * std::exp(lbinom(std::int64_t(a), std::int64_t(s), phi));
      std::fill(prior.begin(), prior.end(), 0.0L);
      for (std::size_t s = 0; s < n; ++s)
        for (std::size_t m = s; m < n; ++m) prior[m] += thinned[s] * immigration[m - s];
    }
    long double total = 0;
    for (std::size_t m = 0; m < n; ++m) {
      filter[m] = prior[m] * std::exp(lbinom(std::int64_t(m), y[t], p_obs));
      total += filter[m];
    }
    for (auto& f : filter) f /= total;
    log_z += std::log(total);
  }
  return log_z;
}

double exact_evidence() {
  static const double value = static_cast<double>(exact_log_evidence(data));
  return value;
}

/// log BetaBinomial(k; n, a, b) = log C(n, k) + log B(k + a, n - k + b) - log B(a, b).
double log_beta_binomial(std::int64_t k, std::int64_t n, double a, double b) {
  auto lbeta = [](double x, double y) { return std::lgamma(x) + std::lgamma(y) - std::lgamma(x + y); };
  const double kd = double(k), nd = double(n);
  return std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) + lbeta(kd + a, nd - kd + b) -
         lbeta(a, b);
}

/// The mass at k of law i of a batch (0 off its support).
double mass(const gpu::PmfBatch& b, std::size_t i, std::int64_t k) {
  if (k < b.lo[i] || k >= b.lo[i] + std::int64_t(b.length(i))) return 0.0;
  return b.weights[std::size_t(b.offset[i] + k - b.lo[i])] * std::exp(b.log_scale[i]);
}

bool same_law(const gpu::PmfBatch& a, std::size_t i, const gpu::PmfBatch& b, std::size_t j) {
  if (a.lo[i] != b.lo[j] || a.log_scale[i] != b.log_scale[j] || a.length(i) != b.length(j)) return false;
  const auto x = a[i], y = b[j];
  return std::equal(x.begin(), x.end(), y.begin());
}

bool close_relative(double a, double b, double tol) {
  if (a == b) return true;  // equal infinities too
  return std::abs(a - b) <= tol * std::max(std::abs(a), std::abs(b));
}

/// What one run of the filter and the conjugate step records (to compare backends or seeds).
struct Record {
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::vector<double>> log_w;
  std::vector<gpu::PmfBatch> marginals;
  std::vector<bool> resampled;
  std::vector<std::vector<double>> beta_a;
};

/// The population filter of the model (6 steps, resample(0.5)) then the conjugate-difference step of the SIR model.
Record run_program(gpu::Backend where, std::size_t P, std::uint64_t seed) {
  Record r;
  Graph pop(P, seed, on(where), Truncation{1e-300});
  Variable N = pop.assume(Poisson(lambda0));
  for (std::size_t t = 0; t < data.size(); ++t) {
    if (t > 0) N = pop.add(pop.binomial(N, phi), pop.assume(Poisson(iota)));
    pop.observe(pop.binomial(N, p_obs), data[t]);
    r.log_w.push_back(pop.log_weights());
    r.marginals.push_back(batch(pop.marginal(N)));
    r.values.push_back(pop.value(N));
    r.resampled.push_back(pop.resample_by_weight(0.5).resampled);
    r.values.push_back(pop.value(N));
  }
  Continuous delta = pop.assume(Beta(2, 2)), gamma = pop.assume(Beta(2, 2));
  Variable n = pop.binomial(pop.constant(40), delta), k = pop.binomial(pop.constant(20), gamma);
  r.marginals.push_back(batch(pop.marginal(n)));
  pop.observe(pop.subtract(n, k), 5);
  r.log_w.push_back(pop.log_weights());
  r.values.push_back(pop.value(n));
  r.values.push_back(pop.value(k));
  for (const Continuous& rho : {delta, gamma}) {
    std::vector<double> a;
    for (const Beta& b : pop.beta(rho)) a.push_back(b.alpha);
    r.beta_a.push_back(a);
  }
  return r;
}

}  // namespace

TEST_CASE("one particle with nothing realized: the summed log-weight is the exact log-evidence", "[population]") {
  const auto live = Graph::live_nodes();
  const double exact = exact_evidence();
  {
    Graph pop(1, 11, Device::cpu, Truncation{1e-300});
    Variable N = pop.assume(Poisson(lambda0));
    for (std::size_t t = 0; t < data.size(); ++t) {
      if (t > 0) N = pop.add(pop.binomial(N, phi), pop.assume(Poisson(iota)));
      pop.observe(pop.binomial(N, p_obs), data[t]);
    }
    const std::vector<double> lw = pop.log_weights();
    REQUIRE(lw.size() == 1);
    INFO("population " << lw[0] << ", exact " << exact);
    CHECK(std::isfinite(lw[0]));
    CHECK(std::abs(lw[0] - exact) <= 1e-9 * std::abs(exact));

    Graph g(1, 1, Truncation{1e-300});
    Variable M = g.assume(Poisson(lambda0));
    double sum = 0;
    for (std::size_t t = 0; t < data.size(); ++t) {
      if (t > 0) M = g.add(g.assume(M, Thinning(phi)), g.assume(Poisson(iota)));
      sum += g.observe(g.assume(M, Thinning(p_obs)), data[t])[0];
    }
    INFO("graph " << sum);
    CHECK(std::abs(lw[0] - sum) <= 1e-9 * std::abs(sum));
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("a thinning's marginal: Binomial(Poisson(5), 0.3) is Poisson(1.5) in every particle", "[population]") {
  Graph pop(3, 2, Device::cpu, Truncation{1e-300});
  Variable x = pop.assume(Poisson(5));
  Variable y = pop.binomial(x, 0.3);
  const gpu::PmfBatch m = batch(pop.marginal(y));
  REQUIRE(m.size() == 3);
  for (std::size_t i = 0; i < 3; ++i)
    for (std::int64_t k = 0; k <= 20; ++k) {
      const double want = std::exp(double(k) * std::log(1.5) - 1.5 - std::lgamma(double(k) + 1));
      INFO("particle " << i << ", k = " << k << ": " << mass(m, i, k) << " vs " << want);
      CHECK(std::abs(mass(m, i, k) - want) <= 1e-12 * want);
    }
}

TEST_CASE("delayed-sampling filter of 2000 particles estimates the exact log-evidence", "[population]") {
  const auto live = Graph::live_nodes();
  const double exact = exact_evidence();
  for (const double threshold : {0.5, 1.0}) {  // 1.0: resampled at every step but the last
    const std::size_t P = 2000;
    Graph pop(P, 20260, Device::cpu, Truncation{1e-300});
    double estimate = 0;
    int resamplings = 0;
    Variable N = pop.assume(Poisson(lambda0));
    for (std::size_t t = 0; t < data.size(); ++t) {
      if (t > 0) N = pop.add(pop.binomial(N, phi), pop.assume(Poisson(iota)));
      pop.observe(pop.binomial(N, p_obs), data[t]);
      pop.realize(N);
      const bool last = t + 1 == data.size();
      const Graph::Resampling step = pop.resample_by_weight(last ? 0.0 : threshold);
      REQUIRE(std::isfinite(step.log_mean_weight));
      REQUIRE(step.ess > 0);
      REQUIRE(step.ess <= double(P) * (1 + 1e-12));
      CHECK(step.resampled == (!last && (threshold >= 1.0 || step.ess < threshold * double(P))));
      if (step.resampled) {
        ++resamplings;
        for (const double lw : pop.log_weights()) REQUIRE(lw == 0.0);
      }
      if (step.resampled || last) estimate += step.log_mean_weight;
      const std::vector<std::int64_t> n = pop.value(N);
      REQUIRE(n.size() == P);
      for (const std::int64_t v : n) REQUIRE(v >= data[t]);
    }
    INFO("threshold " << threshold << ": estimate " << estimate << ", exact " << exact << ", " << resamplings
                      << " resamplings");
    if (threshold >= 1.0) CHECK(resamplings == int(data.size()) - 1);
    CHECK(std::abs(estimate - exact) <= 0.2);
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("a difference of two Beta-binomials observed: conjugate posteriors and the exact likelihood",
          "[population]") {
  const std::size_t P = 500;
  Graph pop(P, 77);
  Continuous delta = pop.assume(Beta(2, 2)), gamma = pop.assume(Beta(2, 2));
  Variable tau = pop.constant(40), I = pop.constant(20);
  Variable n = pop.binomial(tau, delta), r = pop.binomial(I, gamma);
  Variable d = pop.subtract(n, r);
  pop.observe(d, 5);
  const std::vector<std::int64_t> nv = pop.value(n), rv = pop.value(r);
  REQUIRE(nv.size() == P);
  REQUIRE(rv.size() == P);
  const std::vector<Beta> bd = pop.beta(delta), bg = pop.beta(gamma);
  REQUIRE(bd.size() == P);
  REQUIRE(bg.size() == P);
  std::int64_t distinct_n_min = nv[0], distinct_n_max = nv[0];
  for (std::size_t i = 0; i < P; ++i) {
    INFO("particle " << i << ": n = " << nv[i] << ", r = " << rv[i]);
    REQUIRE(nv[i] - rv[i] == 5);
    REQUIRE(nv[i] >= 0);
    REQUIRE(nv[i] <= 40);
    REQUIRE(rv[i] >= 0);
    REQUIRE(rv[i] <= 20);
    REQUIRE(bd[i].alpha == 2.0 + double(nv[i]));
    REQUIRE(bd[i].beta == 2.0 + 40.0 - double(nv[i]));
    REQUIRE(bg[i].alpha == 2.0 + double(rv[i]));
    REQUIRE(bg[i].beta == 2.0 + 20.0 - double(rv[i]));
    distinct_n_min = std::min(distinct_n_min, nv[i]);
    distinct_n_max = std::max(distinct_n_max, nv[i]);
  }
  CHECK(distinct_n_min < distinct_n_max);  // the draws are random, not a constant
  long double total = 0;
  for (std::int64_t k = 5; k <= 25; ++k)
    total += std::exp(static_cast<long double>(log_beta_binomial(k, 40, 2, 2) + log_beta_binomial(k - 5, 20, 2, 2)));
  const double want = static_cast<double>(std::log(total));
  const std::vector<double> lw = pop.log_weights();
  REQUIRE(lw.size() == P);
  for (const double l : lw) REQUIRE(l == lw[0]);
  INFO("log-weight " << lw[0] << ", exact " << want);
  CHECK(std::abs(lw[0] - want) <= 1e-10 * std::abs(want));
}

TEST_CASE("resampling copies whole laws by ancestor, by the weights, and resets the log-weights", "[population]") {
  const auto live = Graph::live_nodes();
  {
    const std::size_t P = 64;
    Graph pop(P, 5, Device::cpu, Truncation{1e-300});
    std::vector<std::int64_t> observed(P);
    for (std::size_t i = 0; i < P; ++i) observed[i] = std::int64_t(i);
    Variable c = pop.constant(observed);
    Variable x = pop.assume(Poisson(20));
    Variable y = pop.binomial(x, 0.5);
    pop.observe(y, c);
    const std::vector<double> before_w = pop.log_weights();
    for (std::size_t i = 0; i < P; ++i) {  // y_i ~ Poisson(10) after x is summed out
      INFO("particle " << i);
      CHECK(std::abs(before_w[i] - static_cast<double>(lpois(std::int64_t(i), 10))) <=
            1e-9 * std::abs(static_cast<double>(lpois(std::int64_t(i), 10))));
    }
    const gpu::PmfBatch before = batch(pop.marginal(x));
    REQUIRE(before.size() == P);
    for (std::size_t i = 1; i < P; ++i) REQUIRE_FALSE(same_law(before, i, before, i - 1));  // laws differ

    const Graph::Resampling step = pop.resample_by_weight(1.0);
    REQUIRE(step.resampled);
    const gpu::PmfBatch after = batch(pop.marginal(x));
    REQUIRE(after.size() == P);
    std::vector<std::size_t> offspring(P, 0);
    for (std::size_t i = 0; i < P; ++i) {
      std::size_t matches = 0, ancestor = 0;
      for (std::size_t j = 0; j < P; ++j)
        if (same_law(after, i, before, j)) ++matches, ancestor = j;
      INFO("particle " << i);
      REQUIRE(matches == 1);
      ++offspring[ancestor];
    }
    const std::vector<std::int64_t> c_after = pop.value(c);  // the constant's values travel with the laws
    for (std::size_t i = 0; i < P; ++i) CHECK(same_law(after, i, before, std::size_t(c_after[i])));
    double m = *std::max_element(before_w.begin(), before_w.end()), s = 0;
    for (const double l : before_w) s += std::exp(l - m);
    CHECK(std::abs(step.log_mean_weight - (m + std::log(s) - std::log(double(P)))) <= 1e-12 * std::abs(m));
    for (std::size_t j = 0; j < P; ++j) {  // systematic: within 1 of P w_j
      const double expected = double(P) * std::exp(before_w[j] - m) / s;
      INFO("particle " << j << ": " << offspring[j] << " offspring, P w = " << expected);
      CHECK(std::abs(double(offspring[j]) - expected) < 1.0 + 1e-9);
    }
    for (const double l : pop.log_weights()) CHECK(l == 0.0);
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("a population whose every particle has weight zero resamples to -inf, on the host and the device",
          "[population][device]") {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<gpu::Backend> places{gpu::Backend::cpu};
  if (gpu::cuda_available()) places.push_back(gpu::Backend::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  for (const gpu::Backend where : places)
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {  // repeated: device pool memory is reused, not zeroed
      INFO((where == gpu::Backend::cpu ? "host" : "device") << ", seed " << seed);
      const std::size_t P = 3000;
      Graph pop(P, seed, on(where));
      Variable x = pop.assume(Poisson(3));
      Variable y = pop.binomial(x, 0.5);
      pop.observe(y, 1);  // live particles: an ordinary weight
      REQUIRE(pop.resample_by_weight(1.0).log_mean_weight > -inf);
      Variable c = pop.constant(5);
      pop.observe(c, 6);  // impossible in every particle
      const Graph::Resampling step = pop.resample_by_weight(1.0);
      CHECK(step.log_mean_weight == -inf);
      CHECK(step.ess == 0.0);
      CHECK_FALSE(step.resampled);
      for (const double l : pop.log_weights()) REQUIRE(l == -inf);
      const std::vector<std::int64_t> v = pop.value(x);  // still usable: draws within x's support
      CHECK(std::all_of(v.begin(), v.end(), [](std::int64_t k) { return k >= 1; }));
    }
}

TEST_CASE("population errors: shapes, domains, handles, devices", "[population]") {
  CHECK_THROWS_AS(Graph(0, 1), tally::domain_error);
  Graph pop(4, 1);
  Variable x = pop.assume(Poisson(3));
  CHECK_THROWS_AS(pop.binomial(x, 1.5), tally::domain_error);
  CHECK(pop.value(pop.subtract(x, x)) == std::vector<std::int64_t>(4, 0));  // x - x = 0, exactly
  Graph other(4, 1);
  Variable z = other.constant(2);
  CHECK_THROWS_AS(pop.add(x, z), tally::runtime::usage_error);
  CHECK_THROWS_AS(pop.observe(z, 2), tally::runtime::usage_error);
  CHECK_THROWS_AS(pop.value(z), tally::runtime::usage_error);
  CHECK_THROWS_AS(pop.observe(Variable{}, 1), tally::runtime::usage_error);
  CHECK_THROWS_AS(pop.binomial(Variable{}, 0.5), tally::runtime::usage_error);
  CHECK_THROWS_AS(batch(pop.marginal(Variable{})), tally::runtime::usage_error);
  CHECK_THROWS_AS(pop.constant(std::vector<std::int64_t>{1, 2, 3}), tally::shape_error);
  CHECK(pop.value(pop.constant(7)) == std::vector<std::int64_t>(4, 7));  // the population still works
  if (!gpu::cuda_available()) CHECK_THROWS_AS(Graph(4, 1, Device::cuda), tally::cuda_error);
}

TEST_CASE("the memory report: every live node, its bytes and bytes per particle", "[population]") {
  const std::size_t P = 5;
  Graph pop(P, 3);
  Variable x = pop.assume(Poisson(10));
  Continuous rho = pop.assume(Beta(2, 3));
  pop.name(x, "assume x");
  pop.name(rho, "Beta rho");
  const gpu::PmfBatch law = batch(pop.marginal(x));
  REQUIRE(law.size() == P);
  std::size_t c_bytes = 0;
  {
    Variable c = pop.constant(3);
    pop.name(c, "constant c");
    const std::vector<NodeMemory> mem = pop.memory();
    REQUIRE(mem.size() == 3);
    std::size_t sum = 0, found = 0;
    for (const NodeMemory& m : mem) {
      INFO(m.name << ": " << m.bytes << " bytes");
      CHECK(m.bytes_per_particle == double(m.bytes) / double(P));
      sum += m.bytes;
      if (m.name.rfind("assume", 0) == 0) {
        ++found;
        CHECK(m.bytes == 8 * law.weights.size() / P + 24 + 8);  // a prior: one law held by every particle
      } else if (m.name.rfind("constant", 0) == 0) {
        ++found;
        CHECK(m.bytes == 8 * P);
        c_bytes = m.bytes;
      } else if (m.name.rfind("Beta", 0) == 0) {
        ++found;
        CHECK(m.bytes == 16 * P);
      }
    }
    CHECK(found == 3);
    CHECK(pop.bytes() == sum + 8 * P);
  }
  const std::size_t without_c = pop.bytes();
  CHECK(pop.memory().size() == 2);  // the constant is gone with its handle
  Variable y = pop.binomial(x, 0.5);   // initialized: holds nothing of its own
  CHECK(pop.bytes() == without_c);
  const gpu::PmfBatch thinned = batch(pop.marginal(y));  // grafted: y holds its laws now
  // one law for every particle (the same prior thinned the same way): held once
  CHECK(pop.bytes() == without_c + 8 * thinned.weights.size() / P + 24 + 8);
  CHECK(c_bytes == 8 * P);
}

TEST_CASE("a population on the host is deterministic in its seed", "[population]") {
  const Record a = run_program(gpu::Backend::cpu, 256, 9), b = run_program(gpu::Backend::cpu, 256, 9);
  const Record c = run_program(gpu::Backend::cpu, 256, 10);
  CHECK(a.values == b.values);
  CHECK(a.log_w == b.log_w);
  CHECK(a.resampled == b.resampled);
  CHECK(a.beta_a == b.beta_a);
  REQUIRE(a.marginals.size() == b.marginals.size());
  for (std::size_t s = 0; s < a.marginals.size(); ++s) CHECK(a.marginals[s].weights == b.marginals[s].weights);
  CHECK(a.values != c.values);  // another seed draws otherwise
}

TEST_CASE("a population on the device agrees with the host", "[population][device]") {
  if (tally::test::skip_without_device()) return;
  const std::size_t P = 4096;
  const Record host = run_program(gpu::Backend::cpu, P, 31), device = run_program(gpu::Backend::cuda, P, 31);
  CHECK(host.resampled == device.resampled);
  REQUIRE(host.values.size() == device.values.size());
  for (std::size_t s = 0; s < host.values.size(); ++s) {
    INFO("values " << s);
    CHECK(host.values[s] == device.values[s]);
  }
  CHECK(host.beta_a == device.beta_a);
  REQUIRE(host.log_w.size() == device.log_w.size());
  for (std::size_t s = 0; s < host.log_w.size(); ++s) {
    REQUIRE(host.log_w[s].size() == device.log_w[s].size());
    for (std::size_t i = 0; i < host.log_w[s].size(); ++i) {
      INFO("log-weights " << s << ", particle " << i);
      REQUIRE(close_relative(host.log_w[s][i], device.log_w[s][i], 1e-9));
    }
  }
  REQUIRE(host.marginals.size() == device.marginals.size());
  for (std::size_t s = 0; s < host.marginals.size(); ++s) {
    const gpu::PmfBatch &h = host.marginals[s], &d = device.marginals[s];
    INFO("marginal " << s);
    REQUIRE(h.lo == d.lo);
    REQUIRE(h.offset == d.offset);
    REQUIRE(h.weights.size() == d.weights.size());
    for (std::size_t k = 0; k < h.weights.size(); ++k) REQUIRE(std::abs(h.weights[k] - d.weights[k]) <= 1e-10);
    for (std::size_t i = 0; i < h.size(); ++i) REQUIRE(close_relative(h.log_scale[i], d.log_scale[i], 1e-9));
  }
}

TEST_CASE("a population too big for the device says how many particles would fit", "[population][device]") {
  if (tally::test::skip_without_device()) return;
  const std::size_t free = gpu::device_free_bytes();
  REQUIRE(free > 0);
  // the log-weights alone (8 bytes a particle) of free / 4 particles take twice the free memory
  try {
    Graph too_big(free / 4, 1, Device::cuda);
    FAIL("a population of " << free / 4 << " particles fitted in " << free << " free bytes");
  } catch (const tally::device_memory_error& e) {
    INFO(e.what());
    CHECK_THAT(std::string(e.what()), Catch::Contains("particles would fit"));
    CHECK(e.requested >= free);
  }
  // one that fits (log-weights an eighth of the free memory), then a law per particle that does not: the error
  // counts what the population holds, and the population stays usable
  const auto live = Graph::live_nodes();
  {
    const std::size_t P = free / 64;
    Graph pop(P, 1, Device::cuda);
    try {
      // about 400 weights a particle, 50 times the free memory: a prior is one law shared by every particle, so its
      // sum with a value per particle (not known to be one constant) makes the laws
      const Variable one = pop.constant(gpu::filled(std::int64_t{1}, P, gpu::Backend::cuda));
      pop.marginal(pop.add(pop.assume(Poisson(1000)), one));
      FAIL("laws of " << P << " particles fitted");
    } catch (const tally::device_memory_error& e) {
      INFO(e.what());
      CHECK_THAT(std::string(e.what()), Catch::Contains("The graph holds") && Catch::Contains("would fit"));
    }
    Variable c = pop.constant(2);
    CHECK(pop.memory().size() == 1);
    CHECK(pop.bytes() == 16 * P);  // the log-weights and c's values
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("an integer overflow in a population names its first particle, on the host and the device",
          "[population][device]") {
  std::vector<gpu::Backend> places{gpu::Backend::cpu};
  if (gpu::cuda_available()) places.push_back(gpu::Backend::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  for (const gpu::Backend where : places) {
    INFO((where == gpu::Backend::cpu ? "host" : "device"));
    std::vector<std::int64_t> x(1000, 3);
    x[417] = x[901] = std::numeric_limits<std::int64_t>::max() / 2 + 1;  // 2 x overflows from here
    const auto cx = gpu::Column<std::int64_t>::from_host(x, where), ones = gpu::filled(std::int64_t{1}, 1000, where);
    CHECK_THROWS_WITH(gpu::linear(cx, 2, ones, 0, 0), Catch::Contains("particle 417") && Catch::Contains("overflows"));
    CHECK(gpu::linear(ones, 2, ones, -1, 5).to_host() == std::vector<std::int64_t>(1000, 6));
  }
}

TEST_CASE("laws of realized counts: the device sizes them from maxima computed where it waits, as the host draws",
          "[population][device]") {
  if (tally::test::skip_without_device()) return;
  // the population model's delayed filter (models/population.cpp) and a difference of two beta-binomials of
  // realized counts (models/sir.cpp's), each season summarized and resampled: after the first season the laws of
  // n are sized from the maxima the summary's wait brought (gpu::largest_later), not read back
  struct Run {
    std::vector<std::vector<std::int64_t>> values;
    std::vector<std::vector<double>> log_w;
  };
  const auto run = [](gpu::Backend where) {
    Run out;
    Graph pop(4096, 17, on(where));
    const double band[] = {0.05, 0.95};
    Variable N = pop.assume(Poisson(lambda0));
    const Continuous delta = pop.assume(Beta(2, 2));
    for (std::size_t t = 0; t < data.size(); ++t) {
      if (t > 0) N = pop.add(pop.binomial(N, phi), pop.assume(Poisson(iota)));
      pop.observe(pop.binomial(N, p_obs), data[t]);
      pop.realize(N);
      // new ~ BetaBinomial(N, delta), old ~ Binomial(N, 0.3): their difference observed
      const Variable d = pop.subtract(pop.binomial(N, delta), pop.binomial(N, 0.3));
      pop.observe(d, static_cast<std::int64_t>(t % 3) - 1);
      (void)pop.summarize(N, band);
      out.values.push_back(pop.value(N));
      out.log_w.push_back(pop.log_weights());
      pop.resample_by_weight(0.5);
    }
    return out;
  };
  const Run host = run(gpu::Backend::cpu), device = run(gpu::Backend::cuda);
  REQUIRE(host.values.size() == device.values.size());
  for (std::size_t t = 0; t < host.values.size(); ++t) {
    INFO("season " << t);
    CHECK(host.values[t] == device.values[t]);
    REQUIRE(host.log_w[t].size() == device.log_w[t].size());
    for (std::size_t i = 0; i < host.log_w[t].size(); ++i) {
      INFO("particle " << i);
      REQUIRE(close_relative(host.log_w[t][i], device.log_w[t][i], 1e-9));
    }
  }
}

TEST_CASE("device: the memory kept for the process is freed on request and made again when needed",
          "[population][device]") {
  if (tally::test::skip_without_device()) return;
  const auto program = [] {
    Graph g(4096, 3, Device::cuda);
    const Variable x = g.assume(Poisson(40.0));
    const Variable k = g.binomial(x, 0.3);
    g.realize(k);  // a value per particle: laws one per particle, deferred checks, staged copies, bounds
    g.observe(g.binomial(g.add(x, k), 0.5), std::vector<std::int64_t>(4096, 17));
    g.resample_by_weight(1.0);
    return g.log_weights();
  };
  const std::vector<double> first = program();
  {
    Graph alive(16, 1, Device::cuda);  // a live graph's pending bound keeps its slot: not everything is freed
    const Variable c = alive.constant(std::vector<std::int64_t>(16, 5));
    alive.value(alive.binomial(c, 0.5));
    (void)gpu::release_cached_memory();
  }
  CHECK(gpu::release_cached_memory());  // nothing alive: everything freed
  CHECK(program() == first);            // made again: the same results
  CHECK(gpu::release_cached_memory());
}

}  // namespace test_populations
