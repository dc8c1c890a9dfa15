// Random batches of count laws for the conditioning tests: discretized bumps on supports from lo >= 0, down to
// e^-700 in their tails, a few with zeros inside, a few (where asked) already without mass.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tally/gpu/pmf_batch.hpp"

namespace tally::test {

/// P laws, law i from lo_i in 0 .. lo_max with 1 .. max_length values; a fraction `dead` of them with log_scale
/// -inf, the others with log_scale in [-5, 0].
inline gpu::PmfBatch random_count_laws(std::mt19937_64& gen, std::size_t P, double lo_max, double max_length,
                                       double dead = 0.0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < P; ++i) {
    const auto lo = static_cast<std::int64_t>(u(gen) * lo_max);
    const auto m = 1 + static_cast<std::int64_t>(u(gen) * (max_length - 1));
    const double centre = u(gen) * double(m), width = 1.0 + u(gen) * double(m) / 3.0;
    std::vector<double> w(static_cast<std::size_t>(m));
    double top = 0;
    for (std::int64_t k = 0; k < m; ++k) {
      const double z = (double(k) - centre) / width;
      top = std::max(top, w[std::size_t(k)] = u(gen) < 0.05 ? 0.0 : std::exp(std::max(-0.5 * z * z, -700.0)));
    }
    if (top == 0) w[0] = top = 1;
    for (const double x : w) b.weights.push_back(x / top);
    b.offset.push_back(static_cast<std::int64_t>(b.weights.size()));
    b.lo.push_back(lo);
    b.log_scale.push_back(dead > 0.0 && u(gen) < dead ? -std::numeric_limits<double>::infinity() : -5.0 * u(gen));
  }
  return b;
}

}  // namespace tally::test
