// Graph::resample_by_weight: the evidence increment, offspring counts, copied posteriors, and dead populations.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_resample_by_weight {

using namespace tally;
using namespace tally::runtime;

TEST_CASE("resample_by_weight resamples by the log-weights and resets them", "[runtime][resample]") {
  const std::size_t n = 500;
  Graph g(n, 21);
  const auto x = g.assume(Binomial(20, 0.5));
  std::vector<std::int64_t> obs(n);
  for (std::size_t i = 0; i < n; ++i) obs[i] = static_cast<std::int64_t>(i % 23);  // 21 and 22 impossible
  g.observe(x, obs);
  const auto lw = g.log_weights();
  double mean = 0;
  for (const double l : lw) mean += std::exp(l);
  mean /= double(n);
  const auto step = g.resample_by_weight();
  CHECK(step.log_mean_weight == Approx(std::log(mean)).epsilon(1e-13));
  CHECK(step.ess > 1.0);
  CHECK(step.ess < double(n));
  const std::vector<std::size_t> ancestors = step.ancestors.to_host();
  REQUIRE(ancestors.size() == n);
  std::vector<double> offspring(n, 0.0);
  for (const auto a : ancestors) offspring[a] += 1;
  for (std::size_t i = 0; i < n; ++i) REQUIRE(std::abs(offspring[i] - std::exp(lw[i]) / mean) < 1.0 + 1e-9);
  for (const double l : g.log_weights()) REQUIRE(l == 0.0);
  const auto v = g.value(x);  // every particle keeps its ancestor's observation
  for (std::size_t i = 0; i < n; ++i) REQUIRE(v[i] == obs[ancestors[i]]);
  // a second call draws other uniforms (another counter) but the same offspring when the weights are equal
  const auto again = g.resample_by_weight(gpu::Resampler::multinomial);
  CHECK(again.log_mean_weight == 0.0);
  CHECK(again.ess == Approx(double(n)));
}

TEST_CASE("resample_by_weight leaves a dead population as it is", "[runtime][resample]") {
  Graph g(8, 3);
  const auto x = g.assume(Binomial(4, 0.5));
  g.observe(x, 9);  // impossible everywhere
  const auto step = g.resample_by_weight();
  CHECK(step.log_mean_weight == -std::numeric_limits<double>::infinity());
  CHECK(step.ancestors.empty());
  for (const double l : g.log_weights()) CHECK(l == -std::numeric_limits<double>::infinity());
}

}  // namespace test_resample_by_weight
