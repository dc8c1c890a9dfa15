// The CPU reference of resampling: stable sums, sequential prefix sums, the same uniforms as the device.
#include <algorithm>
#include <cmath>

#include "resample_check.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu::cpu {

WeightSummary summarize_log_weights(std::span<const double> log_w) {
  detail::check_log_weights(log_w, "tally::gpu::cpu::summarize_log_weights");
  const double m = *std::max_element(log_w.begin(), log_w.end());
  double s = 0.0, s2 = 0.0;
  for (const double l : log_w) {
    const double w = std::exp(l - m);
    s += w;
    s2 += w * w;
  }
  return {m, m + std::log(s), s * s / s2};
}

std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter) {
  detail::check_log_weights(log_w, "tally::gpu::cpu::resample");
  const std::size_t p = log_w.size();
  const double m = *std::max_element(log_w.begin(), log_w.end());
  std::vector<double> c(p);
  double sum = 0.0;
  for (std::size_t i = 0; i < p; ++i) c[i] = sum = sum + std::exp(log_w[i] - m);
  const double total = c[p - 1];
  std::vector<std::size_t> out(p);
  if (kind == Resampler::systematic) {
    const double u = philox_uniform(seed, 0, counter);
    std::size_t k = 0;  // k_{-1} = floor(u) = 0
    for (std::size_t i = 0; i < p; ++i) {
      const std::size_t end =
          i + 1 == p ? p : std::min(p, static_cast<std::size_t>(std::floor(double(p) * (c[i] / total) + u)));
      for (; k < end; ++k) out[k] = i;
    }
    return out;
  }
  for (std::size_t j = 0; j < p; ++j) {
    const double target = philox_uniform(seed, j, counter) * total;
    // the first prefix sum above the target; when rounding leaves none (u total rounded up to total), the first
    // that reaches the total: either way a particle of positive weight
    auto it = std::upper_bound(c.begin(), c.end(), target);
    if (it == c.end()) it = std::lower_bound(c.begin(), c.end(), total);
    out[j] = static_cast<std::size_t>(it - c.begin());
  }
  return out;
}

}  // namespace tally::gpu::cpu
