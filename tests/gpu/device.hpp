// Device tests: skipped, with a warning saying why, where no CUDA device can be used.
#pragma once

#include <catch2/catch.hpp>

#include "tally/gpu/backend.hpp"

namespace tally::test {

/// True (after a WARN naming the reason) when the test must skip: tally without CUDA, or no usable device.
inline bool skip_without_device() {
  if (gpu::cuda_available()) return false;
  WARN("skipped: " << gpu::device_description());
  return true;
}

}  // namespace tally::test
