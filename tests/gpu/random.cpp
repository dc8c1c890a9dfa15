// Philox uniforms: the CUDA kernel gives the CPU's bits exactly (skipped without a device); range and independence.
#include <catch2/catch.hpp>
#include <set>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/random.hpp"

namespace test_random {

using namespace tally::gpu;

TEST_CASE("CPU uniforms are in (0, 1), reproducible, and differ across seeds and streams", "[gpu][random]") {
  std::vector<double> a(4096), b(4096), c(4096), d(4096);
  cpu::uniforms(9, 0, 0, a);
  cpu::uniforms(9, 0, 0, b);
  cpu::uniforms(9, 1, 0, c);
  cpu::uniforms(10, 0, 0, d);
  REQUIRE(a == b);
  REQUIRE(a != c);
  REQUIRE(a != d);
  double mean = 0;
  for (double u : a) {
    REQUIRE(u > 0.0);
    REQUIRE(u < 1.0);
    mean += u / static_cast<double>(a.size());
  }
  REQUIRE(std::abs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / 4096));
  REQUIRE(std::set<double>(a.begin(), a.end()).size() == a.size());
  // an offset block continues the same stream
  std::vector<double> tail(96);
  cpu::uniforms(9, 0, 4000, tail);
  REQUIRE(std::equal(tail.begin(), tail.end(), a.begin() + 4000));
}

TEST_CASE("CUDA uniforms equal the CPU's bit for bit", "[gpu][random][device]") {
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    REQUIRE_THROWS_AS(cuda::uniforms(1, 2, 3, std::span<double>()), tally::cuda_error);
    return;
  }
  for (std::size_t n : {1u, 255u, 257u, 1000003u}) {
    std::vector<double> host(n), device(n);
    cpu::uniforms(123456789, 42, 1ull << 40, host);
    cuda::uniforms(123456789, 42, 1ull << 40, device);
    REQUIRE(host == device);
  }
}

}  // namespace test_random
