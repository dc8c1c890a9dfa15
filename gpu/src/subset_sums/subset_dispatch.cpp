// The dispatch points of the subset-sum operations: enumeration, sampled supports and the reachable totals.
#include <algorithm>
#include <cmath>

#include "tally/gpu/backend.hpp"
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace tally::gpu {
namespace {
// Below these sizes a launch and the copies cost more than the CPU's work (bench/RESULTS.md).
constexpr double cuda_min_subsets = 1 << 18;
constexpr double cuda_min_samples = 1 << 16;
constexpr double cuda_min_row_words = 1 << 24;  // weights x words of the row

double subsets(std::span<const double> p) {
  const auto uncertain = std::count_if(p.begin(), p.end(), [](double x) { return x > 0.0 && x < 1.0; });
  return std::ldexp(1.0, static_cast<int>(std::min<std::ptrdiff_t>(uncertain, 1000)));
}

template <class W>
double samples(const std::vector<std::vector<W>>& vectors, std::size_t k) {
  double total = 0;
  for (const auto& v : vectors) total += std::min(static_cast<double>(k), std::ldexp(1.0, static_cast<int>(v.size())));
  return total;
}
}  // namespace

SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t> w, std::span<const double> p) {
  return select(true, subsets(p), cuda_min_subsets) == Backend::cuda ? cuda::subset_sum_law(w, p)
                                                                     : cpu::subset_sum_law(w, p);
}
SubsetSumLaw<double> subset_sum_law(std::span<const double> w, std::span<const double> p) {
  return select(true, subsets(p), cuda_min_subsets) == Backend::cuda ? cuda::subset_sum_law(w, p)
                                                                     : cpu::subset_sum_law(w, p);
}

std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed) {
  return select(true, samples(vectors, k), cuda_min_samples) == Backend::cuda
             ? cuda::sampled_subset_sums(vectors, k, seed)
             : cpu::sampled_subset_sums(vectors, k, seed);
}
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed) {
  return select(true, samples(vectors, k), cuda_min_samples) == Backend::cuda
             ? cuda::sampled_subset_sums(vectors, k, seed)
             : cpu::sampled_subset_sums(vectors, k, seed);
}

ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c) {
  const double work = static_cast<double>(w.size()) * (static_cast<double>(std::max<std::int64_t>(c, 0)) / 64 + 1);
  return select(true, work, cuda_min_row_words) == Backend::cuda ? cuda::reachable_sums(w, c)
                                                                 : cpu::reachable_sums(w, c);
}
SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c) {
  const double work = static_cast<double>(w.size()) * (static_cast<double>(std::max<std::int64_t>(c, 0)) / 64 + 1);
  return select(true, work, cuda_min_row_words) == Backend::cuda ? cuda::subset_sum(w, c) : cpu::subset_sum(w, c);
}

}  // namespace tally::gpu
