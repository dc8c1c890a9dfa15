// Private: the fixed summation order of a warp's inclusive scan, shared by the CPU reference and the CUDA kernels.
#pragma once

#include <cstdint>

namespace tally::gpu::detail {

/// Prefix sums of a pmf are formed chunk by chunk, 32 weights at a time (lanes past the end hold 0): within a chunk
/// by the Kogge-Stone rounds x_l += x_{l-d}, d = 1, 2, 4, 8, 16 (what a warp's shuffles compute), then offset by the
/// carry (the chunks before, added in order). The CPU runs exactly these additions, so both find the same prefix
/// sums to the last bit and draw the same values from the same uniforms.
inline constexpr int scan_chunk = 32;

/// The Kogge-Stone inclusive scan of 32 values, as the host runs it (each round reads the previous round).
inline void warp_order_scan(double (&x)[scan_chunk]) {
  for (int d = 1; d < scan_chunk; d *= 2) {
    double previous[scan_chunk];
    for (int l = 0; l < scan_chunk; ++l) previous[l] = x[l];
    for (int l = d; l < scan_chunk; ++l) x[l] = previous[l] + previous[l - d];
  }
}

}  // namespace tally::gpu::detail
