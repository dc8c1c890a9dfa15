// Children of coordinates of a joint law: laws with one parent coordinate, and laws whose parameter is selected
// or scaled by another coordinate (Binomial(X, q_S), Poisson(a R_S)); adding such a child as a new axis.
#pragma once

#include <Eigen/Core>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/joint_pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// Y | X ~ Binomial(X_count, q_{X_state}): a thinning whose keep probability is selected by a state coordinate
/// (each q in [0, 1], else domain_error). Needs X_count >= 0 and 0 <= X_state < keep.size() on the joint's box.
struct SelectedThinning {
  /// The thinned count's axis, the selecting state's axis and the keep probabilities q_0, ... (shape_error when there
  /// is none, domain_error outside [0, 1]).
  SelectedThinning(int count_axis, int state_axis, Eigen::VectorXd keep);
  /// The axes of X_count (the count thinned) and X_state (the state that selects q).
  ///@{
  int count_axis, state_axis;
  ///@}
  /// q_s, the keep probability in state s.
  Eigen::VectorXd keep;
};

/// Y | X ~ Poisson(a X_{r_s}) with s = X_state and r = rate_axes: emissions whose rate is the count coordinate
/// selected by a state coordinate, scaled by a >= 0 (finite, else domain_error), e.g. an HMM whose emission rates
/// R_0, ..., R_{K-1} are unknown counts. Needs 0 <= X_state < rate_axes.size() and every rate axis >= 0 on the box.
struct SelectedScaledPoisson {
  /// The selecting state's axis, the rate counts' axes r_0, ... and a (shape_error without a rate axis, domain_error
  /// unless a is finite and >= 0).
  SelectedScaledPoisson(int state_axis, std::vector<int> rate_axes, double scale);
  /// The axis of X_state, which selects the rate.
  int state_axis;
  /// r_s: the axis of the count that is the rate in state s.
  std::vector<int> rate_axes;
  /// a, the factor of the selected rate.
  double scale;
};

/// The law of (X, Y) for a child Y of X_axis (or of the coordinates a selected law names), appended as axis k:
/// \f[ \mu'(x, y) = \mu(x)\, P(Y = y \mid x). \f]
/// Each entry is formed in logs (Loader's log-pmfs, a few ulps), so entries far below 1e-300 keep full relative
/// precision. Bounded children (Thinning, MarkovStep, SelectedThinning) keep every value y: error bound unchanged.
/// Poisson children (ScaledPoisson, IndexedPoisson, SelectedScaledPoisson) keep y in [y_lo, y_hi], where the
/// smallest and largest rates over the box's positive entries put at most tol/2 each beyond the cuts (Poisson
/// tails are monotone in the rate): error bound \f$e + \frac{tol}{1 - tol}(1 + e)\f$.
/// Throws domain_error for a parent outside the law's domain (a negative count, a state out of range),
/// shape_error for a bad axis, overflow_error (naming the size) when the table would exceed t.max_size entries.
///@{
JointPmf add_child(const JointPmf& d, int axis, const Thinning& k, const Truncation& t = {});
JointPmf add_child(const JointPmf& d, int axis, const ScaledPoisson& k, const Truncation& t = {});
JointPmf add_child(const JointPmf& d, int axis, const IndexedPoisson& k, const Truncation& t = {});
JointPmf add_child(const JointPmf& d, int axis, const MarkovStep& k, const Truncation& t = {});
JointPmf add_child(const JointPmf& d, const SelectedThinning& k, const Truncation& t = {});
JointPmf add_child(const JointPmf& d, const SelectedScaledPoisson& k, const Truncation& t = {});
///@}

}  // namespace tally
