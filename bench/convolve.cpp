// Benchmarks the CPU reference convolution (tally::gpu::cpu::convolve, double) against a naive double loop.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "tally/gpu/convolve.hpp"

namespace {

std::vector<double> random_positive(std::size_t size, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::uniform_real_distribution<double> uniform(0.5, 1.5);
  std::vector<double> v(size);
  for (double& x : v) x = uniform(engine);
  return v;
}

// The comparison baseline: the textbook double loop, compiled here with the project's flags (no -march).
void naive_convolve(const std::vector<double>& p, const std::vector<double>& q, std::vector<double>& r) {
  std::fill(r.begin(), r.end(), 0.0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < q.size(); ++j) r[i + j] += p[i] * q[j];
}

// Counters for one convolution of m = n = state.range(0): multiply-adds (m n) and bytes (read p and q, write r).
void report(benchmark::State& state, std::size_t m, std::size_t n) {
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["madds/s"] =
      benchmark::Counter(iterations * static_cast<double>(m) * static_cast<double>(n), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>((m + n + (m + n - 1)) * sizeof(double)));
}

void BM_tally_cpu_convolve(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0)), n = m;
  const std::vector<double> p = random_positive(m, 1), q = random_positive(n, 2);
  std::vector<double> r(m + n - 1);
  for (auto _ : state) {
    tally::gpu::cpu::convolve(std::span<const double>(p), std::span<const double>(q), std::span<double>(r));
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  report(state, m, n);
}

void BM_naive_convolve(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0)), n = m;
  const std::vector<double> p = random_positive(m, 1), q = random_positive(n, 2);
  std::vector<double> r(m + n - 1);
  for (auto _ : state) {
    naive_convolve(p, q, r);
    benchmark::DoNotOptimize(r.data());
    benchmark::ClobberMemory();
  }
  report(state, m, n);
}

}  // namespace

BENCHMARK(BM_tally_cpu_convolve)->Arg(64)->Arg(256)->Arg(4096)->Arg(65536)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_naive_convolve)->Arg(64)->Arg(256)->Arg(4096)->Arg(65536)->Unit(benchmark::kMicrosecond);
