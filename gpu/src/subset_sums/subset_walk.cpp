// The host side of every subset-sum enumeration: input checks, walk items with their factors, the assembled law.
#include "subset_walk.hpp"

#include <algorithm>
#include <cmath>

#include "tally/error.hpp"

namespace tally::gpu::detail {

template <class W>
Walk<W> prepare_walk(std::span<const W> w, std::span<const double> p, const char* who) {
  if (w.size() != p.size()) fail<shape_error>(who, ": ", w.size(), " weights but ", p.size(), " probabilities");
  Walk<W> walk;
  W offset{};
  for (std::size_t i = 0; i < w.size(); ++i) {
    check_probability(p[i], who, "p");
    if constexpr (std::is_floating_point_v<W>) {
      if (!(w[i] >= 0.0) || !std::isfinite(w[i])) fail<domain_error>(who, ": weight ", w[i], " (index ", i, ") must be finite and >= 0");
    } else {
      if (w[i] < 0) fail<domain_error>(who, ": weight ", w[i], " (index ", i, ") must be >= 0");
    }
    if (p[i] == 0.0) continue;
    if (p[i] == 1.0) {
      if constexpr (std::is_floating_point_v<W>) {
        walk.start = add(walk.start, w[i]);
      } else {
        offset = checked_add(offset, w[i], who);
      }
      continue;
    }
    const double q = 1.0 - p[i], hi = std::max(p[i], q);
    walk.items.push_back({w[i], scaled(p[i] / hi), scaled(q / hi), scaled(p[i] / q), scaled(q / p[i])});
    walk.log_scale += std::log(hi);
    if constexpr (std::is_floating_point_v<W>) {
      walk.span += w[i];
    } else {
      walk.span = checked_add(walk.span, w[i], who);
    }
  }
  if (walk.n() > max_enumerated_weights)
    fail<overflow_error>(who, ": ", walk.n(), " weights with 0 < p < 1 would be 2^", walk.n(),
                         " subsets; at most max_enumerated_weights = ", max_enumerated_weights, " are enumerated");
  if constexpr (std::is_floating_point_v<W>) {
    if (!std::isfinite(walk.span + walk.start.hi)) fail<overflow_error>(who, ": the total of the weights is not finite");
  } else {
    const std::int64_t total = checked_add(walk.span, offset, who);
    if (total >= (std::int64_t{1} << 62))
      fail<overflow_error>(who, ": the total of the weights, ", total, ", must stay below 2^62");
    walk.offset = offset;
  }
  return walk;
}

template <class W>
SubsetSumLaw<W> finish_walk(const Walk<W>& walk, std::span<const std::uint64_t> keys, std::span<const double> weights) {
  SubsetSumLaw<W> law;
  law.log_scale = walk.log_scale;
  // every lost subset weighs less than 2^-1022 relative to the mode, and the total relative mass is at least 1
  law.error_bound = std::ldexp(1.0, walk.n() - 1022);
  law.values.reserve(keys.size());
  law.weights.reserve(keys.size());
  for (std::size_t j = 0; j < keys.size(); ++j) {
    if (!(weights[j] > 0.0)) continue;
    law.values.push_back(static_cast<W>(from_key<W>(keys[j]) + walk.offset));
    law.weights.push_back(weights[j]);
  }
  return law;
}

template Walk<std::int64_t> prepare_walk(std::span<const std::int64_t>, std::span<const double>, const char*);
template Walk<double> prepare_walk(std::span<const double>, std::span<const double>, const char*);
template SubsetSumLaw<std::int64_t> finish_walk(const Walk<std::int64_t>&, std::span<const std::uint64_t>,
                                                std::span<const double>);
template SubsetSumLaw<double> finish_walk(const Walk<double>&, std::span<const std::uint64_t>, std::span<const double>);

}  // namespace tally::gpu::detail
