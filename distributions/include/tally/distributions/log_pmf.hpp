// Log-probabilities of the Binomial and Poisson laws accurate to a few ulps, by Loader's saddle-point method.
#pragma once

#include <cstdint>

namespace tally {

/// Stirling's error \f$\delta(n) = \log n! - \log(\sqrt{2\pi n}\,(n/e)^n)\f$ for integer n >= 1: a table
/// below 16 (computed in extended precision), the asymptotic series \f$1/(12n) - 1/(360n^3) + \dots\f$ above.
double stirling_error(std::int64_t n);

/// Loader's deviance term \f$ D(x, \lambda) = x \log(x/\lambda) + \lambda - x \ge 0\f$, computed without
/// cancellation when x is close to \f$\lambda\f$.
double deviance(double x, double lambda);
/// The same in extended precision, arguments and result (the Binomial needs n p and n (1 - p) beyond double
/// precision; the real-argument log-pmfs of NegativeBinomial, Hypergeometric and BetaBinomial keep long double).
long double deviance_extended(long double x, long double lambda);

/// \f$\log \binom{n}{k} p^k (1-p)^{n-k}\f$ (Loader 2000): absolute error a few times 1e-16 even for n = 1e9 and
/// far tails (it never forms the pmf itself, so values like -1e6 are fine). -inf outside 0 <= k <= n.
/// Contract: n >= 0, p in [0, 1] (not checked here; the families check).
double log_binomial_pmf(std::int64_t n, std::int64_t k, double p);

/// \f$\log e^{-\lambda}\lambda^k/k!\f$, same method and accuracy; -inf for k < 0. Contract: lambda >= 0 finite.
double log_poisson_pmf(std::int64_t k, double lambda);

}  // namespace tally
