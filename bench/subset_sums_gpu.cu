// GPU subset-sum benchmark, one run: enumeration and the bit-packed programme against the seeds' methods and the CPU.
#include <cuda_runtime.h>

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
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace {

using big = boost::multiprecision::cpp_bin_float_50;
namespace gpu = tally::gpu;
using gpu::cuda::DpKernel;
using gpu::cuda::SubsetMerge;

using tally::bench::best_ms;
using tally::bench::check;
using tally::bench::copy_bandwidth;

/// The worst relative difference of b's weights from a's (same values required; -1 when the values differ).
template <class W>
double law_difference(const gpu::SubsetSumLaw<W>& a, const gpu::SubsetSumLaw<W>& b) {
  if (a.values != b.values) return -1;
  double worst = 0;
  for (std::size_t j = 0; j < a.weights.size(); ++j)
    worst = std::max(worst, std::abs(a.weights[j] - b.weights[j]) / a.weights[j]);
  return worst;
}

/// The worst relative error of a law of integer weights against the 50-digit polynomial prod (q_i + p_i x^w_i).
double error_vs_50_digits(const gpu::SubsetSumLaw<std::int64_t>& law, const std::vector<std::int64_t>& w,
                          const std::vector<double>& p) {
  std::int64_t span = 0;
  for (const auto x : w) span += x;
  std::vector<big> ref(static_cast<std::size_t>(span) + 1, big(0));
  ref[0] = 1;
  std::int64_t reach = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    reach += w[i];
    for (std::int64_t t = reach; t >= 0; --t) ref[t] = ref[t] * (1 - big(p[i])) + (t >= w[i] ? ref[t - w[i]] * big(p[i]) : big(0));
  }
  double worst = 0;
  for (std::size_t j = 0; j < law.values.size(); ++j) {
    const big got = big(law.weights[j]) * boost::multiprecision::exp(big(law.log_scale));
    const big& want = ref[static_cast<std::size_t>(law.values[j])];
    worst = std::max(worst, static_cast<double>(abs((got - want) / want)));
  }
  return worst;
}

void enumeration(bool quick) {
  std::printf("## Enumeration with probabilities (integer weights in [1, 100], p in [0.05, 0.95])\n\n");
  std::printf("| n | distinct sums | tally table (ms) | tally sort (ms) | seed-000 per-mask + sort (ms) | CPU 1 core (ms) |"
              " per-mask / tally | subsets/s (tally) | max rel err vs 50 digits (tally / per-mask) |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  std::mt19937_64 gen(2026);
  for (const int n : {24, 28, 32}) {
    if (quick && n > 24) break;
    std::uniform_int_distribution<std::int64_t> weight(1, 100);
    std::uniform_real_distribution<double> prob(0.05, 0.95);
    std::vector<std::int64_t> w(n);
    std::vector<double> p(n);
    for (auto& x : w) x = weight(gen);
    for (auto& x : p) x = prob(gen);
    gpu::SubsetSumLaw<std::int64_t> table, sorted, per_mask, cpu;
    const double t_table = best_ms([&] { table = gpu::cuda::subset_sum_law(w, p, SubsetMerge::table); }, 3);
    const double t_sort = best_ms([&] { sorted = gpu::cuda::subset_sum_law(w, p, SubsetMerge::sort); }, n < 32 ? 3 : 1);
    const double t_mask = best_ms([&] { per_mask = gpu::cuda::subset_sum_law(w, p, SubsetMerge::per_mask); }, n < 32 ? 3 : 1);
    double t_cpu = -1;
    if (n <= 28) t_cpu = best_ms([&] { cpu = gpu::cpu::subset_sum_law(w, p); }, 1);
    const double err_table = error_vs_50_digits(table, w, p), err_mask = error_vs_50_digits(per_mask, w, p);
    std::printf("| %d | %zu | %.2f | %.2f | %.2f | %s | %.1fx | %.3g | %.1e / %.1e |\n", n, table.values.size(), t_table,
                t_sort, t_mask, t_cpu < 0 ? "not run" : std::to_string(t_cpu).c_str(), t_mask / t_table,
                std::ldexp(1.0, n) / (t_table * 1e-3), err_table, err_mask);
    std::printf("<!-- n = %d: table vs sort %.1e, table vs per-mask %.1e%s -->\n", n, law_difference(table, sorted),
                law_difference(table, per_mask),
                t_cpu < 0 ? "" : (", table vs CPU " + std::to_string(law_difference(cpu, table))).c_str());
  }
  std::printf("\n## Enumeration with probabilities (double weights in [0.5, 2]: no equal sums, the sort path)\n\n");
  std::printf("| n | distinct sums | tally sort (ms) | seed-000 per-mask + sort (ms) | CPU 1 core (ms) | per-mask / tally |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|\n");
  for (const int n : {20, 24, 28}) {
    if (quick && n > 20) break;
    std::uniform_real_distribution<double> weight(0.5, 2.0), prob(0.05, 0.95);
    std::vector<double> w(n), p(n);
    for (auto& x : w) x = weight(gen);
    for (auto& x : p) x = prob(gen);
    gpu::SubsetSumLaw<double> sorted, per_mask, cpu;
    const double t_sort = best_ms([&] { sorted = gpu::cuda::subset_sum_law(w, p, SubsetMerge::sort); }, 2);
    const double t_mask = best_ms([&] { per_mask = gpu::cuda::subset_sum_law(w, p, SubsetMerge::per_mask); }, 2);
    double t_cpu = -1;
    if (n <= 24) t_cpu = best_ms([&] { cpu = gpu::cpu::subset_sum_law(w, p); }, 1);
    std::printf("| %d | %zu | %.2f | %.2f | %s | %.2fx |\n", n, sorted.values.size(), t_sort, t_mask,
                t_cpu < 0 ? "not run" : std::to_string(t_cpu).c_str(), t_mask / t_sort);
    std::printf("<!-- n = %d: sort vs per-mask %.1e%s -->\n", n, law_difference(sorted, per_mask),
                t_cpu < 0 ? "" : (", sort vs CPU " + std::to_string(law_difference(cpu, sorted))).c_str());
  }
}

void programme(double bandwidth, bool quick) {
  const std::int64_t c = quick ? 100000000 : 1000000000;
  std::printf("\n## Bit-packed programme: n = 100 weights 3 x U[1, 3.3e7], c = %lld (c is not a multiple of 3: "
              "unreachable, so every pass runs)\n\n", static_cast<long long>(c));
  std::mt19937_64 gen(2002);
  std::uniform_int_distribution<std::int64_t> weight(1, 33000000);
  std::vector<std::int64_t> w(100);
  for (auto& x : w) x = 3 * weight(gen);
  // a pass reads the active prefix of the row at each of its shifts (2^K, the subset sums of its K weights) and writes
  // it once: the DRAM traffic it cannot avoid without caching the row (it is larger than L2)
  std::vector<std::int64_t> sorted_w = w;
  std::sort(sorted_w.begin(), sorted_w.end());
  auto traffic = [&](int per_pass) {
    double bytes = 0;
    std::int64_t reach = 0;
    for (std::size_t i = 0; i < sorted_w.size(); i += per_pass) {
      const std::size_t k = std::min<std::size_t>(per_pass, sorted_w.size() - i);
      for (std::size_t j = i; j < i + k; ++j) reach = std::min(c, reach + sorted_w[j]);
      bytes += 8.0 * double((std::size_t{1} << k) + 1) * double(reach / 64 + 1);
    }
    return bytes;
  };
  std::printf("| method | time (ms) | best total | vs seed-002 baseline | DRAM traffic / time | of copy bandwidth |\n");
  std::printf("|---|---:|---:|---:|---:|---:|\n");
  gpu::SubsetSumAnswer base{};
  const double t_base = best_ms([&] { base = gpu::cuda::subset_sum(w, c, DpKernel::byte_per_cell); }, 1);
  const double base_bytes = 3.0 * double(c + 1) * 100;  // read two bytes, write one, per total and weight
  std::printf("| seed-002: byte per total, launch per weight | %.1f | %lld | 1.0x | %.0f GB/s | %.0f %% |\n", t_base,
              static_cast<long long>(base.best), base_bytes / (t_base * 1e6), 100 * base_bytes / (t_base * 1e-3) / bandwidth);
  for (const int k : {1, 2, 3}) {
    gpu::SubsetSumAnswer a{};
    const double t = best_ms([&] { a = gpu::cuda::subset_sum(w, c, DpKernel::bit_packed, k); }, 3);
    const double bytes = traffic(k);
    std::printf("| tally bit-packed, %d weight%s per pass | %.2f | %lld | %.1fx | %.0f GB/s | %.0f %% |\n", k,
                k > 1 ? "s" : "", t, static_cast<long long>(a.best), t_base / t, bytes / (t * 1e6),
                100 * bytes / (t * 1e-3) / bandwidth);
  }
  gpu::ReachableSums all(0, {1});
  const double t_row = best_ms([&] { all = gpu::cuda::reachable_sums(w, c); }, 1);
  std::printf("| tally reachable_sums (row copied to the host) | %.1f | %lld | %.1fx | | |\n", t_row,
              static_cast<long long>(all.largest_at_most(c)), t_base / t_row);
  gpu::SubsetSumAnswer cpu{};
  const double t_cpu = best_ms([&] { cpu = gpu::cpu::subset_sum(w, c); }, 1);
  std::printf("| CPU bit-packed, 1 core | %.0f | %lld | %.2fx | | |\n", t_cpu, static_cast<long long>(cpu.best),
              t_base / t_cpu);
  std::printf("\nreachable totals <= c: %lld; every method's best agrees: %s\n", static_cast<long long>(all.count()),
              (cpu.best == base.best && cpu.best == all.largest_at_most(c)) ? "yes" : "NO");
}

void sampled(bool quick) {
  const std::size_t m = quick ? 1000 : 10000, k = 1024;
  std::printf("\n## Sampled supports: M = %zu vectors of 40 integer weights, k = %zu subsets each\n\n", m, k);
  std::mt19937_64 gen(2000);
  std::uniform_int_distribution<std::int64_t> weight(0, 1000);
  std::vector<std::vector<std::int64_t>> vectors(m, std::vector<std::int64_t>(40));
  for (auto& v : vectors)
    for (auto& x : v) x = weight(gen);
  std::vector<std::vector<std::int64_t>> a, b;
  const double t_gpu = best_ms([&] { a = gpu::cuda::sampled_subset_sums(vectors, k, 5); }, 3);
  const double t_cpu = best_ms([&] { b = gpu::cpu::sampled_subset_sums(vectors, k, 5); }, 1);
  std::printf("| tally GPU (ms) | CPU 1 core (ms) | CPU / GPU | same sets |\n|---:|---:|---:|---|\n");
  std::printf("| %.2f | %.1f | %.1fx | %s |\n", t_gpu, t_cpu, t_cpu / t_gpu, a == b ? "yes" : "NO");
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const double bandwidth = copy_bandwidth();
  std::printf("# tally subset-sum benchmark on %s (%d SMs); device-copy bandwidth %.0f GB/s (read + write)\n\n",
              prop.name, prop.multiProcessorCount, bandwidth / 1e9);
  enumeration(quick);
  programme(bandwidth, quick);
  sampled(quick);
  return 0;
}
