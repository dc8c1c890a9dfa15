// Groups' weights: the CPU reference (one group after another, sequential sums) and the dispatch to the device.
#include "tally/gpu/group_weights.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"
#include "infinities.hpp"

namespace tally::gpu {
namespace {


std::size_t group_count(const Column<double>& log_w, std::size_t group_size, const char* who) {
  if (log_w.size() == 0) tally::detail::fail<shape_error>(who, ": no particles");
  if (group_size == 0 || log_w.size() % group_size != 0)
    tally::detail::fail<shape_error>(who, ": ", log_w.size(), " particles are not groups of ", group_size);
  return log_w.size() / group_size;
}

}  // namespace

GroupWeights summarize_groups(const Column<double>& log_w, std::size_t group_size) {
  constexpr const char* who = "tally::gpu::summarize_groups";
  const std::size_t groups = group_count(log_w, group_size, who);
  if (log_w.where() == Backend::cuda) return detail::summarize_groups_device(log_w, group_size);
  const std::vector<double>& l = log_w.host();
  for (std::size_t i = 0; i < l.size(); ++i)
    if (std::isnan(l[i]) || l[i] == -neg_inf)
      tally::detail::fail<domain_error>(who, ": particle ", i, "'s log-weight is ", l[i]);
  GroupWeights out{Column<double>::allocate(Backend::cpu, groups, who), Column<double>::allocate(Backend::cpu, groups, who),
                   Column<double>::allocate(Backend::cpu, groups, who)};
  for (std::size_t g = 0; g < groups; ++g) {
    const double* x = l.data() + g * group_size;
    double m = neg_inf;
    for (std::size_t k = 0; k < group_size; ++k) m = std::max(m, x[k]);
    double s1 = 0.0, s2 = 0.0;
    if (m > neg_inf)
      for (std::size_t k = 0; k < group_size; ++k) {
        const double w = std::exp(x[k] - m);
        s1 += w;
        s2 += w * w;
      }
    out.max_log_weight.host()[g] = m;
    out.log_mean_weight.host()[g] = m > neg_inf ? m + std::log(s1) - std::log(static_cast<double>(group_size)) : neg_inf;
    out.ess.host()[g] = m > neg_inf ? s1 * s1 / s2 : 0.0;
  }
  return out;
}

GroupMoments summarize_values_by_group(const Column<std::int64_t>& values, const Column<double>& log_w,
                                       std::size_t group_size) {
  constexpr const char* who = "tally::gpu::summarize_values_by_group";
  const std::size_t groups = group_count(log_w, group_size, who);
  if (values.size() != log_w.size() || values.where() != log_w.where())
    tally::detail::fail<shape_error>(who, ": ", values.size(), " values for ", log_w.size(), " log-weights (or not in ",
                                     "the same place)");
  if (log_w.where() == Backend::cuda) return detail::summarize_values_by_group_device(values, log_w, group_size);
  const std::vector<double>& l = log_w.host();
  for (std::size_t i = 0; i < l.size(); ++i)
    if (std::isnan(l[i]) || l[i] == -neg_inf)
      tally::detail::fail<domain_error>(who, ": particle ", i, "'s log-weight is ", l[i]);
  GroupMoments out{Column<double>::allocate(Backend::cpu, groups, who), Column<double>::allocate(Backend::cpu, groups, who),
                   Column<double>::allocate(Backend::cpu, groups, who)};
  for (std::size_t g = 0; g < groups; ++g) {
    const double* x = l.data() + g * group_size;
    const std::int64_t* v = values.host().data() + g * group_size;
    double m = neg_inf;
    for (std::size_t k = 0; k < group_size; ++k) m = std::max(m, x[k]);
    // all impossible: every particle weighs 1 (the unweighted moments), and ess says 0
    const auto weight = [&](std::size_t k) { return m > neg_inf ? std::exp(x[k] - m) : 1.0; };
    double s1 = 0.0, s2 = 0.0, sv = 0.0;
    for (std::size_t k = 0; k < group_size; ++k) {
      const double w = weight(k);
      s1 += w;
      s2 += w * w;
      sv += w * static_cast<double>(v[k]);
    }
    const double mean = sv / s1;
    double sd = 0.0;
    for (std::size_t k = 0; k < group_size; ++k) {
      const double d = static_cast<double>(v[k]) - mean;
      sd += weight(k) * d * d;
    }
    out.mean.host()[g] = mean;
    out.variance.host()[g] = sd / s1;
    out.ess.host()[g] = m > neg_inf ? s1 * s1 / s2 : 0.0;
  }
  return out;
}

GroupResampled resample_groups(const Column<double>& log_w, std::size_t group_size, const GroupWeights& weights,
                               double threshold, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                               std::uint64_t first_group) {
  constexpr const char* who = "tally::gpu::resample_groups";
  const std::size_t groups = group_count(log_w, group_size, who);
  const GroupWeights& w = weights;
  if (w.max_log_weight.size() != groups || w.log_mean_weight.size() != groups || w.ess.size() != groups)
    tally::detail::fail<shape_error>(who, ": summaries of ", weights.ess.size(), " groups for ", groups);
  if (!(threshold >= 0.0)) tally::detail::fail<domain_error>(who, ": threshold ", threshold, " is not >= 0");
  if (log_w.where() == Backend::cuda)
    return detail::resample_groups_device(log_w, group_size, weights, threshold, kind, seed, counter, first_group);
  const std::size_t p = log_w.size();
  GroupResampled out{Column<std::size_t>::allocate(Backend::cpu, p, who), log_w.clone(),
                     Column<std::int64_t>::allocate(Backend::cpu, groups, who)};
  const std::vector<double>& l = log_w.host();
  std::vector<double> c(group_size);
  const double s = static_cast<double>(group_size);
  for (std::size_t g = 0; g < groups; ++g) {
    const std::size_t first = g * group_size;
    const double m = weights.max_log_weight.host()[g];
    const bool resample = m > neg_inf && (threshold >= 1.0 || weights.ess.host()[g] < threshold * s);
    out.resampled.host()[g] = resample ? 1 : 0;
    if (!resample) {
      for (std::size_t j = 0; j < group_size; ++j) out.ancestors.host()[first + j] = first + j;
      continue;
    }
    double sum = 0.0;
    for (std::size_t k = 0; k < group_size; ++k) c[k] = sum += std::exp(l[first + k] - m);
    const double total = c[group_size - 1];
    const double u = philox_uniform(seed, first_group + g, counter);
    for (std::size_t j = 0; j < group_size; ++j) {
      const double t = kind == Resampler::systematic
                           ? (static_cast<double>(j) + u) * total / s
                           : philox_uniform(seed, first_group * group_size + first + j, counter) * total;
      // the first prefix sum above t; where rounding leaves none, the first that reaches the total
      std::size_t k = static_cast<std::size_t>(std::upper_bound(c.begin(), c.end(), t) - c.begin());
      if (k == group_size) k = static_cast<std::size_t>(std::lower_bound(c.begin(), c.end(), total) - c.begin());
      out.ancestors.host()[first + j] = first + k;
      out.log_w.host()[first + j] = 0.0;
    }
  }
  return out;
}

}  // namespace tally::gpu
