// The CPU reference of scans along chains: one pass, restarting at every chain head.
#include "tally/error.hpp"
#include "tally/gpu/chain_scan.hpp"

namespace tally::gpu::cpu {
namespace {
template <class T, class Op>
std::vector<T> chain_scan(std::span<const T> x, std::span<const std::uint8_t> head, Op op, const char* who) {
  if (x.size() != head.size())
    tally::detail::fail<shape_error>(who, ": ", x.size(), " values but ", head.size(), " head flags");
  std::vector<T> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = (i == 0 || head[i]) ? x[i] : op(out[i - 1], x[i]);
  return out;
}
}  // namespace

std::vector<std::uint64_t> chain_prefix_or(std::span<const std::uint64_t> x, std::span<const std::uint8_t> head) {
  return chain_scan(x, head, [](std::uint64_t a, std::uint64_t b) { return a | b; }, "tally::gpu::cpu::chain_prefix_or");
}
std::vector<double> chain_prefix_sum(std::span<const double> x, std::span<const std::uint8_t> head) {
  return chain_scan(x, head, [](double a, double b) { return a + b; }, "tally::gpu::cpu::chain_prefix_sum");
}

}  // namespace tally::gpu::cpu
