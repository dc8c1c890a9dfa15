// Whether the tests run under AddressSanitizer (CI's sanitized stage, gcc or clang): the longest loops run a fraction
// of their programs there, since the plain build runs them in full.
#pragma once

namespace tally::test {

#if defined(__SANITIZE_ADDRESS__)  // gcc
inline constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)  // clang
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif
#else
inline constexpr bool sanitized = false;
#endif

/// n runs of a loop, n / divisor under AddressSanitizer.
constexpr int runs(int n, int divisor = 5) { return sanitized ? n / divisor : n; }

}  // namespace tally::test
