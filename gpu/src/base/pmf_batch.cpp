// PmfBatch: appending with the "scale before" normalization, and the invariant check.
#include "tally/gpu/pmf_batch.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/error.hpp"

namespace tally::gpu {

void PmfBatch::push_back(std::span<const double> w, std::int64_t first, double scale) {
  constexpr const char* who = "tally::gpu::PmfBatch::push_back";
  if (w.empty()) tally::detail::fail<shape_error>(who, ": a pmf needs at least one weight");
  if (std::isnan(scale)) tally::detail::fail<domain_error>(who, ": log_scale is NaN");
  double max = 0.0;
  for (double v : w) {
    tally::detail::check_nonnegative(v, who, "weight");
    max = std::max(max, v);
  }
  for (double v : w) weights.push_back(max > 0.0 ? v / max : 0.0);
  offset.push_back(static_cast<std::int64_t>(weights.size()));
  lo.push_back(first);
  log_scale.push_back(max > 0.0 ? scale + std::log(max) : -std::numeric_limits<double>::infinity());
}

std::size_t PmfBatch::max_length() const {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < size(); ++i) longest = std::max(longest, length(i));
  return longest;
}

void check(const PmfBatch& b, const char* who) {
  if (b.offset.size() != b.lo.size() + 1 || b.log_scale.size() != b.lo.size())
    tally::detail::fail<shape_error>(who, ": batch arrays disagree (", b.lo.size(), " lo, ", b.log_scale.size(),
                                     " log_scale, ", b.offset.size(), " offsets; offsets must be one more)");
  if (b.offset.front() != 0) tally::detail::fail<shape_error>(who, ": offset[0] must be 0");
  for (std::size_t i = 0; i < b.lo.size(); ++i)
    if (b.offset[i + 1] <= b.offset[i])
      tally::detail::fail<shape_error>(who, ": pmf ", i, " is empty or its offsets decrease");
  if (static_cast<std::size_t>(b.offset.back()) != b.weights.size())
    tally::detail::fail<shape_error>(who, ": offsets end at ", b.offset.back(), " but there are ", b.weights.size(),
                                     " weights");
  for (double v : b.weights)
    if (!(v >= 0.0 && v <= 1.0)) tally::detail::fail<domain_error>(who, ": weight ", v, " is outside [0, 1]");
  for (double s : b.log_scale)
    if (std::isnan(s) || s == std::numeric_limits<double>::infinity())
      tally::detail::fail<domain_error>(who, ": log_scale ", s, " is NaN or +inf");
}

}  // namespace tally::gpu
