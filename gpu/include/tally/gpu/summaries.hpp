// Summaries of a population's values under its weights, computed where the values live: a weighted mean,
// weighted quantiles and the effective sample size, so that a filter's report copies a few numbers, not P values.
#pragma once

#include <cstdint>
#include <optional>
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
/// The CUDA form (summaries_cuda.cu; a throwing stub without CUDA). Arguments validated by summarize; `weights`:
/// nullptr, or where the resampler's summary goes.
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const> columns,
                                              const Column<double>& log_w, std::span<const double> probabilities,
                                              WeightSummary* weights = nullptr);
}  // namespace detail

}  // namespace tally::gpu
