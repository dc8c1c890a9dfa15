// Graph::assume keeps the laws it made for value families: the law made anew, for every family, past eviction.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_kept_priors {

using namespace tally;
using namespace tally::runtime;

namespace {

/// The same pmf, bit for bit: support, weights, scale and error bound.
void require_same(const Pmf& got, const Pmf& want) {
  REQUIRE(got.lo() == want.lo());
  REQUIRE(got.size() == want.size());
  for (Eigen::Index k = 0; k < want.size(); ++k) REQUIRE(got.weights()[k] == want.weights()[k]);
  REQUIRE(got.log_scale() == want.log_scale());
  REQUIRE(got.error_bound() == want.error_bound());
}

/// x's prior in g (nothing observed): what assume made or took from the kept laws.
Pmf prior_of(Graph& g, const Variable& x) { return g.marginal(x)[0]; }

}  // namespace

TEST_CASE("a value family's law, kept or made anew, is to_pmf's", "[runtime][kept_priors]") {
  Truncation t;
  t.tolerance = 1e-12;
  Graph g(1, 1, t);
  // each family once, then again after the others (by then the first ones have left the 8 kept): every law equal
  std::vector<std::pair<std::string, std::function<Variable()>>> assume;
  std::vector<Pmf> want;
  auto add = [&](const std::string& name, auto law) {
    assume.emplace_back(name, [&g, law] { return g.assume(law); });
    want.push_back(to_pmf(law, t));
  };
  add("Poisson(10)", Poisson(10));
  add("Poisson(10.5)", Poisson(10.5));
  add("Binomial(40, 0.3)", Binomial(40, 0.3));
  add("Binomial(41, 0.3)", Binomial(41, 0.3));
  add("Bernoulli(0.3)", Bernoulli(0.3));
  add("Geometric(0.3)", Geometric(0.3));  // the same 8 bytes as Bernoulli(0.3): told apart by the type
  add("NegativeBinomial(3, 0.4)", NegativeBinomial(3, 0.4));
  add("BetaBinomial(20, 2, 3)", BetaBinomial(20, 2, 3));
  add("UniformInt(-3, 9)", UniformInt(-3, 9));
  add("Hypergeometric(50, 20, 10)", Hypergeometric(50, 20, 10));
  add("Delta(7)", Delta(7));
  for (int round = 0; round < 3; ++round)
    for (std::size_t k = 0; k < assume.size(); ++k) {
      INFO(assume[k].first << ", round " << round);
      const Variable x = assume[k].second();
      require_same(prior_of(g, x), want[k]);
    }
  // repeated at once (the kept law given again) and mixed with a family that is not a value (made each time)
  for (int i = 0; i < 3; ++i) {
    require_same(prior_of(g, g.assume(Poisson(10))), want[0]);
    const Pmf c = prior_of(g, g.assume(Categorical(Eigen::Vector3d(0.2, 0.3, 0.5))));
    REQUIRE(c.size() == 3);
  }
}

TEST_CASE("a value family whose law cannot be made throws each time and keeps nothing", "[runtime][kept_priors]") {
  Truncation t;
  t.max_size = 1000;  // Poisson(1e6) needs thousands of entries: tally::overflow_error
  Graph g(2, 1, t);
  for (int i = 0; i < 2; ++i) REQUIRE_THROWS_AS(g.assume(Poisson(1e6)), overflow_error);
  // the graph goes on; a law that fits is kept and given again
  const Variable x = g.assume(Poisson(3)), y = g.assume(Poisson(3));
  require_same(prior_of(g, y), to_pmf(Poisson(3), t));
  const double ll = g.observe(g.add(x, y), 5)[0];
  REQUIRE(ll == Approx(log_pdf(Poisson(6), 5)).epsilon(1e-12));
}

}  // namespace test_kept_priors
