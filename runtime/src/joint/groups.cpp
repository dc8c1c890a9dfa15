// Joint groups' bookkeeping: variables coupled into one joint law (couple), linear members read from its
// hyperplanes and made axes where needed, and the elimination of every axis nobody can reach any more (sweep).
#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "batches.hpp"
#include "steps.hpp"
#include "tally/distributions/algebra.hpp"

namespace tally::runtime::detail {

namespace joint_steps {

JointGroup::LinearMember* linear_member(JointGroup& g, const Node& n) {
  for (auto& l : g.linear)
    if (l.node.lock().get() == &n) return &l;
  return nullptr;
}

Coordinates coefficients_of(const JointGroup& g, const JointGroup::LinearMember& l) {
  Coordinates k(static_cast<std::size_t>(g.rank()), 0);
  for (const auto& [node, a] : l.terms) {
    std::size_t at = 0;
    while (at < g.members.size() && !same_node(g.members[at], node)) ++at;
    if (at == g.members.size()) throw std::logic_error("tally::runtime: a linear member reads a missing axis");
    k[at] += a;
  }
  return k;
}

void add_linear_member(JointGroup& g, JointGroup::LinearMember l) {
  std::erase_if(l.terms, [](const auto& term) { return term.second == 0; });
  g.linear.push_back(std::move(l));
}

bool read_by_linear(const JointGroup& g, int a) {
  const auto& m = g.members[static_cast<std::size_t>(a)];
  for (const auto& l : g.linear)
    for (const auto& term : l.terms)
      if (same_node(term.first, m)) return true;
  return false;
}

void materialize(const std::shared_ptr<JointGroup>& gp, std::size_t k, Context& ctx) {
  JointGroup& g = *gp;
  const Truncation t = joint_truncation(ctx);
  const JointGroup::LinearMember& l = g.linear[k];
  const Coordinates kappa = coefficients_of(g, l);
  if (g.members.empty()) {  // every axis was realized: l is its constant
    g.set(compute(
        ctx, [&](std::size_t i) { return joint(Pmf(l.constant(i), Eigen::VectorXd::Ones(1))); },
        [&](std::size_t i) { return l.constants.empty() || repeats(l.constants, i); }, l.constants.empty()));
  } else {
    std::vector<std::int64_t> c;  // c_i by particle (one value where every particle's is one)
    if (!l.constants.empty())
      for (std::size_t i = 0; i < ctx.particles; ++i) c.push_back(l.constant(i));
    else if (l.offset != 0)
      c.push_back(l.offset);
    compute_batched(
        ctx, g, g.rank() + 1,
        [&](std::size_t i) { return linear_combination(*g.laws()[i], kappa, l.constant(i), -1, t); },
        [&](BatchIn in, const Starts& s, const BatchPlace& at) -> std::optional<BatchOut> {
          return linear_batch(std::move(in), s, at, kappa, c, -1, {});
        },
        [&](std::size_t i) { return g.repeats(i) && (l.constants.empty() || repeats(l.constants, i)); }, nullptr,
        g.uniform() && l.constants.empty());
  }
  g.members.push_back(l.node);
  g.linear.erase(g.linear.begin() + static_cast<std::ptrdiff_t>(k));
}

int member_axis(const std::shared_ptr<JointGroup>& g, Node& n) {
  for (std::size_t k = 0; k < g->linear.size(); ++k)
    if (g->linear[k].node.lock().get() == &n) {
      materialize(g, k, *n.context);
      break;
    }
  return axis_of(*g, n);
}

/// Sums out the axes nobody needs, and dissolves a group left with one live member (it becomes an ordinary
/// marginalized node with its marginal). A linear member nobody holds is dropped; one whose form reads an axis
/// nobody needs becomes an axis first (where the budget allows: otherwise that axis stays for now).
void sweep(const std::shared_ptr<JointGroup>& gp, Context& ctx) {
  JointGroup& g = *gp;
  std::erase_if(g.linear, [](const JointGroup::LinearMember& l) { return l.node.expired(); });
  for (int a = g.rank(); a-- > 0;) {
    if (!g.members[static_cast<std::size_t>(a)].expired()) continue;
    if (read_by_linear(g, a)) {
      try {
        for (std::size_t k = g.linear.size(); k-- > 0;) {
          const auto& terms = g.linear[k].terms;
          if (std::any_of(terms.begin(), terms.end(), [&](const auto& term) {
                return same_node(term.first, g.members[static_cast<std::size_t>(a)]);
              }))
            materialize(gp, k, ctx);  // appended: axis a keeps its place
        }
      } catch (const over_budget&) {
        continue;
      }
    }
    if (g.rank() == 1) {
      g.members.clear();
      g.clear_laws();
      return;
    }
    batched(
        ctx, g, [&](auto f, auto same, bool one) { return shared_per_particle(ctx.particles, f, same, one); },
        g.rank(), [&](std::size_t i) { return marginalize_out(*g.laws()[i], a); },
        [&](BatchIn in, const Starts&, const BatchPlace&) -> std::optional<BatchOut> {
          return sum_out_batch(std::move(in), a);
        },
        [&](std::size_t i) { return g.repeats(i); }, nullptr, g.uniform(), false);  // not trimmed (as the host's)
    g.members.erase(g.members.begin() + a);
  }
  if (g.rank() == 1 && g.linear.empty()) {
    const auto m = g.members[0].lock();
    m->marginal = group_marginal(*m);  // its axis's, read where the tables are
    g.members.clear();
    g.clear_laws();
    m->group.reset();
  }
}

/// Whether the marginalized standalone p can become an axis: nothing above it (a chain's marginalized parent) or
/// below it would be left out of the joint law.
bool joinable(const Node& p) {
  return p.discrete() && p.state == State::marginalized && !p.group && p.mparents[0] == nullptr &&
         p.mparents[1] == nullptr && !p.mchild && !p.tied && p.tied_to == nullptr;
}

/// The rank-1 group of the joinable p (over_budget when its laws alone exceed the budget).
void group_of_one(Node& p) {
  Context& ctx = *p.context;
  const Batch<Pmf> pmfs = host_laws(law(p));
  const auto tails = known_tails(p, pmfs);
  auto g = std::make_shared<JointGroup>();
  g->set(compute(ctx, [&](std::size_t i) { return with_tails(joint(pmfs[i]), tails.get(), i); },
                    [&](std::size_t i) { return repeats(pmfs, i) && same_tails(tails.get(), i); },
                    uniform(pmfs) && (!tails || tails->uniform())));
  g->members.push_back(p.weak_from_this());
  p.group = std::move(g);
  p.marginal.clear();
  p.operands.reset();
}

/// One group holding every non-realized node of `nodes` (each a member or joinable): standalone ones become axes,
/// different groups are merged (independent: their outer product). nullptr when every node is realized.
std::shared_ptr<JointGroup> couple(const std::vector<Node*>& nodes) {
  std::shared_ptr<JointGroup> g;
  for (Node* p : nodes) {
    if (p == nullptr || p->state == State::realized) continue;
    if (!p->group) {
      if (joinable(*p)) {
        group_of_one(*p);
      } else {
        const Absorbed a = absorb(*p);
        if (a == Absorbed::over_budget) throw over_budget{};
        if (a != Absorbed::done)
          throw std::logic_error("tally::runtime: a variable inside a marginalized chain joined a joint law");
      }
    }
    if (!g) {
      g = p->group;
      continue;
    }
    if (p->group == g) continue;
    const auto from = p->group;
    Context& ctx = *p->context;
    const Truncation t = joint_truncation(ctx);
    // a group with no axis left (every one realized) holds only constant linear members: no table to multiply
    if (from->rank() > 0 && g->rank() == 0) {
      if (const auto* r = from->resident())
        g->set(*r);
      else
        g->set(from->laws());
    } else if (from->rank() > 0) {
      // independent: the outer product of the two tables each particle holds (a batch where g's tables are one)
      compute_batched(
          ctx, *g, g->rank() + from->rank(),
          [&](std::size_t i) { return outer(*g->laws()[i], *from->laws()[i], t); },
          [&](BatchIn in, const Starts& s, const BatchPlace& at) -> std::optional<BatchOut> {
            return outer_batch(std::move(in), batch_input(*from, s, at.where), at);
          },
          [&](std::size_t i) { return g->repeats(i) && from->repeats(i); }, nullptr,
          g->uniform() && from->uniform());
    }
    for (auto& m : from->members) {
      g->members.push_back(m);
      if (auto live = m.lock()) live->group = g;
    }
    for (auto& l : from->linear) {  // their terms name members, which keep their nodes
      if (auto live = l.node.lock()) live->group = g;
      g->linear.push_back(std::move(l));
    }
    from->linear.clear();
  }
  return g;
}

void become_member(Node& n, const std::shared_ptr<JointGroup>& g) {
  n.group = g;
  n.state = State::marginalized;
  n.marginal.clear();
  n.operands.reset();
  n.parents = {};
  n.more_parents.clear();
}


}  // namespace joint_steps

using namespace joint_steps;

std::size_t JointGroup::bytes() const {
  if (resident_) return resident_->laws->bytes() + 4 * resident_->index.size() + 16 * resident_->bounds.size();
  const Laws& laws = host_;
  std::size_t b = 0;
  std::unordered_set<const JointPmf*> counted;  // a table shared by several particles, wherever they are, once
  for (std::size_t i = 0; i < (laws.uniform() ? std::min<std::size_t>(laws.size(), 1) : laws.size()); ++i)
    if (!(i > 0 && laws[i] == laws[i - 1]) && counted.insert(laws[i].get()).second)  // a run's: no lookup
      b += static_cast<std::size_t>(table_bytes(*laws[i])) + 64;
  return b;
}

bool JointGroup::repeats(std::size_t i) const {
  if (resident_) return i > 0 && resident_->index[i] == resident_->index[i - 1];
  return joint_steps::repeats(host_, i);
}

bool JointGroup::uniform() const { return resident_ ? resident_->laws->size() == 1 : host_.uniform(); }

Node* group_anchor(const Node& n) {
  Node* oldest = nullptr;
  for (const auto& w : n.group->members)
    if (auto m = w.lock(); m && m.get() != &n && (!oldest || m->id < oldest->id)) oldest = m.get();
  return oldest && oldest->id < n.id ? oldest : nullptr;
}

}  // namespace tally::runtime::detail
