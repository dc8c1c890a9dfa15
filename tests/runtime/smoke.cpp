// The example programs end to end: exact evidence against closed forms and the forward algorithm.
#include <catch2/catch.hpp>
#include <limits>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_smoke {

using namespace tally;
using namespace tally::runtime;

TEST_CASE("x ~ Binomial(100, .3), y ~ Binomial(x, .1), observe(x + y = 42): exact evidence", "[runtime][programs]") {
  Graph g;
  auto x = g.assume(Binomial(100, 0.3));
  auto y = g.assume(x, Thinning(0.1));
  auto z = g.add(x, y);
  const double ll = g.observe(z, 42)[0];
  double e = 0;
  for (int k = 0; k <= 42; ++k) e += pdf(Binomial(100, .3), k) * pdf(Binomial(k, .1), 42 - k);
  REQUIRE(ll == Approx(std::log(e)).epsilon(1e-13));
  REQUIRE(g.log_weights()[0] == ll);
  const auto vx = g.value(x)[0], vy = g.value(y)[0];
  REQUIRE(vx + vy == 42);
}

TEST_CASE("a hidden Markov model's evidence is the forward algorithm's", "[runtime][programs][hmm]") {
  Graph g;
  Eigen::MatrixXd T(2, 2);
  T << 0.9, 0.1, 0.2, 0.8;
  const Eigen::Vector2d rates(1.0, 5.0);
  const std::vector<int> ys = {0, 1, 4, 6, 5, 0, 1, 7, 3};
  double total = 0;
  Variable x = g.assume(Categorical(Eigen::Vector2d(0.5, 0.5)));
  for (std::size_t t = 0; t < ys.size(); ++t) {
    if (t > 0) x = g.assume(x, MarkovStep(T));
    total += g.observe(g.assume(x, IndexedPoisson(rates)), ys[t])[0];
  }
  Eigen::Vector2d f(0.5, 0.5);
  double evidence = 0;
  for (std::size_t t = 0; t < ys.size(); ++t) {
    if (t > 0) f = (f.transpose() * T).transpose();
    for (int s = 0; s < 2; ++s) f[s] *= pdf(Poisson(rates[s]), ys[t]);
    evidence += std::log(f.sum());
    f /= f.sum();
  }
  REQUIRE(total == Approx(evidence).epsilon(1e-13));
  // the filtered state is the forward algorithm's
  const Pmf last = g.marginal(x)[0];
  REQUIRE(pdf(last, 1) == Approx(f[1]).epsilon(1e-12));
}

TEST_CASE("an observed count of a heavy-tailed conjugate law costs no table", "[runtime][conjugate]") {
  // NegativeBinomial(2, rho), rho ~ Beta(2, 2): the marginal's tail falls like k^-2, so a table truncated at 1e-15
  // would need ~1e8 entries; observing the count needs only its closed form.
  const auto live = Graph::live_nodes();
  {
    Graph g;
    auto rho = g.assume(Beta(2, 2));
    const double ll = g.observe(g.negative_binomial(2, rho), 3)[0];
    // Gamma(2 + 3) / (3! Gamma(2)) B(2 + 2, 2 + 3) / B(2, 2)
    const double b45 = std::tgamma(4.0) * std::tgamma(5.0) / std::tgamma(9.0), b22 = 1.0 / 6.0;
    REQUIRE(ll == Approx(std::log(24.0 / 6.0 * b45 / b22)).epsilon(1e-13));
    const Beta post = g.beta(rho)[0];
    REQUIRE(post.alpha == 4.0);
    REQUIRE(post.beta == 5.0);
    REQUIRE(g.observe(g.negative_binomial(2, rho), -1)[0] == -std::numeric_limits<double>::infinity());
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_smoke
