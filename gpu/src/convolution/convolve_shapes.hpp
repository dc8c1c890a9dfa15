// Private: the shape contract shared by every convolution implementation (CPU reference and CUDA).
#pragma once

#include <cstddef>

#include "tally/error.hpp"

namespace tally::gpu::detail {

/// Operands of m and n entries (both > 0) and an output of exactly m + n - 1, else shape_error naming `who`.
inline void check_convolution_shapes(std::size_t m, std::size_t n, std::size_t r, const char* who) {
  if (m == 0 || n == 0) tally::detail::fail<shape_error>(who, ": an operand is empty (m = ", m, ", n = ", n, ")");
  if (r != m + n - 1)
    tally::detail::fail<shape_error>(who, ": output has ", r, " entries, expected m + n - 1 = ", m + n - 1);
}

}  // namespace tally::gpu::detail
