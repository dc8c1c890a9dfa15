// The CUDA form of drawing every particle's value from one shared law: the draw rule's sums, made once on the host
// (detail::draw_table), copied over in one piece; one thread a draw (detail::table_draw, the host's code).
#include <algorithm>
#include <bit>
#include <vector>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "tally/gpu/philox.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// Draw i = lo + table_draw(...) with u_i = philox_uniform(seed, first_stream + i, counter). The table in one
/// buffer of 8-byte words: carry (tiles + 1 doubles), c (m doubles), last_positive (tiles integers); Inline: the
/// words of `small`, a table of at most inline_words words (Poisson(10)'s: 53), first put in shared memory.
template <bool Inline>
__global__ void shared_draws_kernel(const std::int64_t* table, const __grid_constant__ InlineValues<std::int64_t> small,
                                    std::int64_t tiles, std::int64_t m, std::int64_t last_tile, std::int64_t lo,
                                    std::size_t count, std::uint64_t seed, std::uint64_t counter,
                                    std::uint64_t first_stream, std::int64_t* out) {
  if constexpr (Inline) {
    __shared__ std::int64_t shared_words[inline_words];
    table = to_shared(small, 2 * tiles + 1 + m, shared_words);
  }
  const long long i = thread_index();
  if (i >= static_cast<long long>(count)) return;
  const auto* carry = reinterpret_cast<const double*>(table);
  const double u = philox_uniform(seed, first_stream + static_cast<std::uint64_t>(i), counter);
  out[i] = lo + detail::table_draw(carry, carry + tiles + 1, table + tiles + 1 + m, tiles, m, last_tile, u);
}

}  // namespace

Column<std::int64_t> sample_shared(const detail::DrawTable& t, std::int64_t lo, std::size_t count, std::uint64_t seed,
                                   std::uint64_t counter, std::uint64_t first_stream) {
  std::vector<std::int64_t> words;
  words.reserve(t.carry.size() + t.c.size() + t.last_positive.size());
  for (const double x : t.carry) words.push_back(std::bit_cast<std::int64_t>(x));
  for (const double x : t.c) words.push_back(std::bit_cast<std::int64_t>(x));
  words.insert(words.end(), t.last_positive.begin(), t.last_positive.end());
  auto out = Column<std::int64_t>::allocate(Backend::cuda, count, "tally::gpu::sample_shared");
  if (count > 0) {
    const auto tiles = static_cast<std::int64_t>(t.last_positive.size()), m = static_cast<std::int64_t>(t.c.size());
    InlineValues<std::int64_t> small{};
    if (words.size() <= inline_words) {
      std::copy(words.begin(), words.end(), small.values);
      shared_draws_kernel<true><<<thread_blocks(count), block>>>(nullptr, small, tiles, m, t.last_tile, lo, count,
                                                                 seed, counter, first_stream, out.data());
    } else {
      const auto table = Column<std::int64_t>::from_host(words, Backend::cuda);
      shared_draws_kernel<false><<<thread_blocks(count), block>>>(table.data(), small, tiles, m, t.last_tile, lo,
                                                                  count, seed, counter, first_stream, out.data());
    }
    launched();
  }
  return out;
}

}  // namespace tally::gpu::population_cuda
