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

namespace test_summaries {

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

namespace {
/// The parts of G shards (contiguous slices of the columns and log-weights) where `where` says: each shard's part 1
/// (tag: its rank + 5), all of them laid end to end, and each shard's part 2 from those, back on the host.
struct ShardParts {
  std::vector<std::vector<std::int64_t>> ranges;  // each shard's part 1
  std::vector<std::int64_t> gathered;
  std::vector<std::vector<double>> sums;          // each shard's part 2
};
ShardParts shard_parts(const std::vector<std::vector<std::int64_t>>& values, const std::vector<double>& l,
                       std::size_t shards, Backend where) {
  const std::size_t P = l.size();
  std::vector<std::vector<Column<std::int64_t>>> columns(shards);
  std::vector<Column<double>> weights;
  for (std::size_t r = 0; r < shards; ++r) {
    const std::size_t a = P * r / shards, b = P * (r + 1) / shards;
    for (const auto& v : values) {
      std::vector<std::int64_t> slice(b - a);  // (filled by a loop: g++ 12 misreads an iterator range's copy here)
      for (std::size_t i = a; i < b; ++i) slice[i - a] = v[i];
      columns[r].push_back(Column<std::int64_t>::from_host(slice, where));
    }
    std::vector<double> slice(b - a);
    for (std::size_t i = a; i < b; ++i) slice[i - a] = l[i];
    weights.push_back(Column<double>::from_host(slice, where));
  }
  auto pointers = [&](std::size_t r) {
    std::vector<const Column<std::int64_t>*> out;
    for (const auto& c : columns[r]) out.push_back(&c);
    return out;
  };
  ShardParts out;
  for (std::size_t r = 0; r < shards; ++r) {
    const auto mine = pointers(r);
    out.ranges.push_back(gpu::detail::summary_ranges(mine, weights[r], static_cast<std::int64_t>(r + 5)).to_host());
    out.gathered.insert(out.gathered.end(), out.ranges.back().begin(), out.ranges.back().end());
  }
  const auto gathered = Column<std::int64_t>::from_host(out.gathered, where);
  for (std::size_t r = 0; r < shards; ++r) {
    const auto mine = pointers(r);
    out.sums.push_back(gpu::detail::summary_sums(mine, weights[r], gathered).to_host());
  }
  return out;
}
}  // namespace

TEST_CASE("summary parts: G shards' ranges, then their sums and histograms under the population's top, host and "
          "device",
          "[gpu][summaries]") {
  std::random_device fresh;  // fresh inputs each run; the seed is printed with a failure
  const std::uint64_t seed = (std::uint64_t{fresh()} << 32) | fresh();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const bool device = gpu::cuda_available();
  if (!device) WARN("device half skipped: " << gpu::device_description());
  constexpr std::size_t S = gpu::detail::summary_sums_size;
  for (const std::size_t P : {std::size_t{1}, std::size_t{5000}, std::size_t{300'000}})
    for (const std::size_t shards : {std::size_t{1}, std::size_t{3}}) {
      if (shards > P) continue;
      INFO("P = " << P << ", " << shards << " shards");
      // three columns: narrow, narrow far from 0, wide (no bins); log-weights with -inf among them
      std::vector<std::vector<std::int64_t>> values;
      for (const bool wide : {false, false, true})
        values.push_back(population(gen, P, wide, values.size() == 1 ? -7 : 0).first);
      std::vector<double> l = population(gen, P, false).second;
      l[0] = -1.0;  // some weight (every -inf is the case below)
      const ShardParts host = shard_parts(values, l, shards, Backend::cpu);
      const double top = *std::max_element(l.begin(), l.end());
      for (std::size_t r = 0; r < shards; ++r) {
        const std::size_t a = P * r / shards, b = P * (r + 1) / shards;
        REQUIRE(host.ranges[r].size() == 3 * gpu::detail::summary_range_words + 1);
        CHECK(host.ranges[r].back() == static_cast<std::int64_t>(r + 5));  // the tag
        for (std::size_t k = 0; k < 3; ++k) {
          const auto got = gpu::detail::summary_range_of(host.ranges[r], k);
          CHECK(got.top == *std::max_element(l.begin() + a, l.begin() + b));
          CHECK(got.first_bad == b - a);
          CHECK(got.lo == *std::min_element(values[k].begin() + a, values[k].begin() + b));
          CHECK(got.hi == *std::max_element(values[k].begin() + a, values[k].begin() + b));
        }
      }
      for (std::size_t k = 0; k < 3; ++k) {
        INFO("column " << k);
        const auto range = gpu::detail::population_range(host.gathered, 3, k);
        CHECK(range.top == top);
        CHECK(range.lo == *std::min_element(values[k].begin(), values[k].end()));
        CHECK(range.hi == *std::max_element(values[k].begin(), values[k].end()));
        // the shards' sums and bins, added, against the population's by definition (long double)
        long double total = 0, weighted = 0, squares = 0, magnitude = 0;  // (w v may cancel: |w v| bounds the error)
        std::vector<long double> bins(gpu::detail::summary_bins, 0.0L);
        const bool narrow = range.hi - range.lo < gpu::detail::summary_bins;
        for (std::size_t i = 0; i < P; ++i) {
          const long double w = std::exp(static_cast<long double>(l[i]) - top);
          total += w, weighted += w * values[k][i], squares += w * w, magnitude += w * std::abs(values[k][i]);
          if (narrow) bins[static_cast<std::size_t>(values[k][i] - range.lo)] += w;
        }
        std::vector<double> added(S, 0.0);
        for (std::size_t r = 0; r < shards; ++r)
          for (std::size_t j = 0; j < S; ++j) added[j] += host.sums[r][k * S + j];
        CHECK(added[0] == Approx(static_cast<double>(total)).epsilon(1e-12));
        CHECK(added[1] == Approx(static_cast<double>(weighted)).margin(1e-12 * static_cast<double>(magnitude)));
        CHECK(added[2] == Approx(static_cast<double>(squares)).epsilon(1e-12));
        for (std::size_t b = 0; b < bins.size(); ++b)  // (zeros past the range, and everywhere for the wide column)
          if (!(std::abs(added[3 + b] - static_cast<double>(bins[b])) <= 1e-12 * std::max(1.0, added[3 + b])))
            FAIL("bin " << b << ": " << added[3 + b] << " != " << static_cast<double>(bins[b]));
      }
      if (!device) continue;
      const ShardParts dev = shard_parts(values, l, shards, Backend::cuda);
      CHECK(dev.gathered == host.gathered);  // the ranges exactly (the words of top's key, lo, hi, first_bad, tag)
      for (std::size_t r = 0; r < shards; ++r)
        for (std::size_t j = 0; j < 3 * S; ++j)
          if (!(std::abs(dev.sums[r][j] - host.sums[r][j]) <= 1e-12 * std::max(1.0, std::abs(host.sums[r][j])) *
                                                                 (j % S == 1 ? 2e9 : 1.0)))
            FAIL("shard " << r << ", word " << j << ": device " << dev.sums[r][j] << ", host " << host.sums[r][j]);
    }
  // a bad log-weight's index; every -inf: top -inf, weights 1
  const auto v = Column<std::int64_t>::host_values({4, 5, 6});
  const Column<std::int64_t>* one[] = {&v};
  const std::span<const Column<std::int64_t>* const> column(one);
  const auto with_bad = gpu::detail::summary_ranges(column, Column<double>::host_values({0.0, inf, std::nan("")}), 1);
  CHECK(gpu::detail::summary_range_of(with_bad.host(), 0).first_bad == 1);
  const auto all_minus = Column<double>::host_values({-inf, -inf, -inf});
  const auto r = gpu::detail::summary_ranges(column, all_minus, 1);
  CHECK(gpu::detail::summary_range_of(r.host(), 0).top == -inf);
  const auto s = gpu::detail::summary_sums(column, all_minus, r).to_host();
  CHECK(s[0] == 3.0);
  CHECK(std::vector<double>(s.begin() + 3, s.begin() + 7) == std::vector<double>{1.0, 1.0, 1.0, 0.0});
  CHECK_THROWS_AS(gpu::detail::summary_sums(column, all_minus, Column<std::int64_t>::host_values({1, 2})), shape_error);
}

}  // namespace test_summaries
