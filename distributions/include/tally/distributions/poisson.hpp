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
  explicit Poisson(double rate);
  double rate() const { return rate_; }

 private:
  double rate_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Poisson> = true;

double pdf(const Poisson& d, std::int64_t k);
double log_pdf(const Poisson& d, std::int64_t k);
double cdf(const Poisson& d, std::int64_t k);
std::int64_t quantile(const Poisson& d, double prob);
/// [0, INT64_MAX]: the support is unbounded above.
std::pair<std::int64_t, std::int64_t> support(const Poisson& d);
double mean(const Poisson& d);
double variance(const Poisson& d);
/// The pmf on [lo, hi] with both tails (each at most tolerance/2) dropped; the dropped mass is the error bound.
Pmf to_pmf(const Poisson& d, const Truncation& t = {});

}  // namespace tally
