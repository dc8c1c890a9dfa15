// Joining: a node whose law couples marginalized variables (a child of a member, a sum of coupled operands, a child
// of several random parents) becomes a coordinate of their joint law: couple its parents, apply its factor, sweep.
#include "joint.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "batches.hpp"
#include "steps.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {

namespace joint_steps {

/// The random parents of n (non-realized), in order: parents, then more_parents.
std::vector<Node*> random_parents(const Node& n) {
  std::vector<Node*> out;
  for (const auto& p : n.parents)
    if (p && p->state != State::realized) out.push_back(p.get());
  for (const auto& p : n.more_parents)
    if (p && p->state != State::realized) out.push_back(p.get());
  return out;
}

// ---- joining, by kind ----------------------------------------------------------------------------------------

void join_child(Node& n, const ChildLaw& law, const GroupLaws* each) {
  Context& ctx = *n.context;
  const Truncation t = joint_truncation(ctx);
  std::vector<std::shared_ptr<Node>> held{n.parents[0]};
  Node& x = *held[0];
  const auto g = x.group;
  // x lives on when anything beyond held and n.parents holds it (a handle, another child)
  const bool live = x.weak_from_this().use_count() > 2;
  const auto* map = std::get_if<AffineLaw>(&law);
  if (map && (live || linear_member(*g, x))) {
    // n = a x + c: a linear member (no axis), its form x's times a where x is one
    JointGroup::LinearMember l{n.weak_from_this(), {{x.weak_from_this(), map->a}}, map->c, {}};
    if (const auto* lx = linear_member(*g, x)) {
      l.terms.clear();
      for (const auto& [node, coefficient] : lx->terms) l.terms.emplace_back(node, map->a * coefficient);
      l.offset = map->a * lx->offset + map->c;
      for (const std::int64_t c : lx->constants) l.constants.push_back(map->a * c);
    }
    add_linear_member(*g, std::move(l));
    become_member(n, g);
    held.clear();
    sweep(g, ctx);
    return;
  }
  const int a = member_axis(g, x);
  const bool thinning = std::holds_alternative<Thinning>(law);
  // x is summed out at once: Y takes its place (thinning, Markov step, affine map; a Poisson child is appended),
  // unless a linear member reads x
  const bool in_place = !live && !std::holds_alternative<ScaledPoisson>(law) &&
                        !std::holds_alternative<IndexedPoisson>(law) && !read_by_linear(*g, a);
  // the batch form: in place, a thinning appends Y before X is summed out; a Poisson child is appended on a window
  const int rank_out = g->rank() + (!in_place || thinning || each ? 1 : 0);
  bool batched_here = false;
  compute_batched(
      ctx, *g, rank_out,
      [&](std::size_t i) {
        const JointPmf& d = *g->laws()[i];
        const ChildLaw& law_i = law_at(law, each, i);
        if (in_place) {
          if (thinning) return thin_in_place(d, a, std::get<Thinning>(law_i).keep);
          if (const auto* m = std::get_if<MarkovStep>(&law_i)) return markov_step(d, a, *m, t);
          const auto& f = std::get<AffineLaw>(law_i);
          return affine(d, a, f.a, f.c, t);
        }
        return append_child(d, a, law_i, t);
      },
      [&](BatchIn in, const Starts& s, const BatchPlace& where) -> std::optional<BatchOut> {
        if (!bounded_child(law)) return poisson_child_batch(std::move(in), where, a, law, t, each, s);
        return child_batch(std::move(in), where, a, law, in_place, each, s);  // a law per group: each run's own
      },
      [&](std::size_t i) { return g->repeats(i) && same_law_as_previous(each, i); }, &batched_here,
      g->uniform() && !each);
  if (in_place && batched_here && child_batch_puts_y_last(law, each)) {  // Y is the last axis
    g->members.erase(g->members.begin() + a);
    g->members.push_back(n.weak_from_this());
  } else if (in_place) {
    g->members[static_cast<std::size_t>(a)] = n.weak_from_this();
  } else {
    g->members.push_back(n.weak_from_this());
  }
  become_member(n, g);
  held.clear();
  sweep(g, ctx);
}

void join_sum(Node& z, int sign) {
  Context& ctx = *z.context;
  const Truncation t = joint_truncation(ctx);
  std::vector<std::shared_ptr<Node>> held{z.parents[0], z.parents[1]};
  // counted with z's own references: a parent lives on if anything beyond held and z.parents holds it
  auto live = [&](const Node& p) {
    long own = 0;
    for (const auto& h : held) own += 2 * (h.get() == &p);
    return p.weak_from_this().use_count() > own;
  };
  const std::int64_t coef[2] = {1, sign};
  std::vector<Node*> axis_nodes;
  struct Folded {  // an operand nobody else needs: convolved in
    Batch<Pmf> laws;
    std::int64_t sign;
    std::shared_ptr<const DroppedTails> tails;
  };
  std::vector<Folded> folded;
  std::vector<std::pair<const Values*, std::int64_t>> realized;
  for (int k = 0; k < 2; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state == State::realized)
      realized.emplace_back(&p.value, coef[k]);
    else if (p.group || live(p))
      axis_nodes.push_back(&p);
    else {
      Batch<Pmf> laws = host_laws(law(p));
      auto tails = known_tails(p, laws);
      folded.push_back({std::move(laws), coef[k], std::move(tails)});
    }
  }
  const auto g = couple(axis_nodes);
  // every input one for all particles: z's law is computed once (the constants then held as one value each)
  bool one = g->uniform();
  for (const auto& [v, s] : realized) one = one && uniform(*v);
  for (const Folded& f : folded) one = one && uniform(f.laws) && (!f.tails || f.tails->uniform());
  std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> constants;
  for (const auto& [v, s] : realized) constants.emplace_back(host_values(*v, one), s);
  // z a linear member (no axis) where nothing is convolved in and no operand's axis can simply be replaced by z's
  // (an axis operand nobody needs afterwards, which no linear member reads)
  bool linear = folded.empty();
  for (int k = 0; k < 2 && linear; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state != State::realized && !linear_member(*g, p) && !live(p) && !read_by_linear(*g, axis_of(*g, p)))
      linear = false;
  }
  if (linear) {
    JointGroup::LinearMember l{z.weak_from_this(), {}, 0, {}};
    const auto add_term = [&](const std::weak_ptr<Node>& node, std::int64_t coefficient) {
      for (auto& term : l.terms)
        if (same_node(term.first, node)) {
          term.second += coefficient;
          return;
        }
      l.terms.emplace_back(node, coefficient);
    };
    // c: one value per particle, or (a realized operand where `one`) one for every particle, kept in the offset
    const auto add_constants = [&](const std::vector<std::int64_t>& c, std::int64_t coefficient) {
      if (c.empty()) return;
      if (c.size() == 1 && ctx.particles > 1) {
        l.offset += coefficient * c[0];
        return;
      }
      if (l.constants.empty()) l.constants.assign(ctx.particles, 0);
      for (std::size_t i = 0; i < ctx.particles; ++i) l.constants[i] += coefficient * c[i];
    };
    for (const auto& [v, sv] : constants) add_constants(v, sv);
    for (int k = 0; k < 2; ++k) {
      Node& p = *held[static_cast<std::size_t>(k)];
      if (p.state == State::realized) continue;
      if (const auto* lp = linear_member(*g, p)) {
        for (const auto& [node, coefficient] : lp->terms) add_term(node, coef[k] * coefficient);
        l.offset += coef[k] * lp->offset;
        add_constants(lp->constants, coef[k]);
      } else {
        add_term(p.weak_from_this(), coef[k]);
      }
    }
    add_linear_member(*g, std::move(l));
    become_member(z, g);
    held.clear();
    sweep(g, ctx);
    return;
  }
  // operands that are linear members become axes first
  for (int k = 0; k < 2; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state != State::realized && p.group) member_axis(g, p);
  }
  Coordinates kappa(static_cast<std::size_t>(g->rank()), 0);
  int replace = -1;
  for (int k = 0; k < 2; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state == State::realized || !p.group) continue;
    const int a = axis_of(*g, p);
    kappa[static_cast<std::size_t>(a)] += coef[k];
    if (!live(p) && !read_by_linear(*g, a)) replace = a;
  }
  std::vector<std::int64_t> constant_of;  // c_i, by particle (empty: none; one value where `one`)
  if (!constants.empty()) {
    constant_of.assign(one ? 1 : ctx.particles, 0);
    for (const auto& [v, s] : constants)
      for (std::size_t i = 0; i < constant_of.size(); ++i) constant_of[i] += s * v[i];
  }
  std::vector<FoldedOperand> folded_operands;
  for (const Folded& f : folded) folded_operands.push_back({&f.laws, f.sign, f.tails.get()});
  compute_batched(ctx, *g, replace >= 0 ? g->rank() : g->rank() + 1, [&](std::size_t i) {
    JointPmf d = linear_combination(*g->laws()[i], kappa, constant_of.empty() ? 0 : constant_of[i], replace, t);
    const int za = replace >= 0 ? replace : d.rank() - 1;
    for (const Folded& f : folded) {
      const Pmf y = f.sign > 0 ? f.laws[i] : negate(f.laws[i]);
      if (f.tails) {  // its tails where they are (the dropped measure), the rest spread
        const auto& x = f.tails->dropped(i);
        const double rest = f.tails->spread(i);
        d = x ? add_independent(d, za, y, f.sign > 0 ? *x : negate(*x), rest, t)
              : add_independent(d, za, y.with_error_bound(rest), t);
      } else {
        d = add_independent(d, za, y, t);
      }
    }
    return d;
  }, [&](BatchIn in, const Starts& s, const BatchPlace& where) -> std::optional<BatchOut> {
    return linear_batch(std::move(in), s, where, kappa, constant_of, replace, folded_operands);
  }, [&](std::size_t i) {
    bool same = g->repeats(i);
    for (const auto& c : constants) same = same && repeats(c.first, i);
    for (const auto& f : folded) same = same && repeats(f.laws, i) && same_tails(f.tails.get(), i);
    return same;
  }, nullptr, one);
  if (replace >= 0)
    g->members[static_cast<std::size_t>(replace)] = z.weak_from_this();
  else
    g->members.push_back(z.weak_from_this());
  become_member(z, g);
  held.clear();
  sweep(g, ctx);
}

/// z = s_x X + s_y Y with Y | X ~ law. False where X is realized or cannot join (the ordinary JointSum then).
bool join_joint_sum(Node& z, const JointSum& j) {
  Context& ctx = *z.context;
  const Truncation t = joint_truncation(ctx);
  Node& x = *z.parents[0];
  if (x.state == State::realized || (!x.group && !joinable(x))) return false;
  auto yp = z.operand_y.lock();
  Node* y = yp.get();
  enum { joins, member, realized, folded } y_form = folded;
  if (y && y->state == State::initialized && yp.use_count() > 1 && y->parents[0].get() == &x)
    y_form = joins;
  else if (y && y->group && (y->group == x.group))
    y_form = member;
  else if (y && y->state == State::realized)
    y_form = realized;
  else if (y && y->state == State::marginalized)
    return false;  // Y on an M-path of its own: the ordinary way
  std::vector<std::shared_ptr<Node>> held{z.parents[0]};
  if (y_form == joins) held.push_back(y->parents[0]);
  const bool standalone = !x.group;  // then couple() gives X a group of its own, undone if the join fails
  const auto g = couple({&x});
  const int a = member_axis(g, x);
  // X's references: held, z.parents and (when Y joins) Y's parents
  const long own = 2 * static_cast<long>(held.size());
  const bool x_live = x.weak_from_this().use_count() > own;
  const auto* thinning = std::get_if<Thinning>(&j.law);
  const GroupLaws* each = j.each.get();  // Y's law per group, or null
  const bool split_in_place =
      y_form == joins && thinning && j.sign_x == 1 && j.sign_y == -1 && !x_live && !read_by_linear(*g, a);
  if (y_form == member) member_axis(g, *y);  // a linear Y becomes an axis: z's form names it
  // A failure (a table past max_size in some particle: over_budget, then the ordinary JointSum) leaves X as it
  // was: a group of its own left behind would hold X's law, and the ordinary JointSum's conditioning of X (which
  // sets X.marginal) would be lost (fuzz/corpus/engine/regress-p1p8-jointsum-408018b8d4)
  const auto x_as_it_was = [&] {
    if (standalone && x.group == g && g->members.size() == 1 && g->linear.empty()) {
      Laws alone = group_marginal(x);
      x.group.reset();
      x.marginal = std::move(alone);
    }
  };
  if (!split_in_place && y_form != folded) {
    // z = s_x X + s_y Y a linear member (no axis), after Y joins as an axis where it lives on
    if (y_form == joins) {
      try {
        compute_batched(
            ctx, *g, bounded_child(j.law) ? g->rank() + 1 : 0,
            [&](std::size_t i) { return append_child(*g->laws()[i], a, law_at(j.law, each, i), t); },
            [&](BatchIn in, const Starts& s, const BatchPlace& where) -> std::optional<BatchOut> {
              return child_batch(std::move(in), where, a, j.law, false, each, s);
            },
            [&](std::size_t i) { return g->repeats(i) && same_law_as_previous(each, i); }, nullptr,
            g->uniform() && !each);
      } catch (...) {
        x_as_it_was();
        throw;
      }
      g->members.push_back(y->weak_from_this());
      become_member(*y, g);
    }
    JointGroup::LinearMember l{z.weak_from_this(), {{x.weak_from_this(), j.sign_x}}, 0, {}};
    if (y_form == realized)
      for (const std::int64_t v : to_vector(y->value)) l.constants.push_back(j.sign_y * v);
    else  // Y, X's child, is another axis
      l.terms.emplace_back(y->weak_from_this(), j.sign_y);
    add_linear_member(*g, std::move(l));
  } else {
    // X split in place into (X - Y, Y), or Y nobody needs afterwards: Z takes Y's axis
    try {
      compute_batched(
          ctx, *g, split_in_place || bounded_child(j.law) ? g->rank() + 1 : 0,
          [&](std::size_t i) {
            const JointPmf& d = *g->laws()[i];
            if (split_in_place) {  // X - Y in place of X, Y appended
              if (double(d.size()) * double(d.hi(a) + 1) > double(t.max_size)) throw over_budget{};
              return detail::split_in_place(d, a, std::get<Thinning>(law_at(j.law, each, i)).keep);
            }
            JointPmf e = append_child(d, a, law_at(j.law, each, i), t);  // Y at the last axis
            Coordinates k(static_cast<std::size_t>(e.rank()), 0);
            k[static_cast<std::size_t>(a)] = j.sign_x;
            k.back() = j.sign_y;
            return linear_combination(e, k, 0, e.rank() - 1, t);
          },
          [&](BatchIn in, const Starts& s, const BatchPlace& where) -> std::optional<BatchOut> {
            if (split_in_place) return split_batch(std::move(in), where, a, j.law, each, s);
            return child_sum_batch(std::move(in), where, a, j.law, j.sign_x, j.sign_y, each, s);
          },
          [&](std::size_t i) { return g->repeats(i) && same_law_as_previous(each, i); }, nullptr,
          g->uniform() && !each);
    } catch (...) {
      x_as_it_was();
      throw;
    }
    if (split_in_place) {
      g->members[static_cast<std::size_t>(a)] = z.weak_from_this();
      g->members.push_back(y->weak_from_this());
      become_member(*y, g);
    } else {
      g->members.push_back(z.weak_from_this());
    }
  }
  become_member(z, g);
  z.operand_y.reset();
  yp.reset();
  held.clear();
  sweep(g, ctx);
  return true;
}

SelectedFrame selected_frame(Node& n) {
  SelectedFrame f;
  f.parents.push_back(n.parents[0].get());
  for (const auto& p : n.more_parents) f.parents.push_back(p.get());
  f.g = couple(f.parents);
  for (Node* p : f.parents)
    if (p->state != State::realized) member_axis(f.g, *p);  // a linear member becomes an axis
  for (Node* p : f.parents) {
    if (p->state == State::realized) {
      f.values.push_back(to_vector(p->value));
      f.axis.push_back(-1);
      ++f.constants;
    } else {
      f.values.emplace_back();
      f.axis.push_back(axis_of(*f.g, *p));
    }
  }
  return f;
}

/// Draws each random parent of n (reported first, so that strict mode refuses before anything is drawn).
void realize_parents(Node& n, Fallback why) {
  const auto random = random_parents(n);
  std::vector<std::shared_ptr<Node>> keep;
  for (Node* p : random) keep.push_back(p->shared_from_this());
  for (Node* p : random) fallback(*p, why);
  for (Node* p : random)
    if (p->state != State::realized) {
      graft(*p);
      if (p->state == State::marginalized) sample(*p);
    }
}

/// Standalone random parents of n inside a marginalized chain (or tied) cannot become axes: where the joint law is
/// needed they are drawn first (exactly, from their posteriors) and reported; where it is only an option, false.
bool draw_stuck_parents(Node& n, bool needed) {
  std::vector<Node*> stuck;
  for (Node* p : random_parents(n)) {
    if (p->group || joinable(*p)) continue;
    // a chain's variable: its component taken over by a joint law, where it can be (only where the law is needed:
    // an optional one is not worth a chain's table)
    if (needed && p->state == State::marginalized && p->discrete() && absorb(*p) == Absorbed::done) continue;
    stuck.push_back(p);
  }
  if (stuck.empty()) return true;
  if (!needed) return false;
  std::vector<std::shared_ptr<Node>> hold;
  for (Node* p : stuck) hold.push_back(p->shared_from_this());
  for (Node* p : stuck) fallback(*p, Fallback::joint_limit);
  for (Node* p : stuck)
    if (p->state == State::marginalized) sample(*p);
  return true;
}

}  // namespace joint_steps

namespace {

using namespace joint_steps;

/// The selected law over the axes of d: the state's axis, then the others' (rates, or the count).
JointPmf add_selected(const JointPmf& d, const SelectedChild& s, int state, const std::vector<int>& others,
                      const Truncation& t) {
  if (s.family == SelectedChild::poisson) return add_child(d, SelectedScaledPoisson(state, others, s.scale), t);
  return add_child(d, SelectedThinning(others[0], state, s.keep), t);
}
void join_selected(Node& n) {
  Context& ctx = *n.context;
  const Truncation t = joint_truncation(ctx);
  const auto& s = std::get<SelectedChild>(n.kind);
  const SelectedFrame f = selected_frame(n);
  if (!f.g) {  // every parent realized: an ordinary law per particle
    Truncation wide = ctx.truncation;
    n.marginal = place(ctx, per_particle<Pmf>(
                                ctx.particles,
                                [&](std::size_t i) {
                                  std::vector<int> axes;
                                  const JointPmf d = f.table(i, axes, wide);
                                  const std::vector<int> others(axes.begin() + 1, axes.end());
                                  const JointPmf e = add_selected(d, s, axes[0], others, wide);
                                  return marginal(e, e.rank() - 1);
                                },
                                [&](std::size_t i) { return f.repeats(i); }, f.uniform()));
    n.state = State::marginalized;
    n.parents = {};
    n.more_parents.clear();
    return;
  }
  const auto g = f.g;
  const int rank = g->rank();
  // Y appended to the group's tables (with a constant axis for each realized parent, summed out after it)
  compute_batched(
      ctx, *g, rank + f.constants + 1,
      [&](std::size_t i) {
        std::vector<int> axes;
        const JointPmf d = f.table(i, axes, t);
        const std::vector<int> others(axes.begin() + 1, axes.end());
        JointPmf e = add_selected(d, s, axes[0], others, t);
        for (int k = 0; k < f.constants; ++k) e = marginalize_out(e, rank);
        return e;
      },
      [&](BatchIn in, const Starts& starts, const BatchPlace& where) -> std::optional<BatchOut> {
        return selected_child_batch(std::move(in), starts, where, s, f, t);
      },
      [&](std::size_t i) { return f.repeats(i); }, nullptr, f.uniform());
  g->members.push_back(n.weak_from_this());
  std::vector<std::shared_ptr<Node>> held(n.more_parents.begin(), n.more_parents.end());
  held.push_back(n.parents[0]);
  become_member(n, g);
  held.clear();
  sweep(g, ctx);
}

}  // namespace

using namespace joint_steps;

bool needs_joint(Node& n) {
  if (std::holds_alternative<SelectedChild>(n.kind)) return true;
  for (const auto& p : n.parents)
    if (p && p->group) return true;
  if (!enabled(*n.context)) return false;
  if (std::holds_alternative<JointSum>(n.kind)) {
    const Node* x = n.parents[0].get();
    const auto y = n.operand_y.lock();
    return x && x->state != State::realized && y && y->state == State::initialized && y.use_count() > 1;
  }
  return false;
}

bool join(Node& n) {
  const auto keep = n.shared_from_this();
  const bool selected = std::holds_alternative<SelectedChild>(n.kind);
  bool needed = selected;
  for (const auto& p : n.parents)
    if (p && p->group) needed = true;
  if (!draw_stuck_parents(n, needed)) return false;
  try {
    if (const auto* c = std::get_if<DiscreteChild>(&n.kind)) {
      if (!n.parents[0]->group) return false;  // its parent was drawn above
      join_child(n, c->law, c->each.get());
    } else if (const auto* s = std::get_if<Sum>(&n.kind)) {
      if (!n.parents[0]->group && !n.parents[1]->group) return false;
      join_sum(n, s->sign);
    } else if (const auto* j = std::get_if<JointSum>(&n.kind)) {
      if (!join_joint_sum(n, *j)) return false;
    } else if (selected) {
      join_selected(n);
    } else {
      return false;
    }
    return true;
  } catch (const over_budget&) {
    if (!needed) return false;
  }
  realize_parents(n, Fallback::joint_limit);
  if (selected) {
    join_selected(n);  // every parent realized: no joint law
    return true;
  }
  return false;
}

}  // namespace tally::runtime::detail
