// A prior's window extended from its family where an observation falls in the tail that truncation cut, so that
// such an observation gets its exact log-likelihood instead of -inf.
#include <algorithm>
#include <cmath>

#include "node.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {

namespace {

/// The values of the parent X that an observation y of its child (law) needs inside X's window: the thinning's
/// y <= x, the affine map's x = (y - c) / a, a Poisson(a x)'s likelihood peak x = y / a. Nothing for bounded
/// children (a Markov step or an indexed Poisson reads states, which a truncated tail does not hold).
std::optional<std::pair<std::int64_t, std::int64_t>> needed_parent_values(const ChildLaw& law,
                                                                         const std::vector<std::int64_t>& y) {
  if (y.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(y.begin(), y.end());
  if (std::holds_alternative<Thinning>(law)) return std::pair{*lo, *hi};
  if (const auto* p = std::get_if<ScaledPoisson>(&law)) {
    if (!(p->scale > 0)) return std::nullopt;
    return std::pair{static_cast<std::int64_t>(std::floor(static_cast<double>(*lo) / p->scale)),
                     static_cast<std::int64_t>(std::ceil(static_cast<double>(*hi) / p->scale))};
  }
  if (const auto* f = std::get_if<AffineLaw>(&law)) {
    const double a = static_cast<double>(f->a);
    const double x0 = static_cast<double>(*lo - f->c) / a, x1 = static_cast<double>(*hi - f->c) / a;
    return std::pair{static_cast<std::int64_t>(std::floor(std::min(x0, x1))),
                     static_cast<std::int64_t>(std::ceil(std::max(x0, x1)))};
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::int64_t> observed_range(const Context& ctx, const Values& y) {
  if (!ctx.device()) {
    std::vector<std::int64_t> v = to_vector(y);
    if (v.empty()) return v;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    return {*lo, *hi};
  }
  // a device graph reads no values back for this: the largest known on the host, where it is
  if (const auto b = y.bound()) return {*b};
  return {};
}

std::optional<Pmf> widened_prior(const Node& root, std::int64_t lo, std::int64_t hi) {
  const auto* r = std::get_if<DiscreteRoot>(&root.kind);
  if (r == nullptr || !r->family || r->prior.error_bound() == 0.0) return std::nullopt;  // nothing was cut
  if (lo >= r->prior.lo() && hi <= r->prior.hi()) return std::nullopt;                   // inside: nothing to do
  // Tolerances 1e-30, 1e-60, ..., 1e-300 below the graph's: the first whose window holds [lo, hi] with a cut mass
  // far (1e-20) below the prior's mass at the far end of [lo, hi], so that the cut stays negligible against the
  // likelihood of what is observed there. The last one tried where none does (the observation may then still be
  // -inf, with the bound of the cut mass).
  std::optional<Pmf> out;
  Truncation t = root.context->truncation;
  for (int k = 1; k <= 10; ++k) {
    const double tolerance = std::pow(10.0, -30.0 * k);
    if (tolerance >= root.context->truncation.tolerance) continue;
    t.tolerance = tolerance;
    try {
      out = r->family(t);
    } catch (const overflow_error&) {  // a window past max_size: the widest that fitted stays
      break;
    }
    if (out->lo() > lo || out->hi() < hi) continue;
    const double far = std::min(log_pdf(*out, lo), log_pdf(*out, hi));
    if (std::log(tolerance) < far - 46.0) break;  // e^-46 ~ 1e-20
  }
  return out;
}

std::optional<Pmf> widened_prior_for_child(const Node& root, const ChildLaw& law, const Values& y) {
  const auto* r = std::get_if<DiscreteRoot>(&root.kind);
  if (r == nullptr || !r->family || r->prior.error_bound() == 0.0) return std::nullopt;
  const auto need = needed_parent_values(law, observed_range(*root.context, y));
  if (!need || (need->first >= r->prior.lo() && need->second <= r->prior.hi())) return std::nullopt;
  // a margin beyond the needed values, so that the posterior's own tail past them stays inside the window
  const std::int64_t margin = std::max<std::int64_t>(64, r->prior.hi() - r->prior.lo());
  return widened_prior(root, std::min(need->first, r->prior.lo()), std::max(need->second, r->prior.lo()) + margin);
}

}  // namespace tally::runtime::detail
