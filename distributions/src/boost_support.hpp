// Private: the Boost.Math policy tally uses, and the cdf-checked discrete quantile shared by the families.
#pragma once

#include <boost/math/policies/policy.hpp>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>

#include "tally/error.hpp"

namespace tally::detail {

/// Boost.Math throws on domain and overflow errors (we check domains first), returns the real-valued quantile of
/// discrete laws (we round it ourselves against the cdf), and does not promote double to long double.
using boost_policy = boost::math::policies::policy<
    boost::math::policies::discrete_quantile<boost::math::policies::real>,
    boost::math::policies::promote_double<false>>;

/// Runs f, a Boost.Math evaluation (a cdf, a quantile) whose parameters tally has already checked, and turns any
/// exception Boost throws ("Unable to bracket root", an ibeta_derivative overflow, "series evaluation exceeded
/// 1000000 iterations", ...) into tally::overflow_error naming `who` and the parameters, so that no foreign
/// exception type leaves a public function. tally's own errors (from a cdf f calls) pass through unchanged.
template <class F, class... Parts>
auto boost_guard(F&& f, const char* who, const Parts&... parameters) -> decltype(f()) {
  try {
    return f();
  } catch (const tally::domain_error&) {
    throw;
  } catch (const tally::shape_error&) {
    throw;
  } catch (const tally::overflow_error&) {
    throw;
  } catch (const std::exception& e) {
    fail<overflow_error>(who, ": Boost.Math cannot evaluate it at ", parameters...,
                         " (the parameters are beyond the range of double arithmetic there: ", e.what(), ")");
  }
}

/// The smallest k in [lo, hi] with cdf(k) >= prob, starting from a real-valued guess (Boost's quantile) and
/// searching against the cdf so that rounding in the guess never gives an off-by-one answer: galloping away from
/// the guess (steps 1, 2, 4, ...) until the answer is bracketed, then bisecting, so that a poor guess (Boost's
/// root finding at extreme parameters, or k past 2^53 where the cdf moves in steps) costs O(log distance) cdf
/// evaluations, never a walk over the distance. Returns hi when cdf(hi) < prob (callers check).
template <class Cdf>
std::int64_t discrete_quantile(double prob, double guess, std::int64_t lo, std::int64_t hi, Cdf cdf) {
  std::int64_t k = lo;
  if (std::isfinite(guess)) {
    const double g = std::floor(guess);
    k = g <= static_cast<double>(lo) ? lo : g >= static_cast<double>(hi) ? hi : static_cast<std::int64_t>(g);
  } else if (guess > 0) {
    k = hi;
  }
  std::int64_t bad, good;  // cdf(bad) < prob <= cdf(good), bad < good; the answer is in (bad, good]
  if (cdf(k) >= prob) {
    good = k;
    for (std::int64_t step = 1;; step = step > (std::int64_t{1} << 61) ? step : 2 * step) {
      if (good == lo) return lo;
      const std::int64_t j = good - lo <= step ? lo : good - step;
      if (cdf(j) >= prob) {
        good = j;
      } else {
        bad = j;
        break;
      }
    }
  } else {
    bad = k;
    for (std::int64_t step = 1;; step = step > (std::int64_t{1} << 61) ? step : 2 * step) {
      if (bad == hi) return hi;
      const std::int64_t j = hi - bad <= step ? hi : bad + step;
      if (cdf(j) >= prob) {
        good = j;
        break;
      }
      bad = j;
    }
  }
  while (good - bad > 1) {
    const std::int64_t mid = bad + (good - bad) / 2;
    if (cdf(mid) >= prob)
      good = mid;
    else
      bad = mid;
  }
  return good;
}

}  // namespace tally::detail
