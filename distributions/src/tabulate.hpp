// Private helpers for the families: tabulate a log-pmf into a Pmf, and find where a unimodal pmf is negligible.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/error.hpp"

namespace tally::detail {

/// log(flush_fraction): entries this far below the mode are flushed by Pmf anyway.
inline const double log_flush = std::log(flush_fraction);

/// Throws overflow_error when [lo, hi] has more entries than t.max_size.
inline void check_dense_size(std::int64_t lo, std::int64_t hi, const Truncation& t, const char* who) {
  const int128 n = static_cast<int128>(hi) - lo + 1;  // in 128 bits: hi - lo may not fit in int64
  if (n > t.max_size)
    fail<overflow_error>(who, ": a dense pmf over [", lo, ", ", hi, "] needs ", static_cast<double>(n), " entries, more than max_size = ",
                         t.max_size, " (raise Truncation::max_size or use a sparse form)");
}

/// The Pmf with log weights log_pmf(k) for k in [lo, hi], and the given error bound.
template <class LogPmf>
Pmf tabulate(std::int64_t lo, std::int64_t hi, LogPmf log_pmf, double error_bound, const Truncation& t,
             const char* who) {
  check_dense_size(lo, hi, t, who);
  Eigen::VectorXd lw(hi - lo + 1);
  for (std::int64_t i = 0; i <= hi - lo; ++i) lw[i] = log_pmf(lo + i);  // (k <= hi; ++k never ends at INT64_MAX)
  return Pmf::from_log(lo, lw, error_bound);
}

/// For a pmf that increases up to `mode` and decreases after it, on [lo, hi]: the sub-range outside which every
/// entry is below flush_fraction of the mode's (so Pmf would flush it). Each step doubles, then bisects:
/// O(log(hi - lo)) evaluations.
template <class LogPmf>
std::pair<std::int64_t, std::int64_t> significant_range(std::int64_t mode, std::int64_t lo, std::int64_t hi,
                                                        LogPmf log_pmf) {
  const double cut = log_pmf(mode) + log_flush;
  auto reach = [&](int direction, std::int64_t limit) {
    // find the farthest k from mode toward limit with log_pmf(k) >= cut (monotone on that side)
    std::int64_t good = mode, step = 1;
    for (;;) {
      const std::int64_t room = direction > 0 ? limit - good : good - limit;
      if (room == 0) return good;
      const std::int64_t s = step < room ? step : room;
      const std::int64_t k = good + direction * s;
      if (log_pmf(k) >= cut) {
        good = k;
        if (step <= std::numeric_limits<std::int64_t>::max() / 2) step *= 2;  // (ranges near 2^63)
      } else if (s == 1) {
        return good;
      } else {
        step = s / 2;
      }
    }
  };
  return {reach(-1, lo), reach(+1, hi)};
}

}  // namespace tally::detail

namespace tally::detail {

/// The range kept when an unbounded law is truncated: [lo, hi] and the mass outside it.
struct KeptRange {
  std::int64_t lo, hi;
  double dropped;
};

/// The smallest k in [lo, hi] with pred(k) true, for a predicate false then true (hi when it is nowhere true),
/// searched from `guess`: galloping away from it (steps 1, 2, 4, ...) until the answer is bracketed, then
/// bisecting, so that a guess far off (Boost's quantile at extreme parameters, k past 2^53 where a cdf moves in
/// steps) costs O(log distance) evaluations, never a walk over the distance.
template <class Pred>
std::int64_t first_true(std::int64_t guess, std::int64_t lo, std::int64_t hi, Pred pred) {
  std::int64_t k = guess < lo ? lo : guess > hi ? hi : guess;
  std::int64_t bad, good;  // !pred(bad), pred(good), bad < good: the answer is in (bad, good]
  constexpr std::int64_t max_step = std::int64_t{1} << 61;
  if (pred(k)) {
    good = k;
    for (std::int64_t step = 1;; step = step > max_step ? step : 2 * step) {
      if (good == lo) return lo;
      const std::int64_t j = good - lo <= step ? lo : good - step;
      if (!pred(j)) {
        bad = j;
        break;
      }
      good = j;
    }
  } else {
    bad = k;
    for (std::int64_t step = 1;; step = step > max_step ? step : 2 * step) {
      if (bad == hi) return hi;
      const std::int64_t j = hi - bad <= step ? hi : bad + step;
      if (pred(j)) {
        good = j;
        break;
      }
      bad = j;
    }
  }
  while (good - bad > 1) {
    const std::int64_t mid = bad + (good - bad) / 2;
    if (pred(mid))
      good = mid;
    else
      bad = mid;
  }
  return good;
}

/// Truncates a law on [first, infinity) at `tolerance`: lo is the largest k >= first with P(X < k) <= tol/2, hi
/// the smallest k >= lo with P(X > k) <= tol/2, found from the guesses against the exact tails cdf(k) = P(X <= k)
/// and ccdf(k) = P(X > k) (by first_true: a poor guess costs O(log distance) evaluations). Throws domain_error if
/// tolerance is not in (0, 1).
template <class Cdf, class Ccdf>
KeptRange truncate_tails(double tolerance, std::int64_t first, std::int64_t lo_guess, std::int64_t hi_guess, Cdf cdf,
                         Ccdf ccdf, const char* who) {
  if (!(tolerance > 0.0 && tolerance < 1.0))
    fail<domain_error>(who, ": truncation tolerance ", tolerance, " must be in (0, 1) for an unbounded law");
  const double half = tolerance / 2;
  constexpr std::int64_t end = std::numeric_limits<std::int64_t>::max();
  // lo: the first k >= first with P(X <= k) > tol/2 (then P(X < lo) <= tol/2)
  const std::int64_t lo = first_true(lo_guess, first, end, [&](std::int64_t k) { return cdf(k) > half; });
  // hi: the first k >= lo with P(X > k) <= tol/2
  const std::int64_t hi = first_true(hi_guess, lo, end, [&](std::int64_t k) { return ccdf(k) <= half; });
  const double below = lo > first ? cdf(lo - 1) : 0.0;
  return {lo, hi, below + ccdf(hi)};
}

}  // namespace tally::detail
