// Reading, conditioning and realizing joint nodes: a member's marginal, a member drawn (the others conditioned on
// it), an observed child of members conditioning their joint law directly, and resampling the groups.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <variant>

#include "batches.hpp"
#include "steps.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {
namespace {

using namespace joint_steps;

JointConditioned condition_child(const JointPmf& d, int axis, const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const AffineLaw& f) {
                                 return condition_on_linear(d, unit(d.rank(), axis, f.a), y - f.c);
                               },
                               [&](const auto& k) { return condition(d, axis, k, y); }},
                    law);
}

JointConditioned condition_selected(const JointPmf& d, const SelectedChild& s, int state, const std::vector<int>& others,
                                    std::int64_t y) {
  if (s.family == SelectedChild::poisson) return condition(d, SelectedScaledPoisson(state, others, s.scale), y);
  return condition(d, SelectedThinning(others[0], state, s.keep), y);
}

/// The batch forms of observations: g's distinct tables (the runs' starts) conditioned as one batch by
/// condition(in) (condition_batch, selected_batch), the posteriors kept resident with the host's bounds
/// (conditioned() there: the spread part rho sup(l) where rho = e M / L < 1, else min(2, 2 rho) and an infinite
/// error; sup(i) the likelihood's largest value for particle i's observation), each particle's log L in loglik and
/// the largest error in error; rank: that of the widest table the batch forms. False, and nothing changed, where no
/// batch runs or it gives nothing.
template <class Condition, class Sup>
bool batched_conditioning(const Context& ctx, JointGroup& g, const RunStarts& runs, int rank, Condition condition,
                          Sup sup, std::vector<double>& loglik, double& error) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const auto at = batch_place(ctx, g, runs.starts, rank);
  if (!at) return false;
  const BatchIn in = batch_input(g, runs.starts, at->where);
  std::optional<ConditionedBatch> made = condition(in);
  if (!made) return false;
  const std::size_t n = runs.starts.size();
  std::vector<double> bounds(n);
  double largest = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    const double l = made->log_likelihood[k], e = in.bounds[k], rho_b = made->rho[k];
    if (l == -inf) {  // impossible: the prior kept
      bounds[k] = e;
      largest = std::max(largest, e > 0.0 ? inf : 0.0);
      continue;
    }
    const double rho = rho_b < 1.0 ? rho_b * sup(runs.starts[k]) : 1.0;
    largest = std::max(largest, rho < 1.0 ? -std::log1p(-rho) : inf);
    bounds[k] = rho < 1.0 ? rho : std::min(2.0, 2.0 * rho_b);
  }
  if (!keep(ctx, g, BatchOut{std::move(made->posterior), std::move(bounds), {}}, runs, at->trim)) return false;
  error = std::max(error, largest);
  std::size_t k = 0;
  for (std::size_t i = 0; i < loglik.size(); ++i) {
    if (i > 0 && !runs.repeats(i)) ++k;
    loglik[i] = made->log_likelihood[k];
  }
  return true;
}

/// group_realize's batch form: g's distinct tables (the runs') conditioned in one batch on the hyperplane \f$\kappa
/// \cdot x = y_i\f$ (y(i) at each run's first particle) and normalized, with the bound rho = e M / M_v (tally::slice's
/// and condition_on_linear's); no mass there (a dead particle): the table as it was, with its bound. Then X_sum_out
/// summed out where sum_out >= 0 (a member drawn: its axis goes; as the host's marginalize_out for a dead
/// particle). Untrimmed, as the host's. False, and nothing changed, where no batch runs or it gives nothing (the
/// host's formulas then).
template <class Y>
bool batched_hyperplane(const Context& ctx, JointGroup& g, const RunStarts& runs, const Coordinates& kappa, Y y,
                        int sum_out) {
  const auto at = batch_place(ctx, g, runs.starts, g.rank());
  if (!at) return false;
  const BatchIn in = batch_input(g, runs.starts, at->where);
  std::vector<std::int64_t> v;
  for (const std::size_t i : runs.starts) v.push_back(y(i));
  std::optional<ConditionedBatch> made = condition_linear_batch(in, kappa, v);
  if (!made) return false;
  std::vector<double> bounds(runs.starts.size());
  for (std::size_t k = 0; k < bounds.size(); ++k)
    bounds[k] = made->log_likelihood[k] == -std::numeric_limits<double>::infinity() ? in.bounds[k] : made->rho[k];
  gpu::JointLaws out = sum_out >= 0 ? gpu::joint_sum_out(made->posterior, sum_out) : std::move(made->posterior);
  return keep(ctx, g, BatchOut{std::move(out), std::move(bounds), {}}, runs, nullptr);
}

}  // namespace

using namespace joint_steps;

Laws group_marginal(Node& n) {
  JointGroup& g = *n.group;
  if (const auto* l = linear_member(g, n)) {  // the law of c_i + kappa . x, read from the table
    const Coordinates kappa = l->terms.empty() ? Coordinates{} : coefficients_of(g, *l);
    if (auto read = resident_linear_marginal(*n.context, g, *l, kappa)) return std::move(*read);
    const Truncation& t = n.context->truncation;  // a Pmf's limits
    return place(*n.context, per_particle<Pmf>(
                                 n.context->particles,
                                 [&](std::size_t i) {
                                   if (kappa.empty()) return Pmf(l->constant(i), Eigen::VectorXd::Ones(1));
                                   return linear_form_law(*g.laws()[i], kappa, l->constant(i), t);
                                 },
                                 [&](std::size_t i) {
                                   return (kappa.empty() || g.repeats(i)) &&
                                          (l->constants.empty() || repeats(l->constants, i));
                                 },
                                 (kappa.empty() || g.uniform()) && l->constants.empty()));
  }
  const int a = axis_of(g, n);
  if (const JointGroup::Resident* r = g.resident()) return resident_marginal(*n.context, *r, a);
  return place(*n.context, per_particle<Pmf>(
                               n.context->particles, [&](std::size_t i) { return marginal(*g.laws()[i], a); },
                               [&](std::size_t i) { return g.repeats(i); }, g.uniform()));
}

void group_realize(Node& n, const Values& values) {
  const auto g = n.group;
  Context& ctx = *n.context;
  if (auto* l = linear_member(*g, n)) {  // the table conditioned on its hyperplane c_i + kappa . x = v_i
    const std::vector<std::int64_t> v = to_vector(values);
    if (!l->terms.empty()) {
      const Coordinates kappa = coefficients_of(*g, *l);
      const RunStarts runs(ctx.particles, [&](std::size_t i) {
        return g->repeats(i) && repeats(v, i) && (l->constants.empty() || repeats(l->constants, i));
      });
      if (!batched_hyperplane(ctx, *g, runs, kappa, [&](std::size_t i) { return v[i] - l->constant(i); }, -1))
        g->set(shared_per_particle(
            ctx.particles,
            [&](std::size_t i) {
              const JointConditioned c = condition_on_linear(*g->laws()[i], kappa, v[i] - l->constant(i));
              // no mass there: that particle is dead, any law will do
              return c.posterior ? c.posterior->normalized() : *g->laws()[i];
            },
            [&](std::size_t i) { return runs.repeats(i); }));
    }
    g->linear.erase(g->linear.begin() + (l - g->linear.data()));
    n.group.reset();
    n.marginal.clear();
    sweep(g, ctx);
    return;
  }
  const int a = axis_of(*g, n);
  const std::vector<std::int64_t> v = to_vector(values);
  {  // the linear members that read n's axis read its value instead
    const auto& me = g->members[static_cast<std::size_t>(a)];
    for (auto& l : g->linear)
      for (auto it = l.terms.begin(); it != l.terms.end();)
        if (same_node(it->first, me)) {
          if (l.constants.empty()) l.constants.assign(ctx.particles, 0);
          for (std::size_t i = 0; i < ctx.particles; ++i) l.constants[i] += it->second * v[i];
          it = l.terms.erase(it);
        } else {
          ++it;
        }
  }
  if (g->rank() == 1) {
    g->members.clear();
    g->clear_laws();
  } else {  // the other axes sliced at X_a = v_i, X_a summed out
    const RunStarts runs(ctx.particles, [&](std::size_t i) { return g->repeats(i) && repeats(v, i); });
    if (!batched_hyperplane(ctx, *g, runs, unit(g->rank(), a, 1), [&](std::size_t i) { return v[i]; }, a))
      g->set(shared_per_particle(
          ctx.particles,
          [&](std::size_t i) {
            try {
              return slice(*g->laws()[i], a, v[i]).normalized();  // error bound e M / M_v
            } catch (const shape_error&) {  // no mass at v: that particle is dead, any law will do
              return marginalize_out(*g->laws()[i], a);
            }
          },
          [&](std::size_t i) { return runs.repeats(i); }));
    g->members.erase(g->members.begin() + a);
  }
  n.group.reset();
  n.marginal.clear();
  sweep(g, ctx);
}

bool observe_joint_child(Node& child, const Values& values, LogLikelihood& ll) {
  Context& ctx = *child.context;
  const auto keep = child.shared_from_this();
  // one observation and one table for every particle: computed once (y, loglik: one value each)
  std::vector<std::int64_t> y;
  std::vector<double> loglik;
  double error = 0.0;
  std::shared_ptr<JointGroup> g;
  std::optional<Tables> posterior;
  int constants = 0;
  // The stored posterior is mu l / L with the computed L. Against the exact mu* l / L (the exact posterior up to a
  // constant, which is all that the next likelihoods read: they are ratios of masses), its L1 error is at most
  // sum |mu - mu*| l <= sup(l) e M, relative to its mass L: rho sup(l) with rho = e M / L; the likelihood L itself
  // is off by at most the same. (The normalized posterior's 2 rho counts the constant's error again at every
  // observation and drops the factor sup(l) <= 1: along a filter that compounds by 2 / L a step.) sup(l) is the
  // largest likelihood over every parent value, inside the table or in the tails it dropped.
  // The dropped measure (JointPmf) is weighed by its own likelihood: located_error = <dropped, l> / L, exact; only
  // the spread part takes the largest likelihood.
  auto conditioned = [&](std::size_t i, const JointConditioned& c, const JointPmf& prior, int drop, double sup) {
    const double spread = c.spread_error * sup;
    const double rho = std::isfinite(c.log_likelihood_error) ? c.located_error + spread : 1.0;
    loglik[i] = c.log_likelihood;
    error = std::max(error, rho < 1 ? -std::log1p(-rho) : std::numeric_limits<double>::infinity());
    JointPmf p = c.posterior ? (rho < 1 ? c.posterior->with_spread_error_bound(spread) : *c.posterior)
                             : prior;  // impossible: that particle keeps its law (its weight is 0)
    for (int k = 0; k < drop; ++k) p = marginalize_out(p, p.rank() - 1);  // the constants' axes
    return trimmed(p, ctx.truncation);
  };
  if (const auto* c = std::get_if<DiscreteChild>(&child.kind)) {
    Node* x = child.parents[0].get();
    if (x == nullptr || !x->group) return false;
    const GroupLaws* each = c->each.get();  // a law per group: each particle's own
    g = x->group;
    int a = 0;
    try {
      a = member_axis(g, *x);  // a linear member becomes an axis
    } catch (const over_budget&) {  // past the budget: x is drawn (reported), and the child observed as usual
      const auto hold = x->shared_from_this();
      fallback(*x, Fallback::joint_limit);
      sample(*x);
      return false;
    }
    const bool one = g->uniform() && uniform(values) && !each;
    y = host_values(values, one);
    loglik.resize(y.size());
    // the distinct (table, y) pairs, then each particle's result from its run's first particle
    const RunStarts runs(
        ctx.particles,
        [&](std::size_t i) { return g->repeats(i) && repeats(y, i) && same_law_as_previous(each, i); }, one);
    const auto at_y = [&](std::size_t i) { return y[y.size() == 1 ? 0 : i]; };
    if (!batched_conditioning(
            ctx, *g, runs, g->rank(),
            [&](const BatchIn& in) { return condition_batch(in, runs.starts, a, c->law, y, each); },
            [&](std::size_t i) { return likelihood_sup(law_at(c->law, each, i), at_y(i)); }, loglik, error))
      posterior = shared_per_particle(
          ctx.particles,
          [&](std::size_t i) {
            const ChildLaw& law_i = law_at(c->law, each, i);
            return conditioned(i, condition_child(*g->laws()[i], a, law_i, y[i]), *g->laws()[i], 0,
                               likelihood_sup(law_i, y[i]));
          },
          [&](std::size_t i) { return runs.repeats(i) && (loglik[i] = loglik[i - 1], true); }, one);
  } else if (const auto* s = std::get_if<SelectedChild>(&child.kind)) {
    draw_stuck_parents(child, true);
    std::optional<SelectedFrame> f;
    try {
      f = selected_frame(child);
    } catch (const over_budget&) {
      realize_parents(child, Fallback::joint_limit);
      f = selected_frame(child);  // every parent realized
    }
    g = f->g;
    constants = f->constants;
    const bool one = f->uniform() && uniform(values);
    y = host_values(values, one);
    loglik.resize(y.size());
    const Truncation wide = ctx.truncation;
    const RunStarts runs(ctx.particles, [&](std::size_t i) { return f->repeats(i) && repeats(y, i); }, one);
    // the group's tables (with a constant axis for each realized parent) conditioned as one batch where one runs
    const auto at_y = [&](std::size_t i) { return y[y.size() == 1 ? 0 : i]; };
    if (!(g && batched_conditioning(
                   ctx, *g, runs, g->rank() + constants,
                   [&](const BatchIn& in) { return selected_batch(in, runs.starts, *s, *f, y); },
                   [&](std::size_t i) { return likelihood_sup(*s, at_y(i)); }, loglik, error)))
      posterior = shared_per_particle(
          ctx.particles,
          [&](std::size_t i) {
            std::vector<int> axes;
            const JointPmf d = f->table(i, axes, wide);
            const std::vector<int> rest(axes.begin() + 1, axes.end());
            return conditioned(i, condition_selected(d, *s, axes[0], rest, y[i]), d, g ? constants : 0,
                               likelihood_sup(*s, y[i]));
          },
          [&](std::size_t i) { return runs.repeats(i) && (loglik[i] = loglik[i - 1], true); }, one);
  } else {
    return false;
  }
  add_host(ll, loglik);
  ll.error = larger(ll.error, error);
  if (g && posterior) g->set(std::move(*posterior));
  child.parents = {};
  child.more_parents.clear();
  child.state = State::realized;
  child.value = values;
  if (g) sweep(g, ctx);
  return true;
}

void GroupGather::commit() {
  for (auto& [g, laws, resident, constants] : gathered) {
    if (resident)
      g->set(std::move(*resident));
    else
      g->set(std::move(laws));
    for (std::size_t k = 0; k < constants.size(); ++k) g->linear[k].constants = std::move(constants[k]);
  }
}

GroupGather gather_groups(Node* first_live, const std::vector<std::size_t>& ancestors) {
  GroupGather out;
  std::vector<JointGroup*> seen;
  for (Node* n = first_live; n != nullptr; n = n->next_live) {
    JointGroup* g = n->group.get();
    if (!g || std::find(seen.begin(), seen.end(), g) != seen.end()) continue;
    seen.push_back(g);
    JointGroup::Laws laws;
    std::optional<JointGroup::Resident> resident;
    if (const auto* r = g->resident()) {  // each particle's law index remapped; the laws stay where they are
      resident = *r;
      for (std::size_t i = 0; i < ancestors.size(); ++i) resident->index[i] = r->index[ancestors[i]];
    } else {
      laws = g->laws();
      laws.select(ancestors);
    }
    std::vector<std::vector<std::int64_t>> constants;
    for (const auto& l : g->linear) {
      std::vector<std::int64_t> c;
      if (!l.constants.empty())
        for (const std::size_t a : ancestors) c.push_back(l.constants[a]);
      constants.push_back(std::move(c));
    }
    out.gathered.push_back({g, std::move(laws), std::move(resident), std::move(constants)});
  }
  return out;
}

}  // namespace tally::runtime::detail
