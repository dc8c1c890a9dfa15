// Inverse-cdf sampling with Philox uniforms.
#include "tally/distributions/sample.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"

namespace tally {

double RandomStream::uniform() { return gpu::philox_uniform(seed_, stream_, counter_++); }

namespace {

void check_uniform(double u, const char* who) {
  if (!(u > 0.0 && u < 1.0)) detail::fail<domain_error>(who, ": u = ", u, " is not in (0, 1)");
}

// index of the first cumulative weight >= target, skipping zero weights (cum is non-decreasing)
Eigen::Index search(const std::vector<double>& cum, double target) {
  auto it = std::lower_bound(cum.begin(), cum.end(), target);
  if (it == cum.end()) --it;  // rounding: target a hair above the total
  auto i = it - cum.begin();
  while (i > 0 && cum[static_cast<std::size_t>(i)] == cum[static_cast<std::size_t>(i - 1)]) --i;  // zero weights
  return i;
}

std::vector<double> cumulative(const Eigen::VectorXd& w) {
  std::vector<double> cum(static_cast<std::size_t>(w.size()));
  std::partial_sum(w.begin(), w.end(), cum.begin());
  return cum;
}

}  // namespace

std::int64_t inverse_cdf(const Pmf& d, double u) {
  check_uniform(u, "tally::inverse_cdf(Pmf)");
  const auto cum = cumulative(d.weights());
  return d.lo() + search(cum, u * cum.back());
}

std::int64_t inverse_cdf(const SparsePmf& d, double u) {
  check_uniform(u, "tally::inverse_cdf(SparsePmf)");
  const auto cum = cumulative(d.weights());
  return d.points()[search(cum, u * cum.back())];
}

std::int64_t sample(const Pmf& d, RandomStream& rng) { return inverse_cdf(d, rng.uniform()); }
std::int64_t sample(const SparsePmf& d, RandomStream& rng) { return inverse_cdf(d, rng.uniform()); }

IntVector sample(const Pmf& d, RandomStream& rng, Eigen::Index count) {
  if (count < 0) detail::fail<domain_error>("tally::sample: count = ", count, " must be >= 0");
  const auto cum = cumulative(d.weights());
  IntVector out(count);
  for (Eigen::Index i = 0; i < count; ++i) out[i] = d.lo() + search(cum, rng.uniform() * cum.back());
  return out;
}

}  // namespace tally
