// Exact algebra of independent integer random variables: sums (convolution), negation, differences, affine maps.
#pragma once

#include <cstdint>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sparse_pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// Law of X + Y for independent X ~ x, Y ~ y: the convolution
/// \f[ \mu_{X+Y}(k) = \sum_j \mu_X(j)\, \mu_Y(k - j), \qquad lo_X + lo_Y \le k \le hi_X + hi_Y, \f]
/// computed directly (never by FFT), on the GPU where that pays (tally::gpu::convolve). Log scales add.
/// Error bound: \f$e_X + e_Y + e_X e_Y\f$ (convolution with a measure of mass M scales L1 distances by M).
/// Throws overflow_error when lo_X + lo_Y or hi_X + hi_Y leaves int64, or, at once, when the convolution would run
/// on the CPU and take more than 2^36 multiply-adds (tally::gpu::cpu_max_work: two operands of 2^18 entries).
Pmf sum(const Pmf& x, const Pmf& y);

/// Law of -X: the weights reversed over [-hi, -lo]. Throws overflow_error when -lo does not fit (lo = INT64_MIN).
Pmf negate(const Pmf& x);

/// Law of X - Y = X + (-Y) for independent X, Y.
Pmf difference(const Pmf& x, const Pmf& y);

/// Law of X + c.
Pmf shift(const Pmf& x, std::int64_t c);

/// Law of a X + c: support {a k + c}, which has gaps when |a| > 1 (hence the sparse form); a = 0 gives the point
/// mass at c. Throws overflow_error when some a k + c leaves int64.
///@{
SparsePmf affine(const Pmf& x, std::int64_t a, std::int64_t c);
SparsePmf affine(const SparsePmf& x, std::int64_t a, std::int64_t c);
///@}

/// Law of X + Y for independent X, Y with sparse supports: every pair of points, masses multiplied, equal sums
/// merged; O(mn log mn). Error bound as for the dense sum. overflow_error, at once, when the m n pairs are more
/// than t.max_size (the result could have that many points; Truncation's default when t is not given).
///@{
SparsePmf sum(const SparsePmf& x, const SparsePmf& y);
SparsePmf sum(const SparsePmf& x, const SparsePmf& y, const Truncation& t);
///@}

}  // namespace tally
