// Inclusive scans along chains (time series): prefix-OR of flag words and prefix sums, many chains in one call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tally::gpu {

/// Nodes 0 .. n-1 laid out chain after chain; head[i] != 0 where a chain starts (node 0 always starts one). For
/// node i in the chain that starts at h(i):
/// \f[ \mathrm{or}_i = \bigvee_{h(i) \le j \le i} x_j, \qquad \mathrm{sum}_i = \sum_{h(i) \le j \le i} x_j. \f]
/// With one flag bit per property (uninstantiated, observed, ...), or_i says whether some node from the chain's
/// start to i has it: reachability along time series without a graph search. Throws tally::shape_error when the
/// sizes differ. Prefix sums: the CPU adds in chain order, the GPU in CUB's order (the results agree to rounding).
/// The dispatch points: CUDA when built, a device is present and n >= 2^20.
///@{
std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head);
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head);
///@}

namespace cpu {
/// The CPU references: one pass in node order.
///@{
std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head);
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head);
///@}
}  // namespace cpu

namespace cuda {
/// Two CUB calls: DeviceScan::InclusiveSum of the head flags (each node's chain number), then
/// DeviceScan::InclusiveScanByKey with OR or + over the chain numbers.
///@{
std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head);
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head);
///@}
}  // namespace cuda

}  // namespace tally::gpu
