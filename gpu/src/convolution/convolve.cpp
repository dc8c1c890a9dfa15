// The dispatch point for convolution: the CUDA direct kernel for large problems on a device, the CPU reference else.
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve.hpp"

namespace tally::gpu {
namespace {
// Below this many multiply-adds the copies to and from the device cost more than the CPU's whole convolution
// (a first setting, to be replaced by the measured crossover of bench/RESULTS.md).
constexpr double cuda_min_work = 1 << 24;

template <class T>
void dispatch(std::span<const T> p, std::span<const T> q, std::span<T> r) {
  const double work = static_cast<double>(p.size()) * static_cast<double>(q.size());
  if (select(true, work, cuda_min_work) == Backend::cuda) {
    cuda::convolve(p, q, r);
    return;
  }
  if (work > cpu_max_work)
    tally::detail::fail<overflow_error>("tally::gpu::convolve: a direct convolution of ", p.size(), " and ", q.size(),
                                        " entries needs ", work, " multiply-adds, more than the CPU path's 2^36 (",
                                        device_description(), ")");
  cpu::convolve(p, q, r);
}
}  // namespace

void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r) { dispatch(p, q, r); }
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r) { dispatch(p, q, r); }

}  // namespace tally::gpu
