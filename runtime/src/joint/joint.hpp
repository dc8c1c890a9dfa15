// Private: the exact mechanism's joint laws (variable elimination as the program runs): the one interface the
// delayed-sampling core (delayed_sampling.cpp) calls whenever marginalized variables become coupled.
//
// The marginalized part of the graph is a set of factors over discrete variables. A JointGroup is one factor: a
// table per particle over its members (shared between particles that hold equal ones). Every coupling goes through
// the same four steps, whatever the operation that made it:
//  1. bring in: each random parent of the new node becomes a coordinate of one group. A standalone marginal enters
//     as a group of one; a variable inside an M-path brings its whole marginalized component (absorb.cpp); groups
//     already formed are merged by their outer product (groups.cpp, couple);
//  2. apply the node's factor: its law given its parents appended as a coordinate, or taking its parent's place
//     where nothing else reads the parent, or a linear form of coordinates kept out of the table (join.cpp; the
//     table operations in tables.cpp, their batch forms for many different tables in batches.cpp);
//  3. eliminate: every coordinate that nothing can reach any more is summed out, and a group left with one live
//     member dissolves into that member's marginal (groups.cpp, sweep);
//  4. read and condition: a member's marginal, a member drawn (the others conditioned on it), an observed child of
//     members conditioning the table directly (observe.cpp), with the mass truncation dropped carried along
//     (tails.cpp).
// Past the budget (Truncation::max_joint_bytes) the variables that would enter a group are drawn first and
// reported (Fallback::joint_limit): the only place this module samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "../dropped_tails.hpp"
#include "../state.hpp"
#include "tally/distributions/joint_pmf.hpp"
#include "tally/gpu/joint_laws.hpp"
#include "tally/runtime/batch.hpp"

namespace tally::runtime::detail {

class Node;
struct Context;

/// The joint law of k coupled marginalized variables: one tally::JointPmf per particle, axis a being the variable
/// members[a]. The laws start on the host for every graph: a CUDA graph copies the laws that enter a joint law to
/// the host and the marginals and draws it gives back to the device. Where the particles hold different tables, an
/// operation may compute them as one batch of gpu::JointLaws (joint/batches.hpp), and its results then stay in that
/// batch (Resident) for the next operation with a batch form; laws() brings them to the host for any other.
///
/// Ownership: each member owns the group (Node::group); the group holds its members weakly, so there is no cycle.
/// A member that dies (no handle and no child needs it any more) leaves an expired entry, summed out of the law at
/// the next operation on the group; a group left with one live member dissolves: that member becomes an ordinary
/// marginalized node again with its marginal. Members have no parents, no M-path child and no tie: everything
/// that depends on them joins the group (or conditions it, when observed at once).
struct JointGroup {
  /// Particle i's table; particles with equal tables (all of them, until something is drawn) share one.
  using Laws = Batch<std::shared_ptr<const JointPmf>>;
  /// The tables as a batch's results left them (joint/batches.hpp), where the batch ran (device memory on a CUDA
  /// graph), so that the next operation with a batch form reads them there: law k of `laws` with whole error bound
  /// bounds[k] (all of it spread: a batch carries no dropped measure) and log mass log_mass[k]; particle i holds law
  /// index[i]. Particles with equal tables share a law, as on the host.
  struct Resident {
    std::shared_ptr<const gpu::JointLaws> laws;
    std::vector<double> bounds, log_mass;
    std::vector<std::uint32_t> index;
  };
  /// Particle i's tables on the host, made from the resident batch first where the tables are there (one copy
  /// down; the batch is then given up).
  const Laws& laws();
  /// The tables from now on: on the host, or resident in a batch.
  void set(Laws l) {
    host_ = std::move(l);
    resident_.reset();
  }
  void set(Resident r) {
    resident_ = std::move(r);
    host_.clear();
  }
  /// No tables (a group dissolved).
  void clear_laws() {
    host_.clear();
    resident_.reset();
  }
  /// The resident batch, or null where the tables are on the host.
  const Resident* resident() const { return resident_ ? &*resident_ : nullptr; }
  /// Whether particle i's table is particle i - 1's (i >= 1), whichever form holds them, without making host tables.
  bool repeats(std::size_t i) const;
  /// Whether every particle holds one table.
  bool uniform() const;
  std::vector<std::weak_ptr<Node>> members;  // an empty or expired entry is an axis nobody needs: summed out
  /// A member that is a linear form of axes, \f$V = c_i + \sum_k a_k X_k\f$ (a sum, a difference or an affine map
  /// of members, with realized operands in c): a derived coordinate, kept out of the table. Its law is read from the
  /// table's hyperplanes, its realization conditions the table on one, and it becomes an axis only where an
  /// operation needs one (a child of it; an axis of its form summed out), so that live sums of coupled variables
  /// do not multiply the table's size. terms name the axes by their member (never an empty one); coefficients are
  /// nonzero; no terms: V is the constant c_i.
  struct LinearMember {
    std::weak_ptr<Node> node;
    std::vector<std::pair<std::weak_ptr<Node>, std::int64_t>> terms;
    std::int64_t offset = 0;
    std::vector<std::int64_t> constants;  // c_i = offset + constants[i] (empty: offset)
    std::int64_t constant(std::size_t i) const { return offset + (constants.empty() ? 0 : constants[i]); }
  };
  std::vector<LinearMember> linear;
  int rank() const { return static_cast<int>(members.size()); }
  std::size_t bytes() const;

 private:
  Laws host_;
  std::optional<Resident> resident_;
};

/// Whether marginalizing the initialized n goes through a joint law: a parent of n is a member of one, n has
/// several random parents (SelectedChild), or n is a sum s_x X + s_y Y with Y an initialized child of X that
/// lives on (a handle or a child holds it), so that Y and the sum stay coupled.
bool needs_joint(Node& n);
/// Marginalizes n (whose parents are grafted) into a joint law: its random parents merged into one group, n added
/// as an axis, parents nobody needs any more summed out. Returns false when n is to be marginalized the ordinary
/// way instead: a joint law that was only an option (a sum with a child that lives on) did not fit, or one that was
/// needed did not (then the parents were realized first, each reported as Fallback::joint_limit).
bool join(Node& n);
/// What absorb did.
enum class Absorbed {
  done,         ///< n is a member of a joint law
  unsupported,  ///< n's component holds a node a joint law cannot take over (a count of a conjugate parent, a
                ///< tie with links of its own): nothing changed
  over_budget,  ///< the law would exceed Truncation::max_joint_bytes (or joint laws are off): nothing changed
};
/// Makes the marginalized discrete n a member of a joint law, together with its whole marginalized component: the
/// M-path through n, every marginalized parent that feeds it, and the ties they own. The component's law is built
/// from the laws the delayed-sampling graph holds: its tops' marginals, then each node's law given its parents,
/// reweighted to the marginal it holds (which absorbed the node's own observations after its parents' law was
/// pushed to it: \f$p(x_0, \dots, x_k) \propto \prod_{tops} m_t \prod_{u} K_u(x_u \mid x_{pa(u)})\, m_u(x_u) /
/// \mu_u(x_u)\f$, where \f$\mu_u\f$ is the push of the parents' law: exactly the posterior the M-path represents).
/// Nodes nothing can reach any more are summed out at once. Nothing is drawn, and nothing changes unless it
/// returns done. This is how the runtime keeps a coupling exact where Murray et al.'s graph would prune.
Absorbed absorb(Node& n);
/// The exact law of the marginalized discrete n given everything its component has absorbed, the graph unchanged:
/// the component's law built as absorb builds it, but with every other node summed out at its last use (held or
/// not), so that the tables stay those of a chain's frontier; nothing where the component is not representable or
/// that law would pass the budget.
std::optional<Laws> component_marginal(Node& n);
/// The nodes of n's marginalized component (absorb's), or none where it is not representable.
std::vector<const Node*> component_nodes(Node& n);
/// The marginal laws of a member (where the graph keeps its laws).
Laws group_marginal(Node& n);
/// A member takes its values: the other axes are conditioned on them and n's axis is removed.
void group_realize(Node& n, const Values& values);
/// Observing the initialized child (a DiscreteChild of a member, or a SelectedChild) at values: the joint law of
/// its parents is conditioned directly (the child's own axis is never built) and log P(child = v | ...) is added to
/// ll. The child is then realized. False, and nothing done, for any other node.
bool observe_joint_child(Node& child, const Values& values, LogLikelihood& ll);
/// X_axis replaced by Y ~ Binomial(X_axis, q) in place (X summed out): \f$\mu'(.., y, ..) = \sum_x \mu(.., x, ..)
/// \binom{x}{y} q^y (1-q)^{x-y}\f$, without the (X - Y, Y) table of split(). Sums of non-negative products, so each
/// entry keeps its relative precision; error bound unchanged. domain_error for an axis with negative values.
JointPmf thin_in_place(const JointPmf& d, int axis, double q);
/// The binomial split X_axis -> (X - Y, Y), Y ~ Binomial(X, q): what tally::split computes (X - Y in place of X, Y
/// appended), with each pmf value formed once per (x, y) instead of once per entry, products formed directly (an
/// entry below 2^-1000 of the largest is flushed by the table anyway). Error bound unchanged.
JointPmf split_in_place(const JointPmf& d, int axis, double q);
/// Resampling: the groups of the live nodes, each gathered once (aside: commit with the returned function).
struct GroupGather {
  struct Gathered {
    JointGroup* group;
    JointGroup::Laws laws;  // the host's tables, or
    std::optional<JointGroup::Resident> resident;  // the batch's, each particle's law remapped
    std::vector<std::vector<std::int64_t>> constants;  // its linear members' c_i, in order
  };
  std::vector<Gathered> gathered;
  void commit();
};
GroupGather gather_groups(Node* first_live, const std::vector<std::size_t>& ancestors);

}  // namespace tally::runtime::detail
