// Categorical counts of a Dirichlet parameter on a population (gpu::Vectors): the CPU reference against the
// runtime's closed forms and the distributions' Categorical, the draws against gamma_variate and their moments, bad
// input, and the device against the host on fresh random rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_dirichlet.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/conjugate.hpp"

namespace test_population_dirichlet {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::Vectors;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// P rows of K entries, log-uniform in [0.05, 50] (Dirichlet parameters), or (zeros) probability vectors: rows
/// normalized, with a few exact zeros.
std::vector<double> random_rows(std::mt19937_64& gen, std::size_t P, std::size_t K, bool zeros) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> r(P * K);
  for (std::size_t i = 0; i < P; ++i) {
    double s = 0;
    for (std::size_t j = 0; j < K; ++j) s += r[i * K + j] = zeros && u(gen) < 0.15 ? 0.0 : std::exp(std::log(0.05) + u(gen) * std::log(1000.0));
    if (s == 0) r[i * K] = s = 1.0;
    if (zeros)
      for (std::size_t j = 0; j < K; ++j) r[i * K + j] /= s;
  }
  return r;
}

/// Categories: mostly in 0 .. K - 1, a few outside (impossible).
std::vector<std::int64_t> random_categories(std::mt19937_64& gen, std::size_t P, std::size_t K) {
  std::uniform_int_distribution<std::int64_t> c(-1, static_cast<std::int64_t>(K));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::int64_t> k(P);
  for (auto& x : k) {
    x = c(gen);
    if (u(gen) < 0.8) x = std::max<std::int64_t>(0, std::min<std::int64_t>(x, static_cast<std::int64_t>(K) - 1));
  }
  return k;
}

Eigen::VectorXd row_of(const std::vector<double>& rows, std::size_t K, std::size_t i) {
  return Eigen::Map<const Eigen::VectorXd>(rows.data() + i * K, static_cast<Eigen::Index>(K));
}

}  // namespace

TEST_CASE("Dirichlet rows: the CPU reference is the runtime's closed forms and the distributions' Categorical",
          "[population][dirichlet]") {
  std::mt19937_64 gen(Catch::rngSeed() + 81);
  for (const std::size_t K : {std::size_t{1}, std::size_t{3}, std::size_t{17}}) {
    INFO("K = " << K);
    const std::size_t P = 200;
    const auto alpha = random_rows(gen, P, K, false), pi = random_rows(gen, P, K, true);
    const auto k = random_categories(gen, P, K);
    const Vectors a = Vectors::from_rows(alpha, K, Backend::cpu), p = Vectors::from_rows(pi, K, Backend::cpu);
    REQUIRE(a.size() == P);
    auto la = Column<double>::host_values(std::vector<double>(P, 1.5)), lp = la.clone();
    gpu::add_dirichlet_categorical_log_mass(a, Column<std::int64_t>::host_values(k), la);
    gpu::add_categorical_log_mass(p, Column<std::int64_t>::host_values(k), lp);
    const gpu::PmfBatch marginal = gpu::categorical_laws(a).to_host(), own = gpu::categorical_laws(p).to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ", k = " << k[i]);
      const runtime::Dirichlet d(row_of(alpha, K, i));
      const double want_a = runtime::log_marginal_categorical(d, k[i]);
      if (std::isinf(want_a)) REQUIRE(la.host()[i] == -inf);
      else REQUIRE(la.host()[i] - 1.5 == Approx(want_a).epsilon(1e-14).margin(1e-14));
      const Categorical c(row_of(pi, K, i));
      const double want_p = k[i] >= 0 && k[i] < static_cast<std::int64_t>(K) ? log_pdf(c, k[i]) : -inf;
      if (std::isinf(want_p)) REQUIRE(lp.host()[i] == -inf);
      else REQUIRE(lp.host()[i] - 1.5 == Approx(want_p).epsilon(1e-14).margin(1e-14));
      // the laws: the marginal Categorical(alpha / sum alpha), and pi's own
      REQUIRE(marginal.lo[i] == 0);
      REQUIRE(marginal.length(i) == K);
      for (std::size_t j = 0; j < K; ++j) {
        REQUIRE(marginal[i][j] * std::exp(marginal.log_scale[i]) ==
                Approx(std::exp(runtime::log_marginal_categorical(d, std::int64_t(j)))).epsilon(1e-14));
        REQUIRE(own[i][j] * std::exp(own.log_scale[i]) == Approx(pdf(c, std::int64_t(j))).epsilon(1e-14).margin(1e-300));
      }
    }
    // the update: alpha_k + 1 where k is a category, nothing elsewhere; uniform cleared
    Vectors u = Vectors::filled(std::vector<double>(alpha.begin(), alpha.begin() + std::ptrdiff_t(K)), P, Backend::cpu);
    REQUIRE(u.uniform);
    gpu::dirichlet_update(u, Column<std::int64_t>::host_values(k));
    CHECK_FALSE(u.uniform);
    for (std::size_t i = 0; i < P; ++i)
      for (std::size_t j = 0; j < K; ++j)
        REQUIRE(u.entries.host()[i * K + j] == alpha[j] + (k[i] == std::int64_t(j) ? 1.0 : 0.0));
    // the gather: rows of the ancestors, uniform kept
    std::vector<std::size_t> anc(P);
    for (std::size_t i = 0; i < P; ++i) anc[i] = (7 * i + 3) % P;
    const Vectors g = gpu::gather(a, Column<std::size_t>::host_values(anc));
    for (std::size_t i = 0; i < P; ++i)
      for (std::size_t j = 0; j < K; ++j) REQUIRE(g.entries.host()[i * K + j] == alpha[anc[i] * K + j]);
    anc[5] = P;
    REQUIRE_THROWS_AS(gpu::gather(a, Column<std::size_t>::host_values(anc)), shape_error);
  }
}

TEST_CASE("Dirichlet draws: gamma_variate's on each component's key, normalized, with the Dirichlet's moments",
          "[population][dirichlet]") {
  const std::vector<double> alpha = {0.5, 2.0, 7.5};
  const std::size_t P = 20000, K = 3;
  const Vectors d = gpu::sample_dirichlet(Vectors::filled(alpha, P, Backend::cpu), 42, 9, 100);
  REQUIRE(d.size() == P);
  CHECK_FALSE(d.uniform);
  std::vector<double> mean(K, 0.0);
  for (std::size_t i = 0; i < P; ++i) {
    double g[3], s = 0;
    for (std::size_t j = 0; j < K; ++j)
      s += g[j] = gpu::gamma_variate(alpha[j], 42 ^ (0x9E37'79B9'7F4A'7C15ull * (j + 1)), 100 + i, 9);
    for (std::size_t j = 0; j < K; ++j) {
      REQUIRE(d.entries.host()[i * K + j] == Approx(g[j] / s).epsilon(1e-15));
      mean[j] += d.entries.host()[i * K + j] / double(P);
    }
  }
  // E pi_j = alpha_j / 10, sd of the mean sqrt(alpha_j (10 - alpha_j) / (100 * 11 P)) <= 0.0011
  for (std::size_t j = 0; j < K; ++j) CHECK(std::abs(mean[j] - alpha[j] / 10.0) < 0.006);
}

TEST_CASE("Dirichlet rows: bad input is named", "[population][dirichlet]") {
  REQUIRE_THROWS_AS(Vectors::filled(std::vector<double>{}, 4, Backend::cpu), shape_error);
  REQUIRE_THROWS_AS(Vectors::from_rows({1.0, 2.0, 3.0}, 2, Backend::cpu), shape_error);
  const Vectors bad = Vectors::from_rows({1.0, 2.0, -1.0, 2.0}, 2, Backend::cpu);
  auto ll = Column<double>::host_values({0.0, 0.0});
  REQUIRE_THROWS_AS(gpu::add_dirichlet_categorical_log_mass(bad, Column<std::int64_t>::host_values({0, 1}), ll),
                    domain_error);
  REQUIRE_THROWS_AS(gpu::sample_dirichlet(bad, 1, 2), domain_error);
  auto short_ll = Column<double>::host_values({0.0});
  const Vectors ok = Vectors::from_rows({1.0, 2.0, 1.0, 2.0}, 2, Backend::cpu);
  REQUIRE_THROWS_AS(gpu::add_dirichlet_categorical_log_mass(ok, Column<std::int64_t>::host_values({0, 1}), short_ll),
                    shape_error);
  REQUIRE_THROWS_AS(gpu::categorical_laws(Vectors::from_rows({0.0, 0.0}, 2, Backend::cpu)), domain_error);
}

TEST_CASE("Dirichlet rows: the device against the host", "[population][dirichlet][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(Catch::rngSeed() + 82);
  for (const auto& [P, K] : {std::pair<std::size_t, std::size_t>{1, 1}, {37, 4}, {5000, 12}, {70000, 3}}) {
    INFO(P << " particles, K = " << K);
    const auto alpha = random_rows(gen, P, K, false), pi = random_rows(gen, P, K, true);
    const auto k = random_categories(gen, P, K);
    const auto kh = Column<std::int64_t>::host_values(k);
    const auto kd = Column<std::int64_t>::from_host(k, Backend::cuda);
    const Vectors ah = Vectors::from_rows(alpha, K, Backend::cpu), ad = Vectors::from_rows(alpha, K, Backend::cuda);
    const Vectors ph = Vectors::from_rows(pi, K, Backend::cpu), pd = Vectors::from_rows(pi, K, Backend::cuda);
    auto close = [](const std::vector<double>& d, const std::vector<double>& h, double tol) {
      REQUIRE(d.size() == h.size());
      std::size_t bad = 0;
      for (std::size_t i = 0; i < h.size(); ++i)
        if (!(d[i] == h[i] || std::abs(d[i] - h[i]) <= tol * std::max(1.0, std::abs(h[i])))) ++bad;
      CHECK(bad == 0);
    };
    auto lh = Column<double>::host_values(std::vector<double>(P, 0.5));
    auto ld = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
    gpu::add_dirichlet_categorical_log_mass(ah, kh, lh);
    gpu::add_dirichlet_categorical_log_mass(ad, kd, ld);
    gpu::add_categorical_log_mass(ph, kh, lh);
    gpu::add_categorical_log_mass(pd, kd, ld);
    close(ld.to_host(), lh.host(), 1e-14);
    const gpu::PmfBatch mh = gpu::categorical_laws(ah).to_host(), md = gpu::categorical_laws(ad).to_host();
    REQUIRE(md.offset == mh.offset);
    REQUIRE(md.lo == mh.lo);
    close(md.weights, mh.weights, 1e-15);
    close(md.log_scale, mh.log_scale, 1e-14);
    Vectors uh = ah.clone(), ud = ad.clone();
    gpu::dirichlet_update(uh, kh);
    gpu::dirichlet_update(ud, kd);
    REQUIRE(ud.to_host() == uh.to_host());  // exact: the same additions
    close(gpu::sample_dirichlet(ad, 5, 6, 7).to_host(), gpu::sample_dirichlet(ah, 5, 6, 7).to_host(), 1e-12);
    std::vector<std::size_t> anc(P);
    for (std::size_t i = 0; i < P; ++i) anc[i] = gen() % P;
    REQUIRE(gpu::gather(ad, Column<std::size_t>::from_host(anc, Backend::cuda)).to_host() ==
            gpu::gather(ah, Column<std::size_t>::host_values(anc)).to_host());
    REQUIRE(Vectors::filled(std::vector<double>(alpha.begin(), alpha.begin() + std::ptrdiff_t(K)), P, Backend::cuda)
                .to_host() ==
            Vectors::filled(std::vector<double>(alpha.begin(), alpha.begin() + std::ptrdiff_t(K)), P, Backend::cpu)
                .to_host());
  }
  // bad parameters: NaN on the device (nothing read back)
  const Vectors bad = Vectors::from_rows({1.0, 2.0, -1.0, 2.0}, 2, Backend::cuda);
  auto ll = Column<double>::from_host({0.0, 0.0}, Backend::cuda);
  gpu::add_dirichlet_categorical_log_mass(bad, Column<std::int64_t>::from_host({0, 1}, Backend::cuda), ll);
  const auto l = ll.to_host();
  CHECK(std::isfinite(l[0]));
  CHECK(std::isnan(l[1]));
}

}  // namespace test_population_dirichlet
