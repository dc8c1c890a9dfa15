// Weighted summaries on the device: CUB reductions, a radix sort of (value, weight) pairs and a scan, a few numbers
// copied back.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_check.cuh"
#include "population_kernels.cuh"
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
namespace {

using population_cuda::kernels::block;
using population_cuda::kernels::launched;
using population_cuda::kernels::thread_blocks;
using population_cuda::kernels::thread_index;

/// What comes back: the sums, the first bad log-weight's index (count: none), then the quantiles.
struct Report {
  double top, total, weighted, squares;
  unsigned long long first_bad;
};

/// w_i = e^{l_i - top} (1 when top = -inf), w_i v_i and w_i^2; flags a NaN or +inf log-weight.
__global__ void weights_kernel(const double* l, const std::int64_t* v, std::size_t count, Report* r, double* w,
                               double* wv, double* w2) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(count)) return;
  const double top = r->top;
  if (isnan(l[i]) || l[i] == INFINITY) atomicMin(&r->first_bad, static_cast<unsigned long long>(i));
  const double x = top == -INFINITY ? 1.0 : exp(l[i] - top);
  w[i] = x;
  wv[i] = x * static_cast<double>(v[i]);
  w2[i] = x * x;
}

__global__ void init_report(Report* r, std::size_t count) { r->first_bad = count; }

/// The maximum with -inf as its identity (CUB's Max starts from the lowest finite double, which would hide a
/// population whose log-weights are all -inf).
struct Maximum {
  __device__ double operator()(double a, double b) const { return a > b ? a : b; }
};

/// One thread per probability p_q: the first sorted value whose cumulative weight reaches p_q of the total (and is
/// positive), else the largest value of positive weight (the first j where the scan reaches its end).
__global__ void quantiles_kernel(const double* cum, const std::int64_t* sorted, std::size_t count, const double* p,
                                 std::size_t nq, std::int64_t* out) {
  const long long q = thread_index();
  if (q >= static_cast<long long>(nq)) return;
  const double total = cum[count - 1];
  auto first_at_least = [&](double target) {  // the first j with cum[j] >= target and cum[j] > 0 (count: none)
    std::size_t lo = 0, hi = count;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (cum[mid] / total >= target && cum[mid] > 0.0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  std::size_t j = first_at_least(p[q]);
  if (j == count) j = first_at_least(1.0);
  out[q] = sorted[j < count ? j : count - 1];
}

}  // namespace

WeightedSummary summarize_device(const Column<std::int64_t>& values, const Column<double>& log_w,
                                 std::span<const double> probabilities) {
  constexpr const char* who = "tally::gpu::summarize";
  const std::size_t n = values.size(), nq = probabilities.size();
  const auto count = static_cast<long long>(n);
  auto report = Column<unsigned char>::allocate(Backend::cuda, sizeof(Report), who);
  Report* r = reinterpret_cast<Report*>(report.data());
  auto w = Column<double>::allocate(Backend::cuda, n, who), wv = Column<double>::allocate(Backend::cuda, n, who),
       w2 = Column<double>::allocate(Backend::cuda, n, who), sorted_w = Column<double>::allocate(Backend::cuda, n, who);
  auto sorted = Column<std::int64_t>::allocate(Backend::cuda, n, who);
  auto p = Column<double>::from_host(std::vector<double>(probabilities.begin(), probabilities.end()), Backend::cuda);
  auto quantiles = Column<std::int64_t>::allocate(Backend::cuda, std::max<std::size_t>(nq, 1), who);
  double* top = &r->top;
  // one temporary storage for every CUB call: the largest they ask for
  std::size_t bytes = 0, b = 0;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, b, log_w.data(), top, count, Maximum{}, -INFINITY));
  bytes = std::max(bytes, b);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, b, w.data(), top, count));
  bytes = std::max(bytes, b);
  TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, b, values.data(), sorted.data(), w.data(), sorted_w.data(), count));
  bytes = std::max(bytes, b);
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, b, sorted_w.data(), w.data(), count));
  bytes = std::max(bytes, b);
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);

  init_report<<<1, 1>>>(r, n);
  launched();
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, log_w.data(), top, count, Maximum{}, -INFINITY));
  weights_kernel<<<thread_blocks(n), block>>>(log_w.data(), values.data(), n, r, w.data(), wv.data(), w2.data());
  launched();
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, w.data(), &r->total, count));
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, wv.data(), &r->weighted, count));
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, w2.data(), &r->squares, count));
  TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), bytes, values.data(), sorted.data(), w.data(),
                                                   sorted_w.data(), count));
  double* cum = w.data();  // the weights are sorted into sorted_w: their storage takes the scan
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, sorted_w.data(), cum, count));
  if (nq > 0) {
    quantiles_kernel<<<thread_blocks(nq), block>>>(cum, sorted.data(), n, p.data(), nq, quantiles.data());
    launched();
  }
  Report host{};
  TALLY_CUDA_CHECK(cudaMemcpy(&host, r, sizeof host, cudaMemcpyDeviceToHost));
  if (host.first_bad < n)
    tally::detail::fail<domain_error>(who, ": log-weight ", log_w.to_host()[host.first_bad], " of particle ",
                                      host.first_bad);
  WeightedSummary out;
  out.all_impossible = host.top == -INFINITY;
  out.mean = host.weighted / host.total;
  out.ess = host.total * host.total / host.squares;
  out.quantiles = quantiles.to_host();
  out.quantiles.resize(nq);
  return out;
}

}  // namespace tally::gpu::detail
