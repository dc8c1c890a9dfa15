// Categorical(w): a law on 0..K-1 given by K non-negative weights, normalized by their sum.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <utility>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally {

/// \f[ P(X = k) = \frac{w_k}{\sum_{j=0}^{K-1} w_j}, \qquad 0 \le k \le K-1. \f]
/// The weights need not sum to 1: they are divided by their sum (formed in extended precision, so weights near
/// DBL_MAX or far below 1 are fine). Domain: at least one weight (shape_error otherwise), every weight finite and
/// >= 0, and a positive sum (domain_error otherwise). Zero weights are allowed (points of zero mass).
class Categorical {
 public:
  /// The K weights w (normalized here; shape_error or domain_error outside the domain above).
  explicit Categorical(Eigen::VectorXd probabilities);
  /// The normalized probabilities (they sum to 1 up to rounding), whatever the scale of the weights given.
  const Eigen::VectorXd& probabilities() const { return probabilities_; }

 private:
  Eigen::VectorXd weights_;        // as given: log_pdf uses them when a normalized probability is subnormal
  Eigen::VectorXd probabilities_;  // weights_ / sum
  Eigen::VectorXd cumulative_;     // partial sums of the weights over the total, the last one exactly 1
  double log_total_;               // log of the sum of weights_

  friend double log_pdf(const Categorical& d, std::int64_t k);
  friend double cdf(const Categorical& d, std::int64_t k);
  friend std::int64_t quantile(const Categorical& d, double prob);
  friend Pmf to_pmf(const Categorical& d, const Truncation& t);
};

/// P(X = k) = probabilities()[k]; 0 outside [0, K-1].
double pdf(const Categorical& d, std::int64_t k);
/// log P(X = k), from the weight as given where the normalized probability is subnormal; -inf outside [0, K-1].
double log_pdf(const Categorical& d, std::int64_t k);
/// P(X <= k): the partial sums of the weights over their total (exactly 1 from K-1 on).
double cdf(const Categorical& d, std::int64_t k);
/// The smallest k in [0, K-1] with cdf(d, k) >= prob.
std::int64_t quantile(const Categorical& d, double prob);
/// [0, K-1].
std::pair<std::int64_t, std::int64_t> support(const Categorical& d);
/// \f$\sum_k k\, p_k\f$ (in extended precision).
double mean(const Categorical& d);
/// \f$\sum_k (k - \mu)^2 p_k\f$ (in extended precision).
double variance(const Categorical& d);
/// The pmf on [0, K-1] (zero weights at the ends trimmed); exact up to flushing below flush_fraction.
Pmf to_pmf(const Categorical& d, const Truncation& t = {});

}  // namespace tally
