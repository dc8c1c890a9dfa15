// UniformInt(lo, hi): every integer of [lo, hi] equally likely.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = \frac{1}{hi - lo + 1}, \qquad lo \le k \le hi, \f]
/// with mean \f$(lo + hi)/2\f$ and variance \f$((hi - lo + 1)^2 - 1)/12\f$.
/// Domain: lo <= hi (domain_error otherwise); the count hi - lo + 1 must fit in int64 (overflow_error otherwise).
class UniformInt {
 public:
  /// Every integer of [lo, hi] equally likely (domain_error for lo > hi).
  UniformInt(std::int64_t lo, std::int64_t hi);
  /// lo.
  std::int64_t lo() const { return lo_; }
  /// hi.
  std::int64_t hi() const { return hi_; }

 private:
  std::int64_t lo_;
  std::int64_t hi_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<UniformInt> = true;

/// 1 / (hi - lo + 1) on [lo, hi], 0 elsewhere.
double pdf(const UniformInt& d, std::int64_t k);
/// -log(hi - lo + 1) on [lo, hi], -inf elsewhere.
double log_pdf(const UniformInt& d, std::int64_t k);
/// P(X <= k) = (k - lo + 1) / (hi - lo + 1) on [lo, hi] (0 below, 1 above).
double cdf(const UniformInt& d, std::int64_t k);
/// The smallest k in [lo, hi] with cdf(d, k) >= prob.
std::int64_t quantile(const UniformInt& d, double prob);
/// [lo, hi].
std::pair<std::int64_t, std::int64_t> support(const UniformInt& d);
/// (lo + hi) / 2.
double mean(const UniformInt& d);
/// ((hi - lo + 1)^2 - 1) / 12.
double variance(const UniformInt& d);
/// The flat pmf on [lo, hi]; overflow_error when hi - lo + 1 exceeds t.max_size.
Pmf to_pmf(const UniformInt& d, const Truncation& t = {});

}  // namespace tally
