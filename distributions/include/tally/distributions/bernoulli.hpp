// Bernoulli(p): a single trial that is a success (1) with probability p and a failure (0) otherwise.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = 1) = p, \qquad P(X = 0) = 1 - p. \f]
/// Domain: 0 <= p <= 1 (domain_error otherwise); p = 0 and p = 1 are point masses.
class Bernoulli {
 public:
  /// p, the probability of 1 (domain_error outside [0, 1]).
  explicit Bernoulli(double success);
  /// p.
  double success() const { return success_; }

 private:
  double success_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Bernoulli> = true;

/// P(X = k): p at 1, 1 - p at 0, 0 elsewhere.
double pdf(const Bernoulli& d, std::int64_t k);
/// log P(X = k) (log1p(-p) at 0); -inf outside {0, 1}.
double log_pdf(const Bernoulli& d, std::int64_t k);
/// P(X <= k): 0 below 0, 1 - p at 0, 1 from 1 on.
double cdf(const Bernoulli& d, std::int64_t k);
/// The smallest k in {0, 1} with cdf(d, k) >= prob.
std::int64_t quantile(const Bernoulli& d, double prob);
/// [0, 1].
std::pair<std::int64_t, std::int64_t> support(const Bernoulli& d);
/// p.
double mean(const Bernoulli& d);
/// p (1 - p).
double variance(const Bernoulli& d);
/// The pmf on {0, 1} (a single point when p is 0 or 1); exact, error bound 0.
Pmf to_pmf(const Bernoulli& d, const Truncation& t = {});

}  // namespace tally
