// largest_later (tally/gpu/later_max.hpp): host columns' maxima at once; device columns' computed by one pass and
// read, never waited for, once the device has passed it; many columns, empty ones, and the slots reused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/gpu/later_max.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_later_max {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {
constexpr std::int64_t int64_min = std::numeric_limits<std::int64_t>::min();

std::vector<std::int64_t> random_values(std::size_t n, std::mt19937_64& gen) {
  std::uniform_int_distribution<std::int64_t> small(-1000, 1000);
  std::vector<std::int64_t> v(n);
  const bool negative = gen() % 3 == 0;  // some columns below 0 throughout
  for (auto& x : v) x = negative ? -1 - (small(gen) & 1023) : small(gen);
  if (n > 0 && gen() % 2 == 0) v[gen() % n] = static_cast<std::int64_t>(gen() >> 1);  // one far above the rest
  return v;
}

std::int64_t host_max(const std::vector<std::int64_t>& v) {
  return v.empty() ? int64_min : *std::max_element(v.begin(), v.end());
}
}  // namespace

TEST_CASE("largest_later: host columns are known at once, a known bound is itself", "[population][later_max]") {
  std::mt19937_64 gen(7);
  std::vector<Column<std::int64_t>> columns;
  for (std::size_t n : {0, 1, 17, 5000}) columns.push_back(Column<std::int64_t>::host_values(random_values(n, gen)));
  std::vector<const Column<std::int64_t>*> ptrs;
  for (const auto& c : columns) ptrs.push_back(&c);
  const std::vector<gpu::LaterMax> m = gpu::largest_later(ptrs);
  REQUIRE(m.size() == columns.size());
  for (std::size_t k = 0; k < columns.size(); ++k) {
    REQUIRE(m[k].value().has_value());
    CHECK(*m[k].value() == host_max(columns[k].host()));
  }
  CHECK(gpu::LaterMax(42).value() == std::optional<std::int64_t>(42));
  CHECK(gpu::LaterMax().empty());
  CHECK_FALSE(gpu::LaterMax().value().has_value());
}

TEST_CASE("largest_later: device maxima of many columns, read once the device has passed them",
          "[population][later_max][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261126);
  // 70 columns: three launches of at most 32; sizes from 0 to past a grid's worth of blocks
  const std::size_t sizes[] = {0, 1, 31, 32, 33, 255, 256, 2049, 65536, (1u << 20) + 3};
  std::vector<std::vector<std::int64_t>> host;
  std::vector<Column<std::int64_t>> columns;
  for (std::size_t k = 0; k < 70; ++k) {
    host.push_back(random_values(sizes[k % std::size(sizes)], gen));
    columns.push_back(Column<std::int64_t>::from_host(host.back(), Backend::cuda));
  }
  std::vector<const Column<std::int64_t>*> ptrs;
  for (const auto& c : columns) ptrs.push_back(&c);
  const std::vector<gpu::LaterMax> m = gpu::largest_later(ptrs);
  (void)columns.back().to_host();  // a wait: the pass, before it in stream order, is done
  for (std::size_t k = 0; k < columns.size(); ++k) {
    INFO("column " << k << " of " << host[k].size() << " values");
    REQUIRE(m[k].value().has_value());
    CHECK(*m[k].value() == host_max(host[k]));
  }
  // copies share the number; the slots go back and are reused far past their count (1024), each pass its own
  for (int round = 0; round < 1500; ++round) {
    const std::size_t k = static_cast<std::size_t>(round) % columns.size();
    std::vector<gpu::LaterMax> one = gpu::largest_later(std::span<const Column<std::int64_t>* const>(&ptrs[k], 1));
    const gpu::LaterMax copy = one[0];
    if (round % 100 == 0) {
      (void)columns[k].to_host();
      REQUIRE(copy.value() == std::optional<std::int64_t>(host_max(host[k])));
      REQUIRE(one[0].value() == copy.value());
    }
  }
  // values changed by an operation after a pass: a new pass sees them
  std::vector<std::int64_t> small(70000);
  for (std::size_t i = 0; i < small.size(); ++i) small[i] = static_cast<std::int64_t>((i * 7919) % 1000);
  const auto base = Column<std::int64_t>::from_host(small, Backend::cuda);
  const auto shifted = gpu::linear(base, 1, base, 0, 5);
  const Column<std::int64_t>* s = &shifted;
  const auto later = gpu::largest_later(std::span<const Column<std::int64_t>* const>(&s, 1));
  (void)shifted.to_host();
  CHECK(later[0].value() == std::optional<std::int64_t>(999 + 5));
}

}  // namespace test_later_max
