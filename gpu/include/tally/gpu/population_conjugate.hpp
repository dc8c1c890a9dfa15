// The population operations of counts whose parent is a Beta or Gamma variable: closed-form log masses (the parent
// known or integrated out), conjugate updates and Gamma draws, one particle per element, on the host or the device.
#pragma once

#include <cstdint>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

// Every function below runs where its operands are (Backend::cpu: loops on one core; Backend::cuda: one elementwise
// kernel on the default stream, asynchronous) and throws tally::shape_error when the columns have different sizes or
// places. Scalar parameters are checked everywhere (tally::domain_error); per-particle parameters are checked on the
// host only (tally::domain_error naming the first bad particle): the device form reads nothing back, and a particle
// with bad parameters gets NaN instead (its log-likelihood or its draw).
//
// The log masses follow Loader's saddle-point form ("Fast and accurate computation of binomial probabilities",
// 2000), as tally's distributions do (there in extended precision, here in double): log-probabilities with an
// absolute error of a few ulps of their size, far tails included, where lgamma differences would lose
// eps * k log k. Each adds to log_likelihood_i; -inf where k_i is off the support.

/// Binomial(n_i, rho), rho ~ Beta(a_i, b_i) integrated out (beta-binomial; n_i >= 0, a_i, b_i > 0):
/// \f$\log P(k) = \log\binom{n}{k} + \log B(k + a, n - k + b) - \log B(a, b)\f$, -inf off 0 .. n. Computed as
/// \f$\log NB(k; a, p) + \log NB(n - k; b, p) - \log NB(n; a + b, p)\f$ with \f$p = (a + b) / (n + a + b)\f$ (the
/// powers of p and 1 - p cancel; this p puts the last term at its mean), as log_pdf(BetaBinomial) does.
void add_beta_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood);
/// X_i given an observed v_i ~ Binomial(X_i, rho), rho ~ Beta(a_i, b_i) integrated out: each law of x reweighted
/// by the beta-binomial likelihood of its values,
/// \f$ w'_{i,k} \propto w_{i,k} \binom{k}{v_i} B(a_i + v_i, b_i + k - v_i) / B(a_i, b_i) \f$ (zero for k < v_i,
/// a negative k included), normalized (max 1 again), and
/// \f$ \log L_i = \mathrm{log\_scale}_i + \log \sum_k w_{i,k} \ell_i(k) \f$ added to log_likelihood, the terms
/// formed in logarithms (add_beta_binomial_log_mass's formula, once per entry). An impossible observation adds -inf
/// and leaves the law as it was (the particle's weight says it). x, v, a, b and log_likelihood hold one entry per
/// particle, in one place (shape_error otherwise).
Laws condition_on_beta_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& a,
                                const Column<double>& b, Column<double>& log_likelihood);
/// Binomial(n_i, q_i) with a known q_i in [0, 1] (n_i >= 0): \f$\log\binom{n}{k} + k\log q + (n-k)\log(1-q)\f$,
/// -inf off 0 .. n; q = 0 and q = 1 are the point masses at 0 and n.
void add_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& q, const Column<std::int64_t>& k,
                           Column<double>& log_likelihood);
/// The same with one q for every particle (an observed thinning of realized counts), without a column of it.
void add_binomial_log_mass(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                           Column<double>& log_likelihood);
/// An observed thinning of realized counts in one pass (a bootstrap filter's observation): log_likelihood_i =
/// log Binomial(k_i; n_i, q), written (its contents are not read), and the same added to log_weight_i. The checks
/// and the values of add_binomial_log_mass into a column of zeros, then add_to(log_weight, log_likelihood).
void observe_binomial(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                      Column<double>& log_likelihood, Column<double>& log_weight);

/// NegativeBinomial(r, rho): the failures before the r-th success (r > 0 real), with a known rho = q_i in [0, 1]:
/// \f$\log\frac{\Gamma(k + r)}{k!\,\Gamma(r)} + r \log q + k \log(1 - q)\f$, -inf for k < 0; q = 1 is the point
/// mass at 0, and q = 0 (no success ever: every count has probability 0, where the distributions throw) gives -inf.
void add_negative_binomial_log_mass(double r, const Column<double>& q, const Column<std::int64_t>& k,
                                    Column<double>& log_likelihood);
/// NegativeBinomial(r, rho), rho ~ Beta(a_i, b_i) integrated out (the beta-negative-binomial):
/// \f$\log P(k) = \log\frac{\Gamma(r+k)}{k!\,\Gamma(r)} + \log B(a + r, b + k) - \log B(a, b)\f$, -inf for k < 0,
/// every log-gamma in Stirling's form with the large terms paired before they are formed (conjugate_math.hpp), so
/// that large k, a or b cost no digits (where lgamma differences lose about eps k log k).
void add_beta_negative_binomial_log_mass(double r, const Column<double>& a, const Column<double>& b,
                                         const Column<std::int64_t>& k, Column<double>& log_likelihood);

/// Poisson(s lambda_i) with a known lambda_i >= 0 (s >= 0): \f$k \log(s\lambda) - s\lambda - \log k!\f$, -inf for
/// k < 0; a rate s lambda = 0 is the point mass at 0.
void add_poisson_log_mass(double s, const Column<double>& lambda, const Column<std::int64_t>& k,
                          Column<double>& log_likelihood);
/// Poisson(s lambda), lambda ~ Gamma(shape a_i, rate b_i) integrated out (s > 0): s lambda ~ Gamma(a, b / s), and
/// the count is NegativeBinomial(a, p) with \f$p = b / (b + s)\f$, \f$1 - p = s / (b + s)\f$ (each to rounding).
void add_gamma_poisson_log_mass(double s, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood);

/// The conjugate updates, in place; nothing where k_i < 0 (an impossible count, whose particle has weight 0).
/// NegativeBinomial(r, rho) with rho ~ Beta(a, b): Beta(a + r, b + k) (r > 0).
void negative_binomial_update(Column<double>& a, Column<double>& b, double r, const Column<std::int64_t>& k);
/// Poisson(s lambda) with lambda ~ Gamma(shape a, rate b): Gamma(a + k, b + s) (s > 0).
void gamma_poisson_update(Column<double>& a, Column<double>& b, double s, const Column<std::int64_t>& k);

/// One Gamma(shape a_i, rate b_i) draw per particle (a_i, b_i > 0): X / b_i with X ~ Gamma(a_i, 1) by Marsaglia and
/// Tsang on the uniforms philox_uniform(seed, i, counter * 256 + j), j < 256: exactly gamma_variate(a_i, seed, i,
/// counter) / b_i on the host, and the same on the device but for the last bits of the device's log and pow.
/// first_stream: as for sample (population_ops.hpp), particle i draws on stream first_stream + i.
Column<double> sample_gamma(const Column<double>& a, const Column<double>& b, std::uint64_t seed,
                            std::uint64_t counter, std::uint64_t first_stream = 0);

}  // namespace tally::gpu
