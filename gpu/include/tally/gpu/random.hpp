// Blocks of Philox uniforms: the CPU reference, the CUDA kernel, and the dispatch point; both give the same bits.
#pragma once

#include <cstdint>
#include <span>

namespace tally::gpu {

/// out[i] = philox_uniform(seed, stream, first + i) for every i: the draws of one stream, in order.
/// Runs on the device when one is available and the block is large, on the CPU otherwise; the values are
/// identical either way (integer arithmetic, then one exact conversion).
void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out);

namespace cpu {
/// The CPU reference (one draw after another).
void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out);
}  // namespace cpu

namespace cuda {
/// The CUDA implementation (device memory in and out, one thread per draw). Throws tally::cuda_error when
/// tally was built without CUDA, there is no device, or a CUDA call fails.
void uniforms(std::uint64_t seed, std::uint64_t stream, std::uint64_t first, std::span<double> out);
}  // namespace cuda

}  // namespace tally::gpu
