// Private: what truncation dropped from a node's laws, followed along the graph (joint/tails.cpp,
// ordinary_tails.cpp) and computed only when a bound or a joint law reads it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "bound.hpp"
#include "state.hpp"
#include "tally/runtime/batch.hpp"

namespace tally::runtime::detail {

class Node;
struct Context;

/// What truncation dropped from a node's laws, where it is known (a prior from a family, and its posteriors by
/// observed children on a CPU graph), for the joint laws' error bounds (tally::JointPmf::dropped): particle i's
/// exact law is law(i) + dropped(i) + r with \f$\|r\|_1 \le spread(i) \|law(i)\|_1\f$ (up to a constant factor,
/// the joint laws' convention). Valid only while the node's laws equal law(i) (checked where it is used).
/// Particles that hold equal laws and tails share one entry: no copy per particle, and one entry in all where every
/// particle holds the same (uniform).
struct DroppedTails {
  struct Entry {
    Pmf law;
    std::optional<Pmf> dropped;  // in law's units; none where nothing is known to be dropped
    double spread = 0.0;
  };
  std::vector<std::shared_ptr<const Entry>> of;  // particle i's entry, or one entry for every particle

  bool uniform() const { return of.size() == 1; }
  /// Whether they can be the tails of `laws`: one entry per particle, or one for a batch every particle shares.
  bool fits(const Batch<Pmf>& laws) const { return of.size() == laws.size() || (uniform() && laws.uniform()); }
  const std::shared_ptr<const Entry>& entry(std::size_t i) const { return of[uniform() ? 0 : i]; }
  const Pmf& law(std::size_t i) const { return entry(i)->law; }
  const std::optional<Pmf>& dropped(std::size_t i) const { return entry(i)->dropped; }
  double spread(std::size_t i) const { return entry(i)->spread; }
};

/// The tails that locate nothing: each law's whole error bound as its spread.
std::shared_ptr<const DroppedTails> spread_tails(const Batch<Pmf>& laws);

/// A node's tails, computed when first read. Which laws they belong to is known at once, so that matching them
/// against a node's laws costs nothing; the dropped measures themselves (DroppedTails) are computed only when an
/// observation's bound is read or a joint law takes the node over. An engine that never reads a bound does not pay
/// for following the tails, and one that does pays once per law. A chain of pending tails deeper than max_depth,
/// or holding more than max_pending particle laws (depth times particles), is computed at once, so that what the
/// chain holds (the laws of each step) stays bounded over a long filter and a large population (whose particles
/// share their tails' work anyway).
class LaterTails {
 public:
  /// What the computation gives: the tails (nullptr where they could not follow: a law too wide, a family that
  /// cannot say) and, for a conditioning, the observation's error bound from them (nothing: the ordinary bound).
  struct Result {
    std::shared_ptr<const DroppedTails> tails;
    std::optional<double> error;
  };
  /// Computes them from the laws they belong to (laws()).
  using Compute = std::function<Result(const Batch<Pmf>& laws)>;
  static constexpr std::size_t max_depth = 32;
  static constexpr std::size_t max_pending = std::size_t{1} << 16;

  /// The tails of the laws `laws`, computed by f(laws) when first read (at once where depth > max_depth or depth times
  /// the particles > max_pending). depth: one more than the deepest pending input f reads.
  static std::shared_ptr<const LaterTails> later(Batch<Pmf> laws, std::size_t depth, Compute f);
  /// Tails known now.
  static std::shared_ptr<const LaterTails> known(Batch<Pmf> laws, Result r);

  /// Whether these are the tails of `laws` (equal laws, particle by particle; O(1) each for shared laws).
  bool belong_to(const Batch<Pmf>& laws) const;
  bool belong_to(const std::vector<Pmf>& laws) const;
  const Batch<Pmf>& laws() const { return laws_; }
  /// Computes them if they are pending. Exceptions from the computation mean "could not follow" (nullptr tails).
  const Result& read() const;
  /// The tails, or nullptr where they could not follow.
  std::shared_ptr<const DroppedTails> tails() const { return read().tails; }
  /// The tails, or the laws' whole bounds as spread where they could not follow.
  std::shared_ptr<const DroppedTails> tails_or_spread() const;
  /// The pending depth: 0 once computed.
  std::size_t depth() const { return done_ ? 0 : depth_; }

 private:
  LaterTails(Batch<Pmf> laws, std::size_t depth, Compute f)
      : laws_(std::move(laws)), f_(std::move(f)), depth_(depth) {}
  Batch<Pmf> laws_;
  mutable Compute f_;
  mutable Result result_;
  mutable bool done_ = false;
  std::size_t depth_ = 0;
};
using Tails = std::shared_ptr<const LaterTails>;

/// Whether n's tails may be known (it has some, or it is a family's truncated prior, and joint laws track dropped
/// mass): a cheap test before known_tails.
bool may_know_tails(const Node& n);
/// n's tails for its current laws (host Pmfs), where they may be known (pending until read); else nullptr.
Tails later_tails(Node& n, const Batch<Pmf>& laws);
Tails later_tails(Node& n, const std::vector<Pmf>& laws);
/// The same, computed now (for a joint law that takes n over); nullptr where not known.
std::shared_ptr<const DroppedTails> known_tails(Node& n, const std::vector<Pmf>& laws);
std::shared_ptr<const DroppedTails> known_tails(Node& n, const Batch<Pmf>& laws);
/// The ordinary path conditioned the marginalized n on its observed child Y = y (n's laws had the tails `tails`,
/// and are now their posteriors, with log-likelihoods log_likelihood[i] = log sum_x law_i(x) p(y_i | x)): the tails
/// are conditioned likewise and kept with n (pending). Returns the observation's error bound, pending with them:
/// the dropped tails weighed by their own likelihood, the rest by the largest, relative to the likelihood, the
/// largest over the particles; `ordinary` where the tails could not follow.
Bound condition_tails(Node& n, const Tails& tails, const ChildLaw& law, const Values& y,
                      std::vector<double> log_likelihood, const Bound& before, const Bound& ordinary);
/// Whether the ordinary path follows what truncation dropped (host graphs, joint laws on, Truncation::track_dropped).
bool follows_tails(const Context& c);
/// n's tails for its current laws where they are known, else every law's whole bound as spread (nothing located).
Tails tails_or_spread(Node& n, const Batch<Pmf>& laws);
/// The tails of a child's laws `result`, pushed from its parent's tails x through the child law (a thinning or a
/// Markov step: exact kernels that keep mass; nullptr for any other law, whose bound stays the ordinary one).
Tails pushed_tails(const Tails& x, const ChildLaw& law, const Batch<Pmf>& result);
/// The tails of the laws `result` of X + sign Y from its operands' tails: the dropped measure
/// \f$d_X * \mu_Y + (\mu_X + d_X) * d_Y\f$ and the spread \f$s_X (1 + |d_Y| + s_Y) + s_Y (1 + |d_X|)\f$ (relative
/// masses), as tally::JointPmf's outer product carries them.
Tails summed_tails(const Tails& x, const Tails& y, int sign, const Batch<Pmf>& result);

}  // namespace tally::runtime::detail
