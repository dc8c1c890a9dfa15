// Conditioning on observations: X given X + Y = z, X given an observed child; each returns the log-likelihood.
#pragma once

#include <cstdint>
#include <optional>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"

namespace tally {

/// The result of conditioning on an observation.
///
/// - posterior: the normalized law of the conditioned variable, or std::nullopt when the observation has
///   probability zero under the stored laws (an impossible observation is not an exception: an engine gives
///   the particle weight zero);
/// - log_likelihood: log P(observation) under the stored laws (including their log scales), -inf when
///   impossible;
/// - log_likelihood_error: a bound on |log P_exact - log_likelihood| due to the operands' error bounds
///   (+inf when the bound is no longer informative, e.g. an observation less likely than the dropped mass).
///   The posterior's error_bound() likewise bounds its L1 distance to the exact posterior.
struct Conditioned {
  /// The normalized posterior; std::nullopt when the observation is impossible.
  std::optional<Pmf> posterior;
  /// log P(observation) under the stored laws; -inf when impossible.
  double log_likelihood;
  /// Bound on |log P_exact - log_likelihood| (+inf when no longer informative).
  double log_likelihood_error;
};

/// X given X + Y = z, for independent X ~ x and Y ~ y: the z-th skew diagonal of the outer product,
/// \f[ P(X = j \mid X + Y = z) = \frac{\mu_X(j)\,\mu_Y(z - j)}{\sum_i \mu_X(i)\,\mu_Y(z - i)}, \f]
/// over \f$\max(lo_X, z - hi_Y) \le j \le \min(hi_X, z - lo_Y)\f$; log_likelihood is the log of the denominator.
/// Y given the same observation is z - X: `shift(negate(*posterior), z)`.
Conditioned condition_on_sum(const Pmf& x, const Pmf& y, std::int64_t z);

/// X given X - Y = d: the same with \f$\mu_Y(j - d)\f$ (that is, X + (-Y) = d).
Conditioned condition_on_difference(const Pmf& x, const Pmf& y, std::int64_t d);

/// X given a X + c = v: the point (v - c)/a when a divides v - c and it is in the support, otherwise impossible.
/// For a = 0 the observation says nothing about X (posterior = x normalized) unless v != c (impossible).
Conditioned condition_affine(const Pmf& x, std::int64_t a, std::int64_t c, std::int64_t v);

/// X given an observed child Y = y of each law: posterior \f$\propto \mu_X(x)\,P(Y = y \mid X = x)\f$.
///@{
Conditioned condition(const Pmf& x, const Thinning& k, std::int64_t y);
Conditioned condition(const Pmf& x, const ScaledPoisson& k, std::int64_t y);
Conditioned condition(const Pmf& x, const MarkovStep& k, std::int64_t y);
Conditioned condition(const Pmf& x, const IndexedPoisson& k, std::int64_t y);
///@}

/// X given Y = y for Y | X ~ Binomial(X, rho) with rho ~ Beta(alpha, beta) integrated out, that is
/// Y | X = x ~ BetaBinomial(x, alpha, beta):
/// \f[ P(X = x \mid Y = y) \propto \mu_X(x) \binom{x}{y} \frac{B(\alpha + y, \beta + x - y)}{B(\alpha, \beta)}, \f]
/// zero for x < y; log_likelihood is \f$\log \sum_x \mu_X(x) \, \mathrm{BetaBinomial}(y; x, \alpha, \beta)\f$.
/// The parent must be a count (domain_error when its support starts below 0); alpha, beta finite and > 0
/// (domain_error).
Conditioned condition_on_beta_thinning(const Pmf& x, double alpha, double beta, std::int64_t y);

}  // namespace tally
