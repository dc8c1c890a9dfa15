// binomial_laws and beta_binomial_laws (laws written in chunks: an lgamma anchor, then exact ratios): the CPU
// reference against 50-digit log masses, every shape (unimodal, U-shaped, monotone, point masses, far tails), chunk
// boundaries inside and across laws; the device against the host, law for law.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "parameter_reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_parameter_laws {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using test::beta_binomial_reference;
using test::big;
using test::binomial_reference;

namespace {

/// Law i of `laws` against the reference log masses: log w + log_scale within tol of them where w is a normal
/// double, w = 0 or subnormal only where the reference is below the normal range, max w in [1 - 2 tol, 1] (the
/// anchor of the mode's chunk and the maximum are lgamma formulas of their own).
void check_law(const gpu::PmfBatch& laws, std::size_t i, const std::vector<big>& ref, double tol) {
  const auto w = laws[i];
  REQUIRE(w.size() == ref.size());
  REQUIRE(laws.lo[i] == 0);
  const double s = laws.log_scale[i];
  double top = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    INFO("k = " << k << " of " << w.size() << ", w = " << w[k] << ", log_scale " << s << ", reference "
                << static_cast<double>(ref[k]));
    top = std::max(top, w[k]);
    REQUIRE(w[k] >= 0.0);
    REQUIRE(w[k] <= 1.0);
    const double want = static_cast<double>(ref[k]) - s;  // log of the weight
    if (w[k] >= std::numeric_limits<double>::min())
      REQUIRE(std::abs(std::log(w[k]) - want) <= tol);
    else
      REQUIRE(want < -700.0);
  }
  REQUIRE(top >= 1.0 - 2.0 * tol);
}

/// The lgamma formula's own rounding: a few ulps of the largest lgamma it forms, and the walks' 1e-14.
double tolerance(std::int64_t n, double a, double b) {
  return 1e-13 + 1e-14 * std::lgamma(static_cast<double>(n) + a + b + 2.0);
}

/// P particles' parameters on the host: n_i = draw_n(u), a_i and b_i log-uniform on [0.05, 1000], q_i = draw_q(u),
/// u() a uniform on [0, 1) from the seed.
struct Parameters {
  std::vector<std::int64_t> n;
  std::vector<double> a, b, q;
};
template <class N, class Q>
Parameters random_parameters(std::size_t p, std::uint64_t seed, N draw_n, Q draw_q) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto u = [&] { return uniform(gen); };
  Parameters out;
  for (std::size_t i = 0; i < p; ++i) {
    out.n.push_back(draw_n(u));
    out.a.push_back(std::exp(std::log(0.05) + u() * std::log(2e4)));
    out.b.push_back(std::exp(std::log(0.05) + u() * std::log(2e4)));
    out.q.push_back(draw_q(u));
  }
  return out;
}

}  // namespace

TEST_CASE("beta_binomial_laws: every shape against 50 digits, chunks across laws (CPU)", "[population][parameter_laws]") {
  // a + b > 2 (unimodal, modes at either end too), a + b < 2 (U-shaped), a + b = 2 (monotone or flat), far tails
  const std::vector<std::pair<double, double>> ab{{2, 2},    {2.5, 7.25}, {30, 1.5}, {0.05, 0.3}, {0.5, 0.5},
                                                  {1, 1},    {0.5, 1.5},  {1e3, 2},  {1, 200},    {3e4, 5e4},
                                                  {1.2, 0.9}};
  const std::vector<std::int64_t> ns{0, 1, 2, 15, 16, 17, 31, 100, 761, 3000};
  std::vector<std::int64_t> n;
  std::vector<double> a, b;
  for (const auto& [ai, bi] : ab)
    for (std::int64_t ni : ns) n.push_back(ni), a.push_back(ai), b.push_back(bi);
  const auto laws = gpu::beta_binomial_laws(Column<std::int64_t>::host_values(n), Column<double>::host_values(a),
                                            Column<double>::host_values(b));
  const gpu::PmfBatch& h = laws.host();
  REQUIRE(h.size() == n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    INFO("BetaBinomial(" << n[i] << ", " << a[i] << ", " << b[i] << ")");
    check_law(h, i, beta_binomial_reference(n[i], a[i], b[i]), tolerance(n[i], a[i], b[i]));
  }
}

TEST_CASE("parameter laws do not depend on where they lie in the batch", "[population][parameter_laws]") {
  // the same parameters after laws of every length: the same weights, bit for bit
  std::vector<std::int64_t> n;
  std::vector<double> a, b, q;
  for (std::int64_t lead = 0; lead < 40; ++lead) n.push_back(lead), a.push_back(2.5), b.push_back(0.7), q.push_back(0.3);
  for (int copy = 0; copy < 40; ++copy) {
    n.push_back(181), a.push_back(564.582), b.push_back(0.24051), q.push_back(0.446019);
    n.push_back(copy), a.push_back(1.5), b.push_back(3.0), q.push_back(0.9);
  }
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  for (const Backend where : places)
  for (const auto& laws : {gpu::beta_binomial_laws(Column<std::int64_t>::from_host(n, where), Column<double>::from_host(a, where),
                                                   Column<double>::from_host(b, where)),
                           gpu::binomial_laws(Column<std::int64_t>::from_host(n, where), Column<double>::from_host(q, where))}) {
    const gpu::PmfBatch h = laws.to_host();
    for (std::size_t i = 42; i < n.size(); i += 2) {
      INFO("law " << i);
      REQUIRE(h.log_scale[i] == h.log_scale[40]);
      const auto w = h[i], w0 = h[40];
      REQUIRE(std::equal(w.begin(), w.end(), w0.begin(), w0.end()));
    }
  }
}

TEST_CASE("binomial_laws: every q against 50 digits, point masses and far tails (CPU)", "[population][parameter_laws]") {
  const std::vector<double> qs{0.0, 1.0, 1e-12, 1e-3, 0.01, 0.3, 0.5, 0.97, 1.0 - 1e-9};
  const std::vector<std::int64_t> ns{0, 1, 2, 15, 16, 17, 100, 761, 3000};
  std::vector<std::int64_t> n;
  std::vector<double> q;
  for (double qi : qs)
    for (std::int64_t ni : ns) n.push_back(ni), q.push_back(qi);
  const auto laws = gpu::binomial_laws(Column<std::int64_t>::host_values(n), Column<double>::host_values(q));
  const gpu::PmfBatch& h = laws.host();
  for (std::size_t i = 0; i < n.size(); ++i) {
    INFO("Binomial(" << n[i] << ", " << q[i] << ")");
    check_law(h, i, binomial_reference(n[i], q[i]), tolerance(n[i], 1.0, 1.0));
  }
}

TEST_CASE("binomial_laws and beta_binomial_laws: the device writes what the host writes", "[population][parameter_laws][device]") {
  if (test::skip_without_device()) return;
  const std::size_t p = 20000;
  const Parameters r = random_parameters(
      p, 20261125,
      [](auto& u) {
        const double c = u();
        return c < 0.1 ? 0 : c < 0.3 ? std::int64_t(u() * 20) : c < 0.95 ? std::int64_t(u() * 800) : std::int64_t(u() * 5000);
      },
      [](auto& u) {
        const double d = u();
        return d < 0.03 ? 0.0 : d < 0.06 ? 1.0 : d < 0.1 ? std::exp(-30.0 * u()) : u();
      });
  const std::vector<std::int64_t>& n = r.n;
  const std::vector<double> &a = r.a, &b = r.b, &q = r.q;
  // the host's and the device's lgamma differ by a few ulps: log_scale within tol, weights within 2 tol relative
  const auto compare = [&](const gpu::Laws& host, const gpu::Laws& device, const std::function<double(std::size_t)>& tol) {
    const gpu::PmfBatch& h = host.host();
    const gpu::PmfBatch d = device.to_host();
    REQUIRE(d.offset == h.offset);
    REQUIRE(d.lo == h.lo);
    REQUIRE(device.max_length() == host.max_length());
    for (std::size_t i = 0; i < p; ++i) {
      INFO("particle " << i << ": n = " << n[i] << ", a = " << a[i] << ", b = " << b[i] << ", q = " << q[i]);
      const double t = tol(i);
      REQUIRE(std::abs(d.log_scale[i] - h.log_scale[i]) <= t);
      const auto hw = h[i], dw = d[i];
      std::size_t k = 0;  // the first weight out of tolerance (none: the law's length)
      while (k < hw.size() && ((hw[k] < 1e-280 && dw[k] < 1e-280) || std::abs(dw[k] - hw[k]) <= 2.0 * t * hw[k])) ++k;
      INFO("k = " << k << ": host " << (k < hw.size() ? hw[k] : 0.0) << ", device " << (k < dw.size() ? dw[k] : 0.0));
      REQUIRE(k == hw.size());
    }
  };
  const auto nd = Column<std::int64_t>::from_host(n, Backend::cuda);
  compare(gpu::beta_binomial_laws(Column<std::int64_t>::host_values(n), Column<double>::host_values(a),
                                  Column<double>::host_values(b)),
          gpu::beta_binomial_laws(nd, Column<double>::from_host(a, Backend::cuda), Column<double>::from_host(b, Backend::cuda)),
          [&](std::size_t i) { return tolerance(n[i], a[i], b[i]); });
  compare(gpu::binomial_laws(Column<std::int64_t>::host_values(n), Column<double>::host_values(q)),
          gpu::binomial_laws(nd, Column<double>::from_host(q, Backend::cuda)),
          [&](std::size_t i) { return tolerance(n[i], 1.0, 1.0); });
  // errors name the particle, as before
  std::vector<double> bad = a;
  bad[777] = -1.0;
  REQUIRE_THROWS_AS(gpu::beta_binomial_laws(nd, Column<double>::from_host(bad, Backend::cuda),
                                            Column<double>::from_host(b, Backend::cuda)),
                    domain_error);
}

TEST_CASE("binomial_laws and beta_binomial_laws with a bound on n: room from the bound, the same laws, errors deferred",
          "[population][parameter_laws][device]") {
  if (test::skip_without_device()) return;
  const std::size_t p = 30000;
  const Parameters r = random_parameters(
      p, 20261126, [](auto& u) { return u() < 0.1 ? 0 : std::int64_t(u() * 700); }, [](auto& u) { return u(); });
  const std::vector<std::int64_t>& n = r.n;
  const std::vector<double> &a = r.a, &b = r.b, &q = r.q;
  const std::int64_t largest = *std::max_element(n.begin(), n.end());
  const auto nd = Column<std::int64_t>::from_host(n, Backend::cuda);
  const auto ad = Column<double>::from_host(a, Backend::cuda), bd = Column<double>::from_host(b, Backend::cuda);
  const auto qd = Column<double>::from_host(q, Backend::cuda);
  const auto same = [&](const gpu::Laws& plain, const gpu::Laws& bounded, std::int64_t bound) {
    const gpu::PmfBatch x = plain.to_host(), y = bounded.to_host();
    REQUIRE(bounded.total() == p * static_cast<std::size_t>(bound + 1));  // the room the bound gives
    REQUIRE(bounded.max_length() == static_cast<std::size_t>(bound + 1));
    REQUIRE(y.offset == x.offset);
    REQUIRE(y.lo == x.lo);
    REQUIRE(y.log_scale == x.log_scale);
    REQUIRE(y.weights == x.weights);
  };
  for (std::int64_t bound : {largest, largest + 333}) {
    INFO("bound " << bound << " (largest n " << largest << ")");
    same(gpu::binomial_laws(nd, qd), gpu::binomial_laws(nd, qd, bound), bound);
    same(gpu::beta_binomial_laws(nd, ad, bd), gpu::beta_binomial_laws(nd, ad, bd, bound), bound);
  }
  // a bad parameter: inside DeferChecks no wait and no throw at the call; the message it has at once comes with the
  // next copy back
  std::vector<double> bad = a;
  bad[777] = -1.0;
  const auto bad_d = Column<double>::from_host(bad, Backend::cuda);
  std::string at_once;
  try {
    (void)gpu::beta_binomial_laws(nd, bad_d, bd);
  } catch (const domain_error& e) {
    at_once = e.what();
  }
  REQUIRE_THAT(at_once, Catch::Contains("particle 777"));
  {
    const gpu::DeferChecks defer;
    const gpu::Laws laws = gpu::beta_binomial_laws(nd, bad_d, bd, largest);
    try {
      (void)laws.to_host();
      FAIL("the deferred domain error was not raised");
    } catch (const domain_error& e) {
      CHECK(std::string(e.what()) == at_once);
    }
  }
  // an n above the caller's bound is refused (at once outside DeferChecks), not written past the room
  std::vector<std::int64_t> over = n;
  over[4321] = largest + 10;
  try {
    (void)gpu::binomial_laws(Column<std::int64_t>::from_host(over, Backend::cuda), qd, largest);
    FAIL("an n above the bound was not refused");
  } catch (const domain_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("particle 4321") && Catch::Contains("above the bound"));
  }
}

}  // namespace test_parameter_laws
