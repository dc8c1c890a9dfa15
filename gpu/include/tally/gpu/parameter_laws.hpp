// Count laws kept as their parameters (Binomial, BetaBinomial) rather than their weights, and the conditioning of
// their sum or difference on an observed value straight from the parameters (one skew diagonal, no dense law).
#pragma once

#include <cstdint>
#include <optional>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// The family of a ParameterLaws.
enum class ParameterFamily {
  binomial,      ///< Binomial(n_i, a_i): a_i = q_i in [0, 1], b unused
  beta_binomial  ///< BetaBinomial(n_i, a_i, b_i): a_i, b_i > 0 and finite
};

/// P laws of counts on 0 .. n_i given by their parameters (columns not owned; all in one place, one per particle).
/// Their weights are those binomial_laws and beta_binomial_laws write (population_ops.hpp).
struct ParameterLaws {
  /// Binomial or BetaBinomial.
  ParameterFamily family;
  /// n_i, the trials of each law.
  const Column<std::int64_t>& n;
  /// a_i: the success probability q_i (binomial) or alpha_i (beta_binomial).
  const Column<double>& a;
  const Column<double>& b;  ///< beta_binomial only (binomial: any column, not read)
  /// A bound on every n_i known to the caller (tally/gpu/later_max.hpp), or none: with it the device sizes what it
  /// writes without reading lengths back (binomial_laws' n_max).
  std::optional<std::int64_t> n_max = std::nullopt;
};

/// The laws as weights: binomial_laws(n, a) or beta_binomial_laws(n, a, b).
Laws weights_of(const ParameterLaws& x);

/// X_i given X_i + sign Y_i = z_i (sign = +1 or -1) for independent X_i, Y_i given by their parameters, and
/// \f$ \log L_i = \log \sum_k p_{X_i}(k)\, p_{Y_i}(\mathrm{sign}\,(z_i - k)) \f$ added to log_likelihood.
///
/// The skew diagonal is k = first_i .. last_i with first_i = max(0, z_i - n_{Y,i}), last_i = min(n_{X,i}, z_i) for
/// a sum and first_i = max(0, z_i), last_i = min(n_{X,i}, z_i + n_{Y,i}) for a difference (the values of k where
/// both masses can be positive). The posterior is stored on that range only (lo_i = first_i, last_i - first_i + 1
/// weights, maximum 1, normalized: log_scale_i = -log of the weights' sum, as condition_on_sum leaves it), so it is
/// as long as the diagonal, not as X's law.
///
/// The terms are walked in chunks of 16 along the diagonal as the parameter laws are (population_math.hpp: the
/// lgamma formula of both masses at each chunk's first k, the exact ratio of consecutive products from there). The
/// device takes a faster path for diagonals of at most 512 values without point masses: the values split evenly
/// over a warp's lanes, the lgamma formula once (its terms one per lane), each lane's first log mass from it by the
/// logs of the ratios' products (an exclusive scan over the warp), one division a step. Each weight is within about
/// 1e-12 relative of its 50-digit value (the formula's own rounding, a few ulps of its largest lgamma, comes on top),
/// for entries down to the smallest normal double relative to the largest.
///
/// An impossible observation adds -inf and leaves weights 0 with log_scale -inf (a particle of weight zero, as
/// condition_on_sum leaves it): the diagonal's, or where it is empty one weight at
/// lo_i = max(0, min(first_i, n_{X,i})). Bad parameters (n < 0 or >= 2^32, q outside [0, 1], a or b not positive
/// and finite) throw tally::domain_error naming the first such particle. Device: lengths scanned and their total
/// read back (one synchronization), then one warp per particle; where x or y carries n_max, nothing is read back:
/// room for P (min of the bounds + 1) weights (a diagonal is at most min(n_X, n_Y) + 1 long), and bad parameters
/// (or a diagonal longer than that) are a deferred check, as for binomial_laws.
Laws condition_on_sum(const ParameterLaws& x, const ParameterLaws& y, int sign, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood);

}  // namespace tally::gpu
