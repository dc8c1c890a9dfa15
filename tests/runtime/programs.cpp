// Small programs end to end against exact 50-digit enumeration: evidence, posteriors, draws, conjugacy, misuse.
#include <catch2/catch.hpp>
#include <limits>
#include <string>

#include "enumerate.hpp"
#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"

namespace test_programs {

using namespace tally;
using namespace tally::runtime;
using namespace tally::test;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();
std::uint64_t seed_of(std::int64_t i) { return 1000 + static_cast<std::uint64_t>(i); }
Law law_at(std::int64_t v, const big& p) { return {{v, p}}; }  // a kernel that only keeps the observed value
}  // namespace

TEST_CASE("Thinning: observing x + y, y + x, x - y or y - x gives exact evidence and posteriors", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return binomial_law(8, .3); },
                                   [](const Assignment& a) { return binomial_law(a[0], .4); }});
    for (int form = 0; form < 4; ++form) {  // z = x + y, y + x, x - y, y - x
      const std::int64_t sx = form == 3 ? -1 : 1, sy = form == 2 ? -1 : 1;
      for (std::int64_t z = -9; z <= 17; ++z) {
        INFO("form " << form << ", z = " << z);
        const Event seen = [&](const Assignment& a) { return sx * a[0] + sy * a[1] == z; };
        Graph g(1, seed_of(z));
        auto x = g.assume(Binomial(8, .3));
        auto y = g.assume(x, Thinning(.4));
        auto s = form == 0 ? g.add(x, y) : form == 1 ? g.add(y, x) : form == 2 ? g.subtract(x, y) : g.subtract(y, x);
        const double ll = g.observe(s, z)[0];
        const big pz = probability(joint, seen);
        require_log_prob(ll, pz);
        REQUIRE(g.log_weights()[0] == ll);
        if (pz == 0) continue;
        const Law px = posterior(joint, 0, seen), py = posterior(joint, 1, seen);
        require_law_close(g.marginal(x)[0], px);
        require_law_close(g.marginal(y)[0], py);
        if (z % 2 == 0) {  // draw x: y is tied to it
          const auto vx = g.value(x)[0], vy = g.value(y)[0];
          REQUIRE(px.count(vx) == 1);
          REQUIRE(sx * vx + sy * vy == z);
        } else {  // observe the tied y at its most likely value: exact P(y = v | z), then x is known
          std::int64_t v = py.begin()->first;
          for (const auto& [k, p] : py)
            if (p > py.at(v)) v = k;
          require_log_prob(g.observe(y, v)[0], py.at(v));
          REQUIRE(sx * g.value(x)[0] + sy * v == z);
        }
      }
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Dependent operands: x + (a x + c) observed is enumerated exactly", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    for (const auto& [a, c] : std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {2, 1}, {-1, 3}, {3, -2}}) {
      const Joint joint = enumerate({[](const Assignment&) { return binomial_law(6, .5); },
                                     [a = a, c = c](const Assignment& v) { return point_law(a * v[0] + c); }});
      for (std::int64_t z = -4; z <= 26; ++z) {
        INFO("y = " << a << " x + " << c << ", z = " << z);
        const Event seen = [&](const Assignment& v) { return v[0] + v[1] == z; };
        Graph g(1, seed_of(z));
        auto x = g.assume(Binomial(6, .5));
        auto y = g.affine(x, a, c);
        const double ll = g.observe(g.add(x, y), z)[0];
        const big pz = probability(joint, seen);
        require_log_prob(ll, pz);
        if (pz == 0) continue;
        require_law_close(g.marginal(x)[0], posterior(joint, 0, seen));
        const auto vy = g.value(y)[0];
        REQUIRE(g.value(x)[0] + vy == z);
        REQUIRE(vy == a * g.value(x)[0] + c);
      }
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Joint sums with ScaledPoisson, IndexedPoisson and MarkovStep children equal enumeration", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    Eigen::MatrixXd t(3, 4);
    t << .1, .2, .3, .4, .5, .5, 0, 0, 0, .25, .25, .5;
    const std::vector<Kernel> laws = {
        [](const Assignment& a) { return poisson_law(1.5 * static_cast<double>(a[0]), 70); },
        [](const Assignment& a) { return poisson_law(a[0] == 0 ? .5 : a[0] == 1 ? 2.0 : 6.0, 70); },
        [t](const Assignment& a) { return categorical_law({t(a[0], 0), t(a[0], 1), t(a[0], 2), t(a[0], 3)}); }};
    for (std::size_t law = 0; law < laws.size(); ++law) {
      const Joint joint = enumerate({[](const Assignment&) { return categorical_law({.2, .5, .3}); }, laws[law]});
      for (std::int64_t z = -2; z <= 9; ++z) {
        INFO("child law " << law << ", z = x - y = " << z);
        const Event seen = [&](const Assignment& a) { return a[0] - a[1] == z; };
        Graph g(1, seed_of(z));
        auto x = g.assume(Categorical(Eigen::Vector3d(.2, .5, .3)));
        auto y = law == 0 ? g.assume(x, ScaledPoisson(1.5))
                 : law == 1 ? g.assume(x, IndexedPoisson(Eigen::Vector3d(.5, 2.0, 6.0)))
                            : g.assume(x, MarkovStep(t));
        const big pz = probability(joint, seen);
        require_log_prob(g.observe(g.subtract(x, y), z)[0], pz);
        if (pz == 0) continue;
        require_law_close(g.marginal(x)[0], posterior(joint, 0, seen));
        REQUIRE(g.value(x)[0] - g.value(y)[0] == z);
      }
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("k1 + k2 observed for two counts of one Beta: rho is realized, exp(evidence) is unbiased", "[runtime][programs][conjugate]") {
  const auto live = Graph::live_nodes();
  {
    // k1 ~ Binomial(4, rho), k2 ~ Binomial(6, rho), rho ~ Beta(2, 3): k1 + k2 ~ BetaBinomial(10, 2, 3)
    const std::int64_t z = 3;
    const double want = static_cast<double>(exp_big(log_beta_binomial(10, z, 2, 3)));
    std::vector<double> e;
    for (int r = 0; r < 20000; ++r) {
      Graph g(1, seed_of(r));
      auto rho = g.assume(Beta(2, 3));
      auto k1 = g.binomial(4, rho), k2 = g.binomial(6, rho);
      const double ll = g.observe(g.add(k1, k2), z)[0];
      e.push_back(std::exp(ll));
      if (ll > ninf) REQUIRE(g.value(k1)[0] + g.value(k2)[0] == z);
    }
    require_mean_near(e, want, 4.0);
    // what a convolution of the two beta-binomial marginals would give instead
    Law b1, b2;
    for (std::int64_t k = 0; k <= 4; ++k) b1[k] = exp_big(log_beta_binomial(4, k, 2, 3));
    for (std::int64_t k = 0; k <= 6; ++k) b2[k] = exp_big(log_beta_binomial(6, k, 2, 3));
    REQUIRE(std::abs(static_cast<double>(convolve(b1, b2).at(z)) - want) > 0.01);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("x ~ Poisson(3), y ~ UniformInt(0, 4), observe x - y: exact, and y is tied to x - z", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return poisson_law(3.0, 80); },
                                   [](const Assignment&) { return uniform_law(0, 4); }});
    for (std::int64_t z = -6; z <= 12; ++z) {
      INFO("z = " << z);
      const Event seen = [&](const Assignment& a) { return a[0] - a[1] == z; };
      Graph g(1, seed_of(z));
      auto x = g.assume(Poisson(3.0));
      auto y = g.assume(UniformInt(0, 4));
      const double ll = g.observe(g.subtract(x, y), z)[0];
      const big pz = probability(joint, seen);
      require_log_prob(ll, pz);
      if (pz == 0) continue;
      require_law_close(g.marginal(x)[0], posterior(joint, 0, seen));
      require_law_close(g.marginal(y)[0], posterior(joint, 1, seen));
      if (z % 2 == 0) {
        const auto vx = g.value(x)[0];
        REQUIRE(g.value(y)[0] == vx - z);
      } else {
        const auto vy = g.value(y)[0];
        REQUIRE(g.value(x)[0] == vy + z);
      }
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("s ~ Poisson(5), i ~ Binomial(s, .2) observed: evidence Poisson(1), posterior i + Poisson(4)", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return poisson_law(5.0, 90); },
                                   [](const Assignment& a) { return binomial_law(a[0], .2); }});
    for (std::int64_t i = -1; i <= 9; ++i) {
      INFO("i = " << i);
      const Event seen = [&](const Assignment& a) { return a[1] == i; };
      Graph g;
      auto s = g.assume(Poisson(5.0));
      const double ll = g.observe(g.assume(s, Thinning(.2)), i)[0];
      const big pi = probability(joint, seen);
      const double tol = pi == 0 ? 0 : std::max(1e-12, 1e-14 / static_cast<double>(pi));  // the prior's dropped tail
      require_log_prob(ll, pi, tol);
      if (i < 0) continue;
      require_log_prob(ll, exp_big(log_poisson(i, big(5.0) * big(.2))), tol);
      require_law_close(g.marginal(s)[0], posterior(joint, 0, seen), tol);
      Law shifted;  // closed form: s = i + Poisson(5 (1 - .2))
      for (const auto& [k, p] : poisson_law(5.0 * (1 - .2), 80)) shifted[k + i] = p;
      require_law_close(g.marginal(s)[0], shifted, std::max(tol, 1e-11));
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

namespace {
// a ~ Categorical(w); b ~ Categorical(T[a]); c ~ Poisson(rates[b]), observed at c.
const std::vector<double> chain_w = {.5, .3, .2}, chain_rates = {1.0, 4.0, 9.0};
Eigen::MatrixXd chain_t() {
  Eigen::MatrixXd t(3, 3);
  t << .7, .2, .1, .1, .8, .1, .3, .3, .4;
  return t;
}
Joint chain_joint(std::int64_t c) {
  return enumerate({[](const Assignment&) { return categorical_law(chain_w); },
                    [](const Assignment& a) {
                      const Eigen::MatrixXd t = chain_t();
                      return categorical_law({t(a[0], 0), t(a[0], 1), t(a[0], 2)});
                    },
                    [c](const Assignment& a) {
                      return law_at(c, exp_big(log_poisson(c, big(chain_rates[static_cast<std::size_t>(a[1])]))));
                    }});
}
struct Chain {
  Variable a, b, c;
  double ll;
};
Chain chain_program(Graph& g, std::int64_t c) {
  Chain ch;
  ch.a = g.assume(Categorical(Eigen::Vector3d(chain_w[0], chain_w[1], chain_w[2])));
  ch.b = g.assume(ch.a, MarkovStep(chain_t()));
  ch.c = g.assume(ch.b, IndexedPoisson(Eigen::Vector3d(chain_rates[0], chain_rates[1], chain_rates[2])));
  ch.ll = g.observe(ch.c, c)[0];
  return ch;
}
}  // namespace

TEST_CASE("A Markov chain a -> b -> c with c observed: exact evidence, marginal(a) right in distribution", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Event all = [](const Assignment&) { return true; };
    for (std::int64_t c : {0, 3, 8}) {
      INFO("c = " << c);
      const Joint joint = chain_joint(c);
      {
        Graph g;
        const Chain ch = chain_program(g, c);
        require_log_prob(ch.ll, probability(joint, all));
        require_law_close(g.marginal(ch.b)[0], posterior(joint, 1, all));  // b's own posterior: exact
      }
      // marginal(a) realizes b first: its average over independent graphs is a's exact posterior
      const Law pa = posterior(joint, 0, all), pb = posterior(joint, 1, all);
      const int n = 4000;
      std::vector<std::vector<double>> got(3);
      for (int r = 0; r < n; ++r) {
        Graph g(1, seed_of(r));
        const Chain ch = chain_program(g, c);
        const Pmf m = g.marginal(ch.a)[0];
        for (std::int64_t k = 0; k < 3; ++k) got[static_cast<std::size_t>(k)].push_back(pdf(m, k));
      }
      for (std::int64_t k = 0; k < 3; ++k) {  // the spread of P(a = k | b, c) over b ~ P(b | c), exactly
        big second = 0;
        for (const auto& [bv, q] : pb) {
          const Law given_b = posterior(joint, 0, [bv = bv](const Assignment& v) { return v[1] == bv; });
          const big p = given_b.count(k) ? given_b.at(k) : big(0);
          second += q * p * p;
        }
        const double want = static_cast<double>(pa.at(k));
        require_mean_near(got[static_cast<std::size_t>(k)], want, 5.0, std::sqrt(static_cast<double>(second) - want * want));
      }
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("x -> y -> w, observe x + w: the shared ancestor is realized, exp(evidence) is unbiased", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return binomial_law(5, .5); },
                                   [](const Assignment& a) { return binomial_law(a[0], .5); },
                                   [](const Assignment& a) { return binomial_law(a[1], .5); }});
    const std::int64_t z = 3;
    const double pz = static_cast<double>(probability(joint, [](const Assignment& a) { return a[0] + a[2] == z; }));
    const double wrong = static_cast<double>(convolve(binomial_law(5, .5), binomial_law(5, .125)).at(z));
    REQUIRE(std::abs(wrong - pz) > 0.04);  // a dependence-blind convolution would be far off
    for (bool x_first : {true, false}) {
      INFO((x_first ? "z = x + w" : "z = w + x"));
      std::vector<double> e;
      for (int r = 0; r < 20000; ++r) {
        Graph g(1, seed_of(r));
        auto x = g.assume(Binomial(5, .5));
        auto y = g.assume(x, Thinning(.5));
        auto w = g.assume(y, Thinning(.5));
        const double ll = g.observe(x_first ? g.add(x, w) : g.add(w, x), z)[0];
        e.push_back(std::exp(ll));
        if (ll == ninf) continue;
        const auto vx = g.value(x)[0], vy = g.value(y)[0], vw = g.value(w)[0];
        REQUIRE(vx + vw == z);
        REQUIRE((vw <= vy && vy <= vx));
      }
      require_mean_near(e, pz, 4.0);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Unobserved: every query order of x, y ~ Binomial(x, .4), x + y draws from the joint prior", "[runtime][programs][draws]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return binomial_law(8, .3); },
                                   [](const Assignment& a) { return binomial_law(a[0], .4); }});
    const Law want = posterior(joint, [](const Assignment& a) { return 16 * a[0] + a[1]; }, [](const Assignment&) { return true; });
    for (const std::string order : {"xyz", "xzy", "yxz", "yzx", "zxy", "zyx"}) {
      INFO("order " << order);
      std::map<std::int64_t, std::int64_t> counts;
      for (int r = 0; r < 5000; ++r) {
        Graph g(1, seed_of(r));
        auto x = g.assume(Binomial(8, .3));
        auto y = g.assume(x, Thinning(.4));
        auto z = g.add(x, y);
        std::int64_t v[3] = {0, 0, 0};
        for (char q : order) v[q - 'x'] = g.value(q == 'x' ? x : q == 'y' ? y : z)[0];
        REQUIRE(v[0] + v[1] == v[2]);
        ++counts[16 * v[0] + v[1]];
      }
      require_goodness_of_fit(counts, want);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A joint sum inside a sum: (x + y) + w observed, y ~ Binomial(x, .4), w ~ Poisson(2)", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return binomial_law(8, .3); },
                                   [](const Assignment& a) { return binomial_law(a[0], .4); },
                                   [](const Assignment&) { return poisson_law(2.0, 70); }});
    for (std::int64_t z = -1; z <= 14; ++z) {
      INFO("z = " << z);
      const Event seen = [&](const Assignment& a) { return a[0] + a[1] + a[2] == z; };
      Graph g(1, seed_of(z));
      auto x = g.assume(Binomial(8, .3));
      auto y = g.assume(x, Thinning(.4));
      auto w = g.assume(Poisson(2.0));
      auto s = g.add(x, y);
      const double ll = g.observe(g.add(s, w), z)[0];
      const big pz = probability(joint, seen);
      require_log_prob(ll, pz);
      if (pz == 0) continue;
      require_law_close(g.marginal(w)[0], posterior(joint, 2, seen));
      require_law_close(g.marginal(s)[0], posterior(joint, [](const Assignment& a) { return a[0] + a[1]; }, seen));
      const auto vx = g.value(x)[0], vy = g.value(y)[0], vw = g.value(w)[0];
      REQUIRE(vx + vy + vw == z);
      REQUIRE(g.value(s)[0] == vx + vy);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Draws after observations pass a chi-square test against the exact posterior", "[runtime][programs][draws]") {
  const auto live = Graph::live_nodes();
  {
    const int n = 10000;
    SECTION("x | x + y = 6, Thinning, over independent graphs and over one population") {
      const Joint joint = enumerate({[](const Assignment&) { return binomial_law(8, .3); },
                                     [](const Assignment& a) { return binomial_law(a[0], .4); }});
      const Law want = posterior(joint, 0, [](const Assignment& a) { return a[0] + a[1] == 6; });
      std::map<std::int64_t, std::int64_t> single, population;
      for (int r = 0; r < n; ++r) {
        Graph g(1, seed_of(r));
        auto x = g.assume(Binomial(8, .3));
        g.observe(g.add(x, g.assume(x, Thinning(.4))), 6);
        ++single[g.value(x)[0]];
      }
      require_goodness_of_fit(single, want);
      Graph g(static_cast<std::size_t>(n), 77);
      auto x = g.assume(Binomial(8, .3));
      g.observe(g.add(x, g.assume(x, Thinning(.4))), 6);
      for (auto v : g.value(x)) ++population[v];
      require_goodness_of_fit(population, want);
    }
    SECTION("y | x - y = 1 for x ~ Poisson(3), y ~ UniformInt(0, 4)") {
      const Joint joint = enumerate({[](const Assignment&) { return poisson_law(3.0, 80); },
                                     [](const Assignment&) { return uniform_law(0, 4); }});
      std::map<std::int64_t, std::int64_t> counts;
      for (int r = 0; r < n; ++r) {
        Graph g(1, seed_of(r));
        auto x = g.assume(Poisson(3.0));
        auto y = g.assume(UniformInt(0, 4));
        g.observe(g.subtract(x, y), 1);
        ++counts[g.value(y)[0]];
      }
      require_goodness_of_fit(counts, posterior(joint, 1, [](const Assignment& a) { return a[0] - a[1] == 1; }));
    }
    SECTION("a | c = 8 in the chain a -> b -> c") {
      std::map<std::int64_t, std::int64_t> counts;
      for (int r = 0; r < n; ++r) {
        Graph g(1, seed_of(r));
        ++counts[g.value(chain_program(g, 8).a)[0]];
      }
      require_goodness_of_fit(counts, posterior(chain_joint(8), 0, [](const Assignment&) { return true; }));
    }
    SECTION("k2 ~ Binomial(5, rho) after k1 ~ Binomial(10, rho) = 7, rho ~ Beta(2, 2): BetaBinomial(5, 9, 5)") {
      std::map<std::int64_t, std::int64_t> counts;
      for (int r = 0; r < n; ++r) {
        Graph g(1, seed_of(r));
        auto rho = g.assume(Beta(2, 2));
        g.observe(g.binomial(10, rho), 7);
        ++counts[g.value(g.binomial(5, rho))[0]];
      }
      Law want;
      for (std::int64_t k = 0; k <= 5; ++k) want[k] = exp_big(log_beta_binomial(5, k, 9, 5));
      require_goodness_of_fit(counts, want);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Conjugate updates and evidences equal their closed forms, one at a time and in sequence", "[runtime][programs][conjugate]") {
  const auto live = Graph::live_nodes();
  {
    SECTION("rho ~ Beta(2, 3); k_i ~ Binomial(n_i, rho) observed: Beta(2 + K, 3 + N - K), beta-binomial evidence") {
      const std::vector<std::pair<std::int64_t, std::int64_t>> obs = {{5, 2}, {7, 7}, {1, 0}, {10, 3}, {0, 0}};
      Graph g;
      auto rho = g.assume(Beta(2, 3));
      double a = 2, b = 3, total = 0;
      big batch = -log_beta_fn(big(2), big(3));
      for (const auto& [n, k] : obs) {
        const double ll = n == 1 ? g.observe(g.bernoulli(rho), k)[0] : g.observe(g.binomial(n, rho), k)[0];
        require_log_prob(ll, exp_big(log_beta_binomial(n, k, a, b)));
        a += static_cast<double>(k);
        b += static_cast<double>(n - k);
        REQUIRE(g.beta(rho)[0].alpha == a);
        REQUIRE(g.beta(rho)[0].beta == b);
        total += ll;
        batch += log_choose(n, k);
      }
      batch += log_beta_fn(big(a), big(b));  // sequential updates equal the batch closed form
      REQUIRE(relative_error_log(total, batch) <= 1e-12);
      REQUIRE(g.log_weights()[0] == Approx(total).epsilon(1e-15));
    }
    SECTION("lambda ~ Gamma(2.5, 1.5); c_i ~ Poisson(lambda) observed: Gamma(2.5 + C, 1.5 + m), negative binomial") {
      Graph g;
      auto lambda = g.assume(Gamma(2.5, 1.5));
      double shape = 2.5, rate = 1.5, total = 0;
      big batch = 0;
      for (std::int64_t c : {3, 0, 11, 2}) {
        const double ll = g.observe(g.poisson(lambda), c)[0];
        require_log_prob(ll, exp_big(log_gamma_poisson(c, shape, rate)));
        shape += static_cast<double>(c);
        rate += 1;
        REQUIRE(g.gamma(lambda)[0].shape == shape);
        REQUIRE(g.gamma(lambda)[0].rate == rate);
        total += ll;
        batch -= log_factorial(c);
      }
      using boost::multiprecision::log;
      batch += lgamma_big(big(shape)) - lgamma_big(big(2.5)) + big(2.5) * log(big(1.5)) - big(shape) * log(big(rate));
      REQUIRE(relative_error_log(total, batch) <= 1e-12);
    }
    SECTION("pi ~ Dirichlet(1, 2.5, .5); c_i ~ Categorical(pi) observed: alpha + counts, evidence alpha_c / sum") {
      Graph g;
      Eigen::VectorXd alpha(3);
      alpha << 1, 2.5, .5;
      auto pi = g.assume(Dirichlet(alpha));
      for (std::int64_t c : {1, 1, 2, 0, 2, 2}) {
        const double ll = g.observe(g.categorical(pi), c)[0];
        require_log_prob(ll, big(alpha[c]) / (big(alpha[0]) + big(alpha[1]) + big(alpha[2])));
        alpha[c] += 1;
        REQUIRE(g.dirichlet(pi)[0].alpha == alpha);
      }
    }
    SECTION("rho ~ Beta(20, 3); k ~ NegativeBinomial(2.5, rho) observed: Beta(22.5, 3 + k), beta-negative-binomial") {
      for (std::int64_t k : {0, 1, 4, 9, 30}) {
        Graph g;
        auto rho = g.assume(Beta(20, 3));
        require_log_prob(g.observe(g.negative_binomial(2.5, rho), k)[0], exp_big(log_beta_negative_binomial(k, 2.5, 20, 3)));
        REQUIRE(g.beta(rho)[0].alpha == 22.5);
        REQUIRE(g.beta(rho)[0].beta == 3.0 + static_cast<double>(k));
      }
    }
    SECTION("a realized parent: the count's evidence is the plain Binomial / Poisson pmf at the drawn value") {
      Graph g(1, 5);
      auto rho = g.assume(Beta(2, 2));
      auto lambda = g.assume(Gamma(3, 1));
      const double r = g.value(rho)[0][0], l = g.value(lambda)[0][0];
      REQUIRE((r > 0 && r < 1 && l > 0));
      require_log_prob(g.observe(g.binomial(9, rho), 4)[0], exp_big(log_binomial(9, 4, big(r))));
      require_log_prob(g.observe(g.poisson(lambda), 6)[0], exp_big(log_poisson(6, big(l))));
      REQUIRE_THROWS_AS(g.beta(rho), usage_error);  // realized: it has a value, not parameters
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("value(rho) after an observed grandchild is drawn from the exact posterior (mean test)", "[runtime][programs][conjugate]") {
  const auto live = Graph::live_nodes();
  {
    // rho ~ Beta(2, 2), k ~ Binomial(10, rho), j ~ Binomial(k, .5) = 4: P(k | j), then E[rho | k] = (2 + k) / 14
    Law pk;
    for (std::int64_t k = 4; k <= 10; ++k) pk[k] = exp_big(log_beta_binomial(10, k, 2, 2) + log_binomial(k, 4, big(.5)));
    pk = normalized(pk);
    double m = 0, m2 = 0;  // E[rho | j] and E[rho^2 | j]
    for (const auto& [k, p] : pk) {
      const double a = 2.0 + static_cast<double>(k), b = 12.0 - static_cast<double>(k);
      m += static_cast<double>(p) * a / (a + b);
      m2 += static_cast<double>(p) * a * (a + 1) / ((a + b) * (a + b + 1));
    }
    std::vector<double> draws;
    for (int r = 0; r < 5000; ++r) {
      Graph g(1, seed_of(r));
      auto rho = g.assume(Beta(2, 2));
      g.observe(g.assume(g.binomial(10, rho), Thinning(.5)), 4);
      draws.push_back(g.value(rho)[0][0]);
    }
    require_mean_near(draws, m, 5.0, std::sqrt(m2 - m * m));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("beta(rho) after an observed grandchild reflects the observation", "[runtime][programs][conjugate]") {
  const auto live = Graph::live_nodes();
  {
    // as above; beta(rho) reads the parameters: like marginal(), they must account for what k absorbed
    Law pk;
    for (std::int64_t k = 4; k <= 10; ++k) pk[k] = exp_big(log_beta_binomial(10, k, 2, 2) + log_binomial(k, 4, big(.5)));
    pk = normalized(pk);
    double m = 0, m2 = 0;  // E[E[rho | k] | j] and its second moment
    for (const auto& [k, p] : pk) {
      const double e = (2.0 + static_cast<double>(k)) / 14.0;
      m += static_cast<double>(p) * e;
      m2 += static_cast<double>(p) * e * e;
    }
    std::vector<double> means;
    for (int r = 0; r < 500; ++r) {
      Graph g(1, seed_of(r));
      auto rho = g.assume(Beta(2, 2));
      g.observe(g.assume(g.binomial(10, rho), Thinning(.5)), 4);
      means.push_back(mean(g.beta(rho)[0]));
    }
    require_mean_near(means, m, 5.0, std::sqrt(std::max(0.0, m2 - m * m)));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Impossible observations give -inf and leave the graph usable", "[runtime][programs][impossible]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(1, 3);
    auto fresh = [&] {  // a new variable still works: finite evidence, a draw in the support
      auto u = g.assume(Binomial(4, .5));
      auto v = g.assume(u, Thinning(.5));
      require_log_prob(g.observe(v, 1)[0], exp_big(log_binomial(4, 1, big(.25))));
      const auto vu = g.value(u)[0];
      REQUIRE((vu >= 1 && vu <= 4));
    };
    REQUIRE(g.observe(g.assume(Binomial(5, .5)), 9)[0] == ninf);
    REQUIRE(g.log_weights()[0] == ninf);
    fresh();
    REQUIRE(g.observe(g.assume(Binomial(5, .5)), -1)[0] == ninf);
    auto x = g.assume(Binomial(3, .5)), y = g.assume(Binomial(3, .5));
    REQUIRE(g.observe(g.add(x, y), 10)[0] == ninf);  // a sum outside [0, 6]
    const auto vx = g.value(x)[0];
    REQUIRE((vx >= 0 && vx <= 3));
    fresh();
    auto x2 = g.assume(Binomial(6, .5));
    REQUIRE(g.observe(g.add(x2, g.affine(x2, 1, 1)), 4)[0] == ninf);  // 2 x + 1 is odd
    fresh();
    auto x3 = g.assume(Binomial(5, .5));
    REQUIRE(g.observe(g.assume(x3, Thinning(.5)), 7)[0] == ninf);
    require_law_close(g.marginal(x3)[0], binomial_law(5, .5));  // unchanged by the impossible child
    auto a = g.assume(Categorical(Eigen::Vector2d(.5, .5)));
    Eigen::MatrixXd t(2, 3);
    t << .5, .5, 0, .2, .3, .5;
    REQUIRE(g.observe(g.assume(a, MarkovStep(t)), 3)[0] == ninf);
    REQUIRE(g.observe(g.assume(a, IndexedPoisson(Eigen::Vector2d(1, 2))), -1)[0] == ninf);
    fresh();
    auto rho = g.assume(Beta(2, 2));
    REQUIRE(g.observe(g.binomial(5, rho), 9)[0] == ninf);  // count > n
    REQUIRE(g.observe(g.negative_binomial(2, g.assume(Beta(20, 3))), -1)[0] == ninf);
    REQUIRE((g.beta(rho)[0].alpha == 2 && g.beta(rho)[0].beta == 2));
    require_log_prob(g.observe(g.binomial(4, rho), 1)[0], exp_big(log_beta_binomial(4, 1, 2, 2)));
    REQUIRE((g.beta(rho)[0].alpha == 3 && g.beta(rho)[0].beta == 5));
    auto lambda = g.assume(Gamma(2, 1));
    REQUIRE(g.observe(g.poisson(lambda), -3)[0] == ninf);
    auto pi = g.assume(Dirichlet(Eigen::Vector3d(1, 1, 1)));
    REQUIRE(g.observe(g.categorical(pi), 3)[0] == ninf);
    REQUIRE(g.observe(g.categorical(pi), -1)[0] == ninf);
    require_log_prob(g.observe(g.categorical(pi), 2)[0], big(1) / 3);
    fresh();
    REQUIRE(g.log_weights()[0] == ninf);
    // per particle: only the impossible particle gets -inf
    Graph h(2, 9);
    auto r2 = h.assume(Beta(2, 2));
    const auto ll = h.observe(h.binomial(std::vector<std::int64_t>{3, 3}, r2), std::vector<std::int64_t>{4, 1});
    REQUIRE(ll[0] == ninf);
    require_log_prob(ll[1], exp_big(log_beta_binomial(3, 1, 2, 2)));
    REQUIRE((h.beta(r2)[0].alpha == 2 && h.beta(r2)[1].alpha == 3 && h.beta(r2)[1].beta == 4));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Sums observed at the ends of the integer range are impossible, not errors", "[runtime][programs][impossible]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(1, 4);
    auto x = g.assume(UniformInt(-3, 3));
    auto y = g.assume(UniformInt(0, 3));
    std::vector<double> ll;
    REQUIRE_NOTHROW(ll = g.observe(g.add(x, y), std::numeric_limits<std::int64_t>::max()));
    REQUIRE(ll[0] == ninf);
    auto u = g.assume(UniformInt(-3, 3));
    auto v = g.assume(UniformInt(0, 3));
    REQUIRE_NOTHROW(ll = g.observe(g.subtract(u, v), std::numeric_limits<std::int64_t>::min()));
    REQUIRE(ll[0] == ninf);
    auto w = g.assume(Binomial(4, .5));
    REQUIRE(std::isfinite(g.observe(w, 2)[0]));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Observations in the truncated tail of an unbounded law get their exact log-likelihood, not -inf",
          "[runtime][programs][impossible]") {
  const auto live = Graph::live_nodes();
  {
    for (std::int64_t k : {26, 30, 40}) {  // P(x = 40) = 7e-31 for x ~ Poisson(3): unlikely, not impossible
      INFO("k = " << k);
      Graph g;
      require_log_prob(g.observe(g.assume(Poisson(3.0)), k)[0], exp_big(log_poisson(k, big(3.0))));
      auto s = g.assume(Poisson(3.0));  // a thinned child: Poisson(1.5)
      require_log_prob(g.observe(g.assume(s, Thinning(.5)), k)[0], exp_big(log_poisson(k, big(3.0) * big(.5))), 1e-10);
      auto rho = g.assume(Beta(20, 3));
      require_log_prob(g.observe(g.negative_binomial(2.5, rho), 2 * k)[0],
                       exp_big(log_beta_negative_binomial(2 * k, 2.5, 20, 3)), 1e-10);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Observations in a far tail are exact once the truncation is tightened (the documented remedy)",
          "[runtime][programs][impossible]") {
  const auto live = Graph::live_nodes();
  {
    for (std::int64_t k : {26, 30, 40}) {
      INFO("k = " << k);
      Graph g(1, 1, Truncation{1e-300});
      require_log_prob(g.observe(g.assume(Poisson(3.0)), k)[0], exp_big(log_poisson(k, big(3.0))));
      auto s = g.assume(Poisson(3.0));
      require_log_prob(g.observe(g.assume(s, Thinning(.5)), k)[0], exp_big(log_poisson(k, big(3.0) * big(.5))), 1e-10);
      Graph coarse;  // the default tolerance cut that tail: the observation extends the window from the family
      require_log_prob(coarse.observe(coarse.assume(Poisson(3.0)), k)[0], exp_big(log_poisson(k, big(3.0))));
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Misuse of the API gives clear errors", "[runtime][programs][misuse]") {
  const auto live = Graph::live_nodes();
  {
    Graph g, other;
    auto x = g.assume(Binomial(5, .5));
    g.observe(x, 2);
    REQUIRE_THROWS_AS(g.observe(x, 2), usage_error);
    REQUIRE_THROWS_WITH(g.observe(x, 3), Catch::Contains("already realized"));
    auto d = g.assume(Poisson(2.0));
    g.value(d);
    REQUIRE_THROWS_WITH(g.observe(d, 1), Catch::Contains("already realized"));
    const Variable empty;
    REQUIRE(empty.empty());
    REQUIRE_THROWS_AS(g.observe(empty, 1), usage_error);
    REQUIRE_THROWS_WITH(g.value(empty), Catch::Contains("empty"));
    REQUIRE_THROWS_AS(g.marginal(empty), usage_error);
    REQUIRE_THROWS_AS(g.add(empty, x), usage_error);
    REQUIRE_THROWS_AS(g.assume(empty, Thinning(.5)), usage_error);
    REQUIRE_THROWS_AS(g.beta(Continuous{}), usage_error);
    auto y = other.assume(Binomial(3, .5));
    REQUIRE_THROWS_WITH(g.observe(y, 1), Catch::Contains("another Graph"));
    REQUIRE_THROWS_AS(g.add(x, y), usage_error);
    REQUIRE_THROWS_AS(g.value(y), usage_error);
    auto rho_other = other.assume(Beta(1, 1));
    REQUIRE_THROWS_AS(g.binomial(3, rho_other), usage_error);
    REQUIRE_THROWS_AS(g.beta(rho_other), usage_error);
    REQUIRE_THROWS_AS(Graph(0, 1), domain_error);
    Graph four(4);
    auto z = four.assume(Binomial(5, .5));
    REQUIRE_THROWS_AS(four.observe(z, std::vector<std::int64_t>{1, 2, 3}), shape_error);
    REQUIRE_THROWS_AS(g.observe(g.assume(Binomial(5, .5)), std::vector<std::int64_t>{1, 2}), shape_error);
    REQUIRE_THROWS_AS(four.resample({0, 1, 2}), shape_error);
    REQUIRE_THROWS_AS(four.resample({0, 1, 2, 4}), domain_error);
    auto lambda = g.assume(Gamma(2, 1));
    auto rho = g.assume(Beta(2, 2));
    REQUIRE_THROWS_AS(g.beta(lambda), usage_error);
    REQUIRE_THROWS_AS(g.gamma(rho), usage_error);
    REQUIRE_THROWS_AS(g.dirichlet(rho), usage_error);
    REQUIRE_THROWS_AS(g.poisson(rho), usage_error);
    REQUIRE_THROWS_AS(g.binomial(3, lambda), usage_error);
    REQUIRE_THROWS_AS(g.categorical(lambda), usage_error);
    // after the errors the graph still works
    require_log_prob(four.observe(z, 2)[0], exp_big(log_binomial(5, 2, big(.5))));
    REQUIRE(std::isfinite(g.observe(g.binomial(3, rho), 1)[0]));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A refused parameter query changes nothing", "[runtime][programs][misuse]") {
  const auto live = Graph::live_nodes();
  {
    Graph g;
    auto lambda = g.assume(Gamma(2, 1));
    auto c = g.poisson(lambda);
    g.marginal(c);  // c is lambda's marginalized child, not yet realized
    REQUIRE_THROWS_AS(g.beta(lambda), usage_error);
    REQUIRE_THROWS_AS(g.dirichlet(lambda), usage_error);
    require_log_prob(g.observe(c, 3)[0], exp_big(log_gamma_poisson(3, 2, 1)));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Populations: per-particle evidence equals separate graphs, and resample copies the posterior", "[runtime][programs][population]") {
  const auto live = Graph::live_nodes();
  {
    auto program = [](Graph& g, auto&& z) {  // x ~ Binomial(8, .3), y ~ Binomial(x, .4), rho ~ Beta(2, 2)
      struct P {
        Variable x, y;
        Continuous rho;
        std::vector<double> ll;
      } p;
      p.x = g.assume(Binomial(8, .3));
      p.y = g.assume(p.x, Thinning(.4));
      p.rho = g.assume(Beta(2, 2));
      p.ll = g.observe(g.add(p.x, p.y), z);
      return p;
    };
    const std::size_t n = 64;
    SECTION("a deterministic program: every particle equals the P = 1 graph") {
      Graph one(1, 1), many(n, 2);
      const auto a = program(one, std::int64_t{6}), b = program(many, std::int64_t{6});
      const Pmf m1 = one.marginal(a.x)[0];
      const auto mm = many.marginal(b.x);
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(b.ll[i] == a.ll[0]);
        REQUIRE(many.log_weights()[i] == a.ll[0]);
        REQUIRE((mm[i].lo() == m1.lo() && mm[i].weights() == m1.weights()));
      }
    }
    SECTION("per-particle observations and trial counts, then resampling") {
      std::vector<std::int64_t> zs(n), ns(n), ks(n);
      for (std::size_t i = 0; i < n; ++i) {
        zs[i] = static_cast<std::int64_t>(i % 19) - 1;  // -1 and 17 impossible
        ns[i] = static_cast<std::int64_t>(i % 7);
        ks[i] = static_cast<std::int64_t>(i % 5);
      }
      Graph g(n, 11);
      const auto p = program(g, zs);
      const auto llk = g.observe(g.binomial(ns, p.rho), ks);
      for (std::size_t i = 0; i < n; ++i) {
        Graph one(1, 1);
        const auto q = program(one, zs[i]);
        REQUIRE(p.ll[i] == q.ll[0]);
        if (q.ll[0] == ninf) continue;
        REQUIRE(one.marginal(q.x)[0].weights() == g.marginal(p.x)[i].weights());
        if (ks[i] > ns[i]) REQUIRE(llk[i] == ninf);
        else require_log_prob(llk[i], exp_big(log_beta_binomial(ns[i], ks[i], 2, 2)));
      }
      const auto mx = g.marginal(p.x);
      const auto br = g.beta(p.rho);
      const auto lw = g.log_weights();
      std::vector<std::size_t> anc(n);
      for (std::size_t i = 0; i < n; ++i) anc[i] = (i * 37 + 5) % n;
      g.resample(anc);
      const auto mx2 = g.marginal(p.x);
      const auto br2 = g.beta(p.rho);
      const auto vx = g.value(p.x), vy = g.value(p.y);
      for (std::size_t i = 0; i < n; ++i) {
        INFO("particle " << i << ", ancestor " << anc[i]);
        REQUIRE(g.log_weights()[i] == lw[anc[i]]);
        REQUIRE((mx2[i].lo() == mx[anc[i]].lo() && mx2[i].weights() == mx[anc[i]].weights()));
        REQUIRE((br2[i].alpha == br[anc[i]].alpha && br2[i].beta == br[anc[i]].beta));
        if (lw[anc[i]] > ninf) REQUIRE(vx[i] + vy[i] == zs[anc[i]]);  // the tie y = z - x follows its particle
      }
      // the next observation continues from each particle's own (resampled) posterior
      const auto ll2 = g.observe(g.binomial(3, p.rho), 1);
      for (std::size_t i = 0; i < n; ++i) require_log_prob(ll2[i], exp_big(log_beta_binomial(3, 1, br2[i].alpha, br2[i].beta)));
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("x realized, y ~ Binomial(x, q), observe x + y: y is tied to z - x", "[runtime][programs]") {
  const auto live = Graph::live_nodes();
  {
    for (int r = 0; r < 20; ++r) {
      Graph g(1, seed_of(r));
      auto x = g.assume(Binomial(8, .3));
      auto y = g.assume(x, Thinning(.4));
      const auto vx = g.value(x)[0];  // or observe(x, ...): x is realized before the sum is grafted
      const double ll = g.observe(g.add(x, y), vx)[0];  // y = 0
      require_log_prob(ll, exp_big(log_binomial(vx, 0, big(.4))));
      INFO("x = " << vx);
      REQUIRE(g.value(y)[0] == 0);
    }
    for (int r = 0; r < 20; ++r) {  // unobserved, in the order x, x + y, y
      Graph g(1, seed_of(r));
      auto x = g.assume(Binomial(8, .3));
      auto y = g.assume(x, Thinning(.4));
      const auto vx = g.value(x)[0], vz = g.value(g.add(x, y))[0];
      REQUIRE(vx + g.value(y)[0] == vz);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_programs
