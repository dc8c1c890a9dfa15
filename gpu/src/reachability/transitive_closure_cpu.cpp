// The CPU references of reachability: boolean product by rows, closures (reverse topological, Warshall, squaring).
#include <algorithm>
#include <bit>
#include <string>

#include "closure_check.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu {

namespace cpu {

BitMatrix boolean_product(const BitMatrix& a, const BitMatrix& b) {
  detail::check_same_size(a, b, "tally::gpu::cpu::boolean_product");
  const std::size_t n = a.size(), w = a.words_per_row();
  const std::uint64_t* pa = a.words().data();
  const std::uint64_t* pb = b.words().data();
  std::vector<std::uint64_t> c(n * w, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t* out = c.data() + i * w;
    for (std::size_t kw = 0; kw < w; ++kw)
      for (std::uint64_t word = pa[i * w + kw]; word != 0; word &= word - 1) {
        const std::uint64_t* row = pb + (kw * 64 + static_cast<std::size_t>(std::countr_zero(word))) * w;
        for (std::size_t x = 0; x < w; ++x) out[x] |= row[x];
      }
  }
  return BitMatrix(n, std::move(c));
}

BitMatrix transitive_closure(const BitMatrix& adjacency) {
  const auto order = detail::topological_order(adjacency, "tally::gpu::cpu::transitive_closure");
  const std::size_t n = adjacency.size(), w = adjacency.words_per_row();
  const std::uint64_t* adj = adjacency.words().data();
  std::vector<std::uint64_t> r(n * w, 0);
  for (std::size_t p = n; p-- > 0;) {  // sinks first: every successor's row is final before it is read
    const std::size_t u = order[p];
    std::uint64_t* out = r.data() + u * w;
    for (std::size_t kw = 0; kw < w; ++kw)
      for (std::uint64_t word = adj[u * w + kw]; word != 0; word &= word - 1) {
        const std::size_t v = kw * 64 + static_cast<std::size_t>(std::countr_zero(word));
        const std::uint64_t* row = r.data() + v * w;
        for (std::size_t x = 0; x < w; ++x) out[x] |= row[x];
        out[kw] |= word & (~word + 1);  // the edge u -> v itself
      }
  }
  return BitMatrix(n, std::move(r));
}

BitMatrix warshall_closure(const BitMatrix& adjacency) {
  const std::size_t n = adjacency.size(), w = adjacency.words_per_row();
  std::vector<std::uint64_t> r(adjacency.words().begin(), adjacency.words().end());
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t* rk = r.data() + k * w;
    const std::uint64_t bit = std::uint64_t{1} << (k % 64);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint64_t* ri = r.data() + i * w;
      if (i != k && (ri[k / 64] & bit))
        for (std::size_t x = 0; x < w; ++x) ri[x] |= rk[x];
    }
  }
  BitMatrix out(n, std::move(r));
  detail::check_diagonal(out, "tally::gpu::cpu::warshall_closure");
  return out;
}

BitMatrix closure_by_squaring(const BitMatrix& adjacency, int* squarings) {
  const std::size_t n = adjacency.size(), w = adjacency.words_per_row();
  const int bound = detail::squaring_bound(n);
  BitMatrix r = adjacency;
  int done = 0;
  while (done < bound) {
    const BitMatrix square = cpu::boolean_product(r, r);
    ++done;
    std::vector<std::uint64_t> next(r.words().begin(), r.words().end());
    bool changed = false;
    for (std::size_t x = 0; x < n * w; ++x) {
      changed = changed || (next[x] | square.words()[x]) != next[x];
      next[x] |= square.words()[x];
    }
    if (!changed) break;
    r = BitMatrix(n, std::move(next));
  }
  if (squarings) *squarings = done;
  detail::check_diagonal(r, "tally::gpu::cpu::closure_by_squaring");
  return r;
}

}  // namespace cpu
}  // namespace tally::gpu
