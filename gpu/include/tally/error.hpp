// Exceptions that every layer of tally throws for bad input, and the checks that raise them with a clear message.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace tally {

/// A parameter or argument outside its mathematical domain (p outside [0,1], a negative rate, NaN, ...).
struct domain_error : std::domain_error {
  using std::domain_error::domain_error;
};

/// Operands whose shapes or supports do not fit together (empty supports, a matrix of the wrong size, ...).
struct shape_error : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// A result that does not fit the integer range of a support, or the memory a dense pmf would need.
struct overflow_error : std::overflow_error {
  using std::overflow_error::overflow_error;
};

/// A CUDA call that failed (no device, out of device memory, a failed launch); the message names the call.
struct cuda_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Host memory that does not suffice: a std::bad_alloc (Python: MemoryError) whose message says what was asked for
/// and what would fit (a population says how many particles).
struct host_memory_error : std::bad_alloc {
  /// The message, and the bytes asked for and available.
  host_memory_error(std::string what, std::size_t requested_bytes, std::size_t available_bytes)
      : message(std::move(what)), requested(requested_bytes), available(available_bytes) {}
  /// The message.
  const char* what() const noexcept override { return message.c_str(); }
  /// What was asked for and what would fit, in words.
  std::string message;
  /// The bytes asked for, and the bytes available.
  ///@{
  std::size_t requested, available;
  ///@}
};

namespace detail {

/// 128-bit integers for bound arithmetic that must not overflow (GCC and Clang; __extension__ for -Wpedantic).
__extension__ typedef __int128 int128;

template <class... Parts>
std::string message(const Parts&... parts) {
  std::ostringstream out;
  out.precision(17);
  (out << ... << parts);
  return out.str();
}

template <class Error, class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(message(parts...));
}

/// Requires 0 <= p <= 1 (and not NaN); `who` and `what` name the function and the parameter.
inline void check_probability(double p, const char* who, const char* what) {
  if (!(p >= 0.0 && p <= 1.0)) fail<domain_error>(who, ": ", what, " = ", p, " is not a probability in [0, 1]");
}

/// Requires x >= 0 and finite.
inline void check_nonnegative(double x, const char* who, const char* what) {
  if (!(x >= 0.0 && std::isfinite(x))) fail<domain_error>(who, ": ", what, " = ", x, " must be finite and >= 0");
}

/// Requires x > 0 and finite.
inline void check_positive(double x, const char* who, const char* what) {
  if (!(x > 0.0 && std::isfinite(x))) fail<domain_error>(who, ": ", what, " = ", x, " must be finite and > 0");
}

/// Requires an integer parameter n >= 0.
inline void check_count(std::int64_t n, const char* who, const char* what) {
  if (n < 0) fail<domain_error>(who, ": ", what, " = ", n, " must be >= 0");
}

/// a + b, or overflow_error naming `who` when it leaves the range of int64.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* who) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail<overflow_error>(who, ": ", a, " + ", b, " overflows the 64-bit integer range");
  return r;
}

/// a * b, or overflow_error naming `who`.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* who) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail<overflow_error>(who, ": ", a, " * ", b, " overflows the 64-bit integer range");
  return r;
}

}  // namespace detail
}  // namespace tally
