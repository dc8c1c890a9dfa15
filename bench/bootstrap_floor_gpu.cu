// The population model's bootstrap filter step written by hand for this one model, as fast as a few fused kernels
// make it: what tally's general step is measured against (bench/RESULTS.md, "Populations at scale").
// Usage: bench_bootstrap_floor_gpu [P ...]   (a plain CUDA program; P = 65536 1048576 4194304 by default)
//
// The model of models/population.cpp and its data (20 seasons, data seed 7): N_0 ~ Poisson(50); S_t ~ Binomial(N_{t-1},
// 0.8), I_t ~ Poisson(10), N_t = S_t + I_t; y_t ~ Binomial(N_t, 0.6) observed. A step, as the example's bootstrap
// filter takes it: draw S and I and add, add log Binomial(y_t; N_t, 0.6) to each log-weight, summarize N_t under the
// weights (mean, 5 % and 95 % quantiles by a histogram of the values, ESS), and resample (systematic) when the ESS is
// below P / 2, the evidence gaining log of the mean weight then and at the last step. Kernels:
//   propagate: one thread a particle (grid-stride): both draws by inversion (Philox uniforms), the sum, the log mass;
//              the largest log-weight by one atomic a block;
//   summarize: w_i = e^{l_i - M}; the sums and a shared-memory histogram of the weights by value, folded into global
//              ones by atomics; the last block to finish finds the quantiles, the ESS, the decision and the
//              evidence, and clears the sums for the next step;
//   resample:  (each returns at once unless the step resamples) tile sums, their scan in one block, each particle's
//              copies written from its tile's scan, the values copied back and the log-weights cleared.
// Four ways to run a step: (a) as tally runs it: the summary copied back and the host waiting for it every step,
// the host deciding whether to launch the resampling; (b) the decision on the device, all kernels launched every
// step, no wait until the end; (c) as (b), one step captured once as a CUDA graph and replayed; (d) as (c), the
// resampling's kernels the body of a conditional (IF) node of the graph, set by the summary's last block. The same
// draws in all four (the same Philox counters); (b) to (d) keep every step's summary on the device until the end.
#include <cuda_runtime.h>
#include <curand_kernel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int seasons = 20;
constexpr int observed[seasons] = {36, 28, 29, 29, 18, 24, 25, 22, 25, 27, 37, 24, 24, 27, 32, 32, 35, 30, 33, 20};
constexpr double lambda0 = 50, phi = 0.8, iota = 10, detect = 0.6;
constexpr int threads = 256;
constexpr int bins = 1024;        // values 0 .. 1023 (the model's counts stay below 200; larger ones are flagged)
constexpr int tile_items = 8;     // particles a thread of the resampling's tiles
constexpr int tile = threads * tile_items;
constexpr unsigned long long seed = 7;

/// What a step leaves on the device; (b) and (c) keep one a step.
struct StepResult {
  double max_log_weight, total, mean, ess, log_evidence, u;
  int lo, hi, resampled, overflow;
};
/// The running sums of a step, cleared by its last summarize block.
struct Sums {
  unsigned long long top_key;  // max log-weight as an ordered integer
  double total, squares, weighted;
  unsigned int done, overflow;
  int step;
  double log_evidence;
};

__device__ unsigned long long ordered(double x) {
  const auto u = static_cast<unsigned long long>(__double_as_longlong(x));
  return (u >> 63) != 0 ? ~u : u | 0x8000000000000000ull;
}
__device__ double from_ordered(unsigned long long k) {
  const unsigned long long u = (k >> 63) != 0 ? k & 0x7fffffffffffffffull : ~k;
  return __longlong_as_double(static_cast<long long>(u));
}

/// Count k ~ Poisson(rate) by inversion from 0 with uniform u.
__device__ int poisson_inverse(double rate, double u) {
  double p = exp(-rate), c = p;
  int k = 0;
  while (u > c && k < 10000) {
    ++k;
    p *= rate / k;
    c += p;
  }
  return k;
}
/// k ~ Binomial(n, q) by inversion from 0 (q <= 1/2 keeps the walk short) with uniform u.
__device__ int binomial_inverse(int n, double q, double u) {
  const double r = q / (1 - q);
  double p = pow(1 - q, n), c = p;
  int k = 0;
  while (u > c && k < n) {
    p *= r * (n - k) / (k + 1);
    ++k;
    c += p;
  }
  return k;
}

__device__ double block_max(double x, double* shared) {
  for (int d = 16; d >= 1; d /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, d));
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = x;
  __syncthreads();
  x = shared[0];
  for (int w = 1; w < threads / 32; ++w) x = fmax(x, shared[w]);
  __syncthreads();
  return x;
}
__device__ double block_sum(double x, double* shared) {
  for (int d = 16; d >= 1; d /= 2) x += __shfl_xor_sync(0xffffffffu, x, d);
  if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = x;
  __syncthreads();
  x = 0;
  for (int w = 0; w < threads / 32; ++w) x += shared[w];
  __syncthreads();
  return x;
}

__global__ void initialize(int* n, double* l, int p, Sums* sums) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) *sums = Sums{0, 0, 0, 0, 0, 0, 0, 0};
  if (i >= p) return;
  curandStatePhilox4_32_10_t s;
  curand_init(seed, i, 0, &s);
  n[i] = poisson_inverse(lambda0, curand_uniform_double(&s));
  l[i] = 0;
}

__global__ void propagate(int* n, double* l, int p, const int* y, Sums* sums) {
  __shared__ double shared[threads / 32];
  const int t = sums->step;
  double top = -INFINITY;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p; i += gridDim.x * blockDim.x) {
    int x = n[i];
    if (t > 0) {
      curandStatePhilox4_32_10_t s;
      curand_init(seed, i, 4ull * t, &s);
      const double u1 = curand_uniform_double(&s), u2 = curand_uniform_double(&s);
      x = x - binomial_inverse(x, 1 - phi, u1) + poisson_inverse(iota, u2);
      n[i] = x;
    }
    const int k = y[t];
    const double mass = k > x ? -INFINITY
                              : lgamma(x + 1.0) - lgamma(k + 1.0) - lgamma(x - k + 1.0) + k * log(detect) +
                                    (x - k) * log1p(-detect);
    const double li = l[i] + mass;
    l[i] = li;
    top = fmax(top, li);
  }
  top = block_max(top, shared);
  if (threadIdx.x == 0 && top > -INFINITY) atomicMax(&sums->top_key, ordered(top));
}

__global__ void summarize(const int* n, const double* l, int p, double* global_bins, Sums* sums, StepResult* results,
                          int keep_all, cudaGraphConditionalHandle resampling, int set_resampling) {
  __shared__ double hist[bins];
  __shared__ double shared[threads / 32];
  __shared__ bool last;
  for (int b = threadIdx.x; b < bins; b += threads) hist[b] = 0;
  __syncthreads();
  const unsigned long long key = sums->top_key;
  const double m = key == 0 ? 0.0 : from_ordered(key);  // every weight 0: the unweighted summary
  double total = 0, squares = 0, weighted = 0;
  unsigned int overflow = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p; i += gridDim.x * blockDim.x) {
    const double w = key == 0 ? 1.0 : exp(l[i] - m);
    const int x = n[i];
    total += w;
    squares += w * w;
    weighted += w * x;
    if (x >= 0 && x < bins) atomicAdd(&hist[x], w);
    else overflow = 1;
  }
  total = block_sum(total, shared);
  squares = block_sum(squares, shared);
  weighted = block_sum(weighted, shared);
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += threads)
    if (hist[b] > 0) atomicAdd(&global_bins[b], hist[b]);
  if (overflow) atomicOr(&sums->overflow, 1u);
  if (threadIdx.x == 0) {
    atomicAdd(&sums->total, total);
    atomicAdd(&sums->squares, squares);
    atomicAdd(&sums->weighted, weighted);
    __threadfence();
    last = atomicAdd(&sums->done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // the last block: every other block's atomics are visible (they fenced before counting themselves done)
  __threadfence();
  const int t = sums->step;
  const double w_total = atomicAdd(&sums->total, 0.0), w_squares = atomicAdd(&sums->squares, 0.0);
  const double w_weighted = atomicAdd(&sums->weighted, 0.0);
  // the quantiles: each thread scans its 4 bins, then the threads' totals in order (one thread: 256 adds)
  constexpr int per = bins / threads;
  __shared__ double part[threads];
  double own = 0;
  for (int j = 0; j < per; ++j) own += atomicAdd(&global_bins[threadIdx.x * per + j], 0.0);
  part[threadIdx.x] = own;
  __syncthreads();
  __shared__ int q_lo, q_hi;
  const volatile double* volatile_bins = global_bins;  // written by other blocks' atomics: read from L2
  // the first bin of thread b's where the cumulative weight, c before them, reaches target
  auto within = [&](int b, double c, double target) {
    for (int j = 0; j < per; ++j) {
      c += volatile_bins[b * per + j];
      if (c >= target) return b * per + j;
    }
    return b * per + per - 1;
  };
  if (threadIdx.x == 0) {
    q_lo = bins - 1, q_hi = bins - 1;
    const double lo_target = 0.05 * w_total, hi_target = 0.95 * w_total;
    double c = 0;
    bool found_lo = false;
    for (int b = 0; b < threads; ++b) {
      if (!found_lo && c + part[b] >= lo_target) q_lo = within(b, c, lo_target), found_lo = true;
      if (c + part[b] >= hi_target) {
        q_hi = within(b, c, hi_target);
        break;
      }
      c += part[b];
    }
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += threads) global_bins[b] = 0;
  if (threadIdx.x == 0) {
    StepResult r{};
    r.max_log_weight = m;
    r.total = w_total;
    r.mean = w_weighted / w_total;
    r.ess = w_total * w_total / w_squares;
    r.lo = q_lo;
    r.hi = q_hi;
    r.overflow = sums->overflow;
    const bool final_step = t == seasons - 1;
    r.resampled = !final_step && r.ess < 0.5 * p;
    double evidence = sums->log_evidence;
    if (r.resampled || final_step) evidence += m + log(w_total / p);
    r.log_evidence = evidence;
    curandStatePhilox4_32_10_t s;
    curand_init(seed + 1, 0, 4ull * t, &s);
    r.u = curand_uniform_double(&s);
    if (set_resampling) cudaGraphSetConditional(resampling, r.resampled);  // (d): the graph's IF node
    results[keep_all ? t : 0] = r;
    results[seasons] = r;  // the current step's, for the resampling kernels
    *sums = Sums{0, 0, 0, 0, 0, 0, t + 1, evidence};
  }
}

/// Resampling, pass 1: each tile's sum of weights (tile order).
__global__ void tile_sums(const double* l, int p, const StepResult* results, double* sums_out) {
  __shared__ double shared[threads / 32];
  const StepResult& r = results[seasons];
  if (!r.resampled) return;
  double s = 0;
  for (int j = 0; j < tile_items; ++j) {
    const int i = blockIdx.x * tile + threadIdx.x * tile_items + j;
    if (i < p) s += exp(l[i] - r.max_log_weight);
  }
  s = block_sum(s, shared);
  if (threadIdx.x == 0) sums_out[blockIdx.x] = s;
}
/// Pass 2, one block: the tiles' exclusive starts.
__global__ void scan_tiles(int tiles, const StepResult* results, double* sums_io) {
  __shared__ double part[threads];
  if (!results[seasons].resampled) return;
  const int per = (tiles + threads - 1) / threads;
  double own = 0;
  for (int j = 0; j < per; ++j) {
    const int k = threadIdx.x * per + j;
    if (k < tiles) own += sums_io[k];
  }
  part[threadIdx.x] = own;
  __syncthreads();
  if (threadIdx.x == 0) {
    double c = 0;
    for (int b = 0; b < threads; ++b) {
      const double v = part[b];
      part[b] = c;
      c += v;
    }
  }
  __syncthreads();
  double c = part[threadIdx.x];
  for (int j = 0; j < per; ++j) {
    const int k = threadIdx.x * per + j;
    if (k < tiles) {
      const double v = sums_io[k];
      sums_io[k] = c;
      c += v;
    }
  }
}
/// Pass 3: particle i takes the positions k with C_{i-1} <= (k + u) W / P < C_i, writing its value there.
__global__ void write_copies(const int* n, const double* l, int p, const StepResult* results, const double* starts,
                             int* out) {
  __shared__ double shared[threads];
  const StepResult& r = results[seasons];
  if (!r.resampled) return;
  double w[tile_items], own = 0;
  const int first = blockIdx.x * tile + threadIdx.x * tile_items;
  for (int j = 0; j < tile_items; ++j) {
    w[j] = first + j < p ? exp(l[first + j] - r.max_log_weight) : 0.0;
    own += w[j];
  }
  shared[threadIdx.x] = own;  // a block scan of the threads' sums, by one thread (latency is not the point here)
  __syncthreads();
  if (threadIdx.x == 0) {
    double c = starts[blockIdx.x];
    for (int b = 0; b < threads; ++b) {
      const double v = shared[b];
      shared[b] = c;
      c += v;
    }
  }
  __syncthreads();
  const double scale = p / r.total;
  double c = shared[threadIdx.x];
  for (int j = 0; j < tile_items; ++j) {
    const double before = c;
    c += w[j];
    long long k0 = static_cast<long long>(ceil(before * scale - r.u));
    long long k1 = static_cast<long long>(ceil(c * scale - r.u));
    k0 = k0 < 0 ? 0 : k0;
    k1 = k1 > p ? p : k1;
    for (long long k = k0; k < k1; ++k) out[k] = n[first + j];
  }
}
/// Pass 4: the copies become the values, the log-weights 0.
__global__ void take_copies(int* n, double* l, int p, const StepResult* results, const int* copies) {
  if (!results[seasons].resampled) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p; i += gridDim.x * blockDim.x) {
    n[i] = copies[i];
    l[i] = 0;
  }
}

struct Population {
  int p = 0, grid = 0, tiles = 0;
  int *n = nullptr, *copies = nullptr, *y = nullptr;
  double *l = nullptr, *bins_ = nullptr, *tile_sum = nullptr;
  Sums* sums = nullptr;
  StepResult* results = nullptr;
  StepResult* host = nullptr;  // pinned: seasons + 1
  cudaStream_t s = nullptr;

  explicit Population(int particles) : p(particles) {
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    grid = std::min((p + threads - 1) / threads, sms * 8);
    tiles = (p + tile - 1) / tile;
    cudaMalloc(&n, sizeof(int) * p);
    cudaMalloc(&copies, sizeof(int) * p);
    cudaMalloc(&l, sizeof(double) * p);
    cudaMalloc(&y, sizeof(observed));
    cudaMalloc(&bins_, sizeof(double) * bins);
    cudaMalloc(&tile_sum, sizeof(double) * tiles);
    cudaMalloc(&sums, sizeof(Sums));
    cudaMalloc(&results, sizeof(StepResult) * (seasons + 1));
    cudaMallocHost(&host, sizeof(StepResult) * (seasons + 1));
    cudaMemcpy(y, observed, sizeof(observed), cudaMemcpyHostToDevice);
    cudaMemset(bins_, 0, sizeof(double) * bins);
    cudaMemset(copies, 0, sizeof(int) * p);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  ~Population() {
    for (void* q : {(void*)n, (void*)copies, (void*)l, (void*)y, (void*)bins_, (void*)tile_sum, (void*)sums,
                    (void*)results})
      cudaFree(q);
    cudaFreeHost(host);
    cudaStreamDestroy(s);
  }
  void start() { initialize<<<(p + threads - 1) / threads, threads, 0, s>>>(n, l, p, sums); }
  void weigh(int keep_all, cudaGraphConditionalHandle resampling = 0, int set_resampling = 0) {
    propagate<<<grid, threads, 0, s>>>(n, l, p, y, sums);
    summarize<<<grid, threads, 0, s>>>(n, l, p, bins_, sums, results, keep_all, resampling, set_resampling);
  }
  void resample() {
    tile_sums<<<tiles, threads, 0, s>>>(l, p, results, tile_sum);
    scan_tiles<<<1, threads, 0, s>>>(tiles, results, tile_sum);
    write_copies<<<tiles, threads, 0, s>>>(n, l, p, results, tile_sum, copies);
    take_copies<<<grid, threads, 0, s>>>(n, l, p, results, copies);
  }
};

/// Stops the program with the call's error (the graph calls below return theirs rather than leave it for later).
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// One filter run of `seasons` steps; returns the seconds of its steps (after the start) and the last result.
template <class Step>
double run(Population& pop, Step step, StepResult& last) {
  pop.start();
  cudaStreamSynchronize(pop.s);
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < seasons; ++t) step(t);
  cudaMemcpyAsync(pop.host, pop.results, sizeof(StepResult) * (seasons + 1), cudaMemcpyDeviceToHost, pop.s);
  cudaStreamSynchronize(pop.s);
  const double seconds = seconds_since(t0);
  last = pop.host[seasons];
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int k = 1; k < argc; ++k) sizes.push_back(std::atoi(argv[k]));
  if (sizes.empty()) sizes = {65536, 1048576, 4194304};
  constexpr int runs = 30;
  std::printf("the population model's bootstrap step by hand (%d seasons, medians of %d runs after one)\n", seasons,
              runs);
  std::printf("%10s  %-46s %10s %14s\n", "P", "step", "us a step", "log-evidence");
  for (const int p : sizes) {
    Population pop(p);
    StepResult last{};
    auto median = [&](auto&& one_run) {
      std::vector<double> v;
      for (int r = 0; r <= runs; ++r) v.push_back(one_run());
      v.erase(v.begin());
      std::sort(v.begin(), v.end());
      return v[v.size() / 2] / seasons * 1e6;
    };
    // (a) as tally: the summary read every step, the host deciding the resampling
    const double a = median([&] {
      return run(pop, [&](int) {
        pop.weigh(0);
        cudaMemcpyAsync(pop.host + seasons, pop.results + seasons, sizeof(StepResult), cudaMemcpyDeviceToHost, pop.s);
        cudaStreamSynchronize(pop.s);
        if (pop.host[seasons].resampled) pop.resample();
      }, last);
    });
    std::printf("%10d  %-46s %10.2f %14.6f%s\n", p, "(a) summary read each step, host decides", a, last.log_evidence,
                last.overflow ? " (values past the histogram!)" : "");
    // (b) the decision on the device, every kernel launched, no wait
    const double b = median([&] {
      return run(pop, [&](int) {
        pop.weigh(1);
        pop.resample();
      }, last);
    });
    std::printf("%10d  %-46s %10.2f %14.6f\n", p, "(b) device decides, launched, no wait a step", b, last.log_evidence);
    // a captured step, instantiated once and replayed every step (the graph destroyed after)
    auto replayed = [&](const char* what, cudaGraph_t graph) {
      cudaGraphExec_t exec = nullptr;
      check(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
      const double us = median([&] { return run(pop, [&](int) { cudaGraphLaunch(exec, pop.s); }, last); });
      std::printf("%10d  %-46s %10.2f %14.6f\n", p, what, us, last.log_evidence);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    };
    // (c) one step captured as a graph, replayed
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(pop.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    pop.weigh(1);
    pop.resample();
    check(cudaStreamEndCapture(pop.s, &graph), "cudaStreamEndCapture");
    replayed("(c) as (b), one graph replayed a step", graph);
    // (d) as (c), the resampling's kernels in the body of an IF node that the summary's last block sets: a step
    // that keeps its particles runs two kernels
    check(cudaStreamBeginCapture(pop.s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cudaStreamCaptureStatus status{};
    const cudaGraphNode_t* deps = nullptr;
    std::size_t deps_count = 0;
    check(cudaStreamGetCaptureInfo(pop.s, &status, nullptr, &graph), "cudaStreamGetCaptureInfo");
    cudaGraphConditionalHandle handle{};
    check(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0), "cudaGraphConditionalHandleCreate");
    pop.weigh(1, handle, 1);
    check(cudaStreamGetCaptureInfo(pop.s, &status, nullptr, &graph, &deps, nullptr, &deps_count),
          "cudaStreamGetCaptureInfo");
    cudaGraphNodeParams if_node{};
    if_node.type = cudaGraphNodeTypeConditional;
    if_node.conditional.handle = handle;
    if_node.conditional.type = cudaGraphCondTypeIf;
    if_node.conditional.size = 1;
    cudaGraphNode_t node{};
    check(cudaGraphAddNode(&node, graph, deps, nullptr, deps_count, &if_node), "cudaGraphAddNode");
    check(cudaStreamUpdateCaptureDependencies(pop.s, &node, nullptr, 1, cudaStreamSetCaptureDependencies),
          "cudaStreamUpdateCaptureDependencies");
    cudaStream_t body_stream = nullptr;
    cudaStreamCreateWithFlags(&body_stream, cudaStreamNonBlocking);
    check(cudaStreamBeginCaptureToGraph(body_stream, if_node.conditional.phGraph_out[0], nullptr, nullptr, 0,
                                        cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCaptureToGraph");
    std::swap(pop.s, body_stream);
    pop.resample();
    std::swap(pop.s, body_stream);
    cudaGraph_t body = nullptr;
    check(cudaStreamEndCapture(body_stream, &body), "cudaStreamEndCapture");
    check(cudaStreamEndCapture(pop.s, &graph), "cudaStreamEndCapture");
    replayed("(d) as (c), the resampling under an IF node", graph);
    cudaStreamDestroy(body_stream);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e));
      return 1;
    }
  }
  return 0;
}
