// Private: large zeroed word buffers on transparent huge pages, where the kernel offers them (Linux).
#pragma once

#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace tally::gpu::detail {

/// Buffers of at least this many bytes ask for huge pages.
inline constexpr std::size_t huge_page_min_bytes = std::size_t{4} << 20;

/// `count` zero words. Fresh memory costs a page fault per 4 KiB page when it is first written (on the device
/// machine's host, 17 ms for 32 MiB, 5x a pageable copy of it): above huge_page_min_bytes, the 2 MiB-aligned
/// interior of the allocation is advised MADV_HUGEPAGE before the zeros are written, so that it faults once per
/// 2 MiB. Without the advice (another system, or transparent huge pages off), the buffer is the same, as slow.
inline std::vector<std::uint64_t> zeroed_words(std::size_t count) {
  std::vector<std::uint64_t> words;
  words.reserve(count);  // allocated, not yet touched
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (count * sizeof(std::uint64_t) >= huge_page_min_bytes) {
    constexpr std::uintptr_t huge = std::uintptr_t{1} << 21;
    const auto from = (reinterpret_cast<std::uintptr_t>(words.data()) + huge - 1) & ~(huge - 1);
    const auto to = reinterpret_cast<std::uintptr_t>(words.data() + count) & ~(huge - 1);
    if (to > from) (void)madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // advice only
  }
#endif
  words.resize(count, 0);
  return words;
}

}  // namespace tally::gpu::detail
