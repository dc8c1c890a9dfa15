// The CPU reference of batched inverse-cdf sampling: the lane-segment order and draw rule of scan_math.hpp.
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::cpu {

std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter) {
  check(pmfs, "tally::gpu::cpu::sample_batched");
  std::vector<std::int64_t> out(pmfs.size());
  for (std::size_t i = 0; i < pmfs.size(); ++i)
    out[i] = pmfs.lo[i] + detail::lane_segment_draw(pmfs[i], philox_uniform(seed, i, counter));
  return out;
}

std::int64_t sample_one(std::span<const double> w, std::int64_t lo, std::uint64_t seed, std::uint64_t index,
                        std::uint64_t counter) {
  return lo + detail::lane_segment_draw(w, philox_uniform(seed, index, counter));
}

}  // namespace tally::gpu::cpu
