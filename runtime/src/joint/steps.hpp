// Private: what the joint module's sources share (the module: joint.hpp): particles with equal inputs, the joint
// laws' budget, and the steps that forming, reading and conditioning joint laws all need.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "joint.hpp"
#include "../node.hpp"
#include "tally/distributions/joint.hpp"
#include "../distinct.hpp"
#include "../overloaded.hpp"

namespace tally::runtime::detail::joint_steps {

using Tables = JointGroup::Laws;  // P joint laws (state.hpp's Laws are P laws of one variable)

/// A joint law that would exceed Truncation::max_joint_bytes (or max_size): the caller falls back.
struct over_budget {};

inline bool enabled(const Context& c) { return c.truncation.max_joint_bytes > 0; }

/// The truncation for joint operations: one table, while it is built (one particle at a time), may use the whole
/// budget; what the P tables of a result hold together is checked by compute().
inline Truncation joint_truncation(const Context& c) {
  Truncation t = c.truncation;
  t.max_size = std::max<std::int64_t>(1, std::min(t.max_size, c.truncation.max_joint_bytes / 8));
  return t;
}

/// The outer values of each axis whose mass is below the truncation's tolerance dropped (tally::truncate: at most
/// the tolerance in all, added to the error bound), so that tails a bounded law keeps down to 2^-1000 of its
/// largest entry do not multiply the sizes of the tables built from it.
inline JointPmf trimmed(const JointPmf& d, const Truncation& t) { return t.tolerance > 0 && t.tolerance < 1 ? truncate(d, t) : d; }

// ---- particles with equal inputs -------------------------------------------------------------------------------
// Until something is drawn, every particle of a program holds the same joint laws: an operation computes once and
// copies its result to each particle whose inputs equal the previous particle's (compared entry by entry, far
// cheaper than the operation).
inline bool equal(const JointPmf& a, const JointPmf& b) {
  const bool same = a.lo() == b.lo() && a.shape() == b.shape() && a.log_scale() == b.log_scale() &&
                    a.spread_error_bound() == b.spread_error_bound() && a.weights() == b.weights();
  if (!same || (a.dropped() == nullptr) != (b.dropped() == nullptr)) return false;
  return a.dropped() == nullptr || a.dropped() == b.dropped() || equal(*a.dropped(), *b.dropped());
}
inline bool equal(const Pmf& a, const Pmf& b) {
  return a.lo() == b.lo() && a.size() == b.size() && a.log_scale() == b.log_scale() &&
         a.error_bound() == b.error_bound() && (a.shares_weights(b) || a.weights() == b.weights());
}
// Where every input of an operation is one value for all particles (a uniform batch each: the particles of a
// program before anything is drawn, a shared device law, a constant), the operation runs once, for particle 0, and
// its result is uniform too: the helpers below take that as `one` (their f and same then see particle 0 alone, so
// that the inputs of such an operation may be held as one value each).
template <class T>
bool uniform(const Batch<T>& b) {
  return b.uniform();
}
/// A host vector of one value per particle, or of one value for every particle.
template <class T>
bool uniform(const std::vector<T>& v) {
  return v.size() == 1;
}
inline bool uniform(const Values& v) { return v.same.has_value(); }
/// v's values, one for every particle where `one` (then v is a constant), else one per particle.
inline std::vector<std::int64_t> host_values(const Values& v, bool one) {
  return one ? std::vector<std::int64_t>{*v.same} : to_vector(v);
}

/// Whether particle i's table in b equals particle i - 1's.
inline bool repeats(const Tables& b, std::size_t i) { return i > 0 && b.size() > 1 && (b[i] == b[i - 1] || equal(*b[i], *b[i - 1])); }
inline bool repeats(const Batch<Pmf>& b, std::size_t i) { return i > 0 && (b.uniform() || equal(b[i], b[i - 1])); }
template <class T>
bool repeats(const std::vector<T>& v, std::size_t i) {
  if constexpr (std::is_same_v<T, Pmf>)
    return i > 0 && equal(v[i], v[i - 1]);
  else
    return i > 0 && v[i] == v[i - 1];
}

// Particles whose inputs are equal but not neighbours (a draw of a few values, in no order) are matched by
// first_copies (distinct.hpp), with law_hash and the comparisons below.
/// Whether particles i and j hold equal values in b (a uniform batch, or a vector of one value: always).
inline bool equal_at(const Batch<Pmf>& b, std::size_t i, std::size_t j) { return b.uniform() || equal(b[i], b[j]); }
inline bool equal_at(const std::vector<std::int64_t>& v, std::size_t i, std::size_t j) {
  return v.size() == 1 || v[i] == v[j];
}

/// P values made by f(i), f called only where same(i) is false (else particle i - 1's value is copied); where `one`,
/// f(0) for every particle.
template <class T, class F, class Same>
Batch<T> per_particle(std::size_t particles, F f, Same same, bool one = false) {
  if (one) return Batch<T>::uniform(particles, f(std::size_t{0}));
  std::optional<T> last;
  return Batch<T>::make(particles, [&](std::size_t i) {
    if (!last || !same(i)) last.emplace(f(i));
    return *last;
  });
}

/// The same for joint laws: equal particles share one table.
template <class F, class Same>
Tables shared_per_particle(std::size_t particles, F f, Same same, bool one = false) {
  if (one) return Tables::uniform(particles, std::make_shared<const JointPmf>(f(std::size_t{0})));
  std::shared_ptr<const JointPmf> last;
  return Tables::make(particles, [&](std::size_t i) {
    if (!last || !same(i)) last = std::make_shared<const JointPmf>(f(i));
    return last;
  });
}

/// The bytes of a joint law's table and of its dropped measure's.
inline std::int64_t table_bytes(const JointPmf& d) {
  return 8 * (static_cast<std::int64_t>(d.size()) + (d.dropped() ? static_cast<std::int64_t>(d.dropped()->size()) : 0));
}

/// f(i) (trimmed where `trim`) counted against the budget with the tables made before it (`bytes`); over_budget
/// past it.
template <class F>
std::shared_ptr<const JointPmf> budgeted(const Context& c, F& f, std::size_t i, bool trim, std::int64_t& bytes) {
  JointPmf law = trim ? trimmed(f(i), c.truncation) : f(i);
  // a dropped measure that would break the budget gives way first: its mass joins the spread bound
  if (law.dropped() && bytes + table_bytes(law) > c.truncation.max_joint_bytes)
    law = law.with_error_bound(law.error_bound());
  auto made = std::make_shared<const JointPmf>(std::move(law));
  bytes += table_bytes(*made);  // tables shared by equal particles count once
  if (bytes > c.truncation.max_joint_bytes) throw over_budget{};
  return made;
}

/// P joint laws made by f(i) (trimmed, unless `trim` is false: f's tables are trimmed already), within the budget
/// (over_budget, and nothing kept, otherwise; the dropped measures count, and are given up before the law is); f is
/// called only where same(i) is false; where `one`, f(0) for every particle.
template <class F, class Same>
Tables compute(const Context& c, F f, Same same, bool one = false, bool trim = true) {
  std::int64_t bytes = 0;
  const auto table = [&](std::size_t i) { return budgeted(c, f, i, trim, bytes); };
  std::shared_ptr<const JointPmf> last;
  try {
    if (one) return Tables::uniform(c.particles, table(0));
    return Tables::make(c.particles, [&](std::size_t i) {
      if (!last || !same(i)) last = table(i);
      return last;
    });
  } catch (const overflow_error&) {  // a table past the budget
    throw over_budget{};
  }
}

/// The same with particle i's table that of particle first[i] (first_copies: first[i] <= i), made once, by
/// f(first[i]).
template <class F>
Tables compute_shared(const Context& c, F f, const std::vector<std::size_t>& first, bool trim = true) {
  std::int64_t bytes = 0;
  std::vector<std::shared_ptr<const JointPmf>> made(c.particles);
  try {
    return Tables::make(c.particles, [&](std::size_t i) {
      const std::size_t j = first[i];
      if (!made[j]) made[j] = budgeted(c, f, j, trim, bytes);
      return made[j];
    });
  } catch (const overflow_error&) {  // a table past the budget
    throw over_budget{};
  }
}

inline int axis_of(const JointGroup& g, const Node& n) {
  for (int a = 0; a < g.rank(); ++a)
    if (g.members[static_cast<std::size_t>(a)].lock().get() == &n) return a;
  throw std::logic_error("tally::runtime: a joint node's member is missing from its law");
}

// ---- linear members (JointGroup::LinearMember) -------------------------------------------------------------------
/// Whether two member entries name the same node (expired ones included: compared by owner, not by address).
inline bool same_node(const std::weak_ptr<Node>& a, const std::weak_ptr<Node>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}
/// l joins g's linear members, its zero coefficients dropped.
void add_linear_member(JointGroup& g, JointGroup::LinearMember l);
/// n's entry among g's linear members, or nullptr.
JointGroup::LinearMember* linear_member(JointGroup& g, const Node& n);
/// The coefficients of l's form over g's axes (logic_error where an axis it reads is missing).
Coordinates coefficients_of(const JointGroup& g, const JointGroup::LinearMember& l);
/// Whether a linear member's form reads axis a (then a is not summed out or replaced before it becomes an axis).
bool read_by_linear(const JointGroup& g, int a);
/// Linear member k becomes an axis of g (appended): over_budget past the budget, and nothing changed.
void materialize(const std::shared_ptr<JointGroup>& g, std::size_t k, Context& ctx);
/// n's axis in g, n made an axis first where it is a linear member (over_budget past the budget).
int member_axis(const std::shared_ptr<JointGroup>& g, Node& n);

inline Coordinates unit(int rank, int axis, std::int64_t coefficient) {
  Coordinates k(static_cast<std::size_t>(rank), 0);
  k[static_cast<std::size_t>(axis)] = coefficient;
  return k;
}

/// Appends a constant coordinate c (a realized parent, for the length of one operation).
inline JointPmf append_constant(const JointPmf& d, std::int64_t c, const Truncation& t) {
  return linear_combination(d, Coordinates(static_cast<std::size_t>(d.rank()), 0), c, -1, t);
}

/// The outer product of independent joint laws: the axes of a, then those of b (their dropped measures carried).
JointPmf outer(const JointPmf& a, const JointPmf& b, const Truncation& t);

/// The largest likelihood of the observation y over every value of its parents (the spread bound's factor).
double likelihood_sup(const ChildLaw& law, std::int64_t y);
double likelihood_sup(const SelectedChild& s, std::int64_t y);

/// A rank-1 joint law of particle i's pmf with its known tails (the dropped measure and the spread bound), as
/// DroppedTails gives them (joint/tails.cpp); j itself where tails is null.
JointPmf with_tails(const JointPmf& j, const DroppedTails* tails, std::size_t i);
/// The spread bound of a product of independent laws (an outer product, or a convolution): with exact laws
/// a + x + r_a and b + y + r_b (x, y the located dropped measures, of masses dx, dy relative to a and b; r_a, r_b the
/// spread parts, at most sa, sb), the product less a b is x b + (a + x) y (located) plus r_a (b + y + r_b) +
/// (a + x) r_b, of relative mass at most \f$s_a (1 + d_y + s_b) + s_b (1 + d_x)\f$.
inline double product_spread(double sa, double sb, double dx, double dy) {
  return sa * (1.0 + dy + sb) + sb * (1.0 + dx);
}
/// Whether particle i's tails equal particle j's (j: i - 1 unless given; null: none known, equal).
bool same_tails(const DroppedTails* tails, std::size_t i, std::size_t j);
inline bool same_tails(const DroppedTails* tails, std::size_t i) { return same_tails(tails, i, i - 1); }
/// Whether particle i's laws and tails equal particle i - 1's (i >= 1).
bool shares(const DroppedTails& tails, std::size_t i);

/// Sums out the axes nobody needs, and dissolves a group left with one live member (it becomes an ordinary
/// marginalized node with its marginal).
void sweep(const std::shared_ptr<JointGroup>& gp, Context& ctx);
/// Whether the marginalized standalone p can become an axis (see joint/groups.cpp).
bool joinable(const Node& p);
/// n becomes a member of g: marginalized, with no parents (the law holds what they said of it).
void become_member(Node& n, const std::shared_ptr<JointGroup>& g);
/// Appends the child Y | X_axis ~ law as a new axis.
JointPmf append_child(const JointPmf& d, int axis, const ChildLaw& law, const Truncation& t);
/// One group holding every non-realized node of `nodes` (each a member or joinable): standalone ones become axes,
/// different groups are merged (independent: their outer product). nullptr when every node is realized.
std::shared_ptr<JointGroup> couple(const std::vector<Node*>& nodes);
/// Draws each random parent of n (reported first, so that strict mode refuses before anything is drawn).
void realize_parents(Node& n, Fallback why);
/// Standalone random parents of n inside a marginalized chain (or tied) cannot become axes: where the joint law is
/// needed they are drawn first (exactly, from their posteriors) and reported; where it is only an option, false.
bool draw_stuck_parents(Node& n, bool needed);

/// A SelectedChild's parents as axes of particle i's table: the group's law with a constant axis appended for each
/// realized parent (or, with no group, a table of the constants alone); writes each parent's axis.
struct SelectedFrame {
  std::shared_ptr<JointGroup> g;
  std::vector<Node*> parents;                     // the state, then the others
  std::vector<int> axis;                          // member axes (constants: filled per table)
  std::vector<std::vector<std::int64_t>> values;  // realized parents' values (empty for members)
  int constants = 0;
  /// Whether every particle's inputs are one (the group's tables uniform, no realized parent).
  bool uniform() const {
    if (g && !g->uniform()) return false;
    for (const auto& v : values)
      if (!v.empty()) return false;
    return true;
  }
  /// Whether particle i's inputs equal particle i - 1's.
  bool repeats(std::size_t i) const {
    bool same = i > 0 && (!g || g->repeats(i));
    for (const auto& v : values) same = same && (v.empty() || joint_steps::repeats(v, i));
    return same;
  }
  JointPmf table(std::size_t i, std::vector<int>& axes, const Truncation& t) const {
    axes = axis;
    std::optional<JointPmf> d;
    if (g) d = *g->laws()[i];
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

/// The frame of the SelectedChild n: its random parents coupled into one group, each parent's axis or value.
SelectedFrame selected_frame(Node& n);

}  // namespace tally::runtime::detail::joint_steps
