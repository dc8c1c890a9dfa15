// Particle-filter helpers for the models: stable log-mean-exp, effective sample size, systematic resampling.
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

/// Systematic resampling: P ancestors (non-decreasing), ancestor j being the particle whose cumulative normalized
/// weight interval holds (j + u) / P. u must be in (0, 1) (one uniform for all P draws). Particles of weight zero
/// (log-weight -inf) are never chosen. Throws std::invalid_argument when every log-weight is -inf (nothing to
/// resample: the caller reports a log-evidence of -inf), or on NaN/+inf weights or u outside (0, 1).
inline std::vector<std::size_t> systematic_resample(const std::vector<double>& log_weights, double u) {
  const double m = detail::max_log_weight(log_weights, "systematic_resample");
  if (m == -std::numeric_limits<double>::infinity())
    throw std::invalid_argument("systematic_resample: every log-weight is -inf");
  if (!(u > 0.0 && u < 1.0)) throw std::invalid_argument("systematic_resample: u is not in (0, 1)");
  const std::size_t P = log_weights.size();
  std::vector<double> cum(P);
  double total = 0.0;
  std::size_t last = 0;  // the last particle of positive weight
  for (std::size_t i = 0; i < P; ++i) {
    const double e = std::exp(log_weights[i] - m);  // in [0, 1], and 1 at the largest
    if (e > 0.0) last = i;
    total += e;
    cum[i] = total;
  }
  std::vector<std::size_t> ancestors(P);
  std::size_t i = 0;
  for (std::size_t j = 0; j < P; ++j) {
    const double target = (static_cast<double>(j) + u) / static_cast<double>(P) * total;
    // the first i with cum[i] >= target: cum[i - 1] < target <= cum[i], so particle i has positive weight
    while (i < last && cum[i] < target) ++i;
    ancestors[j] = i;
  }
  return ancestors;
}

/// out[j] = v[ancestors[j]].
template <class T>
std::vector<T> select(const std::vector<T>& v, const std::vector<std::size_t>& ancestors) {
  std::vector<T> out;
  out.reserve(ancestors.size());
  for (std::size_t a : ancestors) out.push_back(v.at(a));
  return out;
}

}  // namespace tally::models
