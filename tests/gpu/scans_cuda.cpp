// Scans on the device against the CPU reference on fresh random and constructed inputs (skipped without a device).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "gpu/src/scans/scan_math.hpp"  // private: lane_segment_draw, the CPU's rule for one pmf and one uniform
#include "device.hpp"
#include "gpu/log_weights.hpp"
#include "gpu/random_pmf.hpp"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/chain_scan.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace test_scans_cuda {

using namespace tally::gpu;
using tally::test::population;
using tally::test::random_pmf;
using tally::test::skip_without_device;

namespace {
/// Appends w unscaled. Offsets are sums of lengths, so a pmf after one of odd length starts 8-byte aligned only
/// (no double2 loads): both alignments occur throughout.
void append_raw(PmfBatch& batch, const std::vector<double>& w, std::int64_t lo) {
  batch.weights.insert(batch.weights.end(), w.begin(), w.end());
  batch.offset.push_back(static_cast<std::int64_t>(batch.weights.size()));
  batch.lo.push_back(lo);
  batch.log_scale.push_back(std::any_of(w.begin(), w.end(), [](double x) { return x > 0; })
                                ? 0.0
                                : -std::numeric_limits<double>::infinity());
}

/// The GPU's draws against the CPU's, naming the first pmfs that differ.
void require_same_draws(const PmfBatch& batch, std::uint64_t seed, std::uint64_t counter) {
  const auto want = cpu::sample_batched(batch, seed, counter);
  const auto got = cuda::sample_batched(batch, seed, counter);
  REQUIRE(got.size() == want.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && ++differ <= 5)
      UNSCOPED_INFO("pmf " << i << ": length " << batch.length(i) << ", offset " << batch.offset[i] << ", GPU "
                           << got[i] - batch.lo[i] << ", CPU " << want[i] - batch.lo[i]);
  REQUIRE(differ == 0);
}
}  // namespace

TEST_CASE("device batched sampling draws exactly what the CPU draws", "[gpu][scans][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  std::uniform_int_distribution<std::size_t> length(1, 4000);
  PmfBatch batch;
  for (std::size_t i = 0; i < 3000; ++i)  // random lengths: not multiples of 8 or 256, offsets odd or even
    append_raw(batch, random_pmf(gen, length(gen), i % 97 == 0 ? 5 : static_cast<int>(i % 5)),
               static_cast<std::int64_t>(gen() % 1000) - 500);
  // lengths at the lane and tile edges, and past the 32 tiles whose carries the kernel keeps in registers (8192),
  // each kind at both alignments
  for (const std::size_t m : {1, 2, 7, 8, 9, 31, 32, 33, 255, 256, 257, 511, 512, 513, 4000, 8191, 8192, 8193, 8449,
                              12000, 20000})
    for (int aligned = 0; aligned < 2; ++aligned) {
      if (batch.weights.size() % 2 != static_cast<std::size_t>(aligned)) append_raw(batch, {0.5}, 0);
      for (int kind = 0; kind < 6; ++kind) append_raw(batch, random_pmf(gen, m, kind), 7);
    }
  const std::uint64_t seed = gen(), counter = gen() % 1000;
  require_same_draws(batch, seed, counter);
  require_same_draws(batch, seed, counter + 1);
  {  // a batch of pmfs of at most 128 weights (two a warp on the device), an odd count of them, every kind
    std::uniform_int_distribution<std::size_t> short_length(1, 128);
    PmfBatch few;
    for (std::size_t i = 0; i < 4001; ++i)
      append_raw(few, random_pmf(gen, i % 50 == 0 ? 128 : short_length(gen), i % 97 == 0 ? 5 : static_cast<int>(i % 5)),
                 static_cast<std::int64_t>(gen() % 1000) - 500);
    require_same_draws(few, seed, counter);
    require_same_draws(few, seed + 1, counter);
  }
  {  // pmfs of at most 8 weights (one a thread on the device), every kind, both alignments
    std::uniform_int_distribution<std::size_t> tiny_length(1, 8);
    PmfBatch tiny;
    for (std::size_t i = 0; i < 4001; ++i)
      append_raw(tiny, random_pmf(gen, tiny_length(gen), i % 97 == 0 ? 5 : static_cast<int>(i % 5)),
                 static_cast<std::int64_t>(gen() % 1000) - 500);
    require_same_draws(tiny, seed, counter);
    require_same_draws(tiny, seed + 1, counter + 1);
  }
  // the CUB composition adds in another order: it may differ only where a draw sits on a rounding boundary
  const auto want = cpu::sample_batched(batch, seed, counter);
  const auto cub = cuda::sample_batched(batch, seed, counter, cuda::SampleKernel::cub_scan_by_key);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (cub[i] != want[i] && batch.log_scale[i] > -INFINITY) ++differ;  // the baseline does not special-case no mass
  CHECK(differ <= 3);
}

TEST_CASE("device batched sampling decides the CPU's rounding boundaries the same way", "[gpu][scans][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  const std::uint64_t seed = gen(), counter = gen() % 1000;
  constexpr double half_ulp = 0x1p-53;  // 1 + half_ulp ties back to 1
  PmfBatch batch;
  std::size_t lane_skips = 0, tile_fallbacks = 0, far_tiles = 0, boundaries = 0;
  for (int n = 0; n < 800; ++n) {
    if (gen() % 2 == 0) append_raw(batch, {0.25}, 0);  // shifts the alignment of what follows
    const double u = philox_uniform(seed, batch.size(), counter);  // the uniform of the pmf appended next
    std::vector<double> w;
    std::int64_t designed = -1;
    if (n % 4 == 0) {
      // lane 0 = {1}, lane 1 = 8 x half_ulp (its walk stays at 1), lane 2 = {0, x}: a target in [1, 1 + 2^-50)
      // lies below C_16 = E_2 = 1 + 2^-50 at w_16 = 0, so the draw is 17 (scans.cpp, case (a))
      w.assign(18, 0.0);
      w[0] = 1;
      for (std::size_t j = 8; j < 16; ++j) w[j] = half_ulp;
      w[17] = (1 + 0x1p-51) / u - (1 + 0x1p-50);
      designed = 17;
    } else if (n % 4 != 3) {
      // tile 0 = {1, 0 x 7, half_ulp x 248} (walks end at 1 + 30 2^-50, carry_1 = 1 + 31 2^-50), tile 1 = {0, x}; a
      // target between picks tile 0 and its last positive weight, 255 (case (b)). n % 4 == 2: 40 zero tiles and a
      // last weight of 2^-60 follow, so carry_32 > target and the kernel chains tiles 0, 1, ... again
      w.assign(n % 4 == 1 ? 258 : 41 * 256 + 3, 0.0);
      w[0] = 1;
      for (std::size_t j = 8; j < 256; ++j) w[j] = half_ulp;
      w[257] = (1 + 61 * 0x1p-51) / u - (1 + 31 * 0x1p-50);
      if (n % 4 == 2) w.back() = 0x1p-60;
      designed = 255;
    }
    if (designed >= 0 && w[static_cast<std::size_t>(designed == 17 ? 17 : 257)] >= 0 &&
        w[static_cast<std::size_t>(designed == 17 ? 17 : 257)] <= 1 && detail::lane_segment_draw(w, u) == designed) {
      lane_skips += designed == 17;
      tile_fallbacks += designed == 255 && w.size() == 258;
      far_tiles += designed == 255 && w.size() > 258;
      append_raw(batch, w, 0);
      continue;
    }
    // otherwise: a random pmf whose last weight x sits on a boundary of the CPU's draw, found by bisecting the
    // bit patterns of x in [0, 1] (the draw is nondecreasing in x): one ulp of x more or less changes the draw
    const std::size_t m = 2 + gen() % (n % 16 == 3 ? 12000 : 3000);
    w = random_pmf(gen, m, static_cast<int>(gen() % 4));
    const auto draw_at = [&](std::uint64_t bits) {
      w.back() = std::bit_cast<double>(bits);
      return detail::lane_segment_draw(w, u);
    };
    std::uint64_t lo = 0, hi = std::bit_cast<std::uint64_t>(1.0);
    const std::int64_t first = draw_at(lo);
    if (draw_at(hi) != first) {
      while (hi - lo > 1) {
        const std::uint64_t mid = lo + (hi - lo) / 2;
        (draw_at(mid) == first ? lo : hi) = mid;
      }
      ++boundaries;
    }
    draw_at(gen() % 2 == 0 ? lo : hi);
    append_raw(batch, w, 0);
  }
  INFO(lane_skips << " lane skips, " << tile_fallbacks << " in-tile fallbacks, " << far_tiles
                  << " beyond 32 tiles, " << boundaries << " bisected boundaries");
  CHECK(lane_skips > 30);
  CHECK(tile_fallbacks > 30);
  CHECK(far_tiles > 30);
  CHECK(boundaries > 100);
  require_same_draws(batch, seed, counter);
}

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();


/// The number of ancestors that differ, after checking what every systematic draw satisfies: P of them, in range,
/// of positive weight, counts within 1 of P w_i (up to `slack`), and nondecreasing where `sorted` (the fused
/// kernels' sums are monotone by construction; CUB's scan need not be, in the last bit).
std::size_t systematic_differences(std::span<const double> l, const std::vector<std::size_t>& got,
                                   const std::vector<std::size_t>& want, double slack, bool sorted = true) {
  const std::size_t p = l.size();
  REQUIRE(got.size() == p);
  if (sorted) REQUIRE(std::is_sorted(got.begin(), got.end()));
  std::vector<double> count(p, 0.0);
  std::size_t bad = 0, differ = 0;
  for (std::size_t j = 0; j < p; ++j) {
    if (got[j] >= p || !(l[got[j]] > -inf)) {
      ++bad;
      continue;
    }
    count[got[j]] += 1;
    if (got[j] != want[j] && ++differ <= 3)
      UNSCOPED_INFO("position " << j << ": GPU " << got[j] << ", CPU " << want[j]);
  }
  REQUIRE(bad == 0);
  const double log_sum = cpu::summarize_log_weights(l).log_sum;
  for (std::size_t i = 0; i < p; ++i)
    bad += !(std::abs(count[i] - double(p) * std::exp(l[i] - log_sum)) < 1.0 + slack);
  REQUIRE(bad == 0);
  return differ;
}

void check_summary(const WeightSummary& got, const WeightSummary& want, double tolerance) {
  CHECK(got.max_log_weight == want.max_log_weight);
  CHECK(std::abs(got.log_sum - want.log_sum) <= tolerance * std::max(1.0, std::abs(want.log_sum)));
  CHECK(std::abs(got.ess - want.ess) <= tolerance * want.ess);
}
}  // namespace

TEST_CASE("device fused systematic resampling matches the CPU's tiles; the CUB composition agrees",
          "[gpu][scans][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  constexpr std::size_t t = 4096;
  for (const std::size_t p : {std::size_t{1}, std::size_t{2}, std::size_t{3}, t - 1, t, t + 1, 3 * t + 17,
                              std::size_t{300007}, (std::size_t{1} << 20) + 5})
    for (int kind = 0; kind < 10; ++kind) {
      INFO("P = " << p << ", kind " << kind);
      const auto l = population(gen, p, kind);
      const std::uint64_t seed = gen(), counter = gen() % 1000;
      WeightSummary s_cpu{}, s_gpu{}, s_cub{};
      const auto want = cpu::resample(l, Resampler::systematic, seed, counter, &s_cpu);
      const auto got = cuda::resample(l, Resampler::systematic, seed, counter, &s_gpu, cuda::ResampleKernel::fused);
      // the same tiles and order of additions: only exp may differ in the last bit (host libm against CUDA), so an
      // ancestor differs only where P C_i / W + u lies within about 1e-11 of an integer (expected ~1e-5 per
      // population at P = 2^20); with every sum exact (kinds 3, 6) nothing may differ
      const std::size_t differ = systematic_differences(l, got, want, 1e-6);
      CHECK(differ <= (kind == 3 || kind == 6 ? 0u : 2u));
      check_summary(s_gpu, s_cpu, 1e-13);
      // summarize_log_weights adds one by one: its own error grows to (P - 1) 2^-53 (a weight below half an ulp of
      // the sum so far is lost: kind 2 at P = 2^20 loses all of 1e-12); the tiles' sums are far closer
      check_summary(s_gpu, cpu::summarize_log_weights(l), std::max(1e-12, 3.0 * double(p) * 0x1p-53));
      if (kind == 3 || kind == 6) {
        CHECK(s_gpu.log_sum == s_cpu.log_sum);
        CHECK(s_gpu.ess == s_cpu.ess);
      }
      CHECK(cuda::resample(l, Resampler::systematic, seed, counter) == got);  // automatic = fused, no summary
      // the baseline sums in CUB's order: more differences, near the rounding of its sums (2e-5 of them measured)
      const auto cub =
          cuda::resample(l, Resampler::systematic, seed, counter, &s_cub, cuda::ResampleKernel::cub_composition);
      CHECK(systematic_differences(l, cub, want, 1e-6, false) <= 2 + p / 10000);
      CHECK(s_cub.log_sum == s_gpu.log_sum);  // the baseline's summary comes from the fused passes 1 and 2
    }
  CHECK_THROWS_AS(cuda::resample(std::vector<double>{0.0}, Resampler::multinomial, 1, 0, nullptr,
                                 cuda::ResampleKernel::fused),
                  tally::domain_error);
}

TEST_CASE("device resampling matches the CPU's draws and counts", "[gpu][scans][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  std::uniform_real_distribution<double> u(-40.0, 0.0);
  for (const std::size_t p : {std::size_t{1}, std::size_t{1000}, std::size_t{300007}}) {
    std::vector<double> l(p);
    for (auto& x : l) x = u(gen);
    for (std::size_t i = 1; i < p; i += 11) l[i] = -std::numeric_limits<double>::infinity();
    INFO("P = " << p);
    const auto s_cpu = cpu::summarize_log_weights(l), s_gpu = cuda::summarize_log_weights(l);
    CHECK(s_gpu.max_log_weight == s_cpu.max_log_weight);
    CHECK(std::abs(s_gpu.log_sum - s_cpu.log_sum) <= 1e-12 * std::abs(s_cpu.log_sum) + 1e-12);
    CHECK(std::abs(s_gpu.ess - s_cpu.ess) <= 1e-10 * s_cpu.ess);
    const std::uint64_t seed = gen();
    for (const auto kind : {Resampler::systematic, Resampler::multinomial}) {
      WeightSummary s{};
      const auto a = cuda::resample(l, kind, seed, 3, &s), b = cpu::resample(l, kind, seed, 3);
      check_summary(s, s_cpu, 1e-12);
      REQUIRE(a.size() == p);
      std::size_t differ = 0;
      for (std::size_t j = 0; j < p; ++j) {
        REQUIRE(a[j] < p);
        REQUIRE(l[a[j]] > -std::numeric_limits<double>::infinity());
        differ += a[j] != b[j];
      }
      // systematic: the CPU's tiles (see above); multinomial: CUB's order against the CPU's sequential sums, so
      // only draws near a prefix sum may differ (2e-5 of 2^24 draws measured)
      CHECK(differ <= (kind == Resampler::systematic ? 2 : 2 + p / 10000));
    }
  }
}

TEST_CASE("device scans along chains equal the CPU's", "[gpu][scans][device]") {
  if (skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  const std::size_t n = 1000003;
  std::vector<std::uint64_t> x(n);
  std::vector<double> y(n);
  std::vector<std::uint8_t> head(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = gen() & gen() & gen();
    y[i] = double(gen() % 1000);
    head[i] = gen() % 500 == 0;
  }
  CHECK(cuda::chain_prefix_or(x, head) == cpu::chain_prefix_or(x, head));
  CHECK(cuda::chain_prefix_sum(y, head) == cpu::chain_prefix_sum(y, head));  // integers below 2^53: exact
}

TEST_CASE("device draws from a shared law are the host's, and sample's from the law broadcast", "[gpu][scans][device]") {
  if (skip_without_device()) return;
  // a table of up to 256 words goes over in the launch's parameters, a longer one through device memory: a law of
  // m <= 256 weights has m + 3 words, so 253 and 254 weights take one path each
  std::mt19937_64 gen(20261126);
  for (int kind = 0; kind < 6; ++kind)
    for (const std::size_t length :
         {std::size_t{1}, std::size_t{37}, std::size_t{253}, std::size_t{254}, std::size_t{700}}) {
      const std::vector<double> w = random_pmf(gen, length, kind);
      INFO("kind " << kind << ", " << length << " weights");
      for (const std::uint64_t first : {0, 5}) {
        const std::size_t P = 50000;
        const auto host = sample_shared(w, -4, P, 11, 3, first, Backend::cpu).to_host();
        REQUIRE(sample_shared(w, -4, P, 11, 3, first, Backend::cuda).to_host() == host);
        if (kind == 5) continue;  // (broadcast laws need mass)
        REQUIRE(sample(broadcast(w, -4, 0.0, P, Backend::cuda), 11, 3, first).to_host() == host);
      }
    }
}

TEST_CASE("a law broadcast on the device is the host's broadcast", "[gpu][scans][device]") {
  // the kernel steps each thread's place in the law by the grid's stride mod m: lengths that do and do not divide
  // the stride, and a count past one stride of the largest grid (65536 blocks of 256 threads: 2^24 weights); laws of
  // up to 256 weights go over in the launch's parameters, longer ones through device memory (256 and 257: both)
  if (skip_without_device()) return;
  std::mt19937_64 gen(20261127);
  for (const auto& [length, count] : {std::pair<std::size_t, std::size_t>{1, 1}, {1, 70001}, {7, 3}, {48, 65536},
                                      {256, 4099}, {257, 5}, {700, 3000}, {7, (std::size_t{1} << 24) / 7 + 11}}) {
    INFO(length << " weights, " << count << " laws");
    const std::vector<double> w = random_pmf(gen, length, 0);
    const PmfBatch host = broadcast(w, -3, -0.5, count, Backend::cpu).host();
    const PmfBatch device = broadcast(w, -3, -0.5, count, Backend::cuda).to_host();
    REQUIRE(device.weights == host.weights);
    REQUIRE(device.offset == host.offset);
    REQUIRE(device.lo == host.lo);
    REQUIRE(device.log_scale == host.log_scale);
  }
}

}  // namespace test_scans_cuda
