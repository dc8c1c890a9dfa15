// Resampling of particle log-weights: stable normalization, the effective sample size, systematic and multinomial.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// What a population's log-weights \f$\ell_i\f$ say, computed stably with \f$m = \max_i \ell_i\f$:
/// \f[ \log \sum_i e^{\ell_i} = m + \log \sum_i e^{\ell_i - m}, \qquad
///     \mathrm{ESS} = \frac{(\sum_i e^{\ell_i - m})^2}{\sum_i e^{2(\ell_i - m)}} \in [1, P]. \f]
struct WeightSummary {
  /// m, the largest log-weight.
  double max_log_weight;
  double log_sum;  ///< log of the sum of the weights (the log-evidence increment is log_sum - log P)
  /// The effective sample size, in [1, P].
  double ess;
};

/// How ancestors are drawn from the normalized weights.
enum class Resampler {
  /// One uniform u = philox_uniform(seed, 0, counter); particle i gets the positions [k(C_{i-1}), k(C_i)) with
  /// \f$k(c) = \min(P, \lfloor c\,g + u \rfloor)\f$, g = P / W (computed as fma(c, g, u), one rounding), k(W) = P,
  /// C_{-1} = 0, where C_i are the prefix sums of the weights relative to the largest and W = C_{P-1} their total:
  /// so every position 0 .. P-1 is written once, a particle's number of offspring is within 1 of P w_i (up to the
  /// rounding of the sums), a particle of weight 0 gets none, and the ancestors come out in increasing order. The
  /// sums are taken in tiles of 4096 particles, in the fixed order of gpu/src/scans/resample_order.hpp (clamped at the
  /// tile borders so that neighbouring runs meet exactly), on the CPU and in the fused CUDA kernels alike.
  systematic,
  /// Ancestor j is the smallest i with \f$C_i > u_j C_{P-1}\f$, u_j = philox_uniform(seed, j, counter): P
  /// independent draws (the smallest i with C_i = C_{P-1} where rounding leaves none). Never a particle of weight 0.
  /// C here: the sequential prefix sums (CPU), CUB's scan (CUDA).
  multinomial,
};

/// Throws tally::shape_error (no weights) and tally::domain_error (a NaN or +inf log-weight, or every one -inf:
/// a population with no weight cannot be resampled; the message says which).
WeightSummary summarize_log_weights(std::span<const double> log_w);

/// P ancestor indices (P = log_w.size()) drawn by `kind` from the normalized weights. Errors as above. With
/// `summary`, also the population's WeightSummary from the same passes (the tile sums of resample_order.hpp: equal
/// to summarize_log_weights up to rounding, about 1e-15 relative). The CPU and the GPU use the same uniforms and,
/// for systematic, the same tiles and order of additions; exp may differ in the last bit between host and device,
/// so an ancestor may differ where C_i g + u lands within rounding of an integer (about 1e-11 at P = 2^20: none seen
/// in 2^24 draws). Where the log-weights are all equal or -inf (every sum exact) the two agree to the bit.
/// The dispatch point: CUDA when built, a device is present and P >= 2^18.
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary = nullptr);

namespace cpu {
/// The CPU reference of summarize_log_weights (one core).
WeightSummary summarize_log_weights(std::span<const double> log_w);
/// The reference: systematic follows the tiles of resample_order.hpp step by step (one core).
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary = nullptr);
}  // namespace cpu

namespace cuda {
/// Which CUDA implementation resample() and resample_device() run.
enum class ResampleKernel {
  automatic,  ///< fused for systematic, cub_composition for multinomial
  /// Systematic only (tally::domain_error with multinomial). Three passes over tiles of T = 4096 particles: the
  /// tile maxima and sums (reads l), their combination in one block (the tile offsets, the total, the summary),
  /// then the ancestors (reads l again, writes each position once, block by block, coalesced; a tile owning more
  /// than 4 T positions is spread over the whole grid by a fourth kernel, so one particle holding all the weight
  /// costs no more than spread weights). 24 P bytes: l read twice, ancestors written once. The scheme and the
  /// order: gpu/src/scans/resample_kernels.cuh and resample_order.hpp.
  fused,
  /// The CUB composition, kept as a baseline: DeviceReduce::Max (read back to the host), DeviceScan::InclusiveSum
  /// of e^{l - m} (a transform iterator; the prefix sums written out), then one kernel: systematic, each particle
  /// writes its own run of positions (serial: one thread writes all P when one particle holds all the weight);
  /// multinomial, a binary search per draw. Its sums are added in CUB's order, so a systematic ancestor may differ
  /// from the CPU's where P C_i / W + u lands within the rounding of the sums (about 2e-5 of them at P = 2^24).
  cub_composition,
};

/// CUB compositions: DeviceReduce (the maximum; then the sums of e^{l - m} and e^{2(l - m)} through a transform
/// iterator).
WeightSummary summarize_log_weights(std::span<const double> log_w);
/// The CUDA implementation (host weights in, ancestors out; copies included). tally::cuda_error without a device.
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary = nullptr,
                                  ResampleKernel kernel = ResampleKernel::automatic);
/// Device form (CUB's two-phase convention): with temp == nullptr, sets temp_bytes (for these p, kind and kernel)
/// and returns; else writes the P ancestors of the device log-weights (checked by the caller: no NaN or +inf, not
/// all -inf; p >= 1; tally::shape_error for p = 0 or a temp_bytes below the sizing call's) to `ancestors`, on
/// `stream`. fused: at most about 2 P bytes of temporary storage (the heavy tiles' positions) and no
/// synchronization, unless `summary` is given: then one (the totals are read back). cub_composition: 8 P bytes and
/// more, and one synchronization (the maximum is read back; the summary, when asked for, comes with it from the
/// fused kernels' first two passes). `guard` (fused only; nullptr: none): a device number that the kernels read
/// first and that lets them run only where it is finite, so that a caller may enqueue its own check of the weights
/// (their largest, NaN read as +inf) and read both back in the one synchronization (ancestors and summary are then
/// meaningless unless the guard is finite). `ess_limit` (fused only): finite, the ancestors are written only where
/// the summary's ess (W^2 / Q) is below it, as a caller that resamples only then decides.
void resample_device(void* temp, std::size_t& temp_bytes, const double* log_w, std::size_t p, Resampler kind,
                     std::uint64_t seed, std::uint64_t counter, std::size_t* ancestors, void* stream = nullptr,
                     WeightSummary* summary = nullptr, ResampleKernel kernel = ResampleKernel::automatic,
                     const double* guard = nullptr, double ess_limit = INFINITY);
/// The fused resampler's first two passes alone (its tile totals, then their combination), on the null stream: the
/// summary that resample_device (systematic, fused) would compute from the same device log-weights, in the same
/// order, so the same bits, for a caller that reads it back with other numbers in one wait (gpu::summarize) and
/// resamples later without a wait of its own. `temp`: weight_totals_bytes(p) bytes; `report`: weight_report_bytes
/// device bytes (8-byte aligned) that get the totals, to be copied back and read with weight_summary_of. p >= 1.
///@{
std::size_t weight_totals_bytes(std::size_t p);
inline constexpr std::size_t weight_report_bytes = 48;
void weight_totals(void* temp, const double* log_w, std::size_t p, void* report);
WeightSummary weight_summary_of(const void* host_report);
///@}
}  // namespace cuda

}  // namespace tally::gpu
