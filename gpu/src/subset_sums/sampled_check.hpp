// Private: the input checks of sampled_subset_sums and the number of subsets each vector gets (CPU and CUDA alike).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "tally/error.hpp"

namespace tally::gpu::detail {

using tally::detail::checked_add;
using tally::detail::fail;

/// k_i = min(k, 2^n_i) for each vector, after checking k >= 1, n_i <= 63, every weight finite and >= 0, and an
/// integer vector's total below 2^62 (so that no subset sum overflows); errors name `who`.
template <class W>
std::vector<std::uint64_t> sample_counts(const std::vector<std::vector<W>>& vectors, std::size_t k, const char* who) {
  if (k == 0) fail<domain_error>(who, ": k = 0 subsets per vector (k must be >= 1)");
  std::vector<std::uint64_t> counts;
  counts.reserve(vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    const auto& v = vectors[i];
    if (v.size() > 63) fail<shape_error>(who, ": vector ", i, " has ", v.size(), " weights; at most 63 (masks are 64-bit)");
    W total{};
    for (const W x : v) {
      if constexpr (std::is_floating_point_v<W>) {
        if (!(x >= 0.0) || !std::isfinite(x)) fail<domain_error>(who, ": weight ", x, " of vector ", i, " must be finite and >= 0");
        total += x;
      } else {
        if (x < 0) fail<domain_error>(who, ": weight ", x, " of vector ", i, " must be >= 0");
        total = checked_add(total, x, who);
      }
    }
    if constexpr (std::is_floating_point_v<W>) {
      if (!std::isfinite(total)) fail<overflow_error>(who, ": the total of vector ", i, " is not finite");
    } else {
      if (total >= (std::int64_t{1} << 62)) fail<overflow_error>(who, ": the total of vector ", i, " must stay below 2^62");
    }
    const std::uint64_t all = std::uint64_t{1} << v.size();
    counts.push_back(std::min<std::uint64_t>(k, all));
  }
  return counts;
}

}  // namespace tally::gpu::detail
