// The joint law of k coupled integer random variables: a dense k-dimensional table with one log scale.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// A point (x_0, ..., x_{k-1}) of a joint law, one coordinate per axis; also used for lower bounds and shapes.
using Coordinates = std::vector<std::int64_t>;

/// A measure over the box \f$\prod_a [lo_a, hi_a]\f$ of \f$\mathbb{Z}^k\f$, stored densely:
/// \f[ \mu(x_0, \dots, x_{k-1}) = w_{\iota(x)} \, e^{s}, \qquad
///     \iota(x) = \sum_a (x_a - lo_a)\, \mathrm{stride}_a, \f]
/// row-major (the last axis varies fastest). As for Pmf, the weights are finite and non-negative with largest 1
/// (the constructor rescales), the log scale s is finite, weights below flush_fraction of the largest are flushed
/// and their mass is added to the error bound, and the box is trimmed to the smallest one that holds every
/// positive weight (so lo(a) and hi(a) are the extreme values of axis a with positive mass). Entries inside the
/// box may be zero (a deterministic coordinate such as X_0 + X_1 makes most of them zero).
///
/// error_bound() is e with \f$\|\mu - \mu_{exact}\|_1 \le e \, \|\mu\|_1\f$, as for Pmf: truncated and flushed mass
/// carried through every operation, rounding not counted. It has two parts:
/// - the *dropped measure* \f$\hat\delta \ge 0\f$ (dropped(), absent when none): the mass that truncate() cut from
///   the table, kept where it was and carried through every later operation exactly as the table is (it is a
///   measure of the same kind, in the same units). It is the part of the error whose place is known, so that a
///   later observation weighs it by its own likelihood \f$\langle \hat\delta, l \rangle\f$ instead of the largest
///   likelihood times its mass;
/// - the *spread bound* s (spread_error_bound()), for the rest: \f$\mu_{exact} = \mu + \hat\delta + r\f$ with
///   \f$\|r\|_1 \le s \|\mu\|_1\f$, r of unknown place and sign (flushed entries, the bounds of the Pmfs a law was
///   built from, the dropped measure's own truncation).
/// error_bound() = s + \f$\|\hat\delta\|_1 / \|\mu\|_1\f$. For conditioned laws the exact measure is meant up to a
/// constant factor (see JointConditioned).
///
/// Invariants, checked at construction: rank k >= 1; every extent >= 1; the number of entries is the product of
/// the extents; hi_a = lo_a + extent_a - 1 fits in int64; weights finite, non-negative, not all zero.
class JointPmf {
 public:
  /// Builds \f$\mu(x) = weights_{\iota(x)} e^{log\_scale}\f$ over the box with lower corner `lo` and extents
  /// `shape`. Throws shape_error (rank 0, lo and shape of different ranks, an extent < 1, a weight count that is
  /// not the product of the extents, all weights zero), domain_error (NaN, negative or infinite weights, a
  /// non-finite log scale, a negative or NaN error bound), overflow_error (some hi_a leaves int64, or the product
  /// of the extents does).
  JointPmf(Coordinates lo, Coordinates shape, Eigen::VectorXd weights, double log_scale = 0.0,
           double error_bound = no_error);

  /// Builds \f$\mu(x) = e^{log\_weights_{\iota(x)}}\f$; entries may be -inf (zero mass), never +inf or NaN.
  static JointPmf from_log(Coordinates lo, Coordinates shape, const Eigen::VectorXd& log_weights,
                           double error_bound = no_error);

  /// k, the number of coordinates (axes).
  int rank() const { return static_cast<int>(lo_.size()); }
  /// The box's lower corner: lo_a for each axis a.
  const Coordinates& lo() const { return lo_; }
  /// The box's extents, one per axis.
  const Coordinates& shape() const { return shape_; }
  /// lo_a: the smallest value of coordinate `axis` in the box.
  std::int64_t lo(int axis) const { return lo_[static_cast<std::size_t>(axis)]; }
  /// hi_a = lo_a + extent_a - 1: its largest value.
  std::int64_t hi(int axis) const { return lo(axis) + extent(axis) - 1; }
  /// extent_a: the number of values of coordinate `axis` in the box.
  std::int64_t extent(int axis) const { return shape_[static_cast<std::size_t>(axis)]; }
  /// Distance in the weight vector between neighbours along `axis`: the product of the later extents.
  std::int64_t stride(int axis) const;
  /// Number of stored entries (the product of the extents).
  Eigen::Index size() const { return weights_.size(); }
  /// Stored weights in row-major order, largest equal to 1.
  const Eigen::VectorXd& weights() const { return weights_; }
  /// The log scale: the measure is weights() times e^log_scale().
  double log_scale() const { return log_scale_; }
  /// The whole bound: the spread bound plus the dropped measure's mass relative to this law's mass.
  double error_bound() const { return error_bound_ + dropped_ratio_; }
  /// The part of the bound whose place is unknown (s above).
  double spread_error_bound() const { return error_bound_; }
  /// The dropped measure \f$\hat\delta\f$ (a measure in the same units as this law: its own log scale), or nullptr.
  const JointPmf* dropped() const { return dropped_.get(); }

  /// \f$\log \sum_x \mu(x)\f$.
  double log_mass() const;
  /// The same measure divided by its mass; the relative error bound is unchanged.
  JointPmf normalized() const;
  /// A copy whose error bound is `bound` (>= 0, else domain_error), all of it spread (no dropped measure).
  JointPmf with_error_bound(double bound) const;
  /// A copy with spread bound `bound` (>= 0, else domain_error) and the same dropped measure.
  JointPmf with_spread_error_bound(double bound) const;
  /// A copy carrying `dropped` (a measure in this law's units, or nothing) as its dropped measure, in place of any
  /// it had; the dropped measure's own bound (relative to its mass) is moved into the spread bound, and its own
  /// dropped measure (if any) is merged into it.
  JointPmf with_dropped(const std::optional<JointPmf>& dropped) const;

 private:
  void canonicalize();
  /// Whether both end slabs of every axis hold a positive weight (then the box is the smallest one).
  bool ends_hold_mass() const;

  Coordinates lo_, shape_;
  Eigen::VectorXd weights_;
  double log_scale_;
  double error_bound_;                       // the spread bound
  std::shared_ptr<const JointPmf> dropped_;  // the dropped measure (never itself carrying one), or null
  double dropped_ratio_ = 0.0;               // its mass over this law's mass
};

/// The sum of two measures over the integers of the same rank (the box that holds both); a and b must have the
/// same rank (shape_error). The bounds add (relative to the sum's mass). For the dropped measures.
JointPmf add_measures(const JointPmf& a, const JointPmf& b);

/// The joint law of one variable (k = 1): the same measure, error bound and log scale as x.
JointPmf joint(const Pmf& x);

/// The joint law of independent X_0 ~ m_0, ..., X_{k-1} ~ m_{k-1}: the outer product
/// \f$\mu(x) = \prod_a \mu_a(x_a)\f$, log scales added. Error bound: \f$\prod_a (1 + e_a) - 1\f$ (each factor's
/// L1 error is scaled by the others' masses). shape_error for no marginals; overflow_error when the table would
/// have more than t.max_size entries (the message names the size).
JointPmf independent(const std::vector<Pmf>& marginals, const Truncation& t = {});

/// \f$\log \mu(x)\f$, -inf outside the box or at a zero entry. shape_error when x has not rank() coordinates.
double log_pdf(const JointPmf& d, std::span<const std::int64_t> x);
/// \f$\mu(x)\f$; underflows to zero below about 1e-308 (log_pdf does not).
double pdf(const JointPmf& d, std::span<const std::int64_t> x);

/// The law of X_axis: \f$\mu_a(v) = \sum_{x : x_a = v} \mu(x)\f$, as a Pmf with the same log scale and error bound
/// (summing a measure does not increase its relative L1 error). shape_error when axis is not in [0, rank).
Pmf marginal(const JointPmf& d, int axis);

/// The joint law of the other coordinates (axis summed out; the later axes move down by one). Needs rank >= 2
/// (shape_error otherwise: use marginal() for the last one). Error bound unchanged.
JointPmf marginalize_out(const JointPmf& d, int axis);

/// The measure of the other coordinates at X_axis = v: \f$\nu(x_{-a}) = \mu(x_{-a}, x_a = v)\f$, unnormalized (its
/// mass is P(X_axis = v) under the stored law). Needs rank >= 2 and v with positive mass (shape_error). Error bound:
/// e M / M_v, with M the mass of d and M_v that of the slice (all the dropped mass may lie on this slice).
JointPmf slice(const JointPmf& d, int axis, std::int64_t v);

/// Drops, along each axis, the outer values whose marginal mass is small: at most tolerance / (2 k) of the
/// mass from each end of each axis (so at most `tolerance` in all), adding the dropped mass to the error bound
/// (relative to the kept mass). For an axis that grew long by conditioning or by a Poisson child. With
/// t.track_dropped (the default) the cut entries join the dropped measure where they were (its own far tails, below
/// 2^-64 of its mass or 2^-40 t.tolerance of the law's, go to the spread bound); without, their mass joins the
/// spread bound. Needs tolerance in [0, 1) (domain_error).
JointPmf truncate(const JointPmf& d, const Truncation& t);

}  // namespace tally
