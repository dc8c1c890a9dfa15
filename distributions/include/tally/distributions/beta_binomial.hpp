// BetaBinomial(n, alpha, beta): a Binomial(n, p) whose success probability p is Beta(alpha, beta) distributed.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = \binom{n}{k} \frac{B(k + \alpha, n - k + \beta)}{B(\alpha, \beta)}, \qquad 0 \le k \le n, \f]
/// with mean \f$n\alpha/(\alpha+\beta)\f$ and variance
/// \f$n\alpha\beta(\alpha+\beta+n) / ((\alpha+\beta)^2(\alpha+\beta+1))\f$. Unimodal (perhaps monotone) when
/// \f$\alpha + \beta \ge 2\f$; it may be U-shaped otherwise.
/// Domain: n >= 0; alpha, beta finite and > 0 (domain_error otherwise).
class BetaBinomial {
 public:
  /// n trials whose success probability is Beta(alpha, beta) distributed (domain_error outside the domain above).
  BetaBinomial(std::int64_t trials, double alpha, double beta);
  /// n.
  std::int64_t trials() const { return trials_; }
  /// alpha.
  double alpha() const { return alpha_; }
  /// beta.
  double beta() const { return beta_; }

 private:
  std::int64_t trials_;
  double alpha_;
  double beta_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<BetaBinomial> = true;

/// P(X = k), the exponential of log_pdf in extended precision (about 1e-16 relative while it is a normal double); 0
/// outside [0, n].
double pdf(const BetaBinomial& d, std::int64_t k);
/// Three negative-binomial Loader terms (in long double),
/// \f$\log \mathrm{NB}(k; \alpha, p) + \log \mathrm{NB}(n-k; \beta, p) - \log \mathrm{NB}(n; \alpha+\beta, p)\f$
/// with \f$p = (\alpha+\beta)/(n+\alpha+\beta)\f$ (the powers of p cancel): a few ulps of the result, far tails
/// included.
double log_pdf(const BetaBinomial& d, std::int64_t k);
/// Sums the pmf (terms by their ratio in extended precision): about the tail's length when unimodal, up to n
/// terms otherwise.
double cdf(const BetaBinomial& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob (bisection on cdf).
std::int64_t quantile(const BetaBinomial& d, double prob);
/// [0, n].
std::pair<std::int64_t, std::int64_t> support(const BetaBinomial& d);
/// \f$n\alpha/(\alpha+\beta)\f$.
double mean(const BetaBinomial& d);
/// \f$n\alpha\beta(\alpha+\beta+n) / ((\alpha+\beta)^2(\alpha+\beta+1))\f$.
double variance(const BetaBinomial& d);
/// The pmf on [0, n] (U-shaped laws), or, when unimodal, on the part of it above flush_fraction of the mode
/// (the entries left out are in the error bound); overflow_error beyond t.max_size.
Pmf to_pmf(const BetaBinomial& d, const Truncation& t = {});

}  // namespace tally
