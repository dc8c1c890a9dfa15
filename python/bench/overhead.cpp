// The C++ side of python/bench/overhead.py: the same filter step through the C++ API, timed, so that the Python
// layer's cost per call is the difference. Usage: tally_python_bench P steps  (prints seconds per step)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tally/distributions/poisson.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: %s particles steps calls [cpu|cuda]\n", argv[0]);
    return 2;
  }
  const auto P = std::stoul(argv[1]);
  const int steps = std::stoi(argv[2]), calls = std::stoi(argv[3]);
  const bool cuda = argc == 5 && std::string(argv[4]) == "cuda";
  runtime::Graph g(P, 1, cuda ? runtime::Device::cuda : runtime::Device::cpu);
  runtime::Variable N = g.assume(Poisson(50.0));
  // one warm-up step, then the timed ones: 6 engine calls a step (binomial, assume, add, binomial, observe,
  // resample_by_weight), as in overhead.py
  const auto step = [&] {
    N = g.add(g.binomial(N, 0.8), g.assume(Poisson(10.0)));
    g.observe(g.binomial(N, 0.6), 30);
    g.resample_by_weight(0.5);
  };
  step();
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < steps; ++t) step();
  g.log_weights();  // a CUDA graph's work is asynchronous: wait for it (a copy back of P doubles)
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto start_calls = std::chrono::steady_clock::now();
  for (int k = 0; k < calls; ++k) g.constant(7);
  g.log_weights();
  const double c = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_calls).count();
  std::printf("%.9g %.9g\n", s / steps, c / calls);
  return 0;
}
