// Private: the input checks of resampling (CPU and CUDA alike).
#pragma once

#include <cmath>
#include <limits>
#include <span>

#include "tally/error.hpp"

namespace tally::gpu::detail {

/// Requires at least one log-weight, none NaN or +inf, and not all -inf; errors name `who`.
inline void check_log_weights(std::span<const double> log_w, const char* who) {
  if (log_w.empty()) tally::detail::fail<shape_error>(who, ": no log-weights (an empty population)");
  bool any = false;
  for (std::size_t i = 0; i < log_w.size(); ++i) {
    if (std::isnan(log_w[i]) || log_w[i] == std::numeric_limits<double>::infinity())
      tally::detail::fail<domain_error>(who, ": log-weight ", log_w[i], " of particle ", i, " is NaN or +inf");
    any = any || log_w[i] > -std::numeric_limits<double>::infinity();
  }
  if (!any) tally::detail::fail<domain_error>(who, ": every log-weight is -inf (no particle has weight)");
}

}  // namespace tally::gpu::detail
