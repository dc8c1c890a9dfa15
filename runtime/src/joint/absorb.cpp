// A marginalized component of the delayed-sampling graph (an M-path and what feeds it) taken over by one joint law,
// so that a new coupling keeps every variable exact instead of pruning (sampling) the path.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "batches.hpp"
#include "steps.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {

using namespace joint_steps;

namespace {

/// The nodes of a marginalized component, parents before children: the in-tree of M-path edges ending at the
/// component's last node, each node with the tie it owns (Y = a X + c after an observed sum) right after it.
struct Component {
  std::vector<Node*> order;
  std::vector<std::shared_ptr<Node>> held;  // every node, alive while the component is read and committed
  /// The elimination plan: after the node order[k] has entered the law, the axes of eliminated[k] are summed out
  /// (nodes that nothing outside the component holds, so that they die when the law takes over, and that no later
  /// node of the order reads), so that the table never holds more than the live nodes and the frontier of the
  /// order, whatever the length of the chain of dead nodes between them.
  std::vector<std::vector<Node*>> eliminated;
};

/// The elimination plan of c (Component::eliminated). A node dies when the law takes over if its only owners are
/// the links the takeover removes: the component's hold, its marginalized parent's child link and its partner's
/// tie (anything else, a handle, a child that is not marginalized, a caller's hold, keeps it, and sweep() sums it
/// out later if it dies after all). Its last use is the last node of the order whose law reads its axis (a child
/// on the M-path, a tied node), or itself. With only_keep (a query of keep's law that changes nothing), every node
/// but keep is summed out at its last use, held or not.
void plan_elimination(Component& c, const Node& keep, bool only_keep) {
  const std::size_t k = c.order.size();
  c.eliminated.assign(k, {});
  std::unordered_map<const Node*, std::size_t> index, last_use;
  for (std::size_t i = 0; i < k; ++i) index[c.order[i]] = last_use[c.order[i]] = i;
  std::unordered_map<const Node*, long> internal;  // owners the takeover removes
  for (Node* u : c.order) {
    internal[u] += 1;  // c.held
    if (u->mchild && index.count(u->mchild.get())) internal[u->mchild.get()] += 1;
    if (u->tied && index.count(u->tied.get())) internal[u->tied.get()] += 1;
    for (const Node* p : u->mparents)
      if (p && index.count(p)) last_use[p] = std::max(last_use[p], index[u]);
    if (u->tied_to && index.count(u->tied_to)) last_use[u->tied_to] = std::max(last_use[u->tied_to], index[u]);
  }
  for (Node* u : c.order) {
    if (u == &keep || (!only_keep && u->weak_from_this().use_count() > internal[u])) continue;
    c.eliminated[last_use[u]].push_back(u);
  }
}

/// Whether the marginalized discrete u may be a coordinate of the joint law that takes over its component: each
/// of its marginalized parents is discrete (a count of a marginalized conjugate parent is not: its parameter's
/// update waits for its value; a count of a realized one is an ordinary law), it is no member of a joint law (a
/// child of several random parents always is one; with every parent realized it is an ordinary law, a top), and a
/// JointSum's other operand is one the law can represent.
bool representable(const Node& u) {
  if (!u.discrete() || u.state != State::marginalized || u.group) return false;
  for (const Node* p : u.mparents)
    if (p && !p->discrete()) return false;
  // a sum keeps its operands' laws while one of them may still be conditioned on it; with both gone its own law is
  // all there is (a top of the component)
  if (std::holds_alternative<Sum>(u.kind) && !u.operands && (u.mparents[0] == nullptr) != (u.mparents[1] == nullptr))
    return false;
  if (std::holds_alternative<JointSum>(u.kind)) {
    const auto y = u.operand_y.lock();
    if (y && y->state == State::marginalized) return false;  // Y on an M-path of its own
  }
  return true;
}

/// n's component: every node linked to it by M-path edges (marginalized parents and child) and ties, in an order
/// where each node comes after its marginalized parents and after the node it is tied to; nothing where some node
/// of it is not representable. only_keep: the plan for a query of n's law alone (plan_elimination).
std::optional<Component> component_of(Node& n, bool only_keep = false) {
  std::vector<Node*> members{&n};
  for (std::size_t k = 0; k < members.size(); ++k) {
    Node* u = members[k];
    if (!representable(*u) || (u->tied_to && u->tied_to->tied_to)) return std::nullopt;
    auto visit = [&](Node* v) {
      if (v && std::find(members.begin(), members.end(), v) == members.end()) members.push_back(v);
    };
    for (Node* p : u->mparents) visit(p);
    visit(u->mchild.get());
    visit(u->tied.get());
    visit(u->tied_to);
  }
  Component c;
  // depth-first post-order over the dependencies (marginalized parents, the tie's partner)
  struct Entry {
    Node* node;
    bool expanded;
  };
  std::vector<Node*> seen;
  for (Node* m : members) {
    std::vector<Entry> stack{{m, false}};
    while (!stack.empty()) {
      auto [u, expanded] = stack.back();
      stack.pop_back();
      if (expanded) {
        c.order.push_back(u);
        continue;
      }
      if (std::find(seen.begin(), seen.end(), u) != seen.end()) continue;
      seen.push_back(u);
      stack.push_back({u, true});
      for (Node* p : u->mparents)
        if (p) stack.push_back({p, false});
      if (u->tied_to) stack.push_back({u->tied_to, false});
    }
  }
  for (Node* u : c.order) c.held.push_back(u->shared_from_this());
  plan_elimination(c, n, only_keep);
  return c;
}

/// The entries of d where y_axis = a x_axis + c, the others set to zero (the tie's event); d itself where no entry
/// is left (a particle whose observation was impossible: its weight is zero, any law will do).
JointPmf restricted_to_tie(const JointPmf& d, int y_axis, int x_axis, std::int64_t a, std::int64_t c) {
  Eigen::VectorXd w = d.weights();
  const std::int64_t ys = d.stride(y_axis), ye = d.extent(y_axis), xs = d.stride(x_axis), xe = d.extent(x_axis);
  for (Eigen::Index k = 0; k < w.size(); ++k) {
    const std::int64_t y = d.lo(y_axis) + (k / ys) % ye, x = d.lo(x_axis) + (k / xs) % xe;
    if (y != a * x + c) w[k] = 0.0;
  }
  if (!(w.maxCoeff() > 0.0)) return d;
  return JointPmf(d.lo(), d.shape(), std::move(w), d.log_scale(), d.error_bound());
}

/// The measure d with axis a reweighted to the marginal m: \f$\mu'(x) = \mu(x)\, m(x_a) / \mu_a(x_a)\f$, where
/// \f$\mu_a\f$ is d's marginal on that axis. For a variable that absorbed observations after its parents' law was
/// pushed to it, m is \f$\mu_a\f$ times the likelihood it absorbed, so \f$\mu'\f$ is the joint posterior. Each
/// entry is w(x) / f(x_a) m(x_a) with f the fibre's sum of weights (every factor at most 1: no overflow); values of
/// m outside d's fibres are lost and their relative mass joins the error bound, as do m's bound and d's dropped
/// measure (which has no fibres to be reweighted by).
JointPmf reweight(const JointPmf& d, int a, const Pmf& m) {
  const std::int64_t lo = d.lo(a), extent = d.extent(a), stride = d.stride(a);
  Eigen::VectorXd fibre = Eigen::VectorXd::Zero(extent);
  const Eigen::VectorXd& w = d.weights();
  for (Eigen::Index k = 0; k < w.size(); ++k) fibre[(k / stride) % extent] += w[k];
  const Pmf mn = m.normalized();
  double lost = 0.0;
  for (std::int64_t v = mn.lo(); v <= mn.hi(); ++v) {
    const double p = mn.weights()[static_cast<Eigen::Index>(v - mn.lo())];
    if (p > 0 && (v < lo || v >= lo + extent || fibre[v - lo] == 0.0)) lost += p * std::exp(mn.log_scale());
  }
  Eigen::VectorXd out(w.size());
  for (Eigen::Index k = 0; k < w.size(); ++k) {
    const std::int64_t v = lo + (k / stride) % extent;
    const double f = fibre[v - lo];
    out[k] = f > 0 && v >= mn.lo() && v <= mn.hi() ? w[k] / f * mn.weights()[static_cast<Eigen::Index>(v - mn.lo())]
                                                   : 0.0;
  }
  // no mass of m where d has any: a particle whose observations were impossible (weight zero: any law will do);
  // otherwise the whole law is in doubt, and its bound says so
  if (!(out.maxCoeff() > 0.0)) return d.with_error_bound(d.error_bound() + 1.0);
  const double bound = d.error_bound() + m.error_bound() + lost;
  return JointPmf(d.lo(), d.shape(), std::move(out), mn.log_scale(), bound);
}

/// Removes axis a from the law and the list of axes.
void drop_axis(JointPmf& d, std::vector<Node*>& axes, int a) {
  d = marginalize_out(d, a);
  axes.erase(axes.begin() + a);
}

int position(const std::vector<Node*>& axes, const Node* u) {
  const auto it = std::find(axes.begin(), axes.end(), u);
  if (it == axes.end()) throw std::logic_error("tally::runtime: a component's parent is missing from its joint law");
  return static_cast<int>(it - axes.begin());
}

/// What the component's law is built from, per node (host laws, one per particle).
struct Inputs {
  std::unordered_map<const Node*, Batch<Pmf>> law;       // a node's marginal (tops; reweighted children)
  std::unordered_map<const Node*, std::shared_ptr<const DroppedTails>> tails;
  std::unordered_map<const Node*, std::array<Batch<Pmf>, 2>> operands;  // a sum's operands that left
  std::unordered_map<const Node*, std::vector<std::int64_t>> constants;        // ties' c
  std::unordered_map<const Node*, std::vector<std::int64_t>> realized_y;       // a JointSum's realized Y
  std::unordered_map<const Node*, bool> y_joins;                               // a JointSum whose Y becomes an axis
  std::vector<const GroupLaws*> group_laws;  // the nodes' laws per group: particles of two groups share no table
  /// Every input one for all particles (then constants and realized_y hold one value each): the law is made once.
  bool one = false;
  /// Whether particles i and j have equal inputs (then equal laws).
  bool same(std::size_t i, std::size_t j) const {
    for (const auto& [u, l] : law)
      if (!equal_at(l, i, j) || !same_tails(tails.count(u) ? tails.at(u).get() : nullptr, i, j)) return false;
    for (const auto& [u, o] : operands)
      for (const auto& l : o)
        if (!l.empty() && !equal_at(l, i, j)) return false;
    for (const auto* m : {&constants, &realized_y})
      for (const auto& [u, c] : *m)
        if (!equal_at(c, i, j)) return false;
    for (const GroupLaws* each : group_laws)
      if (!same_law_as(each, i, j)) return false;
    return true;
  }
  /// A hash of particle i's inputs: equal inputs (same()) hash alike.
  std::uint64_t key(std::size_t i) const {
    std::uint64_t h = 0;
    for (const auto& [u, l] : law) {
      if (!l.uniform()) h = mix(h, law_hash(l[i]));
      if (const auto t = tails.find(u); t != tails.end() && t->second)
        h = mix(h, std::bit_cast<std::uint64_t>(t->second->spread(i)));
    }
    for (const auto& [u, o] : operands)
      for (const auto& l : o)
        if (!l.empty() && !l.uniform()) h = mix(h, law_hash(l[i]));
    for (const auto* m : {&constants, &realized_y})
      for (const auto& [u, c] : *m) h = mix(h, static_cast<std::uint64_t>(c.size() == 1 ? c[0] : c[i]));
    for (const GroupLaws* each : group_laws) h = mix(h, each ? i / each->group_size : 0);
    return h;
  }
};

bool is_top(const Node& u) { return u.mparents == std::array<Node*, 2>{} && !u.tied_to; }

Inputs gather_inputs(const Component& c) {
  Inputs in;
  for (Node* u : c.order) {
    if (const auto* child = std::get_if<DiscreteChild>(&u->kind); child && child->each)
      in.group_laws.push_back(child->each.get());
    if (const auto* j = std::get_if<JointSum>(&u->kind); j && j->each) in.group_laws.push_back(j->each.get());
    if (u->tied_to) {
      in.constants[u] = host_values(u->tie_c, uniform(u->tie_c));
      if (u->mparents == std::array<Node*, 2>{}) continue;  // its law is its partner's, mapped
    }
    if (is_top(*u)) {
      auto pmfs = host_laws(law(*u));
      if (may_know_tails(*u)) in.tails[u] = known_tails(*u, pmfs);
      in.law[u] = std::move(pmfs);
      continue;
    }
    if (auto* s = std::get_if<Sum>(&u->kind)) {
      (void)s;
      auto& ops = in.operands[u];
      for (int k = 0; k < 2; ++k)
        if (!u->mparents[static_cast<std::size_t>(k)]) ops[static_cast<std::size_t>(k)] = host_laws((*u->operands)[static_cast<std::size_t>(k)]);
      // never conditioned: its law is its operands' sum, nothing to reweight (a sum once tied to a partner that
      // died holds that partner's law, mapped, in tie_base: conditioned)
      if (u->marginal.empty() && u->tie_base.empty()) continue;
    }
    if (std::holds_alternative<JointSum>(u->kind)) {
      const auto y = u->operand_y.lock();
      if (y && y->state == State::realized) in.realized_y[u] = host_values(y->value, uniform(y->value));
      in.y_joins[u] = y && y->state == State::initialized && y.use_count() > 1;
    }
    if (!u->tied_to) in.law[u] = host_laws(law(*u));
  }
  in.one = in.group_laws.empty();
  for (const auto& [u, l] : in.law) in.one = in.one && uniform(l);
  for (const auto& [u, x] : in.tails) in.one = in.one && (!x || x->uniform());
  for (const auto& [u, o] : in.operands)
    for (const auto& l : o) in.one = in.one && (l.empty() || uniform(l));
  const std::size_t particles = c.order.front()->context->particles;
  for (auto* m : {&in.constants, &in.realized_y})
    for (const auto& [u, v] : *m) in.one = in.one && v.size() == 1;
  if (!in.one)  // then one value per particle for each
    for (auto* m : {&in.constants, &in.realized_y})
      for (auto& [u, v] : *m)
        if (v.size() == 1) v = std::vector<std::int64_t>(particles, v.front());
  return in;
}

/// A table over some of the component's nodes, independent of the others' tables (component_law).
struct Factor {
  JointPmf law;
  std::vector<Node*> axes;
};

bool holds(const std::vector<Node*>& axes, const Node* u) { return std::find(axes.begin(), axes.end(), u) != axes.end(); }

/// The nodes whose axes the law of u (entering the component's law) reads first: its marginalized parents, or its
/// partner where it has none (Y = a X + c). A node with both reads its partner only after its own axis is made
/// (component_law's tie step), so that the partner's table meets u's axis alone, not the parents' axes with it.
std::vector<const Node*> read_by(const Node& u) {
  std::vector<const Node*> r;
  for (const Node* p : u.mparents)
    if (p) r.push_back(p);
  if (u.tied_to && r.empty()) r.push_back(u.tied_to);
  return r;
}

/// Particle i's joint law of the component's nodes (axes in `axes`, temporaries summed out on the way).
///
/// Variable elimination over the component's factors: the law is built as a set of independent tables (a top
/// starts one of its own), two tables are joined (their outer product) only when a node reads axes of both, and
/// each node is summed out of its table right after its last use (Component::eliminated). So the tables of
/// independent branches (the operands of a tree of sums, each a sum of counts) are each reduced to the one axis
/// their reader needs before they meet, and no table holds more than the live nodes and the frontier of the order
/// within its branch.
JointPmf component_law(const Component& c, const Inputs& in, std::size_t i, std::vector<Node*>& axes,
                       const Truncation& t) {
  std::optional<JointPmf> d;  // the current table, over `axes`
  axes.clear();
  std::vector<Factor> parked;  // the other tables
  const auto park = [&] {
    if (d) parked.push_back({std::move(*d), std::move(axes)});
    d.reset();
    axes.clear();
  };
  // the tables holding any of `needed` joined into the current one (a top, reading nothing, starts a new one)
  const auto gather = [&](const std::vector<const Node*>& needed) {
    const auto needs = [&](const std::vector<Node*>& ax) {
      return std::any_of(needed.begin(), needed.end(), [&](const Node* p) { return holds(ax, p); });
    };
    if (!d || !needs(axes)) park();
    for (std::size_t f = 0; f < parked.size();) {
      if (!needs(parked[f].axes)) {
        ++f;
        continue;
      }
      if (d) {
        d = outer(*d, parked[f].law, t);
        axes.insert(axes.end(), parked[f].axes.begin(), parked[f].axes.end());
      } else {
        d = std::move(parked[f].law);
        axes = std::move(parked[f].axes);
      }
      parked.erase(parked.begin() + static_cast<std::ptrdiff_t>(f));
    }
  };
  auto append = [&](const JointPmf& e) { d = d ? outer(*d, e, t) : e; };
  auto conditioned = [&](Node* u) {
    if (const auto it = in.law.find(u); it != in.law.end()) *d = reweight(*d, position(axes, u), it->second[i]);
  };
  // node order[k] enters the law: its axis, from its parents' (an M-path child, a sum, a tie) or as a top
  const auto add_node = [&](std::size_t step) {
    Node* const u = c.order[step];
    const auto& now = c.eliminated[step];
    const auto summed_out_now = [&](const Node* p) { return std::find(now.begin(), now.end(), p) != now.end(); };
    if (Node* x = u->tied_to; x && u->mparents == std::array<Node*, 2>{}) {  // Y = a X + c
      // in place of X where X is summed out right after (no table over both)
      const int xa = position(axes, x), replace = summed_out_now(x) ? xa : -1;
      d = linear_combination(*d, unit(d->rank(), xa, u->tie_a), in.constants.at(u)[i], replace, t);
      if (replace >= 0)
        axes[static_cast<std::size_t>(replace)] = u;
      else
        axes.push_back(u);
      return;
    }
    if (is_top(*u)) {
      append(with_tails(joint(in.law.at(u)[i]), in.tails.count(u) ? in.tails.at(u).get() : nullptr, i));
      axes.push_back(u);
      return;
    }
    if (const auto* child = std::get_if<DiscreteChild>(&u->kind)) {
      Node* const p = u->mparents[0];
      const int pa = position(axes, p);
      const ChildLaw& law_i = law_at(child->law, child->each.get(), i);
      if (summed_out_now(p) && bounded_child(law_i)) {
        // the parent is summed out right after: its child takes its axis in place (no table over both)
        if (const auto* q = std::get_if<Thinning>(&law_i))
          d = thin_in_place(*d, pa, q->keep);
        else if (const auto* m = std::get_if<MarkovStep>(&law_i))
          d = markov_step(*d, pa, *m, t);
        else
          d = affine(*d, pa, std::get<AffineLaw>(law_i).a, std::get<AffineLaw>(law_i).c, t);
        axes[static_cast<std::size_t>(pa)] = u;
      } else {
        d = append_child(*d, pa, law_i, t);
        axes.push_back(u);
      }
    } else if (const auto* s = std::get_if<Sum>(&u->kind)) {
      // V = X_0 + s X_1 over the operands that are axes, in place of one of them that is summed out right after
      // (so that a chain of sums never holds a table over a sum and both its operands); then each operand nobody
      // else needs (an independent law) convolved along V's axis
      Coordinates kappa(axes.size(), 0);
      int replace = -1;
      std::vector<Pmf> folded;
      for (int k = 0; k < 2; ++k) {
        const std::int64_t coefficient = k == 0 ? 1 : s->sign;
        if (Node* p = u->mparents[static_cast<std::size_t>(k)]) {
          const int pa = position(axes, p);
          kappa[static_cast<std::size_t>(pa)] += coefficient;
          if (replace < 0 && summed_out_now(p)) replace = pa;
        } else {
          const Pmf& y = in.operands.at(u)[static_cast<std::size_t>(k)][i];
          folded.push_back(coefficient > 0 ? y : negate(y));
        }
      }
      d = linear_combination(*d, kappa, 0, replace, t);
      if (replace >= 0)
        axes[static_cast<std::size_t>(replace)] = u;
      else
        axes.push_back(u);
      const int v = position(axes, u);
      for (const Pmf& y : folded) d = add_independent(*d, v, y, t);
    } else if (const auto* j = std::get_if<JointSum>(&u->kind)) {
      const int x = position(axes, u->mparents[0]);
      if (const auto it = in.realized_y.find(u); it != in.realized_y.end()) {  // Y realized
        d = linear_combination(*d, unit(d->rank(), x, j->sign_x), j->sign_y * it->second[i], -1, t);
        axes.push_back(u);
      } else {
        d = append_child(*d, x, law_at(j->law, j->each.get(), i), t);  // Y
        const auto y = u->operand_y.lock();
        axes.push_back(in.y_joins.at(u) ? y.get() : nullptr);
        Coordinates kappa(axes.size(), 0);
        kappa[static_cast<std::size_t>(x)] = j->sign_x;
        kappa.back() = j->sign_y;
        d = linear_combination(*d, kappa, 0, -1, t);
        axes.push_back(u);
        if (!in.y_joins.at(u)) drop_axis(*d, axes, static_cast<int>(axes.size()) - 2);
      }
    } else {
      throw std::logic_error("tally::runtime: a component node of an unexpected kind");
    }
    if (Node* x = u->tied_to) {
      // Y = a X + c, with a law of its own given its marginalized parents: the joint law on that event, with X's
      // marginal (which already holds what the tie's observation said) kept: p(x) p(parents | Y = a x + c); X's
      // table joins u's here, once the axes of u's parents that are summed out now are gone
      for (Node* e : now)
        if (e != x && e != u && holds(axes, e) && d->rank() > 1) drop_axis(*d, axes, position(axes, e));
      gather({x, u});
      const int xa = position(axes, x);
      d = restricted_to_tie(*d, position(axes, u), xa, u->tie_a, in.constants.at(u)[i]);
      d = reweight(*d, xa, in.law.at(x)[i]);
      return;
    }
    conditioned(u);
  };
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    gather(read_by(*c.order[k]));
    add_node(k);
    // the plan's eliminations: nodes nothing reads any more, summed out now rather than after the whole law is
    // built (a chain of dead nodes would otherwise multiply their extents); a parent replaced in place is gone. A
    // table keeps its last axis (its node is then a member nobody needs, summed out by sweep)
    for (Node* u : c.eliminated[k]) {
      if (holds(axes, u) && d->rank() > 1) drop_axis(*d, axes, position(axes, u));
      for (Factor& f : parked)
        if (holds(f.axes, u) && f.law.rank() > 1) drop_axis(f.law, f.axes, position(f.axes, u));
    }
  }
  for (Factor& f : parked) {  // not expected (the component is connected), but independent tables multiply
    d = outer(*d, f.law, t);
    axes.insert(axes.end(), f.axes.begin(), f.axes.end());
  }
  return *d;
}

/// Every particle's law of c (its axes in `axes`), within the budget (over_budget otherwise): particles of equal
/// inputs, wherever they are (a tie's constants drawn from a few values), share one table.
Tables component_laws(Context& ctx, const Component& c, std::vector<Node*>& axes) {
  const Truncation t = joint_truncation(ctx);
  const Inputs in = gather_inputs(c);
  // the axes are the same in every particle (the structure is): particle 0's call, always made, writes them
  const auto f = [&](std::size_t i) { return component_law(c, in, i, axes, t); };
  if (in.one) return compute(ctx, f, [](std::size_t) { return true; }, true);
  return compute_shared(ctx, f,
                        first_copies(
                            ctx.particles, [&](std::size_t i) { return in.key(i); },
                            [&](std::size_t i, std::size_t j) { return in.same(i, j); }));
}

}  // namespace

std::vector<const Node*> component_nodes(Node& n) {
  const auto c = component_of(n);
  return c ? std::vector<const Node*>(c->order.begin(), c->order.end()) : std::vector<const Node*>{};
}

std::optional<Laws> component_marginal(Node& n) {
  if (n.group || !n.discrete() || n.state != State::marginalized || !enabled(*n.context)) return std::nullopt;
  const auto c = component_of(n, true);
  if (!c) return std::nullopt;
  Context& ctx = *n.context;
  std::vector<Node*> axes;
  Tables laws;
  try {
    laws = component_laws(ctx, *c, axes);
  } catch (const over_budget&) {
    return std::nullopt;
  }
  const int a = position(axes, &n);
  return place(ctx, per_particle<Pmf>(
                        ctx.particles, [&](std::size_t i) { return marginal(*laws[i], a); },
                        [&](std::size_t i) { return laws[i] == laws[i - 1]; }, laws.uniform()));
}

Absorbed absorb(Node& n) {
  if (n.group) return Absorbed::done;
  if (!enabled(*n.context)) return Absorbed::over_budget;
  auto c = component_of(n);
  if (!c) return Absorbed::unsupported;
  Context& ctx = *n.context;
  std::vector<Node*> axes;
  Tables laws;
  try {
    laws = component_laws(ctx, *c, axes);
  } catch (const over_budget&) {
    return Absorbed::over_budget;
  }
  // commit: every node becomes a member; the M-path edges and ties that linked them are gone (the law holds them)
  auto g = std::make_shared<JointGroup>();
  g->set(std::move(laws));
  for (Node* u : axes) g->members.push_back(u ? u->weak_from_this() : std::weak_ptr<Node>());
  std::vector<std::shared_ptr<Node>> joined;  // a JointSum's Y that became an axis
  std::vector<std::weak_ptr<Node>> eliminated;
  for (Node* u : axes)
    if (u && std::find(c->order.begin(), c->order.end(), u) == c->order.end()) joined.push_back(u->shared_from_this());
  for (Node* u : c->order) {
    u->mchild.reset();
    u->mparents = {};
    u->tied.reset();
    u->tied_to = nullptr;
    u->tie_a = 0;
    u->tie_c = Values{};
    u->tie_base.clear();
    u->tails.reset();
    u->operand_y.reset();
    if (std::find(axes.begin(), axes.end(), u) != axes.end()) {
      become_member(*u, g);
    } else {  // summed out by the plan: nothing else holds it, so it goes with the component's hold below
      u->marginal.clear();
      u->operands.reset();
      eliminated.push_back(u->weak_from_this());
    }
  }
  for (const auto& y : joined) become_member(*y, g);
  joined.clear();
  c->held.clear();
  for (const auto& u : eliminated)
    if (!u.expired()) throw std::logic_error("tally::runtime: a variable summed out of a joint law is still held");
  sweep(g, ctx);
  return Absorbed::done;
}

}  // namespace tally::runtime::detail
