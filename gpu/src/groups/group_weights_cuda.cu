// Groups' weights on the device: a block per group for the summaries (largest log-weight, then the two sums) and for
// the prefix sums of a resampled group (CUB block scans, carried from chunk to chunk), then a thread per position
// for the ancestors (a binary search in its group's prefix sums). No host wait: everything stays in device memory.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cmath>

#include "cuda_check.cuh"
#include "population_kernels.cuh"
#include "tally/gpu/group_weights.hpp"
#include "tally/gpu/philox.hpp"

namespace tally::gpu::detail {
namespace {

using population_cuda::kernels::launched;
using population_cuda::kernels::thread_blocks;
using population_cuda::kernels::thread_index;

/// Threads a group's block runs: a warp for groups of at most 64 particles, 128 up to 1024, 256 beyond (the same
/// choice for both per-group kernels).
template <class Launch>
void with_block(std::size_t group_size, Launch launch) {
  if (group_size <= 64)
    launch(std::integral_constant<int, 32>{});
  else if (group_size <= 1024)
    launch(std::integral_constant<int, 128>{});
  else
    launch(std::integral_constant<int, 256>{});
}

struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

/// The largest of the group's size log-weights from `log_w`, in every thread of the block (one reduction, one barrier).
template <int B>
__device__ double block_largest(const double* log_w, std::size_t size,
                                typename cub::BlockReduce<double, B>::TempStorage& temp, double& shared) {
  double m = -INFINITY;
  for (std::size_t k = threadIdx.x; k < size; k += B) m = fmax(m, log_w[k]);
  m = cub::BlockReduce<double, B>(temp).Reduce(m, MaxOp{});
  if (threadIdx.x == 0) shared = m;
  __syncthreads();
  return shared;
}

template <int B>
__global__ void group_summaries(const double* log_w, std::size_t size, double* largest, double* log_mean_weight,
                                double* ess) {
  using Reduce = cub::BlockReduce<double, B>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ double shared_max;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * size;
  constexpr double neg_inf = -INFINITY;
  const double m = block_largest<B>(log_w + first, size, temp, shared_max);
  double s1 = 0.0, s2 = 0.0;
  if (m > neg_inf)
    for (std::size_t k = threadIdx.x; k < size; k += B) {
      const double w = exp(log_w[first + k] - m);
      s1 += w;
      s2 += w * w;
    }
  s1 = Reduce(temp).Sum(s1);
  __syncthreads();
  s2 = Reduce(temp).Sum(s2);
  if (threadIdx.x == 0) {
    largest[blockIdx.x] = m;
    log_mean_weight[blockIdx.x] = m > neg_inf ? m + log(s1) - log(static_cast<double>(size)) : neg_inf;
    ess[blockIdx.x] = m > neg_inf ? s1 * s1 / s2 : 0.0;
  }
}

/// The weighted mean and variance of each group's values (a block per group): the largest log-weight, then the
/// sums of w, w^2 and w v, then of w (v - mean)^2, as the CPU reference (weights 1 where all are -inf).
template <int B>
__global__ void group_moments(const std::int64_t* values, const double* log_w, std::size_t size, double* mean_out,
                              double* variance_out, double* ess_out) {
  using Reduce = cub::BlockReduce<double, B>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ double shared_max, shared_mean, shared_total;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * size;
  constexpr double neg_inf = -INFINITY;
  const double m = block_largest<B>(log_w + first, size, temp, shared_max);
  const auto weight = [&](std::size_t k) { return m > neg_inf ? exp(log_w[first + k] - m) : 1.0; };
  double s1 = 0.0, s2 = 0.0, sv = 0.0;
  for (std::size_t k = threadIdx.x; k < size; k += B) {
    const double w = weight(k);
    s1 += w;
    s2 += w * w;
    sv += w * static_cast<double>(values[first + k]);
  }
  s1 = Reduce(temp).Sum(s1);
  __syncthreads();
  s2 = Reduce(temp).Sum(s2);
  __syncthreads();
  sv = Reduce(temp).Sum(sv);
  if (threadIdx.x == 0) shared_mean = sv / s1, shared_total = s1;
  __syncthreads();
  const double mean = shared_mean;
  double sd = 0.0;
  for (std::size_t k = threadIdx.x; k < size; k += B) {
    const double d = static_cast<double>(values[first + k]) - mean;
    sd += weight(k) * d * d;
  }
  __syncthreads();
  sd = Reduce(temp).Sum(sd);
  if (threadIdx.x == 0) {
    mean_out[blockIdx.x] = mean;
    variance_out[blockIdx.x] = sd / shared_total;
    ess_out[blockIdx.x] = m > neg_inf ? s1 * s1 / s2 : 0.0;
  }
}

/// Whether group g is resampled (the CPU reference's rule).
__device__ inline bool resampled_group(const double* largest, const double* ess, std::size_t g, double threshold,
                                       double size) {
  return largest[g] > -INFINITY && (threshold >= 1.0 || ess[g] < threshold * size);
}

struct Carry {  // the running total of a group's prefix sums, from one chunk to the next
  double total = 0.0;
  __device__ double operator()(double chunk) {
    const double before = total;
    total += chunk;
    return before;
  }
};

template <int B>
__global__ void group_prefix_sums(const double* log_w, std::size_t size, const double* largest, const double* ess,
                                  double threshold, double* prefix, std::int64_t* flags) {
  using Scan = cub::BlockScan<double, B>;
  __shared__ typename Scan::TempStorage temp;
  const std::size_t g = blockIdx.x;
  const bool resample = resampled_group(largest, ess, g, threshold, static_cast<double>(size));
  if (threadIdx.x == 0) flags[g] = resample ? 1 : 0;
  if (!resample) return;
  const double m = largest[g];
  const std::size_t first = g * size;
  Carry carry;
  for (std::size_t chunk = 0; chunk < size; chunk += B) {
    const std::size_t k = chunk + threadIdx.x;
    const double w = k < size ? exp(log_w[first + k] - m) : 0.0;
    double c;
    Scan(temp).InclusiveSum(w, c, carry);
    if (k < size) prefix[first + k] = c;
    __syncthreads();
  }
}

__global__ void group_ancestors(const double* log_w, std::size_t count, std::size_t size, const double* prefix,
                                const std::int64_t* flags, bool systematic, std::uint64_t seed, std::uint64_t counter,
                                std::uint64_t first_group, std::size_t* ancestors, double* log_w_after) {
  const long long p = thread_index();
  if (p >= static_cast<long long>(count)) return;
  const std::size_t i = static_cast<std::size_t>(p), g = i / size, j = i % size, first = g * size;
  if (flags[g] == 0) {
    ancestors[i] = i;
    log_w_after[i] = log_w[i];
    return;
  }
  const double* c = prefix + first;
  const double total = c[size - 1];
  const double t = systematic ? (static_cast<double>(j) + philox_uniform(seed, first_group + g, counter)) * total /
                                    static_cast<double>(size)
                              : philox_uniform(seed, first_group * size + i, counter) * total;
  // the first prefix sum above t (upper bound); where rounding leaves none, the first that reaches the total
  std::size_t lo = 0, hi = size;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (c[mid] > t)
      hi = mid;
    else
      lo = mid + 1;
  }
  if (lo == size) {
    hi = size;
    lo = 0;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (c[mid] >= total)
        hi = mid;
      else
        lo = mid + 1;
    }
  }
  ancestors[i] = first + lo;
  log_w_after[i] = 0.0;
}

}  // namespace

GroupWeights summarize_groups_device(const Column<double>& log_w, std::size_t group_size) {
  constexpr const char* who = "tally::gpu::summarize_groups";
  const std::size_t groups = log_w.size() / group_size;
  GroupWeights out{Column<double>::allocate(Backend::cuda, groups, who),
                   Column<double>::allocate(Backend::cuda, groups, who),
                   Column<double>::allocate(Backend::cuda, groups, who)};
  with_block(group_size, [&](auto b) {
    group_summaries<decltype(b)::value><<<static_cast<unsigned>(groups), decltype(b)::value>>>(
        log_w.data(), group_size, out.max_log_weight.data(), out.log_mean_weight.data(), out.ess.data());
  });
  launched();
  return out;
}

GroupMoments summarize_values_by_group_device(const Column<std::int64_t>& values, const Column<double>& log_w,
                                              std::size_t group_size) {
  constexpr const char* who = "tally::gpu::summarize_values_by_group";
  const std::size_t groups = log_w.size() / group_size;
  GroupMoments out{Column<double>::allocate(Backend::cuda, groups, who), Column<double>::allocate(Backend::cuda, groups, who),
                   Column<double>::allocate(Backend::cuda, groups, who)};
  with_block(group_size, [&](auto b) {
    group_moments<decltype(b)::value><<<static_cast<unsigned>(groups), decltype(b)::value>>>(
        values.data(), log_w.data(), group_size, out.mean.data(), out.variance.data(), out.ess.data());
  });
  launched();
  return out;
}

GroupResampled resample_groups_device(const Column<double>& log_w, std::size_t group_size, const GroupWeights& weights,
                                      double threshold, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                                      std::uint64_t first_group) {
  constexpr const char* who = "tally::gpu::resample_groups";
  const std::size_t p = log_w.size(), groups = p / group_size;
  GroupResampled out{Column<std::size_t>::allocate(Backend::cuda, p, who), Column<double>::allocate(Backend::cuda, p, who),
                     Column<std::int64_t>::allocate(Backend::cuda, groups, who)};
  auto prefix = Column<double>::allocate(Backend::cuda, p, who);
  with_block(group_size, [&](auto b) {
    group_prefix_sums<decltype(b)::value><<<static_cast<unsigned>(groups), decltype(b)::value>>>(
        log_w.data(), group_size, weights.max_log_weight.data(), weights.ess.data(), threshold, prefix.data(),
        out.resampled.data());
  });
  launched();
  group_ancestors<<<thread_blocks(p), population_cuda::kernels::block>>>(
      log_w.data(), p, group_size, prefix.data(), out.resampled.data(), kind == Resampler::systematic, seed, counter,
      first_group, out.ancestors.data(), out.log_w.data());
  launched();
  return out;
}

}  // namespace tally::gpu::detail
