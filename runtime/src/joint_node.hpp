// Private: joint nodes, coupled marginalized variables kept as one joint law per particle (variable elimination on
// the fly), and the operations the delayed-sampling core performs on them.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "state.hpp"
#include "tally/distributions/joint_pmf.hpp"
#include "tally/runtime/batch.hpp"

namespace tally::runtime::detail {

class Node;
struct Context;

/// The joint law of k coupled marginalized variables: one tally::JointPmf per particle, axis a being the variable
/// members[a]. The laws live on the host for every graph: a CUDA graph copies the laws that enter a joint law to the
/// host and the marginals and draws it gives back to the device. Where the particles hold different tables, an
/// operation may compute them as one batch of gpu::JointLaws (joint_batches.hpp) and bring them back.
///
/// Ownership: each member owns the group (Node::group); the group holds its members weakly, so there is no cycle.
/// A member that dies (no handle and no child needs it any more) leaves an expired entry, summed out of the law at
/// the next operation on the group; a group left with one live member dissolves: that member becomes an ordinary
/// marginalized node again with its marginal. Members have no parents, no M-path child and no tie: everything
/// that depends on them joins the group (or conditions it, when observed at once).
struct JointGroup {
  /// Particle i's table; particles with equal tables (all of them, until something is drawn) share one.
  using Laws = Batch<std::shared_ptr<const JointPmf>>;
  Laws laws;
  std::vector<std::weak_ptr<Node>> members;  // an empty or expired entry is an axis nobody needs: summed out
  int rank() const { return static_cast<int>(members.size()); }
  std::size_t bytes() const;
};

/// What truncation dropped from a node's laws, where it is known (a prior from a family, and its posteriors by
/// observed children on a CPU graph), for the joint laws' error bounds (tally::JointPmf::dropped): particle i's
/// exact law is law(i) + dropped(i) + r with \f$\|r\|_1 \le spread(i) \|law(i)\|_1\f$ (up to a constant factor,
/// the joint laws' convention). Valid only while the node's laws equal law(i) (checked where it is used).
/// Particles that hold equal laws and tails share one entry: no copy per particle.
struct DroppedTails {
  struct Entry {
    Pmf law;
    std::optional<Pmf> dropped;  // in law's units; none where nothing is known to be dropped
    double spread = 0.0;
  };
  std::vector<std::shared_ptr<const Entry>> of;  // particle i's entry

  std::size_t size() const { return of.size(); }
  const Pmf& law(std::size_t i) const { return of[i]->law; }
  const std::optional<Pmf>& dropped(std::size_t i) const { return of[i]->dropped; }
  double spread(std::size_t i) const { return of[i]->spread; }
};
/// Whether n's tails may be known (it has some, or it is a family's truncated prior, and joint laws track dropped
/// mass): a cheap test before known_tails.
bool may_know_tails(const Node& n);
/// n's tails for its current laws (host Pmfs), where known; else nullptr.
std::shared_ptr<const DroppedTails> known_tails(Node& n, const std::vector<Pmf>& laws);
std::shared_ptr<const DroppedTails> known_tails(Node& n, const Batch<Pmf>& laws);
/// The ordinary path conditioned the marginalized n on its observed child Y = y (n's laws had the tails `tails`,
/// and are now their posteriors, with log-likelihoods log_likelihood[i] = log sum_x law_i(x) p(y_i | x)): the tails
/// are conditioned likewise and kept with n. Returns the observation's
/// error bound from them (the dropped tails weighed by their own likelihood, the rest by the largest, relative to
/// the likelihood; the largest over the particles), or nothing where they could not follow (n keeps no tails).
std::optional<double> condition_tails(Node& n, const std::shared_ptr<const DroppedTails>& tails, const ChildLaw& law,
                                      const Values& y, const std::vector<double>& log_likelihood);
/// Whether the ordinary path follows what truncation dropped (host graphs, joint laws on, Truncation::track_dropped).
bool follows_tails(const Context& c);
/// n's tails for its current laws where they are known, else every law's whole bound as spread (nothing located).
std::shared_ptr<const DroppedTails> tails_or_spread(Node& n, const Batch<Pmf>& laws);
/// The tails of a child's laws `result`, pushed from its parent's tails x through the child law (a thinning or a
/// Markov step: exact kernels that keep mass; nullptr for any other law, whose bound stays the ordinary one).
std::shared_ptr<const DroppedTails> pushed_tails(const DroppedTails& x, const ChildLaw& law,
                                                 const Batch<Pmf>& result);
/// The tails of the laws `result` of X + sign Y from its operands' tails: the dropped measure
/// \f$d_X * \mu_Y + (\mu_X + d_X) * d_Y\f$ and the spread \f$s_X (1 + |d_Y| + s_Y) + s_Y (1 + |d_X|)\f$ (relative
/// masses), as tally::JointPmf's outer product carries them. nullptr where they cannot be followed.
std::shared_ptr<const DroppedTails> summed_tails(const DroppedTails& x, const DroppedTails& y, int sign,
                                                 const Batch<Pmf>& result);

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
  std::vector<std::pair<JointGroup*, JointGroup::Laws>> gathered;
  void commit();
};
GroupGather gather_groups(Node* first_live, const std::vector<std::size_t>& ancestors);

}  // namespace tally::runtime::detail
