// Private: the structural support of a variable (from the graph's structure, nothing marginalized) and observe's
// fast path for values outside it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "node.hpp"

namespace tally::runtime::detail {

/// A finite, non-empty set of integers in one of three forms: every integer of [lo, hi] (`interval`); the members
/// of a packed bit row over [lo, hi] (`row`: k is a member when bit (k - lo) % 64 of word (k - lo) / 64 is set, no
/// bit beyond hi); or a sorted list of distinct points (`list`). lo and hi are always the smallest and largest
/// members.
struct SupportSet {
  enum Form { interval, row, list };
  Form form = interval;
  std::int64_t lo = 0, hi = 0;
  std::vector<std::uint64_t> bits;   // row only
  std::vector<std::int64_t> points;  // list only
  bool contains(std::int64_t v) const;
  /// The number of members (saturated at 2^64 - 1: the whole int64 range).
  std::uint64_t count() const;
};

/// A superset of the values n can take, in every particle and after any further conditioning, found from the
/// graph's structure alone: nothing is marginalized, sampled or changed. By kind:
/// - realized: the realized values (the union over the particles);
/// - marginalized: [min lo, max hi] of its marginals over the particles (conditioning only shrinks them);
/// - an initialized constant-parameter root: the points of positive mass of its prior;
/// - initialized a x + c: { a s + c : s in the support of x };
/// - an initialized sum x + sign y: the sumset { s + sign t }, true even for dependent operands. On packed bit rows
///   (one row shifted by each point of the other, or by doubling for an interval: gpu::cpu::shift_or) while the
///   result spans at most 2^30 integers; else by all pairwise sums, sorted, while there are at most 2^22 of them;
/// - anything else (thinning, Poisson and Markov children, joint sums, counts of conjugate parents): unknown.
/// Unknown (nullopt) too when any needed operand is unknown, when more than 2^20 nodes would be visited, when some
/// point leaves int64, or when the work passes 2^27 word operations: the answer must stay cheap next to grafting.
/// Nothing is cached, so nothing goes stale.
std::optional<SupportSet> structural_support(Node& n);

/// observe's fast path. When n is initialized, its structural support is known, and every particle's value lies
/// outside it, the observation is impossible in every particle: each log-weight becomes -inf and n is realized at
/// the values at once, without grafting (no dense pmf is built, nothing is conditioned: n's parents keep their
/// laws, as an impossible particle's posterior does not matter). Returns the log-likelihoods (all -inf) then, and
/// nullopt, having changed nothing, otherwise: the usual path also gives -inf wherever a value is impossible.
std::optional<gpu::Column<double>> observe_outside_support(Node& n, const Values& values);

}  // namespace tally::runtime::detail
