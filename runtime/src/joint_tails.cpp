// What truncation dropped from the laws that enter joint laws: the tails of a family's prior, followed through
// the observations of its children, so that a joint law carries them as its dropped measure (tally::JointPmf).
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <variant>

#include "joint_steps.hpp"
#include "tally/distributions/condition.hpp"

namespace tally::runtime::detail {

namespace joint_steps {

/// A rank-1 joint law of pmf with its known tails (particle i's): the dropped measure and the spread bound.
JointPmf with_tails(const JointPmf& j, const DroppedTails* tails, std::size_t i) {
  if (tails == nullptr) return j;
  const auto& x = tails->dropped[i];
  return j.with_error_bound(tails->spread[i]).with_dropped(x ? std::optional(joint(*x)) : std::nullopt);
}
/// Whether particle i's tails equal particle i - 1's (nullptr: none known, equal).
bool same_tails(const DroppedTails* tails, std::size_t i) {
  if (tails == nullptr) return true;
  const auto &a = tails->dropped[i], &b = tails->dropped[i - 1];
  return tails->spread[i] == tails->spread[i - 1] && a.has_value() == b.has_value() && (!a || equal(*a, *b));
}

}  // namespace joint_steps

using namespace joint_steps;

namespace {

/// A Pmf conditioned on its child Y = y (the ordinary path's conditioning).
Conditioned condition_pmf(const Pmf& x, const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const AffineLaw& k) { return condition_affine(x, k.a, k.c, y); },
                               [&](const auto& k) { return condition(x, k, y); }},
                    law);
}

/// The tails a prior of a family dropped: the family under a tolerance 2^-40 times finer, outside the prior's range
/// (its entries inside are the prior's own exact probabilities), and what that one dropped in turn (spread).
/// Nothing (unknown) where the family cannot say.
std::optional<std::pair<std::optional<Pmf>, double>> prior_tails(const DiscreteRoot& r, const Truncation& t) {
  const Pmf& prior = r.prior;
  if (prior.error_bound() == 0.0) return std::pair<std::optional<Pmf>, double>{std::nullopt, 0.0};
  Truncation fine = t;
  fine.tolerance = t.tolerance * 0x1p-40;
  std::optional<Pmf> f;
  try {
    f = r.family(fine);
  } catch (const std::exception&) {  // too large, or no finer law: the bound stays as it was
    return std::nullopt;
  }
  if (f->lo() > prior.lo() || f->hi() < prior.hi()) return std::nullopt;
  Eigen::VectorXd w = f->weights();
  const double to_prior = std::exp(f->log_scale() - prior.log_mass());  // f's weights in units of prior's mass
  double rest = f->error_bound() * std::exp(f->log_mass() - prior.log_mass());
  for (std::int64_t k = prior.lo(); k <= prior.hi(); ++k) {
    double& v = w[static_cast<Eigen::Index>(k - f->lo())];
    if (prior.weights()[static_cast<Eigen::Index>(k - prior.lo())] == 0.0) rest += v * to_prior;  // flushed there
    v = 0.0;
  }
  if (!(w.maxCoeff() > 0.0)) return std::pair<std::optional<Pmf>, double>{std::nullopt, rest};
  const Pmf tails(f->lo(), std::move(w), f->log_scale());
  rest += tails.error_bound() * std::exp(tails.log_mass() - prior.log_mass());
  return std::pair<std::optional<Pmf>, double>{tails.with_error_bound(0.0), rest};
}

}  // namespace

bool may_know_tails(const Node& n) {
  if (!enabled(*n.context) || !n.context->truncation.track_dropped) return false;
  if (n.tails) return true;
  const auto* r = std::get_if<DiscreteRoot>(&n.kind);
  return r != nullptr && r->family && r->prior.error_bound() > 0.0;
}

std::shared_ptr<const DroppedTails> known_tails(Node& n, const std::vector<Pmf>& laws) {
  if (!enabled(*n.context) || !n.context->truncation.track_dropped || laws.empty()) return nullptr;
  const auto matches = [&](const std::vector<Pmf>& known) {
    if (known.size() != laws.size()) return false;
    for (std::size_t i = 0; i < laws.size(); ++i)
      if (!equal(known[i], laws[i])) return false;
    return true;
  };
  if (n.tails && matches(n.tails->law)) return n.tails;
  const auto* r = std::get_if<DiscreteRoot>(&n.kind);
  if (r == nullptr || !r->family) return nullptr;
  for (const Pmf& p : laws)
    if (!equal(p, r->prior)) return nullptr;  // no longer the prior (conditioned where its tails were not followed)
  const auto t = prior_tails(*r, n.context->truncation);
  if (!t) return nullptr;
  auto out = std::make_shared<DroppedTails>();
  out->law = laws;
  out->dropped.assign(laws.size(), t->first);
  out->spread.assign(laws.size(), t->second);
  n.tails = out;
  return out;
}

namespace {

/// condition_tails's work: n's posteriors (now its marginal) and their tails, from the tails before.
std::optional<double> follow_tails(Node& n, const DroppedTails& known, const ChildLaw& law, const Values& y) {
  const DroppedTails* tails = &known;
  double error = 0.0;  // the observation's: located + sup(l) spread, relative to L (as for joint laws)
  const std::vector<Pmf> posterior = to_pmfs(n.marginal);
  const std::vector<std::int64_t> v = to_vector(y);
  auto out = std::make_shared<DroppedTails>();
  out->law = posterior;
  out->dropped.resize(posterior.size());
  out->spread.resize(posterior.size());
  for (std::size_t i = 0; i < posterior.size(); ++i) {
    if (i > 0 && equal(tails->law[i], tails->law[i - 1]) && same_tails(tails, i) && v[i] == v[i - 1]) {
      out->dropped[i] = out->dropped[i - 1];
      out->spread[i] = out->spread[i - 1];
      continue;
    }
    // the stored posterior is prior l / L; the exact one, up to the same constant, (prior + dropped + r) l / L
    const Conditioned c = condition_pmf(tails->law[i], law, v[i]);
    if (!c.posterior || !equal(*c.posterior, posterior[i])) return std::nullopt;  // impossible, or not this one
    const double log_l = c.log_likelihood;
    const double spread = likelihood_sup(law, v[i]) * tails->spread[i] * std::exp(tails->law[i].log_mass() - log_l);
    out->spread[i] = spread + static_cast<double>(posterior[i].size()) * flush_fraction;  // entries it flushed
    double located = 0.0;
    if (const auto& x = tails->dropped[i]) {
      const Conditioned cx = condition_pmf(*x, law, v[i]);
      if (cx.posterior) {
        located = std::exp(cx.log_likelihood - log_l);
        out->dropped[i] = Pmf(cx.posterior->lo(), cx.posterior->weights(),
                              cx.posterior->log_scale() + cx.log_likelihood - log_l + posterior[i].log_mass());
      }
    }
    const double rho = located + spread;
    error = std::max(error, rho < 1.0 ? -std::log1p(-rho) : std::numeric_limits<double>::infinity());
  }
  n.tails = std::move(out);
  return error;
}

}  // namespace

std::optional<double> condition_tails(Node& n, const std::shared_ptr<const DroppedTails>& tails, const ChildLaw& law,
                                      const Values& y) {
  n.tails.reset();
  if (!tails || n.marginal.device || n.marginal.parameters) return std::nullopt;
  try {
    return follow_tails(n, *tails, law, y);
  } catch (const std::exception&) {  // they cannot follow (a law too large, ...): n's bound stays the ordinary one
    n.tails.reset();
    return std::nullopt;
  }
}

}  // namespace tally::runtime::detail
