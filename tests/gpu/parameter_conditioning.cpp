// condition_on_sum of count laws given by their parameters: the CPU reference against 50-digit products along the
// diagonal and against the dense laws' condition_on_sum, impossible values, bad parameters; the device against the
// host on fresh random inputs.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <optional>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "parameter_reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/parameter_laws.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_parameter_conditioning {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::ParameterFamily;
using test::big;

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();

/// One operand's parameters, one per particle, on the host.
struct Operand {
  ParameterFamily family;
  std::vector<std::int64_t> n;
  std::vector<double> a, b;
  /// 50-digit log masses of particle i's law on 0 .. n_i.
  std::vector<big> reference(std::size_t i) const {
    return family == ParameterFamily::binomial ? test::binomial_reference(n[i], a[i])
                                               : test::beta_binomial_reference(n[i], a[i], b[i]);
  }
};

/// The operand's columns where `where` keeps them, and its ParameterLaws over them.
struct Placed {
  Column<std::int64_t> n;
  Column<double> a, b;
  ParameterFamily family;
  Placed(const Operand& o, Backend where)
      : n(Column<std::int64_t>::from_host(o.n, where)), a(Column<double>::from_host(o.a, where)),
        b(Column<double>::from_host(o.b, where)), family(o.family) {}
  gpu::ParameterLaws laws(std::optional<std::int64_t> n_max = std::nullopt) const { return {family, n, a, b, n_max}; }
};

struct Result {
  gpu::PmfBatch posterior;
  std::vector<double> log_likelihood;
};

/// x_max, y_max: the callers' bounds on n (ParameterLaws::n_max), none by default.
Result condition(const Operand& x, const Operand& y, int sign, const std::vector<std::int64_t>& z, Backend where,
                 std::optional<std::int64_t> x_max = std::nullopt, std::optional<std::int64_t> y_max = std::nullopt) {
  const Placed px(x, where), py(y, where);
  auto ll = Column<double>::from_host(std::vector<double>(z.size(), 0.0), where);
  const gpu::Laws post =
      gpu::condition_on_sum(px.laws(x_max), py.laws(y_max), sign, Column<std::int64_t>::from_host(z, where), ll);
  return {post.to_host(), ll.to_host()};
}

/// The product's 50-digit log mass at X = k: log p_X(k) + log p_Y(sign (z - k)), -inf off both supports.
big product_reference(const std::vector<big>& rx, const std::vector<big>& ry, int sign, std::int64_t z, std::int64_t k) {
  const std::int64_t yv = sign > 0 ? z - k : k - z;
  if (k < 0 || k >= static_cast<std::int64_t>(rx.size()) || yv < 0 || yv >= static_cast<std::int64_t>(ry.size()))
    return -std::numeric_limits<big>::infinity();
  return rx[static_cast<std::size_t>(k)] + ry[static_cast<std::size_t>(yv)];
}

/// Particle i of r against 50 digits: the log-likelihood within tol (absolute, of a log), each weight of the
/// normalized posterior with log w + log_scale within tol of its product's log mass less log L where w is normal (w below the normal range
/// only where the product is more than 700 below the maximum), and no positive mass left off the stored range.
void check_particle(const Result& r, std::size_t i, const Operand& x, const Operand& y, int sign, std::int64_t z,
                    double tol) {
  const auto rx = x.reference(i), ry = y.reference(i);
  using boost::multiprecision::exp;
  using boost::multiprecision::log;
  big top = -std::numeric_limits<big>::infinity();
  for (std::int64_t k = 0; k <= x.n[i]; ++k) top = std::max(top, product_reference(rx, ry, sign, z, k));
  const auto w = r.posterior[i];
  INFO("particle " << i << ": z = " << z << ", sign " << sign << ", nx " << x.n[i] << ", ny " << y.n[i]);
  if (top == -std::numeric_limits<big>::infinity()) {  // impossible
    REQUIRE(r.log_likelihood[i] == neg_inf);
    REQUIRE(r.posterior.log_scale[i] == neg_inf);
    for (double v : w) REQUIRE(v == 0.0);
    return;
  }
  big sum = 0;
  for (std::int64_t k = 0; k <= x.n[i]; ++k) {
    const big l = product_reference(rx, ry, sign, z, k);
    if (l != -std::numeric_limits<big>::infinity()) sum += exp(l - top);
  }
  const big evidence = top + log(sum);
  REQUIRE(std::abs(r.log_likelihood[i] - static_cast<double>(evidence)) <= tol);
  const std::int64_t lo = r.posterior.lo[i];
  const double s = r.posterior.log_scale[i];
  for (std::int64_t k = 0; k <= x.n[i]; ++k) {
    const big l = product_reference(rx, ry, sign, z, k);
    const bool stored = k >= lo && k < lo + static_cast<std::int64_t>(w.size());
    if (!stored) {
      REQUIRE(l == -std::numeric_limits<big>::infinity());
      continue;
    }
    const double v = w[static_cast<std::size_t>(k - lo)];
    INFO("k = " << k << ", w = " << v << ", log_scale " << s << ", reference " << static_cast<double>(l - evidence));
    REQUIRE(v >= 0.0);
    REQUIRE(v <= 1.0);
    if (v >= std::numeric_limits<double>::min())
      REQUIRE(std::abs(std::log(v) + s - static_cast<double>(l - evidence)) <= tol);  // the normalized posterior
    else
      REQUIRE(static_cast<double>(l - top) < -700.0);
  }
}

/// Random operands of every shape: binomials with q at 0, 1, far tails and inside, beta-binomials with a, b from
/// 0.05 to 2e4; n from 0 to `largest`; z on, near and off each diagonal.
struct Draws {
  Operand x, y;
  std::vector<std::int64_t> z;
  Draws(std::size_t p, std::int64_t largest, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    x.family = u(gen) < 0.5 ? ParameterFamily::binomial : ParameterFamily::beta_binomial;
    y.family = u(gen) < 0.5 ? ParameterFamily::binomial : ParameterFamily::beta_binomial;
    for (Operand* o : {&x, &y})
      for (std::size_t i = 0; i < p; ++i) {
        const double c = u(gen);
        o->n.push_back(c < 0.05 ? 0 : c < 0.3 ? std::int64_t(u(gen) * 20) : std::int64_t(u(gen) * double(largest)));
        if (o->family == ParameterFamily::binomial) {
          const double d = u(gen);
          o->a.push_back(d < 0.03 ? 0.0 : d < 0.06 ? 1.0 : d < 0.15 ? std::exp(-30.0 * u(gen)) : u(gen));
          o->b.push_back(1.0);
        } else {
          o->a.push_back(std::exp(std::log(0.05) + u(gen) * std::log(4e5)));
          o->b.push_back(std::exp(std::log(0.05) + u(gen) * std::log(4e5)));
        }
      }
    for (std::size_t i = 0; i < p; ++i) {
      const double c = u(gen);
      const std::int64_t nx = x.n[i], ny = y.n[i];
      // mostly on the diagonal (sum: 0 .. nx + ny; difference: -ny .. nx), sometimes just off it or far off
      z.push_back(c < 0.9 ? std::int64_t(u(gen) * double(nx + ny + 1)) : c < 0.95 ? nx + ny + 1 + std::int64_t(u(gen) * 3)
                                                                                 : -std::int64_t(u(gen) * 1e12) - 1);
    }
  }
};

/// The lgamma formulas' own rounding in both operands' log masses (a few ulps of the largest lgamma each forms),
/// and the walks' 1e-14.
double tolerance(const Operand& x, const Operand& y, std::size_t i) {
  const auto one = [&](const Operand& o) { return 1e-13 + 1e-14 * std::lgamma(double(o.n[i]) + o.a[i] + o.b[i] + 2.0); };
  return one(x) + one(y);
}

}  // namespace

TEST_CASE("condition_on_sum of parameter laws: every entry against 50 digits (CPU)", "[population][parameter_laws]") {
  for (int sign : {1, -1})
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      Draws d(60, 400, seed * 7 + (sign > 0 ? 0 : 100));
      std::vector<std::int64_t> z = d.z;
      if (sign < 0)  // a difference's diagonal is -ny .. nx
        for (std::size_t i = 0; i < z.size(); ++i) z[i] -= d.y.n[i];
      const Result r = condition(d.x, d.y, sign, z, Backend::cpu);
      for (std::size_t i = 0; i < z.size(); ++i)
        check_particle(r, i, d.x, d.y, sign, z[i], tolerance(d.x, d.y, i));
    }
}

TEST_CASE("condition_on_sum of parameter laws: far tails and point masses (CPU)", "[population][parameter_laws]") {
  // a count far in both tails (products near 1e-300 and below), a steep binomial in a sum (Y walked downwards with
  // q tiny), point masses where the diagonal misses them (impossible) and hits them, n = 0
  Operand x{ParameterFamily::binomial, {3000, 3000, 200, 5, 5, 0, 50}, {0.5, 1e-9, 1e-12, 1.0, 1.0, 0.3, 0.0}, {1, 1, 1, 1, 1, 1, 1}};
  Operand y{ParameterFamily::beta_binomial, {3000, 10, 300, 3, 3, 0, 40}, {0.5, 2.0, 3e4, 1.0, 1.0, 1.0, 1.0}, {0.5, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0}};
  const std::vector<std::int64_t> z{5990, 9, 299, 2, 7, 0, 0};
  const Result r = condition(x, y, 1, z, Backend::cpu);
  for (std::size_t i = 0; i < z.size(); ++i) check_particle(r, i, x, y, 1, z[i], tolerance(x, y, i));
  REQUIRE(r.log_likelihood[3] == neg_inf);     // X = 5 and Y <= 3: 2 is out of reach
  REQUIRE(std::isfinite(r.log_likelihood[4]));  // 5 + 2
  REQUIRE(r.log_likelihood[0] < -1000.0);       // both far in their tails
  REQUIRE(r.posterior[0].size() == 11);         // the diagonal 2990 .. 3000, not X's 3001 values
}

TEST_CASE("condition_on_sum of parameter laws agrees with the dense laws' condition_on_sum (CPU)", "[population][parameter_laws]") {
  for (int sign : {1, -1}) {
    Draws d(300, 700, 99 + static_cast<std::uint64_t>(sign + 1));
    std::vector<std::int64_t> z = d.z;
    if (sign < 0)
      for (std::size_t i = 0; i < z.size(); ++i) z[i] -= d.y.n[i];
    const Result r = condition(d.x, d.y, sign, z, Backend::cpu);
    const Placed px(d.x, Backend::cpu), py(d.y, Backend::cpu);
    const gpu::Laws lx = gpu::weights_of(px.laws()), ly0 = gpu::weights_of(py.laws());
    const gpu::Laws ly = sign > 0 ? gpu::weights_of(py.laws()) : gpu::negate(ly0);
    auto ll = Column<double>::host_values(std::vector<double>(z.size(), 0.0));
    const gpu::PmfBatch dense = gpu::condition_on_sum(lx, ly, Column<std::int64_t>::host_values(z), ll).to_host();
    const gpu::PmfBatch &hx = lx.host(), &hy = ly.host();
    // the dense laws flush weights below ~1e-308 of their maximum, and their products lose digits where a weight is
    // far below 1e-200 (98 % seen at an entry 1e-59 below the maximum, X = 129 of Binomial(403, 0.964)): those
    // entries (and a likelihood made of them) are left to the 50-digit check above
    const auto dense_weight = [](const gpu::PmfBatch& b, std::size_t i, std::int64_t v) {
      const std::int64_t k = v - b.lo[i];
      return k >= 0 && k < static_cast<std::int64_t>(b[i].size()) ? b[i][static_cast<std::size_t>(k)] : 0.0;
    };
    for (std::size_t i = 0; i < z.size(); ++i) {
      INFO("particle " << i << ", sign " << sign << ", z = " << z[i] << ": x (" << d.x.n[i] << ", " << d.x.a[i] << ", "
                       << d.x.b[i] << "), y (" << d.y.n[i] << ", " << d.y.a[i] << ", " << d.y.b[i] << ")");
      check_particle(r, i, d.x, d.y, sign, z[i], tolerance(d.x, d.y, i));
      const double want = ll.host()[i], got = r.log_likelihood[i];
      if (got == neg_inf) {
        REQUIRE(want == neg_inf);
        continue;
      }
      if (want == neg_inf) {
        REQUIRE(got < -600.0);
        continue;
      }
      const auto w = r.posterior[i], v = dense[i];
      bool every_entry_normal = true;
      for (std::size_t k = 0; k < v.size(); ++k) {
        const std::int64_t value = dense.lo[i] + static_cast<std::int64_t>(k);
        const std::int64_t at = value - r.posterior.lo[i];
        const double mine = at >= 0 && at < static_cast<std::int64_t>(w.size()) ? w[static_cast<std::size_t>(at)] : 0.0;
        const double theirs = v[k] * std::exp(dense.log_scale[i] - r.posterior.log_scale[i]);
        const double wx = dense_weight(hx, i, value), wy = dense_weight(hy, i, z[i] - value);
        if (mine > 0.0 && (wx < 1e-200 || wy < 1e-200)) {
          every_entry_normal = false;
          continue;
        }
        if (theirs < 1e-250 && mine < 1e-250) continue;
        INFO("k = " << k << ": " << mine << " against " << theirs << ", relative " << (mine - theirs) / theirs);
        // the 50-digit check above is the arbiter; the dense path agrees to 1e-6 (its products of weights far in
        // both tails lose digits: 2e-8 relative seen at X = 273 of Binomial(335, 0.055), Y = 71 of Binomial(71, 0.08))
        REQUIRE(std::abs(mine - theirs) <= 1e-6 * theirs);
      }
      if (every_entry_normal) REQUIRE(std::abs(got - want) <= 1e-6);
    }
  }
}

TEST_CASE("condition_on_sum of parameter laws: errors", "[population][parameter_laws]") {
  Operand x{ParameterFamily::binomial, {5, 5}, {0.3, 0.3}, {1, 1}}, y{ParameterFamily::beta_binomial, {4, 4}, {1, 1}, {2, 2}};
  const std::vector<std::int64_t> z{3, 3};
  REQUIRE_THROWS_AS(condition(x, y, 2, z, Backend::cpu), domain_error);
  Operand bad = y;
  bad.a[1] = -1.0;
  REQUIRE_THROWS_AS(condition(x, bad, 1, z, Backend::cpu), domain_error);
  Operand negative = x;
  negative.n[0] = -3;
  REQUIRE_THROWS_AS(condition(negative, y, 1, z, Backend::cpu), domain_error);
  REQUIRE_THROWS_AS(condition(x, y, 1, {3}, Backend::cpu), shape_error);
}

TEST_CASE("condition_on_sum of parameter laws: the device computes what the host does", "[population][parameter_laws][device]") {
  if (test::skip_without_device()) return;
  for (int sign : {1, -1})
    for (std::uint64_t seed = 11; seed <= 14; ++seed) {
      Draws d(20000, 1200, seed + (sign > 0 ? 0 : 50));
      std::vector<std::int64_t> z = d.z;
      if (sign < 0)
        for (std::size_t i = 0; i < z.size(); ++i) z[i] -= d.y.n[i];
      const Result h = condition(d.x, d.y, sign, z, Backend::cpu), g = condition(d.x, d.y, sign, z, Backend::cuda);
      REQUIRE(g.posterior.offset == h.posterior.offset);
      REQUIRE(g.posterior.lo == h.posterior.lo);
      for (std::size_t i = 0; i < z.size(); ++i) {
        INFO("particle " << i << ", sign " << sign << ", z = " << z[i]);
        const double tol = tolerance(d.x, d.y, i);
        if (h.log_likelihood[i] == neg_inf) {
          REQUIRE(g.log_likelihood[i] == neg_inf);
          REQUIRE(g.posterior.log_scale[i] == neg_inf);
          continue;
        }
        REQUIRE(std::abs(g.log_likelihood[i] - h.log_likelihood[i]) <= tol);
        REQUIRE(std::abs(g.posterior.log_scale[i] - h.posterior.log_scale[i]) <= tol);
        const auto hw = h.posterior[i], gw = g.posterior[i];
        for (std::size_t k = 0; k < hw.size(); ++k) {
          if (hw[k] < 1e-280 && gw[k] < 1e-280) continue;
          INFO("k = " << k << ": host " << hw[k] << ", device " << gw[k]);
          REQUIRE(std::abs(gw[k] - hw[k]) <= 2.0 * tol * hw[k]);
        }
      }
    }
  // a bad parameter is named on the device too
  Operand x{ParameterFamily::binomial, {5, 5}, {0.3, 1.5}, {1, 1}}, y{ParameterFamily::binomial, {4, 4}, {0.5, 0.5}, {1, 1}};
  REQUIRE_THROWS_AS(condition(x, y, 1, {3, 3}, Backend::cuda), domain_error);
}

TEST_CASE("condition_on_sum of parameter laws: with bounds on n the device reads nothing back and writes the same",
          "[population][parameter_laws][device]") {
  if (test::skip_without_device()) return;
  for (int sign : {1, -1}) {
    Draws d(20000, 1200, 31 + (sign > 0 ? 0 : 1));
    std::vector<std::int64_t> z = d.z;
    if (sign < 0)
      for (std::size_t i = 0; i < z.size(); ++i) z[i] -= d.y.n[i];
    const std::int64_t x_max = *std::max_element(d.x.n.begin(), d.x.n.end());
    const std::int64_t y_max = *std::max_element(d.y.n.begin(), d.y.n.end());
    const Result plain = condition(d.x, d.y, sign, z, Backend::cuda);
    // exact bounds, one operand's, and loose ones: the room changes, not one bit of the result
    const std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>> bounds[] = {
        {x_max, y_max}, {x_max, std::nullopt}, {std::nullopt, y_max}, {x_max + 1000, y_max + 7}};
    for (const auto& [bx, by] : bounds) {
      INFO("sign " << sign << ", bounds " << bx.value_or(-1) << ", " << by.value_or(-1));
      const Result g = condition(d.x, d.y, sign, z, Backend::cuda, bx, by);
      REQUIRE(g.posterior.offset == plain.posterior.offset);
      REQUIRE(g.posterior.lo == plain.posterior.lo);
      REQUIRE(g.posterior.log_scale == plain.posterior.log_scale);
      REQUIRE(g.posterior.weights == plain.posterior.weights);
      REQUIRE(g.log_likelihood == plain.log_likelihood);
    }
  }
  // errors: deferred inside DeferChecks, the same message where the host next waits; a diagonal longer than the
  // bound allows is refused, not written past its room
  Operand x{ParameterFamily::binomial, {5, 5}, {0.3, 1.5}, {1, 1}}, y{ParameterFamily::binomial, {4, 4}, {0.5, 0.5}, {1, 1}};
  std::string at_once;
  try {
    (void)condition(x, y, 1, {3, 3}, Backend::cuda);
  } catch (const domain_error& e) {
    at_once = e.what();
  }
  REQUIRE_THAT(at_once, Catch::Contains("particle 1"));
  {
    const gpu::DeferChecks defer;
    const Placed px(x, Backend::cuda), py(y, Backend::cuda);
    auto ll = gpu::filled(0.0, 2, Backend::cuda);
    const auto zd = Column<std::int64_t>::from_host({3, 3}, Backend::cuda);
    const gpu::Laws post = gpu::condition_on_sum(px.laws(5), py.laws(4), 1, zd, ll);  // no throw: nothing waited
    try {
      (void)post.to_host();
      FAIL("the deferred domain error was not raised");
    } catch (const domain_error& e) {
      CHECK(std::string(e.what()) == at_once);
    }
  }
  Operand wide{ParameterFamily::binomial, {50, 50}, {0.3, 0.3}, {1, 1}};
  try {
    (void)condition(wide, wide, 1, {50, 50}, Backend::cuda, 10, std::nullopt);
    FAIL("a diagonal longer than the bound was not refused");
  } catch (const domain_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("particle 0") && Catch::Contains("bound"));
  }
}

}  // namespace test_parameter_conditioning
