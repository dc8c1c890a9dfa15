// The bit-packed square boolean matrix: construction checks, entry access, counting and the transpose.
#include "tally/gpu/bit_matrix.hpp"

#include <bit>

#include "tally/error.hpp"
#include "zeroed_words.hpp"

namespace tally::gpu {

using tally::detail::fail;

namespace {
void check_size(std::size_t n, const char* who) {
  if (n > max_bit_matrix_size)
    fail<overflow_error>(who, ": n = ", n, " is above max_bit_matrix_size = 2^24");
}
}  // namespace

BitMatrix::BitMatrix(std::size_t n) : n_(n) {
  check_size(n, "tally::gpu::BitMatrix");
  words_ = detail::zeroed_words(n * words_per_row(n));
}

BitMatrix::BitMatrix(std::size_t n, std::vector<std::uint64_t> words) : n_(n), words_(std::move(words)) {
  const char* who = "tally::gpu::BitMatrix";
  check_size(n, who);
  const std::size_t w = words_per_row(n);
  if (words_.size() != n * w) fail<shape_error>(who, ": n = ", n, " needs ", n * w, " words, not ", words_.size());
  const std::uint64_t mask = last_word_mask(n);
  for (std::size_t i = 0; i < n; ++i)
    if (words_[i * w + w - 1] & ~mask) fail<shape_error>(who, ": row ", i, " has bits set beyond column ", n - 1);
}

bool BitMatrix::get(std::size_t i, std::size_t j) const {
  if (i >= n_ || j >= n_) fail<shape_error>("tally::gpu::BitMatrix::get: (", i, ", ", j, ") is outside ", n_, " x ", n_);
  return (words_[i * words_per_row() + j / 64] >> (j % 64)) & 1u;
}

void BitMatrix::set(std::size_t i, std::size_t j, bool value) {
  if (i >= n_ || j >= n_) fail<shape_error>("tally::gpu::BitMatrix::set: (", i, ", ", j, ") is outside ", n_, " x ", n_);
  std::uint64_t& word = words_[i * words_per_row() + j / 64];
  const std::uint64_t bit = std::uint64_t{1} << (j % 64);
  word = value ? (word | bit) : (word & ~bit);
}

std::span<const std::uint64_t> BitMatrix::row(std::size_t i) const {
  if (i >= n_) fail<shape_error>("tally::gpu::BitMatrix::row: row ", i, " of a ", n_, " x ", n_, " matrix");
  return std::span<const std::uint64_t>(words_).subspan(i * words_per_row(), words_per_row());
}

std::int64_t BitMatrix::count() const {
  std::int64_t total = 0;
  for (const auto word : words_) total += std::popcount(word);
  return total;
}

BitMatrix BitMatrix::transposed() const {
  const std::size_t w = words_per_row();
  std::vector<std::uint64_t> out(words_.size(), 0);
  for (std::size_t i = 0; i < n_; ++i)
    for (std::size_t k = 0; k < w; ++k)
      for (std::uint64_t word = words_[i * w + k]; word != 0; word &= word - 1) {
        const std::size_t j = k * 64 + static_cast<std::size_t>(std::countr_zero(word));
        out[j * w + i / 64] |= std::uint64_t{1} << (i % 64);
      }
  return BitMatrix(n_, std::move(out));
}

}  // namespace tally::gpu
