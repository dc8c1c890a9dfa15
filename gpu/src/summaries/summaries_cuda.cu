// Weighted summaries on the device: CUB reductions, a histogram of the weights by value (values within
// histogram_bins of each other) or else a radix sort of (value, weight) pairs, a scan, a few numbers copied back.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <climits>
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

/// The histogram path's bins: values v_min .. v_min + histogram_bins - 1 (one block's shared histogram, 32 KB), and
/// its grid (blocks each folding many particles into shared memory before adding their bins to the global ones).
inline constexpr int histogram_bins = 4096;
inline constexpr int histogram_blocks = 264;

/// What comes back: the sums, the first bad log-weight's index (count: none), the values' range.
struct Report {
  double top, total, weighted, squares;
  unsigned long long first_bad;
  long long lo, hi;
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

__global__ void init_report(Report* r, std::size_t count) {
  r->first_bad = count;
  r->lo = LLONG_MAX;
  r->hi = LLONG_MIN;
}

/// The smallest and largest value (one atomic per warp).
__global__ void range_kernel(const std::int64_t* v, std::size_t count, Report* r) {
  const long long i = thread_index();
  long long lo = LLONG_MAX, hi = LLONG_MIN;
  if (i < static_cast<long long>(count)) lo = hi = static_cast<long long>(v[i]);
  for (int d = 16; d >= 1; d /= 2) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, d));
  }
  if ((threadIdx.x & 31) == 0 && lo <= hi) {
    atomicMin(&r->lo, lo);
    atomicMax(&r->hi, hi);
  }
}

/// Where the values span at most histogram_bins integers: bins[v - lo] += w (shared memory per block, then the
/// block's nonzero bins added to the global ones); otherwise nothing (the sort path runs instead).
__global__ void __launch_bounds__(block) histogram_kernel(const std::int64_t* v, const double* w, std::size_t count,
                                                          const Report* r, double* bins) {
  if (r->hi - r->lo >= histogram_bins) return;
  __shared__ double local[histogram_bins];
  for (int b = threadIdx.x; b < histogram_bins; b += blockDim.x) local[b] = 0.0;
  __syncthreads();
  const long long lo = r->lo;
  for (long long i = thread_index(); i < static_cast<long long>(count); i += static_cast<long long>(gridDim.x) * blockDim.x)
    if (w[i] > 0.0) atomicAdd(&local[v[i] - lo], w[i]);
  __syncthreads();
  for (int b = threadIdx.x; b < histogram_bins; b += blockDim.x)
    if (local[b] > 0.0) atomicAdd(&bins[b], local[b]);
}

/// The histogram path's quantiles: one thread per probability, the first bin whose cumulative weight reaches p of
/// the total (and is positive), else the last bin of positive weight; nothing where the sort path runs.
__global__ void histogram_quantiles_kernel(const double* cum, const Report* r, const double* p, std::size_t nq,
                                           std::int64_t* out) {
  const long long q = thread_index();
  if (q >= static_cast<long long>(nq) || r->hi - r->lo >= histogram_bins) return;
  const double total = cum[histogram_bins - 1];
  auto first_at_least = [&](double target) {
    int lo = 0, hi = histogram_bins;
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      if (cum[mid] / total >= target && cum[mid] > 0.0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  int j = first_at_least(p[q]);
  if (j == histogram_bins) j = first_at_least(1.0);
  out[q] = r->lo + (j < histogram_bins ? j : histogram_bins - 1);
}

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
       w2 = Column<double>::allocate(Backend::cuda, n, who);
  auto bins = Column<double>::allocate(Backend::cuda, histogram_bins, who);
  auto p = Column<double>::from_host(std::vector<double>(probabilities.begin(), probabilities.end()), Backend::cuda);
  auto quantiles = Column<std::int64_t>::allocate(Backend::cuda, std::max<std::size_t>(nq, 1), who);
  double* top = &r->top;
  // one temporary storage for the reductions and the bins' scan
  std::size_t bytes = 0, b = 0;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, b, log_w.data(), top, count, Maximum{}, -INFINITY));
  bytes = std::max(bytes, b);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, b, w.data(), top, count));
  bytes = std::max(bytes, b);
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, b, bins.data(), bins.data(), histogram_bins));
  bytes = std::max(bytes, b);
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);

  init_report<<<1, 1>>>(r, n);
  launched();
  range_kernel<<<thread_blocks(n), block>>>(values.data(), n, r);
  launched();
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, log_w.data(), top, count, Maximum{}, -INFINITY));
  weights_kernel<<<thread_blocks(n), block>>>(log_w.data(), values.data(), n, r, w.data(), wv.data(), w2.data());
  launched();
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, w.data(), &r->total, count));
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, wv.data(), &r->weighted, count));
  TALLY_CUDA_CHECK(cub::DeviceReduce::Sum(temp.data(), bytes, w2.data(), &r->squares, count));
  // the histogram path (decided on the device: its kernels do nothing where the values span more bins)
  TALLY_CUDA_CHECK(cudaMemsetAsync(bins.data(), 0, histogram_bins * sizeof(double)));
  histogram_kernel<<<static_cast<unsigned>(std::min<std::size_t>(histogram_blocks, thread_blocks(n))), block>>>(
      values.data(), w.data(), n, r, bins.data());
  launched();
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp.data(), bytes, bins.data(), bins.data(), histogram_bins));
  if (nq > 0) {
    histogram_quantiles_kernel<<<thread_blocks(nq), block>>>(bins.data(), r, p.data(), nq, quantiles.data());
    launched();
  }
  Report host{};
  TALLY_CUDA_CHECK(cudaMemcpy(&host, r, sizeof host, cudaMemcpyDeviceToHost));
  if (host.first_bad < n)
    tally::detail::fail<domain_error>(who, ": log-weight ", log_w.to_host()[host.first_bad], " of particle ",
                                      host.first_bad);
  if (host.hi - host.lo >= histogram_bins && nq > 0) {
    // values too spread for the bins: a radix sort of (value, weight) pairs and a scan instead
    auto sorted_w = Column<double>::allocate(Backend::cuda, n, who);
    auto sorted = Column<std::int64_t>::allocate(Backend::cuda, n, who);
    std::size_t sort_bytes = 0;
    TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, b, values.data(), sorted.data(), w.data(),
                                                     sorted_w.data(), count));
    sort_bytes = std::max(sort_bytes, b);
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, b, sorted_w.data(), w.data(), count));
    sort_bytes = std::max(sort_bytes, b);
    auto sort_temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(sort_bytes, 1), who);
    TALLY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_temp.data(), sort_bytes, values.data(), sorted.data(),
                                                     w.data(), sorted_w.data(), count));
    double* cum = w.data();  // the weights are sorted into sorted_w: their storage takes the scan
    TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(sort_temp.data(), sort_bytes, sorted_w.data(), cum, count));
    quantiles_kernel<<<thread_blocks(nq), block>>>(cum, sorted.data(), n, p.data(), nq, quantiles.data());
    launched();
  }
  WeightedSummary out;
  out.all_impossible = host.top == -INFINITY;
  out.mean = host.weighted / host.total;
  out.ess = host.total * host.total / host.squares;
  out.quantiles = quantiles.to_host();
  out.quantiles.resize(nq);
  return out;
}

}  // namespace tally::gpu::detail
