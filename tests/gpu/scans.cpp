// Scans on the CPU: batched inverse-cdf sampling (frequencies, the lane-segment rule) and scans along chains.
#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "gpu/src/scans/scan_math.hpp"  // private: the draw rule itself, tested on hand-made inputs
#include "gpu/statistics.hpp"
#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/chain_scan.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/sample_batched.hpp"

namespace test_scans {

using namespace tally::gpu;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();

/// Appends w as it is (no rescaling by the maximum, unlike push_back), so that exact dyadic weights stay exact.
void append_raw(PmfBatch& batch, const std::vector<double>& w, std::int64_t lo) {
  batch.weights.insert(batch.weights.end(), w.begin(), w.end());
  batch.offset.push_back(static_cast<std::int64_t>(batch.weights.size()));
  batch.lo.push_back(lo);
  double max = 0;
  for (const double x : w) max = std::max(max, x);
  batch.log_scale.push_back(max > 0 ? 0.0 : -inf);
}

/// The sums of sample_batched.hpp's order transcribed literally, apart from scan_math.hpp's code.
struct RuleSums {
  std::vector<double> prefix;  // C_j for j < 256 T (T tiles; zero weights past the end)
  std::vector<double> carry;   // carry_t for t <= T; carry_T is the total
};
RuleSums rule_sums(std::span<const double> w) {
  const std::size_t m = w.size(), tiles = (m + 255) / 256;  // tile t holds j = 256 t .. 256 t + 255
  const auto weight = [&](std::size_t j) { return j < m ? w[j] : 0.0; };
  RuleSums sums{std::vector<double>(tiles * 256), std::vector<double>(tiles + 1, 0.0)};
  for (std::size_t t = 0; t < tiles; ++t) {
    double scan[32];
    for (std::size_t l = 0; l < 32; ++l) {
      double s = weight(256 * t + 8 * l);
      for (std::size_t r = 1; r < 8; ++r) s += weight(256 * t + 8 * l + r);
      scan[l] = s;
    }
    // Kogge-Stone in place: l descending, so scan[l - d] is still the previous round's (l >= d >= 1: no wrap)
    for (std::size_t d = 1; d < 32; d *= 2)
      for (std::size_t l = 31; l >= d; --l) scan[l] += scan[l - d];
    sums.carry[t + 1] = sums.carry[t] + scan[31];
    for (std::size_t l = 0; l < 32; ++l) {
      double c = sums.carry[t] + (l == 0 ? 0.0 : scan[l - 1]);
      for (std::size_t r = 0; r < 8; ++r) sums.prefix[256 * t + 8 * l + r] = c += weight(256 * t + 8 * l + r);
    }
  }
  return sums;
}

/// The draw rule transcribed literally: the tile t*, then the smallest j of t* with w_j > 0 and C_j > target, else
/// the largest j of t* with w_j > 0.
std::int64_t rule_draw(std::span<const double> w, double u) {
  const std::size_t m = w.size(), tiles = (m + 255) / 256;
  const RuleSums sums = rule_sums(w);
  const double total = sums.carry[tiles];
  if (!(total > 0)) return 0;
  const double target = u * total;
  std::size_t tile = tiles;
  for (std::size_t t = 0; t < tiles && tile == tiles; ++t)
    if (sums.carry[t + 1] > target) tile = t;
  for (std::size_t t = 0; t < tiles && total <= target; ++t)  // none: the last tile of positive weight
    for (std::size_t j = 256 * t; j < std::min(m, 256 * t + 256); ++j)
      if (w[j] > 0) tile = t;
  const std::size_t end = std::min(m, 256 * tile + 256);  // the tile's weights below m
  for (std::size_t j = 256 * tile; j < end; ++j)
    if (w[j] > 0 && sums.prefix[j] > target) return static_cast<std::int64_t>(j);
  for (std::size_t j = end; j-- > 256 * tile;)
    if (w[j] > 0) return static_cast<std::int64_t>(j);
  return -1;  // unreachable: tile t* has positive weight
}

/// Random pmfs of `length` weights, of the kind `kind`: 0 sparse over 20 decades (30 % zeros), 1 dense U(0, 1],
/// 2 leading half zero, 3 trailing half zero, 4 one positive weight, 5 all zero. `dyadic` makes every weight a
/// multiple of 2^-20 (so that every sum of up to 2^32 of them is exact in any order).
std::vector<double> random_pmf(std::mt19937_64& gen, std::size_t length, int kind, bool dyadic) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> w(length);
  for (auto& x : w) {
    x = kind == 0 ? (u(gen) < 0.3 ? 0.0 : std::pow(10.0, -20.0 * u(gen))) : 1.0 - u(gen);
    if (dyadic) x = std::floor(x * 0x1p20) * 0x1p-20;
  }
  if (kind == 2) std::fill(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(length / 2), 0.0);
  if (kind == 3) std::fill(w.begin() + static_cast<std::ptrdiff_t>((length + 1) / 2), w.end(), 0.0);
  if (kind == 4) {
    const double keep = dyadic ? 0.5 : w[0];
    std::fill(w.begin(), w.end(), 0.0);
    w[gen() % length] = keep;
  }
  if (kind == 5) std::fill(w.begin(), w.end(), 0.0);
  return w;
}
}  // namespace

TEST_CASE("batched sampling draws each value with its probability and never a zero weight", "[gpu][scans]") {
  const std::vector<double> w{1.0, 0.0, 0.5, 2e-3, 0.25, 0.0, 0.9};
  PmfBatch batch;
  const std::size_t p = 200000;
  for (std::size_t i = 0; i < p; ++i) batch.push_back(w, -3 + static_cast<std::int64_t>(i % 5));
  const auto draws = cpu::sample_batched(batch, 42, 7);
  std::vector<double> counts(w.size(), 0.0), probabilities(w.size());
  double total = 0;
  for (const double x : w) total += x;
  for (std::size_t k = 0; k < w.size(); ++k) probabilities[k] = w[k] / total;
  for (std::size_t i = 0; i < p; ++i) {
    const auto k = draws[i] - batch.lo[i];
    REQUIRE(k >= 0);
    REQUIRE(k < static_cast<std::int64_t>(w.size()));
    REQUIRE(w[static_cast<std::size_t>(k)] > 0);
    counts[static_cast<std::size_t>(k)] += 1;
  }
  const boost::math::chi_squared dist(4);  // 5 cells of positive probability
  CHECK(tally::test::chi_square(counts, probabilities, double(p)) < quantile(dist, 0.9999));
  CHECK(cpu::sample_batched(batch, 42, 7) == draws);  // reproducible
  CHECK(cpu::sample_batched(batch, 42, 8) != draws);  // another counter, other draws
}

TEST_CASE("batched sampling inverts the cdf as documented, across tiles", "[gpu][scans]") {
  PmfBatch batch;
  batch.push_back(std::vector<double>{1.0, 1.0}, 10);  // draws 11 exactly when 2u >= 1
  std::vector<double> spike(3000, 0.0);
  spike[2999] = 1.0;
  batch.push_back(spike, 0);  // only the last of 12 tiles has mass
  batch.push_back(std::vector<double>{0.0, 0.0, 0.0}, 5);  // no mass: draws lo
  std::vector<double> ramp(100);
  for (std::size_t k = 0; k < ramp.size(); ++k) ramp[k] = double(k + 1) / 100.0;
  batch.push_back(ramp, -50);
  for (std::uint64_t counter = 0; counter < 50; ++counter) {
    const auto d = cpu::sample_batched(batch, 3, counter);
    CHECK(d[0] == (2.0 * philox_uniform(3, 0, counter) >= 1.0 ? 11 : 10));
    CHECK(d[1] == 2999);
    CHECK(d[2] == 5);
    // the ramp: the smallest k with (k+1)(k+2)/2 > u * 5050, up to rounding of the sums
    const double t = philox_uniform(3, 3, counter) * 5050.0;
    std::int64_t k = 0;
    while (static_cast<double>((k + 1) * (k + 2)) / 2.0 <= t) ++k;
    CHECK(std::abs(d[3] - (-50 + k)) <= 1);
  }
}

TEST_CASE("the lane-segment rule skips zero weights in the rounding window and falls back as documented",
          "[gpu][scans]") {
  using detail::lane_segment_draw;
  constexpr double half_ulp = 0x1p-53;  // half an ulp of 1: 1 + half_ulp ties back to 1 (even)
  // the order itself: 256 ones give s_l = 8, S_l = 8 (l + 1), E_l = 8 l and a total of 256, all exact
  const std::vector<double> ones(300, 1.0);
  const auto tile = detail::scan_lane_tile(ones, 0);
  for (int l = 0; l < 32; ++l) {
    CHECK(tile.inclusive[l] == 8.0 * (l + 1));
    CHECK(tile.exclusive[l] == 8.0 * l);
  }
  CHECK(tile.total == 256.0);
  CHECK(detail::scan_lane_tile(ones, 1).total == 44.0);  // 300 - 256 ones, the rest 0
  // (a) lane 0 = {1}, lane 1 = 8 x half_ulp (s_1 = 2^-50 exactly, but its walk stays at 1), lane 2 = {0, 1}: E_2 =
  // S_1 = 1 + 2^-50 and target = 0.5 (2 + 2^-50) = 1 + 2^-51 lies between. C_16 > target at w_16 = 0: skipped, the
  // draw is 17 (exact inversion would give 12: P_j = 1 + (j - 7) 2^-53 for 8 <= j <= 15)
  std::vector<double> a(18, 0.0);
  a[0] = 1;
  for (std::size_t j = 8; j < 16; ++j) a[j] = half_ulp;
  a[17] = 1;
  CHECK(lane_segment_draw(a, 0.5) == 17);
  CHECK(rule_draw(a, 0.5) == 17);
  // a whole lane of zeros: lane 2 = 0, lane 3 = {1}; E_2 = 1 + 2^-50 > target, the draw is 24
  std::vector<double> a2(25, 0.0);
  std::copy(a.begin(), a.begin() + 16, a2.begin());
  a2[24] = 1;
  CHECK(lane_segment_draw(a2, 0.5) == 24);
  CHECK(rule_draw(a2, 0.5) == 24);
  // (b) tile 0 = {1, 0 x 7, half_ulp x 248}: the walk of lane l >= 1 stays at E_l = 1 + (l - 1) 2^-50 (an even
  // multiple of ulp(1) = 2^-52, so each + half_ulp ties back), yet carry_1 = S_31 = 1 + 31 2^-50; tile 1 = {0, 1}.
  // A target in [1 + 30 2^-50, 1 + 31 2^-50) picks tile 0, where no C_j exceeds it: its last positive weight, 255.
  std::vector<double> b(258, 0.0);
  b[0] = 1;
  for (std::size_t j = 8; j < 256; ++j) b[j] = half_ulp;
  b[257] = 1;
  const double total = 2 + 31 * 0x1p-50;  // exact: a multiple of ulp(2) = 2^-51
  const double u = (1 + 61 * 0x1p-51) / total;
  REQUIRE(u * total >= 1 + 30 * 0x1p-50);
  REQUIRE(u * total < 1 + 31 * 0x1p-50);
  CHECK(lane_segment_draw(b, u) == 255);
  CHECK(rule_draw(b, u) == 255);
  CHECK(lane_segment_draw(b, 0.25) == 0);
  CHECK(lane_segment_draw(b, 0.75) == 257);
  // (c) the largest uniform, 1 - 2^-54, rounds u C up to C = 1: no carry exceeds the target, so the last tile of
  // positive mass (tile 0; tiles 1 and 2 are zero) and in it the last positive weight
  const double u_max = 1 - 0x1p-54, u_min = 0x1p-54;  // philox_uniform's extremes
  std::vector<double> c(600, 0.0);
  c[0] = 0.25;
  c[2] = 0.75;
  REQUIRE(u_max * 1.0 == 1.0);
  CHECK(lane_segment_draw(c, u_max) == 2);
  CHECK(rule_draw(c, u_max) == 2);
  CHECK(lane_segment_draw(c, u_min) == 0);
  c[300] = 0.5;  // tile 1 gets mass: it is now the last of positive mass (total 1.5, u_max 1.5 rounds to 1.5)
  REQUIRE(u_max * 1.5 == 1.5);
  CHECK(lane_segment_draw(c, u_max) == 300);
  CHECK(rule_draw(c, u_max) == 300);
  // (d) leading zero tiles and one positive weight; no mass; one weight
  std::vector<double> d(611, 0.0);
  d[600] = 0.3;
  for (const double v : {u_min, 0.5, u_max}) CHECK(lane_segment_draw(d, v) == 600);
  CHECK(lane_segment_draw(std::vector<double>(300, 0.0), 0.5) == 0);
  CHECK(lane_segment_draw(std::vector<double>{0.7}, u_max) == 0);
}

TEST_CASE("batched sampling follows the lane-segment rule and exact inversion outside the rounding window",
          "[gpu][scans]") {
  std::mt19937_64 gen(603);
  PmfBatch batch;
  for (const std::size_t length : {1, 7, 255, 256, 257, 1000, 3000})
    for (int kind = 0; kind < 6; ++kind)
      for (int repeat = 0; repeat < 3; ++repeat) batch.push_back(random_pmf(gen, length, kind, false), -7);
  using tally::test::big;
  std::vector<std::vector<big>> exact(batch.size());  // P_j = sum_{k <= j} w_k, 50 digits
  for (std::size_t i = 0; i < batch.size(); ++i) {
    big sum = 0;
    for (const double x : batch[i]) exact[i].push_back(sum += x);
  }
  const double delta = 1e-12;
  std::size_t differ = 0, draws = 0;
  for (std::uint64_t counter = 0; counter < 20; ++counter) {
    const auto d = cpu::sample_batched(batch, 11, counter);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto w = batch[i];
      const auto j = d[i] - batch.lo[i];
      const double u = philox_uniform(11, i, counter);
      INFO("pmf " << i << " of length " << w.size() << ", counter " << counter);
      REQUIRE(j == rule_draw(w, u));
      if (batch.log_scale[i] == -inf) {  // no mass: lo
        REQUIRE(j == 0);
        continue;
      }
      REQUIRE(w[static_cast<std::size_t>(j)] > 0);
      const auto& p = exact[i];
      const big target = big(u) * p.back();
      const auto k = std::upper_bound(p.begin(), p.end(), target) - p.begin();  // the first P_k > target
      ++draws;
      if (j == k) continue;
      ++differ;  // allowed only when target lies within a relative delta of the prefix sums around j
      REQUIRE((j == 0 ? big(0) : p[static_cast<std::size_t>(j) - 1]) <= target * (1 + delta));
      REQUIRE(p[static_cast<std::size_t>(j)] > target * (1 - delta));
    }
  }
  CHECK(draws > 2000);
  CHECK(differ <= 2);  // ~1e-13 a draw expected
}

TEST_CASE("the draw rule decides on every bit of the prefix sums and carries as documented", "[gpu][scans]") {
  // targets on and next to each C_j and carry: a sum off by one ulp in scan_math.hpp changes some draw here
  std::mt19937_64 gen(606);
  std::size_t calls = 0, ties = 0;
  for (const std::size_t length : {7, 255, 256, 257, 1000, 3000})
    for (int kind = 0; kind < 4; ++kind) {
      const auto w = random_pmf(gen, length, kind, false);
      const RuleSums sums = rule_sums(w);
      const double total = sums.carry.back();
      std::vector<double> values(sums.carry.begin() + 1, sums.carry.end());
      for (int k = 0; k < 40; ++k) values.push_back(sums.prefix[gen() % length]);
      for (const double v : values) {
        double u = v / total;
        for (int step = 0; step < 3; ++step) u = std::nextafter(u, 0.0);
        for (int step = 0; step < 7; ++step, u = std::nextafter(u, 1.0)) {
          if (!(u > 0 && u < 1)) continue;
          INFO("length " << length << ", kind " << kind << ", u = " << u);
          REQUIRE(detail::lane_segment_draw(w, u) == rule_draw(w, u));
          ++calls;
          ties += u * total == v;
        }
      }
    }
  CHECK(calls > 5000);
  CHECK(ties > calls / 10);
}

TEST_CASE("batched sampling of dyadic weights (all sums exact) is exact inversion", "[gpu][scans]") {
  std::mt19937_64 gen(604);
  PmfBatch batch;
  for (const std::size_t length : {1, 7, 255, 256, 257, 1000, 3000})
    for (int kind = 0; kind < 6; ++kind)
      for (int repeat = 0; repeat < 2; ++repeat) append_raw(batch, random_pmf(gen, length, kind, true), 3);
  for (std::uint64_t counter = 0; counter < 20; ++counter) {
    const auto d = cpu::sample_batched(batch, 12, counter);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto w = batch[i];
      double total = 0;
      std::int64_t last = 0;
      for (std::size_t k = 0; k < w.size(); ++k)
        if (w[k] > 0) {
          total += w[k];
          last = static_cast<std::int64_t>(k);
        }
      const double target = philox_uniform(12, i, counter) * total;
      std::int64_t want = last;  // the smallest j with P_j > target, else the last positive weight (u C rounded up)
      double sum = 0;
      for (std::size_t k = 0; k < w.size(); ++k)
        if ((sum += w[k]) > target) {
          want = static_cast<std::int64_t>(k);
          break;
        }
      INFO("pmf " << i << " of length " << w.size() << ", counter " << counter);
      REQUIRE(d[i] - batch.lo[i] == want);
    }
  }
}

TEST_CASE("batched sampling across tiles draws each value with its probability", "[gpu][scans]") {
  std::mt19937_64 gen(605);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> w(600);  // 3 tiles, the last one partial
  for (auto& x : w) x = u(gen) < 0.3 ? 0.0 : u(gen);
  std::fill(w.begin() + 250, w.begin() + 270, 0.0);  // zeros across the first tile boundary
  PmfBatch batch;
  const std::size_t p = 60000;  // about 140 draws per cell of positive weight
  for (std::size_t i = 0; i < p; ++i) batch.push_back(w, 0);
  const auto draws = cpu::sample_batched(batch, 5, 1);
  std::vector<double> counts(w.size(), 0.0), probabilities(w.size());
  double total = 0;
  for (const double x : w) total += x;
  std::size_t cells = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    probabilities[k] = w[k] / total;
    cells += w[k] > 0;
  }
  for (const auto k : draws) {
    REQUIRE(w[static_cast<std::size_t>(k)] > 0);
    counts[static_cast<std::size_t>(k)] += 1;
  }
  const boost::math::chi_squared dist(double(cells - 1));
  CHECK(tally::test::chi_square(counts, probabilities, double(p)) < quantile(dist, 0.9999));
}

TEST_CASE("scans along chains restart at every head", "[gpu][scans]") {
  std::mt19937_64 gen(602);
  const std::size_t n = 1000;
  std::vector<std::uint64_t> x(n);
  std::vector<double> y(n);
  std::vector<std::uint8_t> head(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = std::uint64_t{1} << (gen() % 64);
    y[i] = double(gen() % 100);
    head[i] = gen() % 10 == 0;
  }
  const auto o = cpu::chain_prefix_or(x, head);
  const auto s = cpu::chain_prefix_sum(y, head);
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t h = i;
    while (h > 0 && !head[h]) --h;
    std::uint64_t want_or = 0;
    double want_sum = 0;
    for (std::size_t j = h; j <= i; ++j) {
      want_or |= x[j];
      want_sum += y[j];
    }
    REQUIRE(o[i] == want_or);
    REQUIRE(s[i] == want_sum);  // integers: exact
  }
  CHECK_THROWS_AS(cpu::chain_prefix_or(x, std::vector<std::uint8_t>(3)), tally::shape_error);
}

TEST_CASE("a shared law's draw table draws what the lane-segment rule draws", "[gpu][scans]") {
  // detail::draw_table + table_draw (gpu::sample_shared, on the host and in the device kernel) against the rule's
  // code, lane_segment_draw: the hand-made rounding cases above, then random laws of 1 to 1500 weights (zeros,
  // runs of zero tiles, weights spread over 20 decades) and many uniforms, philox_uniform's extremes among them
  const auto same = [](const std::vector<double>& w, double u) {
    const detail::DrawTable t = detail::draw_table(w);
    const auto tiles = static_cast<std::int64_t>(t.last_positive.size()), m = static_cast<std::int64_t>(w.size());
    return detail::table_draw(t.carry.data(), t.c.data(), t.last_positive.data(), tiles, m, t.last_tile, u) ==
           detail::lane_segment_draw(w, u);
  };
  constexpr double half_ulp = 0x1p-53, u_max = 1 - 0x1p-54, u_min = 0x1p-54;
  std::vector<double> a(18, 0.0), b(258, 0.0), c(600, 0.0);
  a[0] = a[17] = b[0] = b[257] = 1;
  for (std::size_t j = 8; j < 16; ++j) a[j] = half_ulp;
  for (std::size_t j = 8; j < 256; ++j) b[j] = half_ulp;
  c[0] = 0.25;
  c[2] = 0.75;
  std::vector<double> c2 = c;
  c2[300] = 0.5;
  const double u_b = (1 + 61 * 0x1p-51) / (2 + 31 * 0x1p-50);  // case (b): tile 0, none of its C_j above target
  for (const auto& w : {a, b, c, c2, std::vector<double>(300, 0.0), std::vector<double>{0.7}})
    for (const double u : {u_min, 0.25, 0.5, 0.75, u_b, u_max}) {
      INFO(w.size() << " weights, u = " << u);
      CHECK(same(w, u));
    }
  std::mt19937_64 gen(20261126);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int draws = 0;
  for (int law = 0; law < 300; ++law) {
    std::vector<double> w(1 + gen() % 1500);
    for (double& x : w) x = unit(gen) < 0.3 ? 0.0 : std::pow(10.0, -20.0 * unit(gen));
    if (law % 5 == 1 && w.size() > 600) std::fill(w.begin() + 256, w.begin() + 512, 0.0);  // a zero tile
    if (law % 7 == 2) std::fill(w.begin(), w.end() - 1, 0.0);  // one positive weight, at the end
    for (int k = 0; k < 400; ++k) {
      const double u = k == 0 ? u_max : k == 1 ? u_min : philox_uniform(17, std::uint64_t(law), std::uint64_t(k));
      INFO("law " << law << " (" << w.size() << " weights), u = " << u);
      REQUIRE(same(w, u));
      ++draws;
    }
  }
  CHECK(draws == 300 * 400);
  // gpu::sample_shared on the host: what gpu::sample draws from the law broadcast to every particle
  std::vector<double> poisson(40);
  for (std::size_t k = 0; k < poisson.size(); ++k)
    poisson[k] = std::exp(double(k) * std::log(12.0) - 12.0 - std::lgamma(double(k) + 1.0));
  for (const std::uint64_t first : {0, 17}) {
    const auto want = sample(broadcast(poisson, 3, 0.0, 3000, Backend::cpu), 5, 9, first).to_host();
    CHECK(sample_shared(poisson, 3, 3000, 5, 9, first, Backend::cpu).to_host() == want);
  }
  CHECK_THROWS_AS(sample_shared(std::span<const double>(), 0, 10, 1, 1, 0, Backend::cpu), tally::shape_error);
}

}  // namespace test_scans
