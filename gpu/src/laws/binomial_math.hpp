// Private: one Binomial(n, q) draw from one uniform, searched outward from the mode, shared by the CPU and CUDA paths
// of sample_binomial (the same arithmetic on both).
#pragma once

#include <math.h>

#include <cstdint>

#include "conjugate_math.hpp"
#include "tally/gpu/philox.hpp"  // TALLY_HOST_DEVICE

namespace tally::gpu::detail {

/// The largest n binomial_draw takes: its arithmetic is in doubles, exact for the integers up to 2^53
/// (sample_binomial refuses a larger n with tally::domain_error; its draw would take some 10^8 steps anyway).
inline constexpr std::int64_t binomial_draw_max_n = std::int64_t{1} << 53;

/// Masses below this fraction of the mode's end binomial_draw's search on their side: past the mode each side's
/// masses fall at least geometrically, so what is left there is below about 1e-19 of the total, far under the 2^-53
/// resolution of the uniform that picks the draw.
inline constexpr double binomial_search_floor = 1e-20;

/// One Binomial(n, q) draw (0 <= n <= binomial_draw_max_n, q in [0, 1]) from one uniform u in (0, 1), with no
/// table: the unit interval is cut into the masses in the order m, m + 1, m - 1, m + 2, m - 2, ... from the mode m =
/// min(n, floor((n + 1) q)) (a side left out once it reaches 0 or n, or its mass falls below binomial_search_floor
/// of p(m)), and the draw is the k whose piece holds u: an exact draw, in expected O(1 + sigma) steps (about 1.6
/// sigma, sigma = sqrt(n q (1 - q))). p(m) is Loader's saddle-point form (conjugate::binomial_log_mass: a few ulps
/// whatever n), each further mass comes from its neighbour by the exact ratio \f$p(k+1)/p(k) = \frac{(n - k)\,q}{(k
/// + 1)(1 - q)}\f$. Where rounding leaves u past every mass summed (with probability about the masses' rounding,
/// 1e-15), the draw is the mode. The pieces are not in the order of k, so two q's on one uniform are not ordered as
/// inversion from 0 would order them.
TALLY_HOST_DEVICE inline std::int64_t binomial_draw(std::int64_t n, double q, double u) {
  if (n == 0 || q <= 0.0) return 0;
  if (q >= 1.0) return n;
  const double nd = static_cast<double>(n), r = q / (1.0 - q);
  std::int64_t m = static_cast<std::int64_t>(::floor((nd + 1.0) * q));
  if (m > n) m = n;
  const double top = ::exp(conjugate::binomial_log_mass(n, m, q)), floor_mass = binomial_search_floor * top;
  double cum = top;
  if (u < cum) return m;
  // the two ends as doubles (exact below 2^53): no integer conversions in the loop
  const double md = static_cast<double>(m);
  double up = md, down = md, w_up = top, w_down = top;
  bool up_open = md < nd, down_open = md > 0.0;
  while (up_open || down_open) {
    if (up_open) {
      w_up *= ((nd - up) * r) / (up + 1.0);
      up += 1.0;
      cum += w_up;
      if (u < cum) return static_cast<std::int64_t>(up);
      up_open = up < nd && w_up >= floor_mass;
    }
    if (down_open) {
      w_down *= down / ((nd - down + 1.0) * r);
      down -= 1.0;
      cum += w_down;
      if (u < cum) return static_cast<std::int64_t>(down);
      down_open = down > 0.0 && w_down >= floor_mass;
    }
  }
  return m;
}

}  // namespace tally::gpu::detail
