// The test hook that makes the k-th device allocation fail (fault injection), compiled into every build.
#include <atomic>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu::detail {

namespace {
std::atomic<std::size_t> armed{0};    // 0: off; k: the k-th allocation from now fails
std::atomic<std::size_t> counted{0};  // device allocations asked for so far (through device_allocate or DeviceBuffer)
}  // namespace

std::size_t fail_device_allocation_after(std::size_t k) noexcept { return armed.exchange(k, std::memory_order_relaxed); }

std::size_t device_allocation_count() noexcept { return counted.load(std::memory_order_relaxed); }

void count_device_allocation(std::size_t bytes, const char* who) {
  counted.fetch_add(1, std::memory_order_relaxed);
  const std::size_t k = armed.load(std::memory_order_relaxed);
  if (k == 0) return;  // off: an increment and a load
  armed.store(k - 1, std::memory_order_relaxed);
  if (k == 1)
    throw device_memory_error(tally::detail::message(who, ": ", bytes,
                                                     " bytes of device memory do not fit (0 bytes free: a failure "
                                                     "injected by tally::gpu::detail::fail_device_allocation_after)"),
                              bytes, 0);
}

}  // namespace tally::gpu::detail
