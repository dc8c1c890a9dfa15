// The CUDA forms of population_children: a lengths pass (one thread per particle), a CUB scan read back once, then
// one warp per law for the mixture's entries; conditionings through condition_kernel.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "child_math.hpp"
#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_reference.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// What the lengths pass reports: the longest law, the first particle with an error (count: none), the total.
struct MixReport {
  unsigned long long longest;
  unsigned long long first_bad;
  long long total;
};

__global__ void init_mix_report(MixReport* r, std::size_t count) {
  r->longest = 0;
  r->first_bad = count;
  r->total = 0;
}

/// Particle i's z-range: lengths[i] (1 for a dead or bad particle; 0 for i = count, so that the exclusive scan ends
/// with the total) and its first value; a bad range flags the particle.
__global__ void mix_lengths_kernel(PmfBatchView x, detail::ChildView ch, int sx, int sy, double half,
                                   std::int64_t max_size, std::int64_t* lengths, std::int64_t* z_lo, MixReport* r) {
  const long long i = thread_index();
  if (i > static_cast<long long>(x.count)) return;
  if (i == static_cast<long long>(x.count)) {
    lengths[i] = 0;
    return;
  }
  const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin;
  const detail::MixRange range =
      detail::mix_range(ch.at(i), sx, sy, x.weights + begin, m, x.lo[i], x.log_scale[i], half, max_size);
  if (range.status != detail::MixStatus::ok) {
    atomicMin(&r->first_bad, static_cast<unsigned long long>(i));
    lengths[i] = 1;
    z_lo[i] = 0;
    return;
  }
  lengths[i] = detail::mix_length(range);
  z_lo[i] = range.lo;
  atomicMax(&r->longest, static_cast<unsigned long long>(lengths[i]));
}

__global__ void mix_total_kernel(const std::int64_t* offsets, std::size_t count, MixReport* r) {
  r->total = offsets[count];
}

/// One group of G lanes per law (G = lanes_for the longest result: short laws do not leave most of a warp idle):
/// lane l computes r(z) for z = z_lo + l, z_lo + l + G, ... (mix_entry: the CPU's order in k), then the law is
/// rescaled to maximum 1 (the group's maximum: the same whatever the lanes).
template <int G>
__global__ void mix_fill_kernel(PmfBatchView x, detail::ChildView ch, int sx, int sy, const std::int64_t* offsets,
                                const std::int64_t* z_lo, MutablePmfBatchView out) {
  const long long i = thread_index() / G;
  const int lane = static_cast<int>(threadIdx.x % G);
  if (G == 32 && i >= static_cast<long long>(x.count)) return;  // whole warps leave together
  const bool here = i < static_cast<long long>(x.count);  // (a group past the last law takes part in the shuffles)
  const std::int64_t begin = here ? x.offset[i] : 0, m = here ? x.offset[i + 1] - begin : 0, lo = here ? x.lo[i] : 0;
  const std::int64_t at = here ? offsets[i] : 0, len = here ? offsets[i + 1] - at : 0, first = here ? z_lo[i] : 0;
  const double scale = here ? x.log_scale[i] : -INFINITY;
  const detail::ChildView own = ch.at(here ? i : 0);
  double* o = out.weights + at;
  double top = 0.0;
  for (std::int64_t j = lane; j < len; j += G)
    top = fmax(top, o[j] = scale == -INFINITY ? 0.0 : detail::mix_entry(own, sx, sy, x.weights + begin, m, lo, first + j));
  top = group_max<G>(top);
  const bool dead = !(top > 0.0);
  for (std::int64_t j = lane; j < len; j += G) o[j] = dead ? 0.0 : o[j] / top;
  if (here && lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = offsets[i + 1];
    out.lo[i] = first;
    out.log_scale[i] = dead ? -INFINITY : scale + log(top);
  }
}

/// Flags (atomicMin) the first particle whose support fails the child's parent checks.
__global__ void parent_kernel(PmfBatchView x, detail::ChildView ch, unsigned long long* first_bad) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(x.count)) return;
  const std::int64_t begin = x.offset[i];
  if (detail::live_parent_status(ch.at(i), x.weights + begin, x.offset[i + 1] - begin, x.lo[i], x.log_scale[i]) !=
      detail::MixStatus::ok)
    atomicMin(first_bad, static_cast<unsigned long long>(i));
}

struct MixLogLik {
  detail::ChildView ch;
  int sx, sy;
  const std::int64_t* z;
  __device__ double operator()(long long i, std::int64_t k) const {
    return detail::mix_log_lik(ch.at(i), sx, sy, z[i], k);
  }
};

/// A per_set child's scalars on the device (null for a single child or a table child).
const double* device_q(const ChildKernel& k) { return k.q_each.empty() ? nullptr : k.q_each.data(); }

/// The host's error for flagged particle i: its law and the child's table copied back (the error path only), its
/// range recomputed by the host's rules.
[[noreturn]] void fail_on_host(const char* who, std::size_t i, const Laws& x, const ChildKernel& child, int sx, int sy,
                               double half, std::int64_t max_size, bool parent_only) {
  const PmfBatch h = x.to_host();
  const std::vector<double> table = child.table.values.to_host(), q = child.q_each.to_host();
  const detail::ChildView ch =
      detail::child_view(child, table.data(), q.empty() ? nullptr : q.data()).at(static_cast<std::int64_t>(i));
  const auto m = static_cast<std::int64_t>(h.length(i));
  const std::int64_t lo = h.lo[i], hi = lo + m - 1;
  detail::MixRange r{0, 0, detail::live_parent_status(ch, h.weights.data() + h.offset[i], m, lo, h.log_scale[i]), false};
  if (!parent_only && r.status == detail::MixStatus::ok)
    r = detail::mix_range(ch, sx, sy, h.weights.data() + h.offset[i], m, lo, h.log_scale[i], half, max_size);
  if (r.status == detail::MixStatus::ok)  // the device's rounding put a range just past max_size: say so
    tally::detail::fail<overflow_error>(who, ": particle ", i, "'s result needs more than max_size = ", max_size,
                                        " entries (on the device)");
  detail::fail_mix(who, i, r, lo, hi, static_cast<std::size_t>(ch.rows), max_size);
}

}  // namespace

Laws mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, double tolerance, std::int64_t max_size) {
  constexpr const char* who = "tally::gpu::mix";
  const std::size_t count = x.size();
  const detail::ChildView ch = detail::child_view(child, child.table.values.data(), device_q(child));
  const double half = tolerance / 2;
  auto lengths = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto z_lo = Column<std::int64_t>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  auto report = Column<MixReport>::allocate(Backend::cuda, 1, who);
  init_mix_report<<<1, 1>>>(report.data(), count);
  mix_lengths_kernel<<<thread_blocks(count + 1), block>>>(x.view(), ch, sign_x, sign_y, half, max_size, lengths.data(),
                                                          z_lo.data(), report.data());
  launched();
  std::size_t bytes = 0;
  const auto n = static_cast<long long>(count + 1);
  TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, lengths.data(), offsets.data(), n));
  auto temp = Column<unsigned char>::allocate(Backend::cuda, std::max<std::size_t>(bytes, 1), who);
  TALLY_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.data(), bytes, lengths.data(), offsets.data(), n));
  mix_total_kernel<<<1, 1>>>(offsets.data(), count, report.data());
  launched();
  MixReport r{};
  TALLY_CUDA_CHECK(cudaMemcpy(&r, report.data(), sizeof r, cudaMemcpyDeviceToHost));  // the one synchronization
  if (r.first_bad < count)
    fail_on_host(who, static_cast<std::size_t>(r.first_bad), x, child, sign_x, sign_y, half, max_size, false);
  Laws out = Laws::allocate(Backend::cuda, count, static_cast<std::size_t>(r.total), static_cast<std::size_t>(r.longest), who);
  if (count > 0)
    with_lanes(static_cast<std::size_t>(r.longest), [&](auto lanes) {
      constexpr int G = decltype(lanes)::value;
      mix_fill_kernel<G><<<group_blocks(count, G), block>>>(x.view(), ch, sign_x, sign_y, offsets.data(), z_lo.data(),
                                                            out.mutable_view());
    });
  launched();
  return out;
}

Laws condition_on_mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_mix";
  const detail::ChildView ch = detail::child_view(child, child.table.values.data(), device_q(child));
  FirstBad bad(x.size());
  if (x.size() > 0) parent_kernel<<<thread_blocks(x.size()), block>>>(x.view(), ch, bad.data());
  launched();
  const std::size_t i = bad.read();
  if (i < x.size()) fail_on_host(who, i, x, child, sign_x, sign_y, 0.0, 0, true);
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), who);
  condition_laws(x, MixLogLik{ch, sign_x, sign_y, z.data()}, out, log_likelihood);
  return out;
}

}  // namespace tally::gpu::population_cuda
