// Sampled supports (seed 000's semantics): up to k distinct subsets per vector, their distinct sums, many vectors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tally::gpu {

/// For each vector \f$v_i\f$ of length \f$n_i \le 63\f$: the distinct values of \f$\sum_{j \in A} v_{i,j}\f$ over
/// \f$k_i = \min(k, 2^{n_i})\f$ distinct subsets A, in increasing order. The subsets are the masks
/// \f$\pi_i(0), \dots, \pi_i(k_i - 1)\f$ of a pseudo-random permutation \f$\pi_i\f$ of \f$[0, 2^{n_i})\f$ keyed by
/// (seed, i) (a Feistel network with cycle walking): sampling without replacement, the same on every backend, and
/// all subsets when \f$2^{n_i} \le k\f$. Bit j of a mask selects \f$v_{i,j}\f$. Double sums are accumulated in
/// double-double and rounded once (as in subset_sum_law), so equal subset sums compare equal.
/// Example: {{1, 2, 3}, {4, 5}} with k = 8 gives {0, 1, 2, 3, 4, 5, 6} and {0, 4, 5, 9}.
/// Throws tally::domain_error (a weight negative or not finite, k = 0), tally::shape_error (a vector longer than 63)
/// and tally::overflow_error (an integer vector whose total reaches 2^62).
/// The dispatch point: CUDA when built, a device is present and there are at least 2^16 samples in all.
///@{
std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed);
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed);
///@}

namespace cpu {
/// The CPU reference: the same permutation and sums, one sample after another.
///@{
std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed);
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed);
///@}
}  // namespace cpu

namespace cuda {
/// One launch computes every sample's sum (one thread per sample); a segmented sort and a compaction then remove
/// the duplicates of each vector on the device.
///@{
std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>& vectors,
                                                           std::size_t k, std::uint64_t seed);
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>& vectors, std::size_t k,
                                                     std::uint64_t seed);
///@}
}  // namespace cuda

}  // namespace tally::gpu
