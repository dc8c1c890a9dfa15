// Private: the log-likelihood of one entry of a joint law under an observation (a child of a coordinate, a selected
// Poisson emission or thinning, a linear combination), shared by the CPU reference and the CUDA kernel of joint
// conditioning.
#pragma once

#include <math.h>

#include <cstdint>

#include "child_math.hpp"
#include "joint_math.hpp"

namespace tally::gpu::detail {

/// \f$\log \mathrm{Binomial}(v;\, x_c, q_{x_s})\f$: a thinning of the count coordinate c whose keep probability is
/// selected by the state coordinate s among `states` (keep: where the laws are).
struct SelectedThinningView {
  int state_axis, count_axis;
  const double* keep;
  std::int64_t states;
};

/// What joint conditioning observes: v ~ child(X_axis), v ~ Poisson(a X_{r_s}), v ~ Binomial(X_c, q_{X_s}), or
/// v = c + kappa . X.
struct JointLikelihood {
  enum class Kind { child, selected_poisson, selected_thinning, linear };
  Kind kind = Kind::linear;
  int axis = 0;
  ChildView child{};
  SelectedPoisson selected{};
  SelectedThinningView thinning{};
  JointLinear linear{};
};

/// \f$\log p(v \mid x)\f$ at entry e of the box (-inf where impossible).
TALLY_HOST_DEVICE inline double joint_log_likelihood(const JointLikelihood& l, const JointBox& b, std::int64_t e,
                                                     std::int64_t v) {
  switch (l.kind) {
    case JointLikelihood::Kind::child: return child_log_mass(l.child, joint_coordinate(b, e, l.axis), v);
    case JointLikelihood::Kind::selected_poisson: {
      const std::int64_t s = joint_coordinate(b, e, l.selected.state_axis);
      if (s < 0 || s >= l.selected.rates) return -INFINITY;
      const std::int64_t rate = joint_coordinate(b, e, l.selected.rate_axes[s]);
      return poisson_log_mass(v, l.selected.scale * static_cast<double>(rate));
    }
    case JointLikelihood::Kind::selected_thinning: {
      const std::int64_t s = joint_coordinate(b, e, l.thinning.state_axis);
      if (s < 0 || s >= l.thinning.states) return -INFINITY;
      return binomial_log_mass(joint_coordinate(b, e, l.thinning.count_axis), v, l.thinning.keep[s]);
    }
    case JointLikelihood::Kind::linear: return linear_value(l.linear, b, e) == v ? 0.0 : -INFINITY;
  }
  return -INFINITY;
}

}  // namespace tally::gpu::detail
