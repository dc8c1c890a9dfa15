// The dense probability mass function: a non-negative measure over a contiguous integer range, with a log scale.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <utility>

namespace tally {

/// Bound on how far a stored measure may be from the exact one, relative to its mass (see Pmf::error_bound).
inline constexpr double no_error = 0.0;

/// Entries smaller than this fraction of a pmf's largest entry (2^-1000, about 9.3e-302) are flushed to zero,
/// and their mass is added to the error bound; above it every entry keeps full double precision.
inline constexpr double flush_fraction = 0x1p-1000;

/// A measure over the integers [lo, hi], stored densely:
/// \f[ \mu(k) = w_{k - lo} \, e^{s}, \qquad lo \le k \le hi, \f]
/// where the weights w are non-negative and finite with \f$\max_k w_k = 1\f$ (the constructor rescales), and the
/// log scale s is finite. Splitting the scale off lets a measure whose every entry is far below 1e-300 (a joint
/// probability of many observations, a likelihood-weighted message) keep full relative precision.
///
/// A *distribution* is a Pmf whose mass \f$\sum_k \mu(k)\f$ is 1, up to rounding and the error bound.
/// Families truncated at a tolerance keep their exact probabilities on [lo, hi] and do not renormalize, so the
/// mass is 1 minus the dropped tail.
///
/// error_bound() is e such that \f$\|\mu - \mu_{exact}\|_1 \le e \, \|\mu\|_1\f$: the mass dropped by truncation
/// (and by flushing entries below flush_fraction), carried through every operation. Floating-point rounding is
/// not counted in it (it is a relative error of a few units in the last place per entry).
///
/// Invariants, checked at construction: the weights are non-empty, finite, non-negative and not all zero; the
/// first and last stored entries are positive (zeros at the ends are trimmed); hi = lo + size - 1 fits in int64.
class Pmf {
 public:
  /// Builds the measure \f$\mu(lo + i) = weights_i \, e^{log\_scale}\f$. Throws domain_error (NaN, negative or
  /// infinite weights, non-finite log scale, negative or NaN error bound), shape_error (no weights, or all zero),
  /// overflow_error (hi does not fit in int64).
  Pmf(std::int64_t lo, Eigen::VectorXd weights, double log_scale = 0.0, double error_bound = no_error);

  /// Builds the measure \f$\mu(lo + i) = e^{log\_weights_i}\f$; entries may be -inf (zero mass), never +inf or NaN.
  static Pmf from_log(std::int64_t lo, const Eigen::VectorXd& log_weights, double error_bound = no_error);

  /// The point mass at k (the Delta distribution).
  static Pmf point(std::int64_t k);

  /// Copies share the weights (immutable): a copy costs a reference count, not the array. A moved-from Pmf is a
  /// copy too, so that every Pmf keeps its invariants.
  ///@{
  Pmf(const Pmf&) = default;
  Pmf& operator=(const Pmf&) = default;
  ///@}

  /// The first point of the range (it has positive mass).
  std::int64_t lo() const { return lo_; }
  /// The last point of the range, lo + size - 1 (it has positive mass).
  std::int64_t hi() const { return lo_ + (static_cast<std::int64_t>(weights_->size()) - 1); }
  /// The number of stored weights, hi - lo + 1.
  Eigen::Index size() const { return weights_->size(); }
  /// Stored weights, largest equal to 1.
  const Eigen::VectorXd& weights() const { return *weights_; }
  /// Whether this and `other` hold one stored array of weights (a copy shares its original's): a test in O(1)
  /// that implies equal weights.
  bool shares_weights(const Pmf& other) const { return weights_ == other.weights_; }
  /// s: the measure is weights() times e^s.
  double log_scale() const { return log_scale_; }
  /// e: \f$\|\mu - \mu_{exact}\|_1 \le e \, \|\mu\|_1\f$ (see the class comment).
  double error_bound() const { return error_bound_; }

  /// \f$\log \sum_k \mu(k)\f$.
  double log_mass() const;
  /// \f$\mu(k)\f$ for each k in [lo, hi]; entries below about 1e-308 underflow to zero here (use log_pdf).
  Eigen::VectorXd probabilities() const;
  /// The same measure divided by its mass (a distribution); the relative error bound is unchanged.
  Pmf normalized() const;
  /// A copy whose error bound is `bound` (for callers that know better than the propagated bound).
  Pmf with_error_bound(double bound) const;

 private:
  /// Rescales w to a unit maximum, flushes and trims it (adjusting lo_, log_scale_ and error_bound_).
  void canonicalize(Eigen::VectorXd& w);

  std::int64_t lo_;
  std::shared_ptr<const Eigen::VectorXd> weights_;  // never null; shared by copies
  double log_scale_;
  double error_bound_;
};

/// \f$\mu(k)\f$, zero outside [lo, hi]; underflows to zero below about 1e-308 (log_pdf does not).
double pdf(const Pmf& d, std::int64_t k);
/// \f$\log \mu(k)\f$, -inf outside the support.
double log_pdf(const Pmf& d, std::int64_t k);
/// \f$\sum_{j \le k} \mu(j) / \sum_j \mu(j)\f$: the cdf of the normalized measure.
double cdf(const Pmf& d, std::int64_t k);
/// The smallest k with cdf(d, k) >= prob (prob in [0, 1], else domain_error).
std::int64_t quantile(const Pmf& d, double prob);
/// [lo, hi]: the first and last points with positive mass.
std::pair<std::int64_t, std::int64_t> support(const Pmf& d);
/// Mean and variance of the normalized measure.
///@{
double mean(const Pmf& d);
double variance(const Pmf& d);
///@}

}  // namespace tally
