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

/// The batches run so far in this process (each chunk of each operation counts one): for tests.
inline std::atomic<std::uint64_t>& batches_run() {
  static std::atomic<std::uint64_t> n{0};
  return n;
}

/// Where a batch runs, and the most entries one of its tables may have (the joint budget's max_size: a batch
/// checks each result's box before computing it, and a table past it is over_budget, as on the host).
struct BatchPlace {
  gpu::Backend where;
  std::int64_t max_size;
  /// Where given, a batch's result tables come back trimmed as compute() trims them (trimmed()), on the host's
  /// threads together with their conversion; null: as they are (a sum out, a conditioning).
  const Truncation* trim = nullptr;
};

/// Where the distinct tables `in[i]`, i in starts, are computed as one batch whose widest table has rank rank_out
/// (0: the operation has no batch form), or nothing for one table after another on the host: never under
/// Truncation::JointBatches::host or past gpu::max_joint_rank; always under `batched` (where the graph is); under
/// `automatic` on a CUDA graph with at least two distinct tables holding joint_batch_entries entries together.
std::optional<BatchPlace> batch_place(const Context& c, const Tables& in, const Starts& starts, int rank_out);

/// Splits starts into consecutive chunks whose tables hold at most `entries` entries together (at least one table
/// a chunk), so that a batch's inputs and results stay within a few hundred MB of device memory.
std::vector<Starts> chunks(const Tables& in, const Starts& starts, std::int64_t entries);

/// f(k) for k = 0 .. n - 1, the k split into consecutive parts on up to the hardware's threads (the calling one
/// among them), about `entries` weights a part at least (weight(k): table k's), so that small batches stay on the
/// calling thread. The first exception a part throws is rethrown here once every part has ended.
void parallel_tables(std::size_t n, const std::function<std::size_t(std::size_t)>& weight,
                     const std::function<void(std::size_t)>& f, std::size_t entries = std::size_t{1} << 16);

/// A batch of tables, where it runs, with each table's whole error bound (bounds[k]: JointPmf::error_bound, the
/// dropped measure's mass included; a batch carries no dropped measure, as compute() when one breaks the budget).
struct BatchIn {
  gpu::JointLaws laws;
  std::vector<double> bounds;
};
BatchIn to_batch(const Tables& in, const Starts& starts, gpu::Backend where);

/// An operand folded into a sum (an independent count nobody else needs): particle i's law laws[i], negated where
/// sign < 0, with its known tails (null: none), whose dropped and spread parts join its bound in a batch.
struct FoldedOperand {
  const Batch<Pmf>* laws;
  std::int64_t sign;
  const DroppedTails* tails;
};

// The operations' batch forms, each on the distinct tables `in[i]`, i in s. nothing where a result has no mass
// left (an underflow the host's formulas would avoid): the caller then computes those tables on the host. Each
// result's spread bound is its input's whole bound (these maps keep every table's mass; an added independent law's
// bound is combined as (1 + e)(1 + e_y) - 1).

/// The child Y | X_axis ~ law (thinning, Markov step, affine map) appended as the last axis, or in place of X_axis
/// (X summed out). In place, a Markov step or affine map keeps the axis where X was; a thinning puts Y last (the
/// caller moves the member). Poisson children have no batch form (unbounded: batch_place is not asked).
std::optional<Made> child_batch(const Tables& in, const Starts& s, const BatchPlace& at, int axis, const ChildLaw& law,
                                bool in_place);
/// The coordinate \f$V = c_i + \kappa \cdot x\f$ appended (replace = -1) or in place of X_replace, then each folded
/// operand added to V (a convolution along V's axis). constants: c_i by particle (empty: 0).
std::optional<Made> linear_batch(const Tables& in, const Starts& s, const BatchPlace& at, const Coordinates& kappa,
                                 const std::vector<std::int64_t>& constants, int replace,
                                 const std::vector<FoldedOperand>& folded);
/// \f$Z = s_x X_{axis} + s_y Y\f$ with the child Y | X_axis ~ law (a thinning, Markov step or affine map), Y
/// summed out: Z appended alone, as join_joint_sum's host form does where Y does not live on (where it does, Y
/// joins as an axis and Z is a linear member).
std::optional<Made> child_sum_batch(const Tables& in, const Starts& s, const BatchPlace& at, int axis, const ChildLaw& law,
                                    std::int64_t sign_x, std::int64_t sign_y);
/// The binomial split X_axis -> (X - Y, Y), Y ~ Binomial(X, q): X - Y in place of X, Y appended (split_in_place).
std::optional<Made> split_batch(const Tables& in, const Starts& s, const BatchPlace& at, int axis, double q);
/// X_axis summed out.
std::optional<Made> sum_out_batch(const Tables& in, const Starts& s, const BatchPlace& at, int axis);
/// Each table conditioned on its observed child y_i ~ law(X_axis) (y by particle), as tally::condition gives it for
/// a table without dropped measure: the posterior normalized with bound min(2, 2 rho), the log-likelihood, and
/// rho = e M / L as spread_error.
std::optional<std::vector<JointConditioned>> condition_batch(const Tables& in, const Starts& s, const BatchPlace& at,
                                                             int axis, const ChildLaw& law,
                                                             const std::vector<std::int64_t>& y);

/// Whether a child law has a batch form (bounded: a thinning, a Markov step, an affine map).
inline bool bounded_child(const ChildLaw& law) {
  return !std::holds_alternative<ScaledPoisson>(law) && !std::holds_alternative<IndexedPoisson>(law);
}

/// The largest number of entries of one chunk's input tables.
inline constexpr std::int64_t batch_chunk_entries = std::int64_t{1} << 22;

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

/// batch(chunk) for each chunk of starts (chunks()), its results concatenated in order; nothing as soon as one chunk
/// gives nothing (the caller then computes every table on the host).
template <class T, class Batch>
std::optional<std::vector<T>> in_chunks(const Tables& in, const Starts& starts, Batch batch) {
  std::vector<T> made;
  made.reserve(starts.size());
  for (const Starts& chunk : chunks(in, starts, batch_chunk_entries)) {
    std::optional<std::vector<T>> m = batch(chunk);
    ++batches_run();
    if (!m) return std::nullopt;
    for (auto& r : *m) made.push_back(std::move(r));
  }
  return made;
}

/// P tables made by an operation with a batch form. `collect(f, same, one, trimmed)` gathers them as compute()
/// (trimmed, within the budget) or shared_per_particle() does, f(i) making particle i's table where same(i) is false
/// (one table for all where `one`: every input uniform). Where batch_place chooses a batch, batch(chunk, at) makes
/// the tables of each chunk of run starts (nothing: the host makes them instead); else host(i) makes each
/// (`trimmed` says whether f's tables are trimmed already: a batch's, where its place says so). *batched says which
/// ran. A batch's table past the joint budget's max_size is over_budget before it is computed, as the host's would
/// be.
template <class Collect, class Host, class Batch, class Same>
Tables batched(const Context& c, Collect collect, const Tables& in, int rank_out, Host host, Batch batch, Same same,
               bool* batched_out = nullptr, bool one = false) {
  const RunStarts runs(c.particles, same, one);
  const auto repeats_here = [&](std::size_t i) { return runs.repeats(i); };
  if (batched_out) *batched_out = false;
  const auto at = batch_place(c, in, runs.starts, rank_out);
  if (!at) return collect(host, repeats_here, one, false);
  // (each batch form checks its results' sizes against at->max_size first)
  std::optional<Made> made = in_chunks<JointPmf>(in, runs.starts, [&](const Starts& chunk) { return batch(chunk, *at); });
  if (!made) return collect(host, repeats_here, one, false);
  if (batched_out) *batched_out = true;
  std::size_t k = 0;
  return collect([&](std::size_t) { return std::move((*made)[k++]); }, repeats_here, one, at->trim != nullptr);
}

/// batched() collecting as compute() does.
template <class Host, class Batch, class Same>
Tables compute_batched(const Context& c, const Tables& in, int rank_out, Host host, Batch batch, Same same,
                       bool* batched_out = nullptr, bool one = false) {
  return batched(
      c, [&](auto f, auto s, bool o, bool trimmed) { return compute(c, f, s, o, !trimmed); }, in, rank_out, host,
      batch, same, batched_out, one);
}

}  // namespace tally::runtime::detail::joint_steps
