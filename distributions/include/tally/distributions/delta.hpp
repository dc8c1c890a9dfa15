// Delta(v): the point mass at the integer v (a constant as a random variable).
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = v) = 1. \f]
class Delta {
 public:
  /// The point mass at v (any integer).
  explicit Delta(std::int64_t value) : value_(value) {}
  /// v.
  std::int64_t value() const { return value_; }

 private:
  std::int64_t value_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Delta> = true;

/// 1 at v, 0 elsewhere.
double pdf(const Delta& d, std::int64_t k);
/// 0 at v, -inf elsewhere.
double log_pdf(const Delta& d, std::int64_t k);
/// P(X <= k): 0 below v, 1 from v on.
double cdf(const Delta& d, std::int64_t k);
/// v for every prob in [0, 1].
std::int64_t quantile(const Delta& d, double prob);
/// [v, v].
std::pair<std::int64_t, std::int64_t> support(const Delta& d);
/// v.
double mean(const Delta& d);
/// 0.
double variance(const Delta& d);
/// Pmf::point(v).
Pmf to_pmf(const Delta& d, const Truncation& t = {});

}  // namespace tally
