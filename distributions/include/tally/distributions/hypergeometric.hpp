// Hypergeometric(N, K, n): the number of successes in n draws without replacement from N items, K of them successes.
#pragma once

#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"

namespace tally {

/// \f[ P(X = k) = \binom{K}{k} \binom{N-K}{n-k} \Big/ \binom{N}{n}, \qquad \max(0, n+K-N) \le k \le \min(n, K), \f]
/// with mean \f$nK/N\f$ and variance \f$n \frac{K}{N} \frac{N-K}{N} \frac{N-n}{N-1}\f$.
/// Domain: 0 <= K <= N and 0 <= n <= N (domain_error otherwise).
class Hypergeometric {
 public:
  /// The successes among n = draws items drawn without replacement from N = population items, K = successes of
  /// which are successes (domain_error outside the domain above).
  Hypergeometric(std::int64_t population, std::int64_t successes, std::int64_t draws);
  /// N.
  std::int64_t population() const { return population_; }
  /// K.
  std::int64_t successes() const { return successes_; }
  /// n.
  std::int64_t draws() const { return draws_; }

 private:
  std::int64_t population_;
  std::int64_t successes_;
  std::int64_t draws_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Hypergeometric> = true;

/// P(X = k), the exponential of log_pdf in extended precision (about 1e-16 relative while it is a normal double); 0
/// outside the support.
double pdf(const Hypergeometric& d, std::int64_t k);
/// Three Loader terms (in long double): \f$\log \mathrm{Bin}(k; K, p) + \log \mathrm{Bin}(n-k; N-K, p) - \log \mathrm{Bin}(n; N, p)\f$
/// with p = n/N (the powers of p cancel for any p): a few ulps of the result for any N, far tails included.
double log_pdf(const Hypergeometric& d, std::int64_t k);
/// Sums the tail away from the mode (terms by their ratio in extended precision): cost about the tail's length.
double cdf(const Hypergeometric& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob (bisection on cdf).
std::int64_t quantile(const Hypergeometric& d, double prob);
/// [max(0, n+K-N), min(n, K)].
std::pair<std::int64_t, std::int64_t> support(const Hypergeometric& d);
/// n K / N (0 when N = 0).
double mean(const Hypergeometric& d);
/// \f$n \frac{K}{N} \frac{N-K}{N} \frac{N-n}{N-1}\f$ (0 when N <= 1).
double variance(const Hypergeometric& d);
/// The pmf on its support, less entries below flush_fraction of the mode (their mass is in the error bound).
Pmf to_pmf(const Hypergeometric& d, const Truncation& t = {});

}  // namespace tally
