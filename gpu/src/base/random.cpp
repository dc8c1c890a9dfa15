// Blocks of Philox uniforms: the CPU reference and the dispatch point.
#include "tally/gpu/random.hpp"

#include "tally/gpu/backend.hpp"
#include "tally/gpu/philox.hpp"

namespace tally::gpu {

namespace cpu {
void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = philox_uniform(seed, stream, first + i);
}
}  // namespace cpu

void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out) {
  // a copy back from the device costs more than generating on the CPU below about a million draws
  if (select(true, static_cast<double>(out.size()), 1 << 20) == Backend::cuda)
    cuda::uniforms(seed, stream, first, out);
  else
    cpu::uniforms(seed, stream, first, out);
}

}  // namespace tally::gpu
