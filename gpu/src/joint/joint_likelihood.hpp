// Private: the log-likelihood of one entry of a joint law under an observation (a child of a coordinate, a selected
// Poisson emission, a linear combination), shared by the CPU reference and the CUDA kernel of joint conditioning.
#pragma once

#include <math.h>

#include <cstdint>

#include "child_math.hpp"
#include "joint_math.hpp"

namespace tally::gpu::detail {

/// What joint conditioning observes: v ~ child(X_axis), v ~ Poisson(a X_{r_s}), or v = c + kappa . X.
struct JointLikelihood {
  enum class Kind { child, selected_poisson, linear };
  Kind kind = Kind::linear;
  int axis = 0;
  ChildView child{};
  SelectedPoisson selected{};
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
    case JointLikelihood::Kind::linear: return linear_value(l.linear, b, e) == v ? 0.0 : -INFINITY;
  }
  return -INFINITY;
}

}  // namespace tally::gpu::detail
