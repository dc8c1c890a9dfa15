// The CPU reference of batched inverse-cdf sampling: the warp's chunked prefix sums, run in the same order.
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::cpu {

std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter) {
  check(pmfs, "tally::gpu::cpu::sample_batched");
  std::vector<std::int64_t> out(pmfs.size());
  constexpr int chunk = detail::scan_chunk;
  for (std::size_t i = 0; i < pmfs.size(); ++i) {
    const auto w = pmfs[i];
    const auto m = static_cast<std::int64_t>(w.size());
    // the chunk scans, kept: C_j = carry of j's chunk + the chunk's scan at j's lane
    std::vector<double> prefix(static_cast<std::size_t>((m + chunk - 1) / chunk * chunk));
    double carry = 0.0;
    std::int64_t last_positive = 0;
    for (std::int64_t c = 0; c < m; c += chunk) {
      double x[chunk];
      for (int l = 0; l < chunk; ++l) {
        x[l] = c + l < m ? w[static_cast<std::size_t>(c + l)] : 0.0;
        if (x[l] > 0.0) last_positive = c + l;
      }
      detail::warp_order_scan(x);
      for (int l = 0; l < chunk; ++l) prefix[static_cast<std::size_t>(c + l)] = carry + x[l];
      carry = carry + x[chunk - 1];
    }
    const double target = philox_uniform(seed, i, counter) * carry;
    std::int64_t draw = last_positive;
    for (std::int64_t j = 0; j < m; ++j)
      if (prefix[static_cast<std::size_t>(j)] > target) {
        draw = j;
        break;
      }
    out[i] = pmfs.lo[i] + draw;
  }
  return out;
}

}  // namespace tally::gpu::cpu
