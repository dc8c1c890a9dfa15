// Weights of a population split into groups of equal size: each group's summary and its own resampling, computed as
// one segmented operation over the whole population (on the device: a block per group, then a thread per position).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu {

/// Per group g of S particles (particles gS .. gS + S - 1; G = P / S groups), each a column of G values where the
/// log-weights live, with \f$m_g = \max_{i \in g} \ell_i\f$:
/// \f[ \mathrm{log\_mean\_weight}_g = m_g + \log \sum_{i \in g} e^{\ell_i - m_g} - \log S, \qquad
///     \mathrm{ess}_g = \frac{(\sum_{i \in g} e^{\ell_i - m_g})^2}{\sum_{i \in g} e^{2(\ell_i - m_g)}} \in [1, S]. \f]
/// A group whose log-weights are all -inf has m_g = log_mean_weight_g = -inf and ess_g = 0.
struct GroupWeights {
  /// m_g, the group's largest log-weight.
  Column<double> max_log_weight;
  Column<double> log_mean_weight;  ///< the group's log-evidence increment
  /// ess_g, the group's effective sample size.
  Column<double> ess;
};

/// shape_error where S is 0 or does not divide P (or P is 0). The CPU reference throws domain_error for a NaN or
/// +inf log-weight, naming the particle; the device does not look (a runtime::Graph's log-weights are never either:
/// each is a sum of log-likelihoods, finite or -inf).
GroupWeights summarize_groups(const Column<double>& log_w, std::size_t group_size);

/// What resample_groups did, where the log-weights live.
struct GroupResampled {
  Column<std::size_t> ancestors;     ///< P indices, each in its own particle's group (i itself where not resampled)
  Column<double> log_w;              ///< the log-weights after: 0 in a resampled group, kept in the others
  Column<std::int64_t> resampled;    ///< G flags: 1 where the group was resampled
};

/// Resamples each group g on its own where ess_g < threshold S (threshold >= 1: every group; 0: none) and its
/// weights are not all -inf. With the prefix sums \f$C_k = \sum_{k' \le k} e^{\ell_{gS + k'} - m_g}\f$ of the group
/// (W_g = C_{S-1}), position j of the group takes the smallest k with \f$C_k > t_j\f$, where
///  - systematic: \f$t_j = (j + u_g) W_g / S\f$, u_g = philox_uniform(seed, first_group + g, counter): one uniform
///    per group, so the ancestors of a group are nondecreasing and a particle's offspring are within 1 of S w_k;
///  - multinomial: \f$t_j = u_{gS+j} W_g\f$, u_p = philox_uniform(seed, first_group S + p, counter): S independent
///    draws.
/// Where rounding leaves no C_k above t_j, the smallest k with C_k = W_g. A particle of weight 0 is never an
/// ancestor. The prefix sums are sequential on the CPU and CUB block scans on the device, so an ancestor may differ
/// between the two where t_j lies within rounding (about 1e-16 relative) of some C_k. first_group: the global index
/// of group 0 when these groups are one shard's, so that a shard draws what the whole population draws for them.
/// `weights` must be summarize_groups(log_w, group_size) (shape_error for other sizes).
GroupResampled resample_groups(const Column<double>& log_w, std::size_t group_size, const GroupWeights& weights,
                               double threshold, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                               std::uint64_t first_group = 0);

/// Per group g, the weighted mean and variance of its particles' values v_i under their log-weights, with
/// \f$w_i = e^{\ell_i - m_g}\f$ (m_g the group's largest log-weight):
/// \f[ \mathrm{mean}_g = \frac{\sum_{i \in g} w_i v_i}{\sum_{i \in g} w_i}, \qquad
///     \mathrm{variance}_g = \frac{\sum_{i \in g} w_i (v_i - \mathrm{mean}_g)^2}{\sum_{i \in g} w_i}, \f]
/// and ess_g as summarize_groups gives it. A group whose log-weights are all -inf gets its unweighted mean and
/// variance, and ess_g = 0 (which says so). The variance is the second pass's, about the mean (no cancellation).
struct GroupMoments {
  /// mean_g.
  Column<double> mean;
  /// variance_g.
  Column<double> variance;
  /// ess_g, as summarize_groups gives it.
  Column<double> ess;
};

/// shape_error where the columns differ in size or place, or as summarize_groups; the CPU reference throws
/// domain_error for a NaN or +inf log-weight. CPU: sequential sums, group by group. Device: a block per group (CUB
/// block reductions), no host wait; the two agree to the rounding of the sums' order.
GroupMoments summarize_values_by_group(const Column<std::int64_t>& values, const Column<double>& log_w,
                                       std::size_t group_size);

namespace detail {
GroupMoments summarize_values_by_group_device(const Column<std::int64_t>& values, const Column<double>& log_w,
                                              std::size_t group_size);
GroupWeights summarize_groups_device(const Column<double>& log_w, std::size_t group_size);
GroupResampled resample_groups_device(const Column<double>& log_w, std::size_t group_size, const GroupWeights& weights,
                                      double threshold, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                                      std::uint64_t first_group);
}  // namespace detail

}  // namespace tally::gpu
