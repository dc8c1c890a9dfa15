// Joint laws of k coupled counts for P particles in flat arrays (host or device), and their batched operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/population_chain.hpp"
#include "tally/gpu/population_children.hpp"

namespace tally::gpu {

/// The largest rank of a batch of joint laws. Each thread of a kernel holds a law's box (its ends and strides, this
/// many of each) in local memory, so the limit is a small constant; a table of more axes, each of at least two
/// values, holds 2^9 entries or more.
inline constexpr int max_joint_rank = 8;

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
    /// The box: its lower corner and its extents, one per axis.
    ///@{
    std::vector<std::int64_t> lo, shape;
    ///@}
    /// The weights, row-major over the box.
    std::vector<double> weights;
    /// s: the law is the weights times e^s.
    double log_scale = 0.0;
  };
  /// No laws (size() 0, rank 1, on the CPU).
  JointLaws() = default;
  /// The laws, where `where` keeps them. shape_error: a rank outside 1 .. max_joint_rank, a law of another rank, an
  /// extent < 1 or a weight count that is not the product of the extents; domain_error: a negative, NaN or infinite
  /// weight or a NaN log scale; overflow_error: a box past int64.
  static JointLaws from_host(int rank, const std::vector<Law>& laws, Backend where);
  /// Laws already in the batch's layout (lo and shape: count x rank, row by row; weights: the laws' row-major
  /// weights one after another; log_scale: one per law), taken over where `where` is the CPU and copied once to the
  /// device otherwise. For callers that hold laws in that form already (tally::JointPmf's tables: finite weights in
  /// [0, 1], largest 1): the boxes are checked as allocate() checks them and the sizes against each other
  /// (shape_error), the weights are not read.
  static JointLaws from_flat(int rank, std::vector<std::int64_t> lo, std::vector<std::int64_t> shape,
                             std::vector<double> weights, std::vector<double> log_scale, Backend where);
  /// Room for laws on the given boxes (lo and shape: count x rank, row by row), weights uninitialized on the device.
  static JointLaws allocate(Backend where, int rank, std::vector<std::int64_t> lo, std::vector<std::int64_t> shape,
                            const char* who);
  /// The laws in host memory (a copy from the device).
  std::vector<Law> to_host() const;

  /// k, the rank of every law.
  int rank() const { return rank_; }
  /// P, the number of laws.
  std::size_t size() const { return count_; }
  /// Where the laws' arrays are.
  Backend where() const { return where_; }
  /// The boxes on the host: lo and shape (size() x rank(), row by row) and the offsets (size() + 1).
  ///@{
  const std::vector<std::int64_t>& lo() const { return host_lo_; }
  const std::vector<std::int64_t>& shape() const { return host_shape_; }
  const std::vector<std::int64_t>& offset() const { return host_offset_; }
  ///@}
  /// The number of weights of all laws together (the last offset).
  std::size_t total() const { return static_cast<std::size_t>(host_offset_.empty() ? 0 : host_offset_.back()); }
  /// Bytes held: 8 a weight, 8 (1 + 2 rank) a law for its scale, offset and box, 8 more for the last offset.
  std::size_t bytes() const { return 8 * total() + 8 * (1 + 2 * static_cast<std::size_t>(rank_)) * count_ + 8; }

  /// The arrays where the laws are (host vectors for Backend::cpu, device memory for Backend::cuda).
  ///@{
  const Column<double>& weights() const { return weights_; }
  Column<double>& weights() { return weights_; }
  const Column<double>& log_scale() const { return log_scale_; }
  Column<double>& log_scale() { return log_scale_; }
  const Column<std::int64_t>& offset_column() const { return offset_; }
  const Column<std::int64_t>& lo_column() const { return lo_; }
  const Column<std::int64_t>& shape_column() const { return shape_; }
  ///@}

  /// Every law's coordinate `axis` moved by by[i] (lo_{i,axis} += by_i): the same weights on a shifted box, as a
  /// realized constant added to a coordinate moves it. shape_error for a bad axis or another number of shifts;
  /// overflow_error where a box's end leaves int64 (nothing changed then).
  void shift(int axis, const std::vector<std::int64_t>& by);

 private:
  int rank_ = 1;
  std::size_t count_ = 0;
  Backend where_ = Backend::cpu;
  std::vector<std::int64_t> host_lo_, host_shape_, host_offset_{0};
  Column<double> weights_, log_scale_;
  Column<std::int64_t> offset_, lo_, shape_;
};

/// Laws index[0], index[1], ... of x, in that order (a law may be taken more than once, or not at all): the distinct
/// tables an operation reads, or those that particles still hold after a resampling. The boxes follow on the host;
/// the weights are copied where the laws are (one block a law on the device). shape_error for an index past size().
JointLaws joint_gather(const JointLaws& x, const std::vector<std::size_t>& index);

/// What joint_trim kept of each law and what it cut.
struct JointTrimmed {
  /// The kept boxes' weights, rescaled to largest 1 (the log scale adds what the rescaling took).
  JointLaws laws;
  /// Per law, in the input's units (weights as stored, before e^{s_i}), on the host: M_i, the sum of all its weights.
  std::vector<double> total;
  /// Per law, in the same units: C_i, the sum of the weights cut.
  std::vector<double> cut;
};

/// Each law's tails along every axis cut where their marginal mass is small, as tally::truncate cuts a JointPmf: with
/// \f$m_a(v) = \sum_{x : x_a = v} w(x)\f$ and the budget \f$\beta_i = \tau M_i / (2k)\f$, the outer values of axis a are
/// cut from each end while their running sum stays at most \f$\beta_i\f$ (never the axis's last value), so that at
/// most \f$\tau M_i\f$ is cut in all. The box shrinks to the kept one (every entry outside it is cut, whichever axis
/// put it there), and what is kept is rescaled to largest 1. tau = 0 crops the zero borders only (the same measure).
/// Each m_a(v) is summed in one order on the CPU and the device (32 strided partial sums, then combined pairwise as
/// a warp's butterfly; M_i the sequential sum of m_0), so both cut the same values; M_i and C_i may differ in the last
/// bits. A law without mass keeps one entry (its box's corner). domain_error for tau outside [0, 1).
JointTrimmed joint_trim(const JointLaws& x, double tolerance);

/// The binomial split of coordinate `axis` of every law, X -> (X - Y, Y) with Y | X ~ Binomial(X, q): X - Y takes the
/// place of X_axis and Y is appended as the last axis (rank k + 1 <= max_joint_rank),
/// \f[ \mu'(\dots, z, \dots, y) = \mu(\dots, z + y, \dots) \binom{z + y}{y} q^y (1 - q)^z \f]
/// (tally::split's law, before trimming). The new box spans 0 .. hi_axis on both new axes. Each entry is formed in
/// logarithms (log w + log Binomial(y; z + y, q)) and scaled by the law's largest: weights keep their relative
/// precision down to the smallest normal double. domain_error when q is not in [0, 1] or an axis has negative values
/// (checked on the host's boxes); shape_error for a bad axis or a rank past max_joint_rank.
JointLaws joint_split(const JointLaws& x, int axis, double q);
/// The same split by a thinning child (ChildKernel::binomial), or by one per set (ChildKernel::per_set of binomial
/// children: law i split by its set's q, as joint_add_child's child per set). shape_error for another kind of child
/// or sets that do not fit the laws, and as above.
JointLaws joint_split(const JointLaws& x, int axis, const ChildKernel& thinning);

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

/// The law of coordinate `axis` of every law, \f$m_i(v) = e^{s_i} \sum_{x : x_a = v} w_i(x)\f$ (tally::marginal of a
/// JointPmf), as P pmfs where the laws are (gpu::Laws; v on the law's box along the axis, zeros at its borders kept,
/// weights rescaled to largest 1; a law without mass gives zeros and log scale -inf): the other axes summed out by
/// joint_sum_out, the last one first. shape_error for a bad axis.
Laws joint_marginal(const JointLaws& x, int axis);

/// The convolution of coordinate `axis` with an independent count Y_i ~ y_i (y: rank-1 laws, one per law of x, in
/// the same place): \f$\mu'_i(x) = \sum_j \mu_i(x_0, \dots, x_{axis} - j, \dots)\, \nu_i(j)\f$, the new axis spanning
/// [lo_axis + lo_y, hi_axis + hi_y] (tally::add_independent before trimming), log scales added, rescaled to largest 1.
/// Sums of products of weights in increasing j. shape_error for a bad axis, y not of rank 1, or other sizes or places;
/// overflow_error when an end of the axis leaves int64 (checked on the host's boxes).
JointLaws joint_add_independent(const JointLaws& x, int axis, const JointLaws& y);

/// The outer product of independent laws, law i of x with law i of y: \f$\mu'_i(x, y) = \mu_i(x)\, \nu_i(y)\f$ on
/// the box of x's axes followed by y's (rank k_x + k_y <= max_joint_rank; entry e = e_x |y_i| + e_y, |y_i| the size
/// of y_i's box), log scales added, rescaled to largest 1 (tally's outer product of JointPmfs before trimming: one
/// product a weight). shape_error for other sizes or places or a rank past max_joint_rank.
JointLaws joint_outer(const JointLaws& x, const JointLaws& y);

/// The law with the coordinate \f$V = c + \sum_a \kappa_a X_a\f$ (tally::linear_combination before trimming):
/// appended as the last axis (replace = -1: \f$\mu'(x, v) = \mu(x)\,[v = c + \kappa \cdot x]\f$, rank k + 1 <=
/// max_joint_rank), or in place of X_replace, which is summed out (\f$\mu'(x_{-r}, v) = \sum_{x_r} \mu(x)\,[v = c +
/// \kappa \cdot x]\f$). V spans its range over each box (|kappa| > 1 leaves zeros inside it). Sums, differences
/// and affine maps of coordinates are such combinations. shape_error for coefficients of another rank, replace
/// outside [-1, k), or a rank past max_joint_rank; overflow_error when V's range leaves int64.
JointLaws joint_linear_combination(const JointLaws& x, const std::vector<std::int64_t>& coefficients,
                                   std::int64_t constant, int replace = -1);

/// One Markov step of coordinate `axis` in place: \f$\mu'(x_{-a}, y) = \sum_k \mu(x)|_{x_a = k}\, T_{k y}\f$ on
/// y = 0 .. C - 1 (tally::markov_step before trimming), T a K x C row-stochastic table where the laws are (the
/// caller validates its entries, as for gpu::markov_step). domain_error when some law's axis leaves [0, K);
/// shape_error for a bad axis or a table elsewhere.
JointLaws joint_markov_step(const JointLaws& x, int axis, const Table& transition);

/// Every law given an observed child v_i ~ child(X_axis) of one coordinate (a thinning, a scaled or indexed
/// Poisson, a categorical step: population_children's ChildKernel; affine children are refused, shape_error):
/// \f$\pi_i(x) \propto \mu_i(x)\, p(v_i \mid x_{axis})\f$ and \f$\log L_i\f$ added to log_likelihood, as
/// joint_condition_on_thinning (which is the binomial child). A child per set (ChildKernel::per_set: law i's child is
/// set floor(i / per)'s, sets x per laws) conditions each law on its own. domain_error where the child's parent
/// values leave its domain (a negative count, a state outside the table), checked on the host's boxes; shape_error
/// for a child per set that does not fit the laws.
JointLaws joint_condition_on_child(const JointLaws& x, int axis, const ChildKernel& child, const Column<std::int64_t>& v,
                                   Column<double>& log_likelihood);

/// The law of (X, Y) for a bounded child Y | X_axis ~ child, appended as the last axis (rank k + 1 <=
/// max_joint_rank): \f$\mu'(x, y) = \mu(x)\, p(y \mid x_{axis})\f$ (tally::add_child before trimming), each entry
/// formed in logarithms (log w + log p) and scaled by the law's largest, as joint_split; the mass is kept (a
/// child's law sums to 1). The children are population_children's bounded ChildKernels: a thinning Binomial(X_axis,
/// q), Y on 0 .. hi_axis (needs X_axis >= 0); a categorical step Categorical(T[X_axis]), Y on 0 .. C - 1 (needs
/// 0 <= X_axis < K, the table where the laws are, its entries the caller's, as for joint_markov_step). A child per
/// set (ChildKernel::per_set) gives each law its own, as for joint_condition_on_child. Refused: the Poisson
/// children (domain_error: Y is unbounded, and a batched joint law has a box and no truncation error to carry; add
/// the child to a JointPmf with a Truncation, or condition on an observed one with joint_condition_on_child) and the
/// affine child (shape_error: it is joint_linear_combination). domain_error for a
/// parent outside the child's domain (checked on the host's boxes); shape_error for a bad axis, a rank past
/// max_joint_rank or a table elsewhere.
JointLaws joint_add_child(const JointLaws& x, int axis, const ChildKernel& child);
/// The same for a Poisson child (scaled or indexed, or one per set), which is unbounded: Y kept on the window
/// [y_lo_i, y_hi_i] of law i, the caller's (a batched law carries no truncation error: the caller accounts for the
/// mass past the window, as tally::add_child's bound does for its window). domain_error for a window that is not
/// 0 <= y_lo_i <= y_hi_i or a parent outside the child's domain; shape_error for another kind of child, windows of
/// another count, a bad axis or a rank past max_joint_rank.
JointLaws joint_add_child(const JointLaws& x, int axis, const ChildKernel& child, const std::vector<std::int64_t>& y_lo,
                          const std::vector<std::int64_t>& y_hi);

/// Every law given an observed emission \f$v_i \sim \mathrm{Poisson}(a\, X_{r_s})\f$, s = X_state (the rate selected
/// by a state coordinate among rate_axes; tally::SelectedScaledPoisson): \f$\pi_i(x) \propto \mu_i(x)\,
/// \mathrm{Poisson}(v_i; a\, x_{r_{x_s}})\f$, \f$\log L_i\f$ added. domain_error for a > 0 not finite, a state axis
/// leaving [0, rate_axes.size()) or a rate axis with negative values; shape_error for bad axes.
JointLaws joint_condition_on_selected_poisson(const JointLaws& x, int state_axis, const std::vector<int>& rate_axes,
                                              double scale, const Column<std::int64_t>& v,
                                              Column<double>& log_likelihood);

/// The law of (X, Y) for an emission \f$Y \sim \mathrm{Poisson}(a\, X_{r_s})\f$, s = X_state (the child of several
/// coordinates that joint_condition_on_selected_poisson observes), appended as the last axis on the window [y_lo_i,
/// y_hi_i] of law i: \f$\mu'(x, y) = \mu(x)\, \mathrm{Poisson}(y;\, a\, x_{r_{x_s}})\f$, each entry formed in
/// logarithms and scaled by the law's largest (joint_add_child's rule). The window is the caller's, as for
/// joint_add_child's Poisson form (the mass past it is the caller's to account for). domain_error as
/// joint_condition_on_selected_poisson, and for a window that is not 0 <= y_lo_i <= y_hi_i; shape_error for bad axes,
/// windows of another count or a rank past max_joint_rank.
JointLaws joint_add_selected_poisson(const JointLaws& x, int state_axis, const std::vector<int>& rate_axes,
                                     double scale, const std::vector<std::int64_t>& y_lo,
                                     const std::vector<std::int64_t>& y_hi);

/// The law of (X, Y) for a thinning \f$Y \sim \mathrm{Binomial}(X_c, q_{X_s})\f$ whose keep probability is selected
/// by a state coordinate (joint_condition_on_selected_thinning's child), appended as the last axis on 0 .. hi_c:
/// \f$\mu'(x, y) = \mu(x) \binom{x_c}{y} q_{x_s}^y (1 - q_{x_s})^{x_c - y}\f$, formed as joint_add_child's. Errors
/// as joint_condition_on_selected_thinning's, and shape_error for a rank past max_joint_rank.
JointLaws joint_add_selected_thinning(const JointLaws& x, int state_axis, int count_axis,
                                      const std::vector<double>& keep);

/// Every law given an observed thinning \f$v_i \sim \mathrm{Binomial}(X_c, q_{X_s})\f$ whose keep probability is
/// selected by a state coordinate (c = count_axis, s = state_axis, which may be the same axis;
/// tally::SelectedThinning): \f$\pi_i(x) \propto \mu_i(x)\, \binom{x_c}{v_i} q_{x_s}^{v_i} (1 - q_{x_s})^{x_c -
/// v_i}\f$ and \f$\log L_i\f$ added to log_likelihood, as joint_condition_on_selected_poisson (an impossible observation adds -inf and keeps the law).
/// keep: the K probabilities q_0 .. q_{K-1} on the host (copied to where the laws are). domain_error for a q outside
/// [0, 1], a state axis leaving [0, K) or a count axis with negative values (checked on the host's boxes);
/// shape_error for bad axes, no q, or observations / log-likelihoods of another size or place.
JointLaws joint_condition_on_selected_thinning(const JointLaws& x, int state_axis, int count_axis,
                                               const std::vector<double>& keep, const Column<std::int64_t>& v,
                                               Column<double>& log_likelihood);

/// Every law given an observed linear combination \f$c + \sum_a \kappa_a X_a = v_i\f$ (a sum or difference of
/// coordinates, one coordinate's value): the entries on that hyperplane, the box kept (zeros elsewhere), and \f$\log
/// L_i\f$ added; impossible: -inf and the law as it was. shape_error / overflow_error as joint_linear_combination.
JointLaws joint_condition_on_linear(const JointLaws& x, const std::vector<std::int64_t>& coefficients,
                                    std::int64_t constant, const Column<std::int64_t>& v,
                                    Column<double>& log_likelihood);

/// One draw of each law's whole tuple with the uniform u_i in [0, 1): the coordinates (size() x rank(), row by row)
/// of the entry found by inverse cdf over the row-major table, by one rule on the CPU and the device (the chunked
/// sums of joint_math.hpp's sample rule), so both draw the same tuples. Never an entry of zero weight; a law without
/// mass draws its box's lower corner. shape_error for another number of uniforms or another place.
Column<std::int64_t> joint_sample(const JointLaws& x, const Column<double>& uniforms);

/// One coordinate of each law drawn from its marginal, and the law of the others given it (tally::CoordinateDraw).
struct JointCoordinateDraw {
  /// The drawn values v_i (size() of them, where the laws are).
  Column<std::int64_t> value;
  /// The laws of the other coordinates given X_axis = v_i (rank k - 1, the later axes moved down by one, on the box
  /// without the axis): \f$\pi_i(x_{-a}) = \mu_i(x_{-a}, v_i) / \sum \mu_i(\cdot, v_i)\f$, normalized (mass 1,
  /// largest weight 1); std::nullopt for rank 1, where the value is all there is.
  std::optional<JointLaws> rest;
};

/// X_axis of each law drawn with the uniform u_i in [0, 1) from its marginal
/// \f$m_{i,j} = \sum_{x_{-a}} w_i(x_{-a}, lo_a + j)\f$ (each a sequential sum in row-major order) by joint_sample's
/// chunked inverse-cdf rule over the m_{i,j}, on the CPU and the device alike (the same draws), then the other
/// coordinates conditioned on it (tally::sample_coordinate: slice and normalize). Never a value of zero marginal
/// mass; a law without positive weight draws lo_axis, and its rest (as that of a law with log scale -inf) has log
/// scale -inf. The draw is a sample, not an observation: nothing is added to any likelihood. shape_error for a bad
/// axis or another number of uniforms or another place.
JointCoordinateDraw joint_sample_coordinate(const JointLaws& x, int axis, const Column<double>& uniforms);

}  // namespace tally::gpu
