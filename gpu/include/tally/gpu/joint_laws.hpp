// Joint laws of k coupled counts for P particles in flat arrays (host or device), and their batched operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// The largest rank of a batch of joint laws.
inline constexpr int max_joint_rank = 4;

/// P joint laws of one rank k (1 <= k <= max_joint_rank), one per particle. Law i is the measure
/// \f[ \mu_i(x) = w_{i, \iota_i(x)}\, e^{s_i}, \qquad \iota_i(x) = \sum_a (x_a - lo_{i,a})\, \mathrm{stride}_{i,a}, \f]
/// on the box \f$\prod_a [lo_{i,a}, lo_{i,a} + \mathrm{shape}_{i,a} - 1]\f$, row-major (the last axis varies
/// fastest), its weights at offset_i .. offset_{i+1} - 1: tally::JointPmf's layout, flattened. The weights are in
/// [0, 1] with largest 1 (a law without mass has s_i = -inf); boxes are not trimmed (zeros may border them).
/// The boxes (lo, shape, offsets) are also kept on the host: every operation's output box follows from its input's,
/// so no size is read back from the device. Operations run where the laws are: Backend::cpu loops on one core (the
/// reference), Backend::cuda one block per law; both evaluate the same per-entry formulas (joint_math.hpp).
class JointLaws {
 public:
  /// One law in host memory: the box and the row-major weights (any non-negative finite values: from_host rescales
  /// them to largest 1), and the log scale.
  struct Law {
    std::vector<std::int64_t> lo, shape;
    std::vector<double> weights;
    double log_scale = 0.0;
  };
  JointLaws() = default;
  /// The laws, where `where` keeps them. shape_error: a rank outside 1 .. max_joint_rank, a law of another rank, an
  /// extent < 1 or a weight count that is not the product of the extents; domain_error: a negative, NaN or infinite
  /// weight or a NaN log scale; overflow_error: a box past int64.
  static JointLaws from_host(int rank, const std::vector<Law>& laws, Backend where);
  /// Room for laws on the given boxes (lo and shape: count x rank, row by row), weights uninitialized on the device.
  static JointLaws allocate(Backend where, int rank, std::vector<std::int64_t> lo, std::vector<std::int64_t> shape,
                            const char* who);
  /// The laws in host memory (a copy from the device).
  std::vector<Law> to_host() const;

  int rank() const { return rank_; }
  std::size_t size() const { return count_; }
  Backend where() const { return where_; }
  /// The boxes on the host: lo and shape (size() x rank(), row by row) and the offsets (size() + 1).
  const std::vector<std::int64_t>& lo() const { return host_lo_; }
  const std::vector<std::int64_t>& shape() const { return host_shape_; }
  const std::vector<std::int64_t>& offset() const { return host_offset_; }
  std::size_t total() const { return static_cast<std::size_t>(host_offset_.empty() ? 0 : host_offset_.back()); }
  /// Bytes held: 8 a weight, 8 (1 + 2 rank) a law for its scale, offset and box, 8 more for the last offset.
  std::size_t bytes() const { return 8 * total() + 8 * (1 + 2 * static_cast<std::size_t>(rank_)) * count_ + 8; }

  /// The arrays where the laws are (host vectors for Backend::cpu, device memory for Backend::cuda).
  const Column<double>& weights() const { return weights_; }
  Column<double>& weights() { return weights_; }
  const Column<double>& log_scale() const { return log_scale_; }
  Column<double>& log_scale() { return log_scale_; }
  const Column<std::int64_t>& offset_column() const { return offset_; }
  const Column<std::int64_t>& lo_column() const { return lo_; }
  const Column<std::int64_t>& shape_column() const { return shape_; }

 private:
  int rank_ = 1;
  std::size_t count_ = 0;
  Backend where_ = Backend::cpu;
  std::vector<std::int64_t> host_lo_, host_shape_, host_offset_{0};
  Column<double> weights_, log_scale_;
  Column<std::int64_t> offset_, lo_, shape_;
};

/// The binomial split of coordinate `axis` of every law, X -> (X - Y, Y) with Y | X ~ Binomial(X, q): X - Y takes the
/// place of X_axis and Y is appended as the last axis (rank k + 1 <= max_joint_rank),
/// \f[ \mu'(\dots, z, \dots, y) = \mu(\dots, z + y, \dots) \binom{z + y}{y} q^y (1 - q)^z \f]
/// (tally::split's law, before trimming). The new box spans 0 .. hi_axis on both new axes. Each entry is formed in
/// logarithms (log w + log Binomial(y; z + y, q)) and scaled by the law's largest: weights keep their relative
/// precision down to the smallest normal double. domain_error when q is not in [0, 1] or an axis has negative values
/// (checked on the host's boxes); shape_error for a bad axis or a rank past max_joint_rank.
JointLaws joint_split(const JointLaws& x, int axis, double q);

/// Every law given an observed thinning v_i ~ Binomial(X_axis, q) of one coordinate:
/// \f$ \pi_i(x) \propto \mu_i(x) \binom{x_{axis}}{v_i} q^{v_i} (1-q)^{x_{axis} - v_i} \f$ (normalized, largest weight 1),
/// and \f$\log L_i = s_i + \log \sum_x w_{i,\iota(x)} \mathrm{Bin}(v_i; x_{axis}, q)\f$ added to log_likelihood, the
/// products formed in logarithms. An impossible observation (or a law without mass) adds -inf and leaves the law as
/// it was. domain_error for q outside [0, 1] or negative values on the axis; shape_error for a bad axis or sizes.
JointLaws joint_condition_on_thinning(const JointLaws& x, int axis, double q, const Column<std::int64_t>& v,
                                      Column<double>& log_likelihood);

/// The joint law of the other coordinates, X_axis summed out (rank k - 1 >= 1; the later axes move down by one):
/// \f$\mu'(x_{-a}) = \sum_{x_a} \mu(x)\f$, rescaled to largest 1. shape_error for rank 1 or a bad axis.
JointLaws joint_sum_out(const JointLaws& x, int axis);

}  // namespace tally::gpu
