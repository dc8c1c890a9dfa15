// Resampling on the CPU: summaries of log-weights against 50 digits, systematic and multinomial counts, the tiles.
#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "gpu/log_weights.hpp"
#include "gpu/statistics.hpp"
#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"

namespace test_resample {

using namespace tally::gpu;
using tally::test::chi_square;
using tally::test::population;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("summaries of log-weights match 50 digits; bad weights are named", "[gpu][scans]") {
  const std::vector<double> l{-1000.0, -1001.5, -inf, -999.25, -1040.0};
  const auto s = cpu::summarize_log_weights(l);
  using tally::test::big;
  big sum = 0, sum2 = 0;
  for (const double x : l)
    if (x > -inf) {
      sum += boost::multiprecision::exp(big(x) + 1000);
      sum2 += boost::multiprecision::exp(2 * (big(x) + 1000));
    }
  CHECK(s.max_log_weight == -999.25);
  CHECK(tally::test::relative_error(s.log_sum, boost::multiprecision::log(sum) - 1000) < 1e-15);
  CHECK(tally::test::relative_error(s.ess, sum * sum / sum2) < 1e-14);
  CHECK_THROWS_AS(cpu::summarize_log_weights(std::vector<double>{}), tally::shape_error);
  CHECK_THROWS_AS(cpu::summarize_log_weights(std::vector<double>{0.0, NAN}), tally::domain_error);
  CHECK_THROWS_AS(cpu::resample(std::vector<double>{0.0, inf}, Resampler::systematic, 1, 0), tally::domain_error);
  CHECK_THROWS_WITH(cpu::resample(std::vector<double>{-inf, -inf}, Resampler::multinomial, 1, 0),
                    Catch::Contains("every log-weight is -inf"));
}

TEST_CASE("systematic resampling gives each particle within 1 of P w offspring; multinomial matches w", "[gpu][scans]") {
  std::mt19937_64 gen(601);
  std::uniform_real_distribution<double> u(-30.0, 0.0);
  const std::size_t p = 5000;
  std::vector<double> l(p);
  for (auto& x : l) x = u(gen);
  for (std::size_t i = 0; i < p; i += 7) l[i] = -inf;  // dead particles
  double total = 0;
  for (const double x : l) total += std::exp(x);
  for (std::uint64_t counter = 0; counter < 5; ++counter) {
    const auto a = cpu::resample(l, Resampler::systematic, 9, counter);
    REQUIRE(a.size() == p);
    REQUIRE(std::is_sorted(a.begin(), a.end()));
    std::vector<double> count(p, 0.0);
    for (const auto i : a) count[i] += 1;
    for (std::size_t i = 0; i < p; ++i) REQUIRE(std::abs(count[i] - double(p) * std::exp(l[i]) / total) < 1.0 + 1e-9);
  }
  // multinomial: P draws; the expected number of offspring of the 10 heaviest particles against the counts
  const std::size_t big_p = 200000;
  std::vector<double> lw(big_p, -20.0);
  for (std::size_t i = 0; i < 10; ++i) lw[i] = -double(i) * 0.1;
  lw[10] = -inf;
  const auto a = cpu::resample(lw, Resampler::multinomial, 4, 0);
  double z = 0;
  for (const double x : lw) z += std::exp(x);
  std::vector<double> count(11, 0.0), prob(11, 0.0);
  for (const auto i : a) {
    REQUIRE(i != 10);
    if (i < 10) count[i] += 1;
  }
  for (std::size_t i = 0; i < 10; ++i) prob[i] = std::exp(lw[i]) / z;
  const boost::math::chi_squared dist(9);
  CHECK(chi_square(count, prob, double(big_p)) < quantile(dist, 0.9999));
}

namespace {

/// What every systematic draw satisfies: P ancestors, nondecreasing and in range (each position written once, in
/// order), none of weight 0, and counts within 1 of P w_i (w_i from summarize_log_weights; slack: rounding).
void check_systematic(std::span<const double> l, const std::vector<std::size_t>& a, double slack) {
  const std::size_t p = l.size();
  REQUIRE(a.size() == p);
  REQUIRE(std::is_sorted(a.begin(), a.end()));
  REQUIRE(std::all_of(a.begin(), a.end(), [&](std::size_t i) { return i < p && l[i] > -inf; }));
  std::vector<double> count(p, 0.0);
  for (const auto i : a) count[i] += 1;
  const double log_sum = cpu::summarize_log_weights(l).log_sum;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < p; ++i)
    if (!(std::abs(count[i] - double(p) * std::exp(l[i] - log_sum)) < 1.0 + slack) && ++bad <= 3)
      UNSCOPED_INFO("particle " << i << ": " << count[i] << " offspring, log w = " << l[i] - log_sum);
  REQUIRE(bad == 0);
}

/// Systematic resampling with every sum exact (weights 0 or 1): k(c) = floor(c g + u) with g = P / W (one rounding
/// each, as documented), c the number of live particles up to i, straight from the contract.
std::vector<std::size_t> exact_systematic(std::span<const double> l, double u) {
  const std::size_t p = l.size();
  double w = 0;
  for (const double x : l) w += x > -inf ? 1.0 : 0.0;
  const double g = double(p) / w;
  const auto k = [&](double c) {
    return c >= w ? p : std::min(p, static_cast<std::size_t>(std::floor(std::fma(c, g, u))));
  };
  std::vector<std::size_t> out(p);
  double c = 0;
  std::size_t pos = 0;
  for (std::size_t i = 0; i < p; ++i) {
    c += l[i] > -inf ? 1.0 : 0.0;
    for (const std::size_t end = k(c); pos < end; ++pos) out[pos] = i;
  }
  return out;
}
}  // namespace

TEST_CASE("systematic resampling in tiles: counts within 1 of P w, every position once, the summary", "[gpu][scans]") {
  std::mt19937_64 gen(603);
  for (const std::size_t p : {1, 2, 3, 4, 4095, 4096, 4097, 3 * 4096 + 17, 100003})
    for (int kind = 0; kind < 10; ++kind) {
      INFO("P = " << p << ", kind " << kind);
      const auto l = population(gen, p, kind);
      const std::uint64_t seed = gen(), counter = gen() % 100;
      WeightSummary summary{};
      const auto a = cpu::resample(l, Resampler::systematic, seed, counter, &summary);
      check_systematic(l, a, 1e-8);
      const auto want = cpu::summarize_log_weights(l);  // within 1e-12 relative
      CHECK(summary.max_log_weight == want.max_log_weight);
      CHECK(std::abs(summary.log_sum - want.log_sum) <= 1e-12 * std::max(1.0, std::abs(want.log_sum)));
      CHECK(std::abs(summary.ess - want.ess) <= 1e-12 * want.ess);
      CHECK(cpu::resample(l, Resampler::systematic, seed, counter) == a);
      WeightSummary again{};
      cpu::resample(l, Resampler::multinomial, seed, counter, &again);  // the same tile passes
      CHECK(again.log_sum == summary.log_sum);
      CHECK(again.ess == summary.ess);
      // with every sum exact, the tiles (offsets, clamps, borders) change nothing: the contract's formula
      if (kind == 6 || kind == 3) CHECK(a == exact_systematic(l, philox_uniform(seed, 0, counter)));
    }
}

}  // namespace test_resample
