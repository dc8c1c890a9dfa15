// Private: the fixed summation order ("lane segments") and draw rule of batched sampling, shared by CPU and CUDA.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "tally/gpu/philox.hpp"  // TALLY_HOST_DEVICE

namespace tally::gpu::detail {

/// The order. A pmf w_0 .. w_{m-1} is read in tiles of 256 weights (32 lanes x 8); in tile t, lane l owns the
/// weights j = 256 t + 8 l + r, r = 0 .. 7 (those with j >= m are 0). Then
///   s_l  = ((w_{8l} + w_{8l+1}) + w_{8l+2}) + ... + w_{8l+7}    (the lane's weights, added in order)
///   S_l  = the Kogge-Stone inclusive scan of s_0 .. s_31: rounds x_l = x_l + x_{l-d} for l >= d, d = 1, 2, 4, 8,
///          16, each round reading the previous one (warp_order_scan; a warp's __shfl_up_sync)
///   E_l  = S_{l-1}, E_0 = 0                                      (a shuffle of S, never a difference)
///   carry_0 = 0, carry_{t+1} = carry_t + S_31(t)                  (tiles chained in order; total = carry_T)
///   C_j  for j = 256 t + 8 l + r: c = carry_t + E_l, then c = c + w_{8l}, ..., c = c + w_{8l+r}; C_j = c.
/// All terms are >= 0, so every sum is monotone in each term and a sum is 0 exactly when all its terms are 0
/// (s_l, S_31 and total are 0 only for lanes, tiles and pmfs without mass). C_j is nondecreasing inside a lane,
/// but not across lanes or tiles in exact terms (E_l, the walks and the carries group the terms differently).
///
/// The draw for a uniform u in (0, 1), with target = u * total (one rounded product):
///   1. total == 0 (no positive weight): j = 0.
///   2. The tile t* = the first t with carry_{t+1} > target; if there is none (u * total rounded up to total),
///      t* = the last tile with S_31 > 0. Either way tile t* has mass: the first such t has carry_t <= target <
///      carry_{t+1}, so S_31(t) > 0.
///   3. Inside t*: j = the smallest j of tile t* with w_j > 0 and C_j > target; if there is none (rounding: the
///      walks of t* end below carry_{t*+1}), the largest j of tile t* with w_j > 0.
/// So a weight of 0 is never drawn, j < m, j is nondecreasing in target (t* is, and so is j inside a tile: a hit
/// comes before the largest positive j), and j is the smallest j with C_j > target except where target lies
/// within the rounding error of the sums on its path (at most about t* + 21 additions, so (t* + 21) ulp of the
/// total). The CUDA kernel makes the same additions and comparisons, hence the same j to the bit.
inline constexpr int warp_lanes = 32;
inline constexpr int lane_weights = 8;
inline constexpr std::int64_t scan_tile = warp_lanes * lane_weights;  // 256 weights

/// The Kogge-Stone inclusive scan of 32 values, as the host runs it (each round reads the previous round).
TALLY_HOST_DEVICE inline void warp_order_scan(double (&x)[warp_lanes]) {
  for (int d = 1; d < warp_lanes; d *= 2) {
    double previous[warp_lanes];
    for (int l = 0; l < warp_lanes; ++l) previous[l] = x[l];
    for (int l = d; l < warp_lanes; ++l) x[l] = previous[l] + previous[l - d];
  }
}

/// Tile t of w as the 32 lanes of a warp hold it: the weights (0 past the end), S_l, E_l and S_31.
struct LaneTile {
  double w[warp_lanes][lane_weights];
  double inclusive[warp_lanes];  // S_l
  double exclusive[warp_lanes];  // E_l = S_{l-1}, E_0 = 0
  double total;                  // S_31
};

/// The lane sums and their scan of tile t of the m weights at w (t * 256 < m), in the order above.
TALLY_HOST_DEVICE inline LaneTile scan_lane_tile(const double* w, std::int64_t m, std::int64_t t) {
  LaneTile tile;  // every member is written below
  for (int l = 0; l < warp_lanes; ++l) {
    const std::int64_t first = t * scan_tile + std::int64_t{lane_weights} * l;  // lane l's weight r = 0
    for (int r = 0; r < lane_weights; ++r) tile.w[l][r] = first + r < m ? w[first + r] : 0.0;
    double s = tile.w[l][0];
    for (int r = 1; r < lane_weights; ++r) s = s + tile.w[l][r];
    tile.inclusive[l] = s;
  }
  warp_order_scan(tile.inclusive);
  tile.exclusive[0] = 0.0;
  for (int l = 1; l < warp_lanes; ++l) tile.exclusive[l] = tile.inclusive[l - 1];
  tile.total = tile.inclusive[warp_lanes - 1];
  return tile;
}
/// The same for a span of weights.
inline LaneTile scan_lane_tile(std::span<const double> w, std::int64_t t) {
  return scan_lane_tile(w.data(), static_cast<std::int64_t>(w.size()), t);
}

/// The index j in [0, m) drawn from the weights w (all >= 0) by the uniform u, by the rule above (32 lanes
/// simulated on the host). The CPU reference of sample_batched is this function for each pmf.
inline std::int64_t lane_segment_draw(std::span<const double> w, double u) {
  const auto m = static_cast<std::int64_t>(w.size());
  const std::int64_t tiles = (m + scan_tile - 1) / scan_tile;  // ceil(m / 256); t * 256 < m for t < tiles
  // carry[t] = carry_t, carry[tiles] = total; a pmf of one tile (the usual case) needs no heap and one scan: its
  // carries are 0 and S_31, and t* is tile 0 whenever it has mass
  double one_tile_carry[2];
  std::vector<double> many_tiles_carry(tiles > 1 ? static_cast<std::size_t>(tiles) + 1 : 0);
  double* carry = tiles > 1 ? many_tiles_carry.data() : one_tile_carry;
  carry[0] = 0.0;
  LaneTile tile;
  std::int64_t last_tile = -1;  // the last tile with S_31 > 0
  for (std::int64_t t = 0; t < tiles; ++t) {
    tile = scan_lane_tile(w, t);
    if (tile.total > 0.0) last_tile = t;
    carry[static_cast<std::size_t>(t) + 1] = carry[static_cast<std::size_t>(t)] + tile.total;
  }
  if (last_tile < 0) return 0;  // step 1: no mass
  const double target = u * carry[static_cast<std::size_t>(tiles)];
  std::int64_t t_star = last_tile;  // step 2
  for (std::int64_t t = 0; t < tiles; ++t)
    if (carry[static_cast<std::size_t>(t) + 1] > target) {
      t_star = t;
      break;
    }
  if (t_star != tiles - 1) tile = scan_lane_tile(w, t_star);  // step 3 (the loop above left the last tile's scan)
  std::int64_t last_positive = -1;
  for (int l = 0; l < warp_lanes; ++l) {
    double c = carry[static_cast<std::size_t>(t_star)] + tile.exclusive[l];
    for (int r = 0; r < lane_weights; ++r) {
      c = c + tile.w[l][r];
      if (!(tile.w[l][r] > 0.0)) continue;
      const std::int64_t j = t_star * scan_tile + std::int64_t{lane_weights} * l + r;
      if (c > target) return j;
      last_positive = j;
    }
  }
  return last_positive;  // >= 0: tile t* has mass
}

/// The draw rule's sums for one pmf drawn from many times (a prior that every particle shares), made once: the
/// carries carry_0 .. carry_T, C_j (NaN where w_j = 0: never a hit), each tile's largest j with w_j > 0 (-1 where
/// none) and the last tile with mass (-1: none). table_draw on it returns lane_segment_draw(w, u) for every u.
struct DrawTable {
  std::vector<double> carry;                // T + 1
  std::vector<double> c;                    // m
  std::vector<std::int64_t> last_positive;  // T
  std::int64_t last_tile = -1;
};
/// A quiet NaN, on the host and the device alike.
TALLY_HOST_DEVICE inline double quiet_nan() {
  const std::uint64_t bits = 0x7ff8'0000'0000'0000ull;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}
/// The number of tiles T of a pmf of m weights: ceil(m / 256) (t * 256 < m for t < T).
TALLY_HOST_DEVICE inline std::int64_t draw_tiles(std::int64_t m) { return (m + scan_tile - 1) / scan_tile; }
/// DrawTable's arrays for the m weights at w, written into carry (T + 1 doubles), c (m doubles) and last_positive
/// (T integers) where the caller keeps them (a kernel, one thread a law, does the same); returns last_tile. The
/// NaN of a zero weight's C_j is never greater than a target.
TALLY_HOST_DEVICE inline std::int64_t fill_draw_table(const double* w, std::int64_t m, double* carry, double* c,
                                                      std::int64_t* last_positive) {
  const std::int64_t tiles = draw_tiles(m);
  std::int64_t last_tile = -1;
  carry[0] = 0.0;
  for (std::int64_t t = 0; t < tiles; ++t) {
    const LaneTile tile = scan_lane_tile(w, m, t);
    if (tile.total > 0.0) last_tile = t;
    carry[t + 1] = carry[t] + tile.total;
    last_positive[t] = -1;
    for (int l = 0; l < warp_lanes; ++l) {  // lane_segment_draw's step 3, for every lane of every tile
      double acc = carry[t] + tile.exclusive[l];
      for (int r = 0; r < lane_weights; ++r) {
        acc = acc + tile.w[l][r];
        const std::int64_t j = t * scan_tile + std::int64_t{lane_weights} * l + r;
        if (!(tile.w[l][r] > 0.0)) {  // (j >= m reads a weight of 0 and has no entry)
          if (j < m) c[j] = quiet_nan();  // never a hit
          continue;
        }
        c[j] = acc;
        last_positive[t] = j;
      }
    }
  }
  return last_tile;
}
inline DrawTable draw_table(std::span<const double> w) {
  const auto m = static_cast<std::int64_t>(w.size());
  const std::int64_t tiles = draw_tiles(m);
  DrawTable d;
  d.carry.assign(static_cast<std::size_t>(tiles) + 1, 0.0);
  d.c.assign(w.size(), 0.0);
  d.last_positive.assign(static_cast<std::size_t>(tiles), -1);
  d.last_tile = fill_draw_table(w.data(), m, d.carry.data(), d.c.data(), d.last_positive.data());
  return d;
}

/// The draw of lane_segment_draw from a DrawTable (its arrays by address, so that a kernel runs it too): step 2's
/// tile by a binary search of the carries (nondecreasing: the first t with carry_{t+1} > target is found as the
/// loop finds it), step 3 by the same comparisons in the same order.
TALLY_HOST_DEVICE inline std::int64_t table_draw(const double* carry, const double* c, const std::int64_t* last_positive,
                                                 std::int64_t tiles, std::int64_t m, std::int64_t last_tile, double u) {
  if (last_tile < 0) return 0;
  const double target = u * carry[tiles];
  std::int64_t lo = 0, hi = tiles;  // the first t in [lo, hi) with carry[t + 1] > target, hi if none
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (carry[mid + 1] > target) hi = mid;
    else lo = mid + 1;
  }
  const std::int64_t t = lo < tiles ? lo : last_tile;
  const std::int64_t end = (t + 1) * scan_tile < m ? (t + 1) * scan_tile : m;
  for (std::int64_t j = t * scan_tile; j < end; ++j)
    if (c[j] > target) return j;  // (NaN, a weight of 0, is never greater)
  return last_positive[t];
}

}  // namespace tally::gpu::detail
