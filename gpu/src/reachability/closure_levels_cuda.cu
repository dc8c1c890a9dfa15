// The closure of a DAG on the device level by level: a node's row is the OR of its successors' finished rows.
#include <algorithm>
#include <bit>
#include <vector>

#include "cuda_check.cuh"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu::cuda {
namespace kernels {

constexpr int level_threads = 128;

/// Rows of the nodes of one level (no edge joins two of them; every successor is on a lower, finished level):
/// \f$R_v = \bigvee_{c \in \mathrm{succ}(v)} (R_c \vee e_c)\f$, a block per node, a thread per word of the row.
__global__ void __launch_bounds__(level_threads)
    close_level(const std::uint32_t* nodes, std::size_t count, const std::int64_t* succ_begin,
                const std::uint32_t* succ, std::uint64_t* r, std::uint64_t words) {
  for (std::size_t b = blockIdx.x; b < count; b += gridDim.x) {
    const std::uint32_t v = nodes[b];
    const std::int64_t first = succ_begin[v], last = succ_begin[v + 1];
    for (std::uint64_t w = threadIdx.x; w < words; w += level_threads) {
      std::uint64_t acc = 0;
      for (std::int64_t e = first; e < last; ++e) {
        const std::uint32_t c = succ[e];
        acc |= r[static_cast<std::uint64_t>(c) * words + w];
        if ((c >> 6) == w) acc |= std::uint64_t{1} << (c & 63);
      }
      r[static_cast<std::uint64_t>(v) * words + w] = acc;
    }
  }
}

}  // namespace kernels

namespace {
using detail::DeviceBuffer;
using detail::upload;

}  // namespace

BitMatrix closure_by_levels(const BitMatrix& adjacency) {
  const char* who = "tally::gpu::cuda::closure_by_levels";
  detail::require_device(who);
  const std::size_t n = adjacency.size();
  const std::size_t words = BitMatrix::words_per_row(n);
  if (n == 0) return adjacency;
  const auto order = topological_order(adjacency);  // a cycle is a shape_error naming it, before any device work
  // successors in CSR form, and levels: 0 for a sink, else 1 + the largest level of a successor (reverse order)
  std::vector<std::int64_t> succ_begin(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    std::int64_t degree = 0;
    for (const auto word : adjacency.row(v)) degree += std::popcount(word);
    succ_begin[v + 1] = succ_begin[v] + degree;
  }
  std::vector<std::uint32_t> succ(static_cast<std::size_t>(succ_begin[n]));
  for (std::size_t v = 0; v < n; ++v) {
    auto at = static_cast<std::size_t>(succ_begin[v]);
    const auto row = adjacency.row(v);
    for (std::size_t w = 0; w < row.size(); ++w)
      for (std::uint64_t bits = row[w]; bits != 0; bits &= bits - 1)
        succ[at++] = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
  }
  std::vector<std::uint32_t> level(n, 0);
  std::uint32_t levels = 1;
  for (std::size_t p = n; p-- > 0;) {
    const std::size_t v = order[p];
    std::uint32_t l = 0;
    for (auto e = succ_begin[v]; e < succ_begin[v + 1]; ++e) l = std::max(l, level[succ[static_cast<std::size_t>(e)]] + 1);
    level[v] = l;
    levels = std::max(levels, l + 1);
  }
  // the nodes grouped by level (a counting sort)
  std::vector<std::size_t> level_begin(levels + 1, 0);
  for (const auto l : level) ++level_begin[l + 1];
  for (std::uint32_t l = 0; l < levels; ++l) level_begin[l + 1] += level_begin[l];
  std::vector<std::uint32_t> by_level(n);
  std::vector<std::size_t> fill(level_begin.begin(), level_begin.end() - 1);
  for (std::size_t v = 0; v < n; ++v) by_level[fill[level[v]]++] = static_cast<std::uint32_t>(v);

  detail::require_device_memory(
      8.0 * double(n) * double(words) + 4.0 * double(succ.size() + n) + 8.0 * double(n + 1), who,
      "the closure and the successor lists");
  auto d_begin = upload(succ_begin);
  auto d_succ = upload(succ);
  auto d_nodes = upload(by_level);
  DeviceBuffer<std::uint64_t> r(n * words);
  TALLY_CUDA_CHECK(cudaMemset(r.data(), 0, n * words * 8));
  for (std::uint32_t l = 1; l < levels; ++l) {  // level 0: sinks, rows of zeros
    const std::size_t count = level_begin[l + 1] - level_begin[l];
    const auto blocks = static_cast<unsigned>(std::min<std::size_t>(count, 1u << 16));
    kernels::close_level<<<blocks, kernels::level_threads>>>(d_nodes.data() + level_begin[l], count, d_begin.data(),
                                                             d_succ.data(), r.data(), words);
    TALLY_CUDA_CHECK(cudaGetLastError());
  }
  std::vector<std::uint64_t> out(n * words);
  TALLY_CUDA_CHECK(cudaMemcpy(out.data(), r.data(), out.size() * 8, cudaMemcpyDeviceToHost));
  return BitMatrix(n, std::move(out));
}

}  // namespace tally::gpu::cuda
