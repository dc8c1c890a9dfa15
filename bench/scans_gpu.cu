// GPU scan benchmark, one run: batched inverse-cdf sampling and resampling against CUB compositions and copy speed.
#include <cub/device/device_scan.cuh>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gpu_timing.cuh"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace {

namespace gpu = tally::gpu;
using tally::bench::best_ms;
using tally::bench::check;
using tally::bench::event_ms;

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* d = nullptr;
  check(cudaMalloc(&d, host.size() * sizeof(T)), "cudaMalloc");
  check(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return d;
}

/// The CUB composition's search: one thread per pmf, binary search of its scanned run (fixed length m).
__global__ void search_runs(const double* scanned, std::size_t count, std::int64_t m, std::uint64_t seed,
                            std::int64_t* out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const double* c = scanned + i * m;
  const double target = gpu::philox_uniform(seed, i, 0) * c[m - 1];
  std::int64_t lo = 0, hi = m - 1;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi) / 2;
    if (c[mid] > target) hi = mid; else lo = mid + 1;
  }
  out[i] = lo;
}

void sampling(double bandwidth, bool quick) {
  const std::size_t p = quick ? std::size_t{1} << 16 : std::size_t{1} << 20;
  const std::int64_t m = 256;
  std::printf("## Batched inverse-cdf sampling: P = %zu pmfs of length %lld (doubles), one draw each\n\n", p,
              static_cast<long long>(m));
  std::mt19937_64 gen(6);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch batch;
  batch.weights.resize(p * m);
  for (auto& x : batch.weights) x = u(gen);
  batch.offset.resize(p + 1);
  for (std::size_t i = 0; i <= p; ++i) batch.offset[i] = static_cast<std::int64_t>(i) * m;
  batch.lo.assign(p, 0);
  batch.log_scale.assign(p, 0.0);
  double* weights = device_copy(batch.weights);
  std::int64_t* offset = device_copy(batch.offset);
  std::int64_t* lo = device_copy(batch.lo);
  double* log_scale = device_copy(batch.log_scale);
  std::vector<std::int32_t> keys(p * m);
  for (std::size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<std::int32_t>(k / m);
  std::int32_t* d_keys = device_copy(keys);
  std::int64_t* draws = nullptr;
  double* scanned = nullptr;
  check(cudaMalloc(&draws, p * 8), "cudaMalloc");
  check(cudaMalloc(&scanned, p * m * 8), "cudaMalloc");
  const gpu::PmfBatchView view{weights, offset, lo, log_scale, p};
  const double t_tally = event_ms([&] { gpu::cuda::sample_batched_device(view, 1, 0, draws); }, 20);
  std::vector<std::int64_t> tally_draws(p);
  check(cudaMemcpy(tally_draws.data(), draws, p * 8, cudaMemcpyDeviceToHost), "copy");
  std::size_t bytes = 0;
  const auto n = static_cast<std::int64_t>(p * m);
  check(cub::DeviceScan::InclusiveSumByKey(nullptr, bytes, d_keys, weights, scanned, n), "cub");
  void* temp = nullptr;
  check(cudaMalloc(&temp, bytes), "cudaMalloc");
  const double t_cub = event_ms(
      [&] {
        cub::DeviceScan::InclusiveSumByKey(temp, bytes, d_keys, weights, scanned, n);
        search_runs<<<static_cast<unsigned>((p + 255) / 256), 256>>>(scanned, p, m, 1, draws);
      },
      20);
  std::vector<std::int64_t> cub_draws(p);
  check(cudaMemcpy(cub_draws.data(), draws, p * 8, cudaMemcpyDeviceToHost), "copy");
  std::vector<std::int64_t> cpu_draws;
  const double t_cpu = best_ms([&] { cpu_draws = gpu::cpu::sample_batched(batch, 1, 0); }, 1);
  std::size_t same_cpu = 0, same_cub = 0;
  for (std::size_t i = 0; i < p; ++i) {
    same_cpu += tally_draws[i] == cpu_draws[i];
    same_cub += tally_draws[i] == cub_draws[i];
  }
  const double read = double(p * m) * 8 + double(p) * 8 * 3;  // weights, offsets, lo; draws written
  std::printf("| method | time (ms) | vs tally | bytes / time | of copy bandwidth | draws equal to tally's |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  std::printf("| tally warp per pmf (`sample_batched_device`) | %.3f | 1.0x | %.0f GB/s | %.0f %% | - |\n", t_tally,
              read / (t_tally * 1e6), 100 * read / (t_tally * 1e-3) / bandwidth);
  std::printf("| CUB composition: InclusiveSumByKey (keys prebuilt) + search kernel | %.3f | %.2fx | %.0f GB/s | %.0f %% | %zu / %zu |\n",
              t_cub, t_cub / t_tally, read / (t_cub * 1e6), 100 * read / (t_cub * 1e-3) / bandwidth, same_cub, p);
  std::printf("| CPU reference, 1 core | %.0f | %.0fx | | | %zu / %zu |\n\n", t_cpu, t_cpu / t_tally, same_cpu, p);
  for (void* ptr : {static_cast<void*>(weights), static_cast<void*>(offset), static_cast<void*>(lo),
                    static_cast<void*>(log_scale), static_cast<void*>(d_keys), static_cast<void*>(draws),
                    static_cast<void*>(scanned), temp})
    cudaFree(ptr);
}

/// One resampling row: device time (events, 10 calls), throughput against the byte counts, and the CPU's time.
struct ResampleRow {
  const char* method;
  gpu::Resampler kind;
  gpu::cuda::ResampleKernel kernel;
  bool summary;
  double moved;  // bytes this method moves, per particle
};

void resampling(double bandwidth, bool quick) {
  const std::size_t p = quick ? std::size_t{1} << 20 : std::size_t{1} << 24;
  std::printf("## Resampling P = %zu log-weights: ancestors (64-bit) on the device\n\n", p);
  std::printf("Inputs: *spread* U[-30, 0]; *degenerate* one particle at 0 and the rest at -40 (it holds all but "
              "%.0e of the weight, so it gets all P positions).\n", double(p) * std::exp(-40.0));
  std::printf("Byte counts: *two-pass minimum* 24 P (systematic needs the total before any ancestor: l read twice, "
              "ancestors written once); *one-pass bound* 16 P (l read once, ancestors written once: the old "
              "column, not reachable by systematic); *moved* what the method itself reads and writes (fused: 24 P; "
              "CUB composition: max 8 P, scan 16 P, ancestors 16 P = 48 P).\n\n");
  std::printf("| input | method | time (ms) | 24 P / time | of copy bw | 16 P / time | of copy bw | moved / time | of copy bw | ancestors != CPU | CPU 1 core (ms) | CPU / GPU |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  using gpu::cuda::ResampleKernel;
  const ResampleRow rows[] = {
      {"fused systematic", gpu::Resampler::systematic, ResampleKernel::fused, false, 24},
      {"fused systematic + summary (one synchronization)", gpu::Resampler::systematic, ResampleKernel::fused, true, 24},
      {"CUB composition systematic (max, scan, one thread per particle)", gpu::Resampler::systematic,
       ResampleKernel::cub_composition, false, 48},
      {"CUB composition multinomial (max, scan, binary search per draw)", gpu::Resampler::multinomial,
       ResampleKernel::cub_composition, false, 48},
  };
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-30.0, 0.0);
  std::size_t* ancestors = nullptr;
  check(cudaMalloc(&ancestors, p * 8), "cudaMalloc");
  for (const bool degenerate : {false, true}) {
    std::vector<double> l(p);
    for (auto& x : l) x = degenerate ? -40.0 : u(gen);
    if (degenerate) l[p / 3] = 0.0;
    double* d = device_copy(l);
    for (const auto& row : rows) {
      if (degenerate && row.kind == gpu::Resampler::multinomial) continue;
      std::size_t bytes = 0;
      gpu::cuda::resample_device(nullptr, bytes, d, p, row.kind, 1, 0, ancestors, nullptr, nullptr, row.kernel);
      void* temp = nullptr;
      check(cudaMalloc(&temp, bytes), "cudaMalloc");
      gpu::WeightSummary summary{};
      gpu::WeightSummary* want_summary = row.summary ? &summary : nullptr;
      const double t = event_ms(
          [&] {
            gpu::cuda::resample_device(temp, bytes, d, p, row.kind, 1, 0, ancestors, nullptr, want_summary, row.kernel);
          },
          10);
      std::vector<std::size_t> a(p), b;
      check(cudaMemcpy(a.data(), ancestors, p * 8, cudaMemcpyDeviceToHost), "copy");
      gpu::WeightSummary cpu_summary{};
      const double t_cpu =
          best_ms([&] { b = gpu::cpu::resample(l, row.kind, 1, 0, row.summary ? &cpu_summary : nullptr); }, 1);
      std::size_t differ = 0;
      for (std::size_t j = 0; j < p; ++j) differ += a[j] != b[j];
      const auto rate = [&](double per_particle) { return per_particle * double(p) / (t * 1e6); };
      const auto share = [&](double per_particle) { return 100 * per_particle * double(p) / (t * 1e-3) / bandwidth; };
      std::printf("| %s | %s | %.3f | %.0f GB/s | %.0f %% | %.0f GB/s | %.0f %% | %.0f GB/s | %.0f %% | %zu | %.0f | %.0fx |\n",
                  degenerate ? "degenerate" : "spread", row.method, t, rate(24), share(24), rate(16), share(16),
                  rate(row.moved), share(row.moved), differ, t_cpu, t_cpu / t);
      cudaFree(temp);
    }
    cudaFree(d);
  }
  std::printf("\n");
  cudaFree(ancestors);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const double bandwidth = tally::bench::copy_bandwidth();
  std::printf("# tally scan benchmark on %s (%d SMs); device-copy bandwidth %.0f GB/s (read + write)\n\n", prop.name,
              prop.multiProcessorCount, bandwidth / 1e9);
  sampling(bandwidth, quick);
  resampling(bandwidth, quick);
  return 0;
}
