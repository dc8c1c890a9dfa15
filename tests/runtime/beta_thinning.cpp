// Binomial(X, rho) with a random count X and rho ~ Beta: exact evidence and posterior of X against 50-digit
// enumeration, rho's mixture posterior resolved when rho is needed, strict mode, resampling and bad input.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "enumerate.hpp"
#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"

namespace test_beta_thinning {

using namespace tally;
using namespace tally::runtime;
using namespace tally::test;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();
constexpr double a0 = 2.0, b0 = 3.0;  // rho ~ Beta(a0, b0)
// The graphs here are Device::cpu (the reference), but for the last case, which compares a CUDA graph with it
// (skipped without a device).

/// NegativeBinomial(r, p) on [0, kmax] in 50 digits: Gamma(k + r) / (k! Gamma(r)) p^r (1 - p)^k.
Law negative_binomial_law(double r, double p, std::int64_t kmax) {
  using boost::multiprecision::log;
  Law l;
  for (std::int64_t k = 0; k <= kmax; ++k)
    l[k] = exp_big(lgamma_big(big(r) + k) - log_factorial(k) - lgamma_big(big(r)) + big(r) * log(big(p)) +
                   big(k) * log(1 - big(p)));
  return l;
}

/// The three priors of X, as tally laws and as 50-digit laws.
Variable assume_prior(Graph& g, int which) {
  if (which == 0) return g.assume(Poisson(3.0));
  if (which == 1) return g.assume(Binomial(12, 0.4));
  return g.assume(NegativeBinomial(2.0, 0.5));
}
Law prior_law(int which) {
  if (which == 0) return poisson_law(3.0, 120);
  if (which == 1) return binomial_law(12, 0.4);
  return negative_binomial_law(2.0, 0.5, 160);
}

/// X ~ prior, Y | X ~ BetaBinomial(X, a, b) (rho integrated out) with Y = y: the joint mass of (x, y).
Joint observed_joint(const Law& prior, std::int64_t y, double a, double b) {
  return enumerate({[&](const Assignment&) { return prior; },
                    [=](const Assignment& s) {
                      return s[0] < y ? Law{} : Law{{y, exp_big(log_beta_binomial(s[0], y, a, b))}};
                    }});
}

/// E[rho | Y = y] = sum_x P(x | y) (a + y) / (a + b + x).
double posterior_mean_of_rho(const Joint& j, std::int64_t y) {
  big num = 0, den = 0;
  for (const auto& [s, p] : j) {
    num += p * (big(a0) + y) / (big(a0) + big(b0) + s[0]);
    den += p;
  }
  return static_cast<double>(num / den);
}
}  // namespace

TEST_CASE("Binomial(X, rho) observed: exact evidence and posterior of X, nothing sampled, strict mode allows it",
          "[runtime][beta_binomial]") {
  const auto live = Graph::live_nodes();
  for (int which = 0; which < 3; ++which) {
    const Law prior = prior_law(which);
    for (std::int64_t y : {0, 2, 5, 9}) {
      INFO("prior " << which << ", y = " << y);
      const Joint joint = observed_joint(prior, y, a0, b0);
      Graph g(1, 7, Device::cpu);
      g.strict(true);  // the observation is exact: no fallback, nothing refused
      const Variable x = assume_prior(g, which);
      const Continuous rho = g.assume(Beta(a0, b0));
      const Observation o = g.observe(g.binomial(x, rho), y);
      CHECK(o.exact());
      require_log_prob(o[0], probability(joint, [](const Assignment&) { return true; }), 1e-10);
      require_law_close(g.marginal(x)[0], posterior(joint, 0, [](const Assignment&) { return true; }), 1e-10);
      CHECK(g.pending_samplings().empty());
    }
  }
  SECTION("per-particle observations, one impossible") {
    Graph g(3, 7, Device::cpu);
    const Variable x = g.assume(Binomial(12, 0.4));
    const Continuous rho = g.assume(Beta(a0, b0));
    const std::vector<double> ll = g.observe(g.binomial(x, rho), std::vector<std::int64_t>{1, 4, 13});
    const auto marginals = g.marginal(x);
    for (std::size_t i = 0; i < 2; ++i) {
      const std::int64_t y = i == 0 ? 1 : 4;
      const Joint joint = observed_joint(binomial_law(12, 0.4), y, a0, b0);
      require_log_prob(ll[i], probability(joint, [](const Assignment&) { return true; }), 1e-10);
      require_law_close(marginals[i], posterior(joint, 0, [](const Assignment&) { return true; }), 1e-10);
    }
    CHECK(ll[2] == ninf);
    CHECK(g.log_weights()[2] == ninf);
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("Binomial(X, rho): rho needed later draws X from its exact posterior, rho | x is Beta(a + y, b + x - y)",
          "[runtime][beta_binomial]") {
  const auto live = Graph::live_nodes();
  {
    constexpr std::size_t P = 20000;
    constexpr std::int64_t y = 2;
    const Joint joint = observed_joint(poisson_law(3.0, 200), y, a0, b0);
    Graph g(P, 11, Device::cpu);
    const Variable x = g.assume(Poisson(3.0));
    const Continuous rho = g.assume(Beta(a0, b0));
    g.name(x, "x");
    CHECK(g.observe(g.binomial(x, rho), y).exact());
    // strict mode refuses to draw x for rho's sake, and changes nothing
    g.strict(true);
    try {
      g.beta(rho);
      FAIL("strict mode let rho's mixture be resolved");
    } catch (const inexact_error& e) {
      REQUIRE(e.sampled.size() == 1);
      CHECK(e.sampled[0].variable == "x");
      CHECK(e.sampled[0].reason == Fallback::mixture_resolved);
    }
    CHECK(g.pending_samplings().empty());
    g.strict(false);
    const std::vector<Beta> params = g.beta(rho);
    REQUIRE(g.pending_samplings().size() == 1);
    CHECK(g.pending_samplings()[0].reason == Fallback::mixture_resolved);
    const std::vector<std::int64_t> xs = g.value(x);
    std::map<std::int64_t, std::int64_t> counts;
    std::vector<double> means(P);
    for (std::size_t i = 0; i < P; ++i) {
      ++counts[xs[i]];
      REQUIRE(params[i].alpha == a0 + y);
      REQUIRE(params[i].beta == b0 + static_cast<double>(xs[i] - y));
      means[i] = params[i].alpha / (params[i].alpha + params[i].beta);
    }
    require_goodness_of_fit(counts, posterior(joint, 0, [](const Assignment&) { return true; }));
    // the draws of rho: mean within 5 standard errors of E[rho | y]
    const std::vector<double> rhos = g.scalar_value(rho);
    require_mean_near(rhos, posterior_mean_of_rho(joint, y));
    require_mean_near(means, posterior_mean_of_rho(joint, y));
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("Binomial(X, rho) then Binomial(m, rho): exact first evidence, unbiased second evidence",
          "[runtime][beta_binomial]") {
  const auto live = Graph::live_nodes();
  {
    constexpr std::size_t P = 20000;
    constexpr std::int64_t y1 = 3, m = 6, y2 = 1;
    const Joint joint = observed_joint(binomial_law(12, 0.4), y1, a0, b0);
    // P(y2 | y1) = sum_x P(x | y1) BetaBinomial(y2; m, a + y1, b + x - y1)
    big evidence2 = 0, total = 0;
    for (const auto& [s, p] : joint) {
      evidence2 += p * exp_big(log_beta_binomial(m, y2, a0 + y1, b0 + static_cast<double>(s[0] - y1)));
      total += p;
    }
    const double want = static_cast<double>(evidence2 / total);
    Graph g(P, 5, Device::cpu);
    const Variable x = g.assume(Binomial(12, 0.4));
    const Continuous rho = g.assume(Beta(a0, b0));
    const Observation o1 = g.observe(g.binomial(x, rho), y1);
    CHECK(o1.exact());
    for (std::size_t i = 0; i < P; i += 997)
      require_log_prob(o1[i], probability(joint, [](const Assignment&) { return true; }), 1e-10);
    const Observation o2 = g.observe(g.binomial(m, rho), y2);
    REQUIRE(o2.exactness().sampled.size() == 1);
    CHECK(o2.exactness().sampled[0].reason == Fallback::mixture_resolved);
    // each particle's evidence is BetaBinomial(y2; m, a + y1, b + x_i - y1) with x_i drawn from P(x | y1): their
    // mean is an unbiased estimate of P(y2 | y1)
    const std::vector<std::int64_t> xs = g.value(x);
    std::vector<double> likelihoods(P);
    std::map<std::int64_t, double> exact;  // log BetaBinomial(y2; m, a + y1, b + x - y1) for each x drawn
    for (std::size_t i = 0; i < P; ++i) {
      if (!exact.count(xs[i]))
        exact[xs[i]] = static_cast<double>(log_beta_binomial(m, y2, a0 + y1, b0 + static_cast<double>(xs[i] - y1)));
      REQUIRE(std::abs(o2[i] - exact[xs[i]]) < 1e-12);
      likelihoods[i] = std::exp(o2[i]);
    }
    require_mean_near(likelihoods, want);
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("Binomial(X, rho): resampling moves the waiting observation; other uses and refused cases as before",
          "[runtime][beta_binomial]") {
  const auto live = Graph::live_nodes();
  SECTION("resampling before rho is needed") {
    Graph g(3, 3, Device::cpu);
    const Variable x = g.assume(Binomial(10, 0.5));
    const Continuous rho = g.assume(Beta(a0, b0));
    const std::vector<std::int64_t> ys{0, 1, 3};
    g.observe(g.binomial(x, rho), ys);
    const std::vector<std::size_t> ancestors{2, 2, 0};
    g.resample(ancestors);
    const auto params = g.beta(rho);
    const auto xs = g.value(x);
    for (std::size_t i = 0; i < 3; ++i) {
      const double y = static_cast<double>(ys[ancestors[i]]);
      CHECK(params[i].alpha == a0 + y);
      CHECK(params[i].beta == b0 + static_cast<double>(xs[i]) - y);
    }
  }
  SECTION("while rho waits, its new counts touch x; a sum of x and a count of rho draws x first") {
    Graph g(1, 9, Device::cpu);
    const Variable x = g.assume(Binomial(10, 0.5));
    const Continuous rho = g.assume(Beta(a0, b0));
    const Variable c = g.binomial(5, rho);
    const Variable w = g.assume(Binomial(3, 0.5));
    g.observe(g.binomial(x, rho), 2);
    CHECK(g.touches({c, w}, {x}) == std::vector<std::vector<std::size_t>>{{0}, {}});
    const Variable z = g.add(x, c);
    const Pmf law = g.marginal(z)[0];  // x drawn (mixture_resolved), then z = x + BetaBinomial(5, a + 2, b + x - 2)
    REQUIRE(g.pending_samplings().size() == 1);
    CHECK(g.pending_samplings()[0].reason == Fallback::mixture_resolved);
    const std::int64_t xv = g.value(x)[0];
    Law want;
    for (std::int64_t k = 0; k <= 5; ++k)
      want[xv + k] = exp_big(log_beta_binomial(5, k, a0 + 2, b0 + static_cast<double>(xv - 2)));
    require_law_close(law, want, 1e-10);
  }
  SECTION("x observed later: exact evidence P(x = v | y), and rho gets Beta(a + y, b + v - y) with nothing drawn") {
    constexpr std::int64_t y = 2, v = 5;
    const Joint joint = observed_joint(poisson_law(3.0, 120), y, a0, b0);
    Graph g(1, 9, Device::cpu);
    g.strict(true);
    const Variable x = g.assume(Poisson(3.0));
    const Continuous rho = g.assume(Beta(a0, b0));
    g.observe(g.binomial(x, rho), y);
    const Observation o = g.observe(x, v);
    CHECK(o.exact());
    require_log_prob(o[0], posterior(joint, 0, [](const Assignment&) { return true; }).at(v), 1e-10);
    const auto params = g.beta(rho);  // strict mode: nothing to draw
    CHECK((params[0].alpha == a0 + y && params[0].beta == b0 + (v - y)));
    CHECK(g.pending_samplings().empty());
  }
  SECTION("a second Binomial(x2, rho) observation draws x first, then conditions x2 exactly") {
    Graph g(1, 9, Device::cpu);
    const Variable x = g.assume(Binomial(10, 0.5));
    const Variable x2 = g.assume(Binomial(8, 0.5));
    const Continuous rho = g.assume(Beta(a0, b0));
    g.name(x, "x");
    g.observe(g.binomial(x, rho), 3);
    const Observation o = g.observe(g.binomial(x2, rho), 4);
    REQUIRE(o.exactness().sampled.size() == 1);
    CHECK(o.exactness().sampled[0].variable == "x");
    CHECK(o.exactness().sampled[0].reason == Fallback::mixture_resolved);
    // given x: P(y2 = 4) = sum_x2 Binomial(x2; 8, .5) BetaBinomial(4; x2, a + 3, b + x - 3)
    const std::int64_t xv = g.value(x)[0];
    const Joint second = observed_joint(binomial_law(8, 0.5), 4, a0 + 3, b0 + static_cast<double>(xv - 3));
    require_log_prob(o[0], probability(second, [](const Assignment&) { return true; }), 1e-10);
    require_law_close(g.marginal(x2)[0], posterior(second, 0, [](const Assignment&) { return true; }), 1e-10);
  }
  SECTION("rho realized before the observation: x conditioned under Binomial(y; x, rho), exactly") {
    Graph g(2, 9, Device::cpu);
    g.strict(true);
    const Variable x = g.assume(Binomial(12, 0.4));
    const Continuous rho = g.assume(Beta(a0, b0));
    const std::vector<double> r = g.scalar_value(rho);
    const Observation o = g.observe(g.binomial(x, rho), 3);
    CHECK(o.exact());
    const auto marginals = g.marginal(x);
    for (std::size_t i = 0; i < 2; ++i) {
      const double ri = r[i];
      const Joint joint = enumerate({[](const Assignment&) { return binomial_law(12, 0.4); },
                                     [ri](const Assignment& s) {
                                       return s[0] < 3 ? Law{} : Law{{3, exp_big(log_binomial(s[0], 3, big(ri)))}};
                                     }});
      require_log_prob(o[i], probability(joint, [](const Assignment&) { return true; }), 1e-10);
      require_law_close(marginals[i], posterior(joint, 0, [](const Assignment&) { return true; }), 1e-10);
    }
  }
  SECTION("a value of Binomial(X, rho) that is not observed realizes X first (parent_realized)") {
    Graph g(4, 3, Device::cpu);
    const Variable x = g.assume(Binomial(10, 0.5));
    const Continuous rho = g.assume(Beta(a0, b0));
    const Variable y = g.binomial(x, rho);
    const auto ys = g.value(y);
    const auto xs = g.value(x);
    for (std::size_t i = 0; i < 4; ++i) CHECK((ys[i] >= 0 && ys[i] <= xs[i]));
    REQUIRE(g.pending_samplings().size() >= 1);
    CHECK(g.pending_samplings()[0].reason == Fallback::parent_realized);
  }
  SECTION("X a count of rho itself: not independent of rho, X is realized first") {
    Graph g(1, 3, Device::cpu);
    const Continuous rho = g.assume(Beta(a0, b0));
    const Variable x = g.binomial(8, rho);
    g.name(x, "x");
    const Observation o = g.observe(g.binomial(x, rho), 2);
    REQUIRE(o.exactness().sampled.size() == 1);
    CHECK(o.exactness().sampled[0].reason == Fallback::parent_realized);
    // given x (drawn from BetaBinomial(8, a, b)), the evidence is BetaBinomial(2; x, a + x, b + 8 - x)
    const std::int64_t xv = g.value(x)[0];
    const double want = xv < 2 ? ninf
                               : static_cast<double>(log_beta_binomial(xv, 2, a0 + static_cast<double>(xv),
                                                                       b0 + static_cast<double>(8 - xv)));
    if (xv < 2) CHECK(o[0] == ninf);
    else CHECK(std::abs(o[0] - want) < 1e-12);
  }
  SECTION("bad input: errors leave the graph usable") {
    Graph g(2, 3, Device::cpu);
    const Variable x = g.affine(g.assume(Binomial(4, 0.5)), 1, -2);  // support [-2, 2]: not a count
    const Continuous rho = g.assume(Beta(a0, b0));
    const Continuous lambda = g.assume(Gamma(2.0, 1.0));
    CHECK_THROWS_AS(g.binomial(x, lambda), usage_error);
    const Variable y = g.binomial(x, rho);
    CHECK_THROWS_AS(g.observe(y, std::vector<std::int64_t>{1, 2, 3}), shape_error);
    CHECK_THROWS_AS(g.observe(y, 1), tally::domain_error);
    CHECK_THROWS_AS(g.observe(y, 1), tally::domain_error);  // again, the same way
    CHECK(g.log_weights() == std::vector<double>{0.0, 0.0});
    // the rest goes on: x observed, then rho still a plain Beta
    const std::vector<double> ll = g.observe(x, 1);
    CHECK(std::abs(ll[0] - std::log(4.0 / 16.0)) < 1e-12);
    const auto params = g.beta(rho);
    CHECK((params[0].alpha == a0 && params[0].beta == b0));
    CHECK(g.pending_samplings().empty());
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("Binomial(X, rho) on a CUDA graph: the host graph's log-likelihoods, posteriors of X and draws",
          "[runtime][beta_binomial][device]") {
  // X ~ Poisson(3) in every particle, observed through Binomial(X, rho) at a value of its own per particle (so that
  // the laws differ), then rho needed: X drawn from its posterior (reported), rho | x ~ Beta(a0 + y, b0 + x - y)
  constexpr std::size_t P = 24;
  std::vector<std::int64_t> ys(P);
  for (std::size_t i = 0; i < P; ++i) ys[i] = static_cast<std::int64_t>(i % 6);
  struct Run {
    std::vector<double> log_likelihoods;
    std::vector<Pmf> posteriors;
    std::vector<std::int64_t> xs;
    std::vector<Beta> rhos;
    bool exact = false;
    std::size_t reported = 0;
    std::vector<double> known_log_likelihoods;  // rho drawn before the observation: Binomial(x, rho_i), known rho_i
    std::vector<Pmf> known_posteriors;
    std::vector<Beta> rhos2;
    std::vector<double> drawn_rho;
  };
  const auto run = [&](Device d) {
    Run r;
    const auto live = Graph::live_nodes();
    {
      Graph g(P, 17, d);
      const Variable x = g.assume(Poisson(3.0));
      const Continuous rho = g.assume(Beta(a0, b0));
      const Observation o = g.observe(g.binomial(x, rho), ys);
      r.exact = o.exact();
      r.log_likelihoods = o.log_likelihoods();
      r.posteriors = g.marginal(x);
      r.rhos = g.beta(rho);
      r.reported = g.pending_samplings().size();
      r.xs = g.value(x);
      // a second count, Binomial(x_i, 0.7) of the drawn x (a law per particle), observed through rho's
      // per-particle posterior, then a third through rho drawn (a known rho_i per particle)
      const Variable z = g.assume(x, Thinning(0.7));
      const Observation second = g.observe(g.binomial(z, rho), ys);
      // (it reports the draw of x that beta(rho) made above: nothing of its own)
      for (const auto& sampled : second.exactness().sampled) CHECK(sampled.reason == Fallback::mixture_resolved);
      r.known_log_likelihoods = second.log_likelihoods();
      r.known_posteriors = g.marginal(z);
      (void)g.value(z);  // rho's mixture resolved by z's value: Beta per particle again
      r.rhos2 = g.beta(rho);
      const std::vector<double> drawn = g.scalar_value(rho);
      r.drawn_rho = drawn;
      const Variable w = g.assume(x, Thinning(0.4));
      const Observation third = g.observe(g.binomial(w, rho), ys);
      CHECK(third.exact());
      const auto l3 = third.log_likelihoods();
      r.known_log_likelihoods.insert(r.known_log_likelihoods.end(), l3.begin(), l3.end());
      const auto m3 = g.marginal(w);
      r.known_posteriors.insert(r.known_posteriors.end(), m3.begin(), m3.end());
    }
    CHECK(Graph::live_nodes() == live);
    return r;
  };
  const Run host = run(Device::cpu);
  if (!gpu::cuda_available()) {
    WARN("device half skipped: " << gpu::device_description());
    return;
  }
  const Run device = run(Device::cuda);
  CHECK(host.exact);
  CHECK(device.exact);
  CHECK(device.reported == host.reported);
  REQUIRE(device.log_likelihoods.size() == P);
  for (std::size_t i = 0; i < P; ++i) {
    INFO("particle " << i << ", y = " << ys[i]);
    CHECK(device.log_likelihoods[i] == Approx(host.log_likelihoods[i]).epsilon(1e-12));
    const Pmf& a = host.posteriors[i];
    const Pmf& b = device.posteriors[i];
    for (std::int64_t k = std::min(a.lo(), b.lo()); k <= std::max(a.hi(), b.hi()); ++k)
      CHECK(pdf(b, k) == Approx(pdf(a, k)).margin(1e-15).epsilon(1e-12));
    CHECK(device.xs[i] == host.xs[i]);  // one engine: the same draws for the same seed
    CHECK(device.rhos[i].alpha == a0 + static_cast<double>(ys[i]));
    CHECK(device.rhos[i].beta == b0 + static_cast<double>(device.xs[i] - ys[i]));
    CHECK(device.rhos2[i].alpha == host.rhos2[i].alpha);
    CHECK(device.rhos2[i].beta == host.rhos2[i].beta);
    CHECK(device.drawn_rho[i] == Approx(host.drawn_rho[i]).epsilon(1e-12));
  }
  REQUIRE(device.known_log_likelihoods.size() == 2 * P);
  REQUIRE(device.known_posteriors.size() == 2 * P);
  for (std::size_t i = 0; i < 2 * P; ++i) {  // rho's posterior per particle, then rho drawn
    INFO((i < P ? "rho's posterior" : "rho drawn") << ", particle " << i % P);
    CHECK(device.known_log_likelihoods[i] == Approx(host.known_log_likelihoods[i]).epsilon(1e-12));
    const Pmf &c = host.known_posteriors[i], &e = device.known_posteriors[i];
    for (std::int64_t k = std::min(c.lo(), e.lo()); k <= std::max(c.hi(), e.hi()); ++k)
      CHECK(pdf(e, k) == Approx(pdf(c, k)).margin(1e-15).epsilon(1e-12));
  }
}

}  // namespace test_beta_thinning
