// How an unbounded family becomes a finite pmf: the tail mass that may be dropped, and the largest dense size.
#pragma once

#include <cstdint>

namespace tally {

/// Settings for turning a family into a Pmf (to_pmf) and for operations whose results are unbounded
/// (Poisson(a X)). The mass actually dropped, at most `tolerance`, becomes the result's error bound.
struct Truncation {
  /// Largest mass that may be dropped from the tails (split between the lower and upper tail). Must be > 0 for
  /// unbounded families; bounded families drop only entries below flush_fraction of their largest entry.
  double tolerance = 1e-15;
  /// Largest number of entries of a dense pmf; a larger result is an overflow_error naming the size it needs.
  std::int64_t max_size = std::int64_t{1} << 27;
  /// Largest number of multiply-adds a child law's marginal (thinning, Poisson(a X)) may take, estimated from the
  /// sizes before any work (2^36, tens of seconds on one core); a costlier one is an overflow_error naming the
  /// sizes, at once, instead of an apparent hang.
  std::int64_t max_work = std::int64_t{1} << 36;
  /// Largest size in bytes of one joint law of coupled variables over all the particles of a graph (8 bytes per
  /// entry of each particle's table; tally::runtime keeps coupled variables in such laws, see graph.hpp). A joint
  /// law that would be larger is not formed: the runtime samples instead and reports it (Fallback::joint_limit).
  /// 0 turns joint laws off (every coupling is then a reported fallback).
  std::int64_t max_joint_bytes = std::int64_t{256} << 20;
  /// Whether joint laws keep the mass truncation cuts from them as a table where it was cut (JointPmf::dropped,
  /// and the tails of unbounded priors that enter them), so that their error bounds stay within a small factor of
  /// the true error (see bench/RESULTS.md, "Joint laws' error bound"); on a CPU graph the tails
  /// follow the ordinary path too (pushed through thinnings and Markov steps, convolved into sums, weighed by each
  /// observation's likelihood; computed there only when an observation's bound is read). That table goes through
  /// every joint
  /// operation with the law: about 2 to 4 times the work on the examples. false keeps only the cut mass, as a
  /// bound that may be many orders of magnitude above the true error after a few observations. On a CUDA graph a
  /// prior's tails are followed only inside joint laws (which live on the host): conditioning a marginalized prior
  /// on its child keeps the cut mass alone there, since following it would read every particle's law back; the bound
  /// stays sound but can be looser (the migration example: 7.7e4 times its error at tolerance 1e-9).
  bool track_dropped = true;
  /// Where the runtime computes a joint operation when the particles hold different joint tables (after a member
  /// was drawn in each particle, or a realized value entered a law): `automatic` runs it as one batch of
  /// gpu::JointLaws on a CUDA graph (one kernel over every distinct table: tally/gpu/joint_laws.hpp) once the
  /// distinct tables hold at least joint_batch_entries entries together, and one table after another on the host
  /// otherwise (and always on a host graph); `host` always one after another; `batched` always as a batch where
  /// the graph is (a host graph runs the batch's CPU reference loops: for tests and comparisons). Operations with a
  /// batch form: a thinning, Markov step or affine map of a coordinate (in place or appended), sums and differences
  /// of coordinates, an independent count added to a coordinate, summing a coordinate out, and the observation of
  /// a thinning, Poisson, categorical or affine child of a coordinate; the others (outer products, unbounded
  /// children appended, several-parent children, draws) stay on the host. A batch's results stay where it ran, as
  /// the group's tables, trimmed there (the same rule as the host's truncation), so that a run of operations with
  /// batch forms moves no table between host and device. A batch does not carry dropped measures: each table's whole
  /// bound becomes its spread bound, and a cut's mass joins it, which stays sound but can be looser (see
  /// track_dropped).
  enum class JointBatches { automatic, host, batched };
  /// Where joint operations on different tables run (JointBatches above).
  JointBatches joint_batches = JointBatches::automatic;
  /// The distinct tables' entries (all together) from which `automatic` batches a joint operation on a CUDA graph.
  std::int64_t joint_batch_entries = std::int64_t{1} << 16;
};

}  // namespace tally
