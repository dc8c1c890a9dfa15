// Batched convolution and batched conditioning on sums (one pair per particle): CPU reference, CUDA, dispatch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tally/gpu/convolve.hpp"
#include "tally/gpu/pmf_batch.hpp"

namespace tally::gpu {

/// For each i, the pmf of X_i + Y_i with X_i ~ x[i] and Y_i ~ y[i] independent:
/// \f[ r_{i,k} = \sum_j x_{i,j} \, y_{i,k-j}, \qquad \mathrm{lo}(r_i) = \mathrm{lo}(x_i) + \mathrm{lo}(y_i), \f]
/// m_i + n_i - 1 weights, computed on the stored weights and rescaled after ("rescale after": divided by their
/// maximum, log_scale(r_i) = log_scale(x_i) + log_scale(y_i) + log max). Every weight has the relative accuracy
/// of the single convolution (a few hundred roundings at most). Throws tally::shape_error when the batches have
/// different sizes, tally::overflow_error when lo(x_i) + lo(y_i) leaves int64.
/// The dispatch point: CUDA when built, a device is present and the batch is large enough; else the CPU.
PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y);

/// Conditioning on observed sums X_i + Y_i = z_i, for each i.
struct SumConditioning {
  /// Pmf of X_i given X_i + Y_i = z_i, on x[i]'s support (weights with maximum 1, log_scale making it sum to 1);
  /// an impossible observation leaves all weights 0 and log_scale -inf.
  PmfBatch posterior;
  /// log P(X_i + Y_i = z_i) including both log scales; -inf when impossible.
  std::vector<double> log_likelihood;
};

/// \f[ w_{i,j} \propto x_{i,j} \, y_{i,z_i-j}, \qquad \log L_i = \log \sum_j x_{i,j} y_{i,z_i-j}
///     + \mathrm{log\_scale}(x_i) + \mathrm{log\_scale}(y_i). \f]
/// The products are formed as mantissa products with their binary exponents moved out (so a likelihood far below
/// the smallest double, say 1e-400 relative to the scales, is still exact, not -inf). Throws tally::shape_error
/// when sizes differ (z has one entry per pair), tally::overflow_error when a |z_i| or |lo| reaches 2^61 (so that
/// z - lo_x - lo_y cannot overflow; a precondition of the device form).
SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z);

namespace cpu {
/// CPU references with the same contracts.
///@{
PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y);
SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z);
///@}
/// The reference of cuda::convolve_shared_device: pmf i of x with pmf i / per of y (y.size() per == x.size(), per
/// >= 1: shape_error), computed and rescaled as convolve_batched computes a pair.
PmfBatch convolve_shared_batched(const PmfBatch& x, const PmfBatch& y, std::size_t per);
}  // namespace cpu

namespace cuda {
/// The CUDA implementations, host batches in and out (copies included): tally::cuda_error without a device.
///@{
PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y, Kernel kernel = Kernel::automatic);
SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z);
///@}

/// Device-memory forms, asynchronous on `stream` (a cudaStream_t or nullptr). x and y hold `count` pmfs each with
/// weights in [0, 1]; max_length must bound every m_i and n_i (it sizes the grid and picks the kernel; a smaller
/// value is undefined behaviour). `out` has room for sum_i (m_i + n_i - 1) weights; its offset, lo and log_scale
/// are written. max_outputs, when not 0, must bound every m_i + n_i - 1 (0: taken as 2 max_length - 1); it picks
/// the small kernel's outputs per lane. `automatic`: the small-pair kernel (one warp per pair, both operands in
/// shared memory, the rescale fused: one launch) when no pair has more than 256 outputs, else the tensor-core
/// kernel: one warp per pair with the rescale fused when no pair has more than 512 outputs, a warp per 512-output
/// tile and then a rescale pass above (its Toeplitz blocks made of each pair's shorter operand, so that its work
/// follows the product of the lengths, not the longer length squared); `tensor_core` forces the latter. `direct` (the SIMT tiled kernel) and `skew` (the
/// seed-004 baseline; at most 65535 pairs) are followed by the rescale pass. No temporary storage.
void convolve_batched_device(PmfBatchView x, PmfBatchView y, std::size_t max_length, MutablePmfBatchView out,
                             void* stream = nullptr, Kernel kernel = Kernel::automatic, std::size_t max_outputs = 0);
/// Convolutions against shared laws: law i of x with law b(i) = floor(i / per) of y, the law its block of `per`
/// particles shares (y.count per == x.count; or y.count == 1, one law for all, with per >= x.count),
/// \f[ r_{i,k} = \sum_j x_{i,j} \, y_{b(i),k-j}, \qquad \mathrm{lo}(r_i) = \mathrm{lo}(x_i) + \mathrm{lo}(y_{b(i)}), \f]
/// rescaled after: the same kernels, results and accuracy as convolve_batched_device on y's laws repeated per
/// times, without the copies (each pair reads its shared law where it is, from the caches). Outputs are laid out as
/// that call's (law i's m_b(i) + n_i - 1 weights follow those of laws 0 .. i-1), so `out` needs room for
/// sum_i (m_b(i) + n_i - 1) weights. x_max_length and shared_max_length bound the lengths of x's and y's laws (they
/// pick the kernel, as max_outputs does there). tally::shape_error for batches that do not fit. No temporary storage.
void convolve_shared_device(PmfBatchView x, PmfBatchView y, std::size_t per, std::size_t x_max_length,
                            std::size_t shared_max_length, MutablePmfBatchView out, void* stream = nullptr,
                            Kernel kernel = Kernel::automatic);
/// One launch: posterior (same offsets as x, written; lo copied) and log_likelihood (count entries).
void condition_on_sum_batched_device(PmfBatchView x, PmfBatchView y, const std::int64_t* z, MutablePmfBatchView posterior,
                                     double* log_likelihood, void* stream = nullptr);
}  // namespace cuda

}  // namespace tally::gpu
