// Joint nodes: coupled marginalized variables of the delayed-sampling graph kept in one joint law per particle,
// formed where an operation couples them, split again as they are realized or dropped (see joint_node.hpp).
#include "joint_node.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>

#include "node.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/error.hpp"

namespace tally::runtime::detail {
namespace {

using Tables = JointGroup::Laws;  // P joint laws (state.hpp's Laws are P laws of one variable)

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

/// A joint law that would exceed Truncation::max_joint_bytes (or max_size): the caller falls back.
struct over_budget {};

bool enabled(const Context& c) { return c.truncation.max_joint_bytes > 0; }

/// The truncation for joint operations: one table, while it is built (one particle at a time), may use the whole
/// budget; what the P tables of a result hold together is checked by compute().
Truncation joint_truncation(const Context& c) {
  Truncation t = c.truncation;
  t.max_size = std::max<std::int64_t>(1, std::min(t.max_size, c.truncation.max_joint_bytes / 8));
  return t;
}

/// The outer values of each axis whose mass is below the truncation's tolerance dropped (tally::truncate: at most
/// the tolerance in all, added to the error bound), so that tails a bounded law keeps down to 2^-1000 of its
/// largest entry do not multiply the sizes of the tables built from it.
JointPmf trimmed(const JointPmf& d, const Truncation& t) { return t.tolerance > 0 && t.tolerance < 1 ? truncate(d, t) : d; }

// ---- particles with equal inputs -------------------------------------------------------------------------------
// Until something is drawn, every particle of a program holds the same joint laws: an operation computes once and
// copies its result to each particle whose inputs equal the previous particle's (compared entry by entry, far
// cheaper than the operation).
bool equal(const JointPmf& a, const JointPmf& b) {
  const bool same = a.lo() == b.lo() && a.shape() == b.shape() && a.log_scale() == b.log_scale() &&
                    a.spread_error_bound() == b.spread_error_bound() && a.weights() == b.weights();
  if (!same || (a.dropped() == nullptr) != (b.dropped() == nullptr)) return false;
  return a.dropped() == nullptr || a.dropped() == b.dropped() || equal(*a.dropped(), *b.dropped());
}
bool equal(const Pmf& a, const Pmf& b) {
  return a.lo() == b.lo() && a.size() == b.size() && a.log_scale() == b.log_scale() &&
         a.error_bound() == b.error_bound() && a.weights() == b.weights();
}
/// Whether particle i's table in b equals particle i - 1's.
bool repeats(const Tables& b, std::size_t i) { return i > 0 && b.size() > 1 && (b[i] == b[i - 1] || equal(*b[i], *b[i - 1])); }
template <class T>
bool repeats(const std::vector<T>& v, std::size_t i) {
  if constexpr (std::is_same_v<T, Pmf>)
    return i > 0 && equal(v[i], v[i - 1]);
  else
    return i > 0 && v[i] == v[i - 1];
}

/// P values made by f(i), f called only where same(i) is false (else particle i - 1's value is copied).
template <class T, class F, class Same>
Batch<T> per_particle(std::size_t particles, F f, Same same) {
  std::optional<T> last;
  return Batch<T>::make(particles, [&](std::size_t i) {
    if (!last || !same(i)) last.emplace(f(i));
    return *last;
  });
}

/// The same for joint laws: equal particles share one table.
template <class F, class Same>
Tables shared_per_particle(std::size_t particles, F f, Same same) {
  std::shared_ptr<const JointPmf> last;
  return Tables::make(particles, [&](std::size_t i) {
    if (!last || !same(i)) last = std::make_shared<const JointPmf>(f(i));
    return last;
  });
}

/// P joint laws made by f(i) (trimmed), within the budget (over_budget, and nothing kept, otherwise); f is called
/// only where same(i) is false.
template <class F, class Same>
Tables compute(const Context& c, F f, Same same) {
  std::int64_t bytes = 0;
  std::shared_ptr<const JointPmf> last;
  try {
    return Tables::make(c.particles, [&](std::size_t i) {
      if (!last || !same(i)) {
        last = std::make_shared<const JointPmf>(trimmed(f(i), c.truncation));
        bytes += static_cast<std::int64_t>(last->size()) * 8;  // tables shared by equal particles count once
        if (bytes > c.truncation.max_joint_bytes) throw over_budget{};
      }
      return last;
    });
  } catch (const overflow_error&) {  // a table past the budget
    throw over_budget{};
  }
}

int axis_of(const JointGroup& g, const Node& n) {
  for (int a = 0; a < g.rank(); ++a)
    if (g.members[static_cast<std::size_t>(a)].lock().get() == &n) return a;
  throw std::logic_error("tally::runtime: a joint node's member is missing from its law");
}

Coordinates unit(int rank, int axis, std::int64_t coefficient) {
  Coordinates k(static_cast<std::size_t>(rank), 0);
  k[static_cast<std::size_t>(axis)] = coefficient;
  return k;
}

/// Appends a constant coordinate c (a realized parent, for the length of one operation).
JointPmf append_constant(const JointPmf& d, std::int64_t c, const Truncation& t) {
  return linear_combination(d, Coordinates(static_cast<std::size_t>(d.rank()), 0), c, -1, t);
}

/// The outer product of independent joint laws: the axes of a, then those of b.
JointPmf outer(const JointPmf& a, const JointPmf& b, const Truncation& t) {
  Coordinates lo = a.lo(), shape = a.shape();
  lo.insert(lo.end(), b.lo().begin(), b.lo().end());
  shape.insert(shape.end(), b.shape().begin(), b.shape().end());
  if (static_cast<double>(a.size()) * static_cast<double>(b.size()) > static_cast<double>(t.max_size)) throw over_budget{};
  Eigen::VectorXd w(a.size() * b.size());
  for (Eigen::Index i = 0; i < a.size(); ++i) w.segment(i * b.size(), b.size()) = a.weights()[i] * b.weights();
  const double e = (1.0 + a.spread_error_bound()) * (1.0 + b.spread_error_bound()) - 1.0;
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), a.log_scale() + b.log_scale(), e);
  if (!a.dropped() && !b.dropped()) return r;
  // (a + x)(b + y) - a b = x b + (a + x) y, x and y the dropped measures
  try {
    const JointPmf bare_a = a.with_error_bound(0.0), bare_b = b.with_error_bound(0.0);
    std::optional<JointPmf> more;
    if (a.dropped()) more = outer(*a.dropped(), bare_b, t);
    if (b.dropped()) {
      const JointPmf whole_a = a.dropped() ? add_measures(bare_a, *a.dropped()) : bare_a;
      const JointPmf xy = outer(whole_a, *b.dropped(), t);
      more = more ? add_measures(*more, xy) : xy;
    }
    return r.with_dropped(more);
  } catch (const over_budget&) {  // the dropped measure as spread
    return r.with_spread_error_bound((1.0 + a.error_bound()) * (1.0 + b.error_bound()) - 1.0);
  } catch (const overflow_error&) {
    return r.with_spread_error_bound((1.0 + a.error_bound()) * (1.0 + b.error_bound()) - 1.0);
  }
}

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

}  // namespace

namespace {

/// r (an operation's result on d) with d's dropped measure carried through the same operation, op(x); where that
/// table would be too large, the dropped mass joins r's spread bound instead (tally::JointPmf's two parts).
template <class Op>
JointPmf carry_dropped(const JointPmf& d, const JointPmf& r, Op op) {
  const JointPmf* x = d.dropped();
  if (x == nullptr) return r;
  try {
    return r.with_dropped(op(*x));
  } catch (const overflow_error&) {
    return r.with_spread_error_bound(r.spread_error_bound() + (1.0 + x->error_bound()) * std::exp(x->log_mass() - r.log_mass()));
  }
}

/// The binomial terms of a thinning or a split of X_axis (a count: domain_error saying `what` otherwise): for every
/// entry m of d at (o, x, r) (o the earlier axes, r the later ones, as one index each) and every y = 0 .. x,
/// term(o, x, r, y, m Bin(y; x, q)), each pmf value computed once per (x, y), not once per entry; zero entries
/// skipped.
template <class Term>
void binomial_terms(const JointPmf& d, int axis, double q, const char* what, Term term) {
  if (d.lo(axis) < 0)
    tally::detail::fail<domain_error>("tally::runtime: ", what, ", but its support starts at ", d.lo(axis));
  const std::int64_t hi = d.hi(axis), lo = d.lo(axis), extent = d.extent(axis), stride = d.stride(axis);
  const std::int64_t outer = d.size() / (extent * stride);
  std::vector<double> kernel;
  for (std::int64_t x = lo; x <= hi; ++x) {
    kernel.resize(static_cast<std::size_t>(x + 1));
    for (std::int64_t y = 0; y <= x; ++y) kernel[static_cast<std::size_t>(y)] = std::exp(log_binomial_pmf(x, y, q));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t r = 0; r < stride; ++r) {
        const double m = d.weights()[(o * extent + (x - lo)) * stride + r];
        if (m == 0.0) continue;
        for (std::int64_t y = 0; y <= x; ++y) term(o, x, r, y, m * kernel[static_cast<std::size_t>(y)]);
      }
  }
}

}  // namespace

JointPmf thin_in_place(const JointPmf& d, int axis, double q) {
  // the same box but for axis, now [0, hi]; each old entry spreads over y = 0..x with Bin(y; x, q) (sums of
  // non-negative products: every entry keeps its relative precision)
  const std::int64_t hi = d.hi(axis), stride = d.stride(axis);  // stride unchanged: the later extents
  Coordinates new_lo = d.lo(), shape = d.shape();
  new_lo[static_cast<std::size_t>(axis)] = 0;
  shape[static_cast<std::size_t>(axis)] = hi + 1;
  const std::int64_t outer = d.size() / (d.extent(axis) * stride);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(outer * (hi + 1) * stride);
  binomial_terms(d, axis, q, "a thinning's parent must be a count >= 0",
                 [&](std::int64_t o, std::int64_t, std::int64_t r, std::int64_t y, double v) {
                   w[(o * (hi + 1) + y) * stride + r] += v;
                 });
  const JointPmf r(std::move(new_lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(thin_in_place(x, axis, q)); });
}

JointPmf split_in_place(const JointPmf& d, int axis, double q) {
  // (.., x, .., ) -> (.., x - y, .., y) with Bin(y; x, q): the kept part on [0, hi], the moved part appended on
  // [0, hi]
  const std::int64_t hi = d.hi(axis), stride = d.stride(axis);  // old index (o, x, r); new index (o, x - y, r, y)
  Coordinates new_lo = d.lo(), shape = d.shape();
  new_lo[static_cast<std::size_t>(axis)] = 0;
  shape[static_cast<std::size_t>(axis)] = hi + 1;
  new_lo.push_back(0);
  shape.push_back(hi + 1);
  const std::int64_t outer = d.size() / (d.extent(axis) * stride);
  const double cells = double(outer) * double(hi + 1) * double(stride) * double(hi + 1);
  if (cells > double(std::numeric_limits<Eigen::Index>::max() / 2))
    tally::detail::fail<overflow_error>("tally::runtime: a split's table needs ", cells, " entries");
  Eigen::VectorXd w = Eigen::VectorXd::Zero(outer * (hi + 1) * stride * (hi + 1));
  binomial_terms(d, axis, q, "a split count must be >= 0",
                 [&](std::int64_t o, std::int64_t x, std::int64_t r, std::int64_t y, double v) {
                   w[((o * (hi + 1) + (x - y)) * stride + r) * (hi + 1) + y] = v;
                 });
  const JointPmf r(std::move(new_lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(split_in_place(x, axis, q)); });
}

namespace {

/// Appends the child Y | X_axis ~ law as a new axis.
JointPmf append_child(const JointPmf& d, int axis, const ChildLaw& law, const Truncation& t) {
  return std::visit(overloaded{[&](const AffineLaw& f) {
                                 return linear_combination(d, unit(d.rank(), axis, f.a), f.c, -1, t);
                               },
                               [&](const auto& k) { return add_child(d, axis, k, t); }},
                    law);
}

// ---- the largest likelihood of an observation over all parent values (for the error bounds) ---------------------
/// \f$\sup_{\lambda \ge 0} \mathrm{Poisson}(y; \lambda) = \mathrm{Poisson}(y; y)\f$.
double poisson_sup(std::int64_t y) { return y <= 0 ? (y == 0 ? 1.0 : 0.0) : std::exp(log_poisson_pmf(y, double(y))); }
/// \f$\sup_{n \ge 0} \mathrm{Binomial}(y; n, q)\f$: unimodal in n, largest near n = y / q.
double binomial_sup(std::int64_t y, double q) {
  if (y < 0) return 0.0;
  if (y == 0 || q >= 1.0) return 1.0;
  if (q <= 0.0) return 0.0;
  const double centre = std::floor(double(y) / q);
  double best = 0.0;
  for (double n = std::max(double(y), centre - 2); n <= centre + 2; ++n)
    best = std::max(best, std::exp(log_binomial_pmf(std::int64_t(n), y, q)));
  return std::min(1.0, best * (1 + 1e-12));
}
double likelihood_sup(const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const Thinning& k) { return binomial_sup(y, k.keep); },
                               [&](const ScaledPoisson&) { return poisson_sup(y); },
                               [&](const IndexedPoisson& k) {
                                 double best = 0.0;
                                 for (double r : k.rates) best = std::max(best, std::exp(log_poisson_pmf(y, r)));
                                 return std::min(1.0, best * (1 + 1e-12));
                               },
                               [&](const MarkovStep& k) {
                                 return y >= 0 && y < k.transition.cols() ? k.transition.col(y).maxCoeff() : 0.0;
                               },
                               [&](const AffineLaw&) { return 1.0; }},
                    law);
}
double likelihood_sup(const SelectedChild& s, std::int64_t y) {
  if (s.family == SelectedChild::poisson) return poisson_sup(y);
  double best = 0.0;
  for (double q : s.keep) best = std::max(best, binomial_sup(y, q));
  return best;
}

JointConditioned condition_child(const JointPmf& d, int axis, const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const AffineLaw& f) {
                                 return condition_on_linear(d, unit(d.rank(), axis, f.a), y - f.c);
                               },
                               [&](const auto& k) { return condition(d, axis, k, y); }},
                    law);
}

/// Sums out the axes nobody needs, and dissolves a group left with one live member (it becomes an ordinary
/// marginalized node with its marginal).
void sweep(const std::shared_ptr<JointGroup>& gp, Context& ctx) {
  JointGroup& g = *gp;
  for (int a = g.rank(); a-- > 0;) {
    if (!g.members[static_cast<std::size_t>(a)].expired()) continue;
    if (g.rank() == 1) {
      g.members.clear();
      g.laws.clear();
      return;
    }
    g.laws = shared_per_particle(
        ctx.particles, [&](std::size_t i) { return marginalize_out(*g.laws[i], a); },
        [&](std::size_t i) { return repeats(g.laws, i); });
    g.members.erase(g.members.begin() + a);
  }
  if (g.rank() == 1) {
    const auto m = g.members[0].lock();
    m->marginal = place(ctx, per_particle<Pmf>(
                                 ctx.particles, [&](std::size_t i) { return marginal(*g.laws[i], 0); },
                                 [&](std::size_t i) { return repeats(g.laws, i); }));
    g.members.clear();
    g.laws.clear();
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
  const auto pmfs = to_pmfs(law(p));
  const auto tails = known_tails(p, pmfs);
  auto g = std::make_shared<JointGroup>();
  g->laws = compute(ctx, [&](std::size_t i) { return with_tails(joint(pmfs[i]), tails.get(), i); },
                    [&](std::size_t i) { return repeats(pmfs, i) && same_tails(tails.get(), i); });
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
      if (!joinable(*p)) throw std::logic_error("tally::runtime: a variable inside a marginalized chain joined a joint law");
      group_of_one(*p);
    }
    if (!g) {
      g = p->group;
      continue;
    }
    if (p->group == g) continue;
    const auto from = p->group;
    Context& ctx = *p->context;
    const Truncation t = joint_truncation(ctx);
    g->laws = compute(
        ctx, [&](std::size_t i) { return outer(*g->laws[i], *from->laws[i], t); },
        [&](std::size_t i) { return repeats(g->laws, i) && repeats(from->laws, i); });
    for (auto& m : from->members) {
      g->members.push_back(m);
      if (auto live = m.lock()) live->group = g;
    }
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

void join_child(Node& n, const ChildLaw& law) {
  Context& ctx = *n.context;
  const Truncation t = joint_truncation(ctx);
  std::vector<std::shared_ptr<Node>> held{n.parents[0]};
  Node& x = *held[0];
  const auto g = x.group;
  const int a = axis_of(*g, x);
  // x lives on when anything beyond held and n.parents holds it (a handle, another child)
  const bool live = x.weak_from_this().use_count() > 2;
  const bool thinning = std::holds_alternative<Thinning>(law);
  // x is summed out at once: Y takes its place (thinning, Markov step, affine map; a Poisson child is appended)
  const bool in_place = !live && !std::holds_alternative<ScaledPoisson>(law) && !std::holds_alternative<IndexedPoisson>(law);
  auto laws = compute(ctx, [&](std::size_t i) {
    const JointPmf& d = *g->laws[i];
    if (in_place) {
      if (thinning) return thin_in_place(d, a, std::get<Thinning>(law).keep);
      if (const auto* m = std::get_if<MarkovStep>(&law)) return markov_step(d, a, *m, t);
      const auto& f = std::get<AffineLaw>(law);
      return affine(d, a, f.a, f.c, t);
    }
    return append_child(d, a, law, t);
  }, [&](std::size_t i) { return repeats(g->laws, i); });
  g->laws = std::move(laws);
  if (in_place)
    g->members[static_cast<std::size_t>(a)] = n.weak_from_this();
  else
    g->members.push_back(n.weak_from_this());
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
    std::vector<Pmf> laws;
    std::int64_t sign;
    std::shared_ptr<const DroppedTails> tails;
  };
  std::vector<Folded> folded;
  std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>> constants;
  for (int k = 0; k < 2; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state == State::realized)
      constants.emplace_back(to_vector(p.value), coef[k]);
    else if (p.group || live(p))
      axis_nodes.push_back(&p);
    else {
      std::vector<Pmf> laws = to_pmfs(law(p));
      auto tails = known_tails(p, laws);
      folded.push_back({std::move(laws), coef[k], std::move(tails)});
    }
  }
  const auto g = couple(axis_nodes);
  Coordinates kappa(static_cast<std::size_t>(g->rank()), 0);
  int replace = -1;
  for (int k = 0; k < 2; ++k) {
    Node& p = *held[static_cast<std::size_t>(k)];
    if (p.state == State::realized || !p.group) continue;
    const int a = axis_of(*g, p);
    kappa[static_cast<std::size_t>(a)] += coef[k];
    if (!live(p)) replace = a;
  }
  auto laws = compute(ctx, [&](std::size_t i) {
    std::int64_t c = 0;
    for (const auto& [v, s] : constants) c += s * v[i];
    JointPmf d = linear_combination(*g->laws[i], kappa, c, replace, t);
    const int za = replace >= 0 ? replace : d.rank() - 1;
    for (const Folded& f : folded) {
      const Pmf y = f.sign > 0 ? f.laws[i] : negate(f.laws[i]);
      if (f.tails) {  // its tails where they are (the dropped measure), the rest spread
        const auto& x = f.tails->dropped[i];
        const double rest = f.tails->spread[i];
        d = x ? add_independent(d, za, y, f.sign > 0 ? *x : negate(*x), rest, t)
              : add_independent(d, za, y.with_error_bound(rest), t);
      } else {
        d = add_independent(d, za, y, t);
      }
    }
    return d;
  }, [&](std::size_t i) {
    bool same = repeats(g->laws, i);
    for (const auto& c : constants) same = same && repeats(c.first, i);
    for (const auto& f : folded) same = same && repeats(f.laws, i) && same_tails(f.tails.get(), i);
    return same;
  });
  g->laws = std::move(laws);
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
  const auto g = couple({&x});
  const int a = axis_of(*g, x);
  // X's references: held, z.parents and (when Y joins) Y's parents
  const long own = 2 * static_cast<long>(held.size());
  const bool x_live = x.weak_from_this().use_count() > own;
  const auto* thinning = std::get_if<Thinning>(&j.law);
  const bool split_in_place = y_form == joins && thinning && j.sign_x == 1 && j.sign_y == -1 && !x_live;
  int y_axis = -1;
  if (y_form == member) y_axis = axis_of(*g, *y);
  std::vector<std::int64_t> y_values;
  if (y_form == realized) y_values = to_vector(y->value);
  auto laws = compute(ctx, [&](std::size_t i) {
    const JointPmf& d = *g->laws[i];
    if (split_in_place) {  // X - Y in place of X, Y appended
      if (double(d.size()) * double(d.hi(a) + 1) > double(t.max_size)) throw over_budget{};
      return detail::split_in_place(d, a, thinning->keep);
    }
    if (y_form == member) {
      Coordinates k(static_cast<std::size_t>(d.rank()), 0);
      k[static_cast<std::size_t>(a)] += j.sign_x;
      k[static_cast<std::size_t>(y_axis)] += j.sign_y;
      return linear_combination(d, k, 0, -1, t);
    }
    if (y_form == realized) return linear_combination(d, unit(d.rank(), a, j.sign_x), j.sign_y * y_values[i], -1, t);
    JointPmf e = append_child(d, a, j.law, t);  // Y at the last axis
    Coordinates k(static_cast<std::size_t>(e.rank()), 0);
    k[static_cast<std::size_t>(a)] = j.sign_x;
    k.back() = j.sign_y;
    return linear_combination(e, k, 0, y_form == joins ? -1 : e.rank() - 1, t);
  }, [&](std::size_t i) { return repeats(g->laws, i) && (y_values.empty() || repeats(y_values, i)); });
  g->laws = std::move(laws);
  if (split_in_place) {
    g->members[static_cast<std::size_t>(a)] = z.weak_from_this();
    g->members.push_back(y->weak_from_this());
  } else if (y_form == joins) {
    g->members.push_back(y->weak_from_this());
    g->members.push_back(z.weak_from_this());
  } else {
    g->members.push_back(z.weak_from_this());
  }
  if (y_form == joins) become_member(*y, g);
  become_member(z, g);
  z.operand_y.reset();
  yp.reset();
  held.clear();
  sweep(g, ctx);
  return true;
}

/// The selected law over the axes of d: the state's axis, then the others' (rates, or the count).
JointPmf add_selected(const JointPmf& d, const SelectedChild& s, int state, const std::vector<int>& others,
                      const Truncation& t) {
  if (s.family == SelectedChild::poisson) return add_child(d, SelectedScaledPoisson(state, others, s.scale), t);
  return add_child(d, SelectedThinning(others[0], state, s.keep), t);
}
JointConditioned condition_selected(const JointPmf& d, const SelectedChild& s, int state, const std::vector<int>& others,
                                    std::int64_t y) {
  if (s.family == SelectedChild::poisson) return condition(d, SelectedScaledPoisson(state, others, s.scale), y);
  return condition(d, SelectedThinning(others[0], state, s.keep), y);
}

/// A SelectedChild's parents as axes of particle i's table: the group's law with a constant axis appended for each
/// realized parent (or, with no group, a table of the constants alone); writes each parent's axis.
struct SelectedFrame {
  std::shared_ptr<JointGroup> g;
  std::vector<Node*> parents;                     // the state, then the others
  std::vector<int> axis;                          // member axes (constants: filled per table)
  std::vector<std::vector<std::int64_t>> values;  // realized parents' values (empty for members)
  int constants = 0;
  /// Whether particle i's inputs equal particle i - 1's.
  bool repeats(std::size_t i) const {
    bool same = i > 0 && (!g || detail::repeats(g->laws, i));
    for (const auto& v : values) same = same && (v.empty() || detail::repeats(v, i));
    return same;
  }
  JointPmf table(std::size_t i, std::vector<int>& axes, const Truncation& t) const {
    axes = axis;
    std::optional<JointPmf> d;
    if (g) d = *g->laws[i];
    for (std::size_t k = 0; k < parents.size(); ++k) {
      if (values[k].empty()) continue;
      const std::int64_t v = values[k][i];
      if (!d) {
        d = joint(Pmf::point(v));
      } else {
        d = append_constant(*d, v, t);
      }
      axes[k] = d->rank() - 1;
    }
    return *d;
  }
};

SelectedFrame selected_frame(Node& n) {
  SelectedFrame f;
  f.parents.push_back(n.parents[0].get());
  for (const auto& p : n.more_parents) f.parents.push_back(p.get());
  f.g = couple(f.parents);
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
                                [&](std::size_t i) { return f.repeats(i); }));
    n.state = State::marginalized;
    n.parents = {};
    n.more_parents.clear();
    return;
  }
  auto laws = compute(ctx, [&](std::size_t i) {
    std::vector<int> axes;
    const JointPmf d = f.table(i, axes, t);
    const std::vector<int> others(axes.begin() + 1, axes.end());
    return add_selected(d, s, axes[0], others, t);
  }, [&](std::size_t i) { return f.repeats(i); });
  const auto g = f.g;
  g->laws = std::move(laws);
  for (int k = 0; k < f.constants; ++k) g->members.emplace_back();  // the constants' axes: summed out below
  g->members.push_back(n.weak_from_this());
  std::vector<std::shared_ptr<Node>> held(n.more_parents.begin(), n.more_parents.end());
  held.push_back(n.parents[0]);
  become_member(n, g);
  held.clear();
  sweep(g, ctx);
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
  for (Node* p : random_parents(n))
    if (!p->group && !joinable(*p)) stuck.push_back(p);
  if (stuck.empty()) return true;
  if (!needed) return false;
  std::vector<std::shared_ptr<Node>> hold;
  for (Node* p : stuck) hold.push_back(p->shared_from_this());
  for (Node* p : stuck) fallback(*p, Fallback::joint_limit);
  for (Node* p : stuck)
    if (p->state == State::marginalized) sample(*p);
  return true;
}

}  // namespace

std::size_t JointGroup::bytes() const {
  std::size_t b = 0;
  for (std::size_t i = 0; i < laws.size(); ++i)
    if (i == 0 || laws[i] != laws[i - 1]) b += static_cast<std::size_t>(laws[i]->size()) * 8 + 64;  // shared once
  return b;
}

Node* group_anchor(const Node& n) {
  Node* oldest = nullptr;
  for (const auto& w : n.group->members)
    if (auto m = w.lock(); m && m.get() != &n && (!oldest || m->id < oldest->id)) oldest = m.get();
  return oldest && oldest->id < n.id ? oldest : nullptr;
}

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

bool make_group(Node& n) {
  if (!enabled(*n.context) || !joinable(n)) return false;
  try {
    group_of_one(n);
    return true;
  } catch (const over_budget&) {
    return false;
  }
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
      join_child(n, c->law);
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

Laws group_marginal(Node& n) {
  const JointGroup& g = *n.group;
  const int a = axis_of(g, n);
  return place(*n.context, per_particle<Pmf>(
                               n.context->particles, [&](std::size_t i) { return marginal(*g.laws[i], a); },
                               [&](std::size_t i) { return repeats(g.laws, i); }));
}

void group_realize(Node& n, const Values& values) {
  const auto g = n.group;
  Context& ctx = *n.context;
  const int a = axis_of(*g, n);
  if (g->rank() == 1) {
    g->members.clear();
    g->laws.clear();
  } else {
    const std::vector<std::int64_t> v = to_vector(values);
    g->laws = shared_per_particle(
        ctx.particles,
        [&](std::size_t i) {
          try {
            return slice(*g->laws[i], a, v[i]).normalized();  // error bound e M / M_v
          } catch (const shape_error&) {  // no mass at v: that particle is dead, any law will do
            return marginalize_out(*g->laws[i], a);
          }
        },
        [&](std::size_t i) { return repeats(g->laws, i) && repeats(v, i); });
    g->members.erase(g->members.begin() + a);
  }
  n.group.reset();
  n.marginal.clear();
  sweep(g, ctx);
}

bool observe_joint_child(Node& child, const Values& values, LogLikelihood& ll) {
  Context& ctx = *child.context;
  const auto keep = child.shared_from_this();
  const std::vector<std::int64_t> y = to_vector(values);
  std::vector<double> loglik(ctx.particles);
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
    g = x->group;
    const int a = axis_of(*g, *x);
    posterior = shared_per_particle(
        ctx.particles,
        [&](std::size_t i) {
          return conditioned(i, condition_child(*g->laws[i], a, c->law, y[i]), *g->laws[i], 0,
                             likelihood_sup(c->law, y[i]));
        },
        [&](std::size_t i) { return repeats(g->laws, i) && repeats(y, i) && (loglik[i] = loglik[i - 1], true); });
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
    const Truncation wide = ctx.truncation;
    posterior = shared_per_particle(
        ctx.particles,
        [&](std::size_t i) {
          std::vector<int> axes;
          const JointPmf d = f->table(i, axes, wide);
          const std::vector<int> others(axes.begin() + 1, axes.end());
          return conditioned(i, condition_selected(d, *s, axes[0], others, y[i]), d, g ? constants : 0,
                             likelihood_sup(*s, y[i]));
        },
        [&](std::size_t i) { return f->repeats(i) && repeats(y, i) && (loglik[i] = loglik[i - 1], true); });
  } else {
    return false;
  }
  add_host(ll, loglik);
  ll.error = std::max(ll.error, error);
  if (g) g->laws = std::move(*posterior);
  child.parents = {};
  child.more_parents.clear();
  child.state = State::realized;
  child.value = values;
  if (g) sweep(g, ctx);
  return true;
}

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

std::shared_ptr<const DroppedTails> known_tails(Node& n, const std::vector<Pmf>& laws) {
  if (!enabled(*n.context) || laws.empty()) return nullptr;
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

std::optional<double> condition_tails(Node& n, const std::shared_ptr<const DroppedTails>& tails, const ChildLaw& law,
                                      const Values& y) {
  n.tails.reset();
  if (!tails || n.marginal.device || n.marginal.parameters) return std::nullopt;
  double error = 0.0;  // the observation's: located + sup(l) spread, relative to L (as for joint laws)
  const std::vector<Pmf> posterior = to_pmfs(n.marginal);
  const std::vector<std::int64_t> v = to_vector(y);
  auto out = std::make_shared<DroppedTails>();
  out->law = posterior;
  out->dropped.resize(posterior.size());
  out->spread.resize(posterior.size());
  for (std::size_t i = 0; i < posterior.size(); ++i) {
    if (i > 0 && equal(tails->law[i], tails->law[i - 1]) && same_tails(tails.get(), i) && v[i] == v[i - 1]) {
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

void GroupGather::commit() {
  for (auto& [g, laws] : gathered) g->laws = std::move(laws);
}

GroupGather gather_groups(Node* first_live, const std::vector<std::size_t>& ancestors) {
  GroupGather out;
  std::vector<JointGroup*> seen;
  for (Node* n = first_live; n != nullptr; n = n->next_live) {
    JointGroup* g = n->group.get();
    if (!g || std::find(seen.begin(), seen.end(), g) != seen.end()) continue;
    seen.push_back(g);
    JointGroup::Laws laws = g->laws;
    laws.select(ancestors);
    out.gathered.emplace_back(g, std::move(laws));
  }
  return out;
}

}  // namespace tally::runtime::detail
