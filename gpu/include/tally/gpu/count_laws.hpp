// Laws of unbounded counts from per-particle parameters (Poisson, negative binomial, and their Gamma and Beta
// mixtures), each cut to a window that drops at most a given mass: the CPU reference and the CUDA form.
#pragma once

#include <cstdint>
#include <optional>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// The family of count_laws, with what s, a_i and b_i are in each.
enum class CountFamily {
  poisson,  ///< Poisson(s a_i): a_i >= 0 and s a_i finite (s a_i = 0: the point mass at 0); b unused
  /// NegativeBinomial(s, a_i): s > 0 successes, success probability a_i in (0, 1] (a_i = 1: the point mass at 0),
  /// \f$ p(k) = \frac{\Gamma(k + s)}{k!\,\Gamma(s)} a_i^s (1 - a_i)^k \f$; b unused
  negative_binomial,
  /// Poisson(s lambda) with lambda ~ Gamma(shape a_i, rate b_i) integrated out (s > 0, a_i, b_i > 0 finite):
  /// NegativeBinomial(a_i, b_i / (b_i + s))
  gamma_poisson,
  /// NegativeBinomial(s, rho) with rho ~ Beta(a_i, b_i) integrated out (s > 0, a_i, b_i > 0 finite):
  /// \f$ p(k) = \frac{\Gamma(k + s)}{k!\,\Gamma(s)} \frac{B(a_i + s, b_i + k)}{B(a_i, b_i)} \f$, a tail of order
  /// \f$ k^{-(a_i + 1)} \f$
  beta_negative_binomial
};

/// The laws and the largest relative error bound among them (tally::Pmf's error_bound: the mass cut from the
/// tails, relative to what is kept).
struct CountLaws {
  /// Law i for particle i, where the parameters live.
  Laws laws;
  /// The largest error bound of the laws (0 where no law was cut).
  double error = 0.0;
};

/// P laws of counts, law i that of `family` with s and particle i's a_i (and b_i where the family has one), each on
/// the window [lo_i, hi_i] that drops at most `tolerance` of its mass, stored as \f$e^{\log p_i(k) - M_i}\f$ with
/// \f$M_i\f$ the largest log mass (log_scale M_i: the weights times e^{log_scale} are the masses themselves).
///
/// The windows: half the tolerance from each tail, by geometric bounds on the tails (below y, the ratio
/// p(k - 1) / p(k) is at most its value at y - 1; above y, the ratio p(k + 1) / p(k) at most its value at y + 1 or
/// its limit), each cut the farthest point whose bound is within half the tolerance, found by bisection; the error
/// is d / (1 - d), d the two bounds' sum. A window may so hold a few entries more than one cut by the exact tails
/// (tally::to_pmf's), never less mass. The beta-negative-binomial's tail is polynomial: its window starts at 0,
/// and its upper cut is the first y past the mode with \f$ p(y)\,(y + s')/(\alpha - 1) \f$ within the tolerance,
/// \f$ s' = a + s + b \f$, \f$ \alpha = a + 1 - \max(0, (s - 1)(b - 1))/(y + 1) > 1 \f$ (a bound on P(K > y) from
/// the ratio of consecutive masses: count_math.hpp shows the working); a law whose a_i is near 0 needs very long
/// windows (too_long past max_size, found without making them). Each log mass by conjugate_math.hpp's saddle-point forms (within about 1e-14
/// relative of the log), the same formulas on the host and the device.
///
/// Contract: a and b in one place, of one size (b may be empty for poisson and negative_binomial); tolerance in
/// (0, 1) and max_size >= 1 (tally::domain_error otherwise). Throws tally::domain_error naming the first particle
/// whose parameters leave their domain, tally::overflow_error naming the first whose window leaves int64 (a mean
/// of 2^60 or more) or holds more than max_size entries, tally::shape_error for columns of different sizes or
/// places. Device: one thread per particle finds its window, the lengths are scanned and their total (with the
/// first failing particle) read back (one synchronization), then one warp per law writes its weights.
CountLaws count_laws(CountFamily family, double s, const Column<double>& a, const Column<double>& b, double tolerance,
                     std::int64_t max_size);

/// The value of every entry of c where they are all the same, bit for bit (a parameter column that no per-particle
/// value has touched), else nothing (nothing for an empty column too). Device: one pass, its answer and the first
/// value read back together.
std::optional<double> common_value(const Column<double>& c);

}  // namespace tally::gpu
