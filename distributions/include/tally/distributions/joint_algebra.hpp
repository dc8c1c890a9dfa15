// Exact operations on joint laws that keep or add coordinates: convolution along an axis, linear combinations of
// coordinates (sums, differences, affine maps), a Markov step of a coordinate, and the binomial split.
#pragma once

#include <cstdint>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/joint_pmf.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// The law of (X_0, ..., X_axis + Y, ..., X_{k-1}) for Y ~ y independent of every X_a: a convolution of each
/// fibre along `axis`,
/// \f[ \mu'(x) = \sum_j \mu(x_0, \dots, x_{axis} - j, \dots)\, \mu_Y(j). \f]
/// Log scales add. Error bound: \f$e + e_Y + e\,e_Y\f$, as for the 1-D sum. overflow_error when an end of the
/// axis leaves int64 or the table would exceed t.max_size entries; shape_error for a bad axis.
JointPmf add_independent(const JointPmf& d, int axis, const Pmf& y, const Truncation& t = {});

/// The same where the exact law of Y is known to be y + y_dropped + r, with y_dropped >= 0 the measure truncation
/// cut from y (its tails, in y's units) and \f$\|r\|_1 \le y\_rest\, \|y\|_1\f$: the product with y_dropped joins
/// the result's dropped measure (JointPmf), y_rest its spread bound. y's own error_bound is ignored (y_dropped and
/// y_rest replace it). domain_error for y_rest < 0.
JointPmf add_independent(const JointPmf& d, int axis, const Pmf& y, const Pmf& y_dropped, double y_rest,
                         const Truncation& t = {});

/// The law of (X, V) with the new coordinate \f$V = c + \sum_a \kappa_a X_a\f$ (a deterministic function of X):
/// \f$\mu'(x, v) = \mu(x)\,[v = c + \kappa \cdot x]\f$. With `replace` = r in [0, k), V takes the place of X_r and
/// X_r is summed out: \f$\mu'(x_{-r}, v) = \sum_{x_r} \mu(x)\,[v = c + \kappa \cdot x]\f$ (with \f$\kappa_r = 0\f$
/// this is a relabelling of the other coordinates' law); with replace = -1 V is appended as axis k.
/// Entries are moved and summed, never rounded further; the error bound is unchanged (a deterministic map).
/// The new axis spans every value of V over the box, so |kappa| > 1 leaves zeros inside it (the dense form of a
/// support with gaps). shape_error when coefficients has not rank() entries or replace is not in [-1, k);
/// overflow_error when V's range leaves int64 or the table would exceed t.max_size entries.
JointPmf linear_combination(const JointPmf& d, const Coordinates& coefficients, std::int64_t constant,
                            int replace = -1, const Truncation& t = {});

/// The law of the linear form \f$V = c + \sum_a \kappa_a X_a\f$, \f$P(V = v) = \sum_{c + \kappa \cdot x = v}
/// \mu(x)\f$, read from the table without the (X, V) table of linear_combination: one pass over the entries. Error
/// bound: d's (a deterministic map). shape_error when coefficients has not rank() entries; overflow_error when V's
/// range leaves int64 or exceeds t.max_size entries.
Pmf linear_form_law(const JointPmf& d, const Coordinates& coefficients, std::int64_t constant,
                    const Truncation& t = {});

/// Appends X_a + X_b as a new axis (replace = -1) or puts it in place of X_a (replace = a); a == b gives 2 X_a.
JointPmf sum_of_coordinates(const JointPmf& d, int a, int b, int replace = -1, const Truncation& t = {});

/// Appends X_a - X_b (replace = -1) or puts it in place of X_a (replace = a).
JointPmf difference_of_coordinates(const JointPmf& d, int a, int b, int replace = -1, const Truncation& t = {});

/// Replaces X_axis by s X_axis + c (s = 0 makes it the constant c). Error bound unchanged.
JointPmf affine(const JointPmf& d, int axis, std::int64_t s, std::int64_t c, const Truncation& t = {});

/// Replaces X_axis by one step Y ~ Categorical(T_{X_axis, .}) of a Markov chain:
/// \f$\mu'(x_{-a}, y) = \sum_{x_a} \mu(x)\,T_{x_a, y}\f$ on y in {0, ..., C-1}. Needs the axis within the K states
/// (domain_error otherwise). Error bound unchanged (a Markov kernel). To keep X_axis as well, use add_child.
JointPmf markov_step(const JointPmf& d, int axis, const MarkovStep& k, const Truncation& t = {});

/// The binomial split of a count X = X_axis into the part kept and the part moved on, X -> (X - Y, Y) with
/// Y | X ~ Binomial(X, q): X - Y takes the place of X_axis, Y is appended as axis k,
/// \f[ \mu'(\dots, x - y, \dots, y) = \mu(\dots, x, \dots)\, \binom{x}{y} q^y (1 - q)^{x - y}. \f]
/// Each entry is a product formed in logs (log_binomial_pmf, a few ulps), so entries far below 1e-300 keep full
/// relative precision. The table before trimming has (hi_axis + 1)^2 entries per value of the other axes (checked
/// against t.max_size). Error bound unchanged. domain_error when q is not in [0, 1] or the axis has negative values.
JointPmf split(const JointPmf& d, int axis, double q, const Truncation& t = {});

}  // namespace tally
