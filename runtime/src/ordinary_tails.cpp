// What truncation dropped, followed along the ordinary (marginalized) path: a child's law pushed from its parent's,
// a sum's convolution, so that an observation weighs the dropped mass by its own likelihood, not by the largest.
#include <algorithm>
#include <cmath>
#include <exception>

#include "joint/steps.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/child_laws.hpp"

namespace tally::runtime::detail {

using namespace joint_steps;

namespace {

/// The measure a + b (each with its own log scale).
Pmf added(const Pmf& a, const Pmf& b) {
  const std::int64_t lo = std::min(a.lo(), b.lo()), hi = std::max(a.hi(), b.hi());
  const double s = std::max(a.log_scale(), b.log_scale());
  Eigen::VectorXd w = Eigen::VectorXd::Zero(hi - lo + 1);
  w.segment(a.lo() - lo, a.size()) += a.weights() * std::exp(a.log_scale() - s);
  w.segment(b.lo() - lo, b.size()) += b.weights() * std::exp(b.log_scale() - s);
  return Pmf(lo, std::move(w), s);
}

/// ||d|| / ||law||, 0 for no d.
double relative_mass(const std::optional<Pmf>& d, const Pmf& law) {
  return d ? std::exp(d->log_mass() - law.log_mass()) : 0.0;
}

/// What rounding and flushing added to a result beyond its inputs' bounds (0 where nothing was).
double added_error(const Pmf& result, double inputs) { return std::max(0.0, result.error_bound() - inputs); }

}  // namespace

bool follows_tails(const Context& c) {
  // particles that hold equal laws share one entry of the tails (DroppedTails::of), so following them costs about
  // one more pass over each distinct law, whatever the population
  return !c.device() && enabled(c) && c.truncation.track_dropped;
}

Tails tails_or_spread(Node& n, const Batch<Pmf>& laws) {
  if (may_know_tails(n))
    if (auto known = later_tails(n, laws)) return known;
  return LaterTails::known(laws, {spread_tails(laws), std::nullopt});  // nothing located
}

namespace {
/// Tails for the laws `result`, particle by particle: an entry made by compute(i, entry) where repeats(i) is false
/// (always for particle 0), the previous particle's where it is true; nullptr where compute throws (tails too wide
/// to follow, a convolution past the CPU's work limit: the bound then stays the ordinary one).
template <class Repeats, class Compute>
std::shared_ptr<const DroppedTails> particle_tails(const Batch<Pmf>& result, Repeats repeats, Compute compute) {
  auto out = std::make_shared<DroppedTails>();
  out->of.resize(result.size());
  try {
    for (std::size_t i = 0; i < result.size(); ++i) {
      if (i > 0 && repeats(i)) {
        out->of[i] = out->of[i - 1];
      } else {
        DroppedTails::Entry e{result[i], std::nullopt, 0.0};
        compute(i, e.dropped, e.spread);
        out->of[i] = std::make_shared<const DroppedTails::Entry>(std::move(e));
      }
    }
  } catch (const std::exception&) {
    return nullptr;
  }
  return out;
}
}  // namespace

Tails pushed_tails(const Tails& in, const ChildLaw& law, const Batch<Pmf>& result) {
  // the kernels that keep mass and are tabulated exactly: the dropped measure is pushed through the same kernel
  if (!std::holds_alternative<Thinning>(law) && !std::holds_alternative<MarkovStep>(law)) return nullptr;
  if (!in || result.size() != in->laws().size()) return nullptr;
  return LaterTails::later(result, in->depth() + 1, [in, law](const Batch<Pmf>& laws) -> LaterTails::Result {
    const auto tails = in->tails_or_spread();
    const DroppedTails& x = *tails;
    return {particle_tails(
                laws, [&](std::size_t i) { return shares(x, i); },
                [&](std::size_t i, std::optional<Pmf>& dropped, double& spread) {
                  if (const auto& d = x.dropped(i))
                    dropped = std::visit(overloaded{[&](const Thinning& k) { return marginal(*d, k); },
                                                    [&](const MarkovStep& k) { return marginal(*d, k); },
                                                    [&](const auto&) -> Pmf { throw std::logic_error("unreachable"); }},
                                         law);
                  // a Markov kernel does not increase L1 distances: the spread stays, with what the push itself added
                  spread = x.spread(i) + added_error(laws[i], x.law(i).error_bound());
                }),
            std::nullopt};
  });
}

Tails summed_tails(const Tails& in_x, const Tails& in_y, int sign, const Batch<Pmf>& result) {
  if (!in_x || !in_y || result.size() != in_x->laws().size() || result.size() != in_y->laws().size()) return nullptr;
  const std::size_t depth = std::max(in_x->depth(), in_y->depth()) + 1;
  return LaterTails::later(result, depth, [in_x, in_y, sign](const Batch<Pmf>& laws) -> LaterTails::Result {
    const auto tx = in_x->tails_or_spread(), ty = in_y->tails_or_spread();
    const DroppedTails &x = *tx, &y = *ty;
    return {particle_tails(
                laws, [&](std::size_t i) { return shares(x, i) && shares(y, i); },
                [&](std::size_t i, std::optional<Pmf>& dropped, double& spread) {
                  // exact laws x + dx + r_x and y + dy + r_y: their convolution less x * y is dx * y + (x + dx) * dy
                  // (located) plus a spread (product_spread)
                  const Pmf& lx = x.law(i);
                  const Pmf ly = sign > 0 ? y.law(i) : negate(y.law(i));
                  const std::optional<Pmf>& dx = x.dropped(i);
                  const std::optional<Pmf> dy =
                      y.dropped(i) ? std::optional(sign > 0 ? *y.dropped(i) : negate(*y.dropped(i))) : std::nullopt;
                  if (dx) dropped = sum(*dx, ly);
                  if (dy) {
                    const Pmf more = sum(dx ? added(lx, *dx) : lx, *dy);
                    dropped = dropped ? added(*dropped, more) : more;
                  }
                  const double sx = x.spread(i), sy = y.spread(i);
                  const double ex = lx.error_bound(), ey = ly.error_bound();
                  spread = product_spread(sx, sy, relative_mass(dx, lx), relative_mass(dy, ly)) +
                           added_error(laws[i], ex + ey + ex * ey);
                }),
            std::nullopt};
  });
}

}  // namespace tally::runtime::detail
