// Private: launchers of the convolution kernels on pairs in device memory (tensor-core and SIMT direct).
#pragma once

#include <cuda_runtime.h>

#include "convolve_pairs.cuh"

namespace tally::gpu::cuda::kernels {

/// Layouts of the FP64 tensor-core kernel: `wide` blocks of 4 warps share their stage windows (one large
/// convolution), `narrow` blocks of 1 warp (batches of small pairs: more blocks per SM, less padding per pair).
enum class TensorLayout { wide, narrow };

/// How one convolution of lengths m and n runs on the tensor cores: the layout (narrow below 16384 outputs, so
/// that small problems still spread over several blocks) and the number of splits of the contraction (enough
/// blocks for 4 per SM, each split at least one partial sum of 8 d-steps (narrow) or one stage of 32 (wide)).
struct TensorPlan {
  TensorLayout layout;
  int splits;
};
TensorPlan tensor_plan(long long m, long long n);

/// Runs the tensor-core kernel on `pairs` (double only). Grid: one row of blocks per pair, ceil(max_outputs /
/// tensor_block_outputs) blocks per row, `splits` blocks splitting each block's contraction. With splits > 1 the
/// partial sums go to `partial` (splits x total_outputs doubles, split-major) and are then added in a fixed order
/// into pairs.out, so results do not depend on scheduling.
void tensor_convolve(const Pairs<double>& pairs, long long max_outputs, long long total_outputs, TensorLayout layout,
                     int splits, double* partial, cudaStream_t stream);

/// The narrow tensor-core kernel with the rescale fused: one block (one warp) per pair walks all its tiles, then
/// divides its outputs by their maximum and writes offset, lo and log_scale. One launch for the whole batch.
void tensor_convolve_rescaled(const Pairs<double>& pairs, const Rescale& rescale, cudaStream_t stream);

/// Runs the SIMT direct kernel (register windows over shared memory) on `pairs`.
template <class T>
void simt_convolve(const Pairs<T>& pairs, long long max_outputs, cudaStream_t stream);

/// Runs the seed-004 skew-diagonal baseline on `pairs` (double): zeroes the outputs, then atomic adds. max_l and
/// max_s bound the longer and the shorter operand of every pair.
void skew_convolve(const Pairs<double>& pairs, long long max_l, long long max_s, cudaStream_t stream);

/// Number of streaming multiprocessors of the current device (queried once).
int multiprocessors();

}  // namespace tally::gpu::cuda::kernels
