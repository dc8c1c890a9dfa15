// Which totals up to a capacity are subset sums of integer weights: bit-packed dynamic programming, CPU and CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// The reachable totals \f$R = \{\sum_{i \in A} w_i : A \subseteq \{0..n-1\}\} \cap [0, c]\f$ as a bit set, one bit
/// per total, 64 per word (bit t % 64 of word t / 64). Built by the dynamic programme
/// \f[ R_0 = \{0\}, \qquad R_i = \big(R_{i-1} \cup (R_{i-1} + w_i)\big) \cap [0, c], \f]
/// that is `row |= row << w_i` on the packed row. A value type with cheap moves.
class ReachableSums {
 public:
  /// words.size() must be capacity / 64 + 1, with no bit above capacity set (tally::shape_error otherwise).
  ReachableSums(std::int64_t capacity, std::vector<std::uint64_t> words);

  /// c: the set holds the totals 0 .. c.
  std::int64_t capacity() const { return capacity_; }
  /// Whether t is a subset sum (false outside [0, capacity]): the decision problem.
  bool contains(std::int64_t t) const;
  /// The largest subset sum <= min(t, capacity); 0 is always one. Requires t >= 0: the optimization problem.
  std::int64_t largest_at_most(std::int64_t t) const;
  /// The number of reachable totals.
  std::int64_t count() const;
  /// The reachable totals in increasing order.
  std::vector<std::int64_t> totals() const;
  /// The packed bits, capacity / 64 + 1 words.
  std::span<const std::uint64_t> words() const { return words_; }

 private:
  std::int64_t capacity_;
  std::vector<std::uint64_t> words_;
};

/// The answers of the subset-sum decision and optimization problems for capacity c.
struct SubsetSumAnswer {
  bool reachable;     ///< some subset sums to exactly c
  std::int64_t best;  ///< the largest subset sum <= c
};

/// The largest capacity accepted: 2^40 (a row of 128 GiB), far beyond any device's memory.
inline constexpr std::int64_t max_capacity = std::int64_t{1} << 40;

/// Throws tally::domain_error (a negative weight, c < 0) and tally::overflow_error (c > max_capacity; or, on the
/// device, a row that does not fit: the message says how many bytes were needed). Weights above c are skipped.
/// The dispatch point: CUDA when built, a device is present and n * (c / 64 + 1) >= 2^24 words; else the CPU.
ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c);
/// The same programme, answering only the two questions (on the device the row never leaves it; the programme
/// stops early once c is reachable).
SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c);

namespace cpu {
/// The CPU reference: one in-place pass per weight over the packed row, from the top word down.
///@{
ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c);
SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c);
///@}
/// out |= in << shift over packed rows of equal length (bits shifted past the end are dropped); shift >= 0.
/// `in` and `out` may be the same row. The step of sumsets in general: A + {s_0, s_1, ...} = OR_k (A << s_k).
void shift_or(std::span<const std::uint64_t> in, std::int64_t shift, std::span<std::uint64_t> out);
}  // namespace cpu

namespace cuda {
/// Which CUDA kernel runs the dynamic programme.
enum class DpKernel {
  automatic,      ///< bit_packed, with the number of weights per pass that the benchmark found fastest
  bit_packed,     ///< one launch per `weights_per_pass` weights: row' = OR over their 2^K subset sums s of row << s
  byte_per_cell,  ///< the seed-002 baseline: one byte per total, one launch per weight
};
/// The CUDA implementations: rows in device memory, ping-ponged; only the active prefix (totals up to the sum of
/// the weights so far) is touched. weights_per_pass in [1, 3] (0: the default of `automatic`).
///@{
ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c, DpKernel kernel = DpKernel::automatic,
                             int weights_per_pass = 0);
SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c, DpKernel kernel = DpKernel::automatic,
                           int weights_per_pass = 0);
///@}
}  // namespace cuda

}  // namespace tally::gpu
