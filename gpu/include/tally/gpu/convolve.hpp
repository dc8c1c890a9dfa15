// Convolution of two arrays (the pmf of a sum of independent variables): CPU reference and the dispatch point.
#pragma once

#include <cstddef>
#include <span>

namespace tally::gpu {

/// Direct (exact, no FFT) linear convolution
/// \f[ r_k = \sum_{j=\max(0,\,k-n+1)}^{\min(m-1,\,k)} p_j \, q_{k-j}, \qquad 0 \le k \le m+n-2, \f]
/// with m = p.size(), n = q.size(); r must have exactly m + n - 1 entries and must not overlap p or q.
/// All terms are products of the inputs, so with non-negative inputs every r_k has a relative error of at most
/// about (256 + min(m,n)/256) units of roundoff: the sum over j runs in blocks of 256 whose partial sums are
/// then added. Throws tally::shape_error when p or q is empty or r has the wrong length.
///
/// This is the one dispatch point: it runs the CUDA implementation where one is built, a device is present and
/// the problem is large enough to pay for it, and the CPU reference (`cpu::convolve`) otherwise. On the CPU, more
/// than cpu_max_work = 2^36 multiply-adds (m n: tens of seconds on one core, two operands of 2^18 entries) is
/// refused at once with tally::overflow_error naming the sizes, instead of an apparent hang (a device takes them).
///@{
inline constexpr double cpu_max_work = 68719476736.0;  // 2^36
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r);
///@}

namespace cuda {
/// Which CUDA kernel computes a convolution.
///  - `tensor_core`: the convolution as a sum of 32 x 32 block-Toeplitz matrix products on the FP64 tensor cores
///    (DMMA), double only; contraction split across blocks and partial sums added in a fixed order.
///  - `direct`: the SIMT tiled kernel (each thread a run of outputs in registers, the contraction streaming through
///    shared memory), double and float.
///  - `skew`: the baseline after seed 004 (threads by skew diagonals of 32 x 32 tiles of the outer product, warp
///    shuffle sums, atomic adds across tiles), double only; its rounding depends on the order of the atomics.
///  - `automatic`: the fastest for the size, by the crossovers measured in bench/RESULTS.md.
/// Every kernel sums its terms in blocks of at most 256 (the skew kernel: 32) before adding the partial sums, so all
/// have the CPU reference's accuracy. Float requests for a double-only kernel run `direct`.
enum class Kernel { automatic, tensor_core, direct, skew };

/// The CUDA implementations, host memory in and out (copies included). Throw tally::cuda_error when tally was
/// built without CUDA, there is no device, or a CUDA call fails (nothing is written to r then), and
/// tally::shape_error as the CPU reference does.
///@{
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r,
              Kernel kernel = Kernel::automatic);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r,
              Kernel kernel = Kernel::automatic);
///@}

/// The same on device memory, asynchronously on `stream` (a cudaStream_t; nullptr for the default stream): the
/// building blocks of the host versions above and of device-resident populations. p, q and r point to device
/// arrays of m, n and m + n - 1 entries. Temporary storage (split partial sums) is allocated stream-ordered
/// (cudaMallocAsync) and freed before returning.
///@{
void convolve_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r,
                     void* stream = nullptr, Kernel kernel = Kernel::automatic);
void convolve_device(const float* p, std::size_t m, const float* q, std::size_t n, float* r, void* stream = nullptr,
                     Kernel kernel = Kernel::automatic);
///@}
/// The two-phase form (CUB's convention): with temp == nullptr only sets temp_bytes to the temporary storage the
/// call needs; call again with at least that many bytes of device memory at temp.
void convolve_device(void* temp, std::size_t& temp_bytes, const double* p, std::size_t m, const double* q,
                     std::size_t n, double* r, void* stream = nullptr, Kernel kernel = Kernel::automatic);
}  // namespace cuda

namespace cpu {
/// The CPU reference of tally::gpu::convolve, with the same contract: blocked so that the compiler vectorizes
/// it (AVX-512, AVX2+FMA or SSE2, chosen at run time).
///@{
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r);
///@}
}  // namespace cpu

}  // namespace tally::gpu
