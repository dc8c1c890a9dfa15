// Private: work split over the host's threads, the calling one among them (the hardware's thread count, asked once;
// parts run at once, the first exception a part throws passed on once every part has ended).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace tally::gpu::detail {

/// The hardware's threads, asked once (the query reads /sys on Linux: microseconds, the cost of a small closure).
inline std::size_t hardware_threads() {
  static const std::size_t threads = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  return threads;
}

/// f(p) for p = 0 .. parts - 1, each on its own thread (f(0) on the calling one). The first exception a part throws
/// (in the order of the parts) is rethrown here once every part has ended.
template <class F>
void parallel_parts(std::size_t parts, F f) {
  if (parts <= 1) {
    if (parts == 1) f(std::size_t{0});
    return;
  }
  std::vector<std::exception_ptr> failed(parts);
  const auto run = [&](std::size_t p) {
    try {
      f(p);
    } catch (...) {
      failed[p] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(parts - 1);
    for (std::size_t p = 1; p < parts; ++p) pool.emplace_back(run, p);
    run(0);
  }
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace tally::gpu::detail
