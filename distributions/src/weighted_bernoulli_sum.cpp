// Weighted sums of Bernoullis: groups of weights enumerated by tally::gpu::subset_sum_law, folded by the sparse sum.
#include "tally/distributions/weighted_bernoulli_sum.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "tally/distributions/algebra.hpp"
#include "tally/error.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace tally {

namespace {
constexpr const char* who = "tally::weighted_bernoulli_sum";

/// One group's law as a sparse pmf: P(S = v_j) = weights_j e^{log_scale}, error bound carried.
SparsePmf group_law(std::span<const std::int64_t> w, std::span<const double> p) {
  auto law = gpu::subset_sum_law(w, p);
  const auto m = static_cast<Eigen::Index>(law.values.size());
  IntVector points = Eigen::Map<const IntVector>(law.values.data(), m);
  Eigen::VectorXd weights = Eigen::Map<const Eigen::VectorXd>(law.weights.data(), m);
  return SparsePmf(std::move(points), std::move(weights), law.log_scale, law.error_bound);
}
}  // namespace

SparsePmf weighted_bernoulli_sum(std::span<const std::int64_t> w, std::span<const double> p, int group) {
  if (w.size() != p.size()) detail::fail<shape_error>(who, ": ", w.size(), " weights but ", p.size(), " probabilities");
  if (group < 1 || group > gpu::max_enumerated_weights)
    detail::fail<domain_error>(who, ": group = ", group, " must be in [1, ", gpu::max_enumerated_weights, "]");
  // Validate everything first, then sort the weights into the offset (p = 1) and the random ones (0 < p < 1).
  std::int64_t total = 0, offset = 0;
  std::vector<std::int64_t> rw;
  std::vector<double> rp;
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (w[i] < 0) detail::fail<domain_error>(who, ": weight w[", i, "] = ", w[i], " must be >= 0");
    if (!(p[i] >= 0.0 && p[i] <= 1.0))
      detail::fail<domain_error>(who, ": p[", i, "] = ", p[i], " is not a probability in [0, 1]");
    total = detail::checked_add(total, w[i], who);
    if (w[i] == 0 || p[i] == 0.0) continue;
    if (p[i] == 1.0) {
      offset += w[i];  // <= total: no overflow
    } else {
      rw.push_back(w[i]);
      rp.push_back(p[i]);
    }
  }
  std::optional<SparsePmf> law;
  for (std::size_t first = 0; first < rw.size(); first += static_cast<std::size_t>(group)) {
    const std::size_t k = std::min(static_cast<std::size_t>(group), rw.size() - first);
    SparsePmf g = group_law(std::span(rw).subspan(first, k), std::span(rp).subspan(first, k));
    law = law ? sum(*law, g) : std::move(g);
  }
  if (!law) return SparsePmf(IntVector::Constant(1, offset), Eigen::VectorXd::Ones(1));
  return offset == 0 ? std::move(*law) : affine(*law, 1, offset);
}

}  // namespace tally
