// Private: joint operations on many different tables at once, as one batch of gpu::JointLaws (the device's kernels
// on a CUDA graph) instead of one table after another on the host (Truncation::joint_batches says when).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "steps.hpp"
#include "tally/distributions/joint_condition.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::runtime::detail::joint_steps {

/// The tables a batch made, one per distinct input, in the order of the inputs.
using Made = std::vector<JointPmf>;
/// The particles whose tables a batch computes (each the first of a run of particles with equal inputs).
using Starts = std::vector<std::size_t>;

/// Where the runs of equal inputs start: particle 0 and the particles i with same(i) false (same is called once per
/// particle; never where `one`: one run); repeats(i) answers same(i) again without calling it.
struct RunStarts {
  Starts starts;
  std::vector<char> here;
  bool one = false;
  template <class Same>
  RunStarts(std::size_t particles, Same same, bool one_run = false) : here(one_run ? 0 : particles, 0), one(one_run) {
    if (one) {
      starts.push_back(0);
      return;
    }
    for (std::size_t i = 0; i < particles; ++i)
      if (i == 0 || !same(i)) {
        starts.push_back(i);
        here[i] = 1;
      }
  }
  bool repeats(std::size_t i) const { return one ? i > 0 : !here[i]; }
};


/// The batches run so far in this process (each operation on a batch counts one): for tests.
inline std::atomic<std::uint64_t>& batches_run() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

/// The times a group's resident tables were copied to the host as JointPmfs (JointGroup::laws()): for tests.
inline std::atomic<std::uint64_t>& tables_to_host() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

/// Where a batch runs, and the most entries one of its tables may have (the joint budget's max_size: a batch
/// checks each result's box before computing it, and a table past it is over_budget, as on the host).
struct BatchPlace {
  gpu::Backend where;
  std::int64_t max_size;
  /// Where given, a batch's result tables are kept trimmed as compute() trims them (keep()); null: as they are.
  const Truncation* trim = nullptr;
};

/// Where an operation on g's distinct tables at starts runs as one batch whose widest table has rank rank_out (0: the
/// operation has no batch form), or nothing for one table after another on the host: never under
/// Truncation::JointBatches::host or past gpu::max_joint_rank; otherwise always where g's tables are resident in a
/// batch already, or under `batched`; under `automatic` on a CUDA graph with at least two distinct tables holding
/// joint_batch_entries entries together.
std::optional<BatchPlace> batch_place(const Context& c, JointGroup& g, const Starts& starts, int rank_out);

/// f(k) for k = 0 .. n - 1, the k split into consecutive parts on up to the hardware's threads (the calling one
/// among them), about `entries` weights a part at least (weight(k): table k's), so that small batches stay on the
/// calling thread. The first exception a part throws is rethrown here once every part has ended.
void parallel_tables(std::size_t n, const std::function<std::size_t(std::size_t)>& weight,
                     const std::function<void(std::size_t)>& f, std::size_t entries = std::size_t{1} << 16);

/// A batch of tables, where it runs, with each table's whole error bound (bounds[k]: JointPmf::error_bound, the
/// dropped measure's mass included; a batch carries no dropped measure, as compute() when one breaks the budget) and
/// its log mass.
struct BatchIn {
  std::shared_ptr<const gpu::JointLaws> laws;
  std::vector<double> bounds, log_mass;
};
/// The tables particles starts[0], starts[1], ... of g hold, as a batch where `where` says: the resident batch's laws
/// gathered (none copied where the starts hold its laws in order), or the host's tables copied side by side.
BatchIn batch_input(JointGroup& g, const Starts& starts, gpu::Backend where);

/// An operation's results, one per start, before they are kept: the laws and each one's whole bound; log_mass where
/// the operation knows it (a sum out keeps its input's), else empty (keep() sums the laws).
struct BatchOut {
  gpu::JointLaws laws;
  std::vector<double> bounds, log_mass;
};

/// out becomes g's tables, resident where the batch ran, particle i holding the result of its run (runs): trimmed
/// first where `trim` is given (joint_trim at its tolerance, the cut mass added to each bound relative to what is
/// kept, as tally::truncate without a dropped measure), then counted against the budget (over_budget past
/// Truncation::max_joint_bytes, g unchanged). False, and g unchanged, where a result has no mass left (an underflow
/// the host's formulas would avoid: the caller computes every table on the host instead).
bool keep(const Context& c, JointGroup& g, BatchOut out, const RunStarts& runs, const Truncation* trim);

/// An operand folded into a sum (an independent count nobody else needs): particle i's law laws[i], negated where
/// sign < 0, with its known tails (null: none), whose dropped and spread parts join its bound in a batch.
struct FoldedOperand {
  const Batch<Pmf>* laws;
  std::int64_t sign;
  const DroppedTails* tails;
};

// The operations' batch forms, each on the batch `in` of the distinct tables at starts s. Each result's bound is its
// input's whole bound (these maps keep every table's mass; an added independent law's bound is combined as
// (1 + e)(1 + e_y) - 1). Each checks its results' sizes against at.max_size before computing them (over_budget).

/// The child kernel of a batch's tables: law's, or where each gives a law per group, each start's group's (a set of
/// one table each: gpu::ChildKernel::per_set).
gpu::ChildKernel batch_child(const ChildLaw& law, const GroupLaws* each, const Starts& s, gpu::Backend where);
/// The child Y | X_axis ~ law (thinning, Markov step, affine map) appended as the last axis, or in place of X_axis
/// (X summed out). In place, a Markov step or affine map keeps the axis where X was; a thinning, and a law per group
/// (each: the tables at starts s each take their own group's, a thinning or a Markov step), put Y last (the caller
/// moves the member: child_batch_puts_y_last). Poisson children: poisson_child_batch.
BatchOut child_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, bool in_place,
                     const GroupLaws* each = nullptr, const Starts& s = {});
/// A Poisson child Y | X_axis ~ law (scaled or indexed; each: a law per group) appended as the last axis, on each
/// table's window: tally::add_child's, from the smallest and largest rates over the table's box at t's tolerance,
/// the mass past it (at most the tolerance, relative) added to the table's bound as tally::add_child adds it.
BatchOut poisson_child_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, const Truncation& t,
                             const GroupLaws* each = nullptr, const Starts& s = {});
/// The tables x at s (a batch of the frame's group; x itself without a realized parent) with an axis appended for
/// each realized parent of the frame, at its value in each start's particle, as SelectedFrame::table appends them on
/// the host: axes becomes the frame's axes with the constants' filled in (the group's axes first, then the
/// constants', in the parents' order).
std::shared_ptr<const gpu::JointLaws> with_constant_axes(std::shared_ptr<const gpu::JointLaws> x, const Starts& s,
                                                        const SelectedFrame& f, std::vector<int>& axes);
/// The child of several members (SelectedChild: Poisson(a R_S), or Binomial(X, q_S)) appended as the last axis of the
/// frame's tables, the realized parents' constant axes summed out after it (so Y is the axis after the group's). A
/// Poisson child keeps each table's window (tally::add_child's, from the smallest and largest rates its box's states
/// select, at t's tolerance; the mass past it added to the bound as poisson_child_batch does).
BatchOut selected_child_batch(BatchIn in, const Starts& s, const BatchPlace& at, const SelectedChild& child,
                              const SelectedFrame& f, const Truncation& t);
/// Whether child_batch in place puts Y last rather than where X was.
inline bool child_batch_puts_y_last(const ChildLaw& law, const GroupLaws* each) {
  return each != nullptr || std::holds_alternative<Thinning>(law);
}
/// The coordinate \f$V = c_i + \kappa \cdot x\f$ appended (replace = -1) or in place of X_replace, then each folded
/// operand added to V (a convolution along V's axis). constants: c_i by particle (empty: 0).
BatchOut linear_batch(BatchIn in, const Starts& s, const BatchPlace& at, const Coordinates& kappa,
                      const std::vector<std::int64_t>& constants, int replace,
                      const std::vector<FoldedOperand>& folded);
/// \f$Z = s_x X_{axis} + s_y Y\f$ with the child Y | X_axis ~ law (a thinning, Markov step or affine map), Y
/// summed out: Z appended alone, as join_joint_sum's host form does where Y does not live on (where it does, Y
/// joins as an axis and Z is a linear member).
BatchOut child_sum_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, std::int64_t sign_x,
                         std::int64_t sign_y, const GroupLaws* each = nullptr, const Starts& s = {});
/// The binomial split X_axis -> (X - Y, Y), Y ~ Binomial(X, q) for the thinning law (each: each start's group's):
/// X - Y in place of X, Y appended (split_in_place).
BatchOut split_batch(BatchIn in, const BatchPlace& at, int axis, const ChildLaw& law, const GroupLaws* each = nullptr,
                     const Starts& s = {});
/// X_axis summed out (the log masses kept).
BatchOut sum_out_batch(BatchIn in, int axis);
/// The outer product of independent tables, table k of in with table k of y (y's axes after in's): bounds
/// (1 + e)(1 + e_y) - 1, log masses added.
BatchOut outer_batch(BatchIn in, const BatchIn& y, const BatchPlace& at);
/// Each table conditioned on its observed child y_i ~ law(X_axis) (y by particle, read at the starts).
struct ConditionedBatch {
  /// The posteriors normalized (mass 1), bounds unset; a table whose observation is impossible kept as it was.
  gpu::JointLaws posterior;
  /// log L_k (-inf: impossible), and rho_k = e_k M_k / L_k (the prior's bound e, its mass M), as tally::condition's
  /// spread_error for a table without dropped measure.
  std::vector<double> log_likelihood, rho;
};
/// Nothing where a likelihood is NaN or a posterior has no mass (the host's formulas then). each: a law per group
/// (each table observed under its start's group's).
std::optional<ConditionedBatch> condition_batch(const BatchIn& in, const Starts& s, int axis, const ChildLaw& law,
                                                const std::vector<std::int64_t>& y, const GroupLaws* each = nullptr);
/// Each table conditioned on its observed child of several members, y_i ~ child (SelectedChild: Poisson(a R_S) with
/// the state S selecting the rate among the others, or Binomial(X, q_S) with X the first other), its parents the
/// frame's: members' axes, and realized parents' values as constant axes (with_constant_axes), summed out after.
std::optional<ConditionedBatch> selected_batch(const BatchIn& in, const Starts& s, const SelectedChild& child,
                                               const SelectedFrame& f, const std::vector<std::int64_t>& y);
/// Each table conditioned on \f$\kappa \cdot x = v_k\f$ (v: one value a table, in the batch's order), as
/// condition_batch: an observed linear form of members, a linear member realized.
std::optional<ConditionedBatch> condition_linear_batch(const BatchIn& in, const Coordinates& kappa,
                                                       const std::vector<std::int64_t>& v);

/// The marginal of axis a of a group's resident tables, read where they are (gpu::joint_marginal: one law a distinct
/// table): on a CUDA graph the laws indexed by the particles' table index (Laws::indexed, nothing copied to the host
/// but the index up), on the host the Pmfs shared as the tables are; each with its table's whole bound, as
/// tally::marginal keeps a JointPmf's (summing a measure does not increase its relative L1 error).
Laws resident_marginal(const Context& ctx, const JointGroup::Resident& r, int a);
/// The law of the linear member \f$V = c_i + \kappa \cdot x\f$ (kappa not empty) read from g's resident tables: V
/// formed in each distinct (table, c_i)'s batch in place of an axis it reads (joint_linear_combination), moved by
/// c_i, its marginal taken as resident_marginal's. Nothing where g's tables are not resident, no batch runs, or V's
/// table would pass the budget's max_size (the host's linear_form_law, which forms no table).
std::optional<Laws> resident_linear_marginal(const Context& ctx, JointGroup& g, const JointGroup::LinearMember& l,
                                             const Coordinates& kappa);

/// Whether a child law has a batch form (bounded: a thinning, a Markov step, an affine map).
inline bool bounded_child(const ChildLaw& law) {
  return !std::holds_alternative<ScaledPoisson>(law) && !std::holds_alternative<IndexedPoisson>(law);
}

/// An operation on g's tables with a batch form: where batch_place chooses a batch, batch(in, starts, at) computes
/// the distinct tables at the run starts (same(i) false: particle i's inputs differ from particle i - 1's; one run
/// where `one`) and keep() keeps its results resident, trimmed where `trim` and the place say so; otherwise, or where
/// the batch gives nothing or keep() refuses (a result without mass), g's tables become `collect(host, repeats, one)`
/// (compute() or shared_per_particle(): host(i) makes particle i's table on the host). *batched_out says which ran.
template <class Collect, class Host, class Batch, class Same>
void batched(const Context& c, JointGroup& g, Collect collect, int rank_out, Host host, Batch batch, Same same,
             bool* batched_out = nullptr, bool one = false, bool trim = true) {
  const RunStarts runs(c.particles, same, one);
  if (batched_out) *batched_out = false;
  if (const auto at = batch_place(c, g, runs.starts, rank_out)) {
    std::optional<BatchOut> out = batch(batch_input(g, runs.starts, at->where), runs.starts, *at);
    if (out && keep(c, g, std::move(*out), runs, trim ? at->trim : nullptr)) {
      if (batched_out) *batched_out = true;
      return;
    }
  }
  g.set(collect(host, [&](std::size_t i) { return runs.repeats(i); }, one));
}

/// batched() collecting as compute() does (the host's tables trimmed, within the budget).
template <class Host, class Batch, class Same>
void compute_batched(const Context& c, JointGroup& g, int rank_out, Host host, Batch batch, Same same,
                     bool* batched_out = nullptr, bool one = false) {
  batched(
      c, g, [&](auto f, auto s, bool o) { return compute(c, f, s, o); }, rank_out, host, batch, same, batched_out,
      one);
}

}  // namespace tally::runtime::detail::joint_steps
