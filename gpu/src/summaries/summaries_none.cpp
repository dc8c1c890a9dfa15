// Weighted summaries in a build without CUDA: device columns cannot exist, and the device entry point says so.
#include "tally/gpu/summaries.hpp"

namespace tally::gpu::detail {
std::vector<WeightedSummary> summarize_device(std::span<const Column<std::int64_t>* const>, const Column<double>&,
                                              std::span<const double>, WeightSummary*) {
  throw cuda_error("tally::gpu::summarize: tally was built without CUDA");
}
}  // namespace tally::gpu::detail
