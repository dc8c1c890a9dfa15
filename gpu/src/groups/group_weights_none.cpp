// Groups' weights in a build without CUDA: device columns cannot exist, and the device entry points say so.
#include "tally/gpu/group_weights.hpp"

#include "tally/error.hpp"

namespace tally::gpu::detail {
GroupWeights summarize_groups_device(const Column<double>&, std::size_t) {
  throw cuda_error("tally::gpu::summarize_groups: tally was built without CUDA");
}
GroupMoments summarize_values_by_group_device(const Column<std::int64_t>&, const Column<double>&, std::size_t) {
  throw cuda_error("tally::gpu::summarize_values_by_group: tally was built without CUDA");
}
GroupResampled resample_groups_device(const Column<double>&, std::size_t, const GroupWeights&, double, Resampler,
                                      std::uint64_t, std::uint64_t, std::uint64_t) {
  throw cuda_error("tally::gpu::resample_groups: tally was built without CUDA");
}
}  // namespace tally::gpu::detail
