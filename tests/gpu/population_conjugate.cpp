// Counts of Beta and Gamma parents on a population: the CPU reference against the runtime's host closed forms (and
// the distributions' log_pdf), an extended-precision lgamma formula, edge cases and errors; Gamma draws against
// gamma_variate and their moments; the device against the host.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/conjugate.hpp"

namespace test_population_conjugate {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using I64 = std::vector<std::int64_t>;
using F64 = std::vector<double>;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// Equal, or both finite and within tol relative (absolute below 1).
bool close(double got, double want, double tol) {
  if (got == want) return true;  // both -inf included
  return std::isfinite(got) && std::isfinite(want) && std::abs(got - want) <= tol * std::max(1.0, std::abs(want));
}

/// log-uniform on [lo, hi].
double log_uniform(std::mt19937_64& gen, double lo, double hi) {
  return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(gen));
}
std::int64_t integer(std::mt19937_64& gen, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen);
}

/// The random parameters of one population: trials, Beta/Gamma parameters, known probabilities and rates, counts
/// (a few negative, a few above n), and the log-likelihoods added to.
struct Inputs {
  I64 n, k;
  F64 a, b, q, lambda, ll;
};

/// k near the law's mean m (spread sd) or anywhere up to kmax, some negative; q and lambda with exact 0s and 1s.
Inputs random_inputs(std::mt19937_64& gen, std::size_t p, std::int64_t nmax, double abmax) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Inputs in;
  for (std::size_t i = 0; i < p; ++i) {
    const std::int64_t n = integer(gen, 0, nmax);
    in.n.push_back(n);
    in.a.push_back(log_uniform(gen, 0.05, abmax));
    in.b.push_back(log_uniform(gen, 0.05, abmax));
    const double c = u(gen);
    in.q.push_back(c < 0.03 ? 0.0 : c < 0.06 ? 1.0 : u(gen));
    in.lambda.push_back(c < 0.04 ? 0.0 : log_uniform(gen, 1e-3, 200.0));
    const double d = u(gen);
    in.k.push_back(d < 0.03 ? -integer(gen, 1, 5) : d < 0.06 ? n + integer(gen, 1, 5) : integer(gen, 0, n));
    in.ll.push_back(u(gen) < 0.05 ? -inf : 10.0 * u(gen) - 5.0);
  }
  return in;
}

Column<double> host(const F64& v) { return Column<double>::from_host(v, Backend::cpu); }
Column<std::int64_t> host(const I64& v) { return Column<std::int64_t>::from_host(v, Backend::cpu); }

/// Every entry of `got` is ll_i + want(i), the added term within tol (ll_i = -inf stays -inf).
void check_added(const Column<double>& got, const F64& ll, const std::function<double(std::size_t)>& want, double tol) {
  const F64 g = got.to_host();
  REQUIRE(g.size() == ll.size());
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double w = want(i);
    const bool ok = ll[i] == -inf ? g[i] == -inf : close(g[i] - ll[i], w, tol);
    if (!ok && ++bad <= 5)
      first << std::setprecision(17) << "particle " << i << ": added " << g[i] - ll[i] << ", want " << w << "\n";
  }
  INFO(first.str());
  CHECK(bad == 0);
}

/// log BetaNegativeBinomial(k; r, a, b) in long double lgamma (an independent formula, 1e-15 relative here).
double bnb_extended(double r, double a, double b, std::int64_t k) {
  if (k < 0) return -inf;
  const long double kd = k, rl = r, al = a, bl = b;
  auto lb = [](long double x, long double y) { return std::lgamma(x) + std::lgamma(y) - std::lgamma(x + y); };
  return static_cast<double>(std::lgamma(rl + kd) - std::lgamma(kd + 1.0L) - std::lgamma(rl) + lb(al + rl, bl + kd) -
                             lb(al, bl));
}

}  // namespace

TEST_CASE("binomial counts of a Beta parent: the runtime's closed forms", "[population][conjugate]") {
  std::mt19937_64 gen(101);
  const std::pair<std::int64_t, double> ranges[] = {{40, 50.0}, {5000, 2000.0}, {1000000, 1e6}};
  for (const auto& [nmax, abmax] : ranges) {
    const Inputs in = random_inputs(gen, 3000, nmax, abmax);
    auto ll = host(in.ll);
    gpu::add_beta_binomial_log_mass(host(in.n), host(in.a), host(in.b), host(in.k), ll);
    check_added(
        ll, in.ll,
        [&](std::size_t i) {
          return runtime::log_marginal_binomial(runtime::Beta(in.a[i], in.b[i]), in.n[i], in.k[i]);
        },
        1e-12);
    auto ll2 = host(in.ll);
    gpu::add_binomial_log_mass(host(in.n), host(in.q), host(in.k), ll2);
    check_added(
        ll2, in.ll, [&](std::size_t i) { return log_pdf(Binomial(in.n[i], in.q[i]), in.k[i]); }, 1e-12);
  }
}

TEST_CASE("negative binomial counts of a Beta parent: the runtime's closed forms", "[population][conjugate]") {
  std::mt19937_64 gen(202);
  for (const double r : {0.3, 1.0, 4.0, 17.5}) {
    const std::pair<std::int64_t, double> ranges[] = {{60, 50.0}, {2000, 500.0}};
    for (const auto& [kmax, abmax] : ranges) {
      Inputs in = random_inputs(gen, 3000, kmax, abmax);
      for (double& q : in.q) q = q == 0.0 ? 1.0 : q;  // NegativeBinomial(r, 0) is no distribution (edge case below)
      auto ll = host(in.ll);
      gpu::add_negative_binomial_log_mass(r, host(in.q), host(in.k), ll);
      check_added(
          ll, in.ll, [&](std::size_t i) { return log_pdf(NegativeBinomial(r, in.q[i]), in.k[i]); }, 1e-12);
      auto ll2 = host(in.ll);
      gpu::add_beta_negative_binomial_log_mass(r, host(in.a), host(in.b), host(in.k), ll2);
      // the runtime's closed form takes double lgamma differences, which lose about eps k log k (here up to 1e-12):
      // 1e-11 against it, 1e-13 against the same formula in long double
      check_added(
          ll2, in.ll,
          [&](std::size_t i) {
            return runtime::log_marginal_negative_binomial(runtime::Beta(in.a[i], in.b[i]), r, in.k[i]);
          },
          1e-11);
      check_added(
          ll2, in.ll, [&](std::size_t i) { return bnb_extended(r, in.a[i], in.b[i], in.k[i]); }, 1e-13);
    }
  }
  SECTION("large counts and posteriors (where double lgamma differences lose digits)") {
    std::vector<std::int64_t> k;
    F64 a, b, zero;
    for (int i = 0; i < 2000; ++i) {
      a.push_back(log_uniform(gen, 0.5, 5e3));
      b.push_back(log_uniform(gen, 10.0, 1e6));
      k.push_back(integer(gen, 0, 1000000));
      zero.push_back(0.0);
    }
    auto ll = host(zero);
    gpu::add_beta_negative_binomial_log_mass(2.5, host(a), host(b), host(k), ll);
    check_added(
        ll, zero, [&](std::size_t i) { return bnb_extended(2.5, a[i], b[i], k[i]); }, 1e-12);
  }
}

TEST_CASE("Poisson counts of a Gamma parent: the runtime's closed forms", "[population][conjugate]") {
  std::mt19937_64 gen(303);
  for (const double s : {1.0, 0.3, 2.5, 40.0}) {
    Inputs in = random_inputs(gen, 3000, 3000, 50.0);
    auto ll = host(in.ll);
    gpu::add_poisson_log_mass(s, host(in.lambda), host(in.k), ll);
    check_added(
        ll, in.ll, [&](std::size_t i) { return log_pdf(Poisson(s * in.lambda[i]), in.k[i]); }, 1e-12);
    for (std::size_t i = 0; i < in.b.size(); ++i) in.b[i] = log_uniform(gen, 0.02, 20.0) * s;  // p = b/(b+s) moderate
    auto ll2 = host(in.ll);
    gpu::add_gamma_poisson_log_mass(s, host(in.a), host(in.b), host(in.k), ll2);
    check_added(
        ll2, in.ll,
        [&](std::size_t i) {
          // conjugate_state.cpp: Poisson(s lambda) with lambda ~ Gamma(a, b) is the count of Gamma(a, b / s)
          return runtime::log_marginal_poisson(runtime::Gamma(in.a[i], in.b[i] / s), in.k[i]);
        },
        1e-12);
  }
}

TEST_CASE("conjugate log masses: edge cases", "[population][conjugate]") {
  const I64 k{-3, -1, 0, 1, 2, 5, 6, 100};
  const std::size_t m = k.size();
  const F64 zero(m, 0.0), ones(m, 1.0), zeros(m, 0.0);
  const I64 n(m, 5);
  auto run = [&](auto f) {
    auto ll = host(zero);
    f(ll);
    return ll.to_host();
  };
  SECTION("counts off the support: -inf") {
    const F64 bb = run([&](Column<double>& ll) {
      gpu::add_beta_binomial_log_mass(host(n), host(F64(m, 2.0)), host(F64(m, 3.0)), host(k), ll);
    });
    const F64 bi =
        run([&](Column<double>& ll) { gpu::add_binomial_log_mass(host(n), host(F64(m, 0.4)), host(k), ll); });
    const F64 nb =
        run([&](Column<double>& ll) { gpu::add_negative_binomial_log_mass(2.0, host(F64(m, 0.4)), host(k), ll); });
    const F64 bnb = run([&](Column<double>& ll) {
      gpu::add_beta_negative_binomial_log_mass(2.0, host(F64(m, 2.0)), host(F64(m, 3.0)), host(k), ll);
    });
    const F64 po = run([&](Column<double>& ll) { gpu::add_poisson_log_mass(1.5, host(F64(m, 2.0)), host(k), ll); });
    const F64 gp = run([&](Column<double>& ll) {
      gpu::add_gamma_poisson_log_mass(1.5, host(F64(m, 2.0)), host(F64(m, 3.0)), host(k), ll);
    });
    for (std::size_t i = 0; i < m; ++i) {
      const bool in_n = k[i] >= 0 && k[i] <= 5, counted = k[i] >= 0;
      CHECK((bb[i] == -inf) == !in_n);
      CHECK((bi[i] == -inf) == !in_n);
      CHECK((nb[i] == -inf) == !counted);
      CHECK((bnb[i] == -inf) == !counted);
      CHECK((po[i] == -inf) == !counted);
      CHECK((gp[i] == -inf) == !counted);
    }
  }
  SECTION("point masses: q = 0, q = 1, lambda = 0, s = 0, n = 0") {
    const F64 q0 = run([&](Column<double>& ll) { gpu::add_binomial_log_mass(host(n), host(zeros), host(k), ll); });
    const F64 q1 = run([&](Column<double>& ll) { gpu::add_binomial_log_mass(host(n), host(ones), host(k), ll); });
    const F64 n0 =
        run([&](Column<double>& ll) { gpu::add_binomial_log_mass(host(I64(m, 0)), host(F64(m, 0.3)), host(k), ll); });
    const F64 bb0 = run([&](Column<double>& ll) {
      gpu::add_beta_binomial_log_mass(host(I64(m, 0)), host(ones), host(ones), host(k), ll);
    });
    const F64 nb1 = run([&](Column<double>& ll) { gpu::add_negative_binomial_log_mass(3.0, host(ones), host(k), ll); });
    const F64 nb0 =
        run([&](Column<double>& ll) { gpu::add_negative_binomial_log_mass(3.0, host(zeros), host(k), ll); });
    const F64 l0 = run([&](Column<double>& ll) { gpu::add_poisson_log_mass(2.0, host(zeros), host(k), ll); });
    const F64 s0 = run([&](Column<double>& ll) { gpu::add_poisson_log_mass(0.0, host(ones), host(k), ll); });
    for (std::size_t i = 0; i < m; ++i) {
      CHECK(q0[i] == (k[i] == 0 ? 0.0 : -inf));
      CHECK(q1[i] == (k[i] == 5 ? 0.0 : -inf));
      CHECK(n0[i] == (k[i] == 0 ? 0.0 : -inf));
      CHECK(bb0[i] == (k[i] == 0 ? 0.0 : -inf));
      CHECK(nb1[i] == (k[i] == 0 ? 0.0 : -inf));
      CHECK(nb0[i] == -inf);  // no success ever: no count is possible
      CHECK(l0[i] == (k[i] == 0 ? 0.0 : -inf));
      CHECK(s0[i] == (k[i] == 0 ? 0.0 : -inf));
    }
  }
  SECTION("the laws sum to 1") {
    auto total = [](std::int64_t kmax, const std::function<void(const Column<std::int64_t>&, Column<double>&)>& add) {
      I64 j(std::size_t(kmax) + 1);
      std::iota(j.begin(), j.end(), std::int64_t{0});
      auto ll = host(F64(j.size(), 0.0));
      add(host(j), ll);
      long double sum = 0;
      for (double l : ll.host()) sum += std::exp(static_cast<long double>(l));
      return static_cast<double>(sum);
    };
    auto c = [](std::size_t size, double v) { return host(F64(size, v)); };
    CHECK(total(30, [&](const auto& j, auto& ll) {
            gpu::add_beta_binomial_log_mass(host(I64(31, 30)), c(31, 0.7), c(31, 2.5), j, ll);
          }) == Approx(1.0).epsilon(1e-13));
    CHECK(total(20000, [&](const auto& j, auto& ll) {
            gpu::add_beta_negative_binomial_log_mass(3.0, c(20001, 8.0), c(20001, 2.5), j, ll);
          }) == Approx(1.0).epsilon(1e-12));
    CHECK(total(400, [&](const auto& j, auto& ll) {
            gpu::add_gamma_poisson_log_mass(0.5, c(401, 3.0), c(401, 2.0), j, ll);
          }) == Approx(1.0).epsilon(1e-13));
    CHECK(total(400, [&](const auto& j, auto& ll) { gpu::add_negative_binomial_log_mass(1.5, c(401, 0.2), j, ll); }) ==
          Approx(1.0).epsilon(1e-13));
  }
}

TEST_CASE("conjugate operations: errors", "[population][conjugate]") {
  const auto c2 = host(F64{1.0, 2.0}), c3 = host(F64{1.0, 2.0, 3.0});
  const auto k2 = host(I64{1, 2}), k3 = host(I64{1, 2, 3}), n3 = host(I64{4, 4, 4});
  auto ll3 = host(F64(3, 0.0));
  auto ll2 = host(F64(2, 0.0));
  SECTION("shapes") {
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(n3, c3, c2, k3, ll3), shape_error);
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(n3, c3, c3, k2, ll3), shape_error);
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(n3, c3, c3, k3, ll2), shape_error);
    CHECK_THROWS_AS(gpu::add_binomial_log_mass(n3, c2, k3, ll3), shape_error);
    CHECK_THROWS_AS(gpu::add_negative_binomial_log_mass(2.0, c3, k2, ll3), shape_error);
    CHECK_THROWS_AS(gpu::add_beta_negative_binomial_log_mass(2.0, c3, c2, k3, ll3), shape_error);
    CHECK_THROWS_AS(gpu::add_poisson_log_mass(1.0, c3, k3, ll2), shape_error);
    CHECK_THROWS_AS(gpu::add_gamma_poisson_log_mass(1.0, c2, c3, k3, ll3), shape_error);
    auto a = host(F64{1.0, 2.0, 3.0}), b = host(F64{1.0, 2.0});
    CHECK_THROWS_AS(gpu::negative_binomial_update(a, b, 2.0, k3), shape_error);
    CHECK_THROWS_AS(gpu::gamma_poisson_update(a, ll3, 2.0, k2), shape_error);
    CHECK_THROWS_AS(gpu::sample_gamma(c2, c3, 1, 0), shape_error);
  }
  SECTION("parameters") {
    const auto bad_ab = host(F64{1.0, 0.0, 2.0}), nan_ab = host(F64{1.0, std::nan(""), 2.0});
    const auto bad_q = host(F64{0.5, 1.5, 0.5});
    const auto bad_n = host(I64{4, -1, 4});
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(n3, bad_ab, c3, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(n3, c3, nan_ab, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_beta_binomial_log_mass(bad_n, c3, c3, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_binomial_log_mass(n3, bad_q, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_binomial_log_mass(bad_n, host(F64(3, 0.5)), k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_negative_binomial_log_mass(2.0, bad_q, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_negative_binomial_log_mass(0.0, host(F64(3, 0.5)), k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_beta_negative_binomial_log_mass(-1.0, c3, c3, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_beta_negative_binomial_log_mass(2.0, c3, bad_ab, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_poisson_log_mass(1.0, host(F64{1.0, -1.0, 1.0}), k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_poisson_log_mass(-1.0, c3, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_gamma_poisson_log_mass(0.0, c3, c3, k3, ll3), domain_error);
    CHECK_THROWS_AS(gpu::add_gamma_poisson_log_mass(1.0, nan_ab, c3, k3, ll3), domain_error);
    auto a = host(F64(3, 1.0)), b = host(F64(3, 1.0));
    CHECK_THROWS_AS(gpu::negative_binomial_update(a, b, 0.0, k3), domain_error);
    CHECK_THROWS_AS(gpu::gamma_poisson_update(a, b, inf, k3), domain_error);
    CHECK_THROWS_AS(gpu::sample_gamma(bad_ab, c3, 1, 0), domain_error);
    CHECK_THROWS_AS(gpu::sample_gamma(c3, nan_ab, 1, 0), domain_error);
  }
}

TEST_CASE("conjugate updates: the runtime's posteriors", "[population][conjugate]") {
  std::mt19937_64 gen(404);
  const Inputs in = random_inputs(gen, 1000, 500, 50.0);
  const double r = 2.5, s = 0.7;
  auto a = host(in.a), b = host(in.b);
  gpu::negative_binomial_update(a, b, r, host(in.k));
  auto ga = host(in.a), gb = host(in.b);
  gpu::gamma_poisson_update(ga, gb, s, host(in.k));
  for (std::size_t i = 0; i < in.k.size(); ++i) {
    if (in.k[i] < 0) {  // an impossible count: nothing changes
      CHECK((a.host()[i] == in.a[i] && b.host()[i] == in.b[i] && ga.host()[i] == in.a[i] && gb.host()[i] == in.b[i]));
      continue;
    }
    const runtime::Beta nb = runtime::posterior_negative_binomial(runtime::Beta(in.a[i], in.b[i]), r, in.k[i]);
    CHECK((a.host()[i] == nb.alpha && b.host()[i] == nb.beta));
    // conjugate_state.cpp: Gamma(a + k, b + s) (posterior_poisson of the rate s lambda, scaled back)
    CHECK((ga.host()[i] == in.a[i] + static_cast<double>(in.k[i]) && gb.host()[i] == in.b[i] + s));
  }
}

TEST_CASE("Gamma draws: gamma_variate's, and their moments", "[population][conjugate]") {
  std::mt19937_64 gen(505);
  F64 a, b;
  for (int i = 0; i < 2000; ++i) {
    a.push_back(log_uniform(gen, 0.05, 200.0));
    b.push_back(log_uniform(gen, 0.01, 100.0));
  }
  const auto x = gpu::sample_gamma(host(a), host(b), 77, 5);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(x.host()[i] == gpu::gamma_variate(a[i], 77, i, 5) / b[i]);
  const auto y = gpu::sample_gamma(host(a), host(b), 77, 6);
  CHECK(y.host() != x.host());  // another counter: other draws

  const std::pair<double, double> laws[] = {{0.3, 2.0}, {2.5, 0.5}, {40.0, 10.0}};
  for (const auto& [shape, rate] : laws) {
    CAPTURE(shape, rate);
    const std::size_t p = 200000;
    const auto d = gpu::sample_gamma(host(F64(p, shape)), host(F64(p, rate)), 2024, 3).to_host();
    double mean = 0, m2 = 0;
    for (double v : d) mean += v;
    mean /= double(p);
    for (double v : d) m2 += (v - mean) * (v - mean);
    const double var = m2 / double(p - 1);
    const double mu = shape / rate, sigma2 = shape / (rate * rate);
    // standard errors: sigma / sqrt(P) for the mean, sigma^2 sqrt((2 + 6 / shape) / P) for the variance
    CHECK(std::abs(mean - mu) < 5.0 * std::sqrt(sigma2 / double(p)));
    CHECK(std::abs(var - sigma2) < 5.0 * sigma2 * std::sqrt((2.0 + 6.0 / shape) / double(p)));
  }
}

TEST_CASE("conjugate operations: the device against the host", "[population][conjugate][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(606);
  Inputs in = random_inputs(gen, 20000, 3000, 500.0);
  in.a[3] = -1.0;  // bad parameters: NaN on the device (the host throws)
  auto dev = [](const auto& v) { return std::decay_t<decltype(host(v))>::from_host(v, Backend::cuda); };
  Inputs ok = in;
  ok.a[3] = 1.0;
  auto both = [&](auto f, const char* what) {
    auto lh = host(ok.ll);
    f(ok, lh, [](const auto& v) { return host(v); });
    auto ld = dev(in.ll);
    f(in, ld, dev);
    const F64 h = lh.host(), d = ld.to_host();
    std::size_t bad = 0;
    std::ostringstream first;
    for (std::size_t i = 0; i < h.size(); ++i)
      if (i != 3 && !close(d[i], h[i], 1e-12) && ++bad <= 5)
        first << what << " particle " << i << ": device " << d[i] << ", host " << h[i] << "\n";
    INFO(first.str());
    CHECK(bad == 0);
    return d;
  };
  const F64 bb = both([](const Inputs& x, auto& ll,
                         auto put) { gpu::add_beta_binomial_log_mass(put(x.n), put(x.a), put(x.b), put(x.k), ll); },
                      "beta-binomial");
  CHECK(std::isnan(bb[3]));
  both([](const Inputs& x, auto& ll, auto put) { gpu::add_binomial_log_mass(put(x.n), put(x.q), put(x.k), ll); },
       "binomial");
  both([](const Inputs& x, auto& ll, auto put) { gpu::add_negative_binomial_log_mass(3.5, put(x.q), put(x.k), ll); },
       "negative binomial");
  const F64 bnb =
      both([](const Inputs& x, auto& ll,
              auto put) { gpu::add_beta_negative_binomial_log_mass(0.8, put(x.a), put(x.b), put(x.k), ll); },
           "beta-negative-binomial");
  CHECK(std::isnan(bnb[3]));
  both([](const Inputs& x, auto& ll, auto put) { gpu::add_poisson_log_mass(1.7, put(x.lambda), put(x.k), ll); },
       "Poisson");
  const F64 gp = both([](const Inputs& x, auto& ll,
                         auto put) { gpu::add_gamma_poisson_log_mass(0.6, put(x.a), put(x.b), put(x.k), ll); },
                      "gamma-Poisson");
  CHECK(std::isnan(gp[3]));

  // updates: exact (the same additions)
  auto ha = host(ok.a), hb = host(ok.b), da = dev(ok.a), db = dev(ok.b);
  gpu::negative_binomial_update(ha, hb, 2.5, host(ok.k));
  gpu::negative_binomial_update(da, db, 2.5, dev(ok.k));
  gpu::gamma_poisson_update(ha, hb, 0.3, host(ok.k));
  gpu::gamma_poisson_update(da, db, 0.3, dev(ok.k));
  CHECK(da.to_host() == ha.host());
  CHECK(db.to_host() == hb.host());

  // draws: the same uniforms, equal but for the last bits of the device's log, cos and pow
  const F64 hx = gpu::sample_gamma(host(ok.a), host(ok.b), 99, 4).host();
  const F64 dx = gpu::sample_gamma(dev(in.a), dev(in.b), 99, 4).to_host();
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < hx.size(); ++i)
    if (i != 3 && !(std::abs(dx[i] - hx[i]) <= 1e-12 * std::abs(hx[i])) && ++bad <= 5)
      first << "draw " << i << ": device " << dx[i] << ", host " << hx[i] << "\n";
  INFO(first.str());
  CHECK(bad == 0);
  CHECK(std::isnan(dx[3]));
}

TEST_CASE("observations in one pass: the log-likelihood written and added to the log-weights, as in three steps",
          "[population][conjugate]") {
  std::vector<Backend> places{Backend::cpu};
  if (gpu::cuda_available()) places.push_back(Backend::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  std::mt19937_64 gen(20261126);
  const Inputs in = random_inputs(gen, 30000, 2000, 10.0);  // k off 0 .. n in about 6 % of the particles
  I64 v = in.n;  // observe_equal: equal in about half the particles
  for (std::size_t i = 0; i < v.size(); ++i)
    if (gen() % 2 == 0) v[i] += 1 + static_cast<std::int64_t>(gen() % 3);
  // the three steps on the host: zeros, the term added, the sum added to the weights
  F64 want_bin(in.n.size(), 0.0), want_eq(in.n.size(), 0.0);
  auto ll = host(want_bin);
  gpu::add_binomial_log_mass(host(in.n), 0.37, host(in.k), ll);
  want_bin = ll.host();
  ll = host(want_eq);
  gpu::add_log_equal(host(in.n), host(v), ll);
  want_eq = ll.host();
  for (const Backend where : places) {
    INFO((where == Backend::cpu ? "host" : "device"));
    const auto put = [&](const auto& x) { return std::decay_t<decltype(host(x))>::from_host(x, where); };
    auto w = put(in.ll);
    auto out = put(F64(in.n.size(), 12345.0));  // written, not added to
    gpu::observe_binomial(put(in.n), 0.37, put(in.k), out, w);
    const F64 got = out.to_host(), weights = w.to_host();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double tol = where == Backend::cpu ? 0.0 : 1e-12;  // the device's log and exp: a few ulps
      if (!close(got[i], want_bin[i], tol) || !close(weights[i], in.ll[i] + got[i], 0.0)) ++bad;
    }
    CHECK(bad == 0);
    w = put(in.ll);
    gpu::observe_equal(put(in.n), put(v), out, w);
    CHECK(out.to_host() == want_eq);
    const F64 eq_weights = w.to_host();
    for (std::size_t i = 0; i < eq_weights.size(); ++i) REQUIRE(eq_weights[i] == in.ll[i] + want_eq[i]);
  }
  // errors as add_binomial_log_mass's, before anything is written
  auto w = host(in.ll), out = host(F64(in.n.size(), 1.0));
  CHECK_THROWS_AS(gpu::observe_binomial(host(in.n), 1.5, host(in.k), out, w), domain_error);
  CHECK_THROWS_AS(gpu::observe_binomial(host(in.n), 0.5, host(I64(3, 1)), out, w), shape_error);
  CHECK(w.host() == in.ll);
}

}  // namespace test_population_conjugate
