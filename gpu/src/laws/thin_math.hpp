// Private: the arithmetic of a thinning's law by Horner's rule, shared by the CPU reference and the CUDA kernel of
// gpu::thin (the same operations in the same order).
#pragma once

#include <math.h>

#include <cstdint>

#include "tally/gpu/philox.hpp"  // TALLY_HOST_DEVICE

namespace tally::gpu::detail {

/// The law of Y = Binomial(X, q) given X's weights w_n is \f$\mu_Y = \sum_n w_n \mathrm{Bernoulli}(q)^{*n}\f$, and by
/// Horner's rule on the generating function \f$G_Y(s) = G_X(1 - q + q s)\f$, from the largest n down to 0:
/// \f[ a^{(n)}_j = (1 - q)\, a^{(n+1)}_j + q\, a^{(n+1)}_{j-1} + w_n [j = 0], \qquad a^{(hi+1)} = 0, \f]
/// and \f$\mu_Y = a^{(0)}\f$ on 0 .. hi. After the step of n, a is nonzero on j = 0 .. hi - n only. Every term is
/// non-negative (no cancellation, no special function): each entry is within about 2 (hi + 1) ulps of its exact
/// value, and only contributions below the smallest double (relative to the largest weight, which the callers
/// scale to [1, 2)) are lost. The cost is (hi + 1)(hi + 2) / 2 multiply-add pairs.
///
/// One entry of one step: drop a_j + keep a_{j-1}, rounded after each operation (the device does not fuse them; nor
/// does the host on its default x86-64 target, which has no fused multiply-add: there the two agree bit for bit).
TALLY_HOST_DEVICE inline double horner_thinning_entry(double keep, double drop, double here, double below) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(__dmul_rn(drop, here), __dmul_rn(keep, below));
#else
  return drop * here + keep * below;
#endif
}

inline constexpr double ln_two = 0.69314718055994530942;

/// The power of two 2^-e that brings the largest weight w_max > 0 to [1, 2) (exact: the weights' bits are kept).
TALLY_HOST_DEVICE inline int thinning_scale_exponent(double w_max) { return ::ilogb(w_max); }

}  // namespace tally::gpu::detail
