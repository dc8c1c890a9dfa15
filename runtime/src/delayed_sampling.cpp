// The delayed-sampling core (Murray et al., AISTATS 2018): graft, marginalize, prune, realize, observe, for P
// particles at once on either backend (every operation on states goes through state.hpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "node.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_ops.hpp"
#include "overloaded.hpp"

namespace tally::runtime::detail {
namespace {

/// The law of parent p as an operand: its laws, or the point masses at its values.
Laws law_of(Node& p) { return p.state == State::realized ? points(*p.context, p.value) : law(p); }
/// The same for an operand of a sum, but laws kept as parameters stay so (an observed sum of two is conditioned
/// straight from them).
Laws operand_law(Node& p) {
  return p.state == State::marginalized && p.tied_to == nullptr && p.marginal.parameters ? p.marginal : law_of(p);
}

// ---- the M-path ----------------------------------------------------------------------------------------------
/// child joins the M-path under parent (when parent is marginalized): parent owns child, child points back.
void attach(Node& parent, Node& child, int slot) {
  if (parent.state != State::marginalized) return;
  parent.mchild = child.shared_from_this();
  child.mparents[slot] = &parent;
}

/// Ties y = a x + c (per particle c) after an observed sum: y's laws follow x's (law() maps them when asked), x
/// owns y, and realizing either realizes both.
void tie(Node& x, Node& y, std::int64_t a, Values c) {
  const auto keep = x.shared_from_this();  // y may have been x's last owner
  y.state = State::marginalized;
  y.parents = {};
  y.marginal.clear();
  y.tie_a = a;
  y.tie_c = std::move(c);
  y.tied_to = &x;
  y.absorbed = true;
  x.tied = y.shared_from_this();
}

/// The states a child law reads from its parent: a Markov step's rows (every group's, for a step per group); 0
/// for another law (it reads no states).
std::int64_t states_read(const DiscreteChild& c) {
  const auto* step = std::get_if<MarkovStep>(&c.law);
  return step == nullptr ? 0 : static_cast<std::int64_t>(step->transition.rows());
}

/// Whether x's values are known on the host, without reading the device, to lie in 0 .. k - 1: x is a Markov
/// step's child of at most k columns, a root whose prior lies there (and whose window cannot widen), or realized
/// with a known bound there.
bool within_states(const Node& x, std::int64_t k) {
  if (const auto* c = std::get_if<DiscreteChild>(&x.kind))
    if (const auto* step = std::get_if<MarkovStep>(&c->law)) return step->transition.cols() <= k;
  if (const auto* r = std::get_if<DiscreteRoot>(&x.kind))
    if (!(r->family && r->prior.error_bound() > 0.0) && r->prior.lo() >= 0 && r->prior.hi() < k) return true;
  if (x.state == State::realized && !x.value.empty()) {
    if (x.value.same) return *x.value.same >= 0 && *x.value.same < k;
    const auto bound = x.value.bound();
    return x.value.nonnegative && bound && *bound < k;
  }
  return false;
}

void marginalize(Node& n) {
  const auto keep = n.shared_from_this();
  Context& ctx = *n.context;
  // coupled to other marginalized variables: kept in one joint law with them (joint/joint.hpp)
  if (needs_joint(n) && join(n)) return;
  std::visit(overloaded{
                 [&](DiscreteRoot& r) { n.marginal = prior(ctx, r.prior); },
                 [&](DiscreteChild& c) {
                   Node& x = *n.parents[0];
                   if (c.each)
                     n.marginal = x.state == State::realized ? push_realized(ctx, x.value, *c.each)
                                                             : push(ctx, law(x), *c.each);
                   else
                     n.marginal = x.state == State::realized ? push_realized(ctx, x.value, c.law)
                                                             : push(ctx, law(x), c.law);
                   // a device step's check of x's states is deferred to the next wait: where the host cannot rule
                   // its failure out, it is raised now, before the graft changes anything (so that a failed step
                   // leaves the graph as it was, as on the host)
                   if (const std::int64_t k = states_read(c); ctx.device() && k > 0 && !within_states(x, k))
                     gpu::raise_deferred_checks();
                   // what truncation dropped from x's laws, pushed along (observations weigh it by its likelihood)
                   if (x.state == State::marginalized && !x.group && !c.each && follows_tails(ctx) &&
                       on_host(n.marginal))
                     n.tails = pushed_tails(tails_or_spread(x, law(x).host), c.law, n.marginal.host);
                   attach(x, n, 0);
                 },
                 [&](PerParticleBinomial& b) { n.marginal = binomial_laws(ctx, n.parents[0]->value, *b.p); },
                 [&](Sum&) {
                   // the operands' laws are kept; the convolution is made only if a law of the sum is asked for
                   // (observing the sum needs one skew diagonal per particle, not the convolution)
                   Node& x = *n.parents[0];
                   Node& y = *n.parents[1];
                   n.operands = std::make_unique<std::array<Laws, 2>>(std::array<Laws, 2>{operand_law(x), operand_law(y)});
                   const auto& ops = *n.operands;
                   if (follows_tails(ctx) && !x.group && !y.group && on_host(ops[0]) && on_host(ops[1]))
                     n.operand_tails = std::make_unique<std::array<Tails, 2>>(
                         std::array<Tails, 2>{tails_or_spread(x, ops[0].host), tails_or_spread(y, ops[1].host)});
                   attach(x, n, 0);
                   attach(y, n, 1);
                 },
                 [&](JointSum& j) {
                   Node& x = *n.parents[0];
                   n.marginal = joint_sum(ctx, law_of(x), j.law, j.sign_x, j.sign_y, j.each.get());
                   attach(x, n, 0);
                 },
                 [&](ContinuousRoot&) {},  // created marginalized
                 [&](SelectedChild&) {},   // always joined (join returns true for it)
                 [&](BetaThinning&) {},    // made a CountChild before it is grafted (make_count_child)
                 [&](CountChild& c) {
                   Node& rho = *n.parents[0];
                   n.marginal = count_laws(ctx, c, rho);
                   attach(rho, n, 0);
                 }},
             n.kind);
  n.state = State::marginalized;
  n.parents = {};  // ownership flips: the marginalized parents now own n
}

/// For a tie y = sign (z - x) after an observed sum z = x + sign y: the constants sign z, except where z was
/// impossible (log-likelihood -inf), where a possible value of z keeps them in range (that particle's weight is 0
/// anyway; on a CUDA graph gpu::tie_constants, from the ends of the operands' supports).
Values tie_constant(const Context& ctx, const Values& z, int sign, const LogLikelihood& ll, const Laws& x,
                    const Laws& y) {
  if (ctx.device()) {
    // one observed value and one law of each operand for every particle: possible in all or in none (then every
    // weight is 0): sign z, kept as one constant
    if (z.same && x.shared && y.shared && x.per == ctx.particles && y.per == ctx.particles)
      return linear(z, sign, {}, 0, 0);
    // each particle's lowest (hi false) or highest value of l, as a column, without writing laws out
    const auto end = [&](const Laws& l, bool hi) -> std::optional<gpu::Column<std::int64_t>> {
      if (l.shared) return gpu::support_end(*l.shared, l.per, ctx.particles, hi);
      if (l.parameters) {  // counts on 0 .. n_i
        const auto& n = *l.parameters->n;
        return hi ? n.clone() : gpu::filled(std::int64_t{0}, ctx.particles, ctx.where);
      }
      const Laws d = dense(l);  // device laws as they are; indexed ones spread over the particles
      if (d.device) return gpu::support_end(*d.device, 1, ctx.particles, hi);
      return std::nullopt;
    };
    const auto x_lo = end(x, false), y_end = end(y, sign < 0);
    if (!x_lo || !y_end) return linear(z, sign, {}, 0, 0);  // host laws on a CUDA graph: none seen
    return make_values(gpu::tie_constants(*z, sign, ll.values, *x_lo, *y_end));
  }
  std::vector<std::int64_t> c(ctx.particles);
  for (std::size_t i = 0; i < ctx.particles; ++i) {
    std::int64_t v = z[i];
    if (ll.values.host()[i] == -std::numeric_limits<double>::infinity() && !x.host.empty() && !y.host.empty())
      v = x.host[i].lo() + (sign > 0 ? y.host[i].lo() : -y.host[i].hi());
    c[i] = sign * v;
  }
  return make_values(gpu::Column<std::int64_t>::host_values(std::move(c)));
}

/// Conditions n's marginalized parents on n = v (per particle) and detaches n from them. With ll, the conditioning
/// also adds log P(n = v | ...) to *ll (the observe path takes this only where n's law is its parents' pushed
/// forward: a discrete child, a sum, a joint sum).
void condition_parents(Node& n, const Values& v, LogLikelihood* ll) {
  // the parents stay alive through this function even if a tie below drops their last owner
  std::array<std::shared_ptr<Node>, 2> keep;
  for (std::size_t k = 0; k < 2; ++k)
    if (n.mparents[k]) keep[k] = n.mparents[k]->shared_from_this();
  Context& ctx = *n.context;
  LogLikelihood scratch;
  auto sink = [&]() -> LogLikelihood& {
    if (ll) return *ll;
    if (scratch.values.size() == 0) scratch = zero_log_likelihood(ctx);
    return scratch;
  };
  std::visit(
      overloaded{
          [&](DiscreteRoot&) {}, [&](ContinuousRoot&) {}, [&](PerParticleBinomial&) {}, [&](SelectedChild&) {},
          [&](BetaThinning&) {},
          [&](DiscreteChild& c) {
            if (Node* x = n.mparents[0]) {
              x->marginal =
                  c.each ? condition(ctx, law(*x), *c.each, v, sink()) : condition(ctx, law(*x), c.law, v, sink());
              x->absorbed = true;
              x->mchild.reset();
            }
          },
          [&](JointSum& j) {
            Node* x = n.mparents[0];
            if (!x) return;
            // both computed before anything changes (either may fail: device memory)
            Laws posterior = condition_on_joint_sum(ctx, law(*x), j.law, j.sign_x, j.sign_y, v, sink(), j.each.get());
            auto y = n.operand_y.lock();
            const bool tied = y && y->state == State::initialized;
            Values c = tied ? linear(v, j.sign_y, {}, 0, 0) : Values{};
            x->marginal = std::move(posterior);
            x->absorbed = true;
            // Y = s_y (z - s_x X) = -s_x s_y X + s_y z
            if (tied) tie(*x, *y, -j.sign_x * j.sign_y, std::move(c));
            x->mchild.reset();
          },
          [&](Sum& s) {
            Node* x = n.mparents[0];
            Node* y = n.mparents[1];
            if (!x && !y && !ll) return;  // both operands gone: nothing to condition
            const auto& ops = *n.operands;
            // X | X + sY = z from the operands' laws (kept in n, so a dropped operand does not matter)
            LogLikelihood& sk = sink();
            Laws px = condition_on_sum(ctx, ops[0], ops[1], s.sign, v, sk);
            // where z was impossible (weight 0), X is put at its lowest value, so that the tie below keeps Y at an
            // end of its support (tie_constant): a law X kept whole would tie Y to values off it, which a child
            // law of Y (a Markov step's states, a thinning's n >= 0) then refuses
            if (!ctx.device() && !px.host.empty() && !ops[0].host.empty()) {
              const auto& l = sk.values.host();
              constexpr double dead = -std::numeric_limits<double>::infinity();
              if (l.size() == ctx.particles && std::find(l.begin(), l.end(), dead) != l.end())
                px.host = Batch<Pmf>::make(ctx.particles, [&](std::size_t i) {
                  return l[i] == dead ? Pmf(ops[0].host[i].lo(), Eigen::VectorXd::Ones(1)) : px.host[i];
                });
            }
            // Y = s (z - X) = -s X + s z
            const std::int64_t a = -s.sign;
            Values c = tie_constant(ctx, v, s.sign, sk, ops[0], ops[1]);
            if (x) {
              x->marginal = std::move(px);
              x->absorbed = true;
              x->mchild.reset();
              if (y) {
                y->mchild.reset();
                tie(*x, *y, a, std::move(c));
              }
            } else if (y) {
              // X is gone (nothing could reach it): Y gets its own posterior, a X + c pushed through
              y->marginal = affine(ctx, px, a, c);
              y->absorbed = true;
              y->mchild.reset();
            }
          },
          [&](CountChild& c) {
            Node* rho = n.mparents[0];
            if (!rho) return;
            conjugate_update(ctx, c, *rho, v);
            rho->mchild.reset();
          }},
      n.kind);
  n.mparents = {};
}

/// n takes its values: its parents conditioned (by condition_parents, before), its own state dropped, and a node
/// tied to it by an observed sum realized with it.
void set_realized(Node& n, const Values& values) {
  // the partner's values first: the one step that may fail (device memory) comes before anything changes
  Values partner = n.tied ? linear(values, n.tied->tie_a, n.tied->tie_c, 1, 0) : Values{};
  if (n.group) group_realize(n, values);  // the other coordinates of its joint law conditioned on it
  n.state = State::realized;
  n.value = values;
  n.marginal.clear();
  n.operands.reset();
  if (auto y = std::move(n.tied)) {
    y->tied_to = nullptr;
    realize(*y, partner);
  }
}

/// The marginalized descendants of n along the M-path, nearest first.
std::vector<Node*> m_path_below(Node& n) {
  std::vector<Node*> path;
  for (Node* c = n.mchild.get(); c != nullptr; c = c->mchild.get()) path.push_back(c);
  return path;
}

/// Why a variable is drawn after absorb did not take its component over: past the budget, the joint laws' limit;
/// otherwise the shape's own reason.
Fallback fallback_after(Absorbed a, Fallback otherwise) { return a == Absorbed::over_budget ? Fallback::joint_limit : otherwise; }

/// Draws each of `nodes` that is still marginalized (reported first, so that strict mode refuses before anything
/// is drawn).
void draw_reported(const std::vector<Node*>& nodes, Fallback why) {
  std::vector<std::shared_ptr<Node>> keep;
  for (Node* c : nodes) keep.push_back(c->shared_from_this());
  for (Node* c : nodes)
    if (c->state == State::marginalized) fallback(*c, why);
  for (Node* c : nodes)
    if (c->state == State::marginalized) c->discrete() ? sample(*c) : sample_continuous(*c);
}

/// Ends n's M-path above its unheld leaves: a marginalized node that only its parent's mchild holds (no handle, no
/// child, no joint law or waiting Beta), with no M-path child of its own, no tie and no observation below it (not
/// absorbed), carries no information about its parents, so dropping it is exact and draws nothing. Repeated up the
/// path (a chain of such nodes goes at once).
void drop_unheld_leaves(Node& n) {
  for (auto path = m_path_below(n); !path.empty(); path.pop_back()) {
    Node* leaf = path.back();
    Node& parent = path.size() == 1 ? n : *path[path.size() - 2];
    if (leaf->mchild || leaf->absorbed || leaf->tied || leaf->tied_to || leaf->group || parent.mchild.use_count() != 1)
      return;
    parent.mchild.reset();
  }
}

/// Makes n the end of its M-path (its unheld leaves dropped first: drop_unheld_leaves). Where it can, the component is taken over by a joint law (absorb: n and its
/// marginalized descendants become coordinates, exactly, nothing drawn); only past the joint laws' budget
/// (Fallback::joint_limit), or for a component a joint law cannot hold (a count of a conjugate parent below n:
/// Fallback::pruned), is the M-path realized, deepest first, as in Murray et al.'s prune.
void prune(Node& n) {
  drop_unheld_leaves(n);
  if (!n.mchild) return;
  Absorbed a = Absorbed::unsupported;
  if (n.discrete() && (a = absorb(n)) == Absorbed::done) return;
  auto path = m_path_below(n);
  std::reverse(path.begin(), path.end());
  draw_reported(path, fallback_after(a, Fallback::pruned));
}

/// A marginalized parent about to get the new child `requester`: prune it, and realize it if it is tied to a node
/// other than the requester by an observed sum (a tied pair gets no new children; the requester itself may be
/// the partner, when pruning tied it: then it is no longer a new child and nothing more is needed).
void make_terminal(Node& n, const Node* requester) {
  prune(n);
  if (n.state == State::marginalized && n.discrete()) {
    const Node* partner = n.tied ? n.tied.get() : n.tied_to;
    if (partner != nullptr && partner != requester) {
      // the tie becomes a coordinate of a joint law, where it can
      const Absorbed a = absorb(n);
      if (a == Absorbed::done) return;
      fallback(n, fallback_after(a, Fallback::parent_realized));
      sample(n);
    }
  }
}

/// Before z = X + sY is marginalized: X and Y must be independent. If Y is an initialized direct child of X (or X
/// of Y), the pair is enumerated jointly (JointSum); otherwise every shared uninstantiated ancestor is realized.
void prepare_sum(Node& z) {
  auto* s = std::get_if<Sum>(&z.kind);
  if (!s) return;
  Node& x = *z.parents[0];
  Node& y = *z.parents[1];
  auto direct_child = [](Node& child, Node& parent) -> const DiscreteChild* {
    auto* c = std::get_if<DiscreteChild>(&child.kind);
    return (c && child.state == State::initialized && parent.state != State::realized &&
            child.parents[0].get() == &parent)
               ? c
               : nullptr;
  };
  if (const DiscreteChild* law = direct_child(y, x)) {  // z = X + s Y, Y | X ~ law
    z.operand_y = z.parents[1];
    z.kind = JointSum{law->law, +1, s->sign, law->each};
    z.parents[1].reset();
  } else if (const DiscreteChild* law2 = direct_child(x, y)) {  // z = Y' + s X' with X' = y the parent, Y' = x the child
    z.operand_y = z.parents[0];
    z.kind = JointSum{law2->law, s->sign, +1, law2->each};
    z.parents[0] = z.parents[1];
    z.parents[1].reset();
  }
}

}  // namespace

std::optional<Laws> query_marginal(Node& n) {
  if (n.state != State::marginalized || !n.discrete() || n.group) return std::nullopt;
  drop_unheld_leaves(n);
  if (!n.mchild) return std::nullopt;
  Context& ctx = *n.context;
  const auto& known = ctx.over_budget_component;
  if (ctx.over_budget_epoch != ctx.epoch || std::find(known.begin(), known.end(), &n) == known.end()) {
    if (absorb(n) != Absorbed::over_budget) return std::nullopt;  // done: n is a member now
    ctx.over_budget_epoch = ctx.epoch;
    ctx.over_budget_component = component_nodes(n);
  }
  return component_marginal(n);
}

const Laws& law(Node& n) {
  if (n.group) {  // a coordinate of a joint law: its marginal, computed when asked
    n.marginal = group_marginal(n);
    return n.marginal;
  }
  if (n.tied_to) {  // a X + c, mapped afresh when asked (X may be conditioned by its children while tied)
    n.marginal = affine(*n.context, law(*n.tied_to), n.tie_a, n.tie_c);
    return n.marginal;
  }
  if (n.marginal.parameters) n.marginal = dense(n.marginal);  // its weights, written once they are needed
  if (!n.marginal.empty()) return n.marginal;
  if (!n.tie_base.empty()) {  // its partner died while tied
    n.marginal = affine(*n.context, n.tie_base, n.tie_a, n.tie_c);
    n.tie_base.clear();
  } else if (n.operands) {  // a sum's convolution, made once
    n.marginal = sum(*n.context, (*n.operands)[0], (*n.operands)[1], std::get<Sum>(n.kind).sign);
    const auto t = std::move(n.operand_tails);
    if (t && on_host(n.marginal))  // what truncation dropped from the operands, convolved along
      n.tails = summed_tails((*t)[0], (*t)[1], std::get<Sum>(n.kind).sign, n.marginal.host);
    // with both operands gone nothing will be conditioned on the sum: their laws are not needed any more
    if (!n.mparents[0] && !n.mparents[1]) n.operands.reset();
  }
  return n.marginal;
}

void fallback(Node& n, Fallback reason) {
  Context& ctx = *n.context;
  if (ctx.strict)
    throw inexact_error(std::string("tally::runtime::Graph (strict): would sample ") + n.name + " (" +
                            to_string(reason) + ") to go on; the step was refused",
                        {Sampled{n.name, reason}});
  (ctx.report ? *ctx.report : ctx.pending).push_back({n.name, reason});  // outside an observation: the next one
}

void graft(Node& root) {
  ++root.context->epoch;
  // Depth-first, post-order, with an explicit stack: chains of any length graft in constant stack. Each entry is
  // (node, expanded, the child that asked for it).
  struct Entry {
    std::shared_ptr<Node> node;
    bool expanded;
    const Node* requester;
  };
  std::vector<Entry> stack{{root.shared_from_this(), false, nullptr}};
  while (!stack.empty()) {
    auto [v, expanded, requester] = stack.back();
    stack.pop_back();
    // a node may change state while its parents are grafted (pruning can realize or tie it): check every time
    if (v->state == State::realized) continue;
    if (v->state == State::marginalized) {
      resolve_mixture(*v);  // a Beta waiting for a count's value gets it first
      if (requester == nullptr)
        prune(*v);
      else
        make_terminal(*v, requester);
      continue;
    }
    if (!expanded) {
      if (std::holds_alternative<BetaThinning>(v->kind)) make_count_child(*v);  // kept only while unobserved
      prepare_sum(*v);
      if (std::holds_alternative<Sum>(v->kind)) {
        // operands with a common uninstantiated ancestor: that ancestor is drawn first (before grafting the
        // operands would prune one of them instead), so that the operands are independent given it
        while (Node* a = shared_ancestor(*v->parents[0], *v->parents[1])) {
          const auto hold = a->shared_from_this();
          graft(*a);
          if (a->state != State::marginalized) continue;
          // kept exactly: the ancestor becomes a joint law that its descendants join as they are grafted, so
          // that the operands end up coordinates of one joint law (joint/joint.hpp)
          const Absorbed took = a->discrete() ? absorb(*a) : Absorbed::unsupported;
          if (took == Absorbed::done) break;
          fallback(*a, fallback_after(took, Fallback::shared_ancestor));
          a->discrete() ? sample(*a) : sample_continuous(*a);
        }
      }
      stack.push_back({v, true, requester});
      for (auto& p : v->parents)
        if (p) stack.push_back({p, false, v.get()});
      for (auto& p : v->more_parents)
        if (p) stack.push_back({p, false, v.get()});
      continue;
    }
    if (const auto* j = std::get_if<JointSum>(&v->kind); j && v->parents[0]->state == State::realized) {
      // X was realized while it was grafted (a sum of realized operands, say): z = s_x x + s_y Y is an ordinary sum
      // of a constant and Y, and Y, which lives on, must take part (observing z conditions it)
      if (auto y = v->operand_y.lock(); y && y->state == State::initialized) {
        auto x = v->parents[0];
        if (j->sign_x == 1) {
          v->kind = Sum{j->sign_y};
          v->parents = {x, y};
        } else {  // -x + Y (s_y = +1)
          v->kind = Sum{-1};
          v->parents = {y, x};
        }
        v->operand_y.reset();
        stack.push_back({v, false, requester});
        continue;
      }
    }
    if (auto* sum_of = std::get_if<Sum>(&v->kind);
        sum_of && v->parents[0]->state == State::realized && v->parents[1]->state == State::realized) {
      // both operands realized: the sum is their sum, computed, not drawn
      v->value = linear(v->parents[0]->value, 1, v->parents[1]->value, sum_of->sign, 0);
      v->state = State::realized;
      v->parents = {};
      continue;
    }
    if (std::holds_alternative<Sum>(v->kind)) {
      // the operands are grafted; realize shared ancestors until they are independent (operands in one joint
      // law are not: the sum joins it)
      const Node* const sum_node = v.get();  // (a structured binding: clang 14 does not capture it)
      auto one_law = [sum_node] {
        return sum_node->parents[0]->group && sum_node->parents[0]->group == sum_node->parents[1]->group;
      };
      while (Node* a = one_law() ? nullptr : shared_ancestor(*v->parents[0], *v->parents[1])) {
        graft(*a);
        if (a->state == State::marginalized) {
          // the operands and their shared ancestor taken over by joint laws, where they can be: the sum joins them
          Absorbed took = a->discrete() ? absorb(*a) : Absorbed::unsupported;
          for (auto& p : v->parents)
            if (took == Absorbed::done && p->state == State::marginalized) took = absorb(*p);
          if (took == Absorbed::done && one_law()) break;
          if (a->state != State::marginalized) continue;
          fallback(*a, fallback_after(took, Fallback::shared_ancestor));
          a->discrete() ? sample(*a) : sample_continuous(*a);
        }
        for (auto& p : v->parents) graft(*p);
        for (auto& p : v->parents)
          if (p->state == State::marginalized) make_terminal(*p, v.get());
      }
    }
    marginalize(*v);
  }
}

void realize(Node& n, const Values& values) {
  ++n.context->epoch;
  const auto keep = n.shared_from_this();
  if (n.state == State::realized) return;
  if (Node* x = n.tied_to) {  // n = a X + c: realize X instead (a = +-1, so X is an integer)
    realize(*x, linear(values, n.tie_a, n.tie_c, -n.tie_a, 0));
    return;
  }
  condition_parents(n, values, nullptr);
  set_realized(n, values);
}

bool draw_directly(Node& n) {
  if (n.state != State::initialized) return false;
  Context& ctx = *n.context;
  if (const auto* r = std::get_if<DiscreteRoot>(&n.kind)) {  // one law for every particle: drawn from it once made
    const Pmf& law = r->prior;
    const std::uint64_t draw = ctx.draws;
    n.value = make_values(gpu::sample_shared(std::span<const double>(law.weights().data(), std::size_t(law.size())),
                                             law.lo(), ctx.particles, ctx.seed, draw, ctx.first_particle, ctx.where),
                          law.lo() >= 0);
    ++ctx.draws;
    n.state = State::realized;
    return true;
  }
  const Values* trials = nullptr;
  const gpu::Column<double>* q = nullptr;
  double keep = 0.0;  // a thinning's one probability (q stays null)
  if (const auto* b = std::get_if<PerParticleBinomial>(&n.kind)) {  // its parent is realized when it is made
    trials = &n.parents[0]->value;
    q = b->p.get();
  } else if (const auto* c = std::get_if<DiscreteChild>(&n.kind)) {
    const auto* t = std::get_if<Thinning>(&c->law);
    if (t == nullptr || n.parents[0]->state != State::realized) return false;
    trials = &n.parents[0]->value;
    keep = t->keep;
    if (c->each) q = &c->each->keep;  // a probability per group
  } else if (const auto* k = std::get_if<CountChild>(&n.kind)) {
    if (k->family != CountChild::binomial || n.parents[0]->state != State::realized) return false;
    trials = &k->trials;
    q = &n.parents[0]->continuous->scalar;
  } else {
    return false;
  }
  const auto hold = n.shared_from_this();
  const std::uint64_t draw = ctx.draws;  // counted once drawn: a failed draw (device memory) is retried with it
  n.value = make_values(q != nullptr ? gpu::sample_binomial(**trials, *q, ctx.seed, draw, ctx.first_particle)
                                      : gpu::sample_binomial(**trials, keep, ctx.seed, draw, ctx.first_particle),
                        true, trials->largest ? *trials->largest : gpu::LaterMax());  // a draw of n trials: <= n
  ++ctx.draws;
  n.state = State::realized;
  n.parents = {};
  return true;
}

void sample(Node& n) {
  if (Node* x = n.tied_to) return sample(*x);  // the pair is drawn through X (its partner follows)
  Context& ctx = *n.context;
  const std::uint64_t draws = ctx.draws;
  try {
    realize(n, detail::sample(ctx, law(n)));
  } catch (...) {
    // realize() changes nothing before what may fail (a device allocation while the parents are conditioned):
    // the draw is forgotten too, so that a retry draws the same values, as if the failed call had not been made
    if (n.state != State::realized) ctx.draws = draws;
    throw;
  }
}

void sample_continuous(Node& n) {
  resolve_mixture(n);
  prune(n);
  draw_continuous(*n.context, n);
  n.state = State::realized;
}

std::pair<gpu::Column<double>, Bound> observe(Node& n, const Values& values) {
  Context& ctx = *n.context;
  const auto keep = n.shared_from_this();
  if (n.state == State::initialized && std::holds_alternative<DiscreteChild>(n.kind) &&
      n.parents[0]->state == State::realized) {
    // log P(y = v | x) for the realized x (which has no joint law and nothing to graft): a thinning of a count known
    // to be >= 0 by its log mass, written and added to the log-weights in one pass on the device (a bootstrap
    // filter's observation), else the same conditioning on point masses (one pass, no child law)
    const Values& x = n.parents[0]->value;
    const DiscreteChild& child = std::get<DiscreteChild>(n.kind);
    const ChildLaw& law = child.law;
    const auto* thinning = std::get_if<Thinning>(&law);
    std::pair<gpu::Column<double>, Bound> out;
    if (ctx.device() && thinning != nullptr && x.nonnegative && child.each) {  // a probability per group
      out.first = gpu::filled(0.0, ctx.particles, ctx.where);
      gpu::add_binomial_log_mass(*x, child.each->keep, *values, out.first);
      gpu::add_to(ctx.changing_log_weight(), out.first);
    } else if (ctx.device() && thinning != nullptr && x.nonnegative) {
      out.first = gpu::Column<double>::allocate(ctx.where, ctx.particles, "tally::runtime::observe");
      gpu::observe_binomial(*x, thinning->keep, *values, out.first, ctx.changing_log_weight());
    } else {
      LogLikelihood ll = zero_log_likelihood(ctx);
      if (child.each)
        condition(ctx, points(ctx, x), *child.each, values, ll);
      else
        condition(ctx, points(ctx, x), law, values, ll);
      gpu::add_to(ctx.changing_log_weight(), ll.values);
      out = {std::move(ll.values), std::move(ll.error)};
    }
    n.parents = {};
    set_realized(n, values);
    return out;
  }
  LogLikelihood ll = zero_log_likelihood(ctx);
  auto done = [&]() {
    gpu::add_to(ctx.changing_log_weight(), ll.values);
    return std::pair<gpu::Column<double>, Bound>{std::move(ll.values), std::move(ll.error)};
  };
  if (n.state == State::initialized && std::holds_alternative<SelectedChild>(n.kind)) {
    // a child of several random parents: their joint law is conditioned directly
    for (auto* p : {&n.parents[0]}) graft(**p);
    for (const auto& p : n.more_parents) graft(*p);
    observe_joint_child(n, values, ll);
    return done();
  }
  if (n.state == State::initialized && std::holds_alternative<BetaThinning>(n.kind)) {
    // Binomial(X, rho): X conditioned exactly where it can be; otherwise X is realized and n is a count of rho
    if (observe_beta_thinning(n, values, ll)) return done();
    make_count_child(n);
  }
  if (n.state == State::initialized &&
      (std::holds_alternative<CountChild>(n.kind) || std::holds_alternative<DiscreteChild>(n.kind))) {
    // An observed child of a parent: the parent is conditioned directly (the child's own law is never built: a
    // heavy-tailed beta-negative-binomial, a Poisson mixture). graft(parent) prunes its M-path first, so that the
    // parent's law includes everything observed below it.
    // held: grafting the parent may change n and leave this the parent's last owner. Pruning the parent's M-path
    // may realize a sum of n and its parent (Z = X + Y, Y | X), which ties n to the parent (n marginalized, its
    // parents cleared: fuzz/corpus/engine/regress-uaf-tied-child-d765d2e198); n is then observed as any other node
    // (below)
    const std::shared_ptr<Node> parent_hold = n.parents[0];
    Node& parent = *parent_hold;
    const bool fresh_parent = parent.state == State::initialized;  // grafted here: its laws are its prior
    graft(parent);
    if (n.state == State::initialized && n.parents[0] == parent_hold) {
      if (auto* c = std::get_if<CountChild>(&n.kind)) {
        add_count_log_likelihood(ctx, *c, parent, values, ll);
        attach(parent, n, 0);
        n.state = State::marginalized;
        n.parents = {};
        condition_parents(n, values, nullptr);  // the conjugate update (impossible values skipped)
        set_realized(n, values);
        return done();
      }
      if (parent.group && observe_joint_child(n, values, ll)) return done();  // a coordinate of a joint law
      // (a coordinate of a joint law that did not condition it: grafted below, its parent drawn)
      if (parent.state == State::marginalized && parent.tied_to == nullptr && !parent.group) {
        // computed before anything changes: a refused law (a thinning of a possibly negative count) leaves the graph
        const DiscreteChild& child = std::get<DiscreteChild>(n.kind);
        const ChildLaw& child_law = child.law;  // (a law per group: group 0's, of every group's kind)
        // an observation in the tail that the prior's truncation cut: the prior's window extended from its family
        if (fresh_parent && !parent.mchild && !parent.group)
          if (auto wide = widened_prior_for_child(parent, child_law, values)) parent.marginal = prior(ctx, *wide);
        if (!ctx.device()) law(parent);  // a sum's convolution made first: it brings its operands' tails
        const auto tails =
            ctx.device() || child.each || !may_know_tails(parent) ? nullptr : later_tails(parent, law(parent).host);
        const Bound error_before = ll.error;
        std::vector<double> log_likelihood;  // this conditioning's, per particle (where tails follow)
        if (tails) log_likelihood = ll.values.host();
        Laws posterior = child.each ? condition(ctx, law(parent), *child.each, values, ll)
                                    : condition(ctx, law(parent), child_law, values, ll);
        parent.marginal = std::move(posterior);
        parent.absorbed = true;
        // with the tails known, the likelihood's error is theirs (far below e M / L, which takes every dropped
        // value as the likeliest)
        if (tails) {
          const std::vector<double>& after = ll.values.host();
          for (std::size_t i = 0; i < log_likelihood.size(); ++i) log_likelihood[i] = after[i] - log_likelihood[i];
          ll.error = condition_tails(parent, tails, child_law, values, std::move(log_likelihood), error_before, ll.error);
        }
        n.parents = {};
        set_realized(n, values);
        return done();
      }
    }
  }
  const bool fresh_root = n.state == State::initialized && std::holds_alternative<DiscreteRoot>(n.kind);
  graft(n);
  if (fresh_root && n.state == State::marginalized && !n.mchild && !n.group && !n.tied) {
    // observed in the tail its prior's truncation cut: the window extended from the family
    const auto* r = std::get_if<DiscreteRoot>(&n.kind);
    if (r->family && r->prior.error_bound() > 0.0)
      if (const auto v = observed_range(ctx, values); !v.empty())
        if (auto wide = widened_prior(n, v.front(), v.back())) n.marginal = prior(ctx, *wide);
  }
  if (n.state == State::realized) {  // grafting realized it (a tied partner was drawn)
    add_log_equal(n.value, values, ll);
    return done();
  }
  // P(n = v) from its parents' laws where n's own law is theirs pushed forward (nothing absorbed below it since)
  const bool through_parents = n.tied_to == nullptr && !n.absorbed && n.mparents != std::array<Node*, 2>{} &&
                               (std::holds_alternative<DiscreteChild>(n.kind) || std::holds_alternative<Sum>(n.kind) ||
                                std::holds_alternative<JointSum>(n.kind));
  if (!through_parents) add_log_mass(ctx, law(n), values, ll);
  if (n.tied_to) {
    realize(n, values);
    return done();
  }
  condition_parents(n, values, through_parents ? &ll : nullptr);
  set_realized(n, values);
  return done();
}

}  // namespace tally::runtime::detail
