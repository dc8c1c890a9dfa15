// The device side of a build without CUDA: there is never a device, and the CUDA entry points say so.
#include <string>

#include "tally/error.hpp"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/random.hpp"

namespace tally::gpu {
bool cuda_compiled() { return false; }
namespace detail {
bool probe_device(std::string& why) {
  why = "CPU (tally was built without CUDA)";
  return false;
}
}  // namespace detail
}  // namespace tally::gpu

namespace tally::gpu::cuda {
void uniforms(std::uint64_t, std::uint64_t, std::uint64_t, std::span<double>) {
  throw cuda_error("tally::gpu::cuda::uniforms: tally was built without CUDA");
}
void convolve(std::span<const double>, std::span<const double>, std::span<double>, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve: tally was built without CUDA");
}
void convolve(std::span<const float>, std::span<const float>, std::span<float>, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve: tally was built without CUDA");
}
void convolve_device(const double*, std::size_t, const double*, std::size_t, double*, void*, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve_device: tally was built without CUDA");
}
void convolve_device(const float*, std::size_t, const float*, std::size_t, float*, void*, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve_device: tally was built without CUDA");
}
void convolve_device(void*, std::size_t&, const double*, std::size_t, const double*, std::size_t, double*, void*,
                     Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve_device: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/convolve_batched.hpp"

namespace tally::gpu::cuda {
PmfBatch convolve_batched(const PmfBatch&, const PmfBatch&, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve_batched: tally was built without CUDA");
}
SumConditioning condition_on_sum_batched(const PmfBatch&, const PmfBatch&, std::span<const std::int64_t>) {
  throw cuda_error("tally::gpu::cuda::condition_on_sum_batched: tally was built without CUDA");
}
void convolve_batched_device(PmfBatchView, PmfBatchView, std::size_t, MutablePmfBatchView, void*, Kernel, std::size_t) {
  throw cuda_error("tally::gpu::cuda::convolve_batched_device: tally was built without CUDA");
}
void convolve_shared_device(PmfBatchView, PmfBatchView, std::size_t, std::size_t, std::size_t, MutablePmfBatchView,
                            void*, Kernel) {
  throw cuda_error("tally::gpu::cuda::convolve_shared_device: tally was built without CUDA");
}
void condition_on_sum_batched_device(PmfBatchView, PmfBatchView, const std::int64_t*, MutablePmfBatchView, double*,
                                     void*) {
  throw cuda_error("tally::gpu::cuda::condition_on_sum_batched_device: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace tally::gpu::cuda {
SubsetSumLaw<std::int64_t> subset_sum_law(std::span<const std::int64_t>, std::span<const double>, SubsetMerge) {
  throw cuda_error("tally::gpu::cuda::subset_sum_law: tally was built without CUDA");
}
SubsetSumLaw<double> subset_sum_law(std::span<const double>, std::span<const double>, SubsetMerge) {
  throw cuda_error("tally::gpu::cuda::subset_sum_law: tally was built without CUDA");
}
std::vector<std::vector<std::int64_t>> sampled_subset_sums(const std::vector<std::vector<std::int64_t>>&, std::size_t,
                                                           std::uint64_t) {
  throw cuda_error("tally::gpu::cuda::sampled_subset_sums: tally was built without CUDA");
}
std::vector<std::vector<double>> sampled_subset_sums(const std::vector<std::vector<double>>&, std::size_t,
                                                     std::uint64_t) {
  throw cuda_error("tally::gpu::cuda::sampled_subset_sums: tally was built without CUDA");
}
ReachableSums reachable_sums(std::span<const std::int64_t>, std::int64_t, DpKernel, int) {
  throw cuda_error("tally::gpu::cuda::reachable_sums: tally was built without CUDA");
}
SubsetSumAnswer subset_sum(std::span<const std::int64_t>, std::int64_t, DpKernel, int) {
  throw cuda_error("tally::gpu::cuda::subset_sum: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/chain_scan.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace tally::gpu::cuda {
std::vector<std::int64_t> sample_batched(const PmfBatch&, std::uint64_t, std::uint64_t, SampleKernel) {
  throw cuda_error("tally::gpu::cuda::sample_batched: tally was built without CUDA");
}
void sample_batched_device(PmfBatchView, std::uint64_t, std::uint64_t, std::int64_t*, void*, std::uint64_t,
                           std::size_t) {
  throw cuda_error("tally::gpu::cuda::sample_batched_device: tally was built without CUDA");
}
WeightSummary summarize_log_weights(std::span<const double>) {
  throw cuda_error("tally::gpu::cuda::summarize_log_weights: tally was built without CUDA");
}
std::vector<std::size_t> resample(std::span<const double>, Resampler, std::uint64_t, std::uint64_t, WeightSummary*,
                                  ResampleKernel) {
  throw cuda_error("tally::gpu::cuda::resample: tally was built without CUDA");
}
std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t>, std::span<const std::uint8_t>) {
  throw cuda_error("tally::gpu::cuda::chain_prefix_or: tally was built without CUDA");
}
std::vector<double> chain_prefix_sum(std::span<const double>, std::span<const std::uint8_t>) {
  throw cuda_error("tally::gpu::cuda::chain_prefix_sum: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

namespace tally::gpu::cuda {
void resample_device(void*, std::size_t&, const double*, std::size_t, Resampler, std::uint64_t, std::uint64_t,
                     std::size_t*, void*, WeightSummary*, ResampleKernel, const double*, double) {
  throw cuda_error("tally::gpu::cuda::resample_device: tally was built without CUDA");
}
std::size_t weight_totals_bytes(std::size_t) {
  throw cuda_error("tally::gpu::cuda::weight_totals_bytes: tally was built without CUDA");
}
void weight_totals(void*, const double*, std::size_t, void*) {
  throw cuda_error("tally::gpu::cuda::weight_totals: tally was built without CUDA");
}
WeightSummary weight_summary_of(const void*) {
  throw cuda_error("tally::gpu::cuda::weight_summary_of: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/resample_shards.hpp"

namespace tally::gpu::cuda {
std::size_t shard_bytes(std::size_t, std::size_t) {
  throw cuda_error("tally::gpu::cuda::shard_bytes: tally was built without CUDA");
}
void shard_report(void*, std::size_t, std::size_t, std::size_t, const double*, double*) {
  throw cuda_error("tally::gpu::cuda::shard_report: tally was built without CUDA");
}
double shard_plan(void*, std::size_t, std::size_t, const double*, double, WeightSummary&, std::vector<std::size_t>&,
                  std::vector<std::size_t>&) {
  throw cuda_error("tally::gpu::cuda::shard_plan: tally was built without CUDA");
}
void shard_ancestors(void*, std::size_t, std::size_t, std::size_t, std::size_t, const double*, double, std::size_t*) {
  throw cuda_error("tally::gpu::cuda::shard_ancestors: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu::cuda {
BitMatrix boolean_product(const BitMatrix&, const BitMatrix&, BoolKernel) {
  throw cuda_error("tally::gpu::cuda::boolean_product: tally was built without CUDA");
}
BitMatrix transitive_closure(const BitMatrix&, BoolKernel, ClosureOrder, int*) {
  throw cuda_error("tally::gpu::cuda::transitive_closure: tally was built without CUDA");
}
void boolean_product_device(const std::uint64_t*, const std::uint64_t*, std::uint64_t*, std::size_t, void*,
                            BoolKernel) {
  throw cuda_error("tally::gpu::cuda::boolean_product_device: tally was built without CUDA");
}
void transitive_closure_device(void*, std::size_t&, std::uint64_t*, std::size_t, int*, BoolKernel, void*) {
  throw cuda_error("tally::gpu::cuda::transitive_closure_device: tally was built without CUDA");
}
void transpose_device(const std::uint64_t*, std::uint64_t*, std::size_t, void*) {
  throw cuda_error("tally::gpu::cuda::transpose_device: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda

#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu::cuda {
BitMatrix closure_by_levels(const BitMatrix&) {
  throw cuda_error("tally::gpu::cuda::closure_by_levels: tally was built without CUDA");
}
}  // namespace tally::gpu::cuda
