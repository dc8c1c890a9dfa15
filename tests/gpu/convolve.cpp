// The CPU convolution reference against a naive double loop and a 50-digit reference.
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve.hpp"

namespace test_convolve {

using tally::gpu::cpu::convolve;

namespace {
std::vector<double> naive(const std::vector<double>& p, const std::vector<double>& q) {
  std::vector<double> r(p.size() + q.size() - 1, 0.0);
  for (std::size_t i = 0; i < p.size(); ++i)
    for (std::size_t j = 0; j < q.size(); ++j) r[i + j] += p[i] * q[j];
  return r;
}
}  // namespace

TEST_CASE("cpu convolve matches the naive loop for all small shapes", "[gpu][convolve]") {
  std::mt19937_64 gen(42);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t m : {1u, 2u, 3u, 31u, 32u, 33u, 100u, 257u, 600u}) {
    for (std::size_t n : {1u, 5u, 32u, 65u, 300u, 1000u}) {
      std::vector<double> p(m), q(n);
      for (auto& x : p) x = u(gen);
      for (auto& x : q) x = u(gen);
      std::vector<double> r(m + n - 1);
      convolve(p, q, r);
      const auto ref = naive(p, q);
      for (std::size_t k = 0; k < r.size(); ++k) REQUIRE(r[k] == Approx(ref[k]).epsilon(1e-13));
    }
  }
}

TEST_CASE("cpu convolve keeps per-entry relative accuracy across 300 orders of magnitude", "[gpu][convolve]") {
  using big = boost::multiprecision::cpp_bin_float_50;
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-300.0, 0.0);
  const std::size_t m = 3000, n = 1700;
  std::vector<double> p(m), q(n);
  for (auto& x : p) x = std::pow(10.0, u(gen) / 2);
  for (auto& x : q) x = std::pow(10.0, u(gen) / 2);
  std::vector<double> r(m + n - 1);
  convolve(p, q, r);
  for (std::size_t k = 0; k < r.size(); k += 37) {
    big exact = 0;
    for (std::size_t i = (k >= n ? k - n + 1 : 0); i <= std::min(k, m - 1); ++i) exact += big(p[i]) * big(q[k - i]);
    const double rel = static_cast<double>(abs(big(r[k]) - exact) / exact);
    REQUIRE(rel <= 1e-13);
  }
}

TEST_CASE("convolve rejects empty operands and a wrong output length", "[gpu][convolve]") {
  std::vector<double> p{1.0, 2.0}, q{3.0}, empty, r(2), wrong(3);
  REQUIRE_THROWS_AS(convolve(empty, q, r), tally::shape_error);
  REQUIRE_THROWS_AS(convolve(p, q, wrong), tally::shape_error);
  REQUIRE_THROWS_WITH(tally::gpu::convolve(p, q, wrong), Catch::Contains("m + n - 1"));
}

TEST_CASE("float convolution agrees with double", "[gpu][convolve]") {
  std::vector<float> p{0.25f, 0.5f, 0.25f}, q{0.5f, 0.5f}, r(4);
  tally::gpu::convolve(p, q, r);
  REQUIRE(r[0] == Approx(0.125f));
  REQUIRE(r[1] == Approx(0.375f));
  REQUIRE(r[2] == Approx(0.375f));
  REQUIRE(r[3] == Approx(0.125f));
}

TEST_CASE("the backend falls back to the CPU without a device, and says why", "[gpu][backend]") {
  const bool available = tally::gpu::cuda_available();
  if (!tally::gpu::cuda_compiled()) REQUIRE_FALSE(available);
  REQUIRE_FALSE(tally::gpu::device_description().empty());
  const auto backend = tally::gpu::select(true, 1e12, 1.0);
  REQUIRE((backend == tally::gpu::Backend::cuda) == available);
  REQUIRE(tally::gpu::select(false, 1e12, 1.0) == tally::gpu::Backend::cpu);
}

}  // namespace test_convolve
