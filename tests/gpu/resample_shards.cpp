// A shard's part in systematic resampling: G shards' passes over their own tiles give the unsharded resampler's draws.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "device.hpp"
#include "gpu/log_weights.hpp"
#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/resample_shards.hpp"

namespace test_resample_shards {

using namespace tally::gpu;
using tally::test::population;

namespace {
constexpr std::size_t tile = tiles::tile_size;

/// What the G shards' passes give, joined: the ancestors of every position in rank order, the summary (the same
/// on every shard), and the largest log-weight.
struct Joined {
  std::vector<std::size_t> ancestors;
  WeightSummary summary{};
  double largest = 0;
  std::vector<std::size_t> tiles;  // the plan's tiles of each shard's first and last positions' ancestors
};

/// The three passes of G shards of S particles, run one shard after the other in this process (the all-gather is
/// the reports laid end to end).
Joined sharded(Backend where, const std::vector<double>& l, std::size_t shards, double u) {
  const std::size_t s = l.size() / shards;
  std::vector<ShardedSystematic> parts;
  std::vector<double> reports;
  for (std::size_t r = 0; r < shards; ++r) {
    parts.emplace_back(where, shards, r, s, u);
    const std::vector<double> mine(l.begin() + static_cast<std::ptrdiff_t>(r * s),
                                   l.begin() + static_cast<std::ptrdiff_t>((r + 1) * s));
    const auto report = parts.back().report(Column<double>::from_host(mine, where)).to_host();
    REQUIRE(report.size() == parts.back().report_size());
    reports.insert(reports.end(), report.begin(), report.end());
  }
  const auto gathered = Column<double>::from_host(reports, where);
  Joined out;
  for (std::size_t r = 0; r < shards; ++r) {
    const ShardedSystematic::Plan& plan = parts[r].plan(gathered);
    if (r == 0) {
      out.largest = plan.largest;
      out.summary = plan.summary;
      out.tiles = plan.tiles;
    }
    REQUIRE(plan.largest == out.largest);  // pass 2 is the same on every shard
    if (!std::isfinite(plan.largest)) continue;
    REQUIRE(plan.summary.log_sum == out.summary.log_sum);
    REQUIRE(plan.tiles == out.tiles);
    REQUIRE(plan.tiles.size() == 2 * shards);
    REQUIRE(plan.start.size() == shards + 1);
    REQUIRE(plan.start[shards] == l.size());
    const std::vector<double> mine(l.begin() + static_cast<std::ptrdiff_t>(r * s),
                                   l.begin() + static_cast<std::ptrdiff_t>((r + 1) * s));
    const auto written = parts[r].ancestors(Column<double>::from_host(mine, where)).to_host();
    REQUIRE(written.size() == plan.start[r + 1] - plan.start[r]);
    for (const std::size_t a : written) {  // a shard's positions take its own particles only
      REQUIRE(a >= r * s);
      REQUIRE(a < (r + 1) * s);
    }
    out.ancestors.insert(out.ancestors.end(), written.begin(), written.end());
  }
  return out;
}

void check_against_unsharded(Backend where) {
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t shards : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}, std::size_t{8}})
    for (const std::size_t tiles_per_shard : {std::size_t{1}, std::size_t{2}, std::size_t{5}})
      for (int kind = 0; kind < 10; ++kind) {
        const std::size_t p = shards * tiles_per_shard * tile;
        INFO((where == Backend::cpu ? "cpu" : "cuda") << ": " << shards << " shards of " << tiles_per_shard
                                                      << " tiles, kind " << kind);
        const auto l = population(gen, p, kind);
        const std::uint64_t seed = gen(), counter = gen() % 1000;
        // the unsharded resampler where the columns live: the host reference, or the device's fused kernels
        WeightSummary want_summary{};
        const auto want =
            resample(Column<double>::from_host(l, where), Resampler::systematic, seed, counter, want_summary).to_host();
        const Joined got = sharded(where, l, shards, philox_uniform(seed, 0, counter));
        REQUIRE(got.largest == want_summary.max_log_weight);
        REQUIRE(got.summary.max_log_weight == want_summary.max_log_weight);
        REQUIRE(got.summary.log_sum == want_summary.log_sum);
        REQUIRE(got.summary.ess == want_summary.ess);
        REQUIRE(got.ancestors == want);
        if (!std::isfinite(got.largest)) continue;
        // the plan knows, before pass 3, the tile of each shard's first and last positions' ancestors
        const std::size_t s = p / shards;
        for (std::size_t r = 0; r < shards; ++r) {
          REQUIRE(got.tiles[2 * r] == want[r * s] / tile);
          REQUIRE(got.tiles[2 * r + 1] == want[(r + 1) * s - 1] / tile);
        }
      }
}
}  // namespace

TEST_CASE("G shards' passes over their own tiles give the unsharded systematic draws and summary", "[gpu][scans]") {
  check_against_unsharded(Backend::cpu);
}

TEST_CASE("device: G shards' passes over their own tiles give the unsharded fused resampler's draws",
          "[gpu][scans][device]") {
  if (tally::test::skip_without_device()) return;
  check_against_unsharded(Backend::cuda);
}

TEST_CASE("A shard's resampler reports NaN, +inf and a dead population, and refuses bad shapes", "[gpu][scans]") {
  for (const Backend where : {Backend::cpu, Backend::cuda}) {
    if (where == Backend::cuda && !cuda_available()) continue;
    const double inf = std::numeric_limits<double>::infinity();
    for (const double bad : {std::nan(""), inf, -inf}) {
      INFO("bad value " << bad);
      std::vector<double> l(2 * tile, -inf);
      l[tile + 3] = bad;
      if (!std::isnan(bad) && bad != inf) l.assign(2 * tile, -inf);  // the dead population
      const Joined got = sharded(where, l, 2, 0.5);
      CHECK(got.largest == (std::isnan(bad) || bad == inf ? inf : -inf));
      CHECK(got.ancestors.empty());
    }
    ShardedSystematic r(where, 2, 0, tile, 0.5);
    CHECK_THROWS_AS(r.report(Column<double>::from_host(std::vector<double>(3), where)), tally::shape_error);
    CHECK_THROWS_AS(r.ancestors(Column<double>::from_host(std::vector<double>(tile), where)), tally::shape_error);
    CHECK_THROWS_AS(r.plan(Column<double>::from_host(std::vector<double>(5), where)), tally::shape_error);
  }
  CHECK_THROWS_AS(ShardedSystematic(Backend::cpu, 2, 2, tile, 0.5), tally::domain_error);
  CHECK_THROWS_AS(ShardedSystematic(Backend::cpu, 2, 0, tile + 1, 0.5), tally::domain_error);
  CHECK_THROWS_AS(ShardedSystematic(Backend::cpu, 2, 0, 0, 0.5), tally::domain_error);
}

}  // namespace test_resample_shards
