// A square boolean matrix with bit-packed rows (64 entries per word): the adjacency and reachability of a graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// The largest size accepted: 2^24 nodes (a matrix of 32 TiB), far beyond any memory.
inline constexpr std::size_t max_bit_matrix_size = std::size_t{1} << 24;

/// An n x n boolean matrix M. Row i is words_per_row() = ceil(n / 64) words, rows stored one after another:
/// entry (i, j) is bit j % 64 of word i * words_per_row() + j / 64. The bits of a row's last word beyond column
/// n - 1 are always zero (every function here relies on it, and the constructor checks it).
/// A value type with cheap moves; two matrices are equal when their sizes and entries are.
class BitMatrix {
 public:
  /// The 0 x 0 matrix.
  BitMatrix() = default;
  /// The n x n zero matrix. Throws tally::overflow_error when n > max_bit_matrix_size.
  explicit BitMatrix(std::size_t n);
  /// The matrix with these packed rows: words.size() must be n * words_per_row(n) and no bit beyond column n - 1
  /// may be set (tally::shape_error otherwise, naming the row).
  BitMatrix(std::size_t n, std::vector<std::uint64_t> words);

  /// ceil(n / 64): the words of one row.
  static std::size_t words_per_row(std::size_t n) { return (n + 63) / 64; }
  /// The mask of the bits of a row's last word that are columns < n (all ones when 64 divides n).
  static std::uint64_t last_word_mask(std::size_t n) {
    return n % 64 == 0 ? ~std::uint64_t{0} : (std::uint64_t{1} << (n % 64)) - 1;
  }

  /// n.
  std::size_t size() const { return n_; }
  /// ceil(n / 64): the words of each of this matrix's rows.
  std::size_t words_per_row() const { return words_per_row(n_); }
  /// M(i, j); tally::shape_error when i or j is not below size().
  bool get(std::size_t i, std::size_t j) const;
  /// M(i, j) = value; tally::shape_error when i or j is not below size().
  void set(std::size_t i, std::size_t j, bool value = true);
  /// Row i as words_per_row() words; tally::shape_error when i >= size().
  std::span<const std::uint64_t> row(std::size_t i) const;
  /// All rows, n * words_per_row() words.
  std::span<const std::uint64_t> words() const { return words_; }
  /// The number of true entries.
  std::int64_t count() const;
  /// The transpose: M^T(i, j) = M(j, i).
  BitMatrix transposed() const;

  friend bool operator==(const BitMatrix& a, const BitMatrix& b) { return a.n_ == b.n_ && a.words_ == b.words_; }

 private:
  std::size_t n_ = 0;
  std::vector<std::uint64_t> words_;
};

}  // namespace tally::gpu
