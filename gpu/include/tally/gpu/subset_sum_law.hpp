// The exact law of a weighted sum of independent Bernoullis, by enumerating all 2^n subsets: CPU, CUDA, dispatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// The law of \f$S = \sum_{i<n} w_i B_i\f$ with \f$B_i \sim \mathrm{Bernoulli}(p_i)\f$ independent, as its distinct
/// values \f$v_0 < v_1 < \dots < v_{m-1}\f$ (the subset sums of the weights) with
/// \f[ P(S = v_j) = \mathrm{weights}_j \, e^{\mathrm{log\_scale}}, \qquad
///     \mathrm{weights}_j = \sum_{A \,:\, \sum_{i \in A} w_i = v_j} \; \prod_i \frac{P(B_i = [i \in A])}{\max(p_i, 1-p_i)}, \f]
/// so that the most likely subset has weight 1 and log_scale = \f$\sum_i \log \max(p_i, 1-p_i)\f$.
/// Values of zero probability (weights with p_i = 0 never enter; p_i = 1 always do) are not listed.
/// error_bound bounds the relative mass lost where a subset's weight falls below the smallest double
/// (2^n * 2^-1074 at most; a subset 10^-300 times less likely than the mode is still kept).
template <class T>
struct SubsetSumLaw {
  /// v_0 < ... < v_{m-1}, the distinct values of positive probability.
  std::vector<T> values;
  /// weights_j, as above (the most likely subset's is 1).
  std::vector<double> weights;
  /// \f$\sum_i \log \max(p_i, 1-p_i)\f$.
  double log_scale = 0.0;
  /// The relative mass lost to underflow, as above.
  double error_bound = 0.0;
};

/// The most weights of probability strictly between 0 and 1 that are enumerated (2^36 subsets).
inline constexpr int max_enumerated_weights = 36;

/// The law of S by enumeration. Weights: non-negative integers (exact; the total must stay below 2^62) or
/// non-negative finite doubles, for which each subset's sum is accumulated in double-double arithmetic and rounded
/// once, so that equal subset sums are merged as equal (exact while the weights span fewer than about 50 binary
/// orders of magnitude). Probabilities: each subset's product carries at most 3n + 45 roundings (a walk restarts
/// from scratch every 16 subsets). The sums merging equal totals are compensated on the CPU and in the device's
/// table merge (which adds at most 1024 plain roundings first: below 1.2e-13 relative whatever n); the device's
/// sort merge adds with CUB's reduce-by-key, a tree within tiles and a chain across them (measured: <= 2e-15
/// against 50 digits with 3.4 million subsets per total, bench/RESULTS.md).
/// Throws tally::shape_error (sizes differ), tally::domain_error (a weight negative or not finite, p outside
/// [0,1]), tally::overflow_error (more than max_enumerated_weights weights with 0 < p < 1, or, on the device,
/// more memory than it has: the message says how much was needed).
/// The dispatch point: CUDA when built, a device is present and there are at least 2^18 subsets; else the CPU.
///@{
SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p);
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p);
///@}

namespace cpu {
/// The CPU reference: the same Gray-code walk and arithmetic, merged by a dense table (integer weights whose
/// total is below 2^24) or by sorting.
///@{
SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p);
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p);
///@}
}  // namespace cpu

namespace cuda {
/// How the device merges equal sums.
enum class SubsetMerge {
  automatic,  ///< `table` when it applies, else `sort`
  /// Integer weights whose total is at most max_table_span, n >= 9: one warp per block, its 32 lanes the 32
  /// subsets of five "lane" weights, each lane walking 16 subsets in Gray-code order, every total added into the
  /// warp's own table in shared memory (flushed into compensated sums every 1024 adds at most). The five lane weights are chosen so that few of their
  /// subset sums coincide; lanes whose totals coincide are summed by shuffles first, so the lanes that write hold
  /// distinct totals: no atomics, no sort, deterministic. The warps' tables are then added in a fixed order.
  table,
  /// Any weights: chunks of up to 2^24 subsets are written out, sorted and reduced by key (CUB device radix sort and
  /// reduce-by-key); the chunks' results are merged the same way. Device memory: 32 bytes per subset of a chunk
  /// (512 MiB) plus 32 bytes per distinct sum that the chunks can produce (up to 2^n for doubles: 2^28 subsets
  /// need 8 GiB more); a tally::overflow_error says how many bytes were needed when the device has fewer free.
  sort,
  /// The seed-000 baseline, for benchmarks: one thread per subset with an n-step bit loop, then `sort`'s merge.
  per_mask,
};
/// The largest total of integer weights that SubsetMerge::table merges.
inline constexpr std::int64_t max_table_span = 4096;

/// The CUDA implementation (host arrays in and out): tally::cuda_error without a device.
///@{
SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p,
                                          SubsetMerge merge = SubsetMerge::automatic);
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p,
                                    SubsetMerge merge = SubsetMerge::automatic);
///@}
}  // namespace cuda

}  // namespace tally::gpu
