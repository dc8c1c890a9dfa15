// Categorical(w): weights normalized in extended precision, a stored cdf for cdf and quantile, the Pmf as given.
#include "tally/distributions/categorical.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "../tabulate.hpp"
#include "tally/error.hpp"

namespace tally {
namespace {
// Neumaier's compensated sum in long double: a sum of 10^8 weights stays within a few ulps.
struct Sum {
  long double total = 0.0L, compensation = 0.0L;
  void add(long double x) {
    const long double t = total + x;
    compensation += std::abs(total) >= std::abs(x) ? (total - t) + x : (x - t) + total;
    total = t;
  }
  long double value() const { return total + compensation; }
};
}  // namespace

Categorical::Categorical(Eigen::VectorXd probabilities) : weights_(std::move(probabilities)) {
  const Eigen::Index n = weights_.size();
  if (n == 0) detail::fail<shape_error>("tally::Categorical: probabilities is empty (a law needs at least one category)");
  Sum sum;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double w = weights_[i];
    if (!(w >= 0.0 && std::isfinite(w)))
      detail::fail<domain_error>("tally::Categorical: probabilities[", i, "] = ", w, " must be finite and >= 0");
    sum.add(w);
  }
  const long double total = sum.value();
  if (!(total > 0.0L))
    detail::fail<domain_error>("tally::Categorical: probabilities are all zero (their sum must be > 0)");
  probabilities_.resize(n);
  cumulative_.resize(n);
  Sum partial;
  for (Eigen::Index i = 0; i < n; ++i) {
    probabilities_[i] = static_cast<double>(weights_[i] / total);
    partial.add(weights_[i]);
    // clamped so that rounding can never make it decrease or pass 1
    cumulative_[i] = std::clamp(static_cast<double>(partial.value() / total), i > 0 ? cumulative_[i - 1] : 0.0, 1.0);
  }
  cumulative_[n - 1] = 1.0;
  log_total_ = static_cast<double>(std::log(total));
}

double pdf(const Categorical& d, std::int64_t k) {
  if (k < 0 || k >= d.probabilities().size()) return 0.0;
  return d.probabilities()[k];
}

double log_pdf(const Categorical& d, std::int64_t k) {
  if (k < 0 || k >= d.probabilities_.size()) return -std::numeric_limits<double>::infinity();
  const double p = d.probabilities_[k];
  // a subnormal probability has lost digits: go back to the weight as given
  if (p < std::numeric_limits<double>::min()) return std::log(d.weights_[k]) - d.log_total_;
  return std::log(p);
}

double cdf(const Categorical& d, std::int64_t k) {
  if (k < 0) return 0.0;
  if (k >= d.cumulative_.size() - 1) return 1.0;
  return d.cumulative_[k];
}

std::int64_t quantile(const Categorical& d, double prob) {
  detail::check_probability(prob, "tally::quantile(Categorical)", "prob");
  const auto& c = d.cumulative_;
  // the last entry is 1 >= prob, so the search always succeeds
  return std::lower_bound(c.data(), c.data() + c.size(), prob) - c.data();
}

std::pair<std::int64_t, std::int64_t> support(const Categorical& d) { return {0, d.probabilities().size() - 1}; }

double mean(const Categorical& d) {
  long double m = 0.0L;
  for (Eigen::Index k = 0; k < d.probabilities().size(); ++k) m += static_cast<long double>(k) * d.probabilities()[k];
  return static_cast<double>(m);
}

double variance(const Categorical& d) {
  const long double m = mean(d);
  long double v = 0.0L;
  for (Eigen::Index k = 0; k < d.probabilities().size(); ++k) {
    const long double x = static_cast<long double>(k) - m;
    v += x * x * d.probabilities()[k];
  }
  return static_cast<double>(v);
}

Pmf to_pmf(const Categorical& d, const Truncation& t) {
  const char* who = "tally::to_pmf(Categorical)";
  detail::check_dense_size(0, d.weights_.size() - 1, t, who);
  // the weights as given, scaled by 1 / sum: Pmf keeps them exactly (zero ends trimmed)
  return Pmf(0, d.weights_, -d.log_total_);
}

}  // namespace tally
