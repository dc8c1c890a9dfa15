// The packed set of reachable totals, and the CPU reference of the bit-packed subset-sum dynamic programme.
#include "tally/gpu/reachable_sums.hpp"

#include <algorithm>
#include <bit>

#include "reachable_check.hpp"
#include "tally/error.hpp"

namespace tally::gpu {

ReachableSums::ReachableSums(std::int64_t capacity, std::vector<std::uint64_t> words)
    : capacity_(capacity), words_(std::move(words)) {
  const char* who = "tally::gpu::ReachableSums";
  if (capacity < 0) detail::fail<domain_error>(who, ": capacity ", capacity, " must be >= 0");
  if (words_.size() != static_cast<std::size_t>(capacity / 64 + 1))
    detail::fail<shape_error>(who, ": capacity ", capacity, " needs ", capacity / 64 + 1, " words, not ", words_.size());
  if (words_.back() & ~detail::top_word_mask(capacity))
    detail::fail<shape_error>(who, ": bits above the capacity ", capacity, " are set");
}

bool ReachableSums::contains(std::int64_t t) const {
  return t >= 0 && t <= capacity_ && ((words_[static_cast<std::size_t>(t / 64)] >> (t % 64)) & 1u);
}

std::int64_t ReachableSums::largest_at_most(std::int64_t t) const {
  if (t < 0) detail::fail<domain_error>("tally::gpu::ReachableSums::largest_at_most: t = ", t, " must be >= 0");
  t = std::min(t, capacity_);
  std::int64_t i = t / 64;
  // bits 0..t%64 of word i: the shift by 63 - t%64 moves bit t%64 to the top and drops the bits above it
  std::uint64_t word = words_[static_cast<std::size_t>(i)] << (63 - t % 64);
  if (word != 0) return t - std::countl_zero(word);
  while (--i >= 0)
    if (words_[static_cast<std::size_t>(i)] != 0) return i * 64 + 63 - std::countl_zero(words_[static_cast<std::size_t>(i)]);
  return -1;  // only for a set built without 0 (the programme always has 0)
}

std::int64_t ReachableSums::count() const {
  std::int64_t total = 0;
  for (const auto word : words_) total += std::popcount(word);
  return total;
}

std::vector<std::int64_t> ReachableSums::totals() const {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < words_.size(); ++i)
    for (std::uint64_t word = words_[i]; word != 0; word &= word - 1)
      out.push_back(static_cast<std::int64_t>(i) * 64 + std::countr_zero(word));
  return out;
}

namespace cpu {

void shift_or(std::span<const std::uint64_t> in, std::int64_t shift, std::span<std::uint64_t> out) {
  if (in.size() != out.size())
    detail::fail<shape_error>("tally::gpu::cpu::shift_or: rows of ", in.size(), " and ", out.size(), " words");
  if (shift < 0) detail::fail<domain_error>("tally::gpu::cpu::shift_or: shift ", shift, " must be >= 0");
  const std::size_t words = in.size();
  if (static_cast<std::uint64_t>(shift / 64) >= words) return;
  const std::size_t q = static_cast<std::size_t>(shift / 64);
  const unsigned r = static_cast<unsigned>(shift % 64);
  // from the top down, so that in == out reads every word before it is written: out[i] needs in[i-q], in[i-q-1]
  for (std::size_t i = words; i-- > q;) {
    std::uint64_t v = in[i - q] << r;
    if (r != 0 && i > q) v |= in[i - q - 1] >> (64 - r);
    out[i] |= v;
  }
}

namespace {
// The programme, stopping after the weight that makes `stop_at` reachable (-1: never stop).
std::vector<std::uint64_t> programme(std::span<const std::int64_t> w, std::int64_t c, std::int64_t stop_at,
                                     const char* who) {
  detail::check_reachable_input(w, c, who);
  std::vector<std::uint64_t> row(static_cast<std::size_t>(c / 64 + 1), 0);
  row[0] = 1;
  std::int64_t reach = 0;  // the largest total reachable so far is at most min(c, sum of the weights so far)
  for (const std::int64_t x : w) {
    if (x == 0 || x > c) continue;
    reach = std::min(c, reach + x);
    const auto active = static_cast<std::size_t>(reach / 64 + 1);
    shift_or(std::span<const std::uint64_t>(row.data(), active), x, std::span<std::uint64_t>(row.data(), active));
    if (stop_at >= 0 && ((row[static_cast<std::size_t>(stop_at / 64)] >> (stop_at % 64)) & 1u)) break;
  }
  row.back() &= detail::top_word_mask(c);
  return row;
}
}  // namespace

ReachableSums reachable_sums(std::span<const std::int64_t> w, std::int64_t c) {
  return ReachableSums(c, programme(w, c, -1, "tally::gpu::cpu::reachable_sums"));
}

SubsetSumAnswer subset_sum(std::span<const std::int64_t> w, std::int64_t c) {
  const ReachableSums sums(c, programme(w, c, c, "tally::gpu::cpu::subset_sum"));
  return {sums.contains(c), sums.largest_at_most(c)};
}

}  // namespace cpu
}  // namespace tally::gpu
