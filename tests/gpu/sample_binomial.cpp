// Direct Binomial(n, q) draws without a table: goodness of fit against the exact law, the mode's mass against 50-digit
// references, the edge cases, errors, and the device against the host (the same draws).
#include <catch2/catch.hpp>
#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/special_functions/gamma.hpp>
#include <boost/multiprecision/cpp_bin_float.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/src/laws/conjugate_math.hpp"
#include "gpu/statistics.hpp"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_sample_binomial {

using namespace tally;
using gpu::Backend;
using gpu::Column;

TEST_CASE("binomial_log_mass (the draws' mode mass) against 50-digit references", "[gpu][sample_binomial]") {
  using big = boost::multiprecision::cpp_bin_float_50;
  for (const std::int64_t n : {1LL, 2LL, 7LL, 15LL, 16LL, 17LL, 50LL, 763LL, 10000LL, 1000000LL, 1000000000LL})
    for (const double q : {1e-9, 0.01, 0.3, 0.5, 0.8, 0.999}) {
      const double mean = static_cast<double>(n) * q, sd = std::sqrt(mean * (1 - q));
      const double nd = static_cast<double>(n);
      for (const double at : {0.0, 1.0, mean - 3 * sd, mean - 1, mean, mean + 1, mean + 3 * sd, nd - 1, nd}) {
        const auto k = static_cast<std::int64_t>(std::clamp(std::floor(at), 0.0, nd));
        const big nb = n, kb = k, qb = q;
        const big log_p = boost::math::lgamma(nb + 1) - boost::math::lgamma(kb + 1) - boost::math::lgamma(nb - kb + 1) +
                          kb * log(qb) + (nb - kb) * log(1 - qb);
        const double want = static_cast<double>(exp(log_p));
        if (want < 1e-300) continue;  // below the doubles' normal range
        const double got = std::exp(gpu::detail::conjugate::binomial_log_mass(n, k, q));
        INFO("n = " << n << ", k = " << k << ", q = " << q << ": " << got << " against " << want);
        // nq's rounding moves D(k, nq) by |k - nq| ulps; every other term by a few
        CHECK(std::abs(got - want) <= 1e-14 * (4 + std::abs(static_cast<double>(k) - mean)) * want);
      }
    }
}

TEST_CASE("sample_binomial: draws follow Binomial(n, q) (chi-square, 2^17 draws each)", "[gpu][sample_binomial]") {
  const std::size_t draws = std::size_t{1} << 17;
  for (const auto& [n, q] : std::vector<std::pair<std::int64_t, double>>{
           {1, 0.5}, {2, 0.5}, {10, 0.01}, {40, 0.3}, {60, 0.8}, {763, 0.5}, {5000, 0.999}, {100000, 0.2}, {3, 1e-9},
           {100000, 2e-5}}) {
    INFO("n = " << n << ", q = " << q);
    const auto drawn = gpu::sample_binomial(Column<std::int64_t>::host_values(std::vector<std::int64_t>(draws, n)),
                                            Column<double>::host_values(std::vector<double>(draws, q)), 17, 3);
    std::vector<double> counts(static_cast<std::size_t>(n) + 1, 0.0), p(counts.size());
    for (const std::int64_t k : drawn.host()) {
      REQUIRE((k >= 0 && k <= n));
      counts[static_cast<std::size_t>(k)] += 1;
    }
    const boost::math::binomial_distribution<double> law(static_cast<double>(n), q);
    // cells pooled until each expects at least 5 draws
    std::vector<double> pooled_counts, pooled_p;
    double c = 0, e = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
      c += counts[k];
      e += boost::math::pdf(law, static_cast<double>(k));
      if (e * static_cast<double>(draws) >= 5 || k + 1 == counts.size()) {
        pooled_counts.push_back(c), pooled_p.push_back(e);
        c = e = 0;
      }
    }
    const double x2 = test::chi_square(pooled_counts, pooled_p, static_cast<double>(draws));
    const double dof = std::max(1.0, static_cast<double>(pooled_counts.size()) - 1.0);
    CHECK(x2 < boost::math::quantile(boost::math::chi_squared(dof), 1 - 1e-6));
  }
}

TEST_CASE("sample_binomial: point masses, the same uniform for the same particle, errors", "[gpu][sample_binomial]") {
  const auto n = Column<std::int64_t>::host_values({0, 7, 7, 12});
  const auto d = gpu::sample_binomial(n, Column<double>::host_values({0.4, 0.0, 1.0, 0.5}), 1, 0);
  CHECK(d.host()[0] == 0);
  CHECK(d.host()[1] == 0);
  CHECK(d.host()[2] == 7);
  // a particle's draw is a function of its n, q and uniform only: drawn alone, on its own stream, it is the same
  std::mt19937_64 gen(5);
  std::vector<std::int64_t> many_n(64);
  std::vector<double> many_q(64);
  for (std::size_t i = 0; i < many_n.size(); ++i) {
    many_n[i] = static_cast<std::int64_t>(gen() % 2000);
    many_q[i] = std::uniform_real_distribution<double>(0.0, 1.0)(gen);
  }
  const auto together = gpu::sample_binomial(Column<std::int64_t>::host_values(many_n),
                                             Column<double>::host_values(many_q), 9, 4, 100);
  for (std::size_t i = 0; i < many_n.size(); ++i) {
    const auto alone = gpu::sample_binomial(Column<std::int64_t>::host_values({many_n[i]}),
                                            Column<double>::host_values({many_q[i]}), 9, 4, 100 + i);
    REQUIRE(alone.host()[0] == together.host()[i]);
  }
  CHECK_THROWS_AS(gpu::sample_binomial(n, Column<double>::host_values({0.4, 1.5, 0, 0}), 1, 0), domain_error);
  CHECK_THROWS_AS(gpu::sample_binomial(Column<std::int64_t>::host_values({-1}), Column<double>::host_values({0.5}), 1, 0),
                  domain_error);
  CHECK_THROWS_AS(gpu::sample_binomial(n, Column<double>::host_values({0.4}), 1, 0), shape_error);
  // the draw's arithmetic is in doubles: n up to 2^53 (a draw there is 10^8 steps: not run)
  const auto huge = Column<std::int64_t>::host_values({1, (std::int64_t{1} << 53) + 1});
  CHECK_THROWS_AS(gpu::sample_binomial(huge, Column<double>::host_values({0.5, 0.5}), 1, 0), domain_error);
  CHECK_THROWS_AS(gpu::sample_binomial(huge, 0.5, 1, 0), domain_error);
}

TEST_CASE("sample_binomial: the device draws what the host draws", "[gpu][sample_binomial][cuda]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(6);
  const std::size_t P = 1 << 16;
  std::vector<std::int64_t> n(P);
  std::vector<double> q(P);
  for (std::size_t i = 0; i < P; ++i) {
    n[i] = static_cast<std::int64_t>(gen() % (i % 2 ? 1000 : 1000000));
    q[i] = i % 97 == 0 ? 0.0 : std::uniform_real_distribution<double>(0.0, 1.0)(gen);
  }
  const auto host = gpu::sample_binomial(Column<std::int64_t>::host_values(n), Column<double>::host_values(q), 4, 2);
  const auto device = gpu::sample_binomial(Column<std::int64_t>::from_host(n, Backend::cuda),
                                           Column<double>::from_host(q, Backend::cuda), 4, 2).to_host();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < P; ++i) differ += device[i] != host.host()[i];
  CHECK(differ <= 2);  // the same arithmetic; fma contraction may move a cumulative sum by one rounding
  q[5] = -0.5;
  CHECK_THROWS_AS(gpu::sample_binomial(Column<std::int64_t>::from_host(n, Backend::cuda),
                                       Column<double>::from_host(q, Backend::cuda), 4, 2),
                  domain_error);
  q[5] = 0.5;
  n[9] = (std::int64_t{1} << 53) + 1;
  CHECK_THROWS_AS(gpu::sample_binomial(Column<std::int64_t>::from_host(n, Backend::cuda),
                                       Column<double>::from_host(q, Backend::cuda), 4, 2),
                  domain_error);
}

TEST_CASE("sample_binomial and add_binomial_log_mass with one q are those of the column of it",
          "[gpu][sample_binomial]") {
  std::mt19937_64 gen(26);
  const std::size_t P = 5000;
  std::vector<std::int64_t> n(P), k(P);
  for (std::size_t i = 0; i < P; ++i) {
    n[i] = static_cast<std::int64_t>(gen() % 300);
    k[i] = static_cast<std::int64_t>(gen() % 320) - 10;  // some below 0 and above n: -inf
  }
  std::vector<Backend> where{Backend::cpu};
  if (gpu::cuda_available()) where.push_back(Backend::cuda);
  for (const Backend b : where)
    for (const double q : {0.0, 0.37, 1.0}) {
      INFO((b == Backend::cpu ? "host" : "device") << ", q = " << q);
      const auto nc = Column<std::int64_t>::from_host(n, b), kc = Column<std::int64_t>::from_host(k, b);
      const auto qc = Column<double>::from_host(std::vector<double>(P, q), b);
      CHECK(gpu::sample_binomial(nc, q, 8, 3, 11).to_host() == gpu::sample_binomial(nc, qc, 8, 3, 11).to_host());
      auto one = Column<double>::from_host(std::vector<double>(P, 0.5), b), column = one.clone();
      gpu::add_binomial_log_mass(nc, q, kc, one);
      gpu::add_binomial_log_mass(nc, qc, kc, column);
      CHECK(one.to_host() == column.to_host());
    }
  auto ll = Column<double>::host_values(std::vector<double>(P, 0.0));
  CHECK_THROWS_AS(gpu::add_binomial_log_mass(Column<std::int64_t>::host_values(n), 1.5,
                                             Column<std::int64_t>::host_values(k), ll),
                  domain_error);
  n[3] = -1;
  CHECK_THROWS_AS(gpu::sample_binomial(Column<std::int64_t>::host_values(n), 0.5, 1, 1), domain_error);
}

}  // namespace test_sample_binomial
