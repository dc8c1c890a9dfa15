// Private: the tiles and the order of additions of fused systematic resampling, shared by the CPU reference and CUDA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>

#include "scan_math.hpp"  // warp_order_scan: the Kogge-Stone order of a warp's shuffles, run on the host

namespace tally::gpu::detail {

/// The order. Particles are cut in tiles of T = 4096: tile t holds i = T t + 16 j + r for thread j < 256 and item
/// r < 16 (past P a particle has log-weight -inf). Every sum below adds terms >= 0, in exactly this order:
///
///   block order of thread values a_0 .. a_{B-1} (B a multiple of 32, at most 1024; warp w = threads 32 w ..
///     32 w + 31): S_l = the Kogge-Stone inclusive scan of warp w's values (warp_order_scan), W_w = S_31 of warp
///     w; the warp totals W_0 .. W_{B/32-1}, padded with zeros to 32, get the same Kogge-Stone scan, giving their
///     inclusive sums F_w; E_w = F_{w-1} (E_0 = 0). Thread 32 w + l gets base = E_w + S_{l-1} (E_w for l = 0),
///     and the total is F_31.
///   pass 1, tile t: m_t = max_i l_i (exact); x_i = e^{l_i - m_t} (0 where l_i = -inf). Here thread j = 32 w + l
///     holds its items warp-striped (as it loads them): item r is the particle T t + 512 w + 32 r + l. Its sums
///     a_j = ((x_0 + x_1) + ...) + x_15 and b_j likewise of the products x_r x_r over its items in that order;
///     s_t and q_t = their block-order totals (B = 256). (Pass 3 adds the same x in its own order: no matter, C
///     is clamped to O_{t+1} below.)
///   pass 2, over the n tiles: M = max_t m_t, f_t = e^{m_t - M}, S_t = s_t f_t, Q_t = q_t (f_t f_t). Thread
///     j < 512 takes the tiles [c j, c (j + 1)) (c = ceil(n / 512), clipped to n): a_j = ((0 + S_first) + ...)
///     over them, b_j likewise of Q_t; base_j and R_n = the block-order total of the a_j (B = 512), Q = that of
///     the b_j. The raw start of tile t is R_t = ((base_j + S_first) + ...) + S_{t-1} (thread j's walk). Masked:
///     R'_t = R_t where t = 0 or S_{t-1} > 0, else 0; then O_t = max(R'_0, ..., R'_t) for t <= n and W = O_n. So
///     O is nondecreasing and a tile with S_t = 0 has O_{t+1} = O_t. g = P / W (one rounded quotient).
///   pass 3, tile t: thread j walks v = base_j + x_0, v + x_1, ... (base_j the block order of its a_j, as in pass
///     1), giving v_i; V_i = the largest v_{i'} over the tile's i' <= i with x_{i'} > 0, 0 if none (a prefix
///     maximum: exact, nondecreasing, and constant across a particle with x_i = 0, even where a thread's base
///     rounds above the walk before it); L = the last i of the tile with x_i > 0; C_i = O_{t+1} for i >= L, else
///     min(O_{t+1}, O_t + f_t V_i) (a product, then a sum, unfused: __dmul_rn and __dadd_rn on the device; the
///     host's * and + too, unless it is compiled to contract them into fma). So O_t <= C_i <= O_{t+1}, C is
///     nondecreasing, and C of the tile's last particle is O_{t+1}: the runs of neighbouring tiles meet exactly.
///   positions: k(c) = P for c >= W, else min(P, floor(fma(c, g, u))) (c g + u rounded once: std::fma on the host,
///     an fma on the device, the same bits). Particle i gets [k(C_{i-1}), k(C_i)) with C_{-1} = 0; tile t gets [k(O_t), k(O_{t+1})), k(O_0) = 0 and
///     k(O_n) = P, so every position is written once. A particle with x_i = 0 gets none: its C equals the one
///     before it (before L: V does not move; from L on: O_{t+1}, and x_L > 0).
/// The summary: max_log_weight = M, log_sum = M + log W, ess = W^2 / Q.
inline constexpr int resample_threads = 256;  // threads of a tile's block: 8 warps
inline constexpr int resample_items = 16;     // consecutive particles per thread
inline constexpr std::size_t resample_tile = std::size_t{resample_threads} * resample_items;  // T = 4096
inline constexpr int combine_threads = 512;  // pass 2: one block of 16 warps

/// The block order on the host: a holds the thread values a_0 .. a_{B-1} (B a multiple of 32, at most 1024) and
/// gets each thread's base; returns the total F_31.
inline double block_order_scan(std::span<double> a) {
  double totals[warp_lanes] = {};  // W_w, then F_w
  for (std::size_t w = 0; w * warp_lanes < a.size(); ++w) {
    double* s = a.data() + w * warp_lanes;
    double x[warp_lanes];
    std::copy(s, s + warp_lanes, x);
    warp_order_scan(x);
    for (int l = 1; l < warp_lanes; ++l) s[l] = x[l - 1];  // S_{l-1}, until E_w is known
    totals[w] = x[warp_lanes - 1];
  }
  warp_order_scan(totals);
  for (std::size_t w = 0; w * warp_lanes < a.size(); ++w) {
    const double e = w == 0 ? 0.0 : totals[w - 1];
    double* s = a.data() + w * warp_lanes;
    s[0] = e;
    for (int l = 1; l < warp_lanes; ++l) s[l] = e + s[l];
  }
  return totals[warp_lanes - 1];
}

/// k(c) above: P for c >= W, else min(P, floor(fma(c, g, u))), pd = P as a double (exact below 2^53).
inline std::size_t systematic_position(double c, double w, double g, std::size_t p, double pd, double u) {
  if (c >= w) return p;
  const double k = std::floor(std::fma(c, g, u));
  return k >= pd ? p : static_cast<std::size_t>(k);
}

}  // namespace tally::gpu::detail
