// Geometric(p): the number of failures before the first success in independent trials of success probability p.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = p \, (1-p)^k, \qquad k \ge 0, \f]
/// with mean \f$(1-p)/p\f$ and variance \f$(1-p)/p^2\f$.
/// Domain: 0 < p <= 1 (p = 0 is no distribution: domain_error); p = 1 is the point mass at 0.
class Geometric {
 public:
  /// p, the success probability of each trial (domain_error outside (0, 1]).
  explicit Geometric(double success);
  /// p.
  double success() const { return success_; }

 private:
  double success_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Geometric> = true;

/// \f$p \exp(k \log(1-p))\f$ in extended precision: relative error about 1e-16 while the value is a normal double.
double pdf(const Geometric& d, std::int64_t k);
/// \f$\log p + k \log(1-p)\f$ with log1p: a few ulps of the result for every k.
double log_pdf(const Geometric& d, std::int64_t k);
/// \f$P(X \le k) = 1 - (1-p)^{k+1}\f$ by Boost.Math (0 for k < 0).
double cdf(const Geometric& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob; prob = 1 is a domain_error unless p = 1 (the support is unbounded).
std::int64_t quantile(const Geometric& d, double prob);
/// [0, INT64_MAX] ([0, 0] when p = 1).
std::pair<std::int64_t, std::int64_t> support(const Geometric& d);
/// (1 - p) / p.
double mean(const Geometric& d);
/// (1 - p) / p^2.
double variance(const Geometric& d);
/// The pmf on [lo, hi] with both tails (each at most tolerance/2) dropped; the dropped mass, relative to the
/// mass kept, is the error bound.
Pmf to_pmf(const Geometric& d, const Truncation& t = {});

}  // namespace tally
