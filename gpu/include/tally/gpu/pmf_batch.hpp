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
  std::vector<double> weights;
  std::vector<std::int64_t> offset{0};
  std::vector<std::int64_t> lo;
  std::vector<double> log_scale;

  std::size_t size() const { return lo.size(); }
  std::size_t length(std::size_t i) const { return static_cast<std::size_t>(offset[i + 1] - offset[i]); }
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
  const double* weights;
  const std::int64_t* offset;
  const std::int64_t* lo;
  const double* log_scale;
  std::size_t count;
};
struct MutablePmfBatchView {
  double* weights;
  std::int64_t* offset;
  std::int64_t* lo;
  double* log_scale;
  std::size_t count;
};

}  // namespace tally::gpu
