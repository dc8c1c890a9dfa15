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
  /// \f$\bar v\f$, the weighted mean.
  double mean = 0;
  /// ESS, the effective sample size of the weights.
  double ess = 0;
  bool all_impossible = false;            ///< every log-weight was -inf (the summary is unweighted)
  std::vector<std::int64_t> quantiles;  ///< Q(p) for each requested p, in the order given
  /// \f$\min_i v_i\f$ and \f$\max_i v_i\f$ over every particle, whatever its weight
  ///@{
  std::int64_t lo = 0, hi = 0;
  ///@}
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
/// The parts of a summary that shards of one population combine (runtime's sharded summaries), with the definitions
/// of WeightedSummary: each shard passes over its own particles only, and the parts stay where the columns live, so
/// that the shards share each with one all-gather there and the host waits once, for the last.
/// Part 1 of k columns (summary_ranges): summary_range_words words per column, then one word, `tag`, of the
/// caller's (runtime carries whether a shard's probabilities are good); summary_range_of reads column j's back:
/// its smallest and largest value, and (the same for every column) the largest log-weight that is not NaN or +inf,
/// `top` (-inf where there is none), and the first NaN or +inf log-weight's index (the shard's count: none).
struct SummaryRange {
  double top = -std::numeric_limits<double>::infinity();
  std::int64_t lo = 0, hi = 0;
  std::size_t first_bad = 0;
};
inline constexpr std::size_t summary_range_words = 8;
inline constexpr std::int64_t summary_bins = 4096;
/// Part 2's doubles per column: W = sum_i w_i, sum_i w_i v_i, sum_i w_i^2, then summary_bins bins.
inline constexpr std::size_t summary_sums_size = 3 + summary_bins;
/// tally::shape_error (naming `who`) unless the values and log-weights have one size and one place.
void check_same_place(const Column<std::int64_t>& values, const Column<double>& log_w, const char* who);
/// Part 1 where the columns live: k summary_range_words + 1 words (every column the log-weights' size and place;
/// tally::shape_error otherwise).
Column<std::int64_t> summary_ranges(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                                    std::int64_t tag);
/// Column j's part 1 from the words of one shard's part (host memory).
SummaryRange summary_range_of(std::span<const std::int64_t> part, std::size_t j);
/// Column j's over G shards from their parts laid end to end (G (k summary_range_words + 1) words, host memory): the
/// largest top, the smallest lo and largest hi (first_bad: the first shard's with one, as that shard's index; the
/// caller knows the shards' offsets).
SummaryRange population_range(std::span<const std::int64_t> gathered, std::size_t k, std::size_t j);
/// Part 2 where the columns live, from the G shards' parts 1 laid end to end there (`gathered`): with the
/// population's top and ranges [lo_j, hi_j] (population_range), w_i = e^{l_i - top} (1 when top = -inf; 0 for a NaN
/// or +inf log-weight), k blocks of summary_sums_size doubles: W, sum w v, sum w^2, then where hi_j - lo_j <
/// summary_bins the weight by value, bin[v - lo_j] = sum of w_i at v (zeros past hi_j - lo_j, and every bin where
/// the range is wider). Sums in any order (the device adds per block, then the blocks in order): equal to a
/// sequential sum to rounding. tally::shape_error where `gathered` is not a whole number of parts of k columns.
Column<double> summary_sums(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                            const Column<std::int64_t>& gathered);
/// The device halves (summaries_cuda.cu; throwing stubs without CUDA), arguments checked by the above.
void summary_ranges_device(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                           std::int64_t tag, Column<std::int64_t>& out);
void summary_sums_device(std::span<const Column<std::int64_t>* const> columns, const Column<double>& log_w,
                         const Column<std::int64_t>& gathered, Column<double>& out);
/// A double as an integer ordered as the doubles are (-inf's key is above 0; 0 stands for "no weight"), and back.
std::uint64_t ordered_key(double x);
double from_ordered_key(std::uint64_t k);

/// The CUDA form (summaries_cuda.cu; a throwing stub without CUDA). Arguments validated by summarize; `weights`:
/// nullptr, or where the resampler's summary goes.
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const> columns,
                                              const Column<double>& log_w, std::span<const double> probabilities,
                                              WeightSummary* weights = nullptr);
}  // namespace detail

}  // namespace tally::gpu
