// NegativeBinomial(r, p): the number of failures before the r-th success (r real: the Gamma-Poisson mixture).
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = \frac{\Gamma(k + r)}{k! \, \Gamma(r)} \, p^r (1-p)^k, \qquad k \ge 0, \f]
/// with mean \f$r(1-p)/p\f$ and variance \f$r(1-p)/p^2\f$. For integer r it counts the failures before the r-th
/// success; for real r it is the Poisson law whose rate is Gamma(r, scale (1-p)/p) distributed.
/// Domain: r finite and > 0, 0 < p <= 1 (domain_error otherwise); p = 1 is the point mass at 0.
class NegativeBinomial {
 public:
  /// r = successes (real, > 0) and p = success, the success probability (domain_error outside the domain above).
  NegativeBinomial(double successes, double success);
  /// r.
  double successes() const { return successes_; }
  /// p.
  double success() const { return success_; }

 private:
  double successes_;
  double success_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<NegativeBinomial> = true;

/// P(X = k), the exponential of log_pdf in extended precision (about 1e-16 relative); 0 for k < 0.
double pdf(const NegativeBinomial& d, std::int64_t k);
/// Loader's saddle-point form with real r: absolute error a few ulps of the result, far beyond the range of pdf.
double log_pdf(const NegativeBinomial& d, std::int64_t k);
/// \f$P(X \le k) = I_p(r, k + 1)\f$, within about 1e-13 relative: in double arithmetic while r and k are at most
/// 2^16, in 113 bits beyond; overflow_error when r or the mean passes 2^40 (as for Binomial's cdf).
double cdf(const NegativeBinomial& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob; prob = 1 is a domain_error unless p = 1 (the support is unbounded).
std::int64_t quantile(const NegativeBinomial& d, double prob);
/// [0, INT64_MAX] ([0, 0] when p = 1).
std::pair<std::int64_t, std::int64_t> support(const NegativeBinomial& d);
/// r (1 - p) / p.
double mean(const NegativeBinomial& d);
/// r (1 - p) / p^2.
double variance(const NegativeBinomial& d);
/// The pmf on [lo, hi] with both tails (each at most tolerance/2) dropped; the dropped mass, relative to the
/// mass kept, is the error bound.
Pmf to_pmf(const NegativeBinomial& d, const Truncation& t = {});

}  // namespace tally
