// The CUDA form of count_laws: each particle's window by one thread, the lengths scanned and read back once, then
// the weights by a group of lanes per law sized to the longest; and common_value's one pass.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "count_math.hpp"
#include "cuda_check.cuh"
#include "length_scan.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

namespace counts = detail::counts;

/// What the windows pass reports (read back once): the longest law, the first particle without a law (count:
/// none), the total length, and the largest error bound (a non-negative double's bits, which order as the double).
struct CountReport {
  unsigned long long longest;
  unsigned long long first_bad;
  long long total;
  unsigned long long error_bits;
};

__global__ void init_count_report(CountReport* r, std::size_t count) {
  r->longest = 0;
  r->first_bad = count;
  r->total = 0;
  r->error_bits = 0;
}

/// Particle i's law from the columns (b: null where the family has none).
__device__ inline counts::CountStatus law_at(CountFamily family, double s, const double* a, const double* b,
                                             long long i, counts::CountLaw& law) {
  return counts::read_law(family, s, a[i], b != nullptr ? b[i] : 0.0, law);
}

/// One thread per particle (and one for i = count, whose length 0 ends the scan with the total): lengths[i],
/// lo[i] and top[i] from its window; the first particle without one flagged in r->first_bad (its length 1, so that
/// the scan stays well formed), the longest and the largest error folded into r.
__global__ void windows_kernel(CountFamily family, double s, const double* a, const double* b, std::size_t count,
                               double tolerance, std::int64_t max_size, std::int64_t* lengths, std::int64_t* lo,
                               double* top, CountReport* r) {
  const long long i = thread_index();
  unsigned long long length = 0, error_bits = 0;
  if (i == static_cast<long long>(count)) {
    lengths[i] = 0;
  } else if (i < static_cast<long long>(count)) {
    counts::CountLaw law;
    const counts::CountRange range =
        counts::window_of(family, s, a[i], b != nullptr ? b[i] : 0.0, tolerance, max_size, law);
    if (range.status != counts::CountStatus::ok) {
      atomicMin(&r->first_bad, static_cast<unsigned long long>(i));
      lengths[i] = 1;
      lo[i] = 0;
      top[i] = 0.0;
    } else {
      length = static_cast<unsigned long long>(range.hi - range.lo + 1);
      lengths[i] = static_cast<std::int64_t>(length);
      lo[i] = range.lo;
      top[i] = range.top;
      error_bits = static_cast<unsigned long long>(__double_as_longlong(range.error));
    }
  }
  warp_fold_max(length, &r->longest);
  warp_fold_max(error_bits, &r->error_bits);
}

__global__ void count_total_kernel(const std::int64_t* offset, std::size_t count, CountReport* r) {
  r->total = offset[count];
}

/// One group of G lanes per law: weight k of law i is e^{log p_i(lo_i + k) - top_i}, the lanes striding over k.
template <int G>
__global__ void count_fill_kernel(CountFamily family, double s, const double* a, const double* b, std::size_t count,
                                  const std::int64_t* offsets, const std::int64_t* lo, const double* top,
                                  MutablePmfBatchView out) {
  const long long i = thread_index() / G;
  const int lane = static_cast<int>(threadIdx.x % G);
  if (i >= static_cast<long long>(count)) return;
  counts::CountLaw law;
  law_at(family, s, a, b, i, law);  // (checked by the windows pass)
  const std::int64_t begin = offsets[i], m = offsets[i + 1] - begin, first = lo[i];
  const double t = top[i];
  for (std::int64_t k = lane; k < m; k += G) out.weights[begin + k] = counts::count_weight(law, t, first + k);
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = offsets[i + 1];
    out.lo[i] = first;
    out.log_scale[i] = t;
  }
}

/// common[1] (its bits) becomes 1 where some value differs from c[0], which common[0] takes.
__global__ void common_kernel(const double* c, std::size_t count, double* common) {
  const long long i = thread_index();
  if (i == 0) common[0] = c[0];
  if (i < static_cast<long long>(count) && __double_as_longlong(c[i]) != __double_as_longlong(c[0]))
    common[1] = 1.0;
}

}  // namespace

CountLaws count_laws(CountFamily family, double s, const Column<double>& a, const Column<double>* b, double tolerance,
                     std::int64_t max_size) {
  constexpr const char* who = "tally::gpu::count_laws";
  const std::size_t count = a.size();
  if (count >= (std::size_t{1} << 32))
    tally::detail::fail<shape_error>(who, ": ", count, " particles (at most 2^32 - 1 on the device)");
  const double* bp = b != nullptr ? b->data() : nullptr;
  auto lengths = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto lo = Column<std::int64_t>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  auto top = Column<double>::allocate(Backend::cuda, std::max<std::size_t>(count, 1), who);
  auto report = Column<CountReport>::allocate(Backend::cuda, 1, who);
  init_count_report<<<1, 1>>>(report.data(), count);
  launched();
  windows_kernel<<<thread_blocks(count + 1), block>>>(family, s, a.data(), bp, count, tolerance, max_size,
                                                      lengths.data(), lo.data(), top.data(), report.data());
  launched();
  scan_lengths_on_device(lengths.data(), offsets.data(), count);
  count_total_kernel<<<1, 1>>>(offsets.data(), count, report.data());
  launched();
  CountReport r{};
  TALLY_CUDA_CHECK(cudaMemcpy(&r, report.data(), sizeof r, cudaMemcpyDeviceToHost));
  if (r.first_bad < count) {
    // the failing particle's parameters read back, its status found again by the same formulas on the host
    const auto i = static_cast<std::size_t>(r.first_bad);
    double ai = 0.0, bi = 0.0;
    TALLY_CUDA_CHECK(cudaMemcpy(&ai, a.data() + i, sizeof ai, cudaMemcpyDeviceToHost));
    if (bp != nullptr) TALLY_CUDA_CHECK(cudaMemcpy(&bi, bp + i, sizeof bi, cudaMemcpyDeviceToHost));
    counts::CountLaw law;
    const counts::CountStatus status = counts::window_of(family, s, ai, bi, tolerance, max_size, law).status;
    detail::fail_count_law(who, family, s, i, ai, bi, static_cast<int>(status), max_size);
  }
  CountLaws out{Laws::allocate(Backend::cuda, count, static_cast<std::size_t>(r.total),
                               static_cast<std::size_t>(r.longest), who),
                std::bit_cast<double>(r.error_bits)};
  if (count == 0) return out;
  with_lanes(static_cast<std::size_t>(r.longest), [&](auto lanes) {
    constexpr int G = decltype(lanes)::value;
    count_fill_kernel<G><<<group_blocks(count, G), block>>>(family, s, a.data(), bp, count, offsets.data(), lo.data(),
                                                             top.data(), out.laws.mutable_view());
    launched();
  });
  return out;
}

std::optional<double> common_value(const Column<double>& c) {
  auto common = Column<double>::allocate(Backend::cuda, 2, "tally::gpu::common_value");
  TALLY_CUDA_CHECK(cudaMemset(common.data(), 0, 2 * sizeof(double)));
  common_kernel<<<thread_blocks(c.size()), block>>>(c.data(), c.size(), common.data());
  launched();
  double host[2] = {0.0, 0.0};
  TALLY_CUDA_CHECK(cudaMemcpy(host, common.data(), sizeof host, cudaMemcpyDeviceToHost));
  if (host[1] != 0.0) return std::nullopt;
  return host[0];
}

}  // namespace tally::gpu::population_cuda
