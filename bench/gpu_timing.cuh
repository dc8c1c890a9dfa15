// The GPU benchmarks' shared helpers: a failing CUDA call ends the run, wall-clock and event timings, copy bandwidth.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace tally::bench {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

/// Wall-clock milliseconds of f() (a host call that synchronizes), the best of `reps` after a warm-up when reps > 1.
template <class F>
double best_ms(F f, int reps) {
  if (reps > 1) f();
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    check(cudaDeviceSynchronize(), "timing");
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

/// Mean milliseconds of f() (device work on the default stream) over `reps` calls after a warm-up, by events.
template <class F>
double event_ms(F f, int reps) {
  f();
  check(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < reps; ++i) f();
  cudaEventRecord(b);
  check(cudaEventSynchronize(b), "timing");
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

/// Device-to-device copy of 1 GiB, read + write bytes per second.
inline double copy_bandwidth() {
  const std::size_t bytes = std::size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMemset(a, 1, bytes), "cudaMemset");
  const double ms = event_ms([&] { cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); }, 10);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * double(bytes) / (ms * 1e-3);
}

}  // namespace tally::bench
