// Host particles whose inputs to an operation are identical share one computation (runtime/src/distinct.hpp): the
// grouping, the order and exceptions of the shared computations, and a population equal particle by particle to
// single graphs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/src/distinct.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_distinct_particles {

using namespace tally;
using tally::runtime::Graph;
using tally::runtime::Variable;

TEST_CASE("distinct inputs: grouped by identity even when every hash collides, computed once each, in order",
          "[population][distinct]") {
  const std::vector<std::int64_t> v{3, 5, 3, 3, 5, 7};
  for (bool colliding : {false, true}) {
    INFO((colliding ? "one hash for all" : "the values as hashes"));
    const auto first = runtime::detail::first_copies(
        v.size(), [&](std::size_t i) { return colliding ? std::uint64_t{42} : static_cast<std::uint64_t>(v[i]); },
        [&](std::size_t i, std::size_t j) { return v[i] == v[j]; });
    REQUIRE(first == std::vector<std::size_t>{0, 1, 0, 0, 1, 5});
    std::vector<std::size_t> calls;
    const auto out = runtime::detail::compute_once(first, [&](std::size_t i) {
      calls.push_back(i);
      return 10 * v[i];
    });
    REQUIRE(calls == std::vector<std::size_t>{0, 1, 5});
    for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(out[i] == 10 * v[i]);
    auto lists = runtime::detail::compute_once(first, [&](std::size_t i) { return std::vector<std::int64_t>(4, v[i]); });
    for (std::size_t i = 0; i < v.size(); ++i)  // handed over in order, each moved at its last particle
      REQUIRE(lists.take(i) == std::vector<std::int64_t>(4, v[i]));
    calls.clear();  // the first particle that fails is the one a loop over all particles would fail at
    REQUIRE_THROWS_WITH(runtime::detail::compute_once(first,
                                             [&](std::size_t i) {
                                               calls.push_back(i);
                                               if (v[i] != 3) throw std::runtime_error("particle " + std::to_string(i));
                                               return 0;
                                             }),
                        "particle 1");
    REQUIRE(calls == std::vector<std::size_t>{0, 1});
  }
}

TEST_CASE("distinct inputs: two laws are the same only when equal bit for bit", "[population][distinct]") {
  const Pmf a(4, Eigen::Vector3d(0.25, 1.0, 0.5), -1.5, 1e-12);
  REQUIRE(runtime::detail::same_law(a, Pmf(4, Eigen::Vector3d(0.25, 1.0, 0.5), -1.5, 1e-12)));
  REQUIRE(runtime::detail::law_hash(a) == runtime::detail::law_hash(Pmf(4, Eigen::Vector3d(0.25, 1.0, 0.5), -1.5, 1e-12)));
  REQUIRE_FALSE(runtime::detail::same_law(a, Pmf(4, Eigen::Vector3d(0.25, 1.0, std::nextafter(0.5, 1.0)), -1.5, 1e-12)));
  REQUIRE_FALSE(runtime::detail::same_law(a, Pmf(5, Eigen::Vector3d(0.25, 1.0, 0.5), -1.5, 1e-12)));
  REQUIRE_FALSE(runtime::detail::same_law(a, Pmf(4, Eigen::Vector3d(0.25, 1.0, 0.5), -1.25, 1e-12)));
  REQUIRE_FALSE(runtime::detail::same_law(a, Pmf(4, Eigen::Vector3d(0.25, 1.0, 0.5), -1.5, 2e-12)));
  REQUIRE_FALSE(runtime::detail::same_law(a, Pmf(4, Eigen::Vector4d(0.25, 1.0, 0.5, 0.5), -1.5, 1e-12)));
}

TEST_CASE("a host population whose particles repeat a few values equals single graphs, particle by particle",
          "[population][distinct]") {
  // N realized per particle (repeated values), then Binomial(N, 0.4) + Poisson(2) observed at 4 and a thinning of
  // the posterior observed at 1: each particle's log-weight and marginal must be those of a graph of one particle
  // with its own N, to the bit
  const std::vector<std::int64_t> n{3, 5, 3, 3, 5, 7, 0, 5};
  const auto program = [](Graph& g, const std::vector<std::int64_t>& values) {
    const Variable N = g.assume(Poisson(4.0));
    g.observe(N, values);
    const Variable S = g.add(g.binomial(N, 0.4), g.assume(Poisson(2.0)));
    g.observe(S, 4);
    g.observe(g.binomial(S, 0.7), 1);
    return g.marginal(S);
  };
  Graph population(n.size(), 7);
  const std::vector<Pmf> laws = program(population, n);
  const std::vector<double> weights = population.log_weights();
  for (std::size_t i = 0; i < n.size(); ++i) {
    INFO("particle " << i << ", N = " << n[i]);
    Graph one(1, 7);
    const std::vector<Pmf> law = program(one, {n[i]});
    REQUIRE(weights[i] == one.log_weights()[0]);
    REQUIRE(runtime::detail::same_law(laws[i], law[0]));
  }
}

TEST_CASE("a joint law made after a draw of a few values is made once a value, wherever its particles are",
          "[population][distinct][joint]") {
  // four units held, T = (U1 + U2) + (U3 + U4) observed at a value per particle: U1's marginal makes the units' joint
  // law, whose inputs (the ties' constants) take a few values in no order. Each particle must equal a graph of one
  // particle with its own value, and the population must hold one table a value: as many bytes as with the values
  // sorted (equal neighbours), fewer than with every value its own
  const auto program = [](Graph& g, const std::vector<std::int64_t>& t) {
    std::vector<Variable> u;
    for (int k = 0; k < 4; ++k) u.push_back(g.assume(Binomial(3 + k, 0.3 + 0.1 * k)));
    const Variable total = g.add(g.add(u[0], u[1]), g.add(u[2], u[3]));
    g.observe(total, t);
    std::vector<Pmf> laws = g.marginal(u[0]);
    return std::pair{std::move(laws), std::move(u)};
  };
  const std::vector<std::int64_t> interleaved{5, 8, 5, 8, 6, 5, 8, 6, 6, 5}, distinct{2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::vector<std::int64_t> sorted = interleaved;
  std::sort(sorted.begin(), sorted.end());
  const auto held = [&](const std::vector<std::int64_t>& t) {
    Graph g(t.size(), 3);
    const auto kept = program(g, t);  // the units held, so their joint law stays
    return g.bytes();
  };
  REQUIRE(held(interleaved) == held(sorted));
  REQUIRE(held(interleaved) < held(distinct));
  Graph population(interleaved.size(), 3);
  const auto [laws, units] = program(population, interleaved);
  const std::vector<double> weights = population.log_weights();
  for (std::size_t i = 0; i < interleaved.size(); ++i) {
    INFO("particle " << i << ", T = " << interleaved[i]);
    Graph one(1, 3);
    const auto [law, u] = program(one, {interleaved[i]});
    REQUIRE(weights[i] == Approx(one.log_weights()[0]).epsilon(1e-13));
    REQUIRE(laws[i].lo() == law[0].lo());
    REQUIRE(laws[i].size() == law[0].size());
    for (Eigen::Index k = 0; k < law[0].size(); ++k)
      REQUIRE(laws[i].probabilities()[k] == Approx(law[0].probabilities()[k]).margin(1e-14));
  }
}

}  // namespace test_distinct_particles
