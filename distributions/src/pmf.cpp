// The dense Pmf: validation, rescaling to a unit maximum, flushing and trimming, and its summaries.
#include "tally/distributions/pmf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tally/error.hpp"

namespace tally {

Pmf::Pmf(std::int64_t lo, Eigen::VectorXd weights, double log_scale, double error_bound)
    : lo_(lo), log_scale_(log_scale), error_bound_(error_bound) {
  if (weights.size() == 0) detail::fail<shape_error>("tally::Pmf: no weights (an empty support)");
  if (!std::isfinite(log_scale_)) detail::fail<domain_error>("tally::Pmf: log scale ", log_scale_, " is not finite");
  if (!(error_bound_ >= 0.0)) detail::fail<domain_error>("tally::Pmf: error bound ", error_bound_, " must be >= 0");
  for (Eigen::Index i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!(w >= 0.0) || !std::isfinite(w))
      detail::fail<domain_error>("tally::Pmf: weight ", w, " at index ", i, " (k = lo + ", i, ", lo = ", lo_,
                                 ") is not finite and >= 0");  // (lo + i may not fit in int64: checked below)
  }
  detail::checked_add(lo_, static_cast<std::int64_t>(weights.size() - 1), "tally::Pmf (upper end of support)");
  canonicalize(weights);
  weights_ = std::make_shared<const Eigen::VectorXd>(std::move(weights));
}

// Rescale so that the largest weight is 1, flush weights below flush_fraction (adding their mass to the error
// bound), and trim zeros at both ends.
void Pmf::canonicalize(Eigen::VectorXd& weights) {
  const double top = weights.maxCoeff();
  if (!(top > 0.0)) detail::fail<shape_error>("tally::Pmf: all weights are zero (a measure with no mass)");
  if (top != 1.0) {
    weights /= top;
    log_scale_ += std::log(top);
  }
  double flushed = 0.0;
  for (double& w : weights) {
    if (w < flush_fraction && w > 0.0) {
      flushed += w;
      w = 0.0;
    }
  }
  Eigen::Index first = 0, last = weights.size() - 1;
  while (weights[first] == 0.0) ++first;  // terminates: the maximum is 1
  while (weights[last] == 0.0) --last;
  if (first != 0 || last != weights.size() - 1) {
    Eigen::VectorXd kept = weights.segment(first, last - first + 1);
    weights = std::move(kept);
    lo_ += first;
  }
  if (flushed > 0.0) error_bound_ += flushed / weights.sum();
}

Pmf Pmf::from_log(std::int64_t lo, const Eigen::VectorXd& log_weights, double error_bound) {
  if (log_weights.size() == 0) detail::fail<shape_error>("tally::Pmf::from_log: no weights (an empty support)");
  double top = -std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < log_weights.size(); ++i) {
    const double lw = log_weights[i];
    if (std::isnan(lw) || lw == std::numeric_limits<double>::infinity())
      detail::fail<domain_error>("tally::Pmf::from_log: log weight ", lw, " at index ", i, " (k = lo + ", i,
                                 ", lo = ", lo, ") is NaN or +inf");
    top = std::max(top, lw);
  }
  if (top == -std::numeric_limits<double>::infinity())
    detail::fail<shape_error>("tally::Pmf::from_log: all log weights are -inf (a measure with no mass)");
  Eigen::VectorXd w = (log_weights.array() - top).exp();
  return Pmf(lo, std::move(w), top, error_bound);
}

Pmf Pmf::point(std::int64_t k) { return Pmf(k, Eigen::VectorXd::Ones(1)); }

double Pmf::log_mass() const { return log_scale_ + std::log(weights_->sum()); }

Eigen::VectorXd Pmf::probabilities() const { return *weights_ * std::exp(log_scale_); }

Pmf Pmf::normalized() const {
  Pmf out = *this;
  out.log_scale_ = -std::log(weights_->sum());  // the weights keep their maximum of 1
  return out;
}

Pmf Pmf::with_error_bound(double bound) const {
  if (!(bound >= 0.0)) detail::fail<domain_error>("tally::Pmf::with_error_bound: bound ", bound, " must be >= 0");
  Pmf out = *this;
  out.error_bound_ = bound;
  return out;
}

double pdf(const Pmf& d, std::int64_t k) {
  if (k < d.lo() || k > d.hi()) return 0.0;
  return d.weights()[k - d.lo()] * std::exp(d.log_scale());
}

double log_pdf(const Pmf& d, std::int64_t k) {
  if (k < d.lo() || k > d.hi()) return -std::numeric_limits<double>::infinity();
  return std::log(d.weights()[k - d.lo()]) + d.log_scale();
}

double cdf(const Pmf& d, std::int64_t k) {
  if (k < d.lo()) return 0.0;
  if (k >= d.hi()) return 1.0;
  const auto& w = d.weights();
  const Eigen::Index n = k - d.lo() + 1;  // entries lo..k
  const double below = w.head(n).sum(), above = w.tail(w.size() - n).sum();
  return below / (below + above);
}

std::int64_t quantile(const Pmf& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Pmf)", "prob");
  const auto& w = d.weights();
  const double target = prob * w.sum();
  double acc = 0.0;
  for (Eigen::Index i = 0; i < w.size(); ++i) {
    acc += w[i];
    if (acc >= target && w[i] > 0.0) return d.lo() + i;
  }
  return d.hi();
}

std::pair<std::int64_t, std::int64_t> support(const Pmf& d) { return {d.lo(), d.hi()}; }

double mean(const Pmf& d) {
  const auto& w = d.weights();
  const Eigen::VectorXd i = Eigen::VectorXd::LinSpaced(w.size(), 0.0, static_cast<double>(w.size() - 1));
  return static_cast<double>(d.lo()) + w.dot(i) / w.sum();
}

double variance(const Pmf& d) {
  const auto& w = d.weights();
  const double total = w.sum();
  const Eigen::VectorXd i = Eigen::VectorXd::LinSpaced(w.size(), 0.0, static_cast<double>(w.size() - 1));
  const double m = w.dot(i) / total;
  return w.dot((i.array() - m).square().matrix()) / total;
}

}  // namespace tally
