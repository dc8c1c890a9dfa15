// Resampling on the device: the fused systematic kernels (resample_kernels.cuh) and the CUB composition baseline.
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "cuda_check.cuh"
#include "resample_check.hpp"
#include "resample_combine.cuh"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/resample_shards.hpp"
#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu::cuda {
namespace kernels {

static_assert(sizeof(std::size_t) == sizeof(unsigned long long), "ancestors are 64-bit on both sides");

/// e^{l - m}: the weight relative to the largest.
struct RelativeWeight {
  double m;
  __device__ double operator()(double l) const { return exp(l - m); }
};
/// (e^{l - m}, e^{2(l - m)}) for the sums of the weights and of their squares, in one pass.
struct WeightAndSquare {
  double m;
  __device__ double2 operator()(double l) const {
    const double w = exp(l - m);
    return make_double2(w, w * w);
  }
};
struct AddPairs {
  __device__ double2 operator()(double2 a, double2 b) const { return make_double2(a.x + b.x, a.y + b.y); }
};

/// k_i = floor(P c_i / c_{P-1} + u), capped at P (and P for the last particle): the end of particle i's positions.
__device__ inline std::size_t systematic_end(const double* c, std::size_t i, std::size_t p, double u) {
  if (i + 1 == p) return p;
  const double k = floor(double(p) * (c[i] / c[p - 1]) + u);
  return k >= double(p) ? p : static_cast<std::size_t>(k);
}

/// Particle i writes itself at positions [k_{i-1}, k_i): P writes in all, ancestors in increasing order.
__global__ void systematic_ancestors(const double* c, std::size_t p, double u, unsigned long long* out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p) return;
  const std::size_t first = i == 0 ? 0 : systematic_end(c, i - 1, p, u), end = systematic_end(c, i, p, u);
  for (std::size_t k = first; k < end; ++k) out[k] = i;
}

/// Draw j: the first prefix sum above u_j c_{P-1} (else the first reaching c_{P-1}), by binary search.
__global__ void multinomial_ancestors(const double* c, std::size_t p, std::uint64_t seed, std::uint64_t counter,
                                      unsigned long long* out) {
  const std::size_t j = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= p) return;
  const double total = c[p - 1];
  const double target = philox_uniform(seed, j, counter) * total;
  const bool rounded_up = !(target < total);
  std::size_t lo = 0, hi = p - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (rounded_up ? c[mid] >= total : c[mid] > target) hi = mid; else lo = mid + 1;
  }
  out[j] = lo;
}

}  // namespace kernels

namespace {

using detail::DeviceBuffer;

struct DeviceWeights {
  DeviceBuffer<double> log_w;
  double m;
};

/// The log-weights on the device and their maximum.
DeviceWeights upload_and_max(std::span<const double> log_w, DeviceBuffer<char>& temp) {
  DeviceBuffer<double> d(log_w.size());
  TALLY_CUDA_CHECK(cudaMemcpy(d.data(), log_w.data(), log_w.size() * 8, cudaMemcpyHostToDevice));
  DeviceBuffer<double> m(1);
  std::size_t bytes = 0;
  const auto n = static_cast<std::int64_t>(log_w.size());
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, bytes, d.data(), m.data(), n));
  if (temp.size() < bytes) temp = DeviceBuffer<char>(bytes);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(temp.data(), bytes, d.data(), m.data(), n));
  double host_m = 0;
  TALLY_CUDA_CHECK(cudaMemcpy(&host_m, m.data(), 8, cudaMemcpyDeviceToHost));
  return {std::move(d), host_m};
}

}  // namespace

WeightSummary summarize_log_weights(std::span<const double> log_w) {
  const char* who = "tally::gpu::cuda::summarize_log_weights";
  detail::check_log_weights(log_w, who);
  detail::require_device(who);
  DeviceBuffer<char> temp(1);
  auto [d, m] = upload_and_max(log_w, temp);
  auto pairs = thrust::make_transform_iterator(d.data(), kernels::WeightAndSquare{m});
  DeviceBuffer<double2> sums(1);
  std::size_t bytes = 0;
  const auto n = static_cast<std::int64_t>(log_w.size());
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, pairs, sums.data(), n, kernels::AddPairs{},
                                             make_double2(0.0, 0.0)));
  if (temp.size() < bytes) temp = DeviceBuffer<char>(bytes);
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(temp.data(), bytes, pairs, sums.data(), n, kernels::AddPairs{},
                                             make_double2(0.0, 0.0)));
  double2 s{};
  TALLY_CUDA_CHECK(cudaMemcpy(&s, sums.data(), sizeof s, cudaMemcpyDeviceToHost));
  return {m, m + std::log(s.x), s.x * s.x / s.y};
}

namespace {

/// Bump allocation inside the caller's temporary storage (256-byte aligned pieces); with base == nullptr it only
/// counts the bytes.
class Carve {
 public:
  explicit Carve(void* base) : base_(static_cast<char*>(base)) {}
  template <class T>
  T* take(std::size_t count) {
    used_ = (used_ + 255) / 256 * 256;
    T* out = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + used_);
    used_ += count * sizeof(T);
    return out;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

/// The fused kernels' arrays: n = ceil(P / T) tiles, at most floor(P / (4 T + 1)) of them heavy; the heavy tiles'
/// k arrays (T each, at most 2 P bytes in all) only where the ancestors are written by the fused kernels.
fused::Plan carve_plan(Carve& carve, std::size_t p, double u, bool scratch) {
  fused::Plan plan;
  plan.p = p;
  plan.n = (p + fused::tile - 1) / fused::tile;
  plan.u = u;
  plan.end_tile = plan.n;
  const std::size_t heavy = std::min<std::size_t>(plan.n, p / (fused::spread_min + 1));
  plan.totals = carve.take<fused::Totals>(1);
  plan.m = carve.take<double>(plan.n);
  plan.s = carve.take<double>(plan.n);
  plan.q = carve.take<double>(plan.n);
  plan.o = carve.take<double>(plan.n + 1);
  plan.k = carve.take<unsigned long long>(plan.n + 1);
  plan.slot = carve.take<int>(plan.n);
  plan.heavy_tile = carve.take<unsigned long long>(heavy);
  plan.heavy_start = carve.take<unsigned long long>(heavy + 1);
  if (scratch) plan.scratch = carve.take<unsigned long long>(heavy * fused::tile);
  return plan;
}

int current_multiprocessors() {
  int device = 0, sms = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  thread_local int cached_device = -1, cached_sms = 0;  // one attribute query per thread and device
  if (device == cached_device) return cached_sms;
  TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  cached_device = device;
  cached_sms = sms;
  return sms;
}

/// Passes 1 and 2: the tile totals, then their combination (registers for up to 8 tiles a thread, else generic).
void launch_totals(const double* log_w, const fused::Plan& plan, cudaStream_t s) {
  fused::tile_totals<<<static_cast<unsigned>(plan.n), fused::threads, 0, s>>>(log_w, plan);
  if (plan.n <= std::size_t{fused::combine_threads} * fused::combine_items) {
    fused::combine_tiles<<<1, fused::combine_threads, 0, s>>>(plan);
  } else {
    fused::combine_tiles_generic<<<1, fused::combine_threads, 0, s>>>(plan);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

WeightSummary to_summary(const fused::Totals& t) {
  return {t.max_log_weight, t.max_log_weight + std::log(t.total), t.total * t.total / t.squares};
}

bool use_fused(Resampler kind, ResampleKernel kernel) {
  if (kernel == ResampleKernel::fused && kind != Resampler::systematic)
    tally::detail::fail<domain_error>("tally::gpu::cuda::resample_device: ResampleKernel::fused is systematic only");
  return kind == Resampler::systematic && kernel != ResampleKernel::cub_composition;
}

}  // namespace

void resample_device(void* temp, std::size_t& temp_bytes, const double* log_w, std::size_t p, Resampler kind,
                     std::uint64_t seed, std::uint64_t counter, std::size_t* ancestors, void* stream,
                     WeightSummary* summary, ResampleKernel kernel, const double* guard, double ess_limit) {
  const char* who = "tally::gpu::cuda::resample_device";
  if (p == 0) tally::detail::fail<shape_error>(who, ": no log-weights (an empty population)");
  const bool fused_path = use_fused(kind, kernel);
  const auto s = static_cast<cudaStream_t>(stream);
  const double u = philox_uniform(seed, 0, counter);
  auto* out = reinterpret_cast<unsigned long long*>(ancestors);
  Carve carve(temp);
  fused::Plan plan = carve_plan(carve, p, u, fused_path);
  if (fused_path) {
    plan.guard = guard;
    plan.ess_limit = ess_limit;
  }
  if (fused_path) {
    if (temp == nullptr) {
      temp_bytes = carve.used();
      return;
    }
    if (temp_bytes < carve.used())
      tally::detail::fail<shape_error>(who, ": temp_bytes is below what the sizing call set");
    const int sms = current_multiprocessors();
    // the spread pass: 4 blocks per SM, fewer where P has fewer windows of 2048 positions (8 warps x 256 each)
    constexpr std::size_t block_window = std::size_t{fused::spread_threads} * fused::spread_items;
    const std::size_t windows = (p + block_window - 1) / block_window;
    const auto spread_blocks = static_cast<unsigned>(
        std::max<std::size_t>(1, std::min<std::size_t>(windows, std::size_t(sms) * fused::spread_blocks_per_sm)));
    launch_totals(log_w, plan, s);
    fused::write_ancestors<<<static_cast<unsigned>(plan.n), fused::threads, 0, s>>>(log_w, plan, out);
    fused::spread_heavy<<<spread_blocks, fused::spread_threads, 0, s>>>(plan, out);
    TALLY_CUDA_CHECK(cudaGetLastError());
    if (summary != nullptr) {
      fused::Totals totals{};
      TALLY_CUDA_CHECK(cudaMemcpyAsync(&totals, plan.totals, sizeof totals, cudaMemcpyDeviceToHost, s));
      TALLY_CUDA_CHECK(cudaStreamSynchronize(s));
      if (s == nullptr) gpu::detail::raise_checked_after_wait();  // the host waited: earlier deferred checks are known
      *summary = to_summary(totals);
    }
    return;
  }
  // the CUB composition: the maximum and the prefix sums after the fused arrays (used for the summary), then CUB's
  // space (the larger of its two calls)
  const auto n = static_cast<std::int64_t>(p);
  double* m = carve.take<double>(1);
  double* c = carve.take<double>(p);
  void* cub_temp = carve.take<char>(0);
  auto weights = thrust::make_transform_iterator(log_w, kernels::RelativeWeight{0.0});
  std::size_t max_bytes = 0, scan_bytes = 0;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(nullptr, max_bytes, log_w, m, n, s));
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, weights, c, n, s));
  const std::size_t cub_bytes = std::max(max_bytes, scan_bytes);
  if (temp == nullptr) {
    temp_bytes = carve.used() + cub_bytes;
    return;
  }
  if (temp_bytes < carve.used() + cub_bytes)
    tally::detail::fail<shape_error>(who, ": temp_bytes is below what the sizing call set");
  if (summary != nullptr) launch_totals(log_w, plan, s);
  std::size_t bytes = cub_bytes;
  TALLY_CUDA_CHECK(cub::DeviceReduce::Max(cub_temp, bytes, log_w, m, n, s));
  double host_m = 0;
  fused::Totals totals{};
  TALLY_CUDA_CHECK(cudaMemcpyAsync(&host_m, m, 8, cudaMemcpyDeviceToHost, s));
  if (summary != nullptr)
    TALLY_CUDA_CHECK(cudaMemcpyAsync(&totals, plan.totals, sizeof totals, cudaMemcpyDeviceToHost, s));
  TALLY_CUDA_CHECK(cudaStreamSynchronize(s));
  if (s == nullptr) gpu::detail::raise_checked_after_wait();
  if (summary != nullptr) *summary = to_summary(totals);
  bytes = cub_bytes;
  weights = thrust::make_transform_iterator(log_w, kernels::RelativeWeight{host_m});
  TALLY_CUDA_CHECK(cub::DeviceScan::InclusiveSum(cub_temp, bytes, weights, c, n, s));
  const auto blocks = static_cast<unsigned>((p + 255) / 256);
  if (kind == Resampler::systematic) {
    kernels::systematic_ancestors<<<blocks, 256, 0, s>>>(c, p, u, out);
  } else {
    kernels::multinomial_ancestors<<<blocks, 256, 0, s>>>(c, p, seed, counter, out);
  }
  TALLY_CUDA_CHECK(cudaGetLastError());
}

static_assert(sizeof(fused::Totals) == weight_report_bytes, "weight_report_bytes is the size of the totals");

std::size_t weight_totals_bytes(std::size_t p) {
  Carve carve(nullptr);
  carve_plan(carve, p, 0.0, false);
  return carve.used();
}

void weight_totals(void* temp, const double* log_w, std::size_t p, void* report) {
  if (p == 0) tally::detail::fail<shape_error>("tally::gpu::cuda::weight_totals: no log-weights");
  Carve carve(temp);
  fused::Plan plan = carve_plan(carve, p, 0.0, false);  // (u: the positions K_t it sets are not used)
  plan.totals = static_cast<fused::Totals*>(report);
  launch_totals(log_w, plan, nullptr);
}

WeightSummary weight_summary_of(const void* host_report) {
  fused::Totals t{};
  std::memcpy(&t, host_report, sizeof t);
  return to_summary(t);
}

// ---- a shard's part (resample_shards.hpp) ---------------------------------------------------------------------

namespace kernels {
/// A log-weight for the shard's largest: NaN counts as +inf.
struct NanAsInfinity {
  __device__ double operator()(double l) const { return isnan(l) ? INFINITY : l; }
};
struct Larger {
  __device__ double operator()(double a, double b) const { return a < b ? b : a; }
};

/// The G reports (3 t + 1 doubles each: m, s, q of the shard's t tiles, then its largest) into the whole plan's
/// arrays, tile after tile in rank order; the population's largest into *largest.
__global__ void unpack_reports(fused::Plan plan, const double* reports, std::size_t t, double* largest) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t size = 3 * t + 1, shards = plan.n / t;
  if (i < plan.n) {
    const double* r = reports + (i / t) * size;
    const std::size_t j = i % t;
    plan.m[i] = r[j];
    plan.s[i] = r[t + j];
    plan.q[i] = r[2 * t + j];
  }
  if (i == 0) {
    double top = -INFINITY;
    for (std::size_t q = 0; q < shards; ++q) top = fmax(top, reports[q * size + 3 * t]);  // (+inf stays +inf)
    *largest = top;
  }
}

/// What the host reads of pass 2, in one copy: the totals, the largest, then the G + 1 starts K_{r t}, then for each
/// shard r the tiles of its first and last positions' ancestors (G pairs; all valid where the largest is finite:
/// pass 2 ran).
struct ShardReport {
  fused::Totals totals;
  double largest;
  unsigned long long starts[1];  // (G + 1 starts, then 2 G tiles: the carve leaves room)
};
/// The tile whose run of positions holds position `position` < P: the last t < n with K_t <= position (then
/// K_{t+1} > position, the runs of the tiles between being empty).
__device__ unsigned long long tile_of_position(const fused::Plan& plan, unsigned long long position) {
  std::size_t lo = 0, hi = plan.n;  // K_lo <= position < K_hi
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (plan.k[mid] <= position) lo = mid;
    else hi = mid;
  }
  return lo;
}
__global__ void collect_starts(fused::Plan plan, std::size_t t, const double* largest, ShardReport* report) {
  const double top = *largest;
  if (threadIdx.x == 0) report->largest = top;
  if (!isfinite(top)) return;  // (pass 2 did not run)
  const std::size_t shards = plan.n / t, s = t * fused::tile;
  for (std::size_t q = threadIdx.x; q <= shards; q += blockDim.x) report->starts[q] = plan.k[q * t];
  unsigned long long* tiles = report->starts + shards + 1;
  for (std::size_t q = threadIdx.x; q < shards; q += blockDim.x) {
    tiles[2 * q] = tile_of_position(plan, q * s);
    tiles[2 * q + 1] = tile_of_position(plan, (q + 1) * s - 1);
  }
  if (threadIdx.x == 0) report->totals = *plan.totals;
}

/// The bytes of a ShardReport of G shards.
constexpr std::size_t report_bytes(std::size_t shards) {
  return offsetof(ShardReport, starts) + (3 * shards + 1) * sizeof(unsigned long long);
}
}  // namespace kernels

namespace {
/// The shard's device layout: the whole population's plan (carve_plan, scratch included), the largest, the host's
/// report, the starts, then cub's space for the shard's largest.
struct ShardLayout {
  fused::Plan plan;
  double* largest;
  kernels::ShardReport* report;
  void* cub_temp;
  std::size_t cub_bytes;
  std::size_t bytes;
};
ShardLayout shard_layout(void* temp, std::size_t p, std::size_t s, double u) {
  Carve carve(temp);
  ShardLayout out{};
  out.plan = carve_plan(carve, p, u, true);
  out.largest = carve.take<double>(1);
  out.report = reinterpret_cast<kernels::ShardReport*>(carve.take<char>(kernels::report_bytes(p / s)));
  const auto guarded = thrust::make_transform_iterator(static_cast<const double*>(nullptr), kernels::NanAsInfinity{});
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, out.cub_bytes, guarded, static_cast<double*>(nullptr),
                                             static_cast<long long>(s), kernels::Larger{}, -INFINITY));
  out.cub_temp = carve.take<char>(out.cub_bytes);
  out.bytes = carve.used();
  return out;
}
}  // namespace

std::size_t shard_bytes(std::size_t p, std::size_t s) { return shard_layout(nullptr, p, s, 0.0).bytes; }

void shard_report(void* temp, std::size_t p, std::size_t s, std::size_t first_tile, const double* log_w,
                  double* report) {
  ShardLayout at = shard_layout(temp, p, s, 0.0);
  const std::size_t t = s / fused::tile;
  fused::Plan part = at.plan;  // pass 1 of this shard's tiles, written into its report
  part.first_tile = first_tile;
  part.end_tile = first_tile + t;
  part.m = report;
  part.s = report + t;
  part.q = report + 2 * t;
  fused::tile_totals<<<static_cast<unsigned>(t), fused::threads>>>(log_w, part);
  TALLY_CUDA_CHECK(cudaGetLastError());
  const auto guarded = thrust::make_transform_iterator(log_w, kernels::NanAsInfinity{});
  TALLY_CUDA_CHECK(cub::DeviceReduce::Reduce(at.cub_temp, at.cub_bytes, guarded, report + 3 * t,
                                             static_cast<long long>(s), kernels::Larger{}, -INFINITY));
}

double shard_plan(void* temp, std::size_t p, std::size_t s, const double* reports, double u, WeightSummary& summary,
                  std::vector<std::size_t>& start, std::vector<std::size_t>& tiles) {
  ShardLayout at = shard_layout(temp, p, s, u);
  const std::size_t t = s / fused::tile;
  fused::Plan plan = at.plan;
  plan.guard = at.largest;  // pass 2 runs only where every weight is finite and one is not 0
  kernels::unpack_reports<<<static_cast<unsigned>((plan.n + 255) / 256), 256>>>(plan, reports, t, at.largest);
  if (plan.n <= std::size_t{fused::combine_threads} * fused::combine_items) {
    fused::combine_tiles<<<1, fused::combine_threads>>>(plan);
  } else {
    fused::combine_tiles_generic<<<1, fused::combine_threads>>>(plan);
  }
  const std::size_t shards = p / s;
  kernels::collect_starts<<<1, 128>>>(plan, t, at.largest, at.report);
  TALLY_CUDA_CHECK(cudaGetLastError());
  std::vector<unsigned char> bytes(kernels::report_bytes(shards));
  gpu::detail::device_copy(bytes.data(), at.report, bytes.size(), 1);  // (waits: the one wait of the plan)
  kernels::ShardReport back{};
  std::memcpy(&back, bytes.data(), offsetof(kernels::ShardReport, starts));
  if (!std::isfinite(back.largest)) return back.largest;
  summary = to_summary(back.totals);
  auto entry = [&](std::size_t i) {
    unsigned long long k = 0;
    std::memcpy(&k, bytes.data() + offsetof(kernels::ShardReport, starts) + i * sizeof k, sizeof k);
    return static_cast<std::size_t>(k);
  };
  start.resize(shards + 1);
  for (std::size_t q = 0; q <= shards; ++q) start[q] = entry(q);
  tiles.resize(2 * shards);
  for (std::size_t i = 0; i < 2 * shards; ++i) tiles[i] = entry(shards + 1 + i);
  return back.largest;
}

void shard_ancestors(void* temp, std::size_t p, std::size_t s, std::size_t first_tile, std::size_t first_position,
                     const double* log_w, double u, std::size_t* out) {
  ShardLayout at = shard_layout(temp, p, s, u);
  const std::size_t t = s / fused::tile;
  fused::Plan plan = at.plan;
  plan.first_tile = first_tile;
  plan.end_tile = first_tile + t;
  plan.first_position = first_position;
  auto* written = reinterpret_cast<unsigned long long*>(out);
  constexpr std::size_t block_window = std::size_t{fused::spread_threads} * fused::spread_items;
  const std::size_t windows = (s + block_window - 1) / block_window;  // (a shard's heavy positions: at most P)
  const auto spread_blocks = static_cast<unsigned>(std::max<std::size_t>(
      1, std::min<std::size_t>(windows * (p / s),
                               std::size_t(current_multiprocessors()) * fused::spread_blocks_per_sm)));
  fused::write_ancestors<<<static_cast<unsigned>(t), fused::threads>>>(log_w, plan, written);
  fused::spread_heavy<<<spread_blocks, fused::spread_threads>>>(plan, written);
  TALLY_CUDA_CHECK(cudaGetLastError());
}

std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary, ResampleKernel kernel) {
  const char* who = "tally::gpu::cuda::resample";
  detail::check_log_weights(log_w, who);
  use_fused(kind, kernel);  // the kernel's error before any device work
  detail::require_device(who);
  const std::size_t p = log_w.size();
  DeviceBuffer<double> d(p);
  TALLY_CUDA_CHECK(cudaMemcpy(d.data(), log_w.data(), p * 8, cudaMemcpyHostToDevice));
  std::size_t bytes = 0;
  resample_device(nullptr, bytes, d.data(), p, kind, seed, counter, nullptr, nullptr, summary, kernel);
  DeviceBuffer<char> temp(bytes);
  DeviceBuffer<std::size_t> ancestors(p);
  resample_device(temp.data(), bytes, d.data(), p, kind, seed, counter, ancestors.data(), nullptr, summary, kernel);
  std::vector<std::size_t> out(p);
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), ancestors.data(), p * 8, cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace tally::gpu::cuda
