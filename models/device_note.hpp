// What the examples say about the device: why a build with CUDA kernels runs on the CPU (the library prints nothing).
#pragma once

#include <cstdio>
#include <string>

#include "tally/gpu/backend.hpp"

namespace tally::models {

/// One line on stderr where tally's CUDA kernels are built but no device can be used (gpu::device_fallback), so that
/// a user of --device knows why the GPU path is not there; nothing otherwise.
inline void note_device_fallback() {
  const std::string why = gpu::device_fallback();
  if (!why.empty()) std::fprintf(stderr, "note: tally is %s: everything runs on the CPU (--device gpu fails)\n", why.c_str());
}

}  // namespace tally::models
