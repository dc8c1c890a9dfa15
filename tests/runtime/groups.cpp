// Graphs of several groups: per-group and per-particle parameters kept on the exact path, each group's weights,
// evidence and resampling within itself, and the refusals (mixing groups, bad sizes).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_groups {

using namespace tally;
using namespace tally::runtime;

namespace {

double log_poisson(std::int64_t k, double mean) {
  const double x = static_cast<double>(k);
  return x * std::log(mean) - mean - std::lgamma(x + 1.0);
}

/// x ~ Poisson(lambda_g) per group, y ~ Binomial(x, 0.5) observed at v: each particle's log-weight is
/// log Poisson(v; lambda_g / 2), and x's posterior mean v + lambda_g / 2, exactly (the exact path, nothing drawn).
void check_per_group_roots(Device device) {
  const std::size_t groups = 7, size = 5;
  Graph g(Groups{groups, size}, 3, device);
  g.strict(true);
  REQUIRE(g.groups() == groups);
  REQUIRE(g.group_size() == size);
  REQUIRE(g.particles() == groups * size);
  std::vector<Poisson> laws;
  for (std::size_t k = 0; k < groups; ++k) laws.emplace_back(2.0 + 3.0 * double(k / 2));  // equal neighbours too
  const Variable x = g.assume(laws);
  const Variable y = g.binomial(x, 0.5);
  const std::int64_t v = 4;
  const auto o = g.observe(y, v);
  CHECK(o.exact());
  const auto lw = g.log_weights();
  const auto posterior = g.marginal(x);
  for (std::size_t i = 0; i < g.particles(); ++i) {
    const double lambda = laws[i / size].rate();
    REQUIRE(lw[i] == Approx(log_poisson(v, lambda / 2)).epsilon(1e-12));
    REQUIRE(mean(posterior[i]) == Approx(double(v) + lambda / 2).epsilon(1e-12));
  }
  // each group's evidence and ESS (all particles of a group alike: S, and the group's log-likelihood)
  const auto r = g.resample_groups(0.0);
  const auto mean_weight = r.log_mean_weight.to_host(), ess = r.ess.to_host();
  REQUIRE(mean_weight.size() == groups);
  for (std::size_t k = 0; k < groups; ++k) {
    REQUIRE(mean_weight[k] == Approx(log_poisson(v, laws[k].rate() / 2)).epsilon(1e-12));
    REQUIRE(ess[k] == Approx(double(size)));
  }
  CHECK(r.ancestors.empty());
  CHECK(g.log_weights() == lw);  // threshold 0: only summarized
}

/// Bootstrap groups: x drawn per particle, weighted by its observation; each group's log-evidence increment is the
/// log of the mean of its particles' weights, and the ancestors stay in their groups.
void check_group_resampling(Device device, gpu::Resampler kind) {
  const std::size_t groups = 6, size = 40;
  Graph g(Groups{groups, size}, 11, device);
  std::vector<Binomial> laws;
  for (std::size_t k = 0; k < groups; ++k) laws.emplace_back(30, 0.1 + 0.15 * double(k));
  const Variable x = g.assume(laws);
  const auto values = g.value(x);  // drawn
  std::vector<std::int64_t> observed(g.particles());
  for (std::size_t i = 0; i < observed.size(); ++i) observed[i] = values[i] / 2;
  const Variable y = g.binomial(x, 0.5);
  g.observe(y, observed);
  const auto lw = g.log_weights();
  const auto r = g.resample_groups(1.0, kind);
  const auto mean_weight = r.log_mean_weight.to_host(), ess = r.ess.to_host();
  const auto flags = r.resampled.to_host();
  const auto ancestors = r.ancestors.to_host();
  REQUIRE(ancestors.size() == g.particles());
  for (std::size_t k = 0; k < groups; ++k) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < size; ++j) m = std::max(m, lw[k * size + j]);
    double s1 = 0, s2 = 0;
    for (std::size_t j = 0; j < size; ++j) {
      s1 += std::exp(lw[k * size + j] - m);
      s2 += std::exp(2 * (lw[k * size + j] - m));
    }
    REQUIRE(mean_weight[k] == Approx(m + std::log(s1 / double(size))).epsilon(1e-12));
    REQUIRE(ess[k] == Approx(s1 * s1 / s2).epsilon(1e-12));
    REQUIRE(flags[k] == 1);
  }
  const auto after = g.value(x);
  for (std::size_t i = 0; i < g.particles(); ++i) {
    REQUIRE(ancestors[i] / size == i / size);
    REQUIRE(std::isfinite(lw[ancestors[i]]));
    REQUIRE(after[i] == values[ancestors[i]]);
  }
  for (const double l : g.log_weights()) REQUIRE(l == 0.0);
}

}  // namespace

TEST_CASE("Per-group parameters keep the exact path, with each group's evidence", "[runtime][groups]") {
  check_per_group_roots(Device::cpu);
}

TEST_CASE("device: per-group parameters keep the exact path, with each group's evidence",
          "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_per_group_roots(Device::cuda);
}

TEST_CASE("Each group is resampled within itself by its own weights", "[runtime][groups]") {
  check_group_resampling(Device::cpu, gpu::Resampler::systematic);
  check_group_resampling(Device::cpu, gpu::Resampler::multinomial);
}

TEST_CASE("device: each group is resampled within itself by its own weights", "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_group_resampling(Device::cuda, gpu::Resampler::systematic);
  check_group_resampling(Device::cuda, gpu::Resampler::multinomial);
}

TEST_CASE("Per-particle laws, one group, and a threshold on each group's ESS", "[runtime][groups]") {
  // per-particle laws: one per particle of a graph without groups
  Graph one(4, 5);
  const Variable x = one.assume(std::vector<Pmf>{Pmf::point(1), Pmf::point(2), Pmf::point(3), Pmf::point(4)});
  CHECK(one.value(x) == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(one.groups() == 1);
  // at threshold 0.5, a group of equal weights (ESS 4) is not resampled; one whose weight one particle holds is
  Graph g(Groups{2, 4}, 9);
  const Variable c = g.assume(std::vector<Pmf>(8, Pmf::point(0)));
  g.observe(g.binomial(g.affine(c, 1, 3), 0.5), std::vector<std::int64_t>{1, 1, 1, 1, 1, 4, 4, 4});
  const auto r = g.resample_groups(0.5);
  CHECK(r.resampled.to_host() == std::vector<std::int64_t>{0, 1});
  const auto a = r.ancestors.to_host();
  for (std::size_t i = 0; i < 4; ++i) CHECK(a[i] == i);
  for (std::size_t i = 4; i < 8; ++i) CHECK(a[i] == 4);  // 4 > 3 is impossible: particle 4 holds all the weight
  const auto lw = g.log_weights();
  for (std::size_t i = 0; i < 4; ++i) CHECK(lw[i] == Approx(std::log(3.0 / 8.0)));
  for (std::size_t i = 4; i < 8; ++i) CHECK(lw[i] == 0.0);
}

TEST_CASE("Groups refuse what would mix them, and bad sizes", "[runtime][groups]") {
  REQUIRE_THROWS_AS(Graph(Groups{0, 4}, 1), domain_error);
  REQUIRE_THROWS_AS(Graph(Groups{4, 0}, 1), domain_error);
  REQUIRE_THROWS_AS(Graph(Groups{std::size_t{1} << 40, std::size_t{1} << 40}, 1), domain_error);
  Graph g(Groups{3, 2}, 1);
  REQUIRE_THROWS_AS(g.assume(std::vector<Poisson>{Poisson(1.0), Poisson(2.0)}), shape_error);
  REQUIRE_THROWS_AS(g.assume(std::vector<Pmf>{}), shape_error);
  const Variable x = g.assume(std::vector<Poisson>{Poisson(1.0), Poisson(2.0), Poisson(3.0)});
  REQUIRE_THROWS_AS(g.resample_by_weight(), usage_error);
  REQUIRE_THROWS_AS(g.resample({0, 1, 2, 3, 4, 0}), domain_error);  // particle 5's ancestor in group 0
  REQUIRE_THROWS_AS(g.resample_groups(-1.0), domain_error);
  g.resample({1, 1, 2, 2, 5, 4});  // still usable, and within groups is fine
  CHECK(g.value(x).size() == 6);
}

namespace {

/// models/population's recursion, N_t = Binomial(N_{t-1}, phi) + Poisson(iota), y_t ~ Binomial(N_t, p), with (phi, p)
/// per group: each group's log-likelihood, from the graph's log-weights of its first particle.
std::vector<double> population_groups(Device device, const std::vector<double>& phi, const std::vector<double>& p,
                                      std::size_t size) {
  const std::vector<std::int64_t> y{36, 28, 29, 29, 18, 24};
  Graph g(Groups{phi.size(), size}, 5, device);
  g.strict(true);
  std::vector<Thinning> survive, detect;
  for (std::size_t k = 0; k < phi.size(); ++k) {
    survive.emplace_back(phi[k]);
    detect.emplace_back(p[k]);
  }
  Variable n = g.assume(Poisson(50.0));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) n = g.add(g.assume(n, survive), g.assume(Poisson(10.0)));
    const auto o = g.observe(g.assume(n, detect), y[t]);
    REQUIRE(o.exact());
  }
  const auto lw = g.log_weights();
  std::vector<double> out;
  for (std::size_t k = 0; k < phi.size(); ++k) {
    for (std::size_t j = 1; j < size; ++j) REQUIRE(lw[k * size + j] == lw[k * size]);  // exact: no draw
    out.push_back(lw[k * size]);
  }
  return out;
}

/// The same with one group's constant parameters: the P = 1 graph.
double population_one(double phi, double p) {
  const std::vector<std::int64_t> y{36, 28, 29, 29, 18, 24};
  Graph g(1, 5);
  g.strict(true);
  Variable n = g.assume(Poisson(50.0));
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) n = g.add(g.assume(n, Thinning(phi)), g.assume(Poisson(10.0)));
    g.observe(g.assume(n, Thinning(p)), y[t]);
  }
  return g.log_weights()[0];
}

void check_population_groups(Device device) {
  std::mt19937_64 gen(Catch::rngSeed() + 77);
  std::uniform_real_distribution<double> u(0.3, 0.95);
  std::vector<double> phi, p;
  for (int k = 0; k < 9; ++k) {
    phi.push_back(u(gen));
    p.push_back(u(gen));
  }
  phi[3] = phi[2];  // equal neighbours share their laws
  p[3] = p[2];
  const auto grouped = population_groups(device, phi, p, 3);
  for (std::size_t k = 0; k < phi.size(); ++k)
    REQUIRE(grouped[k] == Approx(population_one(phi[k], p[k])).epsilon(1e-12));
}

}  // namespace

TEST_CASE("A thinning per group keeps the exact path: each group's likelihood is its own graph's",
          "[runtime][groups]") {
  check_population_groups(Device::cpu);
}

TEST_CASE("device: a thinning per group keeps the exact path: each group's likelihood is its own graph's",
          "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_population_groups(Device::cuda);
}

TEST_CASE("A thinning per group of realized counts, drawn and observed", "[runtime][groups]") {
  for (const Device device : {Device::cpu, Device::cuda}) {
    if (device == Device::cuda && !gpu::cuda_available()) continue;
    Graph g(Groups{3, 100}, 8, device);
    std::vector<std::int64_t> counts(g.particles());
    for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<std::int64_t>(i % 17);
    const Variable x = g.constant(counts);
    const std::vector<Thinning> keep{Thinning(0.0), Thinning(1.0), Thinning(0.25)};
    const Variable y = g.assume(x, keep);
    const auto v = g.value(y);  // drawn: all lost, all kept, a quarter kept
    for (std::size_t i = 0; i < 100; ++i) REQUIRE(v[i] == 0);
    for (std::size_t i = 100; i < 200; ++i) REQUIRE(v[i] == counts[i]);
    for (std::size_t i = 200; i < 300; ++i) REQUIRE((v[i] >= 0 && v[i] <= counts[i]));
    const Variable z = g.assume(x, keep);
    g.observe(z, 2);
    const auto lw = g.log_weights();
    for (std::size_t i = 0; i < g.particles(); ++i) {
      const double q = keep[i / 100].keep;
      const double expected = log_pdf(Binomial(counts[i], q), 2);
      if (std::isinf(expected))
        REQUIRE(lw[i] == expected);
      else
        REQUIRE(lw[i] == Approx(expected).epsilon(1e-12));
    }
  }
}

TEST_CASE("A thinning per group refuses other sizes, and joins a joint law exactly, each group with its own",
          "[runtime][groups]") {
  Graph g(Groups{2, 3}, 4);
  const Variable x = g.assume(Poisson(5.0));
  REQUIRE_THROWS_AS(g.assume(x, std::vector<Thinning>{Thinning(0.5)}), shape_error);
  REQUIRE_THROWS_AS(g.assume(x, std::vector<Thinning>(6, Thinning(0.5))), shape_error);
  // x and its child y, which lives on, kept in one joint law by their sum; w a thinning of x per group
  const Variable y = g.binomial(x, 0.5);
  const Variable s = g.add(x, y);
  g.marginal(s);
  g.strict(true);
  const double q[] = {0.2, 0.7};
  const Variable w = g.assume(x, std::vector<Thinning>{Thinning(q[0]), Thinning(q[1])});
  const auto o = g.observe(w, 1);
  CHECK(o.exact());
  // w ~ Poisson(5 q_g) in group g: log P(w = 1) = log(5 q_g) - 5 q_g
  for (std::size_t i = 0; i < 6; ++i) CHECK(o[i] == Approx(std::log(5.0 * q[i / 3]) - 5.0 * q[i / 3]).epsilon(1e-12));
  // and the sum's law given w = 1, exactly: x | w = 1 is 1 + Poisson(5 (1 - q_g)), y | x ~ Binomial(x, 1/2)
  const auto m = g.marginal(s);
  for (std::size_t i = 0; i < 6; ++i) {
    const double r = 5.0 * (1.0 - q[i / 3]);
    // E[s] = E[x] + E[x]/2 = 1.5 (1 + r)
    double total = 0, mean = 0;
    for (Eigen::Index j = 0; j < m[i].weights().size(); ++j) {
      total += m[i].weights()[j];
      mean += double(m[i].lo() + j) * m[i].weights()[j];
    }
    CHECK(mean / total == Approx(1.5 * (1.0 + r)).epsilon(1e-9));
  }
}

namespace {
/// summarize_groups after a per-group observation: each group's weighted moments, by definition from the values and
/// log-weights read back.
void check_group_summaries(Device device) {
  const std::size_t groups = 4, size = 50;
  Graph g(Groups{groups, size}, 9, device);
  std::vector<Poisson> laws;
  for (std::size_t k = 0; k < groups; ++k) laws.emplace_back(3.0 + 5.0 * double(k));
  const Variable x = g.assume(laws);
  const auto v = g.value(x);
  std::vector<std::int64_t> half(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) half[i] = v[i] / 3;
  g.observe(g.binomial(x, 0.4), half);
  const auto lw = g.log_weights();
  const gpu::GroupMoments s = g.summarize_groups(x);
  const auto mean = s.mean.to_host(), variance = s.variance.to_host(), ess = s.ess.to_host();
  REQUIRE(mean.size() == groups);
  for (std::size_t k = 0; k < groups; ++k) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t i = k * size; i < (k + 1) * size; ++i) top = std::max(top, lw[i]);
    double s0 = 0, s1 = 0, s2 = 0;
    for (std::size_t i = k * size; i < (k + 1) * size; ++i) {
      const double w = std::exp(lw[i] - top);
      s0 += w, s1 += w * double(v[i]), s2 += w * w;
    }
    double sd = 0;
    for (std::size_t i = k * size; i < (k + 1) * size; ++i) sd += std::exp(lw[i] - top) * std::pow(double(v[i]) - s1 / s0, 2);
    CHECK(mean[k] == Approx(s1 / s0).epsilon(1e-12));
    CHECK(variance[k] == Approx(sd / s0).epsilon(1e-10).margin(1e-12));
    CHECK(ess[k] == Approx(s0 * s0 / s2).epsilon(1e-12));
  }
}
}  // namespace

TEST_CASE("Each group's weighted moments of a variable (summarize_groups)", "[runtime][groups]") {
  check_group_summaries(Device::cpu);
}

TEST_CASE("device: each group's weighted moments of a variable (summarize_groups)", "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_group_summaries(Device::cuda);
}

namespace {
/// x ~ Binomial(4, 0.5) in every group, y | x ~ laws[g] (one per group), z = x + y (a sum with its own child: a
/// joint law) asked for, and y observed at v: each group's log-likelihood and posteriors of x and z equal its own
/// one-group graph's (to 1e-12), on the exact path.
template <class Law>
void check_child_laws_per_group(Device device, const std::vector<Law>& laws, std::int64_t v) {
  const std::size_t groups = laws.size(), size = 3;
  Graph g(Groups{groups, size}, 11, device);
  g.strict(true);
  const Variable x = g.assume(Binomial(4, 0.5));
  const Variable y = g.assume(x, laws);
  const Variable z = g.add(x, y);
  g.marginal(z);
  const auto o = g.observe(y, v);
  CHECK(o.exact());
  const auto mx = g.marginal(x), mz = g.marginal(z);
  for (std::size_t k = 0; k < groups; ++k) {
    INFO("group " << k);
    Graph one(size, 11, Device::cpu);
    one.strict(true);
    const Variable x1 = one.assume(Binomial(4, 0.5));
    const Variable y1 = one.assume(x1, laws[k]);
    const Variable z1 = one.add(x1, y1);
    one.marginal(z1);
    const auto o1 = one.observe(y1, v);
    const auto m1x = one.marginal(x1), m1z = one.marginal(z1);
    for (std::size_t i = 0; i < size; ++i) {
      const std::size_t p = k * size + i;
      CHECK(o[p] == Approx(o1[i]).epsilon(1e-12));
      for (const auto& [got, want] : {std::pair{mx[p].normalized(), m1x[i].normalized()},
                                      std::pair{mz[p].normalized(), m1z[i].normalized()}}) {
        for (std::int64_t j = std::min(got.lo(), want.lo()); j <= std::max(got.hi(), want.hi()); ++j) {
          const auto at = [](const Pmf& m, std::int64_t value) {
            return value < m.lo() || value > m.hi() ? 0.0 : m.weights()[value - m.lo()] * std::exp(m.log_scale());
          };
          CHECK(at(got, j) == Approx(at(want, j)).epsilon(1e-12).margin(1e-15));
        }
      }
    }
  }
}

void check_other_child_laws_per_group(Device device) {
  check_child_laws_per_group(device, std::vector<ScaledPoisson>{ScaledPoisson(0.5), ScaledPoisson(2.0), ScaledPoisson(1.25)}, 3);
  Eigen::VectorXd r1(5), r2(5);
  r1 << 0.5, 1.0, 2.0, 3.0, 4.0;
  r2 << 4.0, 0.1, 0.3, 2.5, 1.0;
  check_child_laws_per_group(device, std::vector<IndexedPoisson>{IndexedPoisson(r1), IndexedPoisson(r2)}, 2);
  Eigen::MatrixXd t1(5, 3), t2(5, 3);
  t1 << 0.2, 0.3, 0.5, 0.6, 0.2, 0.2, 0.1, 0.1, 0.8, 0.3, 0.3, 0.4, 1.0, 0.0, 0.0;
  t2 << 0.5, 0.5, 0.0, 0.1, 0.8, 0.1, 0.3, 0.3, 0.4, 0.0, 0.2, 0.8, 0.25, 0.25, 0.5;
  check_child_laws_per_group(device, std::vector<MarkovStep>{MarkovStep(t1), MarkovStep(t2), MarkovStep(t1)}, 1);
}
}  // namespace

TEST_CASE("Scaled and indexed Poisson laws and Markov steps per group: each group's own graph, exactly",
          "[runtime][groups]") {
  check_other_child_laws_per_group(Device::cpu);
  // of a realized parent too, drawn and observed
  Graph g(Groups{2, 4}, 5);
  const Variable x = g.assume(Poisson(3.0));
  const auto xv = g.value(x);
  const Variable y = g.assume(x, std::vector<ScaledPoisson>{ScaledPoisson(0.5), ScaledPoisson(3.0)});
  const auto o = g.observe(y, 2);
  for (std::size_t i = 0; i < 8; ++i) {
    const double rate = (i < 4 ? 0.5 : 3.0) * double(xv[i]);
    const double want = rate == 0.0 ? -std::numeric_limits<double>::infinity() : 2.0 * std::log(rate) - rate - std::log(2.0);
    CHECK(o[i] == Approx(want).epsilon(1e-12));
  }
  REQUIRE_THROWS_AS(g.assume(x, std::vector<MarkovStep>{}), shape_error);
}

TEST_CASE("device: scaled and indexed Poisson laws and Markov steps per group: each group's own graph, exactly",
          "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_other_child_laws_per_group(Device::cuda);
}

namespace {
/// Conjugate roots of per-group (and per-particle) hyperparameters: each group's log-weights and posterior
/// parameters equal those of a graph of that group's law alone, for Beta (binomial counts), Gamma (Poisson counts)
/// and Dirichlet (categories), observed twice so that the second observation runs from the updated parameters.
void check_conjugate_roots_per_group(Device device) {
  const std::size_t groups = 3, size = 2, particles = groups * size;
  const std::vector<Beta> betas{Beta(1.0, 1.0), Beta(2.5, 0.5), Beta(30.0, 70.0)};
  const std::vector<Gamma> gammas{Gamma(2.0, 1.0), Gamma(0.5, 4.0), Gamma(40.0, 3.0)};
  const std::vector<Dirichlet> dirichlets{Dirichlet(Eigen::Vector3d(1.0, 1.0, 1.0)),
                                          Dirichlet(Eigen::Vector3d(0.2, 5.0, 1.0)),
                                          Dirichlet(Eigen::Vector3d(9.0, 1.0, 3.0))};
  Graph g(Groups{groups, size}, 7, device);
  g.strict(true);
  const Continuous rho = g.assume(betas), lambda = g.assume(gammas), pi = g.assume(dirichlets);
  std::vector<double> weights(particles, 0.0);
  for (int round = 0; round < 2; ++round) {
    const auto a = g.observe(g.binomial(12, rho), 7 + round);
    const auto b = g.observe(g.poisson(lambda, 1.5), 4 - round);
    const auto c = g.observe(g.categorical(pi), round);
    REQUIRE((a.exact() && b.exact() && c.exact()));
  }
  const auto lw = g.log_weights();
  const auto beta_posterior = g.beta(rho);
  const auto gamma_posterior = g.gamma(lambda);
  const auto dirichlet_posterior = g.dirichlet(pi);
  for (std::size_t k = 0; k < groups; ++k) {
    Graph one(1, 7, device);
    const Continuous r = one.assume(betas[k]), l = one.assume(gammas[k]), q = one.assume(dirichlets[k]);
    for (int round = 0; round < 2; ++round) {
      one.observe(one.binomial(12, r), 7 + round);
      one.observe(one.poisson(l, 1.5), 4 - round);
      one.observe(one.categorical(q), round);
    }
    const double want = one.log_weights()[0];
    for (std::size_t i = k * size; i < (k + 1) * size; ++i) {
      CHECK(lw[i] == Approx(want).epsilon(1e-13));
      CHECK(beta_posterior[i].alpha == one.beta(r)[0].alpha);
      CHECK(beta_posterior[i].beta == one.beta(r)[0].beta);
      CHECK(gamma_posterior[i].shape == one.gamma(l)[0].shape);
      CHECK(gamma_posterior[i].rate == one.gamma(l)[0].rate);
      CHECK(dirichlet_posterior[i].alpha == one.dirichlet(q)[0].alpha);
    }
  }
  // one law per particle, and sizes that are neither (the graph stays usable)
  std::vector<Beta> each;
  for (std::size_t i = 0; i < particles; ++i) each.emplace_back(1.0 + double(i), 2.0);
  const Continuous per_particle = g.assume(each);
  const auto posterior = g.beta(per_particle);
  for (std::size_t i = 0; i < particles; ++i) CHECK(posterior[i].alpha == 1.0 + double(i));
  REQUIRE_THROWS_AS(g.assume(std::vector<Beta>(groups + 1, Beta(1.0, 1.0))), shape_error);
  REQUIRE_THROWS_AS(g.assume(std::vector<Gamma>{}), shape_error);
  REQUIRE_THROWS_AS(g.assume(std::vector<Dirichlet>(2, dirichlets[0])), shape_error);
  CHECK(g.log_weights() == lw);
}
}  // namespace

TEST_CASE("Conjugate hyperparameters per group: each group's own graph, exactly", "[runtime][groups]") {
  check_conjugate_roots_per_group(Device::cpu);
}

TEST_CASE("device: conjugate hyperparameters per group: each group's own graph, exactly", "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_conjugate_roots_per_group(Device::cuda);
}

namespace {
/// What a grouped filter saw, group by group: each season's log-evidence increments and ESS, the values after each
/// resampling and the ancestors (the population's indices), and the summaries of the last season.
struct GroupRecord {
  std::vector<std::vector<double>> log_means, ess;
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::vector<std::size_t>> ancestors;
  std::vector<double> means, variances;
};

/// The population model with a (phi, p, lambda0) per group over 5 seasons, realized counts (a bootstrap filter)
/// in some groups' particles and laws in others', resampled by each group's ESS every season; the same program on
/// one graph or on a rank's share of the groups (per-group inputs: its own groups', from first_group()).
GroupRecord grouped_program(Graph& g) {
  static const std::int64_t y[] = {31, 27, 35, 22, 30};
  const std::size_t G = g.groups(), first = g.first_group();
  std::vector<Poisson> prior;
  std::vector<Thinning> survive, detect;
  for (std::size_t k = first; k < first + G; ++k) {
    prior.emplace_back(40.0 + double(k % 5) * 4.0);
    survive.emplace_back(0.6 + 0.05 * double(k % 7));
    detect.emplace_back(0.4 + 0.04 * double(k % 9));
  }
  GroupRecord r;
  Variable n = g.assume(prior);
  for (std::size_t t = 0; t < std::size(y); ++t) {
    if (t > 0) n = g.add(g.assume(n, survive), g.assume(Poisson(8.0)));
    if (t == 2) g.realize(n);
    g.observe(g.assume(n, detect), y[t]);
    if (t + 1 == std::size(y)) {
      const gpu::GroupMoments m = g.summarize_groups(n);
      r.means = m.mean.to_host();
      r.variances = m.variance.to_host();
    }
    const auto step = g.resample_groups(0.8, t % 2 == 0 ? gpu::Resampler::systematic : gpu::Resampler::multinomial);
    r.log_means.push_back(step.log_mean_weight.to_host());
    r.ess.push_back(step.ess.to_host());
    auto a = step.ancestors.to_host();
    for (std::size_t& x : a) x += g.shard().first;  // the population's indices
    r.ancestors.push_back(a);
    r.values.push_back(g.value(n));
  }
  return r;
}

/// The ranks' records joined in rank order (each rank's groups follow the previous rank's).
GroupRecord joined(const std::vector<GroupRecord>& parts) {
  GroupRecord all = parts[0];
  for (std::size_t p = 1; p < parts.size(); ++p) {
    for (std::size_t t = 0; t < all.log_means.size(); ++t) {
      auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
      append(all.log_means[t], parts[p].log_means[t]);
      append(all.ess[t], parts[p].ess[t]);
      append(all.values[t], parts[p].values[t]);
      append(all.ancestors[t], parts[p].ancestors[t]);
    }
    all.means.insert(all.means.end(), parts[p].means.begin(), parts[p].means.end());
    all.variances.insert(all.variances.end(), parts[p].variances.begin(), parts[p].variances.end());
  }
  return all;
}
}  // namespace

namespace {
void check_groups_over_ranks(Device device) {
  const std::size_t G = 7, S = 40;
  const std::uint64_t seed = 31;
  Graph whole_graph(Groups{G, S}, seed, device);
  const GroupRecord whole = grouped_program(whole_graph);
  for (const std::size_t ranks : {1u, 2u, 3u, 7u}) {
    INFO(ranks << " ranks");
    std::vector<GroupRecord> parts(ranks);
    std::vector<int> shaped(ranks, 0), refused(ranks, 0);  // checked after the ranks' threads (Catch is not thread-safe)
    InProcessGroup::run(ranks, [&](std::shared_ptr<Communicator> comm) {
      Graph g(Groups{G, S}, comm, seed, device);
      const std::size_t r = comm->rank();
      shaped[r] = g.group_size() == S && g.particles() == g.groups() * S && g.shard().first == g.first_group() * S;
      // what mixes groups is refused on every rank alike (no collective left waiting)
      try {
        g.resample_by_weight();
      } catch (const usage_error&) {
        refused[r] = 1;
      }
      parts[r] = grouped_program(g);
    });
    REQUIRE(shaped == std::vector<int>(ranks, 1));
    REQUIRE(refused == std::vector<int>(ranks, 1));
    const GroupRecord split = joined(parts);
    REQUIRE(split.log_means == whole.log_means);
    REQUIRE(split.ess == whole.ess);
    REQUIRE(split.values == whole.values);
    REQUIRE(split.ancestors == whole.ancestors);
    REQUIRE(split.means == whole.means);
    REQUIRE(split.variances == whole.variances);
  }
}
}  // namespace

TEST_CASE("Groups split over ranks, each whole on one, compute what one graph of them computes", "[runtime][groups]") {
  check_groups_over_ranks(Device::cpu);
  const std::size_t S = 40;
  const std::uint64_t seed = 31;
  std::vector<int> too_few(3, 0);  // fewer groups than ranks
  InProcessGroup::run(3, [&](std::shared_ptr<Communicator> comm) {
    try {
      Graph g(Groups{2, S}, comm, seed, Device::cpu);
    } catch (const domain_error&) {
      too_few[comm->rank()] = 1;
    }
  });
  REQUIRE(too_few == std::vector<int>(3, 1));
  REQUIRE_THROWS_AS(Graph(Groups{2, S}, nullptr, seed, Device::cpu), usage_error);
}

TEST_CASE("device: groups split over ranks (one device), each whole on one, compute what one graph of them computes",
          "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_groups_over_ranks(Device::cuda);
}

}  // namespace test_groups
