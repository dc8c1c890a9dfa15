// What truncation dropped from the laws that enter joint laws: the tails of a family's prior, followed through
// the observations of its children, so that a joint law carries them as its dropped measure (tally::JointPmf).
#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <variant>

#include "steps.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "infinities.hpp"

namespace tally::runtime::detail {

namespace joint_steps {

/// A rank-1 joint law of pmf with its known tails (particle i's): the dropped measure and the spread bound.
JointPmf with_tails(const JointPmf& j, const DroppedTails* tails, std::size_t i) {
  if (tails == nullptr) return j;
  const auto& x = tails->dropped(i);
  return j.with_error_bound(tails->spread(i)).with_dropped(x ? std::optional(joint(*x)) : std::nullopt);
}
/// Whether particle i's tails equal particle i - 1's (nullptr: none known, equal).
bool same_tails(const DroppedTails* tails, std::size_t i, std::size_t j) {
  if (tails == nullptr || tails->entry(i) == tails->entry(j)) return true;
  const auto &a = tails->dropped(i), &b = tails->dropped(j);
  return tails->spread(i) == tails->spread(j) && a.has_value() == b.has_value() && (!a || equal(*a, *b));
}

bool shares(const DroppedTails& tails, std::size_t i) {
  return tails.entry(i) == tails.entry(i - 1) || (equal(tails.law(i), tails.law(i - 1)) && same_tails(&tails, i));
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

/// A dropped measure x conditioned on its child Y = y, for bounds only: as condition_pmf, but a thinning's
/// likelihood along x's support by the ratio \f$p(y \mid n) / p(y \mid n - 1) = n (1 - q) / (n - y)\f$ (n > y),
/// re-anchored on log_binomial_pmf every 32 entries: one log per entry instead of two in extended precision, and a
/// relative error near 1e-14 at most, which a bound does not notice.
Conditioned condition_dropped(const Pmf& x, const ChildLaw& law, std::int64_t y) {
  const auto* t = std::get_if<Thinning>(&law);
  if (t == nullptr || !(t->keep > 0.0 && t->keep < 1.0) || y < 0) return condition_pmf(x, law, y);
  constexpr int anchor_every = 32;
  const double q = t->keep, log_r = std::log1p(-q);
  const Eigen::VectorXd& w = x.weights();
  Eigen::VectorXd ll(x.size());
  double l = 0.0, top = neg_inf;
  int since_anchor = anchor_every;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const std::int64_t n = x.lo() + i;
    if (n < y) {
      ll[i] = neg_inf;
      continue;
    }
    if (since_anchor == anchor_every) {
      l = log_binomial_pmf(n, y, q);
      since_anchor = 0;
    } else {
      l += std::log(static_cast<double>(n) / static_cast<double>(n - y)) + log_r;  // n > y: the previous n >= y
      ++since_anchor;
    }
    ll[i] = l;
    if (w[i] > 0.0) top = std::max(top, l);
  }
  if (top == neg_inf) return {std::nullopt, neg_inf, 0.0};
  Eigen::VectorXd v(x.size());
  for (Eigen::Index i = 0; i < x.size(); ++i) v[i] = w[i] > 0.0 ? w[i] * std::exp(ll[i] - top) : 0.0;
  const double log_l = x.log_scale() + top + std::log(v.sum());
  return {Pmf(x.lo(), std::move(v)).normalized(), log_l, 0.0};
}

/// The tails a prior of a family dropped: the family under a tolerance 2^-40 times finer, outside the prior's range
/// (its entries inside are the prior's own exact probabilities), and what that one dropped in turn (spread).
/// Nothing (unknown) where the family cannot say.
std::optional<PriorTails> prior_tails(const Pmf& prior, const std::function<Pmf(const Truncation&)>& family,
                                      const Truncation& t) {
  if (prior.error_bound() == 0.0) return PriorTails{};
  Truncation fine = t;
  fine.tolerance = t.tolerance * 0x1p-40;
  std::optional<Pmf> f;
  try {
    f = family(fine);
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
  if (!(w.maxCoeff() > 0.0)) return PriorTails{std::nullopt, rest};
  const Pmf tails(f->lo(), std::move(w), f->log_scale());
  rest += tails.error_bound() * std::exp(tails.log_mass() - prior.log_mass());
  return PriorTails{tails.with_error_bound(0.0), rest};
}

}  // namespace

bool may_know_tails(const Node& n) {
  if (!enabled(*n.context) || !n.context->truncation.track_dropped) return false;
  if (n.tails) return true;
  const auto* r = std::get_if<DiscreteRoot>(&n.kind);
  return r != nullptr && r->family && r->prior.error_bound() > 0.0;
}

namespace {
template <class Pmfs>
Tails later_tails_of(Node& n, const Pmfs& laws) {
  if (!enabled(*n.context) || !n.context->truncation.track_dropped || laws.size() == 0) return nullptr;
  if (n.tails && n.tails->belong_to(laws)) return n.tails;
  const auto* r = std::get_if<DiscreteRoot>(&n.kind);
  if (r == nullptr || !r->family) return nullptr;
  for (std::size_t i = 0; i < (uniform(laws) ? 1 : laws.size()); ++i)
    // no longer the prior (conditioned where its tails were not followed)
    if (!equal(laws[i], r->prior)) return nullptr;
  // the prior's tails, computed once for the roots of one kept prior (PriorTailsOnce), and only when read
  auto prior = Batch<Pmf>::uniform(laws.size(), r->prior);
  n.tails = LaterTails::later(prior, 1, [r = *r, t = n.context->truncation](const Batch<Pmf>&)
                                            -> LaterTails::Result {
    std::optional<PriorTails> known;
    if (!r.tails) {
      known = prior_tails(r.prior, r.family, t);
    } else {
      if (!r.tails->computed) {
        r.tails->known = prior_tails(r.prior, r.family, t);
        r.tails->computed = true;
      }
      known = r.tails->known;
    }
    if (!known) return {};
    auto out = std::make_shared<DroppedTails>();
    using Entry = DroppedTails::Entry;
    out->of.assign(1, std::make_shared<const Entry>(Entry{r.prior, known->dropped, known->spread}));
    return {out, std::nullopt};
  });
  return n.tails;
}
}  // namespace

Tails later_tails(Node& n, const std::vector<Pmf>& laws) { return later_tails_of(n, laws); }
Tails later_tails(Node& n, const Batch<Pmf>& laws) { return later_tails_of(n, laws); }
std::shared_ptr<const DroppedTails> known_tails(Node& n, const std::vector<Pmf>& laws) {
  const auto t = later_tails_of(n, laws);
  return t ? t->tails() : nullptr;
}
std::shared_ptr<const DroppedTails> known_tails(Node& n, const Batch<Pmf>& laws) {
  const auto t = later_tails_of(n, laws);
  return t ? t->tails() : nullptr;
}

namespace {

/// condition_tails's work: n's posteriors and their tails, from the tails before; the observation's error bound.
LaterTails::Result follow_tails(const DroppedTails& known, const Batch<Pmf>& posterior, const ChildLaw& law,
                                const std::vector<std::int64_t>& v, const std::vector<double>& log_likelihood) {
  const DroppedTails* tails = &known;
  double error = 0.0;  // the observation's: located + sup(l) spread, relative to L (as for joint laws)
  auto out = std::make_shared<DroppedTails>();
  out->of.resize(posterior.size());
  for (std::size_t i = 0; i < posterior.size(); ++i) {
    if (i > 0 && shares(*tails, i) && v[i] == v[i - 1]) {
      out->of[i] = out->of[i - 1];
      continue;
    }
    DroppedTails::Entry e{posterior[i], std::nullopt, 0.0};
    // the stored posterior is prior l / L; the exact one, up to the same constant, (prior + dropped + r) l / L
    const double log_l = log_likelihood[i];
    if (!std::isfinite(log_l)) return {};  // impossible: nothing to weigh
    const double spread = likelihood_sup(law, v[i]) * tails->spread(i) * std::exp(tails->law(i).log_mass() - log_l);
    e.spread = spread + static_cast<double>(posterior[i].size()) * flush_fraction;  // entries it flushed
    double located = 0.0;
    if (const auto& x = tails->dropped(i)) {
      const Conditioned cx = condition_dropped(*x, law, v[i]);
      if (cx.posterior) {
        located = std::exp(cx.log_likelihood - log_l);
        e.dropped = Pmf(cx.posterior->lo(), cx.posterior->weights(),
                        cx.posterior->log_scale() + cx.log_likelihood - log_l + posterior[i].log_mass());
      }
    }
    out->of[i] = std::make_shared<const DroppedTails::Entry>(std::move(e));
    const double rho = located + spread;
    error = std::max(error, rho < 1.0 ? -std::log1p(-rho) : std::numeric_limits<double>::infinity());
  }
  return {out, error};
}

}  // namespace

Bound condition_tails(Node& n, const Tails& tails, const ChildLaw& law, const Values& y,
                      std::vector<double> log_likelihood, const Bound& before, const Bound& ordinary) {
  n.tails.reset();
  if (!tails || !on_host(n.marginal)) return ordinary;
  if (log_likelihood.size() != tails->laws().size()) return ordinary;
  n.tails = LaterTails::later(n.marginal.host, tails->depth() + 1,
                              [tails, law, v = to_vector(y), ll = std::move(log_likelihood)](
                                  const Batch<Pmf>& posterior) {
                                const auto before_tails = tails->tails();
                                if (!before_tails) return LaterTails::Result{};  // nothing followed before
                                return follow_tails(*before_tails, posterior, law, v, ll);
                              });
  // the observation's bound: from the tails where they follow (read with them), else the ordinary one
  const auto error = [t = n.tails, before, ordinary] {
    const auto e = t->read().error;
    return e ? std::max(before.value(), *e) : ordinary.value();
  };
  if (!n.tails->depth()) return Bound(error());
  return Bound::later(before.floor(), error, std::max({before.depth(), ordinary.depth(), n.tails->depth()}) + 1);
}

}  // namespace tally::runtime::detail
