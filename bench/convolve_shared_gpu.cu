// Convolutions of P laws against a law they share (a prior every particle holds), on the FP64 tensor cores:
// gpu::convolve_shared (each pair reading the shared law where it is) against the path it replaces (the shared law
// repeated for every particle, then gpu::convolve of the pairs), against cuBLAS's DGEMM rate on the same device.
// Built with -DTALLY_BENCH_PAIRS_ONLY against a library that predates convolve_shared, it times the repeated path
// alone (the "before" of bench/RESULTS.md).
//
// Usage: bench_convolve_shared_gpu [--quick]   (a plain CUDA program; cudaEvent timings, mean of the repetitions
// after a warm-up). Each row: P laws of n entries each (lengths drawn in [n - n/8, n]) against one shared law of m
// entries; useful FLOP = 2 sum_i m n_i (the products of the convolution's band, not the padding). The timings are of
// the library calls on device laws (gpu::convolve_shared; gpu::repeated then gpu::convolve), allocation from the
// memory pool included, no copies to or from the host.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gpu_timing.cuh"
#include "tally/gpu/population_ops.hpp"

namespace {

using tally::bench::check;
using tally::bench::event_ms;
using tally::gpu::Backend;
using tally::gpu::Laws;
using tally::gpu::PmfBatch;

/// count laws with lengths in [n - n/8, n] (a cheap generator: these batches reach 10^9 weights), weights in (0, 1].
PmfBatch random_laws(std::uint64_t seed, std::size_t count, std::size_t n) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::size_t> length(n - n / 8, n);
  PmfBatch b;
  b.weights.reserve(count * n);
  std::uint64_t s = seed | 1;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t len = length(gen);
    b.lo.push_back(static_cast<std::int64_t>(i % 17));
    b.log_scale.push_back(0.0);
    for (std::size_t k = 0; k < len; ++k) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      b.weights.push_back(static_cast<double>((s >> 11) | 1) * 0x1.0p-53);
    }
    b.offset.push_back(static_cast<std::int64_t>(b.weights.size()));
  }
  return b;
}

/// cuBLAS DGEMM of two N x N matrices: the FP64 (tensor-core) rate this device reaches on a large product.
double dgemm_flops(std::size_t N) {
  double *a = nullptr, *b = nullptr, *c = nullptr;
  check(cudaMalloc(&a, N * N * sizeof(double)), "cudaMalloc");
  check(cudaMalloc(&b, N * N * sizeof(double)), "cudaMalloc");
  check(cudaMalloc(&c, N * N * sizeof(double)), "cudaMalloc");
  check(cudaMemset(a, 0, N * N * sizeof(double)), "memset");
  check(cudaMemset(b, 0, N * N * sizeof(double)), "memset");
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) std::exit(1);
  const double one = 1.0, zero = 0.0;
  const int n = static_cast<int>(N);
  const double ms = event_ms([&] { cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n); }, 10);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 2.0 * static_cast<double>(N) * static_cast<double>(N) * static_cast<double>(N) / (ms / 1e3);
}

void row(std::size_t P, std::size_t m, std::size_t n, double dgemm, double datasheet) {
  const PmfBatch hx = random_laws(7 + P + n, P, n), hy = random_laws(11 + m, 1, m);
  double useful = 0.0;
  for (std::size_t i = 0; i < P; ++i) useful += 2.0 * static_cast<double>(hx.length(i)) * static_cast<double>(m);
  const Laws x = Laws::from_host(hx, Backend::cuda), y = Laws::from_host(hy, Backend::cuda);
  const int reps = useful > 1e11 ? 5 : 20;
  const auto of_peak = [&](double ms) { return 100.0 * useful / (ms / 1e3) / datasheet; };
  const double repeated_ms = event_ms([&] { (void)tally::gpu::convolve(x, tally::gpu::repeated(y, P)); }, reps);
#ifdef TALLY_BENCH_PAIRS_ONLY  // a build of the library before convolve_shared: the repeated path alone
  std::printf("| %zu | %zu | %zu | - | - | - | - | %.4f | %.1f %% | - | - |\n", P, m, n, repeated_ms,
              of_peak(repeated_ms));
  (void)dgemm;
#else
  const double shared_ms = event_ms([&] { (void)tally::gpu::convolve_shared(x, y, P); }, reps);
  // the two paths' laws, compared (the same sums in the same order: equal)
  const PmfBatch a = tally::gpu::convolve_shared(x, y, P).to_host();
  const PmfBatch b = tally::gpu::convolve(x, tally::gpu::repeated(y, P)).to_host();
  double diff = a.offset == b.offset && a.lo == b.lo ? 0.0 : INFINITY;
  for (std::size_t k = 0; k < a.weights.size() && std::isfinite(diff); ++k)
    if (b.weights[k] > 0.0) diff = std::max(diff, std::abs(a.weights[k] - b.weights[k]) / b.weights[k]);
  const double rate = useful / (shared_ms / 1e3);
  std::printf("| %zu | %zu | %zu | %.4f | %.1f | %.1f %% | %.1f %% | %.4f | %.1f %% | %.2fx | %.1e |\n", P, m, n,
              shared_ms, rate / 1e12, 100.0 * rate / dgemm, of_peak(shared_ms), repeated_ms, of_peak(repeated_ms),
              repeated_ms / shared_ms, diff);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  const double datasheet = 67e12;  // H100 / H200 SXM FP64 tensor-core peak
  const double dgemm = dgemm_flops(8192);
  std::printf("device: %s, %d SMs; cuBLAS DGEMM 8192^3: %.1f TFLOP/s measured (%.0f %% of the %.0f TFLOP/s "
              "datasheet FP64 tensor-core peak)\n\n",
              prop.name, prop.multiProcessorCount, dgemm / 1e12, 100.0 * dgemm / datasheet, datasheet / 1e12);
  std::printf("| P | m (shared) | n (own, at most) | convolve_shared ms | TFLOP/s | of DGEMM | of peak | repeated + "
              "convolve ms | of peak | speed-up | max rel. diff |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  struct Shape {
    std::size_t P, m, n;
  };
  const std::vector<Shape> shapes = quick ? std::vector<Shape>{{4096, 335, 401}, {1024, 1024, 1024}}
                                          : std::vector<Shape>{{65536, 335, 401},  {1048576, 335, 401},
                                                               {65536, 335, 900},  {1048576, 335, 900},
                                                               {65536, 512, 512},  {65536, 1024, 1024},
                                                               {16384, 4096, 512}, {16384, 512, 4096},
                                                               {16384, 2048, 2048}, {4096, 4096, 4096}};
  for (const Shape& s : shapes) row(s.P, s.m, s.n, dgemm, datasheet);
  return 0;
}
