// Boolean products and closures on the device against the CPU, on fresh random inputs (skipped without a device).
#include <catch2/catch.hpp>
#include <new>
#include <random>
#include <vector>

#include "gpu/random_graphs.hpp"
#include "tally/error.hpp"
#include "device.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/transitive_closure.hpp"

namespace test_transitive_closure_cuda {

using namespace tally::gpu;
using tally::test::skip_without_device;
using namespace tally::test;
using cuda::BoolKernel;
using cuda::ClosureOrder;

TEST_CASE("device boolean products equal the CPU reference, every kernel", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  // sizes with an odd number of words per row (129: 3, 2050: 33) take the tensor kernel's 8-byte copies
  for (const std::size_t n : {1, 65, 127, 129, 1000, 2050})
    for (const double density : {0.0005, 0.01, 0.5}) {
      INFO("n = " << n << ", density " << density);
      const BitMatrix a = random_matrix(gen, n, density), b = random_matrix(gen, n, density);
      const BitMatrix want = cpu::boolean_product(a, b);
      REQUIRE(cuda::boolean_product(a, b, BoolKernel::packed) == want);
      REQUIRE(cuda::boolean_product(a, b, BoolKernel::tensor_b1) == want);
      if (n <= 1000) REQUIRE(cuda::boolean_product(a, b, BoolKernel::byte_per_entry) == want);  // slow baseline
      REQUIRE(cuda::boolean_product(a, b) == want);
    }
  const BitMatrix empty;
  REQUIRE(cuda::boolean_product(empty, empty).size() == 0);
  REQUIRE_THROWS_AS(cuda::boolean_product(BitMatrix(64), BitMatrix(65)), tally::shape_error);
}

TEST_CASE("device closures of random DAGs equal the CPU, every kernel and order", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {1, 2, 65, 127, 129, 1000, 2050})
    for (const double degree : {0.5, 4.0, 8.0, 200.0}) {
      INFO("n = " << n << ", out-degree " << degree);
      const BitMatrix adjacency = random_dag(gen, n, degree);
      const BitMatrix want = cpu::transitive_closure(adjacency);
      int cpu_squarings = -1;
      if (n <= 1000) REQUIRE(cpu::closure_by_squaring(adjacency, &cpu_squarings) == want);
      for (const BoolKernel kernel : {BoolKernel::packed, BoolKernel::tensor_b1, BoolKernel::byte_per_entry})
        for (const ClosureOrder order : {ClosureOrder::topological, ClosureOrder::as_given}) {
          if (kernel == BoolKernel::byte_per_entry && n > 1000) continue;  // the slow baseline
          INFO("kernel " << static_cast<int>(kernel) << ", order " << static_cast<int>(order));
          int squarings = -1;
          REQUIRE(cuda::transitive_closure(adjacency, kernel, order, &squarings) == want);
          if (cpu_squarings >= 0) REQUIRE(squarings == cpu_squarings);  // relabelling keeps every path length
        }
      REQUIRE(cuda::transitive_closure(adjacency) == want);
    }
}

TEST_CASE("device closures of long chains and dense DAGs", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {129, 1000, 3001}) {
    INFO("n = " << n);
    const BitMatrix adjacency = chain(random_labels(gen, n));  // the most squarings: ceil(log2 n)
    const BitMatrix want = cpu::transitive_closure(adjacency);
    REQUIRE(want.count() == static_cast<std::int64_t>(n * (n - 1) / 2));
    for (const ClosureOrder order : {ClosureOrder::topological, ClosureOrder::as_given})
      for (const BoolKernel kernel : {BoolKernel::packed, BoolKernel::tensor_b1})
        REQUIRE(cuda::transitive_closure(adjacency, kernel, order) == want);
    const BitMatrix dense = random_dag(gen, n, static_cast<double>(n) / 2);
    REQUIRE(cuda::transitive_closure(dense) == cpu::transitive_closure(dense));
    REQUIRE(cuda::transitive_closure(dense, BoolKernel::packed, ClosureOrder::as_given) ==
            cpu::transitive_closure(dense));
    REQUIRE(cuda::transitive_closure(dense, BoolKernel::tensor_b1, ClosureOrder::as_given) ==
            cpu::transitive_closure(dense));
  }
  // ClosureOrder::automatic on either side of its threshold
  for (const std::size_t n : {cuda_topological_min_nodes - 1, cuda_topological_min_nodes + 1}) {
    const BitMatrix large = random_dag(gen, n, 4.0);
    REQUIRE(cuda::transitive_closure(large) == cpu::transitive_closure(large));
  }
  const BitMatrix big = random_dag(gen, cuda_min_closure_nodes + 3, 8.0);
  REQUIRE(transitive_closure(big) == cpu::transitive_closure(big));  // the dispatch point, on the device here
  const BitMatrix a = random_matrix(gen, cuda_min_product_nodes + 5, 0.002);
  REQUIRE(boolean_product(a, a) == cpu::boolean_product(a, a));
}

TEST_CASE("device closures level by level equal the CPU's", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {1, 2, 63, 65, 127, 1000, 2050, 5003})
    for (const double degree : {0.0, 0.5, 4.0, 8.0, 200.0}) {
      INFO("n = " << n << ", out-degree " << degree);
      const BitMatrix adjacency = random_dag(gen, n, degree);
      REQUIRE(cuda::closure_by_levels(adjacency) == cpu::transitive_closure(adjacency));
    }
  const BitMatrix line = chain(random_labels(gen, 3001));  // 3001 levels
  REQUIRE(cuda::closure_by_levels(line) == cpu::transitive_closure(line));
  BitMatrix cyclic = chain(random_labels(gen, 100));
  const auto order = topological_order(cyclic);
  cyclic.set(order[99], order[10]);
  REQUIRE_THROWS_WITH(cuda::closure_by_levels(cyclic), Catch::Contains("cycle through node"));
}

TEST_CASE("device closures of a graph with a cycle get a clear error", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const std::size_t n : {65, 1000}) {
    BitMatrix g = random_dag(gen, n, 4.0);
    const auto order = topological_order(g);
    g.set(order[n - 1], order[n / 2]);  // some path order[n/2] -> ... -> order[n-1] may not exist: add one
    for (std::size_t p = n / 2; p + 1 < n; ++p) g.set(order[p], order[p + 1]);
    for (const BoolKernel kernel : {BoolKernel::packed, BoolKernel::tensor_b1, BoolKernel::byte_per_entry})
      for (const ClosureOrder order_kind : {ClosureOrder::topological, ClosureOrder::as_given}) {
        INFO("n = " << n << ", kernel " << static_cast<int>(kernel) << ", order " << static_cast<int>(order_kind));
        REQUIRE_THROWS_AS(cuda::transitive_closure(g, kernel, order_kind), tally::shape_error);
        REQUIRE_THROWS_WITH(cuda::transitive_closure(g, kernel, order_kind), Catch::Contains("cycle through node"));
      }
  }
}

TEST_CASE("device closures that do not fit are refused with the bytes needed", "[gpu][closure][device]") {
  if (skip_without_device()) return;
  // 2^18 nodes: 8 GiB of packed bits on the host, 2 x 64 GiB of bytes on the device for the byte kernel
  try {
    const BitMatrix huge(std::size_t{1} << 18);
    REQUIRE_THROWS_AS(cuda::transitive_closure(huge, BoolKernel::byte_per_entry, ClosureOrder::as_given),
                      tally::overflow_error);
    REQUIRE_THROWS_WITH(cuda::transitive_closure(huge, BoolKernel::byte_per_entry, ClosureOrder::as_given),
                        Catch::Contains("bytes of device memory"));
  } catch (const std::bad_alloc&) {
    WARN("skipped: the host cannot hold the 8 GiB input");
  }
}

}  // namespace test_transitive_closure_cuda
