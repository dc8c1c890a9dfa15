// Weighted summaries of population values: the CPU reference against a brute-force weighted inverse cdf in long
// double, its edge cases and errors, and the device against the host on fresh random populations.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "gpu/device.hpp"
#include "tally/error.hpp"
#include "tally/gpu/summaries.hpp"

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
const std::vector<double> probabilities{0.0, 0.05, 0.25, 0.5, 0.95, 1.0};

/// A random population: P values on a narrow (counts) or wide span, log-weights in [-30, 0] with some -inf.
std::pair<std::vector<std::int64_t>, std::vector<double>> population(std::mt19937_64& gen, std::size_t P, bool wide,
                                                                     std::int64_t offset = 0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::int64_t> v(P);
  std::vector<double> l(P);
  for (std::size_t i = 0; i < P; ++i) {
    v[i] = wide ? static_cast<std::int64_t>(gen() % 4'000'000'000ull) - 2'000'000'000 : static_cast<std::int64_t>(gen() % 50) + offset;
    l[i] = u(gen) < 0.2 ? -inf : -30.0 * u(gen);
  }
  return {v, l};
}

/// The summary by definition, in long double: sort, weigh, accumulate.
gpu::WeightedSummary brute_force(const std::vector<std::int64_t>& v, const std::vector<double>& l) {
  const double top = *std::max_element(l.begin(), l.end());
  std::vector<std::pair<std::int64_t, long double>> m;
  long double total = 0, squares = 0, weighted = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const long double w = top == -inf ? 1.0L : std::exp(static_cast<long double>(l[i]) - top);
    m.emplace_back(v[i], w);
    total += w, squares += w * w, weighted += w * static_cast<long double>(v[i]);
  }
  std::stable_sort(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  gpu::WeightedSummary s;
  s.mean = static_cast<double>(weighted / total);
  s.ess = static_cast<double>(total * total / squares);
  s.all_impossible = top == -inf;
  s.lo = *std::min_element(v.begin(), v.end());
  s.hi = *std::max_element(v.begin(), v.end());
  for (const double p : probabilities) {
    long double cum = 0;
    std::int64_t q = 0;
    for (const auto& [value, w] : m) {
      if (w == 0) continue;
      cum += w;
      q = value;  // the largest value of positive weight if the sum stops a hair below p
      if (cum / total >= p) break;
    }
    s.quantiles.push_back(q);
  }
  return s;
}

/// Equal summaries up to the rounding of sums in another order: `scale` bounds |v| (the mean's cancellation).
void require_same(const gpu::WeightedSummary& got, const gpu::WeightedSummary& want, bool exact_quantiles,
                  double scale = 0.0) {
  CHECK(got.all_impossible == want.all_impossible);
  CHECK(got.lo == want.lo);
  CHECK(got.hi == want.hi);
  CHECK(got.mean == Approx(want.mean).epsilon(1e-12).margin(1e-9 + 1e-13 * scale));
  CHECK(got.ess == Approx(want.ess).epsilon(1e-10));
  REQUIRE(got.quantiles.size() == want.quantiles.size());
  for (std::size_t q = 0; q < got.quantiles.size(); ++q) {
    INFO("p = " << probabilities[q]);
    if (exact_quantiles) CHECK(got.quantiles[q] == want.quantiles[q]);
  }
}

}  // namespace

TEST_CASE("summarize: the weighted mean, ESS and inverse cdf of random populations (CPU)", "[gpu][summaries]") {
  std::mt19937_64 gen(11);
  for (const bool wide : {false, true}) {
    for (const std::size_t P : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
      INFO((wide ? "wide" : "narrow") << ", P = " << P);
      for (int rep = 0; rep < 20; ++rep) {
        auto [v, l] = population(gen, P, wide);
        const auto got = gpu::summarize(Column<std::int64_t>::host_values(v), Column<double>::host_values(l), probabilities);
        const auto want = brute_force(v, l);
        // quantiles exact unless the cumulative weight lands within rounding of p (never at these sizes and seeds)
        require_same(got, want, true);
      }
    }
  }
}

TEST_CASE("summarize: every particle impossible gives the unweighted summary; errors", "[gpu][summaries]") {
  const std::vector<std::int64_t> v{5, 1, 3, 3};
  const auto s = gpu::summarize(Column<std::int64_t>::host_values(v), Column<double>::host_values({-inf, -inf, -inf, -inf}),
                                probabilities);
  CHECK(s.all_impossible);
  CHECK(s.mean == 3.0);
  CHECK(s.ess == 4.0);
  CHECK(s.quantiles == std::vector<std::int64_t>{1, 1, 1, 3, 5, 5});
  CHECK(s.lo == 1);  // every value's range, whatever its weight
  CHECK(s.hi == 5);
  const auto c = Column<std::int64_t>::host_values(v);
  CHECK_THROWS_AS(gpu::summarize(c, Column<double>::host_values({0, 0, 0}), probabilities), shape_error);
  CHECK_THROWS_AS(gpu::summarize(Column<std::int64_t>{}, Column<double>{}, probabilities), shape_error);
  CHECK_THROWS_AS(gpu::summarize(c, Column<double>::host_values({0, std::nan(""), 0, 0}), probabilities), domain_error);
  CHECK_THROWS_AS(gpu::summarize(c, Column<double>::host_values({0, inf, 0, 0}), probabilities), domain_error);
  const std::vector<double> bad{1.5};
  CHECK_THROWS_AS(gpu::summarize(c, Column<double>::host_values({0, 0, 0, 0}), bad), domain_error);
}

TEST_CASE("summarize: the device against the host", "[gpu][summaries][cuda]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(12);
  // narrow spans take the device's histogram path (also far from 0; values 512 apart: the last bin of a warp's own
  // bins, 4096 apart: the last of a block's), wide ones its sort
  for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{-1'000'000'000'000}})
  for (const bool wide : {false, true})
  for (const std::int64_t last : {49, 511, 4095}) {
    if (wide && last != 49) continue;
    for (const std::size_t P : {std::size_t{1}, std::size_t{999}, std::size_t{1} << 20}) {
      INFO((wide ? "wide" : "narrow") << ", offset " << offset << ", last " << last << ", P = " << P);
      auto [v, l] = population(gen, P, wide, offset);
      if (!wide && P > 1) v[P / 2] = offset + last, l[P / 2] = 0.0;
      const auto host = gpu::summarize(Column<std::int64_t>::host_values(v), Column<double>::host_values(l), probabilities);
      const auto device = gpu::summarize(Column<std::int64_t>::from_host(v, Backend::cuda),
                                         Column<double>::from_host(l, Backend::cuda), probabilities);
      require_same(device, host, P < 100'000, (wide ? 2e9 : 4096.0) + std::abs(static_cast<double>(offset)));  // at 2^20 a quantile may sit within rounding of p
      if (P >= 100'000)
        for (std::size_t q = 0; q < host.quantiles.size(); ++q) {
          INFO("p = " << probabilities[q]);
          CHECK(std::abs(device.quantiles[q] - host.quantiles[q]) <= (wide ? 20'000 : 1));
        }
    }
  }
  // errors found on the device are the host's
  const auto c = Column<std::int64_t>::from_host({1, 2}, Backend::cuda);
  CHECK_THROWS_AS(gpu::summarize(c, Column<double>::from_host({0, std::nan("")}, Backend::cuda), probabilities),
                  domain_error);
  const auto s = gpu::summarize(c, Column<double>::from_host({-inf, -inf}, Backend::cuda), probabilities);
  CHECK(s.all_impossible);
  CHECK(s.mean == 1.5);
  // more probabilities than the kernels take in their parameters (16): they go through device memory, on both paths
  std::vector<double> many;
  for (int q = 0; q <= 40; ++q) many.push_back(q / 40.0);
  for (const bool wide : {false, true}) {
    INFO((wide ? "wide" : "narrow") << ", 41 probabilities");
    const auto [v, l] = population(gen, 5000, wide, 0);
    const auto host = gpu::summarize(Column<std::int64_t>::host_values(v), Column<double>::host_values(l), many);
    const auto device = gpu::summarize(Column<std::int64_t>::from_host(v, Backend::cuda),
                                       Column<double>::from_host(l, Backend::cuda), many);
    CHECK(device.quantiles == host.quantiles);
  }
}

TEST_CASE("summarize: several columns under one set of weights, one copy back, as each alone", "[gpu][summaries]") {
  std::mt19937_64 gen(31);
  const std::size_t P = 5000;
  auto [narrow, l] = population(gen, P, false, 7);
  const auto wide = population(gen, P, true).first;  // the device's sort path for this one
  auto near = narrow;
  for (auto& x : near) x += 4000;
  const std::vector<std::vector<std::int64_t>> values{narrow, wide, near};
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  for (const Backend where : places) {
    INFO((where == Backend::cpu ? "cpu" : "cuda"));
    std::vector<Column<std::int64_t>> columns;
    for (const auto& v : values) columns.push_back(Column<std::int64_t>::from_host(v, where));
    const auto log_w = Column<double>::from_host(l, where);
    std::vector<const Column<std::int64_t>*> pointers;
    for (const auto& c : columns) pointers.push_back(&c);
    const auto all = gpu::summarize(std::span<const Column<std::int64_t>* const>(pointers), log_w, probabilities);
    REQUIRE(all.size() == values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
      INFO("column " << k);
      const auto alone = gpu::summarize(columns[k], log_w, probabilities);
      require_same(all[k], alone, true, k == 1 ? 2e9 : 5000.0);
      CHECK(all[k].mean == alone.mean);  // the same kernels in the same order: bit for bit
      require_same(all[k], brute_force(values[k], l), true, k == 1 ? 2e9 : 5000.0);
    }
    CHECK(gpu::summarize(std::span<const Column<std::int64_t>* const>(), log_w, probabilities).empty());
    // a bad log-weight is raised once, for all
    auto bad = l;
    bad[17] = std::nan("");
    CHECK_THROWS_AS(gpu::summarize(std::span<const Column<std::int64_t>* const>(pointers),
                                   Column<double>::from_host(bad, where), probabilities),
                    domain_error);
  }
}

TEST_CASE("summary parts: ranges, then sums and histograms under the population's top, host and device",
          "[gpu][summaries]") {
  std::random_device fresh;  // fresh inputs each run; the seed is printed with a failure
  const std::uint64_t seed = (std::uint64_t{fresh()} << 32) | fresh();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const bool device = gpu::cuda_available();
  if (!device) WARN("device half skipped: " << gpu::device_description());
  for (const std::size_t P : {std::size_t{1}, std::size_t{5000}, std::size_t{300'000}}) {
    INFO("P = " << P);
    // three columns: narrow, narrow far from 0, wide (no bins); log-weights with -inf among them
    std::vector<std::vector<std::int64_t>> values;
    for (const bool wide : {false, false, true})
      values.push_back(population(gen, P, wide, values.size() == 1 ? -7 : 0).first);
    std::vector<double> l = population(gen, P, false).second;
    l[0] = -1.0;  // some weight (every -inf is the case below)
    std::vector<Column<std::int64_t>> host_columns;
    for (const auto& v : values) host_columns.push_back(Column<std::int64_t>::host_values(v));
    std::vector<const Column<std::int64_t>*> host_pointers;
    for (const auto& c : host_columns) host_pointers.push_back(&c);
    const auto host_l = Column<double>::host_values(l);
    const auto ranges = gpu::detail::summary_ranges(host_pointers, host_l);
    REQUIRE(ranges.size() == 3);
    const double top = *std::max_element(l.begin(), l.end());
    std::vector<std::pair<std::int64_t, std::int64_t>> span;
    for (std::size_t k = 0; k < 3; ++k) {
      CHECK(ranges[k].top == top);
      CHECK(ranges[k].first_bad == P);
      CHECK(ranges[k].lo == *std::min_element(values[k].begin(), values[k].end()));
      CHECK(ranges[k].hi == *std::max_element(values[k].begin(), values[k].end()));
      span.emplace_back(ranges[k].lo - 3, ranges[k].hi + 2);  // a population's range holds a shard's
    }
    // the population's top may exceed this shard's: the weights relative to it
    const double population_top = top + 0.75;
    const auto sums = gpu::detail::summary_sums(host_pointers, host_l, population_top, span);
    for (std::size_t k = 0; k < 3; ++k) {
      long double total = 0, weighted = 0, squares = 0, magnitude = 0;  // (w v may cancel: |w v| bounds the error)
      for (std::size_t i = 0; i < P; ++i) {
        const long double w = std::exp(static_cast<long double>(l[i]) - population_top);
        total += w, weighted += w * values[k][i], squares += w * w, magnitude += w * std::abs(values[k][i]);
      }
      CHECK(sums[k].total == Approx(static_cast<double>(total)).epsilon(1e-12));
      CHECK(sums[k].weighted == Approx(static_cast<double>(weighted)).margin(1e-12 * static_cast<double>(magnitude)));
      CHECK(sums[k].squares == Approx(static_cast<double>(squares)).epsilon(1e-12));
      const bool narrow = span[k].second - span[k].first < gpu::detail::summary_bins;
      CHECK(sums[k].bins.size() == (narrow ? static_cast<std::size_t>(span[k].second - span[k].first + 1) : 0u));
      double binned = 0;
      for (const double b : sums[k].bins) binned += b;
      if (narrow) CHECK(binned == Approx(sums[k].total).epsilon(1e-12));
    }
    if (!device) continue;
    std::vector<Column<std::int64_t>> device_columns;
    for (const auto& v : values) device_columns.push_back(Column<std::int64_t>::from_host(v, Backend::cuda));
    std::vector<const Column<std::int64_t>*> device_pointers;
    for (const auto& c : device_columns) device_pointers.push_back(&c);
    const auto device_l = Column<double>::from_host(l, Backend::cuda);
    const auto device_ranges = gpu::detail::summary_ranges(device_pointers, device_l);
    const auto device_sums = gpu::detail::summary_sums(device_pointers, device_l, population_top, span);
    for (std::size_t k = 0; k < 3; ++k) {
      INFO("column " << k);
      CHECK(device_ranges[k].top == ranges[k].top);
      CHECK(device_ranges[k].lo == ranges[k].lo);
      CHECK(device_ranges[k].hi == ranges[k].hi);
      CHECK(device_ranges[k].first_bad == P);
      CHECK(device_sums[k].total == Approx(sums[k].total).epsilon(1e-12));
      CHECK(device_sums[k].weighted == Approx(sums[k].weighted).margin(1e-12 * sums[k].total * 2e9));
      CHECK(device_sums[k].squares == Approx(sums[k].squares).epsilon(1e-12));
      REQUIRE(device_sums[k].bins.size() == sums[k].bins.size());
      for (std::size_t b = 0; b < sums[k].bins.size(); ++b)
        if (!(std::abs(device_sums[k].bins[b] - sums[k].bins[b]) <= 1e-12 * std::max(1.0, sums[k].bins[b])))
          FAIL("bin " << b << ": " << device_sums[k].bins[b] << " != " << sums[k].bins[b]);
    }
  }
  // a bad log-weight's index; every -inf: top -inf, weights 1
  const auto v = Column<std::int64_t>::host_values({4, 5, 6});
  const Column<std::int64_t>* one[] = {&v};
  CHECK(gpu::detail::summary_ranges(one, Column<double>::host_values({0.0, inf, std::nan("")}))[0].first_bad == 1);
  const auto all_minus = Column<double>::host_values({-inf, -inf, -inf});
  const auto r = gpu::detail::summary_ranges(one, all_minus);
  CHECK(r[0].top == -inf);
  const std::pair<std::int64_t, std::int64_t> span[] = {{4, 6}};
  const auto s = gpu::detail::summary_sums(one, all_minus, -inf, span);
  CHECK(s[0].total == 3.0);
  CHECK(s[0].bins == std::vector<double>{1.0, 1.0, 1.0});
  const std::span<const std::pair<std::int64_t, std::int64_t>> no_ranges;
  CHECK_THROWS_AS(gpu::detail::summary_sums(one, all_minus, -inf, no_ranges), shape_error);
}
