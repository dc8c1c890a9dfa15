// The dispatch points of the scans: batched sampling, resampling and scans along chains.
#include "tally/gpu/backend.hpp"
#include "tally/gpu/chain_scan.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu {
namespace {
// Below these sizes the copies to and from the device cost more than the CPU's pass (settings, bench/RESULTS.md).
constexpr double cuda_min_weights = 1 << 20;
constexpr double cuda_min_particles = 1 << 18;
constexpr double cuda_min_nodes = 1 << 20;
}  // namespace

std::vector<std::int64_t> sample_batched(const PmfBatch& pmfs, std::uint64_t seed, std::uint64_t counter) {
  return select(true, double(pmfs.weights.size()), cuda_min_weights) == Backend::cuda
             ? cuda::sample_batched(pmfs, seed, counter)
             : cpu::sample_batched(pmfs, seed, counter);
}

WeightSummary summarize_log_weights(std::span<const double> log_w) {
  return select(true, double(log_w.size()), cuda_min_particles) == Backend::cuda ? cuda::summarize_log_weights(log_w)
                                                                                 : cpu::summarize_log_weights(log_w);
}

std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary) {
  return select(true, double(log_w.size()), cuda_min_particles) == Backend::cuda
             ? cuda::resample(log_w, kind, seed, counter, summary)
             : cpu::resample(log_w, kind, seed, counter, summary);
}

std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head) {
  return select(true, double(x.size()), cuda_min_nodes) == Backend::cuda ? cuda::chain_prefix_or(x, head)
                                                                         : cpu::chain_prefix_or(x, head);
}
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head) {
  return select(true, double(x.size()), cuda_min_nodes) == Backend::cuda ? cuda::chain_prefix_sum(x, head)
                                                                         : cpu::chain_prefix_sum(x, head);
}

}  // namespace tally::gpu
