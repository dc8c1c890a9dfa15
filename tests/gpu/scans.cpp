// Scans on the CPU: batched inverse-cdf sampling (frequencies, the definition), resampling, scans along chains.
#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/chain_scan.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sample_batched.hpp"

using namespace tally::gpu;

namespace {
/// Pearson's statistic of observed counts against expected probabilities (cells of positive probability).
double chi_square(const std::vector<double>& counts, const std::vector<double>& probabilities, double draws) {
  double x2 = 0;
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (probabilities[k] > 0) x2 += std::pow(counts[k] - draws * probabilities[k], 2) / (draws * probabilities[k]);
  return x2;
}
constexpr double inf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("batched sampling draws each value with its probability and never a zero weight", "[gpu][scans]") {
  const std::vector<double> w{1.0, 0.0, 0.5, 2e-3, 0.25, 0.0, 0.9};
  PmfBatch batch;
  const std::size_t p = 200000;
  for (std::size_t i = 0; i < p; ++i) batch.push_back(w, -3 + static_cast<std::int64_t>(i % 5));
  const auto draws = cpu::sample_batched(batch, 42, 7);
  std::vector<double> counts(w.size(), 0.0), probabilities(w.size());
  double total = 0;
  for (const double x : w) total += x;
  for (std::size_t k = 0; k < w.size(); ++k) probabilities[k] = w[k] / total;
  for (std::size_t i = 0; i < p; ++i) {
    const auto k = draws[i] - batch.lo[i];
    REQUIRE(k >= 0);
    REQUIRE(k < static_cast<std::int64_t>(w.size()));
    REQUIRE(w[static_cast<std::size_t>(k)] > 0);
    counts[static_cast<std::size_t>(k)] += 1;
  }
  const boost::math::chi_squared dist(4);  // 5 cells of positive probability
  CHECK(chi_square(counts, probabilities, double(p)) < quantile(dist, 0.9999));
  CHECK(cpu::sample_batched(batch, 42, 7) == draws);  // reproducible
  CHECK(cpu::sample_batched(batch, 42, 8) != draws);  // another counter, other draws
}

TEST_CASE("batched sampling inverts the cdf as documented, across chunks", "[gpu][scans]") {
  PmfBatch batch;
  batch.push_back(std::vector<double>{1.0, 1.0}, 10);  // draws 11 exactly when 2u >= 1
  std::vector<double> spike(3000, 0.0);
  spike[2999] = 1.0;
  batch.push_back(spike, 0);  // only the last of 94 chunks has mass
  batch.push_back(std::vector<double>{0.0, 0.0, 0.0}, 5);  // no mass: draws lo
  std::vector<double> ramp(100);
  for (std::size_t k = 0; k < ramp.size(); ++k) ramp[k] = double(k + 1) / 100.0;
  batch.push_back(ramp, -50);
  for (std::uint64_t counter = 0; counter < 50; ++counter) {
    const auto d = cpu::sample_batched(batch, 3, counter);
    CHECK(d[0] == (2.0 * philox_uniform(3, 0, counter) >= 1.0 ? 11 : 10));
    CHECK(d[1] == 2999);
    CHECK(d[2] == 5);
    // the ramp: the smallest k with (k+1)(k+2)/2 > u * 5050, up to rounding of the sums
    const double t = philox_uniform(3, 3, counter) * 5050.0;
    std::int64_t k = 0;
    while (static_cast<double>((k + 1) * (k + 2)) / 2.0 <= t) ++k;
    CHECK(std::abs(d[3] - (-50 + k)) <= 1);
  }
}

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

TEST_CASE("scans along chains restart at every head", "[gpu][scans]") {
  std::mt19937_64 gen(602);
  const std::size_t n = 1000;
  std::vector<std::uint64_t> x(n);
  std::vector<double> y(n);
  std::vector<std::uint8_t> head(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::uint64_t{1} << (gen() % 64);
    y[i] = double(gen() % 100);
    head[i] = gen() % 10 == 0;
  }
  const auto o = cpu::chain_prefix_or(x, head);
  const auto s = cpu::chain_prefix_sum(y, head);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t h = i;
    while (h > 0 && !head[h]) --h;
    std::uint64_t want_or = 0;
    double want_sum = 0;
    for (std::size_t j = h; j <= i; ++j) {
      want_or |= x[j];
      want_sum += y[j];
    }
    REQUIRE(o[i] == want_or);
    REQUIRE(s[i] == want_sum);  // integers: exact
  }
  CHECK_THROWS_AS(cpu::chain_prefix_or(x, std::vector<std::uint8_t>(3)), tally::shape_error);
}
