// Subset sums on the device against the CPU reference, on fresh random instances (skipped without a device).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "tally/error.hpp"
#include "device.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace test_subset_sums_cuda {

using namespace tally::gpu;
using tally::test::skip_without_device;

namespace {


std::vector<double> random_probabilities(std::mt19937_64& gen, std::size_t n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> p(n);
  for (auto& x : p) x = u(gen) < 0.1 ? std::pow(10.0, -20.0 * u(gen)) : u(gen);
  return p;
}

/// Same values, and weights within rel (both laws have the same log_scale).
template <class W>
void require_same_law(const SubsetSumLaw<W>& got, const SubsetSumLaw<W>& want, double rel) {
  REQUIRE(got.values == want.values);
  REQUIRE(got.log_scale == want.log_scale);
  double worst = 0;
  for (std::size_t j = 0; j < want.weights.size(); ++j)
    worst = std::max(worst, std::abs(got.weights[j] - want.weights[j]) / want.weights[j]);
  INFO("worst relative difference " << worst);
  CHECK(worst <= rel);
}

}  // namespace

TEST_CASE("device enumeration equals the CPU reference: table, sort and per-mask merges", "[gpu][subsets][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const int n : {9, 13, 17, 21}) {
    std::uniform_int_distribution<std::int64_t> small(0, 60), large(0, std::int64_t{1} << 40);
    std::vector<std::int64_t> w(n), big_w(n);
    for (auto& x : w) x = small(gen);
    for (auto& x : big_w) x = large(gen);
    const auto p = random_probabilities(gen, n);
    INFO("n = " << n);
    const auto want = cpu::subset_sum_law(w, p);
    require_same_law(cuda::subset_sum_law(w, p, cuda::SubsetMerge::table), want, 1e-12);
    require_same_law(cuda::subset_sum_law(w, p, cuda::SubsetMerge::sort), want, 1e-12);
    require_same_law(cuda::subset_sum_law(w, p, cuda::SubsetMerge::per_mask), want, 1e-12);
    require_same_law(cuda::subset_sum_law(big_w, p), cpu::subset_sum_law(big_w, p), 1e-12);
    // many lanes with one total: equal weights (groups of up to 10 lanes) and zero weights (one group of 32)
    const std::vector<std::int64_t> ones(n, 1), zeros_and_twos = [&] {
      std::vector<std::int64_t> v(n, 0);
      for (int i = 0; i < n; i += 3) v[i] = 2;
      return v;
    }();
    require_same_law(cuda::subset_sum_law(ones, p), cpu::subset_sum_law(ones, p), 1e-12);
    require_same_law(cuda::subset_sum_law(zeros_and_twos, p), cpu::subset_sum_law(zeros_and_twos, p), 1e-12);
  }
}

TEST_CASE("device enumeration of double weights, small n, and several chunks", "[gpu][subsets][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  std::uniform_real_distribution<double> u(0.5, 2.0);
  std::uniform_int_distribution<int> tenths(0, 40);
  for (const int n : {1, 3, 4, 9, 18}) {
    std::vector<double> w(n), d(n);
    for (auto& x : w) x = u(gen);
    for (auto& x : d) x = 0.1 * tenths(gen);
    const auto p = random_probabilities(gen, n);
    INFO("n = " << n);
    require_same_law(cuda::subset_sum_law(w, p), cpu::subset_sum_law(w, p), 1e-12);
    require_same_law(cuda::subset_sum_law(d, p), cpu::subset_sum_law(d, p), 1e-12);
  }
  // 2^25 subsets: two chunks of the sort path, merged; integer weights over a span too large for the table
  std::uniform_int_distribution<std::int64_t> weight(0, 5000);
  std::vector<std::int64_t> w(25);
  for (auto& x : w) x = weight(gen);
  const auto p = random_probabilities(gen, 25);
  require_same_law(cuda::subset_sum_law(w, p), cpu::subset_sum_law(w, p), 1e-12);
}

TEST_CASE("device enumeration refuses what does not fit, saying how much it needs", "[gpu][subsets][device]") {
  if (skip_without_device()) return;
  std::vector<double> w(max_enumerated_weights);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 1.0 + 1e-3 * double(i);
  CHECK_THROWS_WITH(cuda::subset_sum_law(w, std::vector<double>(w.size(), 0.5)), Catch::Contains("bytes of device memory"));
  CHECK_THROWS_AS(cuda::subset_sum_law(std::vector<std::int64_t>{1, 2}, std::vector<double>{0.5, 0.5},
                                       cuda::SubsetMerge::table),
                  tally::shape_error);
}

TEST_CASE("device sampled supports equal the CPU's, draw for draw", "[gpu][subsets][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  std::uniform_int_distribution<std::size_t> length(0, 63);
  std::uniform_int_distribution<std::int64_t> weight(0, 1000000);
  std::uniform_real_distribution<double> real(0.0, 100.0);
  std::vector<std::vector<std::int64_t>> ints(300);
  std::vector<std::vector<double>> reals(300);
  for (std::size_t i = 0; i < ints.size(); ++i) {
    ints[i].resize(length(gen));
    for (auto& x : ints[i]) x = weight(gen) % (i % 3 == 0 ? 10 : 1000000);  // some vectors with many equal sums
    reals[i].resize(length(gen));
    for (auto& x : reals[i]) x = real(gen);
  }
  const std::uint64_t seed = gen();
  REQUIRE(cuda::sampled_subset_sums(ints, 1000, seed) == cpu::sampled_subset_sums(ints, 1000, seed));
  REQUIRE(cuda::sampled_subset_sums(reals, 777, seed) == cpu::sampled_subset_sums(reals, 777, seed));
  const std::vector<std::vector<std::int64_t>> example{{1, 2, 3}, {4, 5}};
  REQUIRE(cuda::sampled_subset_sums(example, 8, seed) ==
          std::vector<std::vector<std::int64_t>>{{0, 1, 2, 3, 4, 5, 6}, {0, 4, 5, 9}});
}

TEST_CASE("device programme equals the CPU reference for every kernel", "[gpu][subsets][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (const std::int64_t c : {std::int64_t{0}, std::int64_t{12}, std::int64_t{4097}, std::int64_t{1000003},
                               std::int64_t{30000001}}) {
    std::uniform_int_distribution<std::int64_t> weight(0, c / 3 + 2);
    std::vector<std::int64_t> w(40);
    for (auto& x : w) x = weight(gen);
    INFO("c = " << c);
    const auto want = cpu::reachable_sums(w, c);
    for (const int k : {1, 2, 3}) {
      const auto got = cuda::reachable_sums(w, c, cuda::DpKernel::bit_packed, k);
      REQUIRE(std::equal(got.words().begin(), got.words().end(), want.words().begin(), want.words().end()));
      const auto answer = cuda::subset_sum(w, c, cuda::DpKernel::bit_packed, k);
      CHECK(answer.reachable == want.contains(c));
      CHECK(answer.best == want.largest_at_most(c));
    }
    const auto bytes = cuda::reachable_sums(w, c, cuda::DpKernel::byte_per_cell);
    REQUIRE(std::equal(bytes.words().begin(), bytes.words().end(), want.words().begin(), want.words().end()));
  }
  const std::vector<std::int64_t> toy{3, 5, 8, 10};
  CHECK(cuda::subset_sum(toy, 12).best == 11);
  CHECK_FALSE(cuda::subset_sum(toy, 12).reachable);
  CHECK_THROWS_WITH(cuda::reachable_sums(toy, max_capacity), Catch::Contains("bytes of device memory"));
  CHECK_THROWS_AS(cuda::reachable_sums(toy, 100, cuda::DpKernel::bit_packed, 4), tally::domain_error);
}

}  // namespace test_subset_sums_cuda
