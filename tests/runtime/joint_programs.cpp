// Joint laws in the runtime: the three example programs (models/joint_programs.hpp) against independent
// enumerators written here, exact in every particle and in strict mode; budgets, fallbacks and resampling.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "models/joint_programs.hpp"
#include "runtime/src/joint/joint.hpp"
#include "runtime/src/joint/steps.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_joint_programs {

using namespace tally;
using namespace tally::runtime;
namespace mj = tally::models::joint;

namespace {

using Real = long double;
constexpr Real ninf = -std::numeric_limits<Real>::infinity();

Real log_poisson(std::int64_t k, Real rate) {
  if (rate == 0) return k == 0 ? 0 : ninf;
  return static_cast<Real>(k) * std::log(rate) - rate - std::lgamma(static_cast<Real>(k) + 1);
}
Real log_binomial(std::int64_t n, std::int64_t k, Real q) {
  if (k < 0 || k > n) return ninf;
  Real r = std::lgamma(static_cast<Real>(n) + 1) - std::lgamma(static_cast<Real>(k) + 1) -
           std::lgamma(static_cast<Real>(n - k) + 1);
  if (k > 0) r += static_cast<Real>(k) * std::log(q);
  if (n - k > 0) r += static_cast<Real>(n - k) * std::log1p(-q);
  return r;
}
Real binom(std::int64_t n, std::int64_t k, Real q) { return std::exp(log_binomial(n, k, q)); }

double total_log_likelihood(const std::vector<Observation>& obs, std::size_t particle) {
  double s = 0;
  for (const auto& o : obs) s += o[particle];
  return s;
}

/// The migration model's log-evidence and the final law of (A, B), by the forward algorithm over the grid
/// [0, n]^2 in long double, stage by stage (migrate, survive, immigrate, observe), rescaled each season.
struct MigrationForward {
  Real log_evidence = 0;
  std::vector<Real> a_law;  // P(A_T = a | y), a = 0..n
};
MigrationForward migration_forward(const mj::Migration& w, std::int64_t n) {
  const auto N = static_cast<std::size_t>(n + 1);
  // Binomial(k; m, q) tables, [m * N + k], for the three probabilities of the model
  auto table = [N](Real q) {
    std::vector<Real> t(N * N, 0);
    for (std::size_t m = 0; m < N; ++m)
      for (std::size_t k = 0; k <= m; ++k) t[m * N + k] = binom(std::int64_t(m), std::int64_t(k), q);
    return t;
  };
  const std::vector<Real> bin_m = table(w.m), bin_s = table(w.s), bin_p = table(w.p), bin_c = table(w.c);
  auto bin = [N](const std::vector<Real>& t, std::size_t m, std::size_t k) { return k <= m ? t[m * N + k] : Real(0); };
  using Grid = std::vector<Real>;  // [a * N + b]
  auto at = [N](Grid& g, std::size_t a, std::size_t b) -> Real& { return g[a * N + b]; };
  auto observe = [&](Grid& g, std::size_t t) {
    Real total = 0;
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < N; ++b) {
        at(g, a, b) *= bin(bin_p, a, std::size_t(w.ya[t])) * bin(bin_p, b, std::size_t(w.yb[t]));
        total += at(g, a, b);
      }
    for (Real& v : g) v /= total;
    return std::log(total);
  };
  // thinning along one axis, then a Poisson convolution along it
  auto thin = [&](const Grid& g, bool along_a, const std::vector<Real>& q) {
    Grid out(N * N, 0);
    for (std::size_t u = 0; u < N; ++u)
      for (std::size_t v = 0; v < N; ++v) {
        const Real m = along_a ? at(const_cast<Grid&>(g), u, v) : at(const_cast<Grid&>(g), v, u);
        if (m == 0) continue;
        for (std::size_t k = 0; k <= u; ++k) {
          const Real add = m * bin(q, u, k);
          (along_a ? at(out, k, v) : at(out, v, k)) += add;
        }
      }
    return out;
  };
  auto immigrate = [&](const Grid& g, bool along_a, Real rate) {
    Grid out(N * N, 0);
    std::vector<Real> pois(N);
    for (std::size_t k = 0; k < N; ++k) pois[k] = std::exp(log_poisson(std::int64_t(k), rate));
    for (std::size_t u = 0; u < N; ++u)
      for (std::size_t v = 0; v < N; ++v) {
        const Real m = along_a ? at(const_cast<Grid&>(g), u, v) : at(const_cast<Grid&>(g), v, u);
        if (m == 0) continue;
        for (std::size_t k = 0; u + k < N; ++k) (along_a ? at(out, u + k, v) : at(out, v, u + k)) += m * pois[k];
      }
    return out;
  };
  Grid g(N * N, 0);
  for (std::size_t a = 0; a < N; ++a)
    for (std::size_t b = 0; b < N; ++b)
      at(g, a, b) = std::exp(log_poisson(std::int64_t(a), w.lambda_a) + log_poisson(std::int64_t(b), w.lambda_b));
  MigrationForward f;
  f.log_evidence = observe(g, 0);
  for (std::size_t t = 1; t < w.ya.size(); ++t) {
    Grid moved(N * N, 0);  // (a, b) -> (a - y, b + y), y ~ Binomial(a, m)
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < N; ++b) {
        const Real mass = at(g, a, b);
        if (mass == 0) continue;
        for (std::size_t y = 0; y <= a && b + y < N; ++y)  // with the migrants' count, if any, seen
          at(moved, a - y, b + y) +=
              mass * bin(bin_m, a, y) * (w.counted.empty() ? Real(1) : bin(bin_c, y, std::size_t(w.counted[t - 1])));
      }
    g = immigrate(immigrate(thin(thin(moved, true, bin_s), false, bin_s), true, w.iota_a), false, w.iota_b);
    f.log_evidence += observe(g, t);
  }
  f.a_law.assign(N, 0);
  for (std::size_t a = 0; a < N; ++a)
    for (std::size_t b = 0; b < N; ++b) f.a_law[a] += at(g, a, b);
  return f;
}

/// The rate HMM's log-evidence and the posterior of each rate, by summing the forward algorithm over every pair
/// of rates (r_0, r_1) in [0, r_max_0] x [0, r_max_1] (the Geometric tails beyond are below 1e-20).
struct RateHmmEnumeration {
  Real log_evidence = 0;
  std::vector<std::vector<Real>> rate_posterior;
};
RateHmmEnumeration rate_hmm_enumeration(const mj::RateHmm& h, std::int64_t r_max_0, std::int64_t r_max_1) {
  std::vector<std::vector<Real>> log_joint(static_cast<std::size_t>(r_max_0 + 1),
                                           std::vector<Real>(static_cast<std::size_t>(r_max_1 + 1)));
  Real top = ninf;
  // emission[r * T + t] = Poisson(y_t; a r)
  const std::size_t T = h.y.size();
  const auto r_max = std::size_t(std::max(r_max_0, r_max_1));
  std::vector<Real> emission((r_max + 1) * T);
  for (std::size_t r = 0; r <= r_max; ++r)
    for (std::size_t t = 0; t < T; ++t) emission[r * T + t] = std::exp(log_poisson(h.y[t], h.a * Real(r)));
  for (std::int64_t r0 = 0; r0 <= r_max_0; ++r0)
    for (std::int64_t r1 = 0; r1 <= r_max_1; ++r1) {
      const std::size_t rate[2] = {std::size_t(r0), std::size_t(r1)};
      Real log_prior = std::log(Real(h.q[0])) + Real(r0) * std::log1p(-Real(h.q[0])) + std::log(Real(h.q[1])) +
                       Real(r1) * std::log1p(-Real(h.q[1]));
      Real alpha[2] = {Real(h.init[0]), Real(h.init[1])};
      Real log_scale = 0;
      for (std::size_t t = 0; t < h.y.size(); ++t) {
        if (t > 0) {
          const Real a0 = alpha[0] * Real(h.T(0, 0)) + alpha[1] * Real(h.T(1, 0));
          const Real a1 = alpha[0] * Real(h.T(0, 1)) + alpha[1] * Real(h.T(1, 1));
          alpha[0] = a0, alpha[1] = a1;
        }
        for (int s = 0; s < 2; ++s) alpha[s] *= emission[rate[s] * T + t];
        const Real sum = alpha[0] + alpha[1];
        if (sum == 0) {
          log_scale = ninf;
          break;
        }
        alpha[0] /= sum, alpha[1] /= sum;
        log_scale += std::log(sum);
      }
      const Real l = log_prior + log_scale;
      log_joint[std::size_t(r0)][std::size_t(r1)] = l;
      top = std::max(top, l);
    }
  RateHmmEnumeration e;
  e.rate_posterior = {std::vector<Real>(std::size_t(r_max_0 + 1), 0), std::vector<Real>(std::size_t(r_max_1 + 1), 0)};
  Real total = 0;
  for (std::size_t r0 = 0; r0 < log_joint.size(); ++r0)
    for (std::size_t r1 = 0; r1 < log_joint[r0].size(); ++r1) {
      const Real p = std::exp(log_joint[r0][r1] - top);
      total += p;
      e.rate_posterior[0][r0] += p;
      e.rate_posterior[1][r1] += p;
    }
  for (auto& post : e.rate_posterior)
    for (Real& p : post) p /= total;
  e.log_evidence = top + std::log(total);
  return e;
}

/// The wet-grass network by enumeration in integers: weights in units of 100^-4 (every probability is a multiple
/// of 1/100); returns {P(wet) * 100^4, P(rain, wet) * 100^4, P(sprinkler, wet) * 100^4, P(cloudy, wet) * 100^4}.
std::array<std::int64_t, 4> wet_grass_counts(const mj::WetGrass& n) {
  std::array<std::int64_t, 4> out{};
  for (int c = 0; c < 2; ++c)
    for (int s = 0; s < 2; ++s)
      for (int r = 0; r < 2; ++r) {
        const std::int64_t pc = c ? n.cloudy : 100 - n.cloudy;
        const std::int64_t ps = s ? n.sprinkler[c] : 100 - n.sprinkler[c];
        const std::int64_t pr = r ? n.rain[c] : 100 - n.rain[c];
        const std::int64_t w = pc * ps * pr * n.wet[2 * s + r];
        out[0] += w;
        if (r) out[1] += w;
        if (s) out[2] += w;
        if (c) out[3] += w;
      }
  return out;
}

Truncation with_budget(std::int64_t bytes) {
  Truncation t;
  t.max_joint_bytes = bytes;
  return t;
}

}  // namespace

/// The references of the two unbounded examples, computed once for the tests that read them.
const MigrationForward& migration_reference() {
  static const MigrationForward f = migration_forward(mj::Migration{}, 110);
  return f;
}
const RateHmmEnumeration& rate_hmm_reference() {
  static const RateHmmEnumeration e = rate_hmm_enumeration(mj::RateHmm{}, 200, 650);
  return e;
}

TEST_CASE("joint laws: migrants also counted as they leave, exact in strict mode against the forward recursion",
          "[runtime][joint][exact]") {
  mj::Migration w;
  w.counted = {4, 3, 4, 3, 3};
  const MigrationForward want = migration_forward(w, 110);
  for (const std::size_t particles : {std::size_t{1}, std::size_t{4}}) {
    Graph g(particles, 3);
    g.strict(true);  // the migrants have three children that go on: nothing is sampled
    const mj::MigrationRun r = mj::run_migration(g, w);
    REQUIRE(r.observations.size() == 2 * w.ya.size() + w.counted.size());
    for (const auto& o : r.observations) REQUIRE(o.exact());
    for (std::size_t i = 0; i < particles; ++i)
      CHECK(total_log_likelihood(r.observations, i) == Approx(static_cast<double>(want.log_evidence)).epsilon(1e-10));
    const Pmf a = g.marginal(r.a)[particles - 1];
    for (std::int64_t k = a.lo(); k <= a.hi(); ++k) {
      const double p = static_cast<double>(want.a_law[static_cast<std::size_t>(k)]);
      if (p > 1e-8) CHECK(pdf(a, k) == Approx(p).epsilon(1e-9));
    }
  }
}

TEST_CASE("joint laws: coupled populations with migration, exact evidence against a forward recursion on the grid",
          "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  const mj::Migration w;
  const MigrationForward& want = migration_reference();
  {
    Graph g;
    g.strict(true);  // nothing is sampled: strict mode does not throw
    const mj::MigrationRun r = mj::run_migration(g, w);
    for (const auto& o : r.observations) REQUIRE(o.exact());
    const double got = total_log_likelihood(r.observations, 0);
    CHECK(got == Approx(static_cast<double>(want.log_evidence)).epsilon(1e-11));
    // the last population's posterior
    const Pmf a = g.marginal(r.a)[0];
    for (std::int64_t k = a.lo(); k <= a.hi(); ++k) {
      const double p = static_cast<double>(want.a_law[static_cast<std::size_t>(k)]);
      if (p > 1e-8) CHECK(pdf(a, k) == Approx(p).epsilon(1e-9));
    }
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("joint laws: with P particles the migration filter's log-evidence spread is 0", "[runtime][joint]") {
  const mj::Migration w;
  Graph g(6, 3, Device::cpu);
  const mj::MigrationRun r = mj::run_migration(g, w);
  for (std::size_t i = 1; i < 6; ++i) CHECK(total_log_likelihood(r.observations, i) == total_log_likelihood(r.observations, 0));
  // draws from the joint posterior, then the evidence of one more observation stays exact
  const auto a = g.value(r.a);
  const Observation o = g.observe(g.binomial(r.b, w.p), 11);
  CHECK(o.exact());
  for (std::size_t i = 0; i < 6; ++i) CHECK(std::isfinite(o[i]));
  (void)a;
}

TEST_CASE("joint laws: an HMM with unknown count rates, exact evidence and rate posteriors against enumeration",
          "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  const mj::RateHmm h;
  const RateHmmEnumeration& want = rate_hmm_reference();
  {
    Graph g(3, 1, Device::cpu);
    g.strict(true);
    const mj::RateHmmRun r = mj::run_rate_hmm(g, h);
    for (const auto& o : r.observations) REQUIRE(o.exact());
    for (std::size_t i = 0; i < 3; ++i)
      CHECK(total_log_likelihood(r.observations, i) == Approx(static_cast<double>(want.log_evidence)).epsilon(1e-11));
    for (std::size_t k = 0; k < 2; ++k) {
      const Pmf post = g.marginal(r.rates[k])[0];
      for (std::int64_t v = post.lo(); v <= post.hi(); ++v) {
        const double p = static_cast<double>(want.rate_posterior[k][static_cast<std::size_t>(v)]);
        // within 1e-9 relative, or 1e-15 absolute (rounding of the table's sums, relative to its largest entries)
        CHECK(std::abs(pdf(post, v) - p) <= 1e-9 * p + 1e-15);
      }
    }
    // the rates touch each other and the state through their joint law
    const auto t = g.touches({r.rates[0]}, {r.rates[1], r.state});
    CHECK(t[0] == std::vector<std::size_t>{0, 1});
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("joint laws: the wet-grass diamond's posterior is the enumerated fraction", "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  const mj::WetGrass n;
  const auto counts = wet_grass_counts(n);
  const double unit = 1e8;  // 100^4
  {
    Graph g(4, 7, Device::cpu);
    g.strict(true);
    const mj::WetGrassRun r = mj::run_wet_grass(g, n);
    REQUIRE(r.wet.exact());
    for (std::size_t i = 0; i < 4; ++i) CHECK(r.wet[i] == Approx(std::log(double(counts[0]) / unit)).epsilon(1e-14));
    CHECK(pdf(g.marginal(r.rain)[0], 1) == Approx(double(counts[1]) / double(counts[0])).epsilon(1e-14));
    CHECK(pdf(g.marginal(r.sprinkler)[0], 1) == Approx(double(counts[2]) / double(counts[0])).epsilon(1e-14));
    CHECK(pdf(g.marginal(r.cloudy)[0], 1) == Approx(double(counts[3]) / double(counts[0])).epsilon(1e-14));
    // the classic numbers
    CHECK(double(counts[1]) / double(counts[0]) == Approx(0.7079).epsilon(1e-4));
    // realizing cloudy slices the joint law: rain's law is then P(rain | cloudy = c, wet), still exact
    const auto c = g.value(r.cloudy);
    const auto rain = g.marginal(r.rain);
    for (std::size_t i = 0; i < 4; ++i) {
      std::int64_t both = 0, all = 0;
      for (int s = 0; s < 2; ++s)
        for (int rr = 0; rr < 2; ++rr) {
          const std::int64_t ps = s ? n.sprinkler[c[i]] : 100 - n.sprinkler[c[i]];
          const std::int64_t pr = rr ? n.rain[c[i]] : 100 - n.rain[c[i]];
          all += ps * pr * n.wet[2 * s + rr];
          if (rr) both += ps * pr * n.wet[2 * s + rr];
        }
      CHECK(pdf(rain[i], 1) == Approx(double(both) / double(all)).epsilon(1e-14));
    }
    // resampling moves the joint laws with the particles
    const std::vector<std::size_t> ancestors{3, 3, 0, 1};
    g.resample(ancestors);
    const auto moved = g.marginal(r.rain);
    const auto c2 = g.value(r.cloudy);
    for (std::size_t i = 0; i < 4; ++i) {
      CHECK(c2[i] == c[ancestors[i]]);
      CHECK(pdf(moved[i], 1) == pdf(rain[ancestors[i]], 1));
    }
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("joint laws: beyond the budget the runtime samples and says so; strict mode refuses", "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  {
    // the populations' joint law does not fit in 4 KiB: the coupling is not formed, the old fallbacks report it
    Graph g(1, 5, with_budget(4096));
    const mj::MigrationRun r = mj::run_migration(g, mj::Migration{});
    bool reported = false;
    for (const auto& o : r.observations) reported = reported || !o.exact();
    CHECK(reported);
    for (const auto& o : r.observations) CHECK(!std::isnan(o[0]));
  }
  {
    Graph g(1, 5, with_budget(4096));
    g.strict(true);
    CHECK_THROWS_AS(mj::run_migration(g, mj::Migration{}), inexact_error);
  }
  {
    // an emission's three parents need a joint law: beyond the budget they are drawn, reported as joint_limit
    Graph g(2, 5, with_budget(4096));
    const mj::RateHmmRun r = mj::run_rate_hmm(g, mj::RateHmm{});
    REQUIRE_FALSE(r.observations[0].exact());
    for (const auto& s : r.observations[0].exactness().sampled) CHECK(s.reason == Fallback::joint_limit);
    for (const auto& o : r.observations)
      for (std::size_t i = 0; i < 2; ++i) CHECK(std::isfinite(o[i]));
  }
  {
    Graph g(1, 5, Device::cpu, with_budget(4096));
    g.strict(true);
    CHECK_THROWS_AS(mj::run_rate_hmm(g, mj::RateHmm{}), inexact_error);
  }
  {
    Graph g(1, 5, with_budget(0));  // joint laws off: the old fallbacks
    const mj::WetGrassRun r = mj::run_wet_grass(g, mj::WetGrass{});
    REQUIRE_FALSE(r.wet.exact());
    CHECK(r.wet.exactness().sampled[0].reason == Fallback::joint_limit);
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("joint laws off: the migration filter on a CUDA graph draws and weighs as on the host",
          "[runtime][joint][device]") {
  // the fallback thins A - M, whose device law's box starts below 0 with zeros there (a host Pmf trims them); the
  // thinning takes the law by its support, as the host does
  if (tally::test::skip_without_device()) return;
  const std::size_t P = 64;
  Graph host(P, 11, Device::cpu, with_budget(0)), device(P, 11, Device::cuda, with_budget(0));
  const mj::MigrationRun h = mj::run_migration(host, mj::Migration{}), d = mj::run_migration(device, mj::Migration{});
  REQUIRE(h.observations.size() == d.observations.size());
  for (std::size_t k = 0; k < h.observations.size(); ++k) {
    INFO("observation " << k);
    CHECK(h.observations[k].exact() == d.observations[k].exact());
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ": host " << h.observations[k][i] << ", device " << d.observations[k][i]);
      REQUIRE(std::isfinite(h.observations[k][i]));
      REQUIRE(std::abs(d.observations[k][i] - h.observations[k][i]) <= 1e-9 * std::max(1.0, std::abs(h.observations[k][i])));
    }
  }
  CHECK_FALSE(h.observations.back().exact());  // the coupled counts were sampled, and said so
  CHECK(host.value(h.a) == device.value(d.a));
  CHECK(host.value(h.b) == device.value(d.b));
}

TEST_CASE("joint laws: a selected thinning Binomial(x, q_s) and dropped members are summed out", "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  {
    Graph g;
    g.strict(true);
    const Variable s = g.assume(Bernoulli(0.3));
    const Variable x = g.assume(Binomial(10, 0.5));
    const Variable y = g.binomial(x, s, {0.2, 0.9});
    const double got = g.observe(y, 4)[0];
    double want = 0;
    for (int sv = 0; sv < 2; ++sv)
      for (std::int64_t xv = 0; xv <= 10; ++xv)
        want += (sv ? 0.3 : 0.7) * pdf(to_pmf(Binomial(10, 0.5)), xv) * pdf(to_pmf(Binomial(xv, sv ? 0.9 : 0.2)), 4);
    CHECK(got == Approx(std::log(want)).epsilon(1e-13));
    // P(s = 1 | y = 4)
    double s1 = 0;
    for (std::int64_t xv = 0; xv <= 10; ++xv) s1 += 0.3 * pdf(to_pmf(Binomial(10, 0.5)), xv) * pdf(to_pmf(Binomial(xv, 0.9)), 4);
    CHECK(pdf(g.marginal(s)[0], 1) == Approx(s1 / want).epsilon(1e-13));
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("marginal() of a variable whose marginalized child absorbed observations is exact; with joint laws "
          "off it prunes, reported by the next observation, and strict mode refuses", "[runtime][joint]") {
  for (const bool joint_laws : {true, false}) {
    INFO("joint laws " << joint_laws);
    Graph g(1, 2, with_budget(joint_laws ? std::int64_t{256} << 20 : 0));
    const Variable x = g.assume(Poisson(6.0));
    const Variable y = g.assume(x, Thinning(0.5));
    g.name(y, "y");
    g.observe(g.assume(y, Thinning(0.5)), 1);  // y is x's marginalized child, with what it absorbed
    const Pmf m = g.marginal(x)[0];
    const Observation o = g.observe(g.assume(Binomial(3, 0.5)), 1);
    if (joint_laws) {
      // x | Binomial(x, .25) = 1: 1 + Poisson(4.5)
      CHECK(o.exact());
      for (std::int64_t k = 1; k < 20; ++k) CHECK(pdf(m, k) == Approx(pdf(to_pmf(Poisson(4.5)), k - 1)).epsilon(1e-10));
    } else {
      REQUIRE(o.exactness().sampled.size() == 1);
      CHECK(o.exactness().sampled[0].variable == "y");
      CHECK(o.exactness().sampled[0].reason == Fallback::joint_limit);
    }
  }
  {
    Graph g(1, 2, with_budget(0));
    g.strict(true);
    const Variable x = g.assume(Poisson(6.0));
    const Variable y = g.assume(x, Thinning(0.5));
    g.observe(g.assume(y, Thinning(0.5)), 1);
    CHECK_THROWS_AS(g.marginal(x), inexact_error);
  }
}
TEST_CASE("joint laws: thinning a coordinate in place is split() with the kept part summed out", "[runtime][joint]") {
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const Coordinates lo{std::int64_t(gen() % 4), std::int64_t(gen() % 3), -2};
    const Coordinates shape{1 + std::int64_t(gen() % 9), 1 + std::int64_t(gen() % 5), 1 + std::int64_t(gen() % 4)};
    Eigen::VectorXd w(shape[0] * shape[1] * shape[2]);
    for (auto& x : w) x = std::exp(-40.0 * u(gen)) * (u(gen) < 0.9);
    w[0] = 1.0;
    const JointPmf d(lo, shape, w, 0.5, 1e-14);
    const int axis = int(gen() % 2);
    const double q = u(gen);
    const JointPmf got = tally::runtime::detail::thin_in_place(d, axis, q);
    // split puts X - Y at axis and appends Y: with X - Y summed out, Y is the last axis
    const JointPmf want = marginalize_out(split(d, axis, q), axis);
    // compare entry by entry through log_pdf, in the axis order of got
    for (std::int64_t i0 = got.lo(0); i0 <= got.hi(0); ++i0)
      for (std::int64_t i1 = got.lo(1); i1 <= got.hi(1); ++i1)
        for (std::int64_t i2 = got.lo(2); i2 <= got.hi(2); ++i2) {
          const std::vector<std::int64_t> at{i0, i1, i2};
          const std::vector<std::int64_t> w_at = axis == 0 ? std::vector<std::int64_t>{i1, i2, i0} : std::vector<std::int64_t>{i0, i2, i1};
          const double g = log_pdf(got, at), e = log_pdf(want, w_at);
          if (e == -std::numeric_limits<double>::infinity()) {
            CHECK(g == e);
          } else {
            CHECK(g == Approx(e).margin(1e-12));
          }
        }
    CHECK(got.error_bound() == d.error_bound());
    // and the split itself
    const JointPmf fast = tally::runtime::detail::split_in_place(d, axis, q), slow = split(d, axis, q);
    REQUIRE(fast.rank() == 4);
    for (std::int64_t i0 = fast.lo(0); i0 <= fast.hi(0); ++i0)
      for (std::int64_t i1 = fast.lo(1); i1 <= fast.hi(1); ++i1)
        for (std::int64_t i2 = fast.lo(2); i2 <= fast.hi(2); ++i2)
          for (std::int64_t i3 = fast.lo(3); i3 <= fast.hi(3); ++i3) {
            const std::vector<std::int64_t> at{i0, i1, i2, i3};
            const double f = log_pdf(fast, at), e = log_pdf(slow, at);
            if (e == -std::numeric_limits<double>::infinity()) {
              CHECK(f == e);
            } else {
              CHECK(f == Approx(e).margin(1e-12));
            }
          }
  }
}

TEST_CASE("joint laws: the carried error bound covers the evidence's true error on the three examples, within 1e3",
          "[runtime][joint][bound]") {
  // Each likelihood's bound, summed, bounds the log-evidence's error (each is a relative error of one factor). The
  // bound counts truncation, not rounding: the true error is taken as truncation's where it is above rounding's
  // (about 1e-14 here), and at the default tolerance, where it is not, the bound is compared with rounding's.
  auto bound_of = [](const std::vector<Observation>& obs) {
    double b = 0;
    for (const auto& o : obs) b += o.exactness().truncation_error;
    return b;
  };
  constexpr double rounding = 1e-14;
  const mj::Migration w;
  const MigrationForward& migration = migration_reference();
  for (const double tolerance : {1e-15, 1e-9, 1e-6}) {
    Truncation t;
    t.tolerance = tolerance;
    Graph g(1, 1, t);
    const mj::MigrationRun r = mj::run_migration(g, w);
    const double actual = std::abs(total_log_likelihood(r.observations, 0) - static_cast<double>(migration.log_evidence));
    const double bound = bound_of(r.observations);
    INFO("migration, tolerance " << tolerance << ": actual " << actual << ", bound " << bound);
    CHECK(actual <= bound + rounding);
    // a CUDA graph (TALLY_GRAPH_DEVICE=cuda) does not follow a prior's tails through the conditionings outside joint
    // laws (Truncation::track_dropped): sound there, not within 1e3
    if (g.backend() == tally::gpu::Backend::cpu)
      CHECK(bound <= 1e3 * std::max(actual, rounding));  // before: 3.7e3 to 8.7e4 times
    std::printf("error bound: migration, tolerance %g: actual %.3g, bound %.3g\n", tolerance, actual, bound);
  }
  const mj::RateHmm h;
  const RateHmmEnumeration& hmm = rate_hmm_reference();
  for (const double tolerance : {1e-15, 1e-9, 1e-6}) {
    Truncation t;
    t.tolerance = tolerance;
    Graph g(1, 1, t);
    const mj::RateHmmRun r = mj::run_rate_hmm(g, h);
    const double actual = std::abs(total_log_likelihood(r.observations, 0) - static_cast<double>(hmm.log_evidence));
    const double bound = bound_of(r.observations);
    INFO("rate HMM, tolerance " << tolerance << ": actual " << actual << ", bound " << bound);
    CHECK(actual <= bound + rounding);
    CHECK(bound <= 1e3 * std::max(actual, rounding));  // before: 2.6e8 times, and infinite at 1e-9 and 1e-6
    std::printf("error bound: rate HMM, tolerance %g: actual %.3g, bound %.3g\n", tolerance, actual, bound);
  }
  {
    Graph g;  // bounded laws only: nothing truncated, the bound is 0 and the error rounding
    const mj::WetGrassRun r = mj::run_wet_grass(g, mj::WetGrass{});
    CHECK(r.wet.exactness().truncation_error == 0.0);
    CHECK(std::abs(r.wet[0] - std::log(0.6471)) < 1e-15);
  }
}

TEST_CASE("joint laws: on random coupled programs the carried error bound is never below the true error",
          "[runtime][joint][bound]") {
  // Random migrations and rate HMMs (parameters, lengths and data drawn at random, the data from the model), each
  // at a coarse tolerance (so that truncation's error is far above rounding's), against the enumerations above.
  std::mt19937_64 gen(1717);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto draw_binomial = [&](std::int64_t n, double q) { return std::binomial_distribution<std::int64_t>(n, q)(gen); };
  auto draw_poisson = [&](double r) { return std::poisson_distribution<std::int64_t>(r)(gen); };
  double worst = 0.0;
  for (int program = 0; program < 4; ++program) {
    mj::Migration w;
    w.lambda_a = 5 + 20 * u(gen), w.lambda_b = 3 + 10 * u(gen), w.m = 0.1 + 0.4 * u(gen), w.s = 0.6 + 0.35 * u(gen);
    w.iota_a = 1 + 5 * u(gen), w.iota_b = 1 + 5 * u(gen), w.p = 0.3 + 0.6 * u(gen);
    const std::size_t seasons = 2 + static_cast<std::size_t>(3 * u(gen));
    w.ya.clear(), w.yb.clear();
    std::int64_t a = draw_poisson(w.lambda_a), b = draw_poisson(w.lambda_b);
    for (std::size_t t = 0; t < seasons; ++t) {
      if (t > 0) {
        const std::int64_t moved = draw_binomial(a, w.m);
        a = draw_binomial(a - moved, w.s) + draw_poisson(w.iota_a);
        b = draw_binomial(b + moved, w.s) + draw_poisson(w.iota_b);
      }
      w.ya.push_back(draw_binomial(a, w.p));
      w.yb.push_back(draw_binomial(b, w.p));
    }
    const Real exact = migration_forward(w, 90).log_evidence;
    Truncation t;
    t.tolerance = std::pow(10.0, -3.0 - 5.0 * u(gen));
    Graph g(1, 1, t);
    const mj::MigrationRun r = mj::run_migration(g, w);
    double bound = 0;
    for (const auto& o : r.observations) bound += o.exactness().truncation_error;
    const double actual = std::abs(total_log_likelihood(r.observations, 0) - static_cast<double>(exact));
    INFO("migration " << program << ", tolerance " << t.tolerance << ": actual " << actual << ", bound " << bound);
    CHECK(actual <= bound + 1e-13);
    if (actual > 1e-11) worst = std::max(worst, bound / actual);
    t.track_dropped = false;  // the cut mass as spread bound only: sound too (and far looser)
    Graph loose(1, 1, t);
    const mj::MigrationRun s = mj::run_migration(loose, w);
    double loose_bound = 0;
    for (const auto& o : s.observations) loose_bound += o.exactness().truncation_error;
    CHECK(std::abs(total_log_likelihood(s.observations, 0) - static_cast<double>(exact)) <= loose_bound + 1e-13);
    CHECK(loose_bound >= bound);
  }
  for (int program = 0; program < 4; ++program) {
    mj::RateHmm h;
    const double stay0 = 0.5 + 0.45 * u(gen), stay1 = 0.5 + 0.45 * u(gen);
    h.T = (Eigen::MatrixXd(2, 2) << stay0, 1 - stay0, 1 - stay1, stay1).finished();
    h.q = Eigen::Vector2d(1.0 / (2 + 3 * u(gen)), 1.0 / (6 + 8 * u(gen)));
    h.init = Eigen::Vector2d(0.5, 0.5);
    const std::int64_t rate[2] = {std::geometric_distribution<std::int64_t>(h.q[0])(gen),
                                  std::geometric_distribution<std::int64_t>(h.q[1])(gen)};
    h.y.clear();
    int state = u(gen) < 0.5 ? 0 : 1;
    const std::size_t steps = 5 + static_cast<std::size_t>(10 * u(gen));
    for (std::size_t k = 0; k < steps; ++k) {
      if (k > 0 && u(gen) > h.T(state, state)) state = 1 - state;
      h.y.push_back(draw_poisson(static_cast<double>(rate[state])));
    }
    // the Geometric tails beyond r_max are below 1e-25
    const auto r_max = [&](double q) { return static_cast<std::int64_t>(std::ceil(std::log(1e-25) / std::log1p(-q))); };
    const Real exact = rate_hmm_enumeration(h, r_max(h.q[0]), r_max(h.q[1])).log_evidence;
    Truncation t;
    t.tolerance = std::pow(10.0, -3.0 - 5.0 * u(gen));
    Graph g(1, 1, t);
    const mj::RateHmmRun r = mj::run_rate_hmm(g, h);
    double bound = 0;
    for (const auto& o : r.observations) bound += o.exactness().truncation_error;
    const double actual = std::abs(total_log_likelihood(r.observations, 0) - static_cast<double>(exact));
    INFO("rate HMM " << program << ", tolerance " << t.tolerance << ": actual " << actual << ", bound " << bound);
    CHECK(actual <= bound + 1e-13);
    if (actual > 1e-11) worst = std::max(worst, bound / actual);
  }
  std::printf("error bound on random coupled programs: largest bound / true error %.3g\n", worst);
}

TEST_CASE("joint laws: children of several parents check their arguments before anything changes", "[runtime][joint]") {
  const auto live = Graph::live_nodes();
  {
    Graph g;
    const Variable s = g.assume(Categorical(Eigen::Vector3d(0.2, 0.3, 0.5)));
    const Variable r = g.assume(Geometric(0.5));
    CHECK_THROWS_AS(g.poisson(s, {}), shape_error);
    CHECK_THROWS_AS(g.poisson(s, {r}, -1.0), domain_error);
    CHECK_THROWS_AS(g.binomial(r, s, {}), shape_error);
    CHECK_THROWS_AS(g.binomial(r, s, {0.5, 1.5}), domain_error);
    Graph other;
    CHECK_THROWS_AS(g.poisson(s, {other.assume(Geometric(0.5))}), usage_error);
    // a state beyond the rates: a clear error when the law is formed, and the graph goes on
    CHECK_THROWS_AS(g.observe(g.poisson(s, {r, r}), 1), domain_error);
    CHECK(std::isfinite(g.observe(g.poisson(s, {r, r, r}), 1)[0]));
  }
  CHECK(Graph::live_nodes() == live);
}


TEST_CASE("joint laws: the outer product of two laws bounds its error with both parts of each bound",
          "[runtime][joint][bound]") {
  // exact laws A and B (random tables); the stored laws keep part of each, the dropped measure is another part
  // (kept where it was), and a third part is only counted in the spread bound: the product's bound must cover
  // A (x) B - a (x) b, and its dropped measure must lie within it entry by entry.
  std::mt19937_64 gen(17);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int round = 0; round < 20; ++round) {
    struct Split {
      JointPmf law;
      Eigen::VectorXd exact;  // over the law's box
    };
    auto make = [&](std::int64_t n) {
      Eigen::VectorXd exact(n), kept(n), dropped = Eigen::VectorXd::Zero(n);
      double spread = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        exact[i] = std::pow(10.0, -3.0 * u(gen));
        const double r = u(gen);
        kept[i] = exact[i];
        if (i > 0 && i + 1 < n && r < 0.2) dropped[i] = exact[i], kept[i] = 0;        // located
        else if (i > 0 && i + 1 < n && r < 0.3) spread += exact[i] * (1 - 1e-3), kept[i] = exact[i] * 1e-3;  // spread
      }
      const JointPmf law({0}, {n}, kept, 0.0, spread / kept.sum());
      const std::optional<JointPmf> x = dropped.sum() > 0 ? std::optional(JointPmf({0}, {n}, dropped)) : std::nullopt;
      return Split{law.with_dropped(x), exact};
    };
    const std::int64_t na = 3 + static_cast<std::int64_t>(5 * u(gen)), nb = 3 + static_cast<std::int64_t>(5 * u(gen));
    const Split a = make(na), b = make(nb);
    const JointPmf p = tally::runtime::detail::joint_steps::outer(a.law, b.law, Truncation{});
    double l1 = 0, mass = 0, beyond = 0;
    for (std::int64_t i = 0; i < na; ++i)
      for (std::int64_t j = 0; j < nb; ++j) {
        const std::vector<std::int64_t> at{i, j};
        const double got = pdf(p, at), want = a.exact[i] * b.exact[j];
        const double x = p.dropped() ? pdf(*p.dropped(), at) : 0.0;
        l1 += std::abs(want - got);
        mass += got;
        beyond += std::max(0.0, x - (want - got));
      }
    INFO("round " << round << ": true error " << l1 / mass << ", bound " << p.error_bound());
    REQUIRE(l1 / mass <= p.error_bound() * (1 + 1e-12) + 1e-14);  // rounding aside
    REQUIRE(beyond <= 1e-12 * mass);
  }
}

TEST_CASE("an observed thinning with q near 1e-42 bounds its likelihood without leaving int64", "[runtime][joint][bound]") {
  // fuzz/corpus/engine/regress-ubsan-binomial-sup-44cd1f200b: sup_n Binomial(y; n, q) was searched near n = y / q,
  // converted to int64 (5e42: undefined behaviour); past 2^52 it is bounded by Poisson(y; y) e^{q y}
  Graph g(1, 3);
  const Variable x = g.assume(Poisson(3.0));
  const Variable y = g.assume(x, Thinning(1.1298353538785515e-42));
  const Observation o = g.observe(y, 1);
  REQUIRE(std::isfinite(o[0]));
  CHECK(o[0] == Approx(std::log(3.0 * 1.1298353538785515e-42)).epsilon(1e-9));
  CHECK(o.exactness().exact());
  CHECK(o.exactness().truncation_error >= 0.0);  // sound, if loose: a likelihood near 1e-41 against flushed mass
}

}  // namespace test_joint_programs
