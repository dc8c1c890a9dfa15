// Where a delayed-sampling filter step spends its time on the device: the SIR model's delayed step (as
// models/sir.cpp writes it) with the wall time of each engine call, the device synchronized after each, against the
// same steps unsynchronized. Usage: bench_step_profile [P] [runs]   (a developer's tool; prints a table)
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/conjugate.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using runtime::Graph;
using runtime::Variable;

namespace {

struct Clock {
  bool sync;
  std::map<std::string, double> seconds;
  std::vector<std::string> order;
  template <class F>
  auto operator()(const std::string& what, F f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto stop = [&] {
      if (sync) cudaDeviceSynchronize();
      if (!seconds.count(what)) order.push_back(what);
      seconds[what] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      stop();
    } else {
      auto r = f();
      stop();
      return r;
    }
  }
};

double run(std::size_t P, std::uint64_t seed, Clock& clock) {
  const std::vector<std::int64_t> in_bed{3, 8, 26, 76, 225, 298, 258, 233, 189, 128, 68, 29, 14, 4};
  const std::int64_t N = 763, I0 = 3;
  const double c = 10.0 / double(N);
  cudaDeviceSynchronize();
  const auto t0 = std::chrono::steady_clock::now();
  Graph pop(P, seed, runtime::Device::cuda);
  const auto delta = pop.assume(runtime::Beta(2, 2)), gamma = pop.assume(runtime::Beta(2, 2));
  Variable S = pop.constant(N - I0), I = pop.constant(I0), R = pop.constant(0);
  for (std::size_t t = 1; t <= in_bed.size(); ++t) {
    auto q = clock("hazard", [&] { return gpu::hazard_probabilities(pop.values(I), c); });
    const Variable tau = clock("binomial(S, q)", [&] { return pop.binomial(S, std::move(q)); });
    clock("realize tau", [&] { pop.realize(tau); });
    const Variable n = clock("binomial(tau, delta)", [&] { return pop.binomial(tau, delta); });
    const Variable r = clock("binomial(I, gamma)", [&] { return pop.binomial(I, gamma); });
    const Variable d = clock("subtract(n, r)", [&] { return pop.subtract(n, r); });
    const Variable change = clock("change", [&] { return pop.subtract(pop.constant(in_bed[t - 1]), I); });
    clock("observe d", [&] { pop.observe(d, change); });
    clock("bytes", [&] { return pop.bytes(); });
    S = clock("S - n", [&] { return pop.subtract(S, n); });
    I = clock("I + d", [&] { return pop.add(I, d); });
    R = clock("R + r", [&] { return pop.add(R, r); });
    static constexpr double band[] = {0.05, 0.95};
    clock("summarize S", [&] { return pop.summarize(S, band); });
    clock("summarize R", [&] { return pop.summarize(R, band); });
    clock("resample", [&] { return pop.resample_by_weight(1.0); });
  }
  cudaDeviceSynchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t P = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1u << 20);
  const int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  Clock warm{false, {}, {}};
  run(P, 99, warm);  // the device's start, the memory pool's growth
  Clock free_running{false, {}, {}}, synced{true, {}, {}};
  double total = 0, total_synced = 0;
  for (int k = 0; k < runs; ++k) total += run(P, 1 + k, free_running);
  for (int k = 0; k < runs; ++k) total_synced += run(P, 1 + k, synced);
  const double steps = 14.0 * runs;
  std::printf("P = %zu, %d runs of 14 days: %.3f ms per step unsynchronized, %.3f ms synchronized after each call\n",
              P, runs, 1e3 * total / steps, 1e3 * total_synced / steps);
  std::printf("%-22s %12s %12s\n", "call", "ms/step", "(no sync)");
  for (const auto& what : synced.order)
    std::printf("%-22s %12.3f %12.3f\n", what.c_str(), 1e3 * synced.seconds[what] / steps,
                1e3 * free_running.seconds[what] / steps);
  return 0;
}
