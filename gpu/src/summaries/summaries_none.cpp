// Weighted summaries in a build without CUDA: device columns cannot exist, and the device entry point says so.
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const>, const Column<double>&,
                                              std::span<const double>, WeightSummary*) {
  throw cuda_error("tally::gpu::summarize: tally was built without CUDA");
}
void summary_ranges_device(std::span<const Column<std::int64_t>* const>, const Column<double>&, std::int64_t,
                           Column<std::int64_t>&) {
  throw cuda_error("tally::gpu::detail::summary_ranges: tally was built without CUDA");
}
void summary_sums_device(std::span<const Column<std::int64_t>* const>, const Column<double>&,
                         const Column<std::int64_t>&, Column<double>&) {
  throw cuda_error("tally::gpu::detail::summary_sums: tally was built without CUDA");
}
}  // namespace tally::gpu::detail
