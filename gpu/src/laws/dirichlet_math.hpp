// Private: the per-particle formulas of population_dirichlet (a row of K entries: sums, log masses, the draw's keys),
// shared by the CPU reference and the CUDA kernels, each sum in index order so that both give the same bits.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "population_math.hpp"  // gamma_draw
#include "tally/gpu/philox.hpp"  // TALLY_HOST_DEVICE

namespace tally::gpu::detail::dirichlet {

/// \f$\sum_{j < K} r_j\f$, in index order.
TALLY_HOST_DEVICE inline double row_sum(const double* r, std::size_t K) {
  double s = 0.0;
  for (std::size_t j = 0; j < K; ++j) s += r[j];
  return s;
}

/// Whether a Dirichlet's row is valid: every alpha_j > 0 and finite (false for NaN too).
TALLY_HOST_DEVICE inline bool valid_alpha(const double* r, std::size_t K) {
  for (std::size_t j = 0; j < K; ++j)
    if (!(r[j] > 0.0 && r[j] < INFINITY)) return false;
  return true;
}

/// Whether a probability vector's row is valid: entries >= 0 and finite, with a positive sum.
TALLY_HOST_DEVICE inline bool valid_weights(const double* r, std::size_t K) {
  for (std::size_t j = 0; j < K; ++j)
    if (!(r[j] >= 0.0 && r[j] < INFINITY)) return false;
  return row_sum(r, K) > 0.0;
}

/// \f$\log(r_k / \sum_j r_j)\f$, -inf for k outside 0 .. K - 1 or r_k = 0: the categorical's log mass under a
/// probability vector r, and under a Dirichlet(r) integrated out (its mean is r / sum r).
TALLY_HOST_DEVICE inline double categorical_log_mass(const double* r, std::size_t K, std::int64_t k) {
  if (k < 0 || static_cast<std::uint64_t>(k) >= K) return -INFINITY;
  const double rk = r[k];
  return rk > 0.0 ? ::log(rk / row_sum(r, K)) : -INFINITY;
}

/// The key of component j's Gamma draw: seed ^ (0x9E3779B97F4A7C15 (j + 1)), so that components are independent.
TALLY_HOST_DEVICE inline std::uint64_t component_seed(std::uint64_t seed, std::size_t j) {
  return seed ^ (0x9E37'79B9'7F4A'7C15ull * static_cast<std::uint64_t>(j + 1));
}

/// One Dirichlet(alpha) draw into out (K entries): Gamma(alpha_j, 1) on component j's key, then divided by their sum.
TALLY_HOST_DEVICE inline void dirichlet_draw(const double* alpha, std::size_t K, std::uint64_t seed,
                                             std::uint64_t particle, std::uint64_t counter, double* out) {
  for (std::size_t j = 0; j < K; ++j) {
    int next = 0;
    out[j] = gamma_draw(alpha[j], component_seed(seed, j), particle, counter, next);
  }
  const double s = row_sum(out, K);
  for (std::size_t j = 0; j < K; ++j) out[j] /= s;
}

}  // namespace tally::gpu::detail::dirichlet
