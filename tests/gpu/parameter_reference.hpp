// The 50-digit log masses of Binomial and BetaBinomial laws that the parameter-law tests compare against.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "reference.hpp"

namespace tally::test {

/// 50-digit log masses of BetaBinomial(n, a, b) at k = 0 .. n (lgamma(k + a) by its recurrence).
inline std::vector<big> beta_binomial_reference(std::int64_t n, double a, double b) {
  using boost::multiprecision::lgamma;
  using boost::multiprecision::log;
  const big ab(a), bb(b);
  std::vector<big> la(static_cast<std::size_t>(n) + 1), lb(la.size()), f(la.size());
  la[0] = lgamma(ab), lb[0] = lgamma(bb), f[0] = 0;
  for (std::int64_t k = 0; k < n; ++k) {
    const auto j = static_cast<std::size_t>(k);
    la[j + 1] = la[j] + log(ab + k);
    lb[j + 1] = lb[j] + log(bb + k);
    f[j + 1] = f[j] + log(big(k + 1));
  }
  const big c = f.back() - lgamma(ab + bb + n) + lgamma(ab + bb) - la[0] - lb[0];
  std::vector<big> out(la.size());
  for (std::int64_t k = 0; k <= n; ++k) {
    const auto j = static_cast<std::size_t>(k), r = static_cast<std::size_t>(n - k);
    out[j] = c - f[j] - f[r] + la[j] + lb[r];
  }
  return out;
}

/// 50-digit log masses of Binomial(n, q) at k = 0 .. n (-inf off a point mass's value).
inline std::vector<big> binomial_reference(std::int64_t n, double q) {
  using boost::multiprecision::log;
  std::vector<big> out(static_cast<std::size_t>(n) + 1);
  const big neg_inf = -std::numeric_limits<big>::infinity();
  if (q <= 0.0 || q >= 1.0) {
    for (std::int64_t k = 0; k <= n; ++k) out[static_cast<std::size_t>(k)] = (q <= 0.0 ? k == 0 : k == n) ? big(0) : neg_inf;
    return out;
  }
  const big lq = log(big(q)), lr = log(1 - big(q));
  std::vector<big> lf(out.size());
  lf[0] = 0;
  for (std::int64_t k = 1; k <= n; ++k) lf[static_cast<std::size_t>(k)] = lf[static_cast<std::size_t>(k - 1)] + log(big(k));
  for (std::int64_t k = 0; k <= n; ++k) {
    const auto j = static_cast<std::size_t>(k);
    out[j] = lf.back() - lf[j] - lf[static_cast<std::size_t>(n - k)] + big(k) * lq + big(n - k) * lr;
  }
  return out;
}

}  // namespace tally::test
