// Reachability on the CPU: bit matrices, boolean products and closures against brute force, cycles and bad shapes.
#include <catch2/catch.hpp>
#include <bit>
#include <random>
#include <vector>

#include "gpu/random_graphs.hpp"
#include "tally/error.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace test_transitive_closure {

using namespace tally::gpu;
using namespace tally::test;

TEST_CASE("BitMatrix: packed rows, zero tails, entries, transpose, errors", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {0, 1, 63, 64, 65, 130}) {
    INFO("n = " << n);
    const BitMatrix m = random_matrix(gen, n, 0.3);
    REQUIRE(m.size() == n);
    REQUIRE(m.words_per_row() == (n + 63) / 64);
    REQUIRE(m.words().size() == n * m.words_per_row());
    std::int64_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(m.row(i).size() == m.words_per_row());
      REQUIRE((m.row(i).back() & ~BitMatrix::last_word_mask(n)) == 0);
      for (std::size_t j = 0; j < n; ++j) ones += m.get(i, j);
    }
    REQUIRE(m.count() == ones);
    const BitMatrix t = m.transposed();
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) REQUIRE(t.get(j, i) == m.get(i, j));
    REQUIRE(t.transposed() == m);
    REQUIRE(BitMatrix(n, std::vector<std::uint64_t>(m.words().begin(), m.words().end())) == m);
  }
  BitMatrix m(70);
  m.set(3, 69);
  REQUIRE(m.get(3, 69));
  m.set(3, 69, false);
  REQUIRE(m.count() == 0);
  REQUIRE_FALSE(BitMatrix(3) == BitMatrix(4));
  REQUIRE_THROWS_AS(m.get(70, 0), tally::shape_error);
  REQUIRE_THROWS_AS(m.set(0, 70), tally::shape_error);
  REQUIRE_THROWS_AS(m.row(70), tally::shape_error);
  REQUIRE_THROWS_AS(BitMatrix(70, std::vector<std::uint64_t>(139)), tally::shape_error);
  std::vector<std::uint64_t> tail(140, 0);
  tail[2 * 5 + 1] = std::uint64_t{1} << 6;  // column 70 of row 5
  REQUIRE_THROWS_WITH(BitMatrix(70, tail), Catch::Contains("row 5"));
  REQUIRE_THROWS_AS(BitMatrix(max_bit_matrix_size + 1), tally::overflow_error);
}

TEST_CASE("cpu::boolean_product equals the product entry by entry", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {1, 63, 64, 65, 130, 200})
    for (const double density : {0.01, 0.1, 0.5}) {
      INFO("n = " << n << ", density " << density);
      const BitMatrix a = random_matrix(gen, n, density), b = random_matrix(gen, n, density);
      const BitMatrix want = brute_product(a, b);
      REQUIRE(cpu::boolean_product(a, b) == want);
      REQUIRE(boolean_product(a, b) == want);  // the dispatch point (the CPU below cuda_min_product_nodes)
    }
  const BitMatrix empty;
  REQUIRE(cpu::boolean_product(empty, empty).size() == 0);
}

TEST_CASE("closures of random DAGs: reverse topological, Warshall, squaring and brute force agree", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {1, 2, 3, 63, 64, 65, 130, 200})
    for (const double degree : {0.5, 2.0, 8.0, 100.0}) {
      INFO("n = " << n << ", out-degree " << degree);
      const BitMatrix adjacency = random_dag(gen, n, degree);
      const BitMatrix want = brute_closure(adjacency);
      REQUIRE(cpu::transitive_closure(adjacency) == want);
      REQUIRE(cpu::warshall_closure(adjacency) == want);
      int squarings = -1;
      REQUIRE(cpu::closure_by_squaring(adjacency, &squarings) == want);
      int bound = 0;
      while ((std::size_t{1} << bound) < n) ++bound;
      REQUIRE(squarings >= 0);
      REQUIRE(squarings <= bound);
      REQUIRE(transitive_closure(adjacency) == want);  // the dispatch point
      // the topological order puts every edge forward
      const auto order = topological_order(adjacency);
      REQUIRE(order.size() == n);
      std::vector<std::size_t> position(n, n);
      for (std::size_t p = 0; p < n; ++p) position[order[p]] = p;
      for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(position[i] < n);
        for (std::size_t j = 0; j < n; ++j)
          if (adjacency.get(i, j)) REQUIRE(position[i] < position[j]);
      }
    }
}

TEST_CASE("closures of a chain, an empty graph and the empty matrix", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {2, 3, 64, 65, 129, 200}) {
    INFO("n = " << n);
    const auto label = random_labels(gen, n);
    const BitMatrix adjacency = chain(label);
    BitMatrix want(n);  // label[a] reaches label[b] exactly when a < b
    for (std::size_t a = 0; a < n; ++a)
      for (std::size_t b = a + 1; b < n; ++b) want.set(label[a], label[b]);
    REQUIRE(cpu::transitive_closure(adjacency) == want);
    REQUIRE(cpu::warshall_closure(adjacency) == want);
    int squarings = 0;
    REQUIRE(cpu::closure_by_squaring(adjacency, &squarings) == want);
    // the longest path has n - 1 edges: s squarings cover it once 2^s >= n - 1, then one finds nothing new, unless
    // the bound ceil(log2 n) is reached first
    int cover = 0, bound = 0;
    while ((std::size_t{1} << cover) < n - 1) ++cover;
    while ((std::size_t{1} << bound) < n) ++bound;
    REQUIRE(squarings == std::min(cover + 1, bound));
    REQUIRE(cpu::transitive_closure(BitMatrix(n)) == BitMatrix(n));
    REQUIRE(cpu::closure_by_squaring(BitMatrix(n), &squarings) == BitMatrix(n));
    REQUIRE(squarings == 1);
  }
  REQUIRE(cpu::transitive_closure(BitMatrix()).size() == 0);
  REQUIRE(cpu::warshall_closure(BitMatrix(1)) == BitMatrix(1));
  REQUIRE(topological_order(BitMatrix()).empty());
}

TEST_CASE("a graph with a cycle where a DAG is required gets a clear error", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  const std::size_t n = 150;
  BitMatrix with_cycle = random_dag(gen, n, 3.0);
  const auto order = topological_order(with_cycle);
  // close a cycle: the last node of a path back to its first (order[10] -> ... -> order[100] -> order[10])
  for (std::size_t p = 10; p < 100; ++p) with_cycle.set(order[p], order[p + 1]);
  with_cycle.set(order[100], order[10]);
  BitMatrix loop(n);
  loop.set(7, 7);
  BitMatrix ring(n);
  for (std::size_t i = 0; i < n; ++i) ring.set(i, (i + 1) % n);
  for (const BitMatrix* g : {&with_cycle, &loop, &ring}) {
    REQUIRE_THROWS_AS(cpu::transitive_closure(*g), tally::shape_error);
    REQUIRE_THROWS_WITH(cpu::transitive_closure(*g), Catch::Contains("cycle through node"));
    REQUIRE_THROWS_WITH(cpu::warshall_closure(*g), Catch::Contains("cycle through node"));
    REQUIRE_THROWS_WITH(cpu::closure_by_squaring(*g), Catch::Contains("cycle through node"));
    REQUIRE_THROWS_WITH(topological_order(*g), Catch::Contains("a DAG is required"));
    REQUIRE_THROWS_AS(transitive_closure(*g), tally::shape_error);
  }
  REQUIRE_THROWS_WITH(cpu::transitive_closure(loop), Catch::Contains("node 7 (7 -> 7)"));
  REQUIRE_THROWS_WITH(cpu::warshall_closure(loop), Catch::Contains("node 7"));
  REQUIRE_THROWS_WITH(topological_order(ring), Catch::Contains("(150 nodes)"));
  // the node named is on the cycle: order[10..100]
  try {
    cpu::warshall_closure(with_cycle);
  } catch (const tally::shape_error& e) {
    bool named = false;
    for (std::size_t p = 10; p <= 100; ++p)
      named = named || std::string(e.what()).find("node " + std::to_string(order[p]) + " ") != std::string::npos;
    REQUIRE(named);
  }
}

TEST_CASE("products of matrices of different sizes are shape errors", "[gpu][closure]") {
  const BitMatrix a(64), b(65);
  REQUIRE_THROWS_AS(cpu::boolean_product(a, b), tally::shape_error);
  REQUIRE_THROWS_AS(boolean_product(a, b), tally::shape_error);
  REQUIRE_THROWS_WITH(cpu::boolean_product(a, b), Catch::Contains("64 x 64 matrix times a 65 x 65"));
}

TEST_CASE("topological orders of large sparse and dense DAGs, read by several threads", "[gpu][closure]") {
  std::mt19937_64 gen(std::random_device{}());
  // 6000 nodes: 94 words a row, 564000 words: up to 8 parts of Kahn's pass (as many as the hardware has threads);
  // out-degree 3000 has more edges than words: the depth-first order
  for (const double degree : {0.0, 2.0, 8.0, 3000.0}) {
    INFO("out-degree " << degree);
    const std::size_t n = 6000;
    const BitMatrix g = random_dag(gen, n, degree);
    const auto order = topological_order(g);
    REQUIRE(order.size() == n);
    std::vector<std::size_t> position(n, n);
    for (std::size_t p = 0; p < n; ++p) position[order[p]] = p;
    bool permutation = true, forward = true;
    for (std::size_t i = 0; i < n; ++i) {
      permutation = permutation && position[i] < n;
      const auto row = g.row(i);
      for (std::size_t k = 0; k < row.size(); ++k)
        for (std::uint64_t word = row[k]; word != 0; word &= word - 1)
          forward = forward && position[i] < position[64 * k + static_cast<std::size_t>(std::countr_zero(word))];
    }
    REQUIRE(permutation);
    REQUIRE(forward);
  }
  // a cycle among many sources: Kahn stops short, and the depth-first search names a node on the cycle
  BitMatrix g = random_dag(gen, 6000, 2.0);
  const auto order = topological_order(g);
  g.set(order[5999], order[3000]);
  for (std::size_t p = 3000; p < 5999; p += 1) g.set(order[p], order[p + 1]);
  REQUIRE_THROWS_WITH(topological_order(g), Catch::Contains("cycle through node"));
}

}  // namespace test_transitive_closure
