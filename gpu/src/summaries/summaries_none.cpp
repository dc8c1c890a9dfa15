// Weighted summaries in a build without CUDA: device columns cannot exist, and the device entry point says so.
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const>, const Column<double>&,
                                              std::span<const double>, WeightSummary*) {
  throw cuda_error("tally::gpu::summarize: tally was built without CUDA");
}
std::vector<SummaryRange> summary_ranges_device(std::span<const Column<std::int64_t>* const>, const Column<double>&) {
  throw cuda_error("tally::gpu::detail::summary_ranges: tally was built without CUDA");
}
std::vector<SummarySums> summary_sums_device(std::span<const Column<std::int64_t>* const>, const Column<double>&,
                                             double, std::span<const std::pair<std::int64_t, std::int64_t>>) {
  throw cuda_error("tally::gpu::detail::summary_sums: tally was built without CUDA");
}
}  // namespace tally::gpu::detail
