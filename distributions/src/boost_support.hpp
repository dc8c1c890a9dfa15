// Private: the Boost.Math policy tally uses, and the cdf-checked discrete quantile shared by the families.
#pragma once

#include <boost/math/policies/policy.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tally::detail {

/// Boost.Math throws on domain and overflow errors (we check domains first), returns the real-valued quantile of
/// discrete laws (we round it ourselves against the cdf), and does not promote double to long double.
using boost_policy = boost::math::policies::policy<
    boost::math::policies::discrete_quantile<boost::math::policies::real>,
    boost::math::policies::promote_double<false>>;

/// The smallest k in [lo, hi] with cdf(k) >= prob, starting from a real-valued guess (Boost's quantile) and
/// stepping against the cdf so that rounding in the guess never gives an off-by-one answer.
template <class Cdf>
std::int64_t discrete_quantile(double prob, double guess, std::int64_t lo, std::int64_t hi, Cdf cdf) {
  std::int64_t k = lo;
  if (std::isfinite(guess)) {
    const double g = std::floor(guess);
    k = g <= static_cast<double>(lo) ? lo : g >= static_cast<double>(hi) ? hi : static_cast<std::int64_t>(g);
  } else if (guess > 0) {
    k = hi;
  }
  while (k > lo && cdf(k - 1) >= prob) --k;
  while (k < hi && cdf(k) < prob) ++k;
  return k;
}

}  // namespace tally::detail
