// Private: the regularized incomplete beta function in 113-bit arithmetic, for the cdfs of large binomial counts.
#pragma once

#include <boost/math/special_functions/beta.hpp>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cstdint>

#include "boost_support.hpp"

namespace tally::detail {

/// Counts above this use quad_ibeta: Boost's ibeta in double arithmetic keeps about 1e-14 relative accuracy below
/// it, and loses about a x 1e-20 above (measured against 40-digit ibeta: 1e-13 at 2^20, 3e-7 at 2^45, 1e-4 at 2^53,
/// and a wrong answer past 2^53, where a and b are rounded to double).
inline constexpr std::int64_t quad_beta_threshold = std::int64_t{1} << 16;

/// Counts above this are refused (overflow_error): near the median of such a law the 113-bit evaluation takes
/// seconds (0.15 s at 2^40, 0.4 s at 2^45, 2.6 s at 2^53, 27 s near 2^63; a quantile asks several), and double
/// arithmetic is off by 1e-7 to 25 % there.
inline constexpr std::int64_t quad_beta_limit = std::int64_t{1} << 40;

/// \f$I_x(a, b)\f$, or \f$1 - I_x(a, b)\f$ when `complement`, for a, b > 0 exact (integers up to 2^63, or doubles)
/// and x in [0, 1] a double, evaluated by Boost.Math in cpp_bin_float_quad (113 bits, header-only): about 1e-27
/// relative accuracy up to a + b = 2^63 (the same values as libquadmath's __float128), rounded once to double.
/// Costs about 0.4 ms in a tail, and near the median of a law of n trials about 25 ms at n = 2^33, 0.4 s at 2^45.
template <class A, class B>
double quad_ibeta(A a, B b, double x, bool complement) {
  using Quad = boost::multiprecision::cpp_bin_float_quad;
  const Quad qa(a), qb(b), qx(x);
  return static_cast<double>(complement ? boost::math::ibetac(qa, qb, qx) : boost::math::ibeta(qa, qb, qx));
}

}  // namespace tally::detail
