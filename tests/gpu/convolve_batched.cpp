// Batched convolution (pairs, and laws against shared laws) and conditioning on sums: the CPU reference against 50
// digits, CUDA against the CPU.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/convolve_batched.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_convolve_batched {

using namespace tally::gpu;
using tally::test::big;

namespace {

/// P random pmfs, lengths in [1, max_length] (so mostly not multiples of 32), weights over `decades` orders of
/// magnitude, random lo in [-50, 50] and log_scale in [-5, 5].
PmfBatch random_batch(std::mt19937_64& gen, std::size_t count, std::size_t max_length, double decades) {
  std::uniform_int_distribution<std::size_t> length(1, max_length);
  std::uniform_int_distribution<std::int64_t> lo(-50, 50);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  PmfBatch b;
  for (std::size_t i = 0; i < count; ++i) {
    std::vector<double> w(length(gen));
    for (auto& v : w) v = std::pow(10.0, -decades * u(gen));
    b.push_back(w, lo(gen), 10.0 * u(gen) - 5.0);
  }
  return b;
}

/// log of mass k (support index) of pmf i, 50 digits: log_scale + log weight.
big log_mass(const PmfBatch& b, std::size_t i, std::size_t k) {
  using boost::multiprecision::log;
  return big(b.log_scale[i]) + log(big(b[i][k]));
}

void require_same_batch(const PmfBatch& got, const PmfBatch& want, double rel) {
  REQUIRE(got.size() == want.size());
  REQUIRE(got.offset == want.offset);
  REQUIRE(got.lo == want.lo);
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("pmf " << i << " of " << want.size() << ", length " << want.length(i));
    if (std::isinf(want.log_scale[i])) {
      REQUIRE(got.log_scale[i] == want.log_scale[i]);
    } else {
      REQUIRE(std::abs(got.log_scale[i] - want.log_scale[i]) <= rel * (1 + std::abs(want.log_scale[i])));
    }
    for (std::size_t k = 0; k < want.length(i); ++k) {
      INFO("entry " << k << ": want " << want[i][k] << ", got " << got[i][k]);
      REQUIRE(std::abs(got[i][k] - want[i][k]) <= rel * want[i][k]);
    }
  }
}

}  // namespace

TEST_CASE("batched convolution (CPU) equals 50-digit sums, scales included", "[gpu][batched]") {
  std::mt19937_64 gen(501);
  const auto x = random_batch(gen, 12, 90, 100.0), y = random_batch(gen, 12, 90, 100.0);
  const auto r = cpu::convolve_batched(x, y);
  REQUIRE(r.size() == 12);
  for (std::size_t i = 0; i < r.size(); ++i) {
    REQUIRE(r.length(i) == x.length(i) + y.length(i) - 1);
    REQUIRE(r.lo[i] == x.lo[i] + y.lo[i]);
    double max = 0;
    for (double v : r[i]) max = std::max(max, v);
    REQUIRE(max == 1.0);  // rescaled after
    for (std::size_t k = 0; k < r.length(i); ++k) {
      big exact = 0;
      for (std::size_t a = 0; a < x.length(i); ++a)
        if (k >= a && k - a < y.length(i)) exact += exp(log_mass(x, i, a) + log_mass(y, i, k - a));
      if (exact < big("1e-250")) continue;  // the double weight may be denormal or flushed there
      CHECK(tally::test::relative_error_log(std::log(r[i][k]) + r.log_scale[i], log(exact)) < 1e-12);
    }
  }
}

TEST_CASE("batched conditioning on sums (CPU) equals 50 digits, far tails included", "[gpu][batched]") {
  std::mt19937_64 gen(502);
  const auto x = random_batch(gen, 16, 70, 120.0), y = random_batch(gen, 16, 70, 120.0);
  std::vector<std::int64_t> z(16);
  std::uniform_int_distribution<int> pick(0, 1000);
  for (std::size_t i = 0; i < z.size(); ++i)  // anywhere on the support of the sum, and some outside it
    z[i] = x.lo[i] + y.lo[i] + static_cast<std::int64_t>(pick(gen) % (x.length(i) + y.length(i) + 2)) - 1;
  z[0] = x.lo[0] + y.lo[0] - 1;                                                             // just below
  z[1] = x.lo[1] + y.lo[1] + static_cast<std::int64_t>(x.length(1) + y.length(1)) - 1;  // just above
  const auto c = cpu::condition_on_sum_batched(x, y, z);
  REQUIRE(c.posterior.offset == x.offset);
  REQUIRE(c.posterior.lo == x.lo);
  int impossible = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    INFO("pair " << i << ", z = " << z[i]);
    std::vector<big> joint(x.length(i), big(0));
    big total = 0;
    for (std::size_t a = 0; a < x.length(i); ++a) {
      const std::int64_t b = z[i] - x.lo[i] - y.lo[i] - static_cast<std::int64_t>(a);
      if (b < 0 || b >= static_cast<std::int64_t>(y.length(i))) continue;
      joint[a] = exp(log_mass(x, i, a) + log_mass(y, i, static_cast<std::size_t>(b)));
      total += joint[a];
    }
    if (total == 0) {
      ++impossible;
      REQUIRE(c.log_likelihood[i] == -std::numeric_limits<double>::infinity());
      REQUIRE(c.posterior.log_scale[i] == -std::numeric_limits<double>::infinity());
      for (double v : c.posterior[i]) REQUIRE(v == 0.0);
      continue;
    }
    REQUIRE(std::abs(c.log_likelihood[i] - static_cast<double>(log(total))) < 1e-12 * (1 + std::abs(c.log_likelihood[i])));
    for (std::size_t a = 0; a < x.length(i); ++a) {
      const big want = joint[a] / total;
      if (want < big("1e-290")) continue;
      CHECK(tally::test::relative_error(c.posterior[i][a] * std::exp(c.posterior.log_scale[i]), want) < 1e-12);
    }
  }
  REQUIRE(impossible >= 2);  // the observations just outside the support of the sum

  // a likelihood below the smallest double: 1e-200 x 1e-250 (relative to the scales) is still exact
  PmfBatch far_x, far_y;
  far_x.push_back(std::vector<double>{1.0, 1e-200}, 0);
  far_y.push_back(std::vector<double>{1.0, 1e-250}, 0);
  const std::vector<std::int64_t> one{2};
  const auto far = cpu::condition_on_sum_batched(far_x, far_y, one);
  REQUIRE(std::abs(far.log_likelihood[0] - (-450.0 * std::log(10.0))) < 1e-12 * 450 * std::log(10.0));
  REQUIRE(far.posterior[0][1] == 1.0);
  REQUIRE(far.posterior[0][0] == 0.0);
}

TEST_CASE("batched operations reject bad batches with named errors", "[gpu][batched]") {
  PmfBatch a, b;
  REQUIRE_THROWS_AS(a.push_back(std::vector<double>{}, 0), tally::shape_error);
  REQUIRE_THROWS_AS(a.push_back(std::vector<double>{0.5, -0.1}, 0), tally::domain_error);
  REQUIRE_THROWS_AS(a.push_back(std::vector<double>{0.5, std::nan("")}, 0), tally::domain_error);
  REQUIRE_THROWS_AS(a.push_back(std::vector<double>{0.5}, 0, std::nan("")), tally::domain_error);
  a.push_back(std::vector<double>{0.25, 0.5}, 3);
  REQUIRE(a[0][1] == 1.0);  // scaled before
  REQUIRE(a.log_scale[0] == Approx(std::log(0.5)));
  a.push_back(std::vector<double>{0.0, 0.0}, 0);
  REQUIRE(a.log_scale[1] == -std::numeric_limits<double>::infinity());
  b.push_back(std::vector<double>{1.0}, 0);
  REQUIRE_THROWS_AS(convolve_batched(a, b), tally::shape_error);  // 2 pmfs and 1
  b.push_back(std::vector<double>{1.0}, 0);
  const auto r = convolve_batched(a, b);  // the all-zero pmf stays all zero, with log_scale -inf
  REQUIRE(r.log_scale[1] == -std::numeric_limits<double>::infinity());
  REQUIRE(r[1][0] == 0.0);
  const std::vector<std::int64_t> one_z{1};
  REQUIRE_THROWS_AS(condition_on_sum_batched(a, b, one_z), tally::shape_error);  // 1 observation for 2 pairs
  const std::vector<std::int64_t> huge_z{std::int64_t{1} << 62, 0};
  REQUIRE_THROWS_AS(condition_on_sum_batched(a, b, huge_z), tally::overflow_error);
  PmfBatch bad = a;
  bad.weights[0] = 2.0;  // not scaled: weights must lie in [0, 1]
  REQUIRE_THROWS_AS(convolve_batched(bad, b), tally::domain_error);
  bad = a;
  bad.offset[1] = 0;  // an empty pmf
  REQUIRE_THROWS_AS(convolve_batched(bad, b), tally::shape_error);
}

TEST_CASE("CUDA batched convolution equals the CPU reference (both kernels)", "[gpu][batched][device]") {
  std::mt19937_64 gen(503);
  PmfBatch one;
  one.push_back(std::vector<double>{1.0}, 0);
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    REQUIRE_THROWS_AS(cuda::convolve_batched(one, one), tally::cuda_error);
    return;
  }
  // 20 .. 128: the small-pair kernel with 2 .. 10 outputs a lane, two pairs a warp up to 160 outputs
  // (lengths drawn up to max_length; an odd count of pairs leaves the last warp's second half without a pair)
  for (std::size_t max_length : {std::size_t{1}, std::size_t{20}, std::size_t{40}, std::size_t{64}, std::size_t{75},
                                 std::size_t{90}, std::size_t{100}, std::size_t{111}, std::size_t{128}, std::size_t{300},
                                 std::size_t{4096}}) {
    const std::size_t count = max_length >= 4096 ? 40 : (max_length % 2 == 1 ? 301 : 300);
    const auto x = random_batch(gen, count, max_length, 150.0), y = random_batch(gen, count, max_length, 150.0);
    const auto want = cpu::convolve_batched(x, y);
    INFO("max length " << max_length);
    require_same_batch(cuda::convolve_batched(x, y, cuda::Kernel::tensor_core), want, 1e-12);
    require_same_batch(cuda::convolve_batched(x, y, cuda::Kernel::direct), want, 1e-12);
    require_same_batch(cuda::convolve_batched(x, y, cuda::Kernel::skew), want, 1e-12);
    require_same_batch(cuda::convolve_batched(x, y), want, 1e-12);  // automatic: the small-pair kernel to 256 outputs
    require_same_batch(convolve_batched(x, y), want, 1e-12);
  }
  {  // a long law and a short one (as a count and its immigrants): up to 239 outputs, so the small-pair kernel
     // although the longer operands exceed 128
    const auto x = random_batch(gen, 300, 200, 150.0), y = random_batch(gen, 300, 40, 150.0);
    require_same_batch(cuda::convolve_batched(x, y), cpu::convolve_batched(x, y), 1e-12);
    require_same_batch(cuda::convolve_batched(y, x), cpu::convolve_batched(y, x), 1e-12);
  }
  // very unequal lengths in one batch
  PmfBatch x, y;
  x.push_back(std::vector<double>(4000, 0.5), 0);
  y.push_back(std::vector<double>(3, 0.25), 7);
  x.push_back(std::vector<double>(1, 1.0), -3);
  y.push_back(std::vector<double>(4096, 1.0), 2);
  require_same_batch(cuda::convolve_batched(x, y, cuda::Kernel::tensor_core), cpu::convolve_batched(x, y), 1e-13);
}

TEST_CASE("CUDA batched conditioning on sums equals the CPU reference", "[gpu][batched][device]") {
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    return;
  }
  std::mt19937_64 gen(504);
  for (std::size_t max_length : {std::size_t{1}, std::size_t{33}, std::size_t{256}, std::size_t{3000}}) {
    const auto x = random_batch(gen, 500, max_length, 150.0), y = random_batch(gen, 500, max_length, 150.0);
    std::vector<std::int64_t> z(x.size());
    std::uniform_int_distribution<int> pick(0, 1 << 20);
    for (std::size_t i = 0; i < z.size(); ++i)
      z[i] = x.lo[i] + y.lo[i] + static_cast<std::int64_t>(pick(gen) % (x.length(i) + y.length(i) + 2)) - 1;
    const auto want = cpu::condition_on_sum_batched(x, y, z);
    const auto got = cuda::condition_on_sum_batched(x, y, z);
    INFO("max length " << max_length);
    require_same_batch(got.posterior, want.posterior, 1e-13);
    for (std::size_t i = 0; i < z.size(); ++i) {
      if (std::isinf(want.log_likelihood[i])) {
        REQUIRE(got.log_likelihood[i] == want.log_likelihood[i]);
      } else {
        REQUIRE(std::abs(got.log_likelihood[i] - want.log_likelihood[i]) <= 1e-13 * (1 + std::abs(want.log_likelihood[i])));
      }
    }
  }
}

namespace {

/// y's laws each repeated `per` times (law b for particles b per .. b per + per - 1).
PmfBatch repeat_laws(const PmfBatch& y, std::size_t per) {
  PmfBatch r;
  for (std::size_t b = 0; b < y.size(); ++b)
    for (std::size_t k = 0; k < per; ++k)
      r.push_back(std::vector<double>(y[b].begin(), y[b].end()), y.lo[b], y.log_scale[b]);
  return r;
}

}  // namespace

TEST_CASE("convolution against shared laws (CPU) equals the batched convolution of the repeated laws",
          "[gpu][batched]") {
  std::mt19937_64 gen(509);
  for (const std::size_t per : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
    const auto y = random_batch(gen, 3, 300, 150.0), x = random_batch(gen, 3 * per, 200, 150.0);
    const Laws got = convolve_shared(Laws::from_host(x, Backend::cpu), Laws::from_host(y, Backend::cpu), per);
    const PmfBatch want = cpu::convolve_batched(x, repeat_laws(y, per));
    INFO("per " << per);
    REQUIRE(got.host().offset == want.offset);
    REQUIRE(got.host().lo == want.lo);
    REQUIRE(got.host().log_scale == want.log_scale);
    REQUIRE(got.host().weights == want.weights);  // the same sums in the same order
  }
  const auto y = random_batch(gen, 2, 10, 5.0), x = random_batch(gen, 6, 10, 5.0);
  REQUIRE_THROWS_AS(convolve_shared(Laws::from_host(x, Backend::cpu), Laws::from_host(y, Backend::cpu), 2),
                    tally::shape_error);
  REQUIRE_THROWS_AS(convolve_shared(Laws::from_host(x, Backend::cpu), Laws::from_host(y, Backend::cpu), 0),
                    tally::shape_error);
}

TEST_CASE("CUDA convolution against shared laws equals the CPU reference, fresh random laws",
          "[gpu][batched][device]") {
  if (!cuda_available()) {
    WARN("skipped: " << device_description());
    return;
  }
  std::random_device seed_source;
  const std::uint64_t seed = (std::uint64_t{seed_source()} << 32) ^ seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  struct Shape {
    std::size_t laws, per, shared_length, own_length;
  };
  // one law for all and laws shared by blocks of 7, 32, 40, 64 or 96 particles; the small-pair kernel (up to 256
  // outputs), the fused tensor-core kernel (up to 512) and the tiled one with its rescale pass, a shared law longer
  // or shorter than the particles' own (the Toeplitz blocks made of either operand), laws of one entry
  for (const Shape shape : {Shape{1, 1000, 400, 450}, Shape{1, 77, 4096, 600}, Shape{5, 32, 300, 300},
                            Shape{3, 64, 1200, 2000}, Shape{1, 40, 9000, 100}, Shape{1, 33, 2, 4096},
                            Shape{4, 7, 50, 60}, Shape{5, 40, 100, 100}, Shape{2, 96, 1, 1}, Shape{3, 7, 400, 300},
                            Shape{1, 50, 20000, 100}}) {
    const auto y = random_batch(gen, shape.laws, shape.shared_length, 150.0);
    const auto x = random_batch(gen, shape.laws * shape.per, shape.own_length, 150.0);
    const PmfBatch want =
        convolve_shared(Laws::from_host(x, Backend::cpu), Laws::from_host(y, Backend::cpu), shape.per).host();
    const Laws dx = Laws::from_host(x, Backend::cuda), dy = Laws::from_host(y, Backend::cuda);
    INFO(shape.laws << " laws shared by " << shape.per << ", lengths up to " << shape.shared_length << " and "
                    << shape.own_length);
    require_same_batch(convolve_shared(dx, dy, shape.per).to_host(), want, 1e-12);
    // the pairs' kernels, forced, each pair reading its shared law
    for (const cuda::Kernel kernel : {cuda::Kernel::tensor_core, cuda::Kernel::direct}) {
      Laws out = Laws::allocate(Backend::cuda, dx.size(), want.weights.size(), dx.max_length() + dy.max_length() - 1,
                                "test");
      cuda::convolve_shared_device(dx.view(), dy.view(), shape.per, dx.max_length(), dy.max_length(),
                                   out.mutable_view(), nullptr, kernel);
      require_same_batch(out.to_host(), want, 1e-12);
    }
  }
}

}  // namespace test_convolve_batched
