// Private: a subset-sum enumeration prepared on the host (checked input, walk items) and its result assembled.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "subset_math.hpp"
#include "tally/error.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace tally::gpu::detail {

using tally::detail::check_probability;
using tally::detail::checked_add;
using tally::detail::fail;

/// The enumeration of S = offset + sum over items: weights with p = 0 are dropped, weights with p = 1 are always in
/// (their sum starts every walk: `start`, exact for doubles; for integers it is added at the end, `offset`).
template <class W>
struct Walk {
  std::vector<WalkItem<W>> items;  // the weights with 0 < p < 1, in input order
  typename Accumulator<W>::type start{};
  W offset{};       // added to every value at the end (integers only; 0 for doubles)
  W span{};         // the items' total: every walk sum lies in [0, span] (integers; for doubles an upper bound)
  double log_scale = 0.0;  // sum of log max(p, 1 - p)
  int n() const { return static_cast<int>(items.size()); }
  std::uint64_t subsets() const { return std::uint64_t{1} << items.size(); }
};

/// Checks the input (sizes, w >= 0 and finite, p in [0, 1], at most max_enumerated_weights items, an integer total
/// below 2^62) with errors naming `who`, and builds the walk.
template <class W>
Walk<W> prepare_walk(std::span<const W> w, std::span<const double> p, const char* who);

/// The law from distinct sort keys in increasing order and their relative weights (zeros dropped).
template <class W>
SubsetSumLaw<W> finish_walk(const Walk<W>& walk, std::span<const std::uint64_t> keys, std::span<const double> weights);

}  // namespace tally::gpu::detail
