// Private: the input checks shared by every implementation of the batched operations.
#pragma once

#include <cstdint>
#include <span>

#include "tally/error.hpp"
#include "tally/gpu/pmf_batch.hpp"

namespace tally::gpu::detail {

/// Both batches valid and of the same size, else shape_error / domain_error naming `who`.
inline void check_pair_batches(const PmfBatch& x, const PmfBatch& y, const char* who) {
  check(x, who);
  check(y, who);
  if (x.size() != y.size())
    tally::detail::fail<shape_error>(who, ": batches of ", x.size(), " and ", y.size(), " pmfs");
}

/// One observation per pair, and z - lo_x - lo_y representable: |z|, |lo| below 2^61 (documented precondition of
/// the device form, checked here), else shape_error / overflow_error.
inline void check_observations(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z, const char* who) {
  if (z.size() != x.size())
    tally::detail::fail<shape_error>(who, ": ", z.size(), " observations for ", x.size(), " pairs");
  constexpr std::int64_t limit = std::int64_t{1} << 61;  // then |z - lo_x - lo_y| < 3 2^61 < 2^63
  auto small = [&](std::int64_t v) { return v > -limit && v < limit; };
  for (std::size_t i = 0; i < z.size(); ++i)
    if (!small(z[i]) || !small(x.lo[i]) || !small(y.lo[i]))
      tally::detail::fail<overflow_error>(who, ": pair ", i, ": observation or support bound beyond 2^61");
}

}  // namespace tally::gpu::detail
