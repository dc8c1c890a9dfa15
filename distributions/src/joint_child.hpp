// Private: a child law of a joint's coordinates as a log-likelihood over the box, shared by add_child and condition.
#pragma once

#include <cstdint>
#include <functional>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/joint_child_laws.hpp"
#include "tally/distributions/joint_pmf.hpp"

namespace tally::detail {

/// log P(Y = y | X = x) for x the coordinates' values (not indices). A bounded child takes values in
/// [y_lo, y_hi] only; a Poisson child has rate(x) and log_lik = log Poisson(y; rate(x)).
struct ChildLaw {
  bool poisson = false;
  std::int64_t y_lo = 0, y_hi = 0;                           // bounded children
  std::function<double(const Coordinates&)> rate;            // Poisson children
  std::function<double(const Coordinates&, std::int64_t)> log_lik;
};

/// Each checks that the law's parents lie in its domain on d's box (domain_error / shape_error naming `who`).
ChildLaw child_law(const JointPmf& d, int axis, const Thinning& k, const char* who);
ChildLaw child_law(const JointPmf& d, int axis, const ScaledPoisson& k, const char* who);
ChildLaw child_law(const JointPmf& d, int axis, const IndexedPoisson& k, const char* who);
ChildLaw child_law(const JointPmf& d, int axis, const MarkovStep& k, const char* who);
ChildLaw child_law(const JointPmf& d, const SelectedThinning& k, const char* who);
ChildLaw child_law(const JointPmf& d, const SelectedScaledPoisson& k, const char* who);

}  // namespace tally::detail
