// Conjugate continuous parents of counts: Beta (Bernoulli/Binomial/NegativeBinomial), Gamma (Poisson), Dirichlet.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally::runtime {

/// Beta(alpha, beta) on (0, 1), alpha, beta > 0: \f$ p(\rho) \propto \rho^{\alpha-1}(1-\rho)^{\beta-1} \f$.
struct Beta {
  /// domain_error unless alpha and beta are finite and > 0.
  Beta(double alpha, double beta);
  /// alpha and beta.
  ///@{
  double alpha, beta;
  ///@}
};

/// Gamma(shape, rate) on (0, inf), both > 0: \f$ p(\lambda) \propto \lambda^{k-1} e^{-\theta\lambda} \f$.
struct Gamma {
  /// k = shape and \f$\theta\f$ = rate (domain_error unless finite and > 0).
  Gamma(double shape, double rate);
  /// k and \f$\theta\f$: the mean is k / \f$\theta\f$.
  ///@{
  double shape, rate;
  ///@}
};

/// Dirichlet(alpha) on the simplex of dimension K = alpha.size() >= 1, every alpha_i > 0.
struct Dirichlet {
  /// shape_error when alpha is empty, domain_error unless every alpha_i is finite and > 0.
  explicit Dirichlet(Eigen::VectorXd alpha);
  /// alpha_0, ..., alpha_{K-1}.
  Eigen::VectorXd alpha;
};

/// The means: alpha / (alpha + beta), shape / rate, alpha / sum(alpha).
///@{
double mean(const Beta& d);
double mean(const Gamma& d);
Eigen::VectorXd mean(const Dirichlet& d);
///@}

/// Draws (Marsaglia and Tsang's method for the Gamma, with Philox uniforms; Beta and Dirichlet from Gammas).
///@{
double sample(const Gamma& d, RandomStream& rng);
double sample(const Beta& d, RandomStream& rng);
Eigen::VectorXd sample(const Dirichlet& d, RandomStream& rng);
///@}

/// log P(count = k) with the conjugate parent integrated out, in closed form (no table: an observed count of a
/// heavy-tailed law costs O(1)): beta-binomial, beta-negative-binomial, negative binomial, Dirichlet-categorical.
/// -inf outside the support.
///@{
double log_marginal_binomial(const Beta& rho, std::int64_t n, std::int64_t k);
double log_marginal_negative_binomial(const Beta& rho, double r, std::int64_t k);
double log_marginal_poisson(const Gamma& lambda, std::int64_t x);
double log_marginal_categorical(const Dirichlet& pi, std::int64_t x);
///@}

/// Marginal laws of a count given the conjugate parent integrated out, and the parent's posterior given the count.
/// Binomial(n, rho), rho ~ Beta(a, b): BetaBinomial(n, a, b); posterior Beta(a + k, b + n - k).
///@{
Pmf marginal_binomial(const Beta& rho, std::int64_t n, const Truncation& t);
Beta posterior_binomial(const Beta& rho, std::int64_t n, std::int64_t k);
///@}
/// NegativeBinomial(r, rho) (failures before the r-th success), rho ~ Beta(a, b): the beta-negative-binomial
/// \f$ P(k) = \frac{\Gamma(r+k)}{k!\,\Gamma(r)} \frac{B(a + r, b + k)}{B(a, b)} \f$ on 0 .. y, y the first value past
/// the mode where a bound on the tail P(K > y) is within t.tolerance (tally/gpu/count_laws.hpp: the tail is of order
/// \f$ k^{-(a+1)} \f$, so a small a needs a long table; overflow_error, found before any table is made, when it
/// exceeds t.max_size); the bound is the Pmf's error bound. Posterior Beta(a + r, b + k).
///@{
Pmf marginal_negative_binomial(const Beta& rho, double r, const Truncation& t);
Beta posterior_negative_binomial(const Beta& rho, double r, std::int64_t k);
///@}
/// Poisson(lambda), lambda ~ Gamma(k, theta): NegativeBinomial(k, theta / (theta + 1)); posterior Gamma(k + x, theta + 1).
///@{
Pmf marginal_poisson(const Gamma& lambda, const Truncation& t);
Gamma posterior_poisson(const Gamma& lambda, std::int64_t x);
///@}
/// Categorical(pi), pi ~ Dirichlet(alpha): Categorical(alpha / sum(alpha)); posterior alpha + e_x.
///@{
Pmf marginal_categorical(const Dirichlet& pi);
Dirichlet posterior_categorical(const Dirichlet& pi, std::int64_t x);
///@}

}  // namespace tally::runtime
