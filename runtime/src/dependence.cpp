// Batch dependence queries (Graph::touches): per-pair depth-first search (the CPU path), or the transitive closure
// of the nodes the queries reach (tally::gpu::transitive_closure, on the device for large graphs).
#include "dependence.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "tally/gpu/backend.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace tally::runtime::detail {
namespace {

using Answer = std::vector<std::vector<std::size_t>>;

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

/// With a device, the closure method answers at least this many pairs by one boolean product on the device instead
/// of word-wise ANDs on the host (up to W words per pair for W words per row). A guess, not a measurement (there is
/// no device on the development machine): 512 x 512 pairs. TALLY_DEVICE=gpu forces the product at any size.
constexpr double device_product_min_pairs = 512.0 * 512.0;

std::uint64_t bit(std::size_t j) { return std::uint64_t{1} << (j % 64); }

// ---- search: the CPU path --------------------------------------------------------------------------------------
/// Whether a depth-first search from v, stopped by realized nodes, meets a node of `target`.
bool meets(Node& v, const std::unordered_set<const Node*>& target) {
  if (v.state == State::realized) return false;
  std::vector<Node*> stack{&v};
  std::unordered_set<const Node*> seen{&v};
  while (!stack.empty()) {
    Node* x = stack.back();
    stack.pop_back();
    if (x->state == State::realized) continue;
    if (target.count(x)) return true;
    for_each_dependence_edge(*x, [&](Node* u) {
      if (seen.insert(u).second) stack.push_back(u);
    });
  }
  return false;
}

/// One search for each observation's anc*, then one per variable that stops at the first node they share.
Answer by_search(const std::vector<Node*>& observations, const std::vector<Node*>& variables) {
  Answer out(observations.size());
  for (std::size_t i = 0; i < observations.size(); ++i) {
    if (observations[i]->state == State::realized) continue;
    const auto found = uninstantiated_ancestors(*observations[i]);
    const std::unordered_set<const Node*> ancestors(found.begin(), found.end());
    for (std::size_t j = 0; j < variables.size(); ++j)
      if (meets(*variables[j], ancestors)) out[i].push_back(j);
  }
  return out;
}

// ---- closure ---------------------------------------------------------------------------------------------------
/// The non-realized nodes reachable from the queries, numbered 0..N-1 in the order one depth-first search finds them.
struct Reach {
  std::vector<Node*> nodes;
  std::unordered_map<const Node*, std::size_t> index;
  /// x's number, or `none` for a realized x.
  std::size_t of(const Node* x) const {
    const auto it = index.find(x);
    return it == index.end() ? none : it->second;
  }
};

/// The reach of the queries, or std::nullopt as soon as it passes `limit` nodes.
std::optional<Reach> reach(const std::vector<Node*>& observations, const std::vector<Node*>& variables,
                           std::size_t limit) {
  Reach r;
  std::vector<Node*> stack;
  auto visit = [&](Node* u) {
    if (u->state != State::realized && r.index.emplace(u, r.nodes.size()).second) {
      r.nodes.push_back(u);
      stack.push_back(u);
    }
  };
  for (const auto* queries : {&observations, &variables})
    for (Node* q : *queries) {
      visit(q);
      while (!stack.empty()) {
        Node* x = stack.back();
        stack.pop_back();
        for_each_dependence_edge(*x, visit);
        if (r.nodes.size() > limit) return std::nullopt;
      }
    }
  return r;
}

/// R_xy = 1 iff a path of dependence edges of length >= 1 leads from node x to node y (both numbered by r).
gpu::BitMatrix closure_of(const Reach& r) {
  const std::size_t n = r.nodes.size(), w = gpu::BitMatrix::words_per_row(n);
  std::vector<std::uint64_t> adjacency(n * w, 0);
  for (std::size_t x = 0; x < n; ++x)
    for_each_dependence_edge(*r.nodes[x], [&](Node* u) {
      if (const std::size_t y = r.of(u); y != none) adjacency[x * w + y / 64] |= bit(y);
    });
  return gpu::transitive_closure(gpu::BitMatrix(n, std::move(adjacency)));
}

/// Whether anc*(a) = row a of R plus a and anc*(b) share a node (R: n rows of w words).
bool meet(const std::uint64_t* r, std::size_t w, std::size_t a, std::size_t b) {
  const std::uint64_t* ra = r + a * w;
  const std::uint64_t* rb = r + b * w;
  if (a == b || (ra[b / 64] & bit(b)) != 0 || (rb[a / 64] & bit(a)) != 0) return true;
  for (std::size_t k = 0; k < w; ++k)
    if ((ra[k] & rb[k]) != 0) return true;
  return false;
}

/// All pairs at once: T = Anc_o Anc_v^T, with row i of Anc_o anc*(o_i) and row j of Anc_v anc*(v_j) (zero for a
/// realized query), so that boolean_product's C_ij = OR_k A_ik B_kj with A = Anc_o, B = Anc_v^T is
/// T_ij = OR_k [k in anc*(o_i)] [k in anc*(v_j)]. The matrices are square, of side max(N, M, K).
Answer by_product(const gpu::BitMatrix& closure, const std::vector<std::size_t>& o, const std::vector<std::size_t>& v) {
  const std::size_t n = closure.size(), w = closure.words_per_row();
  const std::size_t s = std::max({n, o.size(), v.size()}), ws = gpu::BitMatrix::words_per_row(s);
  auto ancestors = [&](const std::vector<std::size_t>& q) {
    std::vector<std::uint64_t> m(s * ws, 0);
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i] == none) continue;
      std::copy_n(closure.words().data() + q[i] * w, w, m.data() + i * ws);
      m[i * ws + q[i] / 64] |= bit(q[i]);
    }
    return gpu::BitMatrix(s, std::move(m));
  };
  const gpu::BitMatrix t = gpu::boolean_product(ancestors(o), ancestors(v).transposed());
  Answer out(o.size());
  for (std::size_t i = 0; i < o.size(); ++i) {
    const std::uint64_t* row = t.words().data() + i * ws;
    for (std::size_t k = 0; k < ws; ++k)
      for (std::uint64_t word = row[k]; word != 0; word &= word - 1)
        out[i].push_back(k * 64 + static_cast<std::size_t>(std::countr_zero(word)));  // < K: columns >= K are 0
  }
  return out;
}

Answer by_closure(const Reach& r, const std::vector<Node*>& observations, const std::vector<Node*>& variables) {
  Answer out(observations.size());
  if (r.nodes.empty()) return out;  // every query is realized
  const gpu::BitMatrix closure = closure_of(r);
  std::vector<std::size_t> o(observations.size()), v(variables.size());
  std::transform(observations.begin(), observations.end(), o.begin(), [&](const Node* x) { return r.of(x); });
  std::transform(variables.begin(), variables.end(), v.begin(), [&](const Node* x) { return r.of(x); });
  const double pairs = static_cast<double>(o.size()) * static_cast<double>(v.size());
  const double side = static_cast<double>(std::max({r.nodes.size(), o.size(), v.size()}));
  if (gpu::select(true, pairs, device_product_min_pairs) == gpu::Backend::cuda &&
      gpu::select(true, side, static_cast<double>(gpu::cuda_min_product_nodes)) == gpu::Backend::cuda)
    return by_product(closure, o, v);
  const std::size_t w = closure.words_per_row();
  const std::uint64_t* words = closure.words().data();
  for (std::size_t i = 0; i < o.size(); ++i) {
    if (o[i] == none) continue;
    for (std::size_t j = 0; j < v.size(); ++j)
      if (v[j] != none && meet(words, w, o[i], v[j])) out[i].push_back(j);
  }
  return out;
}

}  // namespace

Answer touches(const std::vector<Node*>& observations, const std::vector<Node*>& variables, DependenceMethod method) {
  if (method == DependenceMethod::search) return by_search(observations, variables);
  std::size_t limit = std::numeric_limits<std::size_t>::max();
  if (method == DependenceMethod::automatic) {
    // the thresholds of graph.hpp; the search for the reach stops at its limit, so that a query answered by search
    // wastes at most that many steps
    const double pairs = static_cast<double>(observations.size()) * static_cast<double>(variables.size());
    if (pairs < static_cast<double>(dependence_closure_min_pairs)) return by_search(observations, variables);
    limit = static_cast<std::size_t>(std::min(pairs * static_cast<double>(dependence_closure_nodes_per_pair),
                                              static_cast<double>(dependence_closure_max_nodes)));
  }
  const auto r = reach(observations, variables, limit);
  return r ? by_closure(*r, observations, variables) : by_search(observations, variables);
}

}  // namespace tally::runtime::detail
