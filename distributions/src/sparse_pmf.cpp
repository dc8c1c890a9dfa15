// The sparse pmf: validation, rescaling, summaries and conversion to and from the dense form.
#include "tally/distributions/sparse_pmf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tabulate.hpp"
#include "tally/error.hpp"

namespace tally {

SparsePmf::SparsePmf(IntVector points, Eigen::VectorXd weights, double log_scale, double error_bound)
    : log_scale_(log_scale), error_bound_(error_bound) {
  const char* who = "tally::SparsePmf";
  if (points.size() != weights.size())
    detail::fail<shape_error>(who, ": ", points.size(), " points but ", weights.size(), " weights");
  if (points.size() == 0) detail::fail<shape_error>(who, ": no points (an empty support)");
  if (!std::isfinite(log_scale)) detail::fail<domain_error>(who, ": log scale ", log_scale, " is not finite");
  if (!(error_bound >= 0.0)) detail::fail<domain_error>(who, ": error bound ", error_bound, " must be >= 0");
  double top = 0.0;
  for (Eigen::Index i = 0; i < points.size(); ++i) {
    if (!(weights[i] >= 0.0) || !std::isfinite(weights[i]))
      detail::fail<domain_error>(who, ": weight ", weights[i], " at k = ", points[i], " is not finite and >= 0");
    if (i > 0 && points[i] <= points[i - 1])
      detail::fail<shape_error>(who, ": points must be strictly increasing (", points[i - 1], " then ", points[i], ")");
    top = std::max(top, weights[i]);
  }
  if (!(top > 0.0)) detail::fail<shape_error>(who, ": all weights are zero (a measure with no mass)");
  // keep the points of positive weight (after flushing), rescaled to a largest weight of 1
  Eigen::Index kept = 0;
  double flushed = 0.0;
  for (Eigen::Index i = 0; i < points.size(); ++i) {
    const double w = weights[i] / top;
    if (w < flush_fraction) {
      flushed += w;
      continue;
    }
    points[kept] = points[i];
    weights[kept] = w;
    ++kept;
  }
  points_ = points.head(kept);
  weights_ = weights.head(kept);
  log_scale_ += std::log(top);
  if (flushed > 0.0) error_bound_ += flushed / weights_.sum();
}

SparsePmf SparsePmf::from_log(IntVector points, const Eigen::VectorXd& log_weights, double error_bound) {
  if (log_weights.size() == 0 || points.size() != log_weights.size())
    detail::fail<shape_error>("tally::SparsePmf::from_log: ", points.size(), " points but ", log_weights.size(),
                              " log weights");
  for (Eigen::Index i = 0; i < log_weights.size(); ++i)
    if (std::isnan(log_weights[i]) || log_weights[i] == std::numeric_limits<double>::infinity())
      detail::fail<domain_error>("tally::SparsePmf::from_log: log weight ", log_weights[i], " is NaN or +inf");
  const double top = log_weights.maxCoeff();
  if (top == -std::numeric_limits<double>::infinity())
    detail::fail<shape_error>("tally::SparsePmf::from_log: all log weights are -inf (a measure with no mass)");
  return SparsePmf(std::move(points), (log_weights.array() - top).exp().matrix(), top, error_bound);
}

double SparsePmf::log_mass() const { return log_scale_ + std::log(weights_.sum()); }

SparsePmf SparsePmf::normalized() const {
  SparsePmf out = *this;
  out.log_scale_ = -std::log(weights_.sum());
  return out;
}

namespace {
// index of k among the points, or -1
Eigen::Index find(const SparsePmf& d, std::int64_t k) {
  const auto* first = d.points().data();
  const auto* last = first + d.size();
  const auto* it = std::lower_bound(first, last, k);
  return (it != last && *it == k) ? it - first : -1;
}
}  // namespace

double pdf(const SparsePmf& d, std::int64_t k) {
  const auto i = find(d, k);
  return i < 0 ? 0.0 : d.weights()[i] * std::exp(d.log_scale());
}

double log_pdf(const SparsePmf& d, std::int64_t k) {
  const auto i = find(d, k);
  return i < 0 ? -std::numeric_limits<double>::infinity() : std::log(d.weights()[i]) + d.log_scale();
}

double cdf(const SparsePmf& d, std::int64_t k) {
  double below = 0.0, above = 0.0;
  for (Eigen::Index i = 0; i < d.size(); ++i) (d.points()[i] <= k ? below : above) += d.weights()[i];
  return below / (below + above);
}

std::int64_t quantile(const SparsePmf& d, double prob) {
  detail::check_probability(prob, "tally::quantile(SparsePmf)", "prob");
  const double target = prob * d.weights().sum();
  double acc = 0.0;
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    acc += d.weights()[i];
    if (acc >= target) return d.points()[i];
  }
  return d.points()[d.size() - 1];
}

std::pair<std::int64_t, std::int64_t> support(const SparsePmf& d) { return {d.points()[0], d.points()[d.size() - 1]}; }

double mean(const SparsePmf& d) {
  // relative to the first point, so that large offsets do not cost precision
  const double k0 = static_cast<double>(d.points()[0]);
  const Eigen::VectorXd off = d.points().cast<double>().array() - k0;
  return k0 + d.weights().dot(off) / d.weights().sum();
}

double variance(const SparsePmf& d) {
  const double total = d.weights().sum();
  const Eigen::VectorXd off = d.points().cast<double>().array() - static_cast<double>(d.points()[0]);
  const double m = d.weights().dot(off) / total;
  return d.weights().dot((off.array() - m).square().matrix()) / total;
}

SparsePmf to_sparse(const Pmf& d) {
  const auto& w = d.weights();
  const Eigen::Index n = (w.array() > 0.0).count();
  IntVector points(n);
  Eigen::VectorXd weights(n);
  for (Eigen::Index i = 0, j = 0; i < w.size(); ++i) {
    if (w[i] > 0.0) {
      points[j] = d.lo() + i;
      weights[j++] = w[i];
    }
  }
  return SparsePmf(std::move(points), std::move(weights), d.log_scale(), d.error_bound());
}

Pmf to_dense(const SparsePmf& d, const Truncation& t) {
  const auto [lo, hi] = support(d);
  detail::check_dense_size(lo, hi, t, "tally::to_dense(SparsePmf)");
  Eigen::VectorXd w = Eigen::VectorXd::Zero(hi - lo + 1);
  for (Eigen::Index i = 0; i < d.size(); ++i) w[d.points()[i] - lo] = d.weights()[i];
  return Pmf(lo, std::move(w), d.log_scale(), d.error_bound());
}

}  // namespace tally
