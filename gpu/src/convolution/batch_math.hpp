// Private: per-pmf steps shared by the CPU reference and the CUDA kernels of the batched operations.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__
#else
#define TALLY_HD
#endif

namespace tally::gpu::detail {

/// Index range [first, last] of x's entries a with b = c - a in [0, n) (c = z - lo_x - lo_y); empty when
/// first > last. From 0 <= c - a <= n - 1 and 0 <= a <= m - 1: a in [max(0, c - n + 1), min(m - 1, c)].
struct DiagonalRange {
  std::int64_t first, last;
};
TALLY_HD inline DiagonalRange diagonal(std::int64_t c, std::int64_t m, std::int64_t n) {
  const std::int64_t first = c - n + 1 > 0 ? c - n + 1 : 0, last = c < m - 1 ? c : m - 1;
  return {first, last};
}

/// The binary exponent e of a product x y > 0 written as (mx my) 2^e with frexp mantissas mx, my in [1/2, 1).
TALLY_HD inline int product_exponent(double x, double y) {
  int ex = 0, ey = 0;
  frexp(x, &ex);
  frexp(y, &ey);
  return ex + ey;
}

/// x y 2^-shift computed without underflow of the intermediate: (mx my) 2^(ex + ey - shift).
TALLY_HD inline double scaled_product(double x, double y, int shift) {
  int ex = 0, ey = 0;
  const double mx = frexp(x, &ex), my = frexp(y, &ey);
  return ldexp(mx * my, ex + ey - shift);
}

/// The smallest int, meaning "no non-zero product yet".
constexpr int no_exponent = -2147483647 - 1;

/// log P and the posterior's log_scale from the sum S and maximum W of the scaled products and their shift E:
/// P = S 2^E exp(ls_x + ls_y); the posterior's weights are w / W, its log_scale log W - log S.
struct ConditioningResult {
  double log_likelihood, posterior_log_scale;
};
TALLY_HD inline ConditioningResult conditioning_result(double sum, double max, int shift, double ls_x, double ls_y) {
  if (!(sum > 0.0)) {
    return {-HUGE_VAL, -HUGE_VAL};  // -inf (HUGE_VAL, unlike numeric_limits, is usable in device code)
  }
  return {log(sum) + shift * 0.69314718055994530942 + ls_x + ls_y, log(max) - log(sum)};
}

}  // namespace tally::gpu::detail
