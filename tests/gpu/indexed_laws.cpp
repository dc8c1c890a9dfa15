// Laws chosen from a table by an index: the host against the laws spread out, the device against the host, on
// fresh random tables (device cases skipped without a device).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "device.hpp"
#include "gpu/random_pmf.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/indexed_laws.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_indexed_laws {

namespace {

using namespace tally::gpu;
using tally::test::random_pmf;
using tally::test::skip_without_device;

/// K laws of random lengths (1 .. longest, or all `longest` long), weights of several shapes: sparse and tiny,
/// zeros at either end, a single mass, none at all (a dead law), on lo in -3 .. 3.
PmfBatch random_table(std::mt19937_64& gen, std::size_t k, std::size_t longest, bool equal_lengths) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PmfBatch b;
  for (std::size_t j = 0; j < k; ++j) {
    const std::size_t m = equal_lengths ? longest : 1 + gen() % longest;
    std::vector<double> w = random_pmf(gen, m, static_cast<int>(gen() % 6));
    const double top = *std::max_element(w.begin(), w.end());
    for (auto& x : w) x = top > 0.0 ? x / top : 0.0;  // PmfBatch's form: maximum 1 (or a dead law of zeros)
    b.weights.insert(b.weights.end(), w.begin(), w.end());
    b.offset.push_back(static_cast<std::int64_t>(b.weights.size()));
    b.lo.push_back(static_cast<std::int64_t>(gen() % 7) - 3);
    b.log_scale.push_back(top > 0.0 ? -5.0 * u(gen) : -std::numeric_limits<double>::infinity());
  }
  return b;
}

std::vector<std::int64_t> random_index(std::mt19937_64& gen, std::size_t p, std::size_t k) {
  std::vector<std::int64_t> v(p);
  for (auto& j : v) j = static_cast<std::int64_t>(gen() % k);
  return v;
}

/// Law i of `laws` is law index_i of `table`, entry for entry (zeros after its weights allowed: the device's form).
void require_spread(const PmfBatch& laws, const PmfBatch& table, const std::vector<std::int64_t>& index) {
  REQUIRE(laws.size() == index.size());
  for (std::size_t i = 0; i < index.size(); ++i) {
    const auto j = static_cast<std::size_t>(index[i]);
    INFO("particle " << i << ", law " << j);
    REQUIRE(laws.lo[i] == table.lo[j]);
    REQUIRE(laws.log_scale[i] == table.log_scale[j]);
    const auto a = laws[i], b = table[j];
    REQUIRE(a.size() >= b.size());
    REQUIRE(std::equal(b.begin(), b.end(), a.begin()));
    REQUIRE(std::all_of(a.begin() + static_cast<std::ptrdiff_t>(b.size()), a.end(), [](double w) { return w == 0.0; }));
  }
}

TEST_CASE("indexed laws on the host: the laws spread out, their draws and their log-likelihoods", "[gpu][indexed]") {
  std::mt19937_64 gen(std::random_device{}());
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t k = 1 + gen() % 12, p = 1 + gen() % 3000, longest = 1 + gen() % (trial % 4 == 0 ? 700 : 40);
    const PmfBatch t = random_table(gen, k, longest, trial % 3 == 0);
    const Laws table = Laws::from_host(t, Backend::cpu);
    const std::vector<std::int64_t> index = random_index(gen, p, k);
    const auto ix = Column<std::int64_t>::host_values(index);
    INFO("trial " << trial << ": " << k << " laws of at most " << longest << " values, " << p << " particles");
    const Laws spread = indexed(table, ix);
    require_spread(spread.host(), t, index);
    for (const std::uint64_t first : {std::uint64_t{0}, std::uint64_t{7}}) {  // the draws of the spread laws
      const std::uint64_t seed = gen(), counter = gen() % 100;
      CHECK(sample_indexed(table, ix, seed, counter, first).host() == sample(spread, seed, counter, first).host());
    }
    std::vector<double> x(k), acc(p);
    for (auto& v : x) v = std::log(std::uniform_real_distribution<double>(0.01, 1.0)(gen));
    for (auto& v : acc) v = std::uniform_real_distribution<double>(-3.0, 0.0)(gen);
    auto a = Column<double>::host_values(acc);
    add_indexed(a, Column<double>::host_values(x), ix);
    for (std::size_t i = 0; i < p; ++i) REQUIRE(a.host()[i] == acc[i] + x[static_cast<std::size_t>(index[i])]);
  }
}

TEST_CASE("indexed laws on the host: an index outside the table is a domain error, and nothing moves", "[gpu][indexed]") {
  std::mt19937_64 gen(20261202);
  const Laws table = Laws::from_host(random_table(gen, 3, 5, true), Backend::cpu);
  for (const std::int64_t bad : {std::int64_t{-1}, std::int64_t{3}, std::int64_t{1} << 40}) {
    std::vector<std::int64_t> index = {0, 2, 1, bad, 2};
    const auto ix = Column<std::int64_t>::host_values(index);
    CHECK_THROWS_AS(indexed(table, ix), tally::domain_error);
    CHECK_THROWS_AS(sample_indexed(table, ix, 1, 2), tally::domain_error);
    CHECK_THROWS_WITH(check_indices(ix, 3, "who"), Catch::Contains("particle 3") && Catch::Contains("who"));
    auto acc = Column<double>::host_values(std::vector<double>(5, 1.5));
    CHECK_THROWS_AS(add_indexed(acc, Column<double>::host_values({0.1, 0.2, 0.3}), ix), tally::domain_error);
    CHECK(acc.host() == std::vector<double>(5, 1.5));
  }
  auto acc = Column<double>::host_values(std::vector<double>(4, 0.0));
  CHECK_THROWS_AS(add_indexed(acc, Column<double>::host_values({0.1}), Column<std::int64_t>::host_values({0, 0})),
                  tally::shape_error);
}

TEST_CASE("indexed laws on the device are the host's", "[gpu][indexed][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (int trial = 0; trial < 24; ++trial) {
    // tables of equal lengths (spread without a read-back) and of several; laws past one tile of 256 weights
    const std::size_t k = 1 + gen() % 9, p = trial % 5 == 0 ? 300007 : 1 + gen() % 5000;
    const std::size_t longest = 1 + gen() % (trial % 4 == 0 ? 900 : 33);
    const PmfBatch t = random_table(gen, k, longest, trial % 2 == 0);
    const std::vector<std::int64_t> index = random_index(gen, p, k);
    INFO("trial " << trial << ": " << k << " laws of at most " << longest << " values, " << p << " particles");
    const Laws host_table = Laws::from_host(t, Backend::cpu), device_table = Laws::from_host(t, Backend::cuda);
    const auto host_ix = Column<std::int64_t>::host_values(index);
    const auto device_ix = Column<std::int64_t>::from_host(index, Backend::cuda);
    require_spread(indexed(device_table, device_ix).to_host(), t, index);
    require_spread(indexed(host_table, device_ix).to_host(), t, index);  // a host table with a device index
    const std::uint64_t seed = gen(), counter = gen() % 100, first = trial % 3 == 0 ? 11 : 0;
    const auto want = sample_indexed(host_table, host_ix, seed, counter, first).host();
    REQUIRE(sample_indexed(device_table, device_ix, seed, counter, first).to_host() == want);
    REQUIRE(sample_indexed(host_table, device_ix, seed, counter, first).to_host() == want);
    // K values, or more than go with a launch (300)
    std::vector<double> x(trial % 6 == 1 ? 300 : k), acc(p, -1.25);
    for (auto& v : x) v = -std::uniform_real_distribution<double>(0.0, 30.0)(gen);
    const std::vector<std::int64_t> x_index = random_index(gen, p, x.size());
    const auto host_x_ix = Column<std::int64_t>::host_values(x_index);
    const auto device_x_ix = Column<std::int64_t>::from_host(x_index, Backend::cuda);
    auto host_acc = Column<double>::host_values(acc);
    auto device_acc = Column<double>::from_host(acc, Backend::cuda);
    auto mixed_acc = Column<double>::from_host(acc, Backend::cuda);
    add_indexed(host_acc, Column<double>::host_values(x), host_x_ix);
    add_indexed(device_acc, Column<double>::from_host(x, Backend::cuda), device_x_ix);
    add_indexed(mixed_acc, Column<double>::host_values(x), device_x_ix);
    REQUIRE(device_acc.to_host() == host_acc.host());
    REQUIRE(mixed_acc.to_host() == host_acc.host());
  }
}

TEST_CASE("indexed laws on the device: an index outside the table is the host's domain error", "[gpu][indexed][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(20261203);
  for (const bool equal : {true, false}) {
    const Laws table = Laws::from_host(random_table(gen, 4, 6, equal), Backend::cuda);
    const auto ix = Column<std::int64_t>::from_host({0, 3, 2, 4, 1, -2}, Backend::cuda);
    CHECK_THROWS_WITH(indexed(table, ix), Catch::Contains("particle 3") && Catch::Contains("state 4"));
    CHECK_THROWS_WITH(sample_indexed(table, ix, 3, 4), Catch::Contains("particle 3"));
    CHECK_THROWS_WITH(check_indices(ix, 4, "who"), Catch::Contains("particle 3") && Catch::Contains("who"));
    auto acc = Column<double>::from_host(std::vector<double>(6, 0.0), Backend::cuda);
    CHECK_THROWS_AS(add_indexed(acc, Column<double>::from_host({1.0, 2.0, 3.0, 4.0}, Backend::cuda), ix),
                    tally::domain_error);
    CHECK_THROWS_AS(add_indexed(acc, Column<double>::host_values({1.0, 2.0, 3.0, 4.0}), ix), tally::domain_error);
    const Laws host_table = Laws::from_host(table.to_host(), Backend::cpu);
    CHECK_THROWS_WITH(sample_indexed(host_table, ix, 3, 4), Catch::Contains("particle 3"));
    CHECK_THROWS_AS(sample_indexed(table, Column<std::int64_t>::host_values({0, 1}), 3, 4), tally::shape_error);
    {  // deferred: raised where the host next waits, naming the same particle
      DeferChecks defer;
      auto drawn = sample_indexed(table, ix, 3, 4);
      CHECK_THROWS_WITH(drawn.to_host(), Catch::Contains("particle 3"));
    }
  }
}

}  // namespace

}  // namespace test_indexed_laws
