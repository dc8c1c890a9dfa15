// GPU convolution benchmark, one run: tally's kernels against cuFFT, the seed-004 skew baseline and the CPU path.
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_timing.cuh"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/convolve_batched.hpp"

namespace {

using big = boost::multiprecision::cpp_bin_float_50;
using tally::gpu::PmfBatch;
using tally::gpu::cuda::Kernel;
using tally::bench::check;
using tally::bench::event_ms;

void check(cufftResult e, const char* what) {
  if (e != CUFFT_SUCCESS) {
    std::fprintf(stderr, "%s: cuFFT error %d\n", what, static_cast<int>(e));
    std::exit(1);
  }
}

template <class F>
double cpu_ms(F f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

template <class T>
T* to_device(const std::vector<T>& v) {
  T* d = nullptr;
  check(cudaMalloc(&d, std::max<std::size_t>(1, v.size()) * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "copy in");
  return d;
}
template <class T>
std::vector<T> to_host(const T* d, std::size_t n) {
  std::vector<T> v(n);
  check(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "copy out");
  return v;
}

__global__ void multiply_spectra(cufftDoubleComplex* a, const cufftDoubleComplex* b, long long n, double scale) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const cufftDoubleComplex x = a[i], y = b[i];
    a[i] = {(x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale};
  }
}

/// Batched FFT convolution of P pairs of length m (cuFFT D2Z, multiply, Z2D), inputs zero-padded once to L.
struct FftConvolution {
  std::size_t P, m, L, bins;
  double *px = nullptr, *py = nullptr, *out = nullptr;
  cufftDoubleComplex *fx = nullptr, *fy = nullptr;
  cufftHandle forward{}, inverse{};

  FftConvolution(const double* dx, const double* dy, std::size_t P_, std::size_t m_) : P(P_), m(m_) {
    L = 1;
    while (L < 2 * m - 1) L *= 2;
    bins = L / 2 + 1;
    check(cudaMalloc(&px, P * L * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&py, P * L * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&out, P * L * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&fx, P * bins * sizeof(cufftDoubleComplex)), "cudaMalloc");
    check(cudaMalloc(&fy, P * bins * sizeof(cufftDoubleComplex)), "cudaMalloc");
    check(cudaMemset(px, 0, P * L * sizeof(double)), "memset");
    check(cudaMemset(py, 0, P * L * sizeof(double)), "memset");
    check(cudaMemcpy2D(px, L * sizeof(double), dx, m * sizeof(double), m * sizeof(double), P, cudaMemcpyDeviceToDevice), "pad");
    check(cudaMemcpy2D(py, L * sizeof(double), dy, m * sizeof(double), m * sizeof(double), P, cudaMemcpyDeviceToDevice), "pad");
    int n[1] = {static_cast<int>(L)};
    int nb[1] = {static_cast<int>(bins)};
    check(cufftPlanMany(&forward, 1, n, n, 1, static_cast<int>(L), nb, 1, static_cast<int>(bins), CUFFT_D2Z, static_cast<int>(P)), "plan");
    check(cufftPlanMany(&inverse, 1, n, nb, 1, static_cast<int>(bins), n, 1, static_cast<int>(L), CUFFT_Z2D, static_cast<int>(P)), "plan");
  }
  void run() {
    cufftExecD2Z(forward, px, fx);
    cufftExecD2Z(forward, py, fy);
    const long long total = static_cast<long long>(P * bins);
    multiply_spectra<<<static_cast<unsigned>((total + 255) / 256), 256>>>(fx, fy, total, 1.0 / static_cast<double>(L));
    cufftExecZ2D(inverse, fx, out);
  }
  /// outputs of pair i (2m - 1 entries)
  std::vector<double> result(std::size_t i) { return to_host(out + i * L, 2 * m - 1); }
  ~FftConvolution() {
    cufftDestroy(forward);
    cufftDestroy(inverse);
    cudaFree(px);
    cudaFree(py);
    cudaFree(out);
    cudaFree(fx);
    cudaFree(fy);
  }
};

struct Machine {
  std::string name;
  double fp64 = 34e12, fp64_tensor = 67e12, fp32 = 67e12;  // H100/H200 SXM datasheet FLOP/s
  double copy = 0;                                         // measured device-copy bytes/s (read + write)
};

/// Entries of the reference: positive weights 10^(-200 u), u uniform, so products span 400 decades.
std::vector<double> random_weights(std::mt19937_64& gen, std::size_t n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = std::pow(10.0, -200.0 * u(gen));
  return v;
}

/// A PmfBatch copied to the device, or room for one (P pmfs, `weights` entries); freed on scope exit.
struct DeviceBatch {
  double *weights = nullptr, *log_scale = nullptr;
  std::int64_t *offset = nullptr, *lo = nullptr;
  std::size_t count;
  explicit DeviceBatch(const PmfBatch& b)
      : weights(to_device(b.weights)), log_scale(to_device(b.log_scale)), offset(to_device(b.offset)),
        lo(to_device(b.lo)), count(b.size()) {}
  DeviceBatch(std::size_t P, std::size_t weight_count) : count(P) {
    check(cudaMalloc(&weights, weight_count * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&log_scale, P * sizeof(double)), "cudaMalloc");
    check(cudaMalloc(&offset, (P + 1) * sizeof(std::int64_t)), "cudaMalloc");
    check(cudaMalloc(&lo, P * sizeof(std::int64_t)), "cudaMalloc");
  }
  DeviceBatch(const DeviceBatch&) = delete;
  DeviceBatch& operator=(const DeviceBatch&) = delete;
  ~DeviceBatch() {
    cudaFree(weights);
    cudaFree(log_scale);
    cudaFree(offset);
    cudaFree(lo);
  }
  tally::gpu::PmfBatchView view() const { return {weights, offset, lo, log_scale, count}; }
  tally::gpu::MutablePmfBatchView out() { return {weights, offset, lo, log_scale, count}; }
};

/// P pmfs of m random weights each (scaled to maximum 1 by push_back).
PmfBatch random_batch(std::mt19937_64& gen, std::size_t P, std::size_t m) {
  const auto w = random_weights(gen, P * m);
  PmfBatch b;
  for (std::size_t i = 0; i < P; ++i) b.push_back(std::span<const double>(w).subspan(i * m, m), 0);
  return b;
}

/// 50-digit convolution entry k of x and y.
big exact_entry(const double* x, std::size_t m, const double* y, std::size_t n, std::size_t k) {
  big s = 0;
  const std::size_t a0 = k >= n - 1 ? k - (n - 1) : 0, a1 = std::min(k, m - 1);
  for (std::size_t a = a0; a <= a1; ++a) s += big(x[a]) * big(y[k - a]);
  return s;
}

/// Sampled entries of a batch of convolutions with their 50-digit values (entries >= 1e-200 only).
struct Reference {
  struct Entry {
    std::size_t pair, k;
    big value;
  };
  std::vector<Entry> entries;
  /// max relative error of got(pair, k) over the sampled entries
  template <class Get>
  double max_error(Get got) const {
    double worst = 0;
    for (const auto& e : entries) {
      const double g = got(e.pair, e.k);
      worst = std::max(worst, static_cast<double>(abs((big(g) - e.value) / e.value)));
    }
    return worst;
  }
};

Reference make_reference(const std::vector<double>& x, const std::vector<double>& y, std::size_t P, std::size_t m,
                         std::size_t samples, std::mt19937_64& gen) {
  Reference ref;
  const std::size_t outputs = 2 * m - 1;
  std::uniform_int_distribution<std::size_t> pick_pair(0, P - 1), pick_k(0, outputs - 1);
  auto add = [&](std::size_t i, std::size_t k) {
    big v = exact_entry(x.data() + i * m, m, y.data() + i * m, m, k);
    if (v >= big("1e-200")) ref.entries.push_back({i, k, v});
  };
  for (std::size_t k = 0; k < std::min<std::size_t>(16, outputs); ++k) {  // both tails of pair 0
    add(0, k);
    add(0, outputs - 1 - k);
  }
  for (std::size_t s = 0; s < samples; ++s) add(pick_pair(gen), pick_k(gen));
  return ref;
}

void header() {
  std::printf("| case | method | time | useful FLOP/s (2mn/t) | of datasheet peak | bytes/s (in + out) | of copy bw | max rel. error vs 50 digits | tally best vs this |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
}

void row(const std::string& name, const char* method, double ms, double flops, double peak, double bytes,
         const Machine& mc, double error, double best_ms) {
  char peak_s[32] = "-", err_s[32] = "-";
  if (peak > 0) std::snprintf(peak_s, sizeof peak_s, "%.1f %%", 100 * flops / (ms / 1e3) / peak);
  if (error >= 0) std::snprintf(err_s, sizeof err_s, "%.2g", error);
  std::printf("| %s | %s | %.4g ms | %.3g T | %s | %.3g GB/s | %.1f %% | %s | %.3gx |\n", name.c_str(), method, ms,
              flops / (ms / 1e3) / 1e12, peak_s, bytes / (ms / 1e3) / 1e9, 100 * bytes / (ms / 1e3) / mc.copy, err_s,
              ms / best_ms);
  std::fflush(stdout);
}

/// Single convolution m = n: tensor cores, SIMT direct (double and float), skew baseline, cuFFT, CPU.
void single(std::size_t n, const Machine& mc, std::mt19937_64& gen) {
  const auto x = random_weights(gen, n), y = random_weights(gen, n);
  const std::size_t outputs = 2 * n - 1;
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n);
  const double bytes = 8.0 * (2 * n + outputs);
  const auto ref = make_reference(x, y, 1, n, n > 4096 ? 300 : 2000, gen);
  const std::string name = "single m = n = " + std::to_string(n);
  double *dx = to_device(x), *dy = to_device(y), *dr = nullptr;
  check(cudaMalloc(&dr, outputs * sizeof(double)), "cudaMalloc");
  const int reps = n > 4096 ? 20 : 200;
  struct Result {
    const char* method;
    double ms, peak, error;
  };
  std::vector<Result> results;
  auto device_row = [&](const char* method, Kernel k, double peak, int r) {
    const double ms = event_ms([&] { tally::gpu::cuda::convolve_device(dx, n, dy, n, dr, nullptr, k); }, r);
    const auto got = to_host(dr, outputs);
    results.push_back({method, ms, peak, ref.max_error([&](std::size_t, std::size_t k2) { return got[k2]; })});
  };
  device_row("tally tensor cores (DMMA), float64", Kernel::tensor_core, mc.fp64_tensor, reps);
  device_row("tally SIMT direct, float64", Kernel::direct, mc.fp64, reps);
  device_row("seed-004 skew baseline, float64", Kernel::skew, mc.fp64, n > 4096 ? 3 : 50);
  {
    FftConvolution fft(dx, dy, 1, n);
    const double ms = event_ms([&] { fft.run(); }, reps);
    const auto got = fft.result(0);
    results.push_back({"cuFFT D2Z, multiply, Z2D (float64)", ms, 0,
                       ref.max_error([&](std::size_t, std::size_t k) { return got[k]; })});
  }
  {
    std::vector<double> got(outputs);
    const double ms = cpu_ms([&] {
      tally::gpu::cpu::convolve(std::span<const double>(x), std::span<const double>(y), std::span<double>(got));
    });
    results.push_back({"CPU reference (1 core, AVX-512)", ms, 0,
                       ref.max_error([&](std::size_t, std::size_t k) { return got[k]; })});
  }
  double best = 1e300;
  for (const auto& r : results)
    if (std::strncmp(r.method, "tally", 5) == 0) best = std::min(best, r.ms);
  for (const auto& r : results) row(name, r.method, r.ms, flops, r.peak, bytes, mc, r.error, best);
  {  // float32 on inputs that float holds (1e-15 .. 1): error against the double CPU reference of the same inputs
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<float> xf(n), yf(n);
    std::vector<double> xd(n), yd(n), want(outputs);
    for (std::size_t i = 0; i < n; ++i) {
      xd[i] = xf[i] = static_cast<float>(std::pow(10.0, -15.0 * u(gen)));
      yd[i] = yf[i] = static_cast<float>(std::pow(10.0, -15.0 * u(gen)));
    }
    tally::gpu::cpu::convolve(std::span<const double>(xd), std::span<const double>(yd), std::span<double>(want));
    float *fx = to_device(xf), *fy = to_device(yf), *fr = nullptr;
    check(cudaMalloc(&fr, outputs * sizeof(float)), "cudaMalloc");
    const double ms = event_ms([&] { tally::gpu::cuda::convolve_device(fx, n, fy, n, fr); }, reps);
    const auto got = to_host(fr, outputs);
    double worst = 0;
    for (std::size_t k = 0; k < outputs; ++k) worst = std::max(worst, std::abs(got[k] - want[k]) / want[k]);
    row(name, "tally SIMT direct, float32 (inputs 1e-15..1; error vs double)", ms, flops, mc.fp32, bytes / 2, mc,
        worst, best);
    cudaFree(fx);
    cudaFree(fy);
    cudaFree(fr);
  }
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dr);
}

/// P pairs of length m each (one batch, one launch): tally's batched kernels, cuFFT batched plans, CPU.
void batched(std::size_t P, std::size_t m, const Machine& mc, std::mt19937_64& gen) {
  const PmfBatch bx = random_batch(gen, P, m), by = random_batch(gen, P, m);
  const std::size_t outputs = 2 * m - 1;
  const double flops = 2.0 * static_cast<double>(P) * static_cast<double>(m) * static_cast<double>(m);
  const double bytes = 8.0 * static_cast<double>(P) * (2 * m + outputs);
  // the reference is of the stored (scaled) weights: the batch divides each pmf by its maximum
  const auto ref = make_reference(bx.weights, by.weights, P, m, 600, gen);
  const std::string name = "batched P = " + std::to_string(P) + ", m = n = " + std::to_string(m);

  DeviceBatch dx(bx), dy(by), dr(P, P * outputs);
  const auto vx = dx.view(), vy = dy.view();
  const auto vr = dr.out();
  const int reps = static_cast<double>(P) * m * m > 1e9 ? 10 : 50;
  struct Result {
    std::string method;
    double ms, peak, error;
  };
  std::vector<Result> results;
  auto device_row = [&](const char* method, Kernel k, double peak) {
    const double ms = event_ms([&] { tally::gpu::cuda::convolve_batched_device(vx, vy, m, vr, nullptr, k); }, reps);
    const auto w = to_host(dr.weights, P * outputs);
    const auto s = to_host(dr.log_scale, P);
    // compare unscaled: weight times exp(log_scale) (the inputs had log_scale of their own maximum)
    results.push_back({method, ms, peak, ref.max_error([&](std::size_t i, std::size_t k2) {
                         return w[i * outputs + k2] * std::exp(s[i] - bx.log_scale[i] - by.log_scale[i]);
                       })});
  };
  if (m <= 128) device_row("tally small-pair kernel, rescale fused (automatic)", Kernel::automatic, mc.fp64);
  device_row(m <= 256 ? "tally tensor cores (DMMA), rescale fused" : "tally tensor cores (DMMA) + rescale pass",
             Kernel::tensor_core, mc.fp64_tensor);
  device_row("tally SIMT direct + rescale pass", Kernel::direct, mc.fp64);
  if (P <= 65535) device_row("seed-004 skew baseline + rescale pass", Kernel::skew, mc.fp64);
  {
    FftConvolution fft(dx.weights, dy.weights, P, m);
    const double ms = event_ms([&] { fft.run(); }, reps);
    std::vector<std::vector<double>> got(P);
    for (const auto& e : ref.entries)
      if (got[e.pair].empty()) got[e.pair] = fft.result(e.pair);
    results.push_back({"cuFFT batched D2Z, multiply, Z2D (no rescale)", ms, 0,
                       ref.max_error([&](std::size_t i, std::size_t k) { return got[i][k]; })});
  }
  {
    PmfBatch r;
    const double ms = cpu_ms([&] { r = tally::gpu::cpu::convolve_batched(bx, by); });
    results.push_back({"CPU reference (1 core), rescale included", ms, 0, ref.max_error([&](std::size_t i, std::size_t k) {
                         return r[i][k] * std::exp(r.log_scale[i] - bx.log_scale[i] - by.log_scale[i]);
                       })});
  }
  double best = 1e300;
  for (const auto& r : results)
    if (r.method.rfind("tally", 0) == 0) best = std::min(best, r.ms);
  for (const auto& r : results) row(name, r.method.c_str(), r.ms, flops, r.peak, bytes, mc, r.error, best);
}

/// Conditioning on sums, P pairs of length m: tally's one-launch kernel; baselines compute the likelihood only
/// (the convolution entry at z, by cuFFT or the skew kernel) and the CPU reference does both.
void conditioning(std::size_t P, std::size_t m, const Machine& mc, std::mt19937_64& gen) {
  const PmfBatch bx = random_batch(gen, P, m), by = random_batch(gen, P, m);
  std::uniform_int_distribution<std::int64_t> pick(0, static_cast<std::int64_t>(2 * m - 2));
  std::vector<std::int64_t> z(P);
  for (auto& v : z) v = pick(gen);
  const std::string name = "condition on sum, P = " + std::to_string(P) + ", m = n = " + std::to_string(m);
  const double flops = 2.0 * static_cast<double>(P) * static_cast<double>(m);  // one product and one add per term
  const double bytes = 8.0 * static_cast<double>(P) * (3 * m + 1);            // x, y read, posterior written
  // 50-digit log-likelihoods of 200 sampled pairs (all of the diagonal)
  std::vector<std::pair<std::size_t, big>> ref;
  std::uniform_int_distribution<std::size_t> pick_pair(0, P - 1);
  for (int s = 0; s < 200; ++s) {
    const std::size_t i = pick_pair(gen);
    const big v = exact_entry(bx.weights.data() + i * m, m, by.weights.data() + i * m, m, static_cast<std::size_t>(z[i]));
    if (v > 0) ref.emplace_back(i, log(v) + big(bx.log_scale[i]) + big(by.log_scale[i]));
  }
  auto loglik_error = [&](auto loglik) {
    double worst = 0;
    for (const auto& [i, want] : ref) {
      const double got = loglik(i);
      worst = std::max(worst, std::abs(static_cast<double>(expm1(big(got) - want))));
    }
    return worst;
  };
  DeviceBatch dx(bx), dy(by), posterior(P, P * m);
  std::int64_t* dz = to_device(z);
  double* ll = nullptr;
  check(cudaMalloc(&ll, P * sizeof(double)), "cudaMalloc");
  const auto vx = dx.view(), vy = dy.view();
  const auto vp = posterior.out();
  struct Result {
    const char* method;
    double ms, error;
  };
  std::vector<Result> results;
  {
    const double ms = event_ms([&] { tally::gpu::cuda::condition_on_sum_batched_device(vx, vy, dz, vp, ll); }, 200);
    const auto got = to_host(ll, P);
    results.push_back({"tally one launch (posterior + log-likelihood)", ms,
                       loglik_error([&](std::size_t i) { return got[i]; })});
  }
  {
    const std::size_t outputs = 2 * m - 1;
    DeviceBatch dr(P, P * outputs);
    const auto vr = dr.out();
    const double ms = event_ms([&] { tally::gpu::cuda::convolve_batched_device(vx, vy, m, vr, nullptr, Kernel::skew); }, 20);
    const auto w = to_host(dr.weights, P * outputs);
    const auto s = to_host(dr.log_scale, P);
    results.push_back({"seed-004 skew kernel, whole convolution (likelihood only)", ms, loglik_error([&](std::size_t i) {
                         return std::log(w[i * outputs + static_cast<std::size_t>(z[i])]) + s[i];
                       })});
    FftConvolution fft(dx.weights, dy.weights, P, m);
    const double fms = event_ms([&] { fft.run(); }, 20);
    std::vector<double> at(P, 0.0);
    for (const auto& [i, want] : ref) at[i] = fft.result(i)[static_cast<std::size_t>(z[i])];
    results.push_back({"cuFFT batched, whole convolution (likelihood only)", fms, loglik_error([&](std::size_t i) {
                         return std::log(std::max(at[i], 1e-320)) + bx.log_scale[i] + by.log_scale[i];
                       })});
  }
  {
    tally::gpu::SumConditioning c;
    const double ms = cpu_ms([&] { c = tally::gpu::cpu::condition_on_sum_batched(bx, by, z); });
    results.push_back({"CPU reference (1 core, posterior + log-likelihood)", ms,
                       loglik_error([&](std::size_t i) { return c.log_likelihood[i]; })});
  }
  for (const auto& r : results) row(name, r.method, r.ms, flops, 0, bytes, mc, r.error, results[0].ms);
  cudaFree(dz);
  cudaFree(ll);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;  // smaller cases only (smoke run)
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "device");
  Machine mc;
  mc.name = prop.name;
  {  // device-copy bandwidth: 1 GiB device to device, read + write counted
    const std::size_t bytes = std::size_t{1} << 30;
    void *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, bytes), "cudaMalloc");
    check(cudaMalloc(&b, bytes), "cudaMalloc");
    const double ms = event_ms([&] { cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice); }, 10);
    mc.copy = 2.0 * bytes / (ms / 1e3);
    cudaFree(a);
    cudaFree(b);
  }
  std::printf("device: %s, %d SMs; datasheet FP64 %.0f TFLOP/s (tensor %.0f), FP32 %.0f TFLOP/s; measured "
              "device-copy bandwidth %.0f GB/s (read + write)\n\n",
              prop.name, prop.multiProcessorCount, mc.fp64 / 1e12, mc.fp64_tensor / 1e12, mc.fp32 / 1e12,
              mc.copy / 1e9);
  std::mt19937_64 gen(2026);
  header();
  single(1024, mc, gen);
  if (!quick) single(65536, mc, gen);
  for (std::size_t P : {std::size_t{1024}, std::size_t{16384}})
    for (std::size_t m : {std::size_t{64}, std::size_t{256}, std::size_t{1024}}) {
      if (quick && P * m > 1024 * 256) continue;
      batched(P, m, mc, gen);
    }
  conditioning(quick ? 1024 : 16384, 256, mc, gen);
  return 0;
}
