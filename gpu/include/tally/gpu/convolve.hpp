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
/// the problem is large enough to pay for it, and the CPU reference (`cpu::convolve`) otherwise.
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r);

namespace cuda {
/// The CUDA implementations, host memory in and out (copies included). Throw tally::cuda_error when tally was
/// built without CUDA, there is no device, or a CUDA call fails (nothing is written to r then), and
/// tally::shape_error as the CPU reference does.
/// Direct tiled kernel: each block computes a tile of outputs, each thread a run of consecutive outputs held in
/// registers while the contraction streams through shared memory in blocks of 256 terms (same accuracy model as
/// the CPU reference).
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r);
/// Baseline after seed 004: threads arranged by skew diagonals of 32 x 32 tiles of the outer product, warp
/// shuffles summing each diagonal, atomic adds across tiles.
void convolve_skew(std::span<const double> p, std::span<const double> q, std::span<double> r);

/// The same on device memory, asynchronously on `stream` (a cudaStream_t; nullptr for the default stream): the
/// building blocks of the host versions above and of device-resident populations. p, q and r point to device
/// arrays of m, n and m + n - 1 entries; the skew version zeroes r itself.
void convolve_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r, void* stream = nullptr);
void convolve_device(const float* p, std::size_t m, const float* q, std::size_t n, float* r, void* stream = nullptr);
void convolve_skew_device(const double* p, std::size_t m, const double* q, std::size_t n, double* r,
                          void* stream = nullptr);
}  // namespace cuda

namespace cpu {
/// The CPU reference of tally::gpu::convolve, with the same contract: blocked so that the compiler vectorizes
/// it (AVX-512, AVX2+FMA or SSE2, chosen at run time).
void convolve(std::span<const double> p, std::span<const double> q, std::span<double> r);
void convolve(std::span<const float> p, std::span<const float> q, std::span<float> r);
}  // namespace cpu

}  // namespace tally::gpu
