// Private: the per-particle formulas of population_ops (log masses, the gamma sampler), shared by CPU and CUDA.
#pragma once

#include <math.h>

#include <cstdint>

#include "tally/gpu/philox.hpp"

namespace tally::gpu::detail {

/// The launch shape of the per-law kernels (one warp per law) and of the elementwise ones: tuning knobs, here only.
inline constexpr int population_block = 256;

/// The values a law's positive weights span: its window [lo, lo + m) less the zero weights at both ends (which
/// conditioning leaves there: device laws are not trimmed). {lo, lo - 1} (empty) where every weight is zero.
struct Span {
  std::int64_t first, last;
};
TALLY_HOST_DEVICE inline Span positive_span(const double* w, std::int64_t lo, std::int64_t m) {
  std::int64_t a = 0, b = m - 1;
  while (a < m && !(w[a] > 0.0)) ++a;
  while (b >= a && !(w[b] > 0.0)) --b;
  return a > b ? Span{lo, lo - 1} : Span{lo + a, lo + b};
}
/// Whether the law's positive weights lie in the states 0 .. k - 1 (the window is checked first: no scan inside).
TALLY_HOST_DEVICE inline bool within_states(const double* w, std::int64_t lo, std::int64_t m, std::int64_t k) {
  if (lo >= 0 && lo + m - 1 < k) return true;
  const Span s = positive_span(w, lo, m);
  return s.first > s.last || (s.first >= 0 && s.last < k);
}

/// \f$\log\binom{n}{k} = \log\Gamma(n+1) - \log\Gamma(k+1) - \log\Gamma(n-k+1)\f$, 0 <= k <= n.
TALLY_HOST_DEVICE inline double log_choose(double n, double k) {
  return ::lgamma(n + 1.0) - ::lgamma(k + 1.0) - ::lgamma(n - k + 1.0);
}

/// log Binomial(k; n, q), -inf off 0 .. n; q = 0 and q = 1 are point masses at 0 and n.
TALLY_HOST_DEVICE inline double binomial_log_mass(std::int64_t n, std::int64_t k, double q) {
  if (k < 0 || k > n) return -INFINITY;
  if (q <= 0.0) return k == 0 ? 0.0 : -INFINITY;
  if (q >= 1.0) return k == n ? 0.0 : -INFINITY;
  const double kd = static_cast<double>(k), rest = static_cast<double>(n - k);
  return log_choose(static_cast<double>(n), kd) + kd * ::log(q) + rest * ::log1p(-q);
}

/// \f$\log B(x, y) = \log\Gamma(x) + \log\Gamma(y) - \log\Gamma(x + y)\f$.
TALLY_HOST_DEVICE inline double log_beta(double x, double y) { return ::lgamma(x) + ::lgamma(y) - ::lgamma(x + y); }

/// log BetaBinomial(k; n, a, b) = log C(n, k) + log B(k + a, n - k + b) - log B(a, b), -inf off 0 .. n.
TALLY_HOST_DEVICE inline double beta_binomial_log_mass(std::int64_t n, std::int64_t k, double a, double b) {
  if (k < 0 || k > n) return -INFINITY;
  const double kd = static_cast<double>(k), nd = static_cast<double>(n);
  return log_choose(nd, kd) + log_beta(kd + a, nd - kd + b) - log_beta(a, b);
}

/// Parameter laws (binomial_laws, beta_binomial_laws) are written in chunks of law_chunk consecutive weights of
/// each law (k = 0 .. 15, 16 .. 31, ...): the chunk's first log mass by the lgamma formula (the anchor), each further
/// weight from the one before by the exact ratio p(k + 1) / p(k) (walk_law), so that the lgamma formula is evaluated
/// once per chunk instead of once per weight. A walk of c steps adds at most about 4c roundings (relative 1e-14 for
/// c = 16) to the anchor's own error, which is that of the lgamma formula. The chunks are the law's own (a law's
/// weights do not depend on where it lies in the batch), and the host reference and the device kernel use the same
/// chunks and the same arithmetic.
inline constexpr int law_chunk = 16;
/// A walk forms weights below e^walk_deep from their logarithm (exp(L + log v)) rather than as a product with a
/// scale factor that would be subnormal; its running product of ratios re-anchors outside [1e-100, 1e100].
inline constexpr double walk_deep = -650.0;

/// The terms of Binomial(n, q) for walk_law: log p(k) = log C(n, k) + k log q + (n - k) log(1 - q) (as
/// binomial_log_mass), p(k + 1) / p(k) = (n - k) r / (k + 1) with r = q / (1 - q); q = 0 and q = 1 are point masses
/// (ratio 0: every weight evaluated directly).
struct BinomialTerms {
  double n, q, lq, lr, r, c;
  bool point;
  TALLY_HOST_DEVICE BinomialTerms(std::int64_t n_, double q_) : BinomialTerms(n_, q_, ::lgamma(static_cast<double>(n_) + 1.0)) {}
  /// With c = lgamma(n + 1) already known.
  TALLY_HOST_DEVICE BinomialTerms(std::int64_t n_, double q_, double c_) : n(static_cast<double>(n_)), q(q_), c(c_) {
    point = !(q > 0.0 && q < 1.0);
    lq = point ? 0.0 : ::log(q);
    lr = point ? 0.0 : ::log1p(-q);
    r = point ? 0.0 : q / (1.0 - q);
  }
  TALLY_HOST_DEVICE double log_mass(std::int64_t k) const {
    const double kd = static_cast<double>(k);
    if (kd < 0.0 || kd > n) return -INFINITY;
    if (point) return (q <= 0.0 ? kd == 0.0 : kd == n) ? 0.0 : -INFINITY;
    const double rest = n - kd;
    return c - ::lgamma(kd + 1.0) - ::lgamma(rest + 1.0) + kd * lq + rest * lr;
  }
  /// p(k + 1) / p(k) for k = kd (an integer below n, as a double).
  TALLY_HOST_DEVICE double ratio(double kd) const { return (n - kd) * r / (kd + 1.0); }
  /// The same ratio as numerator and denominator (for products of ratios with one division).
  TALLY_HOST_DEVICE void ratio_parts(double kd, double& num, double& den) const {
    num = (n - kd) * r;
    den = kd + 1.0;
  }
  /// max_k log p(k): at the mode floor((n + 1) q) or a neighbour (the largest of the three as evaluated).
  TALLY_HOST_DEVICE double top() const {
    if (point) return 0.0;
    const double mode = ::fmin(::floor((n + 1.0) * q), n);
    double best = log_mass(static_cast<std::int64_t>(mode));
    if (mode > 0.0) best = ::fmax(best, log_mass(static_cast<std::int64_t>(mode) - 1));
    if (mode < n) best = ::fmax(best, log_mass(static_cast<std::int64_t>(mode) + 1));
    return best;
  }
};

/// The terms of BetaBinomial(n, a, b) for walk_law: log p(k) = c + (lgamma(k + a) - lgamma(k + 1)) +
/// (lgamma(n - k + b) - lgamma(n - k + 1)) with the law's constant c = lgamma(n + 1) + lgamma(a + b) -
/// lgamma(n + a + b) - lgamma(a) - lgamma(b) (constant(), computed once per law), and
/// p(k + 1) / p(k) = (n - k)(k + a) / ((k + 1)(n - k - 1 + b)).
struct BetaBinomialTerms {
  double n, a, b, c;
  TALLY_HOST_DEVICE static double constant(std::int64_t n, double a, double b) {
    const double nd = static_cast<double>(n);
    return ::lgamma(nd + 1.0) + ::lgamma(a + b) - ::lgamma(nd + (a + b)) - ::lgamma(a) - ::lgamma(b);
  }
  TALLY_HOST_DEVICE BetaBinomialTerms(std::int64_t n_, double a_, double b_, double c_)
      : n(static_cast<double>(n_)), a(a_), b(b_), c(c_) {}
  TALLY_HOST_DEVICE double log_mass(std::int64_t k) const {
    const double kd = static_cast<double>(k);
    if (kd < 0.0 || kd > n) return -INFINITY;
    const double rest = n - kd;
    return c + (::lgamma(kd + a) - ::lgamma(kd + 1.0)) + (::lgamma(rest + b) - ::lgamma(rest + 1.0));
  }
  /// p(k + 1) / p(k) for k = kd (an integer below n, as a double).
  TALLY_HOST_DEVICE double ratio(double kd) const {
    const double rest = n - kd;
    return (rest * (kd + a)) / ((kd + 1.0) * ((rest - 1.0) + b));
  }
  /// The same ratio as numerator and denominator (for products of ratios with one division).
  TALLY_HOST_DEVICE void ratio_parts(double kd, double& num, double& den) const {
    const double rest = n - kd;
    num = rest * (kd + a);
    den = (kd + 1.0) * ((rest - 1.0) + b);
  }
  /// max_k log p(k). p(k + 1) > p(k) exactly where g(k) = (2 - a - b) k + n (a - 1) + 1 - b > 0, linear in k: for
  /// a + b > 2 the law is unimodal with its mode next to the root t of g (the largest of floor(t) and its
  /// neighbours, as evaluated, within 0 .. n); otherwise it is U-shaped or monotone, its maximum at 0 or n.
  TALLY_HOST_DEVICE double top() const {
    if (a + b > 2.0) {
      const double t = (n * (a - 1.0) + 1.0 - b) / ((a + b) - 2.0);
      const double mode = ::floor(::fmin(::fmax(t, 0.0), n));
      double best = log_mass(static_cast<std::int64_t>(mode));
      if (mode > 0.0) best = ::fmax(best, log_mass(static_cast<std::int64_t>(mode) - 1));
      if (mode < n) best = ::fmax(best, log_mass(static_cast<std::int64_t>(mode) + 1));
      return best;
    }
    return ::fmax(log_mass(0), log_mass(static_cast<std::int64_t>(n)));
  }
};

/// The weights e^{log p(k) - top} (at most 1) for k = k0 .. k0 + len - 1 of one law, put(j, w) for k = k0 + j:
/// the anchor log p(k0) - top from the lgamma formula, then w(k + 1) = w(k) p(k + 1) / p(k) as a scale factor
/// e^L times the running product v of the ratios. Where L is below walk_deep, w = exp(L + log v) (until that
/// climbs back above it); where v leaves [1e-100, 1e100] (or is 0: a point mass), the walk re-anchors at k.
/// cap bounds every weight put (1 for a law scaled by its true maximum; +inf where top is only an estimate, as on a
/// diagonal of two laws, whose caller rescales by the true maximum afterwards).
template <class Terms, class Put>
TALLY_HOST_DEVICE inline void walk_law(const Terms& terms, double top, std::int64_t k0, int len, Put&& put,
                                       double cap = 1.0) {
  double L = 0.0, v = 1.0, s = 1.0;
  bool deep = false, anchor = true;
  double kd = static_cast<double>(k0);
  for (int j = 0;; ++j) {
    if (anchor) {  // the one place the lgamma formula is evaluated
      L = terms.log_mass(k0 + j) - top;
      v = 1.0;
      s = ::exp(L);
      deep = L < walk_deep;
      anchor = false;
    }
    double w;
    if (!deep) {
      w = s * v;
    } else {
      const double l = L + ::log(v);
      if (l >= walk_deep) {
        L = l;
        v = 1.0;
        s = ::exp(l);
        deep = false;
        w = s;
      } else {
        w = ::exp(l);
      }
    }
    put(j, ::fmin(w, cap));
    if (j + 1 >= len) break;
    v *= terms.ratio(kd);
    kd += 1.0;
    anchor = !(v >= 1e-100 && v <= 1e100);
  }
}

/// Walks a law of m weights in its chunks (k = 0 .. law_chunk - 1, law_chunk .. 2 law_chunk - 1, ...): put(k, w)
/// for k = 0 .. m - 1. The host's loop; the device kernel walks the same chunks, one per thread.
template <class Terms, class Put>
inline void walk_chunks(const Terms& terms, double top, std::int64_t m, Put&& put) {
  for (std::int64_t k = 0; k < m; k += law_chunk) {
    const int len = static_cast<int>(m - k < law_chunk ? m - k : law_chunk);
    walk_law(terms, top, k, len, [&](int j, double w) { put(k + j, w); });
  }
}

/// The uniforms of one Beta draw: philox_uniform(seed, particle, counter * 256 + j), j < 256.
inline constexpr int beta_uniforms = 256;
/// Iterations each gamma variate may take (3 uniforms each, and 1 more for a shape below 1): 2 x (1 + 3 x 41) =
/// 248 <= 256. Marsaglia and Tsang accept with probability >= 0.95 per iteration, so running out has probability
/// below 1e-53; then the variate is the mode-like value d (documented, never reached in the tests).
inline constexpr int gamma_iterations = 41;

/// A Gamma(alpha, 1) variate by Marsaglia and Tsang (2000), "A simple method for generating gamma variables":
/// d = alpha - 1/3, c = 1 / sqrt(9 d); repeat x ~ N(0, 1) (Box-Muller from two uniforms), v = (1 + c x)^3 until
/// v > 0 and log u < x^2 / 2 + d - d v + d log v; return d v. For alpha < 1, Gamma(alpha + 1) u^{1/alpha}.
/// `next` is the index j of the next uniform; it advances by what the draw used.
TALLY_HOST_DEVICE inline double gamma_draw(double alpha, std::uint64_t seed, std::uint64_t particle,
                                           std::uint64_t counter, int& next) {
  auto uniform = [&]() {
    return philox_uniform(seed, particle, counter * beta_uniforms + static_cast<std::uint64_t>(next++));
  };
  double boost = 1.0;
  if (alpha < 1.0) {
    boost = ::pow(uniform(), 1.0 / alpha);
    alpha += 1.0;
  }
  const double d = alpha - 1.0 / 3.0, c = 1.0 / ::sqrt(9.0 * d);
  for (int it = 0; it < gamma_iterations; ++it) {
    const double u1 = uniform(), u2 = uniform();
    const double x = ::sqrt(-2.0 * ::log(u1)) * ::cos(6.283185307179586 * u2);
    double v = 1.0 + c * x;
    const double u = uniform();
    if (v <= 0.0) continue;
    v = v * v * v;
    if (::log(u) < 0.5 * x * x + d - d * v + d * ::log(v)) return d * v * boost;
  }
  return d * boost;
}

/// One Beta(a, b) draw X / (X + Y): X ~ Gamma(a), Y ~ Gamma(b) on the particle's uniforms for `counter`.
TALLY_HOST_DEVICE inline double beta_draw(double a, double b, std::uint64_t seed, std::uint64_t particle,
                                          std::uint64_t counter) {
  int next = 0;
  const double x = gamma_draw(a, seed, particle, counter, next);
  const double y = gamma_draw(b, seed, particle, counter, next);
  return x / (x + y);
}

/// log Poisson(v; r) = v log r - r - log v!, -inf for v < 0; r = 0 is the point mass at 0.
TALLY_HOST_DEVICE inline double poisson_log_mass(std::int64_t v, double r) {
  if (v < 0) return -INFINITY;
  if (r <= 0.0) return v == 0 ? 0.0 : -INFINITY;
  const double vd = static_cast<double>(v);
  return vd * ::log(r) - r - ::lgamma(vd + 1.0);
}

/// log T_{k y} of a row-major K x C table, -inf off its entries or where T_{k y} = 0.
TALLY_HOST_DEVICE inline double table_log_entry(const double* t, std::int64_t rows, std::int64_t cols, std::int64_t k,
                                                std::int64_t y) {
  if (k < 0 || k >= rows || y < 0 || y >= cols) return -INFINITY;
  const double e = t[k * cols + y];
  return e > 0.0 ? ::log(e) : -INFINITY;
}

/// One term of condition_on_thinning: log Binomial(v; k, q) for the parent value k (-inf for k < v).
TALLY_HOST_DEVICE inline double thinning_log_mass(std::int64_t k, std::int64_t v, double q) {
  return binomial_log_mass(k, v, q);
}

}  // namespace tally::gpu::detail
