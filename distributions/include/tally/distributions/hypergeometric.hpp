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
  Hypergeometric(std::int64_t population, std::int64_t successes, std::int64_t draws);
  std::int64_t population() const { return population_; }
  std::int64_t successes() const { return successes_; }
  std::int64_t draws() const { return draws_; }

 private:
  std::int64_t population_;
  std::int64_t successes_;
  std::int64_t draws_;
};

/// Its law depends on its parameters alone (value_family.hpp).
template <>
inline constexpr bool value_family<Hypergeometric> = true;

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
double mean(const Hypergeometric& d);
double variance(const Hypergeometric& d);
/// The pmf on its support, less entries below flush_fraction of the mode (their mass is in the error bound).
Pmf to_pmf(const Hypergeometric& d, const Truncation& t = {});

}  // namespace tally
