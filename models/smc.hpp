// Particle-filter helpers for the models: stable log-mean-exp and effective sample size.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tally::models {

namespace detail {
/// The largest log-weight; throws std::invalid_argument on an empty vector, a NaN or a +inf entry.
inline double max_log_weight(const std::vector<double>& log_weights, const char* who) {
  if (log_weights.empty()) throw std::invalid_argument(std::string(who) + ": no weights");
  double m = -std::numeric_limits<double>::infinity();
  for (double w : log_weights) {
    if (std::isnan(w) || w == std::numeric_limits<double>::infinity())
      throw std::invalid_argument(std::string(who) + ": a log-weight is NaN or +inf");
    m = std::max(m, w);
  }
  return m;
}
}  // namespace detail

/// \f$\log \frac{1}{P}\sum_i e^{w_i}\f$, computed as \f$m + \log \frac{1}{P}\sum_i e^{w_i - m}\f$ with m the
/// largest w_i, so that weights far below -745 do not underflow. -inf when every w_i is -inf.
inline double log_mean_exp(const std::vector<double>& log_weights) {
  const double m = detail::max_log_weight(log_weights, "log_mean_exp");
  if (m == -std::numeric_limits<double>::infinity()) return m;
  double s = 0.0;
  for (double w : log_weights) s += std::exp(w - m);
  return m + std::log(s / static_cast<double>(log_weights.size()));
}

/// Kish's effective sample size \f$(\sum_i w_i)^2 / \sum_i w_i^2\f$ of the normalized weights (1 to P; 0 when
/// every log-weight is -inf).
inline double effective_sample_size(const std::vector<double>& log_weights) {
  const double m = detail::max_log_weight(log_weights, "effective_sample_size");
  if (m == -std::numeric_limits<double>::infinity()) return 0.0;
  double s = 0.0, s2 = 0.0;
  for (double w : log_weights) {
    const double e = std::exp(w - m);
    s += e;
    s2 += e * e;
  }
  return s * s / s2;
}

}  // namespace tally::models
