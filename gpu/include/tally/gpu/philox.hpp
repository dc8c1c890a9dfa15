// Counter-based random numbers (Philox4x32-10, Random123) that give the same draws on the host and in kernels.
#pragma once

#include <Random123/philox.h>

#include <cstdint>

#if defined(__CUDACC__)
#define TALLY_HOST_DEVICE __host__ __device__
#else
#define TALLY_HOST_DEVICE
#endif

namespace tally::gpu {

/// The uniform variate number `counter` of stream `stream` under key `seed`:
/// Philox4x32-10 of the counter (counter, stream) with key seed; the first 64 output bits, top 53 kept, give
/// \f$ u = (b + 1/2) \, 2^{-53} \in (0, 1) \f$ (never 0 or 1, so log(u) and inverse cdfs are safe).
/// A pure function: particle i's j-th draw is philox_uniform(seed, i, j) on the CPU and on the GPU alike.
TALLY_HOST_DEVICE inline double philox_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t counter) {
  using Generator = r123::Philox4x32;
  const Generator::ctr_type ctr = {{static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32),
                                    static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  const Generator::key_type key = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  const Generator::ctr_type out = Generator()(ctr, key);
  const std::uint64_t bits = ((static_cast<std::uint64_t>(out[0]) << 32) | out[1]) >> 11;
  return (static_cast<double>(bits) + 0.5) * 0x1p-53;
}

}  // namespace tally::gpu
