// Binomial(n, p): the number of successes in n independent trials, each a success with probability p.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = \binom{n}{k} p^k (1-p)^{n-k}, \qquad 0 \le k \le n. \f]
/// Domain: n >= 0, 0 <= p <= 1 (domain_error otherwise).
class Binomial {
 public:
  /// n trials, each a success with probability p (domain_error outside the domain above).
  Binomial(std::int64_t trials, double success);
  /// n.
  std::int64_t trials() const { return trials_; }
  /// p.
  double success() const { return success_; }

 private:
  std::int64_t trials_;
  double success_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Binomial> = true;

/// P(X = k), the exponential of log_pdf; 0 outside [0, n].
double pdf(const Binomial& d, std::int64_t k);
/// Loader's saddle-point form: accurate far beyond the range of pdf (log_pdf(Binomial(4000, .5), 0) = 4000 log .5).
double log_pdf(const Binomial& d, std::int64_t k);
/// \f$P(X \le k) = 1 - I_p(k + 1, n - k)\f$, within about 1e-13 relative of the exact value: Boost.Math's incomplete
/// beta in double arithmetic for n <= 2^16, in 113-bit arithmetic up to n = 2^40 (double loses n x 1e-20 there);
/// overflow_error for n > 2^40 (unless k < 0 or k >= n), where it is neither accurate in double nor fast in 113 bits.
double cdf(const Binomial& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob.
std::int64_t quantile(const Binomial& d, double prob);
/// [0, n].
std::pair<std::int64_t, std::int64_t> support(const Binomial& d);
/// n p.
double mean(const Binomial& d);
/// n p (1 - p).
double variance(const Binomial& d);
/// The pmf on [0, n], less entries below flush_fraction of the mode (their mass is in the error bound).
Pmf to_pmf(const Binomial& d, const Truncation& t = {});

}  // namespace tally
