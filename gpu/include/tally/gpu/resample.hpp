// Resampling of particle log-weights: stable normalization, the effective sample size, systematic and multinomial.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// What a population's log-weights \f$\ell_i\f$ say, computed stably with \f$m = \max_i \ell_i\f$:
/// \f[ \log \sum_i e^{\ell_i} = m + \log \sum_i e^{\ell_i - m}, \qquad
///     \mathrm{ESS} = \frac{(\sum_i e^{\ell_i - m})^2}{\sum_i e^{2(\ell_i - m)}} \in [1, P]. \f]
struct WeightSummary {
  double max_log_weight;
  double log_sum;  ///< log of the sum of the weights (the log-evidence increment is log_sum - log P)
  double ess;
};

enum class Resampler {
  /// One uniform u = philox_uniform(seed, 0, counter); particle i gets the positions [k_{i-1}, k_i) with
  /// \f$k_i = \lfloor P C_i / C_{P-1} + u \rfloor\f$ (k_{P-1} = P), C the prefix sums of e^{l - m}: so its number
  /// of offspring is within 1 of P w_i, and the ancestors come out in increasing order.
  systematic,
  /// Ancestor j is the smallest i with \f$C_i > u_j C_{P-1}\f$, u_j = philox_uniform(seed, j, counter): P
  /// independent draws (the smallest i with C_i = C_{P-1} where rounding leaves none). Never a particle of weight 0.
  multinomial,
};

/// Throws tally::shape_error (no weights) and tally::domain_error (a NaN or +inf log-weight, or every one -inf:
/// a population with no weight cannot be resampled; the message says which).
WeightSummary summarize_log_weights(std::span<const double> log_w);

/// P ancestor indices (P = log_w.size()) drawn by `kind` from the normalized weights. Errors as above. The CPU
/// and the GPU use the same uniforms; their prefix sums are added in different orders (and exp may differ in the
/// last bit), so an ancestor may differ where a uniform lands within an ulp of a prefix sum.
/// The dispatch point: CUDA when built, a device is present and P >= 2^18.
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter);

namespace cpu {
WeightSummary summarize_log_weights(std::span<const double> log_w);
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter);
}  // namespace cpu

namespace cuda {
/// CUB compositions: DeviceReduce (the maximum; then the sums of e^{l - m} and e^{2(l - m)} through a transform
/// iterator), DeviceScan::InclusiveSum of e^{l - m} (transform iterator: no weight array), then one kernel writing
/// the ancestors (systematic: each particle its run of positions; multinomial: a binary search per draw).
WeightSummary summarize_log_weights(std::span<const double> log_w);
std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter);
/// Device form (CUB's two-phase convention): with temp == nullptr, sets temp_bytes and returns; else writes the P
/// ancestors of the device log-weights (checked by the caller: no NaN or +inf, not all -inf) to `ancestors`, on
/// `stream`. Synchronizes once (the maximum is read back to the host).
void resample_device(void* temp, std::size_t& temp_bytes, const double* log_w, std::size_t p, Resampler kind,
                     std::uint64_t seed, std::uint64_t counter, std::size_t* ancestors, void* stream = nullptr);
}  // namespace cuda

}  // namespace tally::gpu
