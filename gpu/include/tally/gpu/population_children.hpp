// Children of population laws: the law of s_x X + s_y Y for a discrete child Y | X of each particle's X (a thinning,
// a Poisson count or emission, a Markov step, an affine map), and X given an observation of that combination.
#pragma once

#include <cstdint>
#include <vector>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/population_chain.hpp"

namespace tally::gpu {

/// A discrete child Y | X = k, as the population kernels evaluate it: \f$ \log p(y \mid k) \f$.
///
/// - binomial: \f$ Y \mid k \sim \mathrm{Binomial}(k, q) \f$ (a thinning; needs X >= 0);
/// - scaled_poisson: \f$ Y \mid k \sim \mathrm{Poisson}(q\, k) \f$, q the scale a >= 0 (needs X >= 0);
/// - indexed_poisson: \f$ Y \mid k \sim \mathrm{Poisson}(r_k) \f$, the rates a K x 1 table (needs 0 <= X < K);
/// - categorical: \f$ Y \mid k \sim \mathrm{Categorical}(T_{k, \cdot}) \f$, T a K x C row-stochastic table
///   (needs 0 <= X < K);
/// - affine: \f$ Y = a k + c \f$ (a != 0), a point mass.
///
/// Move-only (it owns its table, which lives where the particles do). Made by the named constructors, which
/// validate the parameters (tally::domain_error; tally::shape_error for a table of the wrong shape); the operations
/// check the scalars and the table's shape and place again, not the table's entries.
///
/// One child per set of laws (per_set): law i of the batch takes set \f$\lfloor i / \mathrm{per} \rfloor\f$'s child
/// (a group's own parameters: per = S for one law per particle, 1 for one law per group). Its sets are of one kind;
/// their scalars are a column (q_each) and their tables one table of their rows stacked (set s's K rows are rows s K
/// .. s K + K - 1), where the laws live.
struct ChildKernel {
  /// The five kinds of child above.
  enum class Kind { binomial, scaled_poisson, indexed_poisson, categorical, affine };
  /// Which of them this child is.
  Kind kind = Kind::affine;
  double q = 0;               ///< binomial: keep probability q in [0, 1]; scaled_poisson: scale a >= 0 (rate a k)
  ///@{
  std::int64_t a = 1, c = 0;  ///< affine: y = a k + c, a != 0
  ///@}
  Table table;                ///< indexed_poisson: K x 1 rates (finite, >= 0); categorical: K x C, rows stochastic
  std::size_t per = 0;        ///< per_set: the laws of each set (0: one child for every law)
  std::size_t sets = 1;       ///< per_set: the number of sets (the batch holds sets x per laws)
  Column<double> q_each;      ///< per_set of binomial or scaled_poisson children: each set's q
  std::size_t set_rows = 0;   ///< per_set of table children: K, each set's rows (table.rows = sets K)

  /// Binomial(k, q), q in [0, 1].
  static ChildKernel binomial(double q);
  /// Poisson(a k), a finite and >= 0.
  static ChildKernel scaled_poisson(double a);
  /// Poisson(rates_k): a K x 1 table of finite rates >= 0 (read back once to check them when on the device).
  static ChildKernel indexed_poisson(Table rates);
  /// Categorical(T_{k, .}): a K x C table, entries finite and >= 0, each row summing to 1 within 1e-9 (as
  /// tally::MarkovStep).
  static ChildKernel categorical(Table transition);
  /// y = a k + c, a != 0.
  static ChildKernel affine(std::int64_t a, std::int64_t c);
  /// One child per set of `per` laws (per >= 1), set s's child sets[s] (made by the constructors above, on the host
  /// or where `where` says: their scalars and tables are copied there). The sets must be of one kind other than
  /// affine, with tables of one shape (tally::domain_error, tally::shape_error otherwise, and for no sets).
  static ChildKernel per_set(const std::vector<ChildKernel>& sets, std::size_t per, Backend where);
  /// The number of laws the kernel takes: sets x per for per_set, any (0) otherwise.
  std::size_t laws() const { return per * sets; }
  /// True for the two Poisson kinds (the only ones whose results are truncated).
  bool poisson() const { return kind == Kind::scaled_poisson || kind == Kind::indexed_poisson; }
};

// Like population_ops.hpp, both functions run where their operands live (a table-backed child's table must live
// there too: tally::shape_error otherwise) and throw tally::shape_error for operands of different sizes (and for a
// per_set child whose sets x per is not the number of laws). The signs
// must be s_x in {-1, 0, 1} and s_y in {-1, 1} (tally::domain_error otherwise).
//
// The parent checks, per live particle i on its support of positive weight [lo_i, hi_i] (zero weights at the
// edges of the stored law do not count, as tally::Pmf trims them; a dead particle adds nothing): binomial and
// scaled_poisson need lo_i >= 0 (tally::domain_error naming the particle); indexed_poisson and categorical need
// 0 <= lo_i and hi_i < K (tally::domain_error naming the particle and the K states, as population_chain's). On the device a flag is read back (one synchronization) and the error is the host's.

/// The law of \f$ Z_i = s_x X_i + s_y Y_i \f$ for \f$ Y_i \mid X_i = k \sim \f$ `child`, \f$ X_i \sim \mu_i \f$:
/// \f[ r_i(z) = \sum_k \mu_i(k)\, p\bigl(y = s_y (z - s_x k) \mid k\bigr) \f]
/// (s_x = 0, s_y = 1: the marginal of the child; s_x = 1: the parent plus its child; ...), stored rescaled to
/// maximum 1 (log_scale_i + log of the maximum), on the range
/// \f$ [z^{lo}_i, z^{hi}_i] = s_x [lo_i, hi_i] + s_y [y^{lo}_i, y^{hi}_i] \f$ (interval arithmetic: entries at
/// the edges may be zero), where the child's range given X_i in [lo_i, hi_i] is
///
/// - binomial: [0, hi_i]; categorical: [0, C - 1]; affine: a [lo_i, hi_i] + c (dense, with zeros between the
///   points when |a| > 1);
/// - the Poisson kinds: with \f$ \lambda^-_i, \lambda^+_i \f$ the smallest and largest rate (a k, or r_k) over the
///   entries of positive weight, \f$ y^{lo} \f$ is the largest y with \f$ P(\mathrm{Poisson}(\lambda^-) < y) \le
///   \mathrm{tol}/2 \f$ and \f$ y^{hi} \f$ the smallest y with \f$ P(\mathrm{Poisson}(\lambda^+) > y) \le
///   \mathrm{tol}/2 \f$ (bisections on geometric bounds of the tails, the same on host and device: the cuts need
///   not equal boost's quantiles, but each tail they drop is at most tol/2; rate 0 gives the point 0). The
///   Poisson tails are monotone in the rate, so at most tol of the mass of each particle is dropped: a caller
///   keeping an error bound e for X_i makes it \f$ e + \mathrm{tol}\,(1 + e) \f$ (the other kinds are exact).
///
/// A dead particle (log_scale -inf, or no positive weight) stays dead: one zero weight at 0, log_scale -inf.
/// tolerance must lie in (0, 1) for the Poisson kinds (tally::domain_error; ignored by the others) and
/// max_size >= 1; a particle whose range needs more than max_size entries is a tally::overflow_error naming the
/// particle and the size, as is a range leaving int64. The sums run in increasing k on both sides (one warp per
/// law on the device, lanes over z), so host and device agree to rounding. Device: the lengths are scanned and
/// {total, longest, first bad particle} read back (one synchronization) before the weights are written.
Laws mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, double tolerance, std::int64_t max_size);

/// X_i given \f$ s_x X_i + s_y Y_i = z_i \f$: population_reference's condition_by with
/// \f$ \ell(i, k) = \log p\bigl(s_y (z_i - s_x k) \mid k\bigr) \f$, that is
/// \f$ w'_{i,k} \propto w_{i,k}\, p(s_y (z_i - s_x k) \mid k) \f$ (max 1 again) and
/// \f$ \log \sum_k \mu_i(k)\, p(s_y (z_i - s_x k) \mid k) \f$ added to log_likelihood, in logarithms (no
/// truncation). s_x = 0, s_y = 1 is the conditioning on an observed child. An impossible observation adds -inf
/// and leaves the law as it was; a dead particle stays dead and adds -inf.
Laws condition_on_mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood);

}  // namespace tally::gpu
