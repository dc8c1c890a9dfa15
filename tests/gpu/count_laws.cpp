// count_laws (unbounded counts from per-particle parameters, cut to windows): the CPU reference against 50-digit
// log masses and tail masses for every family, its errors, and the device against the host on fresh random
// parameters; common_value on both.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/count_laws.hpp"

namespace test_count_laws {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::CountFamily;
using test::big;

namespace {

/// 50-digit log mass of the family at k, from the same doubles the library reads (gamma_poisson's p and q formed
/// as it forms them).
big reference_log_mass(CountFamily family, double s, double a, double b, std::int64_t k) {
  using boost::multiprecision::lgamma;
  using boost::multiprecision::log;
  const big kb(k);
  switch (family) {
    case CountFamily::poisson: return test::log_poisson(k, big(s * a));
    case CountFamily::negative_binomial:
    case CountFamily::gamma_poisson: {
      const bool gp = family == CountFamily::gamma_poisson;
      const double r = gp ? a : s, p = gp ? b / (b + s) : a, q = gp ? s / (b + s) : 1.0 - a;
      const big rb(r);
      return lgamma(kb + rb) - lgamma(kb + 1) - lgamma(rb) + rb * log(big(p)) + (k > 0 ? kb * log(big(q)) : big(0));
    }
    case CountFamily::beta_negative_binomial: {
      const big rb(s), ab(a), bb(b);
      const auto lbeta = [](const big& x, const big& y) { return lgamma(x) + lgamma(y) - lgamma(x + y); };
      return lgamma(kb + rb) - lgamma(kb + 1) - lgamma(rb) + lbeta(ab + rb, bb + kb) - lbeta(ab, bb);
    }
  }
  return 0;
}

struct Case {
  CountFamily family;
  double s;
  std::vector<double> a, b;
};

/// P random parameters of the family: Poisson rates log-uniform on [5e-4, 2e4]; negative binomial r in [0.3, 40]
/// with means up to about 5000; Gamma parameters log-uniform over shapes of 0.3 to 200 and rates of 0.05 to 50;
/// Beta parameters a in [5, 40] and b in [0.2, 20] with r in [0.5, 10].
Case random_case(CountFamily family, std::size_t P, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto log_uniform = [&](double lo, double hi) { return lo * std::pow(hi / lo, u(rng)); };
  Case c{family, 1.0, std::vector<double>(P), std::vector<double>(P)};
  switch (family) {
    case CountFamily::poisson:
      c.s = log_uniform(0.5, 2.0);
      for (auto& x : c.a) x = log_uniform(1e-3, 1e4);
      break;
    case CountFamily::negative_binomial:
      c.s = log_uniform(0.3, 40.0);
      for (auto& x : c.a) x = std::max(log_uniform(c.s / 5000.0, 1.0), 1e-3);
      break;
    case CountFamily::gamma_poisson:
      c.s = log_uniform(0.5, 4.0);
      for (std::size_t i = 0; i < P; ++i) {
        c.a[i] = log_uniform(0.3, 200.0);
        c.b[i] = log_uniform(0.05, 50.0);
      }
      break;
    case CountFamily::beta_negative_binomial:
      c.s = log_uniform(0.5, 10.0);
      for (std::size_t i = 0; i < P; ++i) {
        c.a[i] = log_uniform(5.0, 40.0);  // a tail of order k^-(a + 1): a few hundred entries at these tolerances
        c.b[i] = log_uniform(0.2, 20.0);
      }
      break;
  }
  return c;
}

gpu::CountLaws laws_of(const Case& c, Backend where, double tolerance, std::int64_t max_size = std::int64_t{1} << 24) {
  const auto a = Column<double>::from_host(c.a, where), b = Column<double>::from_host(c.b, where);
  return gpu::count_laws(c.family, c.s, a, b, tolerance, max_size);
}

const char* name(CountFamily f) {
  switch (f) {
    case CountFamily::poisson: return "poisson";
    case CountFamily::negative_binomial: return "negative binomial";
    case CountFamily::gamma_poisson: return "gamma-poisson";
    case CountFamily::beta_negative_binomial: return "beta-negative-binomial";
  }
  return "?";
}

/// The 50-digit log mass at k + 1 from the one at k, where the family's ratio is simple:
/// Poisson(\lambda): p(k + 1) / p(k) = \lambda / (k + 1); the negative binomial's forms:
/// p(k + 1) / p(k) = q (k + r) / (k + 1). The same doubles as reference_log_mass reads; a recurrence over a window of
/// a few thousand values loses a few of the 50 digits, far below the 1e-13 the test asks. Otherwise (and at a
/// window's first value) reference_log_mass itself: its lgamma at 50 digits is what made this test slow.
big next_log_mass(CountFamily family, double s, double a, double b, std::int64_t k, const big& at_k) {
  using boost::multiprecision::log;
  switch (family) {
    case CountFamily::poisson: return at_k + log(big(s * a)) - log(big(k + 1));
    case CountFamily::negative_binomial:
    case CountFamily::gamma_poisson: {
      const bool gp = family == CountFamily::gamma_poisson;
      const double r = gp ? a : s, q = gp ? s / (b + s) : 1.0 - a;
      return at_k + log(big(q)) + log(big(k) + big(r)) - log(big(k + 1));
    }
    case CountFamily::beta_negative_binomial: break;
  }
  return reference_log_mass(family, s, a, b, k + 1);
}

constexpr CountFamily families[] = {CountFamily::poisson, CountFamily::negative_binomial, CountFamily::gamma_poisson,
                                    CountFamily::beta_negative_binomial};

}  // namespace

TEST_CASE("count_laws: each weight against its 50-digit mass, the window's dropped mass within the tolerance",
          "[counts]") {
  std::mt19937_64 rng(20261202);
  for (const CountFamily family : families)
    for (const double tolerance : {1e-6, 1e-12}) {
      INFO(name(family) << ", tolerance " << tolerance);
      const Case c = random_case(family, 12, rng);
      const gpu::CountLaws out = laws_of(c, Backend::cpu, tolerance);
      const gpu::PmfBatch& laws = out.laws.host();
      REQUIRE(laws.size() == c.a.size());
      double largest_dropped = 0.0;
      for (std::size_t i = 0; i < laws.size(); ++i) {
        INFO("particle " << i << ": s = " << c.s << ", a = " << c.a[i] << ", b = " << c.b[i] << ", window "
                         << laws.lo[i] << " + " << laws.length(i));
        const auto w = laws[i];
        REQUIRE(laws.lo[i] >= 0);
        big kept = 0;
        double top = 0.0;
        big ref;
        for (std::size_t k = 0; k < w.size(); ++k) {
          const std::int64_t value = laws.lo[i] + static_cast<std::int64_t>(k);
          ref = k == 0 ? reference_log_mass(family, c.s, c.a[i], c.b[i], value)
                       : next_log_mass(family, c.s, c.a[i], c.b[i], value - 1, ref);
          kept += boost::multiprecision::exp(ref);
          top = std::max(top, w[k]);
          REQUIRE(w[k] >= 0.0);
          REQUIRE(w[k] <= 1.0);
          const double want = static_cast<double>(ref) - laws.log_scale[i];
          // the saddle-point forms' 1e-14 relative of the log mass (a far tail's is some tens), and the top's
          const double tol = 1e-12 + 1e-13 * std::abs(static_cast<double>(ref));
          INFO("k = " << value << ": log w = " << std::log(w[k]) << ", reference " << want);
          if (w[k] >= std::numeric_limits<double>::min()) REQUIRE(std::abs(std::log(w[k]) - want) <= tol);
          else REQUIRE(want < -700.0);
        }
        REQUIRE(top >= 1.0 - 1e-12);  // the largest weight is the mode's
        const double dropped = static_cast<double>(1 - kept);
        largest_dropped = std::max(largest_dropped, dropped);
        {
          // a sound bound: the true dropped mass within the tolerance and within the reported error
          REQUIRE(dropped <= tolerance);
          REQUIRE(dropped / (1 - dropped) <= out.error * (1 + 1e-9) + 1e-300);
          // and not a wasteful window: cutting one more entry at either end would drop more than half the tolerance
          // on that side, or the window is a single value
          if (w.size() > 1) {
            const big below = boost::multiprecision::exp(reference_log_mass(family, c.s, c.a[i], c.b[i], laws.lo[i]));
            const std::int64_t last = laws.lo[i] + static_cast<std::int64_t>(w.size()) - 1;
            const big above = boost::multiprecision::exp(reference_log_mass(family, c.s, c.a[i], c.b[i], last));
            CHECK(static_cast<double>(below + above) > tolerance * 1e-6);
          }
        }
      }
      REQUIRE(out.error >= 0.0);
      REQUIRE(out.error <= 2.0 * tolerance);
      REQUIRE(largest_dropped > 0.0);  // (the tails were cut: the test is about the cut)
    }
}

TEST_CASE("count_laws: point masses, and the window's ends near 0", "[counts]") {
  const auto one = [](double x) { return Column<double>::host_values({x}); };
  // rate 0 and success probability 1: the point mass at 0, no error
  for (const auto& [family, s, a] : {std::tuple{CountFamily::poisson, 1.0, 0.0},
                                     std::tuple{CountFamily::poisson, 0.0, 3.0},
                                     std::tuple{CountFamily::negative_binomial, 2.5, 1.0}}) {
    const gpu::CountLaws out = gpu::count_laws(family, s, one(a), Column<double>(), 1e-12, 100);
    REQUIRE(out.laws.host().size() == 1);
    CHECK(out.laws.host().lo[0] == 0);
    CHECK(out.laws.host().length(0) == 1);
    CHECK(out.laws.host().weights[0] == 1.0);
    CHECK(out.laws.host().log_scale[0] == 0.0);
    CHECK(out.error == 0.0);
  }
  // a tiny rate keeps 0 (and perhaps 1); r < 1 keeps 0 (the law decreases from there)
  const gpu::CountLaws tiny = gpu::count_laws(CountFamily::poisson, 1.0, one(1e-9), Column<double>(), 1e-6, 100);
  CHECK(tiny.laws.host().lo[0] == 0);
  const gpu::CountLaws low_r =
      gpu::count_laws(CountFamily::negative_binomial, 0.5, one(0.01), Column<double>(), 1e-9, 1 << 20);
  CHECK(low_r.laws.host().lo[0] == 0);
  // a large rate's window starts far from 0 and holds its mass
  const gpu::CountLaws wide = gpu::count_laws(CountFamily::poisson, 2.0, one(5e5), Column<double>(), 1e-12, 1 << 20);
  CHECK(wide.laws.host().lo[0] > 990000);
  CHECK(wide.laws.host().lo[0] + static_cast<std::int64_t>(wide.laws.host().length(0)) < 1010000);
}

TEST_CASE("count_laws: errors name the particle and the parameter", "[counts]") {
  const auto col = [](std::vector<double> v) { return Column<double>::host_values(std::move(v)); };
  const Column<double> none;
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::poisson, 1.0, col({1.0, -2.0}), none, 1e-9, 100),
                    Catch::Contains("particle 1") && Catch::Contains("a = -2"));
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::poisson, 1.0, col({std::nan("")}), none, 1e-9, 100), domain_error);
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::negative_binomial, 2.0, col({0.0}), none, 1e-9, 100), domain_error);
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::negative_binomial, -1.0, col({0.5}), none, 1e-9, 100), domain_error);
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::gamma_poisson, 1.0, col({2.0, 2.0}), col({1.0, 0.0}), 1e-9, 100),
                    Catch::Contains("particle 1") && Catch::Contains("b = 0"));
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::poisson, 1.0, col({1.0}), none, 0.0, 100), domain_error);
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::poisson, 1.0, col({1.0}), none, 1e-9, 0), domain_error);
  // a mean past 2^60, and a window longer than max_size
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::poisson, 1.0, col({0x1p61}), none, 1e-9, 100), overflow_error);
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::negative_binomial, 1.0, col({1e-19}), none, 1e-9, 100), overflow_error);
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::poisson, 1.0, col({1e6}), none, 1e-9, 100),
                    Catch::Contains("max_size = 100"));
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::gamma_poisson, 1.0, col({1.0, 1.0}), col({1.0}), 1e-9, 100),
                  shape_error);
  CHECK_THROWS_AS(gpu::count_laws(CountFamily::beta_negative_binomial, 1.0, col({2.0}), col({-1.0}), 1e-9, 100),
                  domain_error);
  // a Beta's negative binomial with a near 0: a tail of order k^-1.2, found too long without being made
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::beta_negative_binomial, 2.0, col({0.2}), col({3.0}), 1e-15,
                                    std::int64_t{1} << 27),
                    Catch::Contains("max_size"));
}

TEST_CASE("common_value on the host", "[counts]") {
  CHECK_FALSE(gpu::common_value(Column<double>()));
  CHECK(gpu::common_value(Column<double>::host_values({2.5})) == 2.5);
  CHECK(gpu::common_value(Column<double>::host_values({2.5, 2.5, 2.5})) == 2.5);
  CHECK_FALSE(gpu::common_value(Column<double>::host_values({2.5, 2.5, 2.5000000000000004})));
  CHECK_FALSE(gpu::common_value(Column<double>::host_values({0.0, -0.0})));  // bit for bit
}

TEST_CASE("count_laws on the device against the host, fresh random parameters", "[counts][device]") {
  if (test::skip_without_device()) return;
  std::random_device seed_source;
  const std::uint64_t seed = (std::uint64_t{seed_source()} << 32) ^ seed_source();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  for (const CountFamily family : families)
    for (const std::size_t P : {std::size_t{1}, std::size_t{37}, std::size_t{5000}}) {
      INFO(name(family) << ", P = " << P);
      const Case c = random_case(family, P, rng);
      const double tolerance = P == 37 ? 1e-6 : 1e-13;
      const gpu::CountLaws host = laws_of(c, Backend::cpu, tolerance);
      const gpu::CountLaws device = laws_of(c, Backend::cuda, tolerance);
      REQUIRE(device.laws.where() == Backend::cuda);
      REQUIRE(device.laws.size() == P);
      const gpu::PmfBatch h = host.laws.host(), d = device.laws.to_host();
      std::size_t moved = 0;  // windows whose ends differ (a bisection decided the other way by an ulp)
      for (std::size_t i = 0; i < P; ++i) {
        INFO("particle " << i << ": a = " << c.a[i] << ", b = " << c.b[i]);
        const std::int64_t hl = h.lo[i], dl = d.lo[i], hh = hl + static_cast<std::int64_t>(h.length(i)),
                           dh = dl + static_cast<std::int64_t>(d.length(i));
        if (hl != dl || hh != dh) ++moved;
        REQUIRE(std::abs(hl - dl) <= 1);
        REQUIRE(std::abs(hh - dh) <= 1);
        REQUIRE(std::abs(h.log_scale[i] - d.log_scale[i]) <= 1e-13 * std::max(1.0, std::abs(h.log_scale[i])));
        for (std::int64_t k = std::max(hl, dl); k < std::min(hh, dh); ++k) {
          // the same formulas, with the device's log, exp and division: within the 50-digit test's tolerance of
          // each other (1e-14 relative of the log mass, which is some tens in a far tail)
          const double x = h[i][static_cast<std::size_t>(k - hl)], y = d[i][static_cast<std::size_t>(k - dl)];
          INFO("k = " << k << ": host " << x << ", device " << y);
          REQUIRE(x > 0.0);
          REQUIRE(y > 0.0);
          const double log_mass = std::log(x) + h.log_scale[i];
          REQUIRE(std::abs(std::log(x) - std::log(y)) <= 2e-12 + 2e-13 * std::abs(log_mass));
        }
      }
      CHECK(moved <= P / 100 + 1);
      REQUIRE(std::abs(host.error - device.error) <= 1e-6 * host.error + 1e-300);
    }
  // errors: the first bad particle, named as on the host
  auto a = Column<double>::from_host({1.0, 2.0, -1.0, -3.0}, Backend::cuda);
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::poisson, 1.0, a, Column<double>(), 1e-9, 100),
                    Catch::Contains("particle 2") && Catch::Contains("a = -1"));
  auto big_rate = Column<double>::from_host({1.0, 1e6}, Backend::cuda);
  CHECK_THROWS_WITH(gpu::count_laws(CountFamily::poisson, 1.0, big_rate, Column<double>(), 1e-9, 100),
                    Catch::Contains("particle 1") && Catch::Contains("max_size = 100"));
  // the device is usable after the errors
  auto ok = Column<double>::from_host({3.0}, Backend::cuda);
  CHECK(gpu::count_laws(CountFamily::poisson, 1.0, ok, Column<double>(), 1e-9, 100).laws.size() == 1);
}

TEST_CASE("common_value on the device", "[counts][device]") {
  if (test::skip_without_device()) return;
  CHECK(gpu::common_value(Column<double>::from_host(std::vector<double>(100000, 0.25), Backend::cuda)) == 0.25);
  std::vector<double> v(100000, 0.25);
  v[77777] = 0.25000000000000006;
  CHECK_FALSE(gpu::common_value(Column<double>::from_host(v, Backend::cuda)));
  CHECK(gpu::common_value(Column<double>::from_host({1.0}, Backend::cuda)) == 1.0);
  CHECK_FALSE(gpu::common_value(Column<double>::from_host({0.0, -0.0}, Backend::cuda)));
}

}  // namespace test_count_laws
