// CUDA convolution kernels against the CPU reference on fresh random inputs (skipped without a device).
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve.hpp"

namespace test_convolve_cuda {

using namespace tally::gpu;

namespace {
/// positive entries spread over `decades` orders of magnitude
template <class T>
std::vector<T> random_vector(std::mt19937_64& gen, std::size_t n, double decades) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::pow(10.0, -decades * u(gen)));
  return v;
}

template <class T, class Kernel>
void require_matches_cpu(Kernel kernel, std::size_t m, std::size_t n, double decades, double rel,
                         std::mt19937_64& gen) {
  const auto p = random_vector<T>(gen, m, decades), q = random_vector<T>(gen, n, decades);
  std::vector<T> want(m + n - 1), got(m + n - 1, T(-1));
  cpu::convolve(std::span<const T>(p), std::span<const T>(q), std::span<T>(want));
  kernel(std::span<const T>(p), std::span<const T>(q), std::span<T>(got));
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("m = " << m << ", n = " << n << ", k = " << k << ": cpu " << want[k] << ", gpu " << got[k]);
    REQUIRE(std::abs(got[k] - want[k]) <= rel * want[k]);
  }
}

const std::vector<std::pair<std::size_t, std::size_t>> shapes = {
    {1, 1}, {1, 7}, {7, 1}, {31, 33}, {32, 32}, {100, 3}, {3, 1000}, {1153, 1151}, {2000, 17}, {4096, 4096}, {70000, 257}};
}  // namespace

TEST_CASE("CUDA convolution kernels equal the CPU reference (tensor cores, direct double and float)",
          "[gpu][convolve][device]") {
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    std::vector<double> p{1.0}, q{1.0}, r(1);
    REQUIRE_THROWS_AS(cuda::convolve(p, q, r), tally::cuda_error);
    return;
  }
  std::mt19937_64 gen(404);
  auto tensor = [](std::span<const double> p, std::span<const double> q, std::span<double> r) {
    cuda::convolve(p, q, r, cuda::Kernel::tensor_core);
  };
  auto direct_d = [](std::span<const double> p, std::span<const double> q, std::span<double> r) {
    cuda::convolve(p, q, r, cuda::Kernel::direct);
  };
  auto direct_f = [](std::span<const float> p, std::span<const float> q, std::span<float> r) { cuda::convolve(p, q, r); };
  auto automatic = [](std::span<const double> p, std::span<const double> q, std::span<double> r) { cuda::convolve(p, q, r); };
  for (auto [m, n] : shapes) {
    for (double decades : {3.0, 150.0}) {  // 150: entries over 300 orders of magnitude in the products
      require_matches_cpu<double>(tensor, m, n, decades, 1e-12, gen);
      require_matches_cpu<double>(direct_d, m, n, decades, 1e-12, gen);
    }
    require_matches_cpu<double>(automatic, m, n, 3.0, 1e-13, gen);
    require_matches_cpu<float>(direct_f, m, n, 3.0, 1e-4, gen);
  }
  // long enough that the tensor-core kernel splits its contraction across blocks (and adds the partials)
  require_matches_cpu<double>(tensor, 40000, 30000, 150.0, 1e-12, gen);
  std::vector<double> p{1.0, 2.0}, q{3.0}, wrong(3);
  REQUIRE_THROWS_AS(cuda::convolve(p, q, wrong), tally::shape_error);
}

TEST_CASE("the seed-004 skew-diagonal baseline equals the CPU reference", "[gpu][convolve][device]") {
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    return;
  }
  std::mt19937_64 gen(405);
  auto skew = [](std::span<const double> p, std::span<const double> q, std::span<double> r) {
    cuda::convolve(p, q, r, cuda::Kernel::skew);
  };
  for (auto [m, n] : shapes) require_matches_cpu<double>(skew, m, n, 3.0, 1e-12, gen);
}

TEST_CASE("the dispatch point gives the CPU's answer whichever backend runs", "[gpu][convolve]") {
  std::mt19937_64 gen(406);
  auto dispatched = [](std::span<const double> p, std::span<const double> q, std::span<double> r) { convolve(p, q, r); };
  require_matches_cpu<double>(dispatched, 5000, 5000, 3.0, 1e-13, gen);  // above the GPU threshold when a device exists
  require_matches_cpu<double>(dispatched, 50, 70, 3.0, 1e-15, gen);
}

}  // namespace test_convolve_cuda
