// A batch of pmfs (one per particle) in flat arrays, the layout the batched kernels read and write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// P non-empty pmfs in flat arrays. Pmf i has the weights w = weights[offset[i], offset[i+1]) on the support
/// lo[i], lo[i] + 1, ..., and its masses are w_k exp(log_scale[i]). As in tally::Pmf, weights are kept in [0, 1]
/// with maximum 1 (`push_back` rescales: "scale before"), so products of weights neither overflow nor lose the
/// relative accuracy of the small ones, and the scale of each pmf lives in its log_scale.
struct PmfBatch {
  /// Every pmf's weights, one after another (pmf i at offset[i] .. offset[i+1] - 1).
  std::vector<double> weights;
  /// P + 1 offsets into weights, from 0.
  std::vector<std::int64_t> offset{0};
  /// The first point of each pmf's support.
  std::vector<std::int64_t> lo;
  /// Each pmf's log scale.
  std::vector<double> log_scale;

  /// P, the number of pmfs.
  std::size_t size() const { return lo.size(); }
  /// The number of weights of pmf i.
  std::size_t length(std::size_t i) const { return static_cast<std::size_t>(offset[i + 1] - offset[i]); }
  /// The weights of pmf i.
  std::span<const double> operator[](std::size_t i) const {
    return std::span<const double>(weights).subspan(static_cast<std::size_t>(offset[i]), length(i));
  }
  /// Appends the pmf w_k exp(log_scale) on lo, lo + 1, ...: w must be non-empty, finite and >= 0; it is stored
  /// divided by its maximum (whose logarithm moves to log_scale; an all-zero w gets log_scale -inf).
  /// Throws tally::shape_error (empty) or tally::domain_error (a negative, NaN or infinite weight; NaN log_scale).
  void push_back(std::span<const double> w, std::int64_t lo, double log_scale = 0.0);
  /// The largest length of a pmf of the batch (0 when empty).
  std::size_t max_length() const;
};

/// Checks the invariants of a batch (offsets from 0, increasing by at least 1, matching sizes; weights in [0, 1];
/// no NaN log_scale), else tally::shape_error or tally::domain_error naming `who`.
void check(const PmfBatch& batch, const char* who);

/// Views of a batch in device memory (pointers to arrays of the sizes above; count = P). Not owning.
struct PmfBatchView {
  /// The weights of all pmfs (PmfBatch::weights).
  const double* weights;
  /// P + 1 offsets.
  const std::int64_t* offset;
  /// P first points.
  const std::int64_t* lo;
  /// P log scales.
  const double* log_scale;
  /// P.
  std::size_t count;
};
/// The same view, writable: where the device forms write their results.
struct MutablePmfBatchView {
  /// The weights of all pmfs (PmfBatch::weights).
  double* weights;
  /// P + 1 offsets.
  std::int64_t* offset;
  /// P first points.
  std::int64_t* lo;
  /// P log scales.
  double* log_scale;
  /// P.
  std::size_t count;
};

}  // namespace tally::gpu
