// Private: the checks shared by the CPU and CUDA closures (sizes, cycles on the diagonal) and the squaring bound.
#pragma once

#include <cstddef>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/bit_matrix.hpp"

namespace tally::gpu::detail {

using tally::detail::fail;

/// tally::gpu::topological_order, with errors naming `who` (transitive_closure_cpu.cpp).
std::vector<std::size_t> topological_order(const BitMatrix& g, const char* who);

/// Requires a and b of the same size; errors name `who`.
inline void check_same_size(const BitMatrix& a, const BitMatrix& b, const char* who) {
  if (a.size() != b.size())
    fail<shape_error>(who, ": a ", a.size(), " x ", a.size(), " matrix times a ", b.size(), " x ", b.size(), " one");
}

/// Throws the error of a closure whose diagonal has a set entry R_ii (node i is on a cycle).
inline void check_diagonal(const BitMatrix& r, const char* who) {
  const std::size_t w = r.words_per_row();
  const auto words = r.words();
  for (std::size_t i = 0; i < r.size(); ++i)
    if ((words[i * w + i / 64] >> (i % 64)) & 1u)
      fail<shape_error>(who, ": the graph has a cycle through node ", i, " (a path leads from it back to it); a DAG "
                        "is required");
}

/// The most squarings a closure needs: the smallest s with 2^s >= n (0 for n <= 1). After s squarings every path
/// of length <= 2^s is covered, and no simple path (n - 1 edges) or cycle (n edges) is longer than n.
inline int squaring_bound(std::size_t n) {
  int s = 0;
  while ((std::size_t{1} << s) < n) ++s;
  return s;
}

}  // namespace tally::gpu::detail
