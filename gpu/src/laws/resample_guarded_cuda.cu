// The CUDA form of the resampler's entry: the guard of the largest log-weight (NaN as +inf), then the fused
// systematic resampler or multinomial draws, one wait in all.
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "resample_check.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu::population_cuda {

namespace {
/// A log-weight for the guard's maximum: NaN counts as +inf.
struct NanAsInfinity {
  __device__ double operator()(double l) const { return isnan(l) ? INFINITY : l; }
};
struct Larger {
  __device__ double operator()(double a, double b) const { return a < b ? b : a; }
};
}  // namespace

namespace {
/// A pinned double per thread: the guard's maximum copied back in the same wait as the resampler's totals (freed
/// with its thread, or by release_pinned_guard()).
struct PinnedGuard {
  double* p = nullptr;
  ~PinnedGuard() {
    if (p != nullptr) cudaFreeHost(p);
  }
};
thread_local PinnedGuard pinned;
double* pinned_guard() {
  if (pinned.p == nullptr) {
    void* h = nullptr;
    TALLY_CUDA_CHECK(cudaHostAlloc(&h, sizeof(double), cudaHostAllocDefault));
    pinned.p = static_cast<double*>(h);
  }
  return pinned.p;
}
}  // namespace

void release_pinned_guard() {
  if (pinned.p != nullptr) cudaFreeHost(pinned.p);
  cudaGetLastError();
  pinned.p = nullptr;
}

Column<std::size_t> resample(const Column<double>& log_w, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                             WeightSummary& summary, double threshold, const WeightSummary* known) {
  constexpr const char* who = "tally::gpu::resample";
  if (known != nullptr && kind == Resampler::systematic && known->max_log_weight > -INFINITY) {
    // the summary is known (the resampler's own passes, run with a summary of these weights): no guard, no
    // decision to make, nothing to read back; the fused kernels compute the same totals again on their way
    summary = *known;
    std::size_t bytes = 0;
    cuda::resample_device(nullptr, bytes, log_w.data(), log_w.size(), kind, seed, counter, nullptr);
    auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
    auto ancestors = Column<std::size_t>::allocate(Backend::cuda, log_w.size(), who);
    cuda::resample_device(temp.data(), bytes, log_w.data(), log_w.size(), kind, seed, counter, ancestors.data());
    return ancestors;
  }
  // the largest log-weight, with NaN read as +inf: +inf means a NaN or +inf weight (the host check names the
  // particle, as the CPU path does); -inf means every particle is dead, and there are no ancestors then. The
  // identity is -inf: cub::DeviceReduce::Max starts from lowest() = -DBL_MAX, which would call a dead population
  // alive and hand the resampler all -inf weights (it then writes no ancestors at all).
  std::size_t max_bytes = 0;
  auto top = Column<double>::allocate(Backend::cuda, 1, who);
  const auto n = static_cast<long long>(log_w.size());
  const auto guarded = thrust::make_transform_iterator(log_w.data(), NanAsInfinity{});
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, max_bytes, guarded, top.data(), n, Larger{}, -INFINITY));
  std::size_t bytes = 0;
  cuda::resample_device(nullptr, bytes, log_w.data(), log_w.size(), kind, seed, counter, nullptr);
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>({bytes, max_bytes, 1}), who);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), max_bytes, guarded, top.data(), n, Larger{}, -INFINITY));
  auto ancestors = Column<std::size_t>::allocate(Backend::cuda, log_w.size(), who);
  double largest = 0;
  if (kind == Resampler::systematic) {
    // the fused resampler runs behind the guard, and the guard comes back with its totals: one wait in all
    double* host_top = pinned_guard();
    TALLY_CUDA_CHECK(cudaMemcpyAsync(host_top, top.data(), sizeof(double), cudaMemcpyDeviceToHost, nullptr));
    // the caller's decision (Graph::resample_by_weight: ESS < threshold P) made on the device too: a step that
    // keeps its particles writes no ancestors
    const double limit = threshold < 1.0 ? threshold * static_cast<double>(log_w.size()) : INFINITY;
    cuda::resample_device(temp.data(), bytes, log_w.data(), log_w.size(), kind, seed, counter, ancestors.data(),
                          nullptr, &summary, cuda::ResampleKernel::automatic, top.data(), limit);
    largest = *host_top;
  } else {
    largest = top.to_host()[0];
  }
  if (largest == INFINITY) {
    const std::vector<double> host = log_w.to_host();
    detail::check_log_weights(host, who);
  }
  if (!(largest > -INFINITY)) {
    summary = {-INFINITY, -INFINITY, 0.0};
    return {};
  }
  if (kind != Resampler::systematic)
    cuda::resample_device(temp.data(), bytes, log_w.data(), log_w.size(), kind, seed, counter, ancestors.data(),
                          nullptr, &summary);
  return ancestors;
}

}  // namespace tally::gpu::population_cuda
