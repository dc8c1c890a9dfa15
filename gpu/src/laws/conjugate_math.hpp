// Private: the per-particle formulas of population_conjugate (log masses of counts of Beta and Gamma parents, known
// or integrated out), shared by the CPU reference and the CUDA kernels: Loader's saddle-point form and Stirling's
// series, in double.
#pragma once

#include <math.h>

#include <cstdint>

#include "tally/gpu/philox.hpp"  // TALLY_HOST_DEVICE

namespace tally::gpu::detail::conjugate {

inline constexpr double two_pi = 6.283185307179586477;

/// The per-particle parameter checks (false for NaN too): x > 0 finite, x >= 0 finite, x in [0, 1].
TALLY_HOST_DEVICE inline bool positive(double x) { return x > 0.0 && x < INFINITY; }
TALLY_HOST_DEVICE inline bool nonnegative(double x) { return x >= 0.0 && x < INFINITY; }
TALLY_HOST_DEVICE inline bool probability(double x) { return x >= 0.0 && x <= 1.0; }

/// \f$\delta(n)\f$ of stirling_error for the integers n = 0 .. 15: 50-digit values (mpmath: loggamma(n + 1) - (n +
/// 1/2) log n + n - log(2 pi) / 2) rounded to doubles (n = 0, where delta is infinite, is never read). One table for
/// the host and one in device memory (16 doubles: one cache line, so the lanes of a warp read theirs at once, where
/// a switch would branch a lane's way each).
#define TALLY_SMALL_STIRLING_ERRORS                                                                                  \
  0.0, 0.08106146679532726, 0.0413406959554093, 0.02767792568499834, 0.020790672103765093, 0.016644691189821193,   \
      0.013876128823070748, 0.01189670994589177, 0.010411265261972096, 0.009255462182712733, 0.00833056343336287,  \
      0.007573675487951841, 0.00694284010720953, 0.006408994188004207, 0.0059513701127588475, 0.005554733551962801
inline constexpr double small_stirling_errors[16] = {TALLY_SMALL_STIRLING_ERRORS};
#ifdef __CUDACC__
static __device__ const double small_stirling_errors_device[16] = {TALLY_SMALL_STIRLING_ERRORS};
#endif
#undef TALLY_SMALL_STIRLING_ERRORS

/// small_stirling_errors[n], 1 <= n <= 15, from the device's table in device code.
TALLY_HOST_DEVICE inline double small_stirling_error(int n) {
#ifdef __CUDA_ARCH__
  return small_stirling_errors_device[n];
#else
  return small_stirling_errors[n];
#endif
}

/// Stirling's error \f$\delta(y) = \log\Gamma(y + 1) - \log(\sqrt{2\pi y}\,(y/e)^y)\f$ for real y > 0. From 16 on,
/// the asymptotic series \f$1/(12y) - 1/(360y^3) + \dots\f$ (first omitted term below 3e-20); the integers below 16
/// from their table (small_stirling_error: a count's, the common case); other y below 16 by the recurrence
/// \f$\delta(y) = \delta(y + 1) + (y + 1/2)\log(1 + 1/y) - 1\f$ up to y + m >= 16 (each step adds about 1e-16).
TALLY_HOST_DEVICE inline double stirling_error(double y) {
  if (y < 16.0 && y == ::floor(y) && y >= 1.0) return small_stirling_error(static_cast<int>(y));
  double shift = 0.0;
  while (y < 16.0) {
    shift += (y + 0.5) * ::log1p(1.0 / y) - 1.0;
    y += 1.0;
  }
  const double r = 1.0 / y, v = r * r;  // one division: the series is FP64-throughput bound on a device
  const double series =
      (1.0 / 12 -
       v * (1.0 / 360 - v * (1.0 / 1260 - v * (1.0 / 1680 - v * (1.0 / 1188 - v * (691.0 / 360360 - v / 156)))))) *
      r;
  return shift + series;
}

/// Loader's deviance \f$D(x, \lambda) = x \log(x / \lambda) + \lambda - x \ge 0\f$ (x, lambda > 0); near lambda, by
/// the series \f$(x - \lambda) v + 2xv \sum_{j \ge 1} v^{2j} / (2j+1)\f$, \f$v = (x - \lambda)/(x + \lambda)\f$,
/// |v| < 0.1, without the cancellation of the direct form. The sum is cut after j = 9 (Horner, no division): the
/// first term left out, \f$v^{20}/21\f$, is below 2^-60 of the first, \f$v^2/3\f$.
TALLY_HOST_DEVICE inline double deviance(double x, double lambda) {
  const double d = x - lambda;
  if (::fabs(d) < 0.1 * (x + lambda)) {
    const double v = d / (x + lambda), w = v * v;
    double s = 1.0 / 19;
    s = s * w + 1.0 / 17;
    s = s * w + 1.0 / 15;
    s = s * w + 1.0 / 13;
    s = s * w + 1.0 / 11;
    s = s * w + 1.0 / 9;
    s = s * w + 1.0 / 7;
    s = s * w + 1.0 / 5;
    s = s * w + 1.0 / 3;
    return d * v + 2.0 * x * v * (s * w);
  }
  return x * ::log(x / lambda) + lambda - x;
}

/// log p from whichever of p and q = 1 - p is the more accurate.
TALLY_HOST_DEVICE inline double log_of(double p, double q) { return q < 0.5 ? ::log1p(-q) : ::log(p); }

/// \f$\log\frac{\Gamma(x + m + 1)}{\Gamma(x + 1)\,\Gamma(m + 1)} p^x q^m\f$ for real x, m >= 0 and p + q = 1 (to
/// rounding; passed apart so that neither loses relative precision), by Loader's form
/// \f$\delta(n) - \delta(x) - \delta(m) - D(x, np) - D(m, nq) - \frac12 \log(2\pi x m / n)\f$, n = x + m.
TALLY_HOST_DEVICE inline double binomial_term(double x, double m, double p, double q) {
  if (x == 0.0) return m == 0.0 ? 0.0 : q == 0.0 ? -INFINITY : m * log_of(q, p);
  if (m == 0.0) return p == 0.0 ? -INFINITY : x * log_of(p, q);
  if (p == 0.0 || q == 0.0) return -INFINITY;
  const double n = x + m;
  const double lc = stirling_error(n) - stirling_error(x) - stirling_error(m) - deviance(x, n * p) - deviance(m, n * q);
  return lc - 0.5 * ::log(two_pi * (x * m / n));
}

/// \f$\log\frac{\Gamma(k + r)}{k!\,\Gamma(r)} p^r q^k = \log\frac{r}{k + r} + \mathrm{binomial\_term}(r, k, p, q)\f$
/// for integer k (-inf for k < 0) and real r > 0: the negative binomial log-pmf.
TALLY_HOST_DEVICE inline double negative_binomial_term(std::int64_t k, double r, double p, double q) {
  if (k < 0) return -INFINITY;
  if (k == 0) return r * log_of(p, q);
  const double x = static_cast<double>(k);
  return ::log(r / (x + r)) + binomial_term(r, x, p, q);
}

/// log Binomial(k; n, q), -inf off 0 .. n; q = 0 and q = 1 are the point masses at 0 and n. np exact to rounding and
/// nq = n - np from the exact product (the fma gives its rounding error), so that nq keeps its relative precision
/// when q is small.
TALLY_HOST_DEVICE inline double binomial_log_mass(std::int64_t n, std::int64_t k, double q) {
  if (k < 0 || k > n) return -INFINITY;
  if (n == 0) return 0.0;
  if (q <= 0.0) return k == 0 ? 0.0 : -INFINITY;
  if (q >= 1.0) return k == n ? 0.0 : -INFINITY;
  const double nd = static_cast<double>(n), np = nd * q, nq = (nd - np) - ::fma(nd, q, -np);
  if (k == 0) return q < 0.1 ? -deviance(nd, nq) - np : nd * ::log1p(-q);
  if (k == n) return 1.0 - q < 0.1 ? -deviance(nd, np) - nq : nd * ::log(q);
  const double kd = static_cast<double>(k), rest = static_cast<double>(n - k);
  const double lc =
      stirling_error(nd) - stirling_error(kd) - stirling_error(rest) - (deviance(kd, np) + deviance(rest, nq));
  return lc - 0.5 * ::log(two_pi * kd * (rest / nd));
}

/// log BetaBinomial(k; n, a, b) = log NB(k; a, p) + log NB(n - k; b, p) - log NB(n; a + b, p), p = (a + b) / (n + a
/// + b), -inf off 0 .. n.
TALLY_HOST_DEVICE inline double beta_binomial_log_mass(std::int64_t n, std::int64_t k, double a, double b) {
  if (k < 0 || k > n) return -INFINITY;
  if (n == 0) return 0.0;
  const double s = a + b, m = static_cast<double>(n) + s, p = s / m, q = static_cast<double>(n) / m;
  return negative_binomial_term(k, a, p, q) + negative_binomial_term(n - k, b, p, q) -
         negative_binomial_term(n, s, p, q);
}

/// log NegativeBinomial(k; r, rho), -inf for k < 0; rho = 1: the point mass at 0; rho = 0: -inf everywhere.
TALLY_HOST_DEVICE inline double negative_binomial_log_mass(double r, double rho, std::int64_t k) {
  if (k < 0 || rho <= 0.0) return -INFINITY;
  return negative_binomial_term(k, r, rho, 1.0 - rho);
}

/// log x for x = 1 + d: log1p(d) near 1 (d from a difference formed exactly enough), log x from its products and
/// quotients (no cancellation) away from 1.
TALLY_HOST_DEVICE inline double log_near_one(double d, double x) { return ::fabs(d) < 0.5 ? ::log1p(d) : ::log(x); }

/// log BetaNegativeBinomial(k; r, a, b) = \f$\log\frac{\Gamma(k + r)}{k!\,\Gamma(r)} + \log B(a + r, b + k) -
/// \log B(a, b)\f$, -inf for k < 0. Every log-gamma in Stirling's form, \f$\log\Gamma(y) = (y - \frac12)\log y - y +
/// \frac12\log 2\pi + \delta(y)\f$, and the large logarithms paired before they are formed. With n = r + k,
/// s = a + b, s' = s + n and t = a k - b r, for k >= 1 and b >= a:
/// \f[ \log P(k) = \log\frac{r}{n} - \tfrac12\log\frac{2\pi r k}{n}
///   + r \log\Big(1 + \frac{t}{r s'}\Big) + k \log\Big(1 - \frac{t}{k s'}\Big)
///   + (a - \tfrac12)\log\Big(1 + \frac{r}{a}\Big) + (b - \tfrac12)\log\Big(1 + \frac{t}{b s'}\Big)
///   - a\log\Big(1 + \frac{n}{s}\Big)
///   + \delta(n) - \delta(r) - \delta(k) + \delta(a + r) - \delta(a) + \delta(b + k) - \delta(b) - \delta(s')
///   + \delta(s) \f]
/// (a and b swapped, with r and k and the sign of t, for b < a). The t terms are \f$r\log\frac{(a + r) n}{s' r}\f$
/// and \f$k\log\frac{(b + k) n}{s' k}\f$ (the powers of the coefficient and of the Beta ratio, which would cancel,
/// combined) and \f$(b - \frac12)\log\frac{1 + k/b}{1 + n/s}\f$ (the two largest logarithms of the Beta ratio
/// combined); log_near_one takes each from its ratio when it is far from 1. At k = 0:
/// \f$(a - \frac12)\log(1 + \frac{r b}{a (s + r)}) - b \log(1 + \frac{r}{s}) + r \log\frac{a + r}{s + r} +
/// \delta(a + r) - \delta(a) - \delta(s + r) + \delta(s)\f$. No term is much larger than the result: against a
/// quad-precision lgamma formula, within 1e-14 relative (absolute below 1) for r in [0.05, 100], a, b in
/// [0.01, 1e6] and k up to 1e7, where the lgamma differences lose up to 4e-9.
TALLY_HOST_DEVICE inline double beta_negative_binomial_log_mass(double r, double a, double b, std::int64_t k) {
  if (k < 0) return -INFINITY;
  const double s = a + b, ar = a + r;
  if (k == 0) {
    const double sr = s + r;
    return (a - 0.5) * ::log1p(r * b / (a * sr)) - b * ::log1p(r / s) + r * log_of(ar / sr, b / sr) +
           stirling_error(ar) - stirling_error(a) - stirling_error(sr) + stirling_error(s);
  }
  const double kd = static_cast<double>(k), n = r + kd, s1 = s + n, bk = b + kd, t = a * kd - b * r;
  const double coefficient =
      ::log(r / n) + stirling_error(n) - stirling_error(r) - stirling_error(kd) - 0.5 * ::log(two_pi * (r * kd / n));
  const double powers =
      r * log_near_one(t / (r * s1), (ar / r) * (n / s1)) + kd * log_near_one(-t / (kd * s1), (bk / kd) * (n / s1));
  // (a - 1/2) log(1 + r/a) + (b - 1/2) log(1 + k/b) - (s - 1/2) log(1 + n/s), the larger of a and b paired with s:
  // (1 + k/b) / (1 + n/s) = 1 + t / (b s'), (1 + r/a) / (1 + n/s) = 1 - t / (a s')
  const double shifts = b >= a ? (a - 0.5) * ::log1p(r / a) +
                                     (b - 0.5) * log_near_one(t / (b * s1), (bk / b) * (s / s1)) - a * ::log1p(n / s)
                               : (b - 0.5) * ::log1p(kd / b) +
                                     (a - 0.5) * log_near_one(-t / (a * s1), (ar / a) * (s / s1)) - b * ::log1p(n / s);
  const double errors = stirling_error(ar) - stirling_error(a) + stirling_error(bk) - stirling_error(b) -
                        stirling_error(s1) + stirling_error(s);
  return coefficient + powers + shifts + errors;
}

/// log Poisson(k; rate) = -delta(k) - D(k, rate) - log(2 pi k) / 2, -inf for k < 0; rate 0: the point mass at 0.
TALLY_HOST_DEVICE inline double poisson_log_mass(double rate, std::int64_t k) {
  if (k < 0) return -INFINITY;
  if (rate <= 0.0) return k == 0 ? 0.0 : -INFINITY;
  if (k == 0) return -rate;
  const double kd = static_cast<double>(k);
  return -stirling_error(kd) - deviance(kd, rate) - 0.5 * ::log(two_pi * kd);
}

/// log P(k) of Poisson(s lambda), lambda ~ Gamma(shape a, rate b): NegativeBinomial(a, b / (b + s)).
TALLY_HOST_DEVICE inline double gamma_poisson_log_mass(double s, double a, double b, std::int64_t k) {
  const double total = b + s;
  return negative_binomial_term(k, a, b / total, s / total);
}

}  // namespace tally::gpu::detail::conjugate
