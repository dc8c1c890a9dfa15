// The sparse probability mass function: sorted support points with masses, for supports with gaps.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

using IntVector = Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1>;

/// A measure on finitely many integers \f$k_0 < k_1 < \dots < k_{n-1}\f$:
/// \f[ \mu(k_i) = w_i \, e^{s}, \f]
/// with the same conventions as Pmf (weights finite, non-negative, largest 1; log scale s; relative error bound).
/// Points of zero weight are dropped at construction, so every stored point has positive mass. Used where a dense
/// range would be mostly zeros: a X + c with |a| > 1, weighted sums of Bernoullis.
class SparsePmf {
 public:
  /// Throws shape_error (sizes differ, no points, all weights zero, support not strictly increasing) or
  /// domain_error (NaN, negative or infinite weights, non-finite log scale, negative error bound).
  SparsePmf(IntVector points, Eigen::VectorXd weights, double log_scale = 0.0, double error_bound = no_error);
  static SparsePmf from_log(IntVector points, const Eigen::VectorXd& log_weights, double error_bound = no_error);

  const IntVector& points() const { return points_; }
  const Eigen::VectorXd& weights() const { return weights_; }
  double log_scale() const { return log_scale_; }
  double error_bound() const { return error_bound_; }
  Eigen::Index size() const { return points_.size(); }
  double log_mass() const;
  SparsePmf normalized() const;

 private:
  IntVector points_;
  Eigen::VectorXd weights_;
  double log_scale_;
  double error_bound_;
};

double pdf(const SparsePmf& d, std::int64_t k);
double log_pdf(const SparsePmf& d, std::int64_t k);
double cdf(const SparsePmf& d, std::int64_t k);
std::int64_t quantile(const SparsePmf& d, double prob);
/// The smallest and largest support points.
std::pair<std::int64_t, std::int64_t> support(const SparsePmf& d);
double mean(const SparsePmf& d);
double variance(const SparsePmf& d);

/// The points of positive mass of a dense pmf.
SparsePmf to_sparse(const Pmf& d);
/// The dense pmf over [first point, last point]; overflow_error when that range exceeds t.max_size entries.
Pmf to_dense(const SparsePmf& d, const Truncation& t = {});

}  // namespace tally
