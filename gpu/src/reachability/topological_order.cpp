// Topological orders of DAGs given as packed bit matrices: Kahn's algorithm on successor lists read in parallel, and
// the depth-first order (dense graphs, and the error that names a cycle).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "closure_check.hpp"
#include "parallel_parts.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::gpu {

namespace detail {

namespace {

/// The depth-first order (reverse post-order over the packed rows, O(n^2 / 64 + edges) word operations): for dense
/// graphs, and to name a cycle.
std::vector<std::size_t> depth_first_order(const BitMatrix& g, const char* who) {
  const std::size_t n = g.size(), w = g.words_per_row();
  const std::uint64_t* words = g.words().data();
  enum : unsigned char { white, gray, black };
  std::vector<unsigned char> color(n, white);
  std::vector<std::size_t> post;
  post.reserve(n);
  struct Frame {
    std::size_t node, next;  // next: the first column of the node's row not yet scanned
  };
  std::vector<Frame> stack;
  for (std::size_t root = 0; root < n; ++root) {
    if (color[root] != white) continue;
    color[root] = gray;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const std::uint64_t* row = words + top.node * w;
      std::size_t v = n;
      for (std::size_t k = top.next / 64; k < w; ++k) {
        std::uint64_t word = row[k];
        if (k == top.next / 64) word &= ~std::uint64_t{0} << (top.next % 64);
        if (word != 0) {
          v = k * 64 + static_cast<std::size_t>(std::countr_zero(word));
          break;
        }
      }
      if (v == n) {  // every successor is finished: u comes after all of them in post-order
        color[top.node] = black;
        post.push_back(top.node);
        stack.pop_back();
        continue;
      }
      top.next = v + 1;
      if (color[v] == gray) {  // a back edge: v is on the stack, and the stack from v to here closes a cycle
        std::size_t from = stack.size();
        while (stack[from - 1].node != v) --from;
        --from;
        std::string path;
        const std::size_t length = stack.size() - from, shown = std::min<std::size_t>(length, 12);
        for (std::size_t s = 0; s < shown; ++s) path += std::to_string(stack[from + s].node) + " -> ";
        if (shown < length) path += "... (" + std::to_string(length) + " nodes) -> ";
        path += std::to_string(v);
        fail<shape_error>(who, ": the graph has a cycle through node ", v, " (", path, "); a DAG is required");
      }
      if (color[v] == white) {
        color[v] = gray;
        stack.push_back({v, 0});  // `top` is not used after this
      }
    }
  }
  std::reverse(post.begin(), post.end());
  return post;
}

}  // namespace

/// A topological order. Sparse graphs (fewer edges than words: every real dependence graph) by Kahn's algorithm:
/// the successor lists are read from the packed rows in one pass over the n^2 / 64 words, split by rows over up
/// to the hardware's threads (one per 2^16 words at least, so that small graphs stay on the calling thread), then
/// sources are peeled in order, O(n + edges). Dense graphs, whose lists would outgrow the matrix, by the
/// depth-first order. A graph that Kahn cannot finish has a cycle: the depth-first search then names one.
std::vector<std::size_t> topological_order(const BitMatrix& g, const char* who) {
  const std::size_t n = g.size(), w = g.words_per_row();
  const std::uint64_t* words = g.words().data();
  // one pass over the words, split by rows: each part lists its rows' successors and where each row's list ends,
  // and gives up (dense) once its list outgrows its words
  struct Part {
    std::size_t first = 0;
    std::vector<std::uint32_t> successor;  // n <= 2^24: labels fit 32 bits
    std::vector<std::size_t> end;          // end[i - first]: the end of row i's list in `successor`
    bool dense = false;
  };
  const std::size_t most_parts = std::min(hardware_threads(), std::max<std::size_t>(n, 1));
  std::vector<Part> parts(std::clamp<std::size_t>((n * w) >> 16, 1, most_parts));
  parallel_parts(parts.size(), [&](std::size_t p) {
    Part& part = parts[p];
    part.first = n * p / parts.size();
    const std::size_t last = n * (p + 1) / parts.size(), cap = (last - part.first) * w;
    part.end.reserve(last - part.first);
    for (std::size_t i = part.first; i < last && !part.dense; ++i) {
      for (std::size_t k = 0; k < w; ++k)
        for (std::uint64_t word = words[i * w + k]; word != 0; word &= word - 1)
          part.successor.push_back(static_cast<std::uint32_t>(64 * k + std::countr_zero(word)));
      part.end.push_back(part.successor.size());
      part.dense = part.successor.size() > cap;
    }
  });
  std::vector<std::size_t> begin(n + 1, 0);
  std::size_t edges = 0;
  for (const Part& part : parts) {
    if (part.dense) return depth_first_order(g, who);
    for (std::size_t r = 0; r < part.end.size(); ++r) begin[part.first + r + 1] = edges + part.end[r];
    edges += part.successor.size();
  }
  std::vector<std::uint32_t> successor;
  successor.reserve(edges);
  for (const Part& part : parts) successor.insert(successor.end(), part.successor.begin(), part.successor.end());
  std::vector<std::uint32_t> in_degree(n, 0);
  for (const std::uint32_t v : successor) ++in_degree[v];
  std::vector<std::size_t> order;
  order.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (in_degree[i] == 0) order.push_back(i);
  for (std::size_t next = 0; next < order.size(); ++next) {  // order doubles as the queue of sources
    const std::size_t u = order[next];
    for (std::size_t e = begin[u]; e < begin[u + 1]; ++e)
      if (--in_degree[successor[e]] == 0) order.push_back(successor[e]);
  }
  if (order.size() < n) return depth_first_order(g, who);  // throws: it names a node of a cycle
  return order;
}

}  // namespace detail

std::vector<std::size_t> topological_order(const BitMatrix& adjacency) {
  return detail::topological_order(adjacency, "tally::gpu::topological_order");
}

}  // namespace tally::gpu
