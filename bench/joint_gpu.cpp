// Batched joint laws on the device against the CPU loops (one core): a count split in two parts (a binomial split
// of a 1-D law into a 2-D table), conditioned on an observed thinning of one part, then the other summed out; and on
// the split's table, immigration added to one part, a Poisson emission of the other observed, the two parts summed
// (in place), their sum observed, a thinning of one part observed whose keep probability the other part selects, a
// draw of the pair, and a draw of one part with the other's law given it.
// Usage: bench_joint_gpu [P ...]   (a developer's tool; prints a table; default P = 4096 65536)
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tally/gpu/joint_laws.hpp"

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::JointLaws;

namespace {

/// P laws of a count on lo .. lo + 99 (lo = 20 + i mod 7): a discretized bump, as a filtered population's law.
std::vector<JointLaws::Law> populations(std::size_t P) {
  std::vector<JointLaws::Law> out(P);
  for (std::size_t i = 0; i < P; ++i) {
    out[i].lo = {20 + static_cast<std::int64_t>(i % 7)};
    out[i].shape = {100};
    for (int k = 0; k < 100; ++k) out[i].weights.push_back(std::exp(-0.5 * std::pow((k - 50.0) / 12.0, 2)));
  }
  return out;
}

struct Times {
  double split = 0, condition = 0, sum_out = 0;
  double add = 0, emission = 0, combine = 0, condition_sum = 0, selected = 0, sample = 0, sample_part = 0;
  double table_bytes = 0;  // a particle's 2-D table (the split's output), on average
};

/// Seconds of each operation on `where` (mean of `reps` after one warm-up), the device synchronized around each.
Times run(std::size_t P, Backend where, int reps) {
  const JointLaws x = JointLaws::from_host(1, populations(P), where);
  const auto v = Column<std::int64_t>::from_host(std::vector<std::int64_t>(P, 18), where);
  auto ll = Column<double>::from_host(std::vector<double>(P, 0.0), where);
  std::vector<JointLaws::Law> arrivals(P);  // immigration: 30 values, a geometric-like decay
  for (auto& a : arrivals) {
    a.lo = {0};
    a.shape = {30};
    for (int k = 0; k < 30; ++k) a.weights.push_back(std::pow(0.8, k));
  }
  const JointLaws immigration = JointLaws::from_host(1, arrivals, where);
  const gpu::ChildKernel emission = gpu::ChildKernel::scaled_poisson(0.5);
  const auto total = Column<std::int64_t>::from_host(std::vector<std::int64_t>(P, 60), where);
  std::vector<double> u(P);
  for (std::size_t i = 0; i < P; ++i) u[i] = (double(i) + 0.5) / double(P);
  const auto uniforms = Column<double>::from_host(u, where);
  std::vector<double> keep(127);  // part 1 (0 .. 126 after the split) selects part 0's keep probability
  for (std::size_t k = 0; k < keep.size(); ++k) keep[k] = 0.2 + 0.6 * double(k) / 126.0;
  Times t;
  auto clock = [&](double& acc, auto f) {
    if (where == Backend::cuda) cudaDeviceSynchronize();
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    if (where == Backend::cuda) cudaDeviceSynchronize();
    acc += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  for (int r = 0; r <= reps; ++r) {
    Times once;
    const JointLaws split = clock(once.split, [&] { return gpu::joint_split(x, 0, 0.3); });
    t.table_bytes = 8.0 * double(split.total()) / double(P);
    const JointLaws posterior = clock(once.condition, [&] { return gpu::joint_condition_on_thinning(split, 1, 0.6, v, ll); });
    clock(once.sum_out, [&] { return gpu::joint_sum_out(posterior, 1); });
    clock(once.add, [&] { return gpu::joint_add_independent(split, 0, immigration); });
    auto ll2 = ll.clone();
    clock(once.emission, [&] { return gpu::joint_condition_on_child(split, 1, emission, v, ll2); });
    clock(once.combine, [&] { return gpu::joint_linear_combination(split, {1, 1}, 0, 0); });
    clock(once.condition_sum, [&] { return gpu::joint_condition_on_linear(split, {1, 1}, 0, total, ll2); });
    clock(once.selected, [&] { return gpu::joint_condition_on_selected_thinning(split, 1, 0, keep, v, ll2); });
    clock(once.sample, [&] { return gpu::joint_sample(split, uniforms); });
    clock(once.sample_part, [&] { return gpu::joint_sample_coordinate(split, 0, uniforms); });
    if (r > 0) {
      t.split += once.split / reps;
      t.condition += once.condition / reps;
      t.sum_out += once.sum_out / reps;
      t.add += once.add / reps;
      t.emission += once.emission / reps;
      t.combine += once.combine / reps;
      t.condition_sum += once.condition_sum / reps;
      t.selected += once.selected / reps;
      t.sample += once.sample / reps;
      t.sample_part += once.sample_part / reps;
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int a = 1; a < argc; ++a) sizes.push_back(std::strtoull(argv[a], nullptr, 10));
  if (sizes.empty()) sizes = {4096, 65536};
  const Times cpu = run(256, Backend::cpu, 2);
  std::printf("batched joint laws: a count of 100 values split into a 2-D table (up to 126 x 126), conditioned on a\n"
              "thinning of one part, the other summed out; microseconds per particle (CPU: one core, P = 256)\n");
  std::printf("| P | op | CPU us/law | GPU us/law | GPU / CPU speed | GPU GB/s (table read + written) |\n");
  std::printf("|---:|---|---:|---:|---:|---:|\n");
  for (const std::size_t P : sizes) {
    const Times gpu_t = run(P, Backend::cuda, 3);
    const double table = gpu_t.table_bytes;
    const auto row = [&](const char* op, double c, double g, double bytes) {
      const double c_us = 1e6 * c / 256.0, g_us = 1e6 * g / double(P);
      std::printf("| %zu | %s | %.2f | %.4f | %.0fx | %.0f |\n", P, op, c_us, g_us, c_us / g_us,
                  bytes * double(P) / g / 1e9);
    };
    row("split", cpu.split, gpu_t.split, table + 800);
    row("condition on a thinning", cpu.condition, gpu_t.condition, 2 * table);
    row("sum out", cpu.sum_out, gpu_t.sum_out, table + 1000);
    row("add immigration to a part (30 values)", cpu.add, gpu_t.add, table * 1.23 + table);
    row("condition on a Poisson emission of a part", cpu.emission, gpu_t.emission, 2 * table);
    row("sum of the parts, in place", cpu.combine, gpu_t.combine, 2 * table);
    row("condition on the sum of the parts", cpu.condition_sum, gpu_t.condition_sum, 2 * table);
    row("condition on a thinning of a part selected by the other", cpu.selected, gpu_t.selected, 2 * table);
    row("draw the pair", cpu.sample, gpu_t.sample, table);
    row("draw a part, the other given it", cpu.sample_part, gpu_t.sample_part, 2 * table);
  }
  return 0;
}
