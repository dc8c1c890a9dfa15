// Systematic resampling cut into its three passes over tiles, so that shards of a population compute it together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tally/gpu/resample.hpp"

/// Systematic resampling as three passes over tiles of tile_size particles (tile_totals, combine_tiles,
/// tile_ancestors), so that the shards of a population compute the population's resampling together, bit for bit.
namespace tally::gpu::tiles {

/// The tile of Resampler::systematic: particles T t .. T t + T - 1 form tile t (resample.hpp and
/// gpu/src/scans/resample_order.hpp give the order of every addition). cpu::resample is these three passes run one
/// after the other; a population cut in shards runs pass 1 and pass 3 on the tiles it holds, shares the tiles'
/// totals (n = ceil(P / T) triples), and runs pass 2 on every shard alike: the same ancestors, bit for bit.
inline constexpr std::size_t tile_size = 4096;

/// Pass 1 of one tile: m_t = max_i l_i, and s_t, q_t the sums of x_i = e^{l_i - m_t} and of x_i^2 in the block order
/// (0 and 0 when every l_i is -inf, with m_t = -inf).
struct TileTotals {
  /// m_t.
  double max_log_weight;
  /// s_t.
  double sum;
  /// q_t.
  double sum_squares;
};
/// Pass 1 over the log-weights of one tile (1 to T of them; the tile's particles past them, past P, count as
/// -inf). No checks: the caller has checked the weights (no NaN, no +inf).
TileTotals tile_totals(std::span<const double> l);

/// Pass 2, the same on every shard: from the n tiles' totals (in tile order) and the number of particles P, the
/// tiles' factors f_t = e^{m_t - M}, their starts O_0 .. O_n (O_n = W, the total), and the summary.
struct TilePlan {
  /// P.
  std::size_t particles = 0;
  /// M = max_t m_t, W = sum_t f_t s_t, Q = sum_t f_t^2 q_t, and g = P / W.
  ///@{
  double max_log_weight = 0, total = 0, squares = 0, scale = 0;  // M, W, Q, g = P / W
  /// f_t for each tile, and the starts O_0 to O_n.
  ///@{
  std::vector<double> factor, start;
  ///@}
  ///@}
  /// Where tile t's run of positions begins for the uniform u: k(O_t) (k(O_0) = 0, k(O_n) = P). Tile t writes the
  /// positions [begin(t, u), begin(t + 1, u)).
  std::size_t begin(std::size_t t, double u) const;
  /// {M, M + log W, W^2 / Q}: the WeightSummary resample gives.
  WeightSummary summary() const;
};
/// Requires totals.size() == ceil(particles / T) (tally::shape_error otherwise) and some tile of positive sum
/// (tally::domain_error otherwise: every log-weight -inf).
TilePlan combine_tiles(std::span<const TileTotals> totals, std::size_t particles);

/// Pass 3 of tile t: writes the ancestors (global particle indices T t + i) of the positions [begin(t), begin(t+1))
/// to out (out.size() == begin(t + 1) - begin(t)), from the tile's log-weights l (as given to tile_totals) and the
/// systematic uniform u = philox_uniform(seed, 0, counter).
void tile_ancestors(const TilePlan& plan, std::size_t t, std::span<const double> l, double u,
                    std::span<std::size_t> out);

}  // namespace tally::gpu::tiles
