// Private: the input checks of the subset-sum programme and the mask of a row's last word (CPU and CUDA alike).
#pragma once

#include <cstdint>
#include <span>

#include "tally/error.hpp"
#include "tally/gpu/reachable_sums.hpp"

namespace tally::gpu::detail {

using tally::detail::fail;

/// Requires c in [0, max_capacity] and every weight >= 0; errors name `who`.
inline void check_reachable_input(std::span<const std::int64_t> w, std::int64_t c, const char* who) {
  if (c < 0) fail<domain_error>(who, ": capacity c = ", c, " must be >= 0");
  if (c > max_capacity) fail<overflow_error>(who, ": capacity c = ", c, " is above max_capacity = 2^40");
  for (std::size_t i = 0; i < w.size(); ++i)
    if (w[i] < 0) fail<domain_error>(who, ": weight ", w[i], " (index ", i, ") must be >= 0");
}

/// The bits of word c / 64 that are totals <= c: bits 0 .. c % 64.
inline std::uint64_t top_word_mask(std::int64_t c) {
  const unsigned r = static_cast<unsigned>(c % 64);
  return r == 63 ? ~std::uint64_t{0} : (std::uint64_t{1} << (r + 1)) - 1;
}

}  // namespace tally::gpu::detail
