// Poisson(rate): counts of events that occur independently at a constant rate.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = e^{-\lambda} \lambda^k / k!, \qquad k \ge 0. \f]
/// Domain: rate \f$\lambda\f$ finite and >= 0 (rate 0 is the point mass at 0).
class Poisson {
 public:
  /// The rate \f$\lambda\f$ (domain_error unless finite and >= 0).
  explicit Poisson(double rate);
  /// \f$\lambda\f$.
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Poisson> = true;

/// P(X = k), the exponential of log_pdf; 0 for k < 0.
double pdf(const Poisson& d, std::int64_t k);
/// log P(X = k) by Loader's saddle-point form, accurate far beyond the range of pdf; -inf for k < 0.
double log_pdf(const Poisson& d, std::int64_t k);
/// P(X <= k) by Boost.Math (0 for k < 0).
double cdf(const Poisson& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob; prob = 1 is a domain_error unless the rate is 0 (the support is unbounded).
std::int64_t quantile(const Poisson& d, double prob);
/// [0, INT64_MAX]: the support is unbounded above; rate 0, the point mass at 0, has support [0, 0].
std::pair<std::int64_t, std::int64_t> support(const Poisson& d);
/// \f$\lambda\f$.
double mean(const Poisson& d);
/// \f$\lambda\f$.
double variance(const Poisson& d);
/// The pmf on [lo, hi] with both tails (each at most tolerance/2) dropped; the dropped mass is the error bound.
Pmf to_pmf(const Poisson& d, const Truncation& t = {});

}  // namespace tally
