// The dispatch point of the batched convolution and conditioning on sums.
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve_batched.hpp"

namespace tally::gpu {
namespace {
// Below this many multiply-adds (convolution) or weights read (conditioning) the copies to and from the device
// cost more than the CPU's work (measured crossovers, bench/RESULTS.md).
constexpr double cuda_min_madds = 1 << 24;
constexpr double cuda_min_reads = 1 << 22;
}  // namespace

PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y) {
  double work = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size() && i + 1 < x.offset.size() && i + 1 < y.offset.size(); ++i)
    work += static_cast<double>(x.length(i)) * static_cast<double>(y.length(i));
  return select(true, work, cuda_min_madds) == Backend::cuda ? cuda::convolve_batched(x, y)
                                                             : cpu::convolve_batched(x, y);
}

SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z) {
  const double work = static_cast<double>(x.weights.size() + y.weights.size());
  return select(true, work, cuda_min_reads) == Backend::cuda ? cuda::condition_on_sum_batched(x, y, z)
                                                             : cpu::condition_on_sum_batched(x, y, z);
}

}  // namespace tally::gpu
