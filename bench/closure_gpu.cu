// GPU reachability benchmark, one run: transitive closures and boolean products of random DAGs against cuBLAS
// GEMMs with thresholding, the seed-001 byte-per-entry kernel and the CPU.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu_timing.cuh"
#include "tally/gpu/transitive_closure.hpp"

namespace {

namespace gpu = tally::gpu;
using gpu::BitMatrix;
using gpu::cuda::BoolKernel;
using gpu::cuda::ClosureOrder;
using tally::bench::best_ms;
using tally::bench::check;
using tally::bench::event_ms;

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}

// ---- the hardware's integer rate: 32-bit three-input logic ops (LOP3), the packed kernel's arithmetic -------------
__global__ void lop3_chain(unsigned* out, unsigned seed, int iterations) {
  unsigned x[8];
  for (int k = 0; k < 8; ++k) x[k] = seed * (threadIdx.x + 7 * k + 1);
  for (int it = 0; it < iterations; ++it)
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = (x[k] & x[(k + 1) % 8]) ^ x[(k + 3) % 8];  // one LOP3 each
  unsigned r = 0;
  for (int k = 0; k < 8; ++k) r ^= x[k];
  if (r == 0x12345678u) out[0] = r;  // keeps the chain alive
}

double lop3_rate() {
  unsigned* out = nullptr;
  check(cudaMalloc(&out, 4), "cudaMalloc");
  const int blocks = 132 * 64, threads = 256, iterations = 4096;
  const double ms = event_ms([&] { lop3_chain<<<blocks, threads>>>(out, 3u, iterations); }, 3);
  cudaFree(out);
  return double(blocks) * threads * iterations * 8 / (ms * 1e-3);
}

// ---- the 1-bit tensor-core rate: mma.sync m16n8k256 AND + popcount, for the decision on a tensor-core kernel -------
__global__ void bmma_chain(int* out, unsigned seed, int iterations) {
  const unsigned a0 = seed * (threadIdx.x + 1), a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 ^ 0xf0f0f0f0u,
                 b1 = a0 ^ 0x0f0f0f0fu;
  int d[8][4] = {};
  for (int it = 0; it < iterations; ++it)
#pragma unroll
    for (int j = 0; j < 8; ++j)  // eight independent accumulators in flight
      asm volatile(
          "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%0,%1,%2,%3};\n"
          : "+r"(d[j][0]), "+r"(d[j][1]), "+r"(d[j][2]), "+r"(d[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  int r = 0;
  for (int j = 0; j < 8; ++j) r += d[j][0] + d[j][1] + d[j][2] + d[j][3];
  if (r == 0x12345678) out[0] = r;
}

/// AND + popcount bit operations per second (16 x 8 x 256 per warp instruction).
double bmma_rate() {
  int* out = nullptr;
  check(cudaMalloc(&out, 4), "cudaMalloc");
  const int blocks = 132 * 8, threads = 256, iterations = 1024;
  const double ms = event_ms([&] { bmma_chain<<<blocks, threads>>>(out, 3u, iterations); }, 3);
  cudaFree(out);
  return double(blocks) * (threads / 32) * iterations * 8 * (16.0 * 8 * 256) / (ms * 1e-3);
}

// ---- the cuBLAS closure: R <- (R + R R > 0) on 0/1 values of type T, then packed -----------------------------------
__device__ inline float value(float x) { return x; }
__device__ inline float value(__half x) { return __half2float(x); }
template <class T>
__device__ inline T from_float(float x) {
  if constexpr (std::is_same_v<T, float>) return x;
  else return __float2half(x);
}

template <class T>
__global__ void unpack_values(const std::uint64_t* bits, T* r, std::uint64_t n, std::uint64_t words) {
  for (std::uint64_t e = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; e < n * n;
       e += std::uint64_t(gridDim.x) * blockDim.x)
    r[e] = from_float<T>(float((bits[(e / n) * words + (e % n) / 64] >> ((e % n) % 64)) & 1u));
}

/// r = (r != 0 || c > 0), and *changed = 1 where a value turned on.
template <class T>
__global__ void threshold(T* r, const float* c, std::uint64_t count, unsigned* changed) {
  for (std::uint64_t e = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; e < count;
       e += std::uint64_t(gridDim.x) * blockDim.x) {
    const bool before = value(r[e]) != 0.0f, after = before || c[e] > 0.5f;
    if (after != before) {
      r[e] = from_float<T>(1.0f);
      *changed = 1;
    }
  }
}

template <class T>
__global__ void pack_values(const T* r, std::uint64_t* bits, std::uint64_t n, std::uint64_t words) {
  for (std::uint64_t x = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; x < n * words;
       x += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t i = x / words, first = 64 * (x % words);
    std::uint64_t v = 0;
    for (std::uint64_t b = 0; b < 64 && first + b < n; ++b)
      if (value(r[i * n + first + b]) != 0.0f) v |= std::uint64_t{1} << b;
    bits[x] = v;
  }
}

enum class Gemm { fp32, tf32, fp16 };
const char* gemm_name(Gemm g) {
  return g == Gemm::fp32 ? "cuBLAS SGEMM (FP32)" : g == Gemm::tf32 ? "cuBLAS GEMM, TF32 tensor cores"
                                                                    : "cuBLAS GEMM, FP16 in, FP32 accumulate";
}

/// C = R R on the device (row-major R: the column-major product R^T R^T = (R R)^T, read row-major, is R R).
template <class T>
void gemm(cublasHandle_t h, Gemm g, const T* r, float* c, int n) {
  const float one = 1.0f, zero = 0.0f;
  if (g == Gemm::fp32)
    check_blas(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, reinterpret_cast<const float*>(r), n,
                           reinterpret_cast<const float*>(r), n, &zero, c, n), "cublasSgemm");
  else
    check_blas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, r, g == Gemm::fp16 ? CUDA_R_16F : CUDA_R_32F,
                            n, r, g == Gemm::fp16 ? CUDA_R_16F : CUDA_R_32F, n, &zero, c, CUDA_R_32F, n,
                            g == Gemm::fp16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

/// A boolean matrix's closure (or, with max_squarings = 1 and `single`, one product) through GEMMs, host to host.
template <class T>
BitMatrix gemm_closure(cublasHandle_t h, Gemm g, const BitMatrix& a, int* squarings, bool single = false) {
  const std::uint64_t n = a.size(), words = a.words_per_row();
  std::uint64_t* bits = nullptr;
  T* r = nullptr;
  float* c = nullptr;
  unsigned* flag = nullptr;
  check(cudaMalloc(&bits, n * words * 8), "cudaMalloc");
  check(cudaMalloc(&r, n * n * sizeof(T)), "cudaMalloc");
  check(cudaMalloc(&c, n * n * 4), "cudaMalloc");
  check(cudaMalloc(&flag, 4), "cudaMalloc");
  check(cudaMemcpy(bits, a.words().data(), n * words * 8, cudaMemcpyHostToDevice), "upload");
  unpack_values<<<4096, 256>>>(bits, r, n, words);
  int bound = 0;
  while ((std::uint64_t{1} << bound) < n) ++bound;
  if (single) bound = 1;
  for (*squarings = 0; *squarings < bound;) {
    gemm(h, g, r, c, static_cast<int>(n));
    if (single) {  // the product itself, not R | R R
      cudaMemset(r, 0, n * n * sizeof(T));
      threshold<<<4096, 256>>>(r, c, n * n, flag);
      ++*squarings;
      break;
    }
    check(cudaMemset(flag, 0, 4), "cudaMemset");
    threshold<<<4096, 256>>>(r, c, n * n, flag);
    ++*squarings;
    unsigned changed = 0;
    check(cudaMemcpy(&changed, flag, 4, cudaMemcpyDeviceToHost), "flag");
    if (!changed) break;
  }
  pack_values<<<4096, 256>>>(r, bits, n, words);
  std::vector<std::uint64_t> out(n * words);
  check(cudaMemcpy(out.data(), bits, n * words * 8, cudaMemcpyDeviceToHost), "download");
  cudaFree(bits);
  cudaFree(r);
  cudaFree(c);
  cudaFree(flag);
  return BitMatrix(n, std::move(out));
}

BitMatrix run_gemm(cublasHandle_t h, Gemm g, const BitMatrix& a, int* squarings, bool single = false) {
  return g == Gemm::fp16 ? gemm_closure<__half>(h, g, a, squarings, single)
                         : gemm_closure<float>(h, g, a, squarings, single);
}

// ---- inputs ---------------------------------------------------------------------------------------------------------
/// Expected out-degree `degree`, edges only forward in a random order: the node at position p gets
/// Binomial(N - 1 - p, min(1, degree / (N - 1 - p))) successors, distinct and uniform among the later positions.
BitMatrix random_dag(std::size_t n, double degree, std::mt19937_64& gen, std::size_t* longest) {
  std::vector<std::size_t> label(n);
  for (std::size_t i = 0; i < n; ++i) label[i] = i;
  std::shuffle(label.begin(), label.end(), gen);
  BitMatrix m(n);
  std::vector<std::size_t> depth(n, 0);  // the longest path ending at each position
  *longest = 0;
  std::vector<std::size_t> targets;
  for (std::size_t p = 0; p + 1 < n; ++p) {
    const std::size_t later = n - 1 - p;
    std::binomial_distribution<std::size_t> count(later, std::min(1.0, degree / double(later)));
    std::uniform_int_distribution<std::size_t> pick(p + 1, n - 1);
    const std::size_t k = count(gen);
    targets.clear();
    while (targets.size() < k) {
      const std::size_t q = pick(gen);
      if (std::find(targets.begin(), targets.end(), q) == targets.end()) targets.push_back(q);
    }
    for (const auto q : targets) {
      m.set(label[p], label[q]);
      depth[q] = std::max(depth[q], depth[p] + 1);
      *longest = std::max(*longest, depth[q]);
    }
  }
  return m;
}

std::string ms_or(double ms) { return ms < 0 ? std::string("not run") : std::to_string(ms).substr(0, 8); }
std::string ratio(double ms, double base) {
  if (ms < 0) return "";
  char s[32];
  std::snprintf(s, sizeof s, "%.1fx", ms / base);
  return s;
}

void closure(cublasHandle_t h, std::size_t n, bool quick) {
  std::mt19937_64 gen(2026 + n);
  std::size_t longest = 0;
  const BitMatrix a = random_dag(n, 8.0, gen, &longest);
  const int reps = n <= 4096 ? 3 : 2;
  struct Row {
    std::string method;
    int squarings;
    double ms;
    bool agrees;
  };
  std::vector<Row> rows;
  BitMatrix want;
  const double t_cpu = best_ms([&] { want = gpu::cpu::transitive_closure(a); }, 1);
  std::printf("\n## Transitive closure: N = %zu, a random DAG of expected out-degree 8 (edges forward in a random "
              "order): %lld edges, longest path %zu, %lld reachable pairs\n\n",
              n, static_cast<long long>(a.count()), longest, static_cast<long long>(want.count()));
  for (const auto kernel : {BoolKernel::tensor_b1, BoolKernel::packed})
    for (const auto order : {ClosureOrder::topological, ClosureOrder::as_given}) {
      BitMatrix r;
      int s = 0;
      const double ms = best_ms([&] { r = gpu::cuda::transitive_closure(a, kernel, order, &s); }, reps);
      rows.push_back({std::string(kernel == BoolKernel::tensor_b1 ? "tally tensor cores (b1 MMA)"
                                                                  : "tally packed (LOP3)") +
                          (order == ClosureOrder::topological ? ", topological order" : ", order as given"),
                      s, ms, r == want});
    }
  {
    BitMatrix r;
    const double ms = best_ms([&] { r = gpu::cuda::closure_by_levels(a); }, reps);
    rows.push_back({"tally level by level (`cuda::closure_by_levels`)", 0, ms, r == want});
  }
  for (const Gemm g : {Gemm::fp32, Gemm::tf32, Gemm::fp16}) {
    BitMatrix r;
    int s = 0;
    const double ms = best_ms([&] { r = run_gemm(h, g, a, &s); }, g == Gemm::fp32 && n > 4096 ? 1 : reps);
    rows.push_back({std::string(gemm_name(g)) + " + threshold", s, ms, r == want});
  }
  for (const auto order : {ClosureOrder::as_given, ClosureOrder::topological}) {
    if (quick && n > 4096) break;
    BitMatrix r;
    int s = 0;
    const double ms = best_ms([&] { r = gpu::cuda::transitive_closure(a, BoolKernel::byte_per_entry, order, &s); }, 1);
    rows.push_back({order == ClosureOrder::as_given ? "seed-001 byte per entry, order as given"
                                                    : "byte per entry, topological order",
                    s, ms, r == want});
  }
  rows.push_back({"CPU reverse topological order, 1 core", 0, t_cpu, true});
  // Warshall: O(N^3 / 64) word operations; run when the estimate from N = 4096 (about 1/64 of the work) is <= 60 s
  static double warshall_4096 = -1;
  double t_warshall = -1;
  if (n <= 4096 || (warshall_4096 > 0 && warshall_4096 * double(n * n * n) / (4096.0 * 4096 * 4096) <= 60e3)) {
    BitMatrix r;
    t_warshall = best_ms([&] { r = gpu::cpu::warshall_closure(a); }, 1);
    if (n == 4096) warshall_4096 = t_warshall;
    rows.push_back({"CPU Warshall, 1 core", 0, t_warshall, r == want});
  } else {
    rows.push_back({"CPU Warshall, 1 core (estimated > 60 s)", 0, -1, true});
  }
  std::printf("| method (host to host, packed bits in and out) | squarings | time (ms) | time / tally |\n");
  std::printf("|---|---:|---:|---:|\n");
  bool agree = true;
  for (const auto& row : rows) {
    agree = agree && row.agrees;
    std::printf("| %s | %s | %s | %s |\n", row.method.c_str(), row.squarings ? std::to_string(row.squarings).c_str() : "",
                ms_or(row.ms).c_str(), ratio(row.ms, rows[0].ms).c_str());
  }
  std::printf("\nagree: %s\n", agree ? "yes" : "NO");
  {  // where the host-to-host time of the first row goes
    const std::uint64_t words = a.words().size();
    std::uint64_t* d = nullptr;
    check(cudaMalloc(&d, words * 8), "cudaMalloc");
    std::vector<std::uint64_t> back(words);
    const double up = best_ms([&] {
      check(cudaMemcpy(d, a.words().data(), words * 8, cudaMemcpyHostToDevice), "upload");
    }, 3);
    const double down = best_ms([&] {
      check(cudaMemcpy(back.data(), d, words * 8, cudaMemcpyDeviceToHost), "download");
    }, 3);
    cudaFree(d);
    const double order_ms = best_ms([&] { (void)gpu::topological_order(a); }, 3);
    const double fresh_ms = best_ms([&] {
      std::vector<std::uint64_t> fresh(words);  // what a result costs the host before any copy: zeroed fresh pages
      check(fresh[words / 2] == 0 ? cudaSuccess : cudaErrorUnknown, "fresh");
    }, 3);
    const double zero_matrix_ms = best_ms([&] {
      const BitMatrix zero(n);
      check(zero.words()[words / 2] == 0 ? cudaSuccess : cudaErrorUnknown, "zero");
    }, 3);
    std::printf("\nparts: pageable copy of the %.1f MiB matrix to the device %.2f ms, back %.2f ms; a fresh zeroed "
                "host vector of that size %.2f ms (BitMatrix(n), on huge pages where offered: %.2f ms); "
                "topological order on the host %.2f ms\n",
                words * 8 / 1048576.0, up, down, fresh_ms, zero_matrix_ms, order_ms);
    // the closure on device memory alone (cuda::transitive_closure_device, order as given), from the same input
    std::uint64_t *pristine = nullptr, *r = nullptr;
    check(cudaMalloc(&pristine, words * 8), "cudaMalloc");
    check(cudaMalloc(&r, words * 8), "cudaMalloc");
    check(cudaMemcpy(pristine, a.words().data(), words * 8, cudaMemcpyHostToDevice), "upload");
    std::size_t temp_bytes = 0;
    gpu::cuda::transitive_closure_device(nullptr, temp_bytes, r, n);
    void* temp = nullptr;
    check(cudaMalloc(&temp, temp_bytes), "cudaMalloc");
    for (const auto kernel : {BoolKernel::tensor_b1, BoolKernel::packed}) {
      double best = 1e30;
      int s = 0;
      for (int rep = 0; rep < 3; ++rep) {
        check(cudaMemcpy(r, pristine, words * 8, cudaMemcpyDeviceToDevice), "restore");
        check(cudaDeviceSynchronize(), "sync");
        best = std::min(best, best_ms([&] { gpu::cuda::transitive_closure_device(temp, temp_bytes, r, n, &s, kernel); },
                                      1));
      }
      std::vector<std::uint64_t> host(words);
      check(cudaMemcpy(host.data(), r, words * 8, cudaMemcpyDeviceToHost), "download");
      std::printf("device memory in and out (`transitive_closure_device`, %s): %.2f ms, %d squarings, agrees: %s\n",
                  kernel == BoolKernel::tensor_b1 ? "tensor cores" : "packed", best, s,
                  BitMatrix(n, std::move(host)) == want ? "yes" : "NO");
    }
    cudaFree(temp);
    cudaFree(r);
    cudaFree(pristine);
  }
  if (n == 16384)
    std::printf("target: N = 16384 closure in <= 20 ms: %s (%.2f ms)\n", rows[0].ms <= 20 ? "met" : "missed",
                rows[0].ms);

  // one product: the adjacency squared (sparse: few cells true, most scan every word) and the closure squared
  std::printf("\n### One boolean product, N = %zu\n\n", n);
  std::printf("| operand | tally tensor-core kernel (device) | tally packed kernel (device) | tally packed, host to host "
              "| byte per entry, host to host | SGEMM + threshold | TF32 GEMM + threshold | FP16 GEMM + threshold "
              "| CPU 1 core | packed kernel: word pairs / s | tensor kernel: bit operations / s |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const BitMatrix* m : {&a, static_cast<const BitMatrix*>(&want)}) {
    const std::uint64_t words = m->words().size();
    std::uint64_t *d = nullptr, *dt = nullptr, *dc = nullptr;
    check(cudaMalloc(&d, words * 8), "cudaMalloc");
    check(cudaMalloc(&dt, words * 8), "cudaMalloc");
    check(cudaMalloc(&dc, words * 8), "cudaMalloc");
    check(cudaMemcpy(d, m->words().data(), words * 8, cudaMemcpyHostToDevice), "upload");
    gpu::cuda::transpose_device(d, dt, n);
    const double t_tensor =
        event_ms([&] { gpu::cuda::boolean_product_device(d, dt, dc, n, nullptr, BoolKernel::tensor_b1); }, 5);
    std::vector<std::uint64_t> host(words);
    check(cudaMemcpy(host.data(), dc, words * 8, cudaMemcpyDeviceToHost), "download");
    const BitMatrix tensor_result(n, std::move(host));
    host.assign(words, 0);
    const double t_kernel =
        event_ms([&] { gpu::cuda::boolean_product_device(d, dt, dc, n, nullptr, BoolKernel::packed); }, 5);
    check(cudaMemcpy(host.data(), dc, words * 8, cudaMemcpyDeviceToHost), "download");
    const BitMatrix kernel_result(n, std::move(host));
    cudaFree(d);
    cudaFree(dt);
    cudaFree(dc);
    BitMatrix packed, bytes, cpu;
    const double t_packed = best_ms([&] { packed = gpu::cuda::boolean_product(*m, *m, BoolKernel::packed); }, 3);
    const double t_bytes = quick && n > 4096 ? -1
        : best_ms([&] { bytes = gpu::cuda::boolean_product(*m, *m, BoolKernel::byte_per_entry); }, 1);
    double t_gemm[3];
    bool agree_product = kernel_result == packed && tensor_result == packed && (t_bytes < 0 || bytes == packed);
    for (const Gemm g : {Gemm::fp32, Gemm::tf32, Gemm::fp16}) {
      BitMatrix r;
      int s = 0;
      t_gemm[static_cast<int>(g)] = best_ms([&] { r = run_gemm(h, g, *m, &s, true); }, 2);
      agree_product = agree_product && r == packed;
    }
    // the CPU's work is nnz(operand) row ORs of N / 64 words: run it when that is below 3e10 words (about 30 s)
    const double cpu_words = double(m->count()) * double(m->words_per_row());
    const double t_cpu_product = cpu_words > 3e10 ? -1 : best_ms([&] { cpu = gpu::cpu::boolean_product(*m, *m); }, 1);
    if (t_cpu_product >= 0) agree_product = agree_product && cpu == packed;
    // the work of a product without early exit: N^2 cells x N / 64 word pairs
    const double pairs = double(n) * double(n) * double(m->words_per_row());
    std::printf("| %s | %.3f | %.3f | %.2f | %s | %.2f | %.2f | %.2f | %s | %.3g (no early exit) | %.3g (N^3 / time) |\n",
                m == &a ? "adjacency A (A A)" : "closure R (R R)", t_tensor, t_kernel, t_packed, ms_or(t_bytes).c_str(),
                t_gemm[0], t_gemm[1], t_gemm[2], ms_or(t_cpu_product).c_str(), pairs / (t_kernel * 1e-3),
                double(n) * double(n) * double(n) / (t_tensor * 1e-3));
    std::printf("<!-- N = %zu, %s: every method agrees: %s -->\n", n, m == &a ? "A A" : "R R",
                agree_product ? "yes" : "NO");
  }
}

/// Where the device starts to pay: closures (both orders) and products host to host against the CPU, for the
/// dispatch thresholds cuda_min_closure_nodes, cuda_min_product_nodes and topological_min_nodes.
void crossover() {
  std::printf("\n## Crossover: the CPU against the device, host to host (random DAGs of out-degree 8; products of "
              "random matrices of density 8 / N)\n\n");
  std::printf("| N | CPU closure, reverse topological (ms) | device closure, tensor cores, order as given | "
              "topological order | CPU product | device product, tensor cores |\n|---:|---:|---:|---:|---:|---:|\n");
  for (const std::size_t n : {128, 256, 512, 1024, 2048, 4096, 8192}) {
    std::mt19937_64 gen(7 + n);
    std::size_t longest = 0;
    const BitMatrix a = random_dag(n, 8.0, gen, &longest);
    BitMatrix want, given, topo, p_cpu, p_gpu;
    const double cpu = best_ms([&] { want = gpu::cpu::transitive_closure(a); }, 5);
    const double t_given =
        best_ms([&] { given = gpu::cuda::transitive_closure(a, BoolKernel::tensor_b1, ClosureOrder::as_given); }, 5);
    const double t_topo =
        best_ms([&] { topo = gpu::cuda::transitive_closure(a, BoolKernel::tensor_b1, ClosureOrder::topological); }, 5);
    const double cpu_product = best_ms([&] { p_cpu = gpu::cpu::boolean_product(a, a); }, 5);
    const double gpu_product = best_ms([&] { p_gpu = gpu::cuda::boolean_product(a, a, BoolKernel::tensor_b1); }, 5);
    std::printf("| %zu | %.3f | %.3f | %.3f | %.3f | %.3f |%s\n", n, cpu, t_given, t_topo, cpu_product, gpu_product,
                want == given && want == topo && p_cpu == p_gpu ? "" : " (DISAGREE)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (argc > 2 && std::strcmp(argv[1], "--profile") == 0) {  // one default closure, host to host, for a profiler
    std::mt19937_64 gen(2026 + std::stoul(argv[2]));
    std::size_t longest = 0;
    const BitMatrix a = random_dag(std::stoul(argv[2]), 8.0, gen, &longest);
    for (const auto order : {ClosureOrder::topological, ClosureOrder::as_given}) {
      int s = 0;
      const double ms = best_ms([&] { (void)gpu::cuda::transitive_closure(a, BoolKernel::tensor_b1, order, &s); }, 1);
      std::printf("closure, %s: %.2f ms, %d squarings\n", order == ClosureOrder::topological ? "topological" : "as given",
                  ms, s);
    }
    return 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const double bandwidth = tally::bench::copy_bandwidth(), lop3 = lop3_rate(), bmma = bmma_rate();
  std::printf("# tally reachability benchmark on %s (%d SMs)\n\ndevice-copy bandwidth %.0f GB/s (read + write); "
              "measured %.2f T LOP3/s (32-bit three-input logic ops: the packed kernel needs 2 per 64-bit word pair, "
              "so at most %.1f T AND-OR bit operations/s); 1-bit tensor cores (mma.sync m16n8k256 and.popc): %.1f T "
              "AND-popcount bit operations/s\n",
              prop.name, prop.multiProcessorCount, bandwidth / 1e9, lop3 / 1e12, lop3 * 32 / 1e12, bmma / 1e12);
  cublasHandle_t h;
  check_blas(cublasCreate(&h), "cublasCreate");
  crossover();
  if (argc > 1 && std::strcmp(argv[1], "--crossover") == 0) return 0;
  for (const std::size_t n : {std::size_t{4096}, std::size_t{16384}}) {
    if (quick && n > 4096) break;
    closure(h, n, quick);
  }
  cublasDestroy(h);
  return 0;
}
