// Goodness-of-fit helpers for the sampling tests.
#pragma once

#include <cmath>
#include <vector>

namespace tally::test {

/// Pearson's statistic \f$\sum_k (n_k - N p_k)^2 / (N p_k)\f$ of observed counts n_k against expected
/// probabilities p_k, over the cells of positive probability (N = draws).
inline double chi_square(const std::vector<double>& counts, const std::vector<double>& probabilities, double draws) {
  double x2 = 0;
  for (std::size_t k = 0; k < counts.size(); ++k)
    if (probabilities[k] > 0) x2 += std::pow(counts[k] - draws * probabilities[k], 2) / (draws * probabilities[k]);
  return x2;
}

}  // namespace tally::test
