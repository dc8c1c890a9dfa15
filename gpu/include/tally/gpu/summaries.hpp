// Summaries of a population's values under its weights, computed where the values live: a weighted mean,
// weighted quantiles and the effective sample size, so that a filter's report copies a few numbers, not P values.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu {

/// What summarize says of values \f$v_i\f$ under unnormalized log-weights \f$\ell_i\f$, with
/// \f$w_i = e^{\ell_i - m}\f$, \f$m = \max_i \ell_i\f$ (every \f$w_i = 1\f$ when every \f$\ell_i = -\infty\f$:
/// the unweighted summary) and \f$W = \sum_i w_i\f$:
/// \f[ \bar v = \frac{1}{W}\sum_i w_i v_i, \qquad \mathrm{ESS} = \frac{W^2}{\sum_i w_i^2}, \qquad
///     Q(p) = \min\{ v_{(j)} : \textstyle\sum_{k \le j} w_{(k)} / W \ge p \} \f]
/// where \f$v_{(1)} \le v_{(2)} \le \dots\f$ are the values in increasing order with their weights \f$w_{(k)}\f$
/// (the weighted inverse cdf; the largest value where rounding leaves the cumulative sum a hair below p).
struct WeightedSummary {
  double mean = 0;
  double ess = 0;
  bool all_impossible = false;            ///< every log-weight was -inf (the summary is unweighted)
  std::vector<std::int64_t> quantiles;  ///< Q(p) for each requested p, in the order given
  /// \f$\min_i v_i\f$ and \f$\max_i v_i\f$ over every particle, whatever its weight
  std::int64_t lo = 0, hi = 0;
};

/// The summary of P values (P >= 1) under P log-weights where they live (tally::shape_error for other sizes or
/// places, or P = 0; tally::domain_error for a NaN or +inf log-weight or a probability outside [0, 1]).
/// CPU (the reference): a histogram when the values span at most 4P integers, else a sort; sums in increasing
/// value. CUDA: the values' range, the maximum, the weights, their sums (CUB reductions); where the values span at
/// most 4096 integers (counts of a population, typically) a histogram of the weights by value (shared memory per
/// block) and its scan, else a CUB radix sort of (value, weight) pairs and an inclusive scan; one thread per
/// quantile searching the scan; a few numbers copied back (one synchronization; two on the sort path). The two agree up to the rounding of the sums (a quantile may differ where the cumulative
/// weight lands within about 1e-12 of p).
WeightedSummary summarize(const Column<std::int64_t>& values, const Column<double>& log_w,
                          std::span<const double> probabilities);
/// The summaries of several columns of P values under the same log-weights, in the order given: what summarize
/// returns for each, with one copy back (one synchronization) for all of them on the device.
std::vector<WeightedSummary> summarize(std::span<const Column<std::int64_t>* const> columns,
                                       const Column<double>& log_w, std::span<const double> probabilities);
/// The same, and on the device the log-weights' WeightSummary as gpu::resample computes it (its own two passes, in
/// its fixed order: the same bits), read back in the same wait, two launches more: a resampling that follows,
/// with the weights unchanged, then needs no pass of its own to decide and no wait (Graph::summarize and
/// Graph::resample_by_weight). `weights` is set on the device only (the host's resampler waits for nothing) and
/// left empty otherwise, and when the summaries raise.
std::vector<WeightedSummary> summarize(std::span<const Column<std::int64_t>* const> columns,
                                       const Column<double>& log_w, std::span<const double> probabilities,
                                       std::optional<WeightSummary>& weights);

namespace detail {
/// The parts of a summary that shards of one population combine (runtime's sharded summaries: each shard passes
/// over its own particles only), with the definitions of WeightedSummary. Part 1, for each column: its smallest
/// and largest value, and (the same for every column) the largest log-weight that is not NaN or +inf, `top` (-inf
/// where there is none), and the first NaN or +inf log-weight's index (count: none).
struct SummaryRange {
  double top = -std::numeric_limits<double>::infinity();
  std::int64_t lo = 0, hi = 0;
  std::size_t first_bad = 0;
};
/// Part 2 given the population's largest log-weight `top` and each column's population range [lo_k, hi_k]:
/// W = sum_i w_i, sum_i w_i v_i and sum_i w_i^2 with w_i = e^{l_i - top} (1 when top = -inf; 0 for a NaN or +inf
/// log-weight), and where hi_k - lo_k < summary_bins the weight by value, bins[v - lo_k] = sum of w_i at v (else
/// no bins). Sums in any order (the device adds per block, then the blocks in order): equal to a sequential sum
/// to rounding. Each column's values must lie in its range: the host checks (tally::domain_error), the device does
/// not (its caller's ranges hold every shard's own, from part 1).
struct SummarySums {
  double total = 0, weighted = 0, squares = 0;
  std::vector<double> bins;
};
inline constexpr std::int64_t summary_bins = 4096;
/// tally::shape_error (naming `who`) unless the values and log-weights have one size and one place.
void check_same_place(const Column<std::int64_t>& values, const Column<double>& log_w, const char* who);
/// Both parts where the columns live (every column the log-weights' size; tally::shape_error otherwise).
std::vector<SummaryRange> summary_ranges(std::span<const Column<std::int64_t>* const> columns,
                                         const Column<double>& log_w);
std::vector<SummarySums> summary_sums(std::span<const Column<std::int64_t>* const> columns,
                                      const Column<double>& log_w, double top,
                                      std::span<const std::pair<std::int64_t, std::int64_t>> ranges);
std::vector<SummaryRange> summary_ranges_device(std::span<const Column<std::int64_t>* const> columns,
                                                const Column<double>& log_w);
std::vector<SummarySums> summary_sums_device(std::span<const Column<std::int64_t>* const> columns,
                                             const Column<double>& log_w, double top,
                                             std::span<const std::pair<std::int64_t, std::int64_t>> ranges);

/// The CUDA form (summaries_cuda.cu; a throwing stub without CUDA). Arguments validated by summarize; `weights`:
/// nullptr, or where the resampler's summary goes.
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const> columns,
                                              const Column<double>& log_w, std::span<const double> probabilities,
                                              WeightSummary* weights = nullptr);
}  // namespace detail

}  // namespace tally::gpu
