// Groups' weights: each group's summary and its own resampling, against the whole-population resampler group by
// group (CPU), and the device against the CPU reference on fresh random populations.
#include <catch2/catch.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "device.hpp"
#include "gpu/log_weights.hpp"
#include "tally/error.hpp"
#include "tally/gpu/group_weights.hpp"
#include "tally/gpu/philox.hpp"

namespace test_group_weights {

using namespace tally::gpu;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();

/// G groups of S log-weights, each group of a random kind of tally::test::population (groups of every weight -inf
/// kept: kind 3's forced survivor removed in every third group).
std::vector<double> groups_of(std::mt19937_64& gen, std::size_t groups, std::size_t size) {
  std::vector<double> l;
  for (std::size_t g = 0; g < groups; ++g) {
    auto part = tally::test::population(gen, size, static_cast<int>(gen() % 10));
    if (g % 3 == 2 && gen() % 2 == 0) part.assign(size, -inf);
    l.insert(l.end(), part.begin(), part.end());
  }
  return l;
}

/// The contract of resample_groups for one position, checked from the CPU's prefix sums: the ancestor's prefix sum
/// is above the target and the one before it is not (within rounding, for the device's other order of additions).
void check_positions(const std::vector<double>& l, std::size_t size, const GroupResampled& r, const GroupWeights& w,
                     double threshold, Resampler kind, std::uint64_t seed, std::uint64_t counter, double slack) {
  const auto ancestors = r.ancestors.to_host();
  const auto after = r.log_w.to_host();
  const auto flags = r.resampled.to_host();
  const auto largest = w.max_log_weight.to_host();
  const auto ess = w.ess.to_host();
  const std::size_t groups = l.size() / size;
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = g * size;
    const bool expected = largest[g] > -inf && (threshold >= 1.0 || ess[g] < threshold * double(size));
    REQUIRE(flags[g] == (expected ? 1 : 0));
    if (!expected) {
      for (std::size_t j = 0; j < size; ++j) {
        REQUIRE(ancestors[first + j] == first + j);
        REQUIRE(after[first + j] == l[first + j]);
      }
      continue;
    }
    std::vector<double> c(size);
    double sum = 0.0;
    for (std::size_t k = 0; k < size; ++k) c[k] = sum += std::exp(l[first + k] - largest[g]);
    const double total = c[size - 1];
    const double u = philox_uniform(seed, g, counter);
    for (std::size_t j = 0; j < size; ++j) {
      const std::size_t a = ancestors[first + j];
      REQUIRE(a >= first);
      REQUIRE(a < first + size);
      REQUIRE(after[first + j] == 0.0);
      REQUIRE(l[a] > -inf);  // never a particle of weight 0
      const double t = kind == Resampler::systematic ? (double(j) + u) * total / double(size)
                                                     : philox_uniform(seed, first + j, counter) * total;
      const std::size_t k = a - first;
      REQUIRE(c[k] >= t * (1 - slack));
      if (k > 0) REQUIRE(c[k - 1] <= t * (1 + slack));
    }
    if (kind == Resampler::systematic)
      for (std::size_t j = 1; j < size; ++j) REQUIRE(ancestors[first + j] >= ancestors[first + j - 1]);
  }
}

void check_summaries(const std::vector<double>& l, std::size_t size, const GroupWeights& w, double tolerance) {
  const auto largest = w.max_log_weight.to_host();
  const auto mean = w.log_mean_weight.to_host();
  const auto ess = w.ess.to_host();
  for (std::size_t g = 0; g < l.size() / size; ++g) {
    double m = -inf;
    for (std::size_t k = 0; k < size; ++k) m = std::max(m, l[g * size + k]);
    REQUIRE(largest[g] == m);
    if (m == -inf) {
      REQUIRE(mean[g] == -inf);
      REQUIRE(ess[g] == 0.0);
      continue;
    }
    long double s1 = 0, s2 = 0;
    for (std::size_t k = 0; k < size; ++k) {
      const long double x = std::exp(static_cast<long double>(l[g * size + k] - m));
      s1 += x;
      s2 += x * x;
    }
    REQUIRE(mean[g] == Approx(double(m + std::log(s1 / size))).epsilon(tolerance).margin(tolerance));
    REQUIRE(ess[g] == Approx(double(s1 * s1 / s2)).epsilon(tolerance));
    REQUIRE(ess[g] >= 1.0 - 1e-12);
    REQUIRE(ess[g] <= double(size) * (1 + 1e-12));
  }
}

void check_backend(Backend where) {
  std::mt19937_64 gen(Catch::rngSeed() + 4242);
  for (const std::size_t size : {std::size_t{1}, std::size_t{3}, std::size_t{32}, std::size_t{100}, std::size_t{1500},
                                 std::size_t{5000}}) {
    const std::size_t groups = size >= 1500 ? 5 : 37;
    const auto l = groups_of(gen, groups, size);
    const auto column = Column<double>::from_host(l, where);
    const GroupWeights w = summarize_groups(column, size);
    check_summaries(l, size, w, 1e-13);
    for (const Resampler kind : {Resampler::systematic, Resampler::multinomial})
      for (const double threshold : {1.0, 0.5, 0.0}) {
        const std::uint64_t seed = gen(), counter = gen() % 100;
        const GroupResampled r = resample_groups(column, size, w, threshold, kind, seed, counter);
        check_positions(l, size, r, w, threshold, kind, seed, counter, where == Backend::cpu ? 0.0 : 1e-13);
        if (where == Backend::cuda) {  // the CPU reference's draws, but where a target is within rounding
          const auto host = resample_groups(Column<double>::from_host(l, Backend::cpu), size,
                                            summarize_groups(Column<double>::from_host(l, Backend::cpu), size),
                                            threshold, kind, seed, counter);
          const auto a = r.ancestors.to_host(), b = host.ancestors.to_host();
          std::size_t differ = 0;
          for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
          REQUIRE(differ * 1000 <= a.size());
          REQUIRE(r.resampled.to_host() == host.resampled.to_host());
        }
      }
  }
}
}  // namespace

TEST_CASE("Groups' weights: each group's summary and its own resampling (CPU reference)", "[gpu][groups]") {
  check_backend(Backend::cpu);
}

TEST_CASE("device: groups' weights and resampling agree with the CPU reference", "[gpu][groups][device]") {
  if (tally::test::skip_without_device()) return;
  check_backend(Backend::cuda);
}

TEST_CASE("Groups' weights refuse bad shapes, NaN and +inf", "[gpu][groups]") {
  const auto l = Column<double>::from_host({0.0, -1.0, -2.0, -3.0}, Backend::cpu);
  REQUIRE_THROWS_AS(summarize_groups(l, 3), tally::shape_error);
  REQUIRE_THROWS_AS(summarize_groups(l, 0), tally::shape_error);
  REQUIRE_THROWS_AS(summarize_groups(Column<double>(), 1), tally::shape_error);
  REQUIRE_THROWS_AS(summarize_groups(Column<double>::from_host({0.0, std::nan("")}, Backend::cpu), 1),
                    tally::domain_error);
  REQUIRE_THROWS_AS(summarize_groups(Column<double>::from_host({0.0, inf}, Backend::cpu), 2), tally::domain_error);
  const GroupWeights w = summarize_groups(l, 2);
  REQUIRE_THROWS_AS(resample_groups(l, 4, w, 1.0, Resampler::systematic, 1, 0), tally::shape_error);
  REQUIRE_THROWS_AS(resample_groups(l, 2, w, -1.0, Resampler::systematic, 1, 0), tally::domain_error);
}

namespace {
/// Each group's weighted mean and variance of `values`, in long double from the definition (weights relative to the
/// group's largest, 1 each where all are -inf), as {mean, variance, ess} per group.
std::vector<std::array<long double, 3>> moments_by_definition(const std::vector<std::int64_t>& v,
                                                              const std::vector<double>& l, std::size_t size) {
  std::vector<std::array<long double, 3>> out;
  for (std::size_t first = 0; first < l.size(); first += size) {
    double m = -inf;
    for (std::size_t k = 0; k < size; ++k) m = std::max(m, l[first + k]);
    long double s1 = 0, s2 = 0, sv = 0;
    for (std::size_t k = 0; k < size; ++k) {
      const long double w = m > -inf ? std::exp(static_cast<long double>(l[first + k]) - m) : 1.0L;
      s1 += w, s2 += w * w, sv += w * v[first + k];
    }
    const long double mean = sv / s1;
    long double sd = 0;
    for (std::size_t k = 0; k < size; ++k) {
      const long double w = m > -inf ? std::exp(static_cast<long double>(l[first + k]) - m) : 1.0L;
      sd += w * (v[first + k] - mean) * (v[first + k] - mean);
    }
    out.push_back({mean, sd / s1, m > -inf ? s1 * s1 / s2 : 0.0L});
  }
  return out;
}
}  // namespace

TEST_CASE("Each group's weighted mean and variance of values (CPU by definition; device against CPU)",
          "[gpu][groups]") {
  std::mt19937_64 gen(Catch::rngSeed() + 41);
  for (const auto& [groups, size] : {std::pair<std::size_t, std::size_t>{1, 1}, {5, 7}, {300, 33}, {17, 700}, {3, 5000}}) {
    INFO(groups << " groups of " << size);
    const std::vector<double> l = groups_of(gen, groups, size);
    std::vector<std::int64_t> v(l.size());
    for (auto& x : v) x = static_cast<std::int64_t>(gen() % 2000) - 500;
    const GroupMoments h = summarize_values_by_group(Column<std::int64_t>::host_values(v), Column<double>::host_values(l), size);
    const auto want = moments_by_definition(v, l, size);
    for (std::size_t g = 0; g < groups; ++g) {
      INFO("group " << g);
      const auto close = [](double got, long double exact) {
        return std::abs(got - static_cast<double>(exact)) <= 1e-12 * std::max(1.0L, std::abs(exact));
      };
      REQUIRE(close(h.mean.host()[g], want[g][0]));
      REQUIRE(std::abs(h.variance.host()[g] - static_cast<double>(want[g][1])) <=
              1e-11 * std::max(1.0L, want[g][1]));
      REQUIRE(close(h.ess.host()[g], want[g][2]));
    }
    if (tally::test::skip_without_device()) continue;
    const GroupMoments d = summarize_values_by_group(Column<std::int64_t>::from_host(v, Backend::cuda),
                                                     Column<double>::from_host(l, Backend::cuda), size);
    const auto dm = d.mean.to_host(), dv = d.variance.to_host(), de = d.ess.to_host();
    for (std::size_t g = 0; g < groups; ++g) {
      INFO("group " << g);
      REQUIRE(std::abs(dm[g] - h.mean.host()[g]) <= 1e-12 * std::max(1.0, std::abs(h.mean.host()[g])));
      REQUIRE(std::abs(dv[g] - h.variance.host()[g]) <= 1e-11 * std::max(1.0, h.variance.host()[g]));
      REQUIRE(std::abs(de[g] - h.ess.host()[g]) <= 1e-12 * std::max(1.0, h.ess.host()[g]));
    }
  }
  REQUIRE_THROWS_AS(summarize_values_by_group(Column<std::int64_t>::host_values({1, 2, 3}),
                                              Column<double>::host_values({0.0, 0.0}), 1),
                    tally::shape_error);
  REQUIRE_THROWS_AS(summarize_values_by_group(Column<std::int64_t>::host_values({1, 2}),
                                              Column<double>::host_values({0.0, std::nan("")}), 1),
                    tally::domain_error);
}

}  // namespace test_group_weights
