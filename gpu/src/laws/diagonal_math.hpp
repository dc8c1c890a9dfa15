// Private: the skew diagonal of two count laws given by their parameters (parameter_laws.hpp), host and device
// alike: the parameters' checks, the diagonal's range, and its terms for walk_law.
#pragma once

#include <math.h>

#include <cstdint>

#include "population_math.hpp"

namespace tally::gpu::detail {

/// Binomial(n_i, q_i) parameters: checks and walk_law terms of particle i.
struct BinomialParameters {
  const std::int64_t* n;
  const double* q;
  TALLY_HOST_DEVICE bool bad(std::int64_t i) const {
    return n[i] < 0 || n[i] >= (std::int64_t{1} << 32) || !(q[i] >= 0.0 && q[i] <= 1.0);
  }
  /// The law's constant lgamma(n + 1), computed once per particle.
  TALLY_HOST_DEVICE double constant(std::int64_t i) const { return ::lgamma(static_cast<double>(n[i]) + 1.0); }
  TALLY_HOST_DEVICE BinomialTerms terms(std::int64_t i, double c) const { return BinomialTerms(n[i], q[i], c); }
  /// A point mass (q = 0 or 1), whose ratios are 0.
  TALLY_HOST_DEVICE bool point(std::int64_t i) const { return !(q[i] > 0.0 && q[i] < 1.0); }
  /// The constant and log p(k) as signed lgamma terms (spread over a warp's lanes) and the rest:
  /// c = lgamma(n + 1); log p(k) = c - lgamma(k + 1) - lgamma(n - k + 1) + k log q + (n - k) log(1 - q).
  static constexpr int constant_terms = 1, mass_terms = 2;
  /// The argument of the constant's j-th lgamma term and its sign.
  TALLY_HOST_DEVICE double constant_arg(std::int64_t i, int, double& sign) const {
    sign = 1.0;
    return static_cast<double>(n[i]) + 1.0;
  }
  /// The argument of log p(k)'s j-th lgamma term and its sign.
  TALLY_HOST_DEVICE double mass_arg(std::int64_t i, std::int64_t k, int j, double& sign) const {
    sign = -1.0;
    return static_cast<double>(j == 0 ? k : n[i] - k) + 1.0;
  }
  TALLY_HOST_DEVICE double mass_rest(std::int64_t i, std::int64_t k) const {
    const double kd = static_cast<double>(k), rest = static_cast<double>(n[i] - k);
    return kd * ::log(q[i]) + rest * ::log1p(-q[i]);
  }
  TALLY_HOST_DEVICE BinomialTerms terms(std::int64_t i) const { return BinomialTerms(n[i], q[i]); }
};

/// BetaBinomial(n_i, a_i, b_i) parameters: checks and walk_law terms of particle i.
struct BetaBinomialParameters {
  const std::int64_t* n;
  const double *a, *b;
  TALLY_HOST_DEVICE bool bad(std::int64_t i) const {
    return n[i] < 0 || n[i] >= (std::int64_t{1} << 32) || !(a[i] > 0.0 && b[i] > 0.0 && isfinite(a[i]) && isfinite(b[i]));
  }
  /// The law's constant (five lgammas), computed once per particle.
  TALLY_HOST_DEVICE double constant(std::int64_t i) const { return BetaBinomialTerms::constant(n[i], a[i], b[i]); }
  TALLY_HOST_DEVICE BetaBinomialTerms terms(std::int64_t i, double c) const { return BetaBinomialTerms(n[i], a[i], b[i], c); }
  TALLY_HOST_DEVICE BetaBinomialTerms terms(std::int64_t i) const { return terms(i, constant(i)); }
  TALLY_HOST_DEVICE bool point(std::int64_t) const { return false; }
  /// The constant and log p(k) as signed lgamma terms (spread over a warp's lanes) and the rest:
  /// c = lgamma(n + 1) + lgamma(a + b) - lgamma(n + a + b) - lgamma(a) - lgamma(b);
  /// log p(k) = c + lgamma(k + a) - lgamma(k + 1) + lgamma(n - k + b) - lgamma(n - k + 1).
  static constexpr int constant_terms = 5, mass_terms = 4;
  TALLY_HOST_DEVICE double constant_arg(std::int64_t i, int j, double& sign) const {
    const double nd = static_cast<double>(n[i]);
    sign = j < 2 ? 1.0 : -1.0;
    return j == 0 ? nd + 1.0 : j == 1 ? a[i] + b[i] : j == 2 ? nd + (a[i] + b[i]) : j == 3 ? a[i] : b[i];
  }
  TALLY_HOST_DEVICE double mass_arg(std::int64_t i, std::int64_t k, int j, double& sign) const {
    const double kd = static_cast<double>(k), rest = static_cast<double>(n[i] - k);
    sign = j % 2 == 0 ? 1.0 : -1.0;
    return j == 0 ? kd + a[i] : j == 1 ? kd + 1.0 : j == 2 ? rest + b[i] : rest + 1.0;
  }
  TALLY_HOST_DEVICE double mass_rest(std::int64_t, std::int64_t) const { return 0.0; }
};

/// The diagonal of X + sign Y = z for X on 0 .. nx and Y on 0 .. ny: X = k for k = first .. last, Y = sign (z - k)
/// (sum: Y = z - k in 0 .. ny, so k in z - ny .. z; difference: Y = k - z in 0 .. ny, so k in z .. z + ny; both
/// within 0 .. nx). Empty (first > last) when z is out of reach; z far outside is tested before any arithmetic on
/// it, so no int64 overflows.
struct Diagonal {
  std::int64_t first, last;
  TALLY_HOST_DEVICE bool empty() const { return first > last; }
  TALLY_HOST_DEVICE std::int64_t length() const { return empty() ? 0 : last - first + 1; }
};
TALLY_HOST_DEVICE inline Diagonal diagonal_of(std::int64_t nx, std::int64_t ny, int sign, std::int64_t z) {
  if (sign > 0 ? (z < 0 || z > nx + ny) : (z < -ny || z > nx)) return {1, 0};
  const std::int64_t lo = sign > 0 ? z - ny : z, hi = sign > 0 ? z : z + ny;
  return {lo > 0 ? lo : 0, hi < nx ? hi : nx};
}
/// Where an impossible observation leaves X's law (one weight 0): the diagonal's first k, kept within 0 .. nx.
TALLY_HOST_DEVICE inline std::int64_t impossible_lo(const Diagonal& d, std::int64_t nx) {
  const std::int64_t k = d.first < nx ? d.first : nx;
  return k > 0 ? k : 0;
}

/// The terms of the products p_X(k) p_Y(sign (z - k)) along a diagonal, for walk_law: log masses added, ratios of
/// consecutive products multiplied (a sum walks Y downwards: p_Y(y - 1) / p_Y(y) = 1 / ratio_Y(y - 1)).
template <class TX, class TY>
struct DiagonalTerms {
  TX x;
  TY y;
  std::int64_t z;
  int sign;
  TALLY_HOST_DEVICE DiagonalTerms(const TX& x_, const TY& y_, std::int64_t z_, int sign_) : x(x_), y(y_), z(z_), sign(sign_) {}
  TALLY_HOST_DEVICE double log_mass(std::int64_t k) const { return x.log_mass(k) + y.log_mass(sign > 0 ? z - k : k - z); }
  /// The ratio of the products at k + 1 and k, for k = kd (an integer on the diagonal but its last, as a double).
  TALLY_HOST_DEVICE double ratio(double kd) const {
    const double zd = static_cast<double>(z);
    return sign > 0 ? x.ratio(kd) / y.ratio(zd - kd - 1.0) : x.ratio(kd) * y.ratio(kd - zd);
  }
  /// The same ratio with one division (the device's fast path).
  TALLY_HOST_DEVICE double ratio_one_division(double kd) const {
    const double zd = static_cast<double>(z);
    double nx, dx, ny, dy;
    x.ratio_parts(kd, nx, dx);
    if (sign > 0) {
      y.ratio_parts(zd - kd - 1.0, ny, dy);
      return (nx * dy) / (dx * ny);
    }
    y.ratio_parts(kd - zd, ny, dy);
    return (nx * ny) / (dx * dy);
  }
};

/// Terms whose log mass at one k (a chunk's first, already evaluated to find the base) is given, not recomputed.
template <class Terms>
struct AnchoredTerms {
  const Terms& terms;
  std::int64_t k0;
  double at_k0;
  TALLY_HOST_DEVICE double log_mass(std::int64_t k) const { return k == k0 ? at_k0 : terms.log_mass(k); }
  TALLY_HOST_DEVICE double ratio(double kd) const { return terms.ratio(kd); }
};

/// Chunks of a diagonal: chunk c holds k = first + c law_chunk .. (up to law_chunk values, fewer at the end).
TALLY_HOST_DEVICE inline std::int64_t diagonal_chunks(const Diagonal& d) { return (d.length() + law_chunk - 1) / law_chunk; }

/// A diagonal's weights are first written relative to `base` (the largest log mass at the chunks' first k; where none
/// is finite, as with point masses, the largest at any k; 0 where none is: an impossible value); a particle whose raw weights overflow (a product rising steeply
/// inside a chunk) is walked again with base raised by this much, until none does.
inline constexpr double diagonal_base_step = 600.0;

}  // namespace tally::gpu::detail
