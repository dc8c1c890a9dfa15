// The sparse probability mass function: sorted support points with masses, for supports with gaps.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// A column of 64-bit integers: the support points of a SparsePmf, draws of sample().
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
  /// Builds \f$\mu(k_i) = e^{log\_weights_i}\f$; entries may be -inf (the point is dropped), never +inf or NaN, and not
  /// all -inf (shape_error).
  static SparsePmf from_log(IntVector points, const Eigen::VectorXd& log_weights, double error_bound = no_error);

  /// The support points, strictly increasing, each of positive mass.
  const IntVector& points() const { return points_; }
  /// Stored weights, one per point, largest equal to 1.
  const Eigen::VectorXd& weights() const { return weights_; }
  /// s: the measure is weights() times e^s.
  double log_scale() const { return log_scale_; }
  /// The relative L1 error bound, as Pmf::error_bound.
  double error_bound() const { return error_bound_; }
  /// The number of support points.
  Eigen::Index size() const { return points_.size(); }
  /// \f$\log \sum_i \mu(k_i)\f$.
  double log_mass() const;
  /// The same measure divided by its mass (a distribution); the relative error bound is unchanged.
  SparsePmf normalized() const;

 private:
  IntVector points_;
  Eigen::VectorXd weights_;
  double log_scale_;
  double error_bound_;
};

/// \f$\mu(k)\f$, zero off the support points.
double pdf(const SparsePmf& d, std::int64_t k);
/// \f$\log \mu(k)\f$, -inf off the support points.
double log_pdf(const SparsePmf& d, std::int64_t k);
/// The cdf of the normalized measure: the mass of the points <= k over the total.
double cdf(const SparsePmf& d, std::int64_t k);
/// The smallest support point with cdf >= prob (prob in [0, 1], else domain_error).
std::int64_t quantile(const SparsePmf& d, double prob);
/// The smallest and largest support points.
std::pair<std::int64_t, std::int64_t> support(const SparsePmf& d);
/// Mean and variance of the normalized measure (computed relative to the first point, so that large offsets cost no
/// precision).
///@{
double mean(const SparsePmf& d);
double variance(const SparsePmf& d);
///@}

/// The points of positive mass of a dense pmf.
SparsePmf to_sparse(const Pmf& d);
/// The dense pmf over [first point, last point]; overflow_error when that range exceeds t.max_size entries.
Pmf to_dense(const SparsePmf& d, const Truncation& t = {});

}  // namespace tally
