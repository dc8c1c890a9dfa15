// The exact law of a weighted sum of independent Bernoullis (votes, capacities, costs) as a sparse pmf.
#pragma once

#include <cstdint>
#include <span>

#include "tally/distributions/sparse_pmf.hpp"

namespace tally {

/// The law of \f$S = \sum_{i<n} w_i B_i\f$ with \f$B_i \sim \mathrm{Bernoulli}(p_i)\f$ independent and integer
/// weights \f$w_i \ge 0\f$, on its support (the subset sums of the weights, with gaps), exactly:
/// \f[ P(S = s) = \sum_{A \,:\, \sum_{i \in A} w_i = s} \; \prod_{i \in A} p_i \prod_{i \notin A} (1 - p_i). \f]
/// Weights with p_i = 0 never enter and weights with p_i = 1 always do (a constant offset); weights of 0 change
/// nothing. The others are split, in order, into groups of at most `group` weights; the law of each group is found
/// by enumerating its 2^group subsets (tally::gpu::subset_sum_law: on the GPU when built, present and big enough)
/// and the groups' laws are folded by the sparse sum (every pair of points, equal sums merged), so the cost is
/// about n/group * 2^group for the groups plus the product of the support sizes for the fold. Each group carries
/// the enumeration's error bound (mass lost below the smallest double); the fold combines bounds as sum() does.
/// Throws tally::shape_error (w and p of different sizes), tally::domain_error (a weight < 0, p outside [0, 1] or
/// NaN, group outside [1, gpu::max_enumerated_weights]) and tally::overflow_error (the sum of the weights leaves
/// int64). With no weights at all, or none random, the result is the point mass at the offset.
SparsePmf weighted_bernoulli_sum(std::span<const std::int64_t> w, std::span<const double> p, int group = 24);

}  // namespace tally
