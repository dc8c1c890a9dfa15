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
  // narrow spans take the device's histogram path (also far from 0, and 4095 apart: its last bin), wide ones its sort
  for (const std::int64_t offset : {std::int64_t{0}, std::int64_t{-1'000'000'000'000}})
  for (const bool wide : {false, true}) {
    for (const std::size_t P : {std::size_t{1}, std::size_t{999}, std::size_t{1} << 20}) {
      INFO((wide ? "wide" : "narrow") << ", offset " << offset << ", P = " << P);
      auto [v, l] = population(gen, P, wide, offset);
      if (!wide && P > 1) v[P / 2] = offset + 4095, l[P / 2] = 0.0;
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
