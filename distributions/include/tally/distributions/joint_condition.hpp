// Conditioning joint laws on observed children and on observed linear combinations (sums, differences, values)
// of their coordinates, with the log-likelihood; sampling a coordinate or the whole tuple.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/joint_child_laws.hpp"
#include "tally/distributions/joint_pmf.hpp"
#include "tally/distributions/sample.hpp"

namespace tally {

/// The result of conditioning a joint law, with the conventions of Conditioned (condition.hpp):
/// - posterior: the normalized joint law given the observation (same axes as the prior), or std::nullopt when the
///   observation has probability zero under the stored law (not an exception);
/// - log_likelihood: log P(observation) under the stored law (its log scale included), -inf when impossible;
/// - log_likelihood_error: a bound on |log P_exact - log_likelihood| due to the prior's error bound e: with
///   \f$\rho = e M / L\f$ (M the prior's mass, L the likelihood), \f$-\log(1 - \rho)\f$, or +inf when
///   \f$\rho \ge 1\f$; an impossible observation has 0 when e = 0, else +inf. The posterior's error bound is
///   \f$\min(2, 2\rho)\f$. These hold because every likelihood here is at most 1 for each prior point.
///
/// With a dropped measure \f$\hat\delta\f$ (JointPmf), the likelihood's error splits in two: located_error =
/// \f$\langle \hat\delta, l \rangle / L\f$ (the dropped measure conditioned by the same likelihood, which becomes
/// the posterior's dropped measure) and spread_error = \f$s M / L\f$ (s the spread bound; a bound because l <= 1);
/// \f$\rho\f$ above is their sum. A caller that knows \f$\sup l < 1\f$ may use located_error + sup(l) spread_error
/// instead (the runtime does). The posterior's spread bound is then
/// \f$\min(2, (\rho (1 + \rho) + s M / L) / (1 - \rho))\f$ (the normalizing constant's error included), or
/// min(2, 2 rho) without a dropped measure.
struct JointConditioned {
  /// The normalized joint posterior; std::nullopt when the observation is impossible.
  std::optional<JointPmf> posterior;
  /// log P(observation) under the stored law; -inf when impossible.
  double log_likelihood;
  /// Bound on |log P_exact - log_likelihood| (above).
  double log_likelihood_error;
  /// \f$\langle \hat\delta, l \rangle / L\f$: the dropped measure's part of the likelihood's error.
  double located_error = 0.0;
  /// s M / L: the spread bound's part.
  double spread_error = 0.0;
};

/// X given an observed child Y = y: \f$\pi(x) \propto \mu(x)\, P(Y = y \mid x)\f$, and
/// \f$L = \sum_x \mu(x) P(Y = y \mid x)\f$. The products are formed in logs (Loader's log-pmfs), so every posterior
/// entry keeps full relative precision. Parents outside the law's domain: domain_error, as for add_child.
///@{
JointConditioned condition(const JointPmf& d, int axis, const Thinning& k, std::int64_t y);
JointConditioned condition(const JointPmf& d, int axis, const ScaledPoisson& k, std::int64_t y);
JointConditioned condition(const JointPmf& d, int axis, const IndexedPoisson& k, std::int64_t y);
JointConditioned condition(const JointPmf& d, int axis, const MarkovStep& k, std::int64_t y);
JointConditioned condition(const JointPmf& d, const SelectedThinning& k, std::int64_t y);
JointConditioned condition(const JointPmf& d, const SelectedScaledPoisson& k, std::int64_t y);
///@}

/// X given \f$\sum_a \kappa_a X_a = z\f$: the entries on that hyperplane, \f$L = \sum_{\kappa \cdot x = z} \mu(x)\f$.
/// Computed in 128 bits (no overflow). shape_error when coefficients has not rank() entries.
JointConditioned condition_on_linear(const JointPmf& d, const Coordinates& coefficients, std::int64_t z);

/// X given \f$\sum_{a \in axes} X_a = z\f$ (an axis listed twice counts twice). shape_error for a bad axis.
JointConditioned condition_on_sum(const JointPmf& d, const std::vector<int>& axes, std::int64_t z);

/// X given X_a - X_b = v.
JointConditioned condition_on_difference(const JointPmf& d, int a, int b, std::int64_t v);

/// X given X_axis = v (the other coordinates' posterior is slice(d, axis, v) normalized; the axis is kept).
JointConditioned condition_on_value(const JointPmf& d, int axis, std::int64_t v);

/// One draw of the whole tuple by inverse cdf over the row-major table with one uniform of rng (the same search
/// as sample(const Pmf&, ...), so a rank-1 joint draws what its Pmf draws). Never a point of zero mass.
Coordinates sample(const JointPmf& d, RandomStream& rng);

/// A coordinate drawn from its marginal, and the law of the others given it.
struct CoordinateDraw {
  /// The coordinate drawn.
  std::int64_t value;
  /// slice(d, axis, value) normalized (axis removed); std::nullopt for a rank-1 joint.
  std::optional<JointPmf> rest;
};

/// Draws X_axis ~ marginal(d, axis) with one uniform of rng, then conditions the other coordinates on it.
CoordinateDraw sample_coordinate(const JointPmf& d, int axis, RandomStream& rng);

}  // namespace tally
