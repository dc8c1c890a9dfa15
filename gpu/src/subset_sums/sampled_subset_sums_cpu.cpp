// The CPU reference of sampled supports: the same keyed permutation of masks, each sum from scratch, sort, unique.
#include <algorithm>

#include "sampled_check.hpp"
#include "subset_math.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"

namespace tally::gpu::cpu {
namespace {

template <class W>
std::vector<std::vector<W>> sampled(const std::vector<std::vector<W>>& vectors, std::size_t k, std::uint64_t seed) {
  const auto counts = detail::sample_counts(vectors, k, "tally::gpu::cpu::sampled_subset_sums");
  std::vector<std::vector<W>> out(vectors.size());
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    const auto& v = vectors[i];
    const int n = static_cast<int>(v.size());
    const std::uint64_t key = detail::permutation_key(seed, i);
    auto& sums = out[i];
    sums.reserve(counts[i]);
    for (std::uint64_t j = 0; j < counts[i]; ++j) {
      std::uint64_t mask = detail::permute(j, n, key);
      typename detail::Accumulator<W>::type s{};
      for (; mask != 0; mask &= mask - 1) detail::step(s, v[detail::ctz(mask)], true);
      sums.push_back(detail::total(s));
    }
    std::sort(sums.begin(), sums.end());
    sums.erase(std::unique(sums.begin(), sums.end()), sums.end());
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed) {
  return sampled(vectors, k, seed);
}
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed) {
  return sampled(vectors, k, seed);
}

}  // namespace tally::gpu::cpu
