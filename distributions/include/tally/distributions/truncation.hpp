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
  /// the true error (see bench/RESULTS.md, "Joint laws' error bound"). That table goes through every joint
  /// operation with the law: about 2 to 4 times the work on the examples. false keeps only the cut mass, as a
  /// bound that may be many orders of magnitude above the true error after a few observations. On a CUDA graph a
  /// prior's tails are followed only inside joint laws (which live on the host): conditioning a marginalized prior
  /// on its child keeps the cut mass alone there, since following it would read every particle's law back; the bound
  /// stays sound but can be looser (the migration example: 7.7e4 times its error at tolerance 1e-9).
  bool track_dropped = true;
};

}  // namespace tally
