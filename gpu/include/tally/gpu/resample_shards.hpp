// Systematic resampling of a population cut in shards of one size at tile borders: each shard passes over its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/resample_tiles.hpp"

namespace tally::gpu {

/// One shard's part in Resampler::systematic over a population of P = G S particles held by G shards of S
/// particles each, S a multiple of the tile T = tiles::tile_size: shard r holds the particles r S .. (r + 1) S - 1,
/// so the tiles r S / T .. (r + 1) S / T - 1 (resample_tiles.hpp). The passes of the tiles, where the shard's
/// columns live (host or device), the collective left to the caller:
///   1. report(l): this shard's tiles' totals (m_t, s_t, q_t) and its largest log-weight with NaN counted as +inf,
///      report_size() doubles;
///   2. the caller all-gathers the G reports in rank order, and plan(reports) combines every tile's totals (pass 2,
///      on every shard alike: the unsharded resampler's plan, bit for bit) and reads back the population's
///      summary and where each shard's tiles' positions begin, start[r] = k(O_{r S / T}) (on the device: the one
///      wait of a resampling);
///   3. ancestors(l) writes the ancestors (population indices) of the positions [start[rank], start[rank + 1]),
///      those this shard's particles fill: the unsharded resampler's, bit for bit (where host and device exp agree:
///      resample.hpp). They are nondecreasing; the caller moves them to the shards that hold those positions.
/// A shard reads its S log-weights twice and writes its positions' ancestors; the plan costs O(P / T) on each.
class ShardedSystematic {
 public:
  /// u: the systematic uniform (philox_uniform(seed, 0, counter)). tally::domain_error unless rank < shards,
  /// S >= 1 and S is a multiple of T.
  ShardedSystematic(Backend where, std::size_t shards, std::size_t rank, std::size_t shard_particles, double u);

  /// The doubles of one report: m, s, q of each of the shard's S / T tiles, then its largest log-weight.
  std::size_t report_size() const { return 3 * tiles_ + 1; }
  /// Pass 1 over this shard's S log-weights (tally::shape_error for another size or place). No check of the
  /// weights beyond the largest it reports: NaN and +inf show there as +inf.
  Column<double> report(const Column<double>& log_w);

  /// What pass 2 found: the population's largest log-weight, its summary, and where each shard's positions and
  /// ancestors begin.
  struct Plan {
    /// The population's largest log-weight, NaN counted as +inf. +inf: a weight is NaN or +inf; -inf: every weight
    /// is 0 (the population is impossible). Only where it is finite are the summary and the starts set.
    double largest = 0;
    /// The population's WeightSummary (where largest is finite).
    WeightSummary summary{};
    std::vector<std::size_t> start;  ///< G + 1 positions: start[r] = k(O_{r S / T}), start[G] = P
    /// For each shard r, the tiles of the ancestors of its first and last positions, r S and (r + 1) S - 1 (2 G
    /// numbers: tiles[2 r], tiles[2 r + 1]): the tile t whose run [k(O_t), k(O_{t+1})) holds the position. The
    /// ancestors are nondecreasing, so shard r's are particles of the tiles tiles[2 r] .. tiles[2 r + 1]: known
    /// on every shard before pass 3, which a move of the particles plans from without reading the ancestors.
    std::vector<std::size_t> tiles;
  };
  /// Pass 2 from every shard's report, rank after rank (G report_size() doubles where this resampler lives;
  /// tally::shape_error otherwise).
  const Plan& plan(const Column<double>& reports);
  /// Pass 3 over this shard's tiles, after plan() found a finite largest (tally::shape_error otherwise): the
  /// start[rank + 1] - start[rank] ancestors of this shard's positions, where the log-weights live.
  Column<std::size_t> ancestors(const Column<double>& log_w);

 private:
  Backend where_;
  std::size_t shards_, rank_, particles_, tiles_;
  double u_;
  Plan plan_;
  tiles::TilePlan host_plan_;         // the host's pass 2
  Column<unsigned char> device_temp_;  // the device's plan arrays, kept from pass 2 to pass 3
  void check(const Column<double>& log_w, const char* who) const;
};

namespace cuda {
/// The device halves of ShardedSystematic, on the default stream, over `temp` (shard_bytes(p, s) bytes, kept from
/// shard_plan to shard_ancestors): p = G s particles in all, s a shard's, t = s / T its tiles.
std::size_t shard_bytes(std::size_t p, std::size_t s);
/// Pass 1 of the tiles [first_tile, first_tile + t) over their s log-weights; report: 3 t + 1 doubles.
void shard_report(void* temp, std::size_t p, std::size_t s, std::size_t first_tile, const double* log_w,
                  double* report);
/// Pass 2 from the G reports (device); waits for the device and returns the largest log-weight and, where it is
/// finite, the summary, the G + 1 starts and the 2 G tiles (Plan::tiles).
double shard_plan(void* temp, std::size_t p, std::size_t s, const double* reports, double u, WeightSummary& summary,
                  std::vector<std::size_t>& start, std::vector<std::size_t>& tiles);
/// Pass 3 of the tiles [first_tile, first_tile + t): the ancestors of the positions from first_position on.
void shard_ancestors(void* temp, std::size_t p, std::size_t s, std::size_t first_tile, std::size_t first_position,
                     const double* log_w, double u, std::size_t* out);
}  // namespace cuda

}  // namespace tally::gpu
