// What a filter step's fixed cost can fall to on this machine: 15 small kernels and one copy back, launched one by one,
// replayed as one instantiated CUDA graph, and captured anew and updated each step (bench/RESULTS.md, "Populations at
// scale").
// Usage: bench_step_floor_gpu [P]   (a plain CUDA program; P = 65536 by default: each kernel touches P doubles)
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

/// One elementwise pass over P doubles: the size of a small population's kernel.
__global__ void pass_kernel(double* x, int n, double a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 0.5 + a;
}

constexpr int kernels = 15, steps = 2000, warm_up = 100;

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 65536;
  double* x = nullptr;
  double* host = nullptr;
  if (cudaMalloc(&x, sizeof(double) * static_cast<std::size_t>(n) * 3) != cudaSuccess ||
      cudaMallocHost(&host, sizeof(double)) != cudaSuccess) {
    std::fprintf(stderr, "no device memory: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  const int blocks = (n + 255) / 256;
  // one step: 15 kernels over three arrays, then one number copied back
  auto step = [&](int t) {
    for (int j = 0; j < kernels; ++j) pass_kernel<<<blocks, 256, 0, s>>>(x + (j % 3) * n, n, t + j);
    cudaMemcpyAsync(host, x, sizeof(double), cudaMemcpyDeviceToHost, s);
  };
  auto time = [&](const char* what, auto&& one_step) {
    for (int t = 0; t < warm_up; ++t) one_step(t);
    cudaStreamSynchronize(s);
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < steps; ++t) {
      one_step(t);
      cudaStreamSynchronize(s);  // the host waits for the copy each step, as a filter waits for its summary
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-44s %8.2f us a step\n", what, us / steps);
  };
  std::printf("P = %d, %d kernels and one copy back a step, the host waiting each step\n", n, kernels);
  time("launched one by one on a stream", step);
  time("launched one by one on the legacy stream", [&](int t) {
    for (int j = 0; j < kernels; ++j) pass_kernel<<<blocks, 256>>>(x + (j % 3) * n, n, t + j);
    cudaMemcpy(host, x, sizeof(double), cudaMemcpyDeviceToHost);
  });
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  step(0);
  cudaStreamEndCapture(s, &graph);
  cudaGraphInstantiate(&exec, graph, 0);
  time("one instantiated graph replayed", [&](int) { cudaGraphLaunch(exec, s); });
  time("captured anew, exec updated, launched", [&](int t) {
    cudaGraph_t fresh = nullptr;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    step(t);
    cudaStreamEndCapture(s, &fresh);
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(exec, fresh, &info) != cudaSuccess) std::printf("  (the update failed)\n");
    cudaGraphLaunch(exec, s);
    cudaGraphDestroy(fresh);
  });
  time("one kernel and the copy", [&](int t) {
    pass_kernel<<<blocks, 256, 0, s>>>(x, n, t);
    cudaMemcpyAsync(host, x, sizeof(double), cudaMemcpyDeviceToHost, s);
  });
  time("the copy alone", [&](int) { cudaMemcpyAsync(host, x, sizeof(double), cudaMemcpyDeviceToHost, s); });
  // the host's side alone: 2000 steps enqueued without waiting
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < steps; ++t) step(t);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  cudaStreamSynchronize(s);
  std::printf("%-44s %8.2f us a step (%.2f us a launch)\n", "the host enqueueing alone", us / steps,
              us / steps / (kernels + 1));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
  cudaFreeHost(host);
  cudaFree(x);
  return 0;
}
