// Test helpers for reachability: random bit matrices and DAGs, and brute-force products and closures by entries.
#pragma once

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "tally/gpu/bit_matrix.hpp"

namespace tally::test {

using gpu::BitMatrix;

/// Each entry true with probability `density`.
inline BitMatrix random_matrix(std::mt19937_64& gen, std::size_t n, double density) {
  std::bernoulli_distribution coin(density);
  BitMatrix m(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (coin(gen)) m.set(i, j);
  return m;
}

/// A random relabelling of 0..n-1.
inline std::vector<std::size_t> random_labels(std::mt19937_64& gen, std::size_t n) {
  std::vector<std::size_t> label(n);
  std::iota(label.begin(), label.end(), std::size_t{0});
  std::shuffle(label.begin(), label.end(), gen);
  return label;
}

/// A random DAG: edges i -> j only for i < j, each with probability min(1, out_degree / (n - 1 - i)) (so that node i
/// has about out_degree successors among the later nodes), then relabelled at random: not upper triangular.
inline BitMatrix random_dag(std::mt19937_64& gen, std::size_t n, double out_degree) {
  const auto label = random_labels(gen, n);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  BitMatrix m(n);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double p = std::min(1.0, out_degree / static_cast<double>(n - 1 - i));
    for (std::size_t j = i + 1; j < n; ++j)
      if (u(gen) < p) m.set(label[i], label[j]);
  }
  return m;
}

/// The chain label[0] -> label[1] -> ... -> label[n-1] (the longest path a DAG of n nodes can have).
inline BitMatrix chain(const std::vector<std::size_t>& label) {
  BitMatrix m(label.size());
  for (std::size_t i = 0; i + 1 < label.size(); ++i) m.set(label[i], label[i + 1]);
  return m;
}

/// C_ij = OR_k A_ik B_kj, entry by entry.
inline BitMatrix brute_product(const BitMatrix& a, const BitMatrix& b) {
  const std::size_t n = a.size();
  BitMatrix c(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t k = 0; k < n; ++k)
        if (a.get(i, k) && b.get(k, j)) {
          c.set(i, j);
          break;
        }
  return c;
}

/// R_sv = 1 iff v is reached from s by a path of >= 1 edges: a depth-first search from every s, entry by entry.
inline BitMatrix brute_closure(const BitMatrix& adjacency) {
  const std::size_t n = adjacency.size();
  BitMatrix r(n);
  for (std::size_t s = 0; s < n; ++s) {
    std::vector<char> seen(n, 0);
    std::vector<std::size_t> stack{s};
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      for (std::size_t v = 0; v < n; ++v)
        if (adjacency.get(u, v) && !seen[v]) {
          seen[v] = 1;
          r.set(s, v);
          stack.push_back(v);
        }
    }
  }
  return r;
}

}  // namespace tally::test
