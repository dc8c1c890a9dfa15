// What one host call of the CUDA runtime costs on this machine (launch, copies, allocation, round trip): the unit
// prices of a filter step's host side (bench/RESULTS.md, "Populations at scale").
// Usage: bench_host_costs_gpu   (a plain CUDA program)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

namespace {

/// A kernel that does nothing (the store never runs): what is timed is its launch.
__global__ void empty_kernel(int* p) {
  if (p && threadIdx.x == 1234567) *p = 1;
}

/// Microseconds of host time per call of f, over n calls (the device drained before and after).
template <class F>
double time_us(int n, F f) {
  cudaDeviceSynchronize();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f(i);
  auto t1 = std::chrono::steady_clock::now();
  cudaDeviceSynchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
}

}  // namespace

int main() {
  int* d = nullptr;
  void* h = nullptr;
  cudaEvent_t e;
  if (cudaMalloc(&d, 1 << 20) != cudaSuccess || cudaHostAlloc(&h, 1 << 20, 0) != cudaSuccess) {
    std::fprintf(stderr, "no device\n");
    return 1;
  }
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaEventRecord(e, 0);
  const int n = 20000;
  for (int r = 0; r < 2; ++r) {
    std::printf("launch (512 blocks)      %.2f us\n", time_us(n, [&](int) { empty_kernel<<<512, 128>>>(d); }));
    std::printf("launch + GetLastError    %.2f us\n", time_us(n, [&](int) { empty_kernel<<<512, 128>>>(d); cudaGetLastError(); }));
    std::printf("memcpyAsync HtoD pinned  %.2f us\n", time_us(n, [&](int) { cudaMemcpyAsync(d, h, 64, cudaMemcpyHostToDevice, 0); }));
    std::printf("memcpyAsync DtoD 512KB   %.2f us\n", time_us(2000, [&](int) { cudaMemcpyAsync(d, d + (1 << 17), 1 << 19, cudaMemcpyDeviceToDevice, 0); }));
    std::printf("eventRecord              %.2f us\n", time_us(n, [&](int) { cudaEventRecord(e, 0); }));
    cudaDeviceSynchronize();
    std::printf("eventSynchronize (done)  %.2f us\n", time_us(n, [&](int) { cudaEventSynchronize(e); }));
    int dev = 0;
    std::printf("getDevice                %.3f us\n", time_us(n, [&](int) { cudaGetDevice(&dev); }));
    std::printf("mallocAsync+freeAsync    %.2f us\n", time_us(n, [&](int) {
      void* p = nullptr;
      cudaMallocAsync(&p, 65536 * 8, 0);
      cudaFreeAsync(p, 0);
    }));
    std::printf("sync DtoH 64B (idle)     %.2f us\n", time_us(2000, [&](int) { cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost); }));
    std::printf("launch+sync roundtrip    %.2f us\n", time_us(2000, [&](int) { empty_kernel<<<1, 32>>>(d); cudaStreamSynchronize(0); }));
  }
  cudaFreeHost(h);
  cudaFree(d);
  return 0;
}
