// Private helpers shared by the families: Loader log-pmfs with real arguments, tail sums, bisection quantiles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../tabulate.hpp"
#include "tally/error.hpp"

namespace tally::detail {

/// \f$\log \frac{\Gamma(x + m + 1)}{\Gamma(x + 1)\,\Gamma(m + 1)} p^x q^m\f$ for real x, m >= 0 and p, q >= 0 with
/// p + q = 1 (to long double rounding; p and q are passed separately so that neither loses relative precision):
/// Loader's saddle-point form of the binomial pmf, extended to real arguments and carried out in long double, so
/// that the absolute error is about 1e-19 times the size of the result (1e-16 relative after exp, for pdfs).
/// Defined in negative_binomial.cpp.
long double log_binomial_term(long double x, long double m, long double p, long double q);

/// \f$\log \frac{\Gamma(k + r)}{k!\,\Gamma(r)} p^r q^k = \log\frac{r}{k + r} + \mathtt{log\_binomial\_term}(r, k, p, q)\f$
/// for integer k (-inf for k < 0) and real r > 0: the negative binomial pmf, same method and accuracy.
long double log_negative_binomial_term(std::int64_t k, long double r, long double p, long double q);

/// For an unbounded family truncated at a tolerance: throws overflow_error when the upper truncation point `top`
/// (a real-valued quantile) is past 2^62, where no dense pmf and no int64 stepping can reach it.
inline void check_tail_reach(double top, const char* who) {
  if (!(top < 0x1p62))
    fail<overflow_error>(who, ": the kept range reaches k = ", top, ", beyond what a dense pmf over int64 can hold");
}

/// \f$\sum_j pmf(j)\f$ for j from `from` to `to` (either direction), each term from the one before by
/// pmf(j+1) = pmf(j) ratio(j) in long double, re-anchored on exp(log_pmf(j)) every anchor_every steps. With
/// `may_stop` (the pmf, once it decreases in this direction, keeps decreasing), stops as soon as the remaining
/// terms, each at most the current one, cannot add 1e-20 of the sum. A sum that needs more than max_sum_terms terms (a cdf of
/// a law whose spread is ~1e8 or more: BetaBinomial or Hypergeometric with a huge n) is an overflow_error naming
/// `who` and the range, instead of an apparent hang. That error comes at once, before any term is summed, where it
/// is certain (fuzz_algebra's long runs spent most of their time summing 2^23 terms of laws with n near 2^63 before
/// throwing it): without `may_stop`, when the range holds more than max_sum_terms terms; with it, when moreover
/// min(pmf(from), pmf(last)) times the terms left at `last` (the max_sum_terms-th term) exceeds 2e-20 S: the terms
/// up to `last` are at least the smaller of the two (the pmf rises, then falls, in this direction), the terms left
/// only shrink, and the sum so far is at most S, so no term up to `last` can meet the stopping rule. S is 1 (the
/// mass of a pmf), or, where the terms fall from `from` on, the smaller of 1 and block_bound's bound on the first
/// max_sum_terms + 1 terms (a law near a point mass, whose tail terms are all tiny).
inline constexpr std::int64_t max_sum_terms = std::int64_t{1} << 23;

/// An upper bound on \f$\sum_{j=j_0}^{m} t(j)\f$ for terms t that are, on any interval of j, largest at one of
/// its ends (monotone, or falling then rising): blocks of j, [0, 0], [1, 1], ..., [8, 8], [9, 10], ... (from j0 on),
/// each of length max(1, first / 8), each at most its length times the larger t at its two ends. About
/// 2 (8 + 8.5 ln m) values of t; for a power law t(j) ~ j^-s (s < 1) within about 15 % of the sum.
template <class Term>
long double block_bound(Term t, std::int64_t j0, std::int64_t m) {
  long double bound = 0.0L;
  for (std::int64_t first = j0; first <= m;) {
    const std::int64_t last = std::min(first + std::max<std::int64_t>(1, first / 8) - 1, m);
    bound += static_cast<long double>(last - first + 1) * std::max(t(first), t(last));
    first = last + 1;
  }
  return bound;
}
/// Steps between re-anchorings of the ratio recurrence: 256 long double products drift by at most ~1.4e-17
/// relative (below a double's rounding), and a log-pmf (three Loader terms) costs about as much as 30 ratios, so
/// anchoring every 32 steps had made it half of a sum's time (fuzz_algebra's profile).
inline constexpr std::int64_t anchor_every = 256;
/// (`max_terms`: max_sum_terms but in tests of the refusals.)
template <class LogPmf, class Ratio>
double sum_pmf(std::int64_t from, std::int64_t to, bool may_stop, LogPmf log_pmf, Ratio ratio, const char* who,
               std::int64_t max_terms = max_sum_terms) {
  const std::int64_t step = from <= to ? 1 : -1;
  long double term = std::exp(static_cast<long double>(log_pmf(from)));
  const auto too_many = [&] {
    fail<overflow_error>(who, ": the cdf's sum from k = ", from, " toward ", to, " needs more than ", max_terms,
                         " terms (the law's spread is too large to sum term by term)");
  };
  // the range's terms, exact in long double (64-bit significand), and the certain refusals (above)
  const long double terms = (step > 0 ? static_cast<long double>(to) - from : static_cast<long double>(from) - to) + 1.0L;
  if (terms > static_cast<long double>(max_terms)) {
    if (!may_stop) too_many();
    const std::int64_t last = from + step * (max_terms - 1);
    const long double left = terms - static_cast<long double>(max_terms - 1);
    const long double falls = step > 0 ? static_cast<long double>(ratio(from)) : 1.0L / static_cast<long double>(ratio(from - 1));
    const long double most =  // the sum so far, at most
        falls < 1.0L ? std::min(1.0L, block_bound([&](std::int64_t i) { return std::exp(static_cast<long double>(log_pmf(from + step * i))); },
                                                  0, max_terms))
                     : 1.0L;
    if (std::min(term, std::exp(static_cast<long double>(log_pmf(last)))) * left > 2e-20L * most) too_many();
  }
  long double sum = 0.0L;
  for (std::int64_t j = from, count = 1;; ++count) {
    sum += term;
    if (j == to) break;
    if (count == max_terms) too_many();
    const long double factor = step > 0 ? static_cast<long double>(ratio(j)) : 1.0L / static_cast<long double>(ratio(j - 1));
    j += step;
    term = count % anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(j))) : term * factor;
    const auto left = static_cast<long double>(step > 0 ? to - j + 1 : j - to + 1);
    if (may_stop && factor < 1.0L && term * left <= 1e-20L * sum) break;
  }
  return static_cast<double>(sum);
}

/// The smallest k in [lo, hi] with cdf(k) >= prob, by bisection (cdf(hi) is taken to be >= prob): whatever the
/// rounding in cdf, the answer k has cdf(k) >= prob and, if k > lo, cdf(k - 1) < prob.
template <class Cdf>
std::int64_t bisect_quantile(double prob, std::int64_t lo, std::int64_t hi, Cdf cdf) {
  while (lo < hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (cdf(mid) >= prob)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// The same answer as bisect_quantile, for a law whose cdf is a sum of pmf terms: one cdf evaluation at `start`,
/// then a walk term by term (pmf(j+1) = pmf(j) ratio(j) in long double, re-anchored every anchor_every steps)
/// to where the running cdf crosses prob, then cdf itself checks the answer (a step or two, for rounding).
/// So a quantile costs about two cdfs and the distance from `start`, where bisection paid log2(hi - lo) cdfs
/// (fuzz_algebra spent 80 % of its time there: BetaBinomial quantiles with n near 2^23). `start`: the mode of a
/// unimodal law (its cdf stops early), else lo or hi. A walk past max_sum_terms terms is an overflow_error naming
/// `who`, as the cdf's sums are. Extreme quantiles reached from the far side (prob < 1e-3 below `start`, where
/// subtracting terms from cdf(start) would lose prob's digits; prob > 1 - 1e-3 above it, where the running sum
/// may never reach prob before hi) are bisected, as before: there the cdf's tail sums stop early. A walk certain to
/// pass max_sum_terms steps is refused at once, with the same error (fuzz_algebra's long runs walked 2^23 terms of
/// BetaBinomials with n near 2^63 first): where max_sum_terms terms fit before lo or hi and cdf(start) - M still
/// reaches prob (down) or cdf(start) + M still falls short of it (up), with margins far above the walk's rounding.
/// M is block_bound's bound on the walk's terms (the pmf falls away from a mode, and a U-shaped pmf walked from an
/// end is largest at the ends of any interval), times 1 + 1e-6, plus 1e-9.
/// (`max_terms`: max_sum_terms but in tests of the refusals.)
template <class Cdf, class LogPmf, class Ratio>
std::int64_t walk_quantile(double prob, std::int64_t lo, std::int64_t hi, std::int64_t start, Cdf cdf,
                           LogPmf log_pmf, Ratio ratio, const char* who, std::int64_t max_terms = max_sum_terms) {
  if (lo >= hi) return lo;
  std::int64_t k = start < lo ? lo : start > hi ? hi : start;
  long double c = cdf(k);                                       // cdf(k)
  long double term = std::exp(static_cast<long double>(log_pmf(k)));  // pmf(k)
  const auto too_far = [&](std::int64_t count) {
    if (count >= max_terms)
      fail<overflow_error>(who, ": the quantile's walk from k = ", start, " needs more than ", max_terms,
                           " terms (the law's spread is too large to sum term by term)");
  };
  // refused at once where the walk below cannot end within max_sum_terms steps (above)
  const auto refuse_if_certain = [&](bool down) {
    if ((down ? static_cast<long double>(k) - lo : static_cast<long double>(hi) - k) < max_terms) return;
    const auto pmf_at = [&](std::int64_t offset) {
      return std::exp(static_cast<long double>(log_pmf(down ? k - offset : k + offset)));
    };
    // the walk down subtracts pmf(start), pmf(start - 1), ...; the walk up adds pmf(start + 1), ...
    const long double most = block_bound(pmf_at, down ? 0 : 1, max_terms) * (1.0L + 1e-6L) + 1e-9L;
    if (down ? c - most >= prob : c + most < prob) too_far(max_terms);
  };
  // The walk keeps the terms it has passed in a sum of their own, `passed`, and compares it with the fixed
  // distance between cdf(start) and prob: subtracting each term from a running cdf near 1 loses it to rounding
  // when the terms are below 1e-19 (fuzz_algebra: BetaBinomial(n ~ 2^63, 0.47, 1.0), terms 5e-20: the walk stopped
  // about 1e5 terms off, then the correction stepped one cdf at a time, 16 s).
  long double passed = 0.0L;
  if (c >= prob) {  // down: the smallest k with cdf(k) >= prob, cdf(k - 1) = cdf(start) - passed - pmf(k)
    if (prob < 1e-3) return bisect_quantile(prob, lo, k, cdf);
    refuse_if_certain(true);
    const long double room = c - static_cast<long double>(prob);  // cdf(k - 1) >= prob <=> passed + pmf(k) <= room
    for (std::int64_t count = 1; k > lo && passed + term <= room; ++count) {
      too_far(count);
      passed += term;
      --k;
      term = count % anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(k)))
                                       : term / static_cast<long double>(ratio(k));
    }
  } else {  // up: cdf(k + 1) = cdf(start) + passed + pmf(k + 1)
    if (prob > 1.0 - 1e-3) return bisect_quantile(prob, k + 1, hi, cdf);
    refuse_if_certain(false);
    const long double need = static_cast<long double>(prob) - c;  // cdf(k) >= prob <=> passed >= need
    for (std::int64_t count = 1; k < hi && passed < need; ++count) {
      too_far(count);
      term = count % anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(k + 1)))
                                       : term * static_cast<long double>(ratio(k));
      ++k;
      passed += term;
    }
  }
  // The running sum and cdf round differently: cdf has the last word (the contract of bisect_quantile). They
  // differ by a step or two; should they differ by more, first_true's gallop then bisection from k bounds the cdfs
  // it costs (log2 of the distance, not the distance). Where they agree: cdf(k) and cdf(k - 1), two cdfs.
  return first_true(k, lo, hi, [&](std::int64_t j) { return cdf(j) >= prob; });
}

}  // namespace tally::detail
