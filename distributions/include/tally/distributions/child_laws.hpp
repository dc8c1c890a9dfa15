// Laws of a child given its integer parent: thinning, Poisson with a scaled rate, a Markov step; and their marginals.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// Y | X = x ~ Binomial(x, q): each of x individuals kept with probability q. Needs X >= 0.
struct Thinning {
  /// q = keep (domain_error outside [0, 1]).
  explicit Thinning(double keep);
  /// q, the probability that each individual is kept.
  double keep;
};

/// Y | X = x ~ Poisson(a x): a count whose rate scales with X (a >= 0). Needs X >= 0.
struct ScaledPoisson {
  /// a = scale (domain_error unless finite and >= 0).
  explicit ScaledPoisson(double scale);
  /// a, the rate per unit of X.
  double scale;
};

/// Y | X = x ~ Poisson(rates_x): an emission whose rate is looked up by the state x in {0, ..., K-1} (rates finite,
/// >= 0, else domain_error), e.g. a hidden Markov model's Poisson observations. Needs 0 <= X < K.
struct IndexedPoisson {
  /// The K rates (shape_error when there is none, domain_error unless each is finite and >= 0).
  explicit IndexedPoisson(Eigen::VectorXd rates);
  /// rates_x: the rate of Y in state x.
  Eigen::VectorXd rates;
};

/// Y | X = x ~ Categorical(\f$T_{x,\cdot}\f$): one step of a Markov chain on {0, ..., K-1} with a K x C row-stochastic
/// transition matrix T (each row non-negative, summing to 1 within 1e-9, else domain_error). Needs 0 <= X < K.
struct MarkovStep {
  /// T = transition (shape_error when empty, domain_error unless row-stochastic as above).
  explicit MarkovStep(Eigen::MatrixXd transition);
  /// T: row x is the law of Y given X = x.
  Eigen::MatrixXd transition;
};

/// Marginal law of Y = Binomial(X, q):
/// \f[ \mu_Y(y) = \sum_x \mu_X(x) \binom{x}{y} q^y (1-q)^{x-y}. \f]
/// By Horner's rule on the probability generating function, \f$ G_Y(s) = G_X(1 - q + q s)\f$: starting from the
/// largest x, acc <- acc * Bernoulli(q) + mu_X(x) delta_0, which is O(n^2/2) multiply-adds, all of non-negative
/// terms (no cancellation); the part of X below lo is then one convolution with Binomial(lo, q).
/// Error bound: that of X (a Markov kernel does not increase L1 distances). domain_error when lo_X < 0;
/// overflow_error, at once, when the n^2/2 + n (width of Binomial(lo_X, q)) multiply-adds exceed t.max_work
/// (the closed forms of closed_forms.hpp cost nothing: thin the family before tabulating it where you can).
Pmf marginal(const Pmf& x, const Thinning& k, const Truncation& t = {});

/// Marginal law of Y = Poisson(a X): \f$ \mu_Y(y) = \sum_x \mu_X(x)\, e^{-a x} (a x)^y / y! \f$, truncated to
/// [y_lo, y_hi] where P(Poisson(a hi_X) > y_hi) <= tol/2 and P(Poisson(a lo_X) < y_lo) <= tol/2 (the tails are
/// monotone in the rate, so at most tol of the mixture is dropped). Each term is summed only over its own
/// non-negligible range (down to 2^-80 flush_fraction of the largest term), so the cost is about
/// \f$\sum_x 78 \sqrt{a x}\f$ steps; the mass beyond those cuts is added to the error bound.
/// Error bound: e_X + tol (1 + e_X) + the cuts' mass. overflow_error, at once, when the result needs more than
/// t.max_size entries or the walk more than t.max_work steps.
Pmf marginal(const Pmf& x, const ScaledPoisson& k, const Truncation& t = {});

/// Marginal law of Y = Poisson(rates_X), truncated as for ScaledPoisson (the extreme rates of X's support bound
/// the cuts). Error bound: e_X + tol (1 + e_X).
Pmf marginal(const Pmf& x, const IndexedPoisson& k, const Truncation& t = {});

/// Marginal law of one Markov step: \f$ \mu_Y = \mu_X^\top T \f$ on {0, ..., C-1}. Error bound: that of X.
Pmf marginal(const Pmf& x, const MarkovStep& k);

}  // namespace tally
