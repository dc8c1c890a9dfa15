// GPU convolution benchmark, one run: tally's direct kernel (double, float), the seed-004 skew baseline, cuFFT, CPU.
#include <cuda_runtime.h>
#include <cufft.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tally/gpu/convolve.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cufftResult e, const char* what) {
  if (e != CUFFT_SUCCESS) {
    std::fprintf(stderr, "%s: cuFFT error %d\n", what, static_cast<int>(e));
    std::exit(1);
  }
}

/// Mean milliseconds of f() over reps launches, after one warm-up, timed with events on the default stream.
template <class F>
double time_ms(F f, int reps) {
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

__global__ void multiply_spectra(cufftDoubleComplex* a, const cufftDoubleComplex* b, long long n, double scale) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const cufftDoubleComplex x = a[i], y = b[i];
    a[i] = {(x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale};
  }
}

template <class T>
double max_relative_error(const std::vector<T>& got, const std::vector<double>& want) {
  double worst = 0;
  for (std::size_t k = 0; k < want.size(); ++k)
    if (want[k] > 0) worst = std::max(worst, std::abs(static_cast<double>(got[k]) - want[k]) / want[k]);
  return worst;
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  check(cudaMalloc(&d, v.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "copy in");
  return d;
}

template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  std::vector<T> v(n);
  check(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "copy out");
  return v;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  const bool hopper = std::strstr(prop.name, "H100") || std::strstr(prop.name, "H200");
  const double fp64_peak = hopper ? 34e12 : 0, fp32_peak = hopper ? 67e12 : 0;  // datasheet, non-tensor FLOP/s
  std::printf("device: %s, %d SMs; datasheet FP64 %.0f TFLOP/s, FP32 %.0f TFLOP/s (non-tensor)\n", prop.name,
              prop.multiProcessorCount, fp64_peak / 1e12, fp32_peak / 1e12);
  {  // device-copy bandwidth: 1 GiB device to device, read + write counted
    const std::size_t bytes = std::size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, bytes), "cudaMalloc");
    check(cudaMalloc(&b, bytes), "cudaMalloc");
    const double ms = time_ms([&] { cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); }, 10);
    std::printf("device-copy bandwidth: %.0f GB/s (read + write)\n\n", 2.0 * bytes / ms / 1e6);
    cudaFree(a);
    cudaFree(b);
  }
  std::printf("| m = n | method | time | multiply-adds/s | of FP peak | max relative error per entry (vs CPU) |\n");
  std::printf("|---:|---|---:|---:|---:|---:|\n");
  std::mt19937_64 gen(1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t n : {std::size_t{1024}, std::size_t{65536}}) {
    // entries spread over 150 decades, so that products span 300: the tails are where FFTs fail
    std::vector<double> p(n), q(n);
    for (auto& x : p) x = std::pow(10.0, -150.0 * u(gen));
    for (auto& x : q) x = std::pow(10.0, -150.0 * u(gen));
    const std::size_t outputs = 2 * n - 1;
    const double madds = static_cast<double>(n) * static_cast<double>(n);
    auto row = [&](const char* method, double ms, double peak, double error) {
      std::printf("| %zu | %s | %.4g ms | %.3g G/s | %s | %.2g |\n", n, method, ms, madds / ms / 1e6,
                  peak > 0 ? (std::to_string(static_cast<int>(std::lround(100 * 2 * madds / (ms / 1e3) / peak))) + " %").c_str() : "-",
                  error);
    };
    std::vector<double> want(outputs);
    const auto t0 = std::chrono::steady_clock::now();
    tally::gpu::cpu::convolve(std::span<const double>(p), std::span<const double>(q), std::span<double>(want));
    const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    row("CPU reference (1 core)", cpu_ms, 0, 0.0);

    double *dp = to_device(p), *dq = to_device(q), *dr = nullptr;
    check(cudaMalloc(&dr, outputs * sizeof(double)), "cudaMalloc");
    const int reps = n > 4096 ? 20 : 200;
    double ms = time_ms([&] { tally::gpu::cuda::convolve_device(dp, n, dq, n, dr); }, reps);
    row("tally direct, float64", ms, fp64_peak, max_relative_error(to_host(dr, outputs), want));
    ms = time_ms([&] { tally::gpu::cuda::convolve_skew_device(dp, n, dq, n, dr); }, n > 4096 ? 3 : 50);
    row("seed-004 skew baseline, float64", ms, fp64_peak, max_relative_error(to_host(dr, outputs), want));

    {  // float32 on inputs that float can hold (1e-15 .. 1): error against the double reference of the same inputs
      std::vector<float> pf(n), qf(n);
      std::vector<double> pd(n), qd(n), wantf(outputs);
      for (std::size_t i = 0; i < n; ++i) {
        pf[i] = static_cast<float>(std::pow(10.0, -15.0 * u(gen)));
        qf[i] = static_cast<float>(std::pow(10.0, -15.0 * u(gen)));
        pd[i] = pf[i];
        qd[i] = qf[i];
      }
      tally::gpu::cpu::convolve(std::span<const double>(pd), std::span<const double>(qd), std::span<double>(wantf));
      float *fp = to_device(pf), *fq = to_device(qf), *fr = nullptr;
      check(cudaMalloc(&fr, outputs * sizeof(float)), "cudaMalloc");
      ms = time_ms([&] { tally::gpu::cuda::convolve_device(fp, n, fq, n, fr); }, reps);
      row("tally direct, float32 (inputs 1e-15..1)", ms, fp32_peak, max_relative_error(to_host(fr, outputs), wantf));
      cudaFree(fp);
      cudaFree(fq);
      cudaFree(fr);
    }

    {  // cuFFT: zero-pad to a power of two >= 2n - 1, D2Z both, multiply, Z2D
      std::size_t L = 1;
      while (L < outputs) L *= 2;
      const std::size_t bins = L / 2 + 1;
      double *ap = nullptr, *aq = nullptr;
      cufftDoubleComplex *fp = nullptr, *fq = nullptr;
      check(cudaMalloc(&ap, L * sizeof(double)), "cudaMalloc");
      check(cudaMalloc(&aq, L * sizeof(double)), "cudaMalloc");
      check(cudaMalloc(&fp, bins * sizeof(cufftDoubleComplex)), "cudaMalloc");
      check(cudaMalloc(&fq, bins * sizeof(cufftDoubleComplex)), "cudaMalloc");
      check(cudaMemset(ap, 0, L * sizeof(double)), "memset");
      check(cudaMemset(aq, 0, L * sizeof(double)), "memset");
      check(cudaMemcpy(ap, dp, n * sizeof(double), cudaMemcpyDeviceToDevice), "copy");
      check(cudaMemcpy(aq, dq, n * sizeof(double), cudaMemcpyDeviceToDevice), "copy");
      cufftHandle forward, inverse;
      check(cufftPlan1d(&forward, static_cast<int>(L), CUFFT_D2Z, 1), "plan");
      check(cufftPlan1d(&inverse, static_cast<int>(L), CUFFT_Z2D, 1), "plan");
      ms = time_ms(
          [&] {
            cufftExecD2Z(forward, ap, fp);
            cufftExecD2Z(forward, aq, fq);
            multiply_spectra<<<static_cast<unsigned>((bins + 255) / 256), 256>>>(fp, fq, static_cast<long long>(bins),
                                                                                1.0 / static_cast<double>(L));
            cufftExecZ2D(inverse, fp, ap);  // overwrites ap: the timed loop recomputes from a changed input,
          },                                // which costs the same; the error is measured on a clean run below
          reps);
      check(cudaMemset(ap, 0, L * sizeof(double)), "memset");
      check(cudaMemcpy(ap, dp, n * sizeof(double), cudaMemcpyDeviceToDevice), "copy");
      cufftExecD2Z(forward, ap, fp);
      cufftExecD2Z(forward, aq, fq);
      multiply_spectra<<<static_cast<unsigned>((bins + 255) / 256), 256>>>(fp, fq, static_cast<long long>(bins),
                                                                          1.0 / static_cast<double>(L));
      cufftExecZ2D(inverse, fp, ap);
      row("cuFFT D2Z, multiply, Z2D (float64)", ms, 0, max_relative_error(to_host(ap, outputs), want));
      cufftDestroy(forward);
      cufftDestroy(inverse);
      cudaFree(ap);
      cudaFree(aq);
      cudaFree(fp);
      cudaFree(fq);
    }
    cudaFree(dp);
    cudaFree(dq);
    cudaFree(dr);
  }
  return 0;
}
