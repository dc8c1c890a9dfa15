// gpu::max_mass_ratio (the amplification of a conditioning's error bound): against the one-law formula of
// tally::condition, and the device against the host.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_mass_ratio {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {
constexpr double inf = std::numeric_limits<double>::infinity();

gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < P; ++i) {
    std::vector<double> w(1 + gen() % 40);
    for (double& x : w) x = u(gen);
    b.push_back(w, static_cast<std::int64_t>(gen() % 9), i % 13 == 4 ? -inf : 3.0 * u(gen) - 1.5);
  }
  return b;
}
}  // namespace

TEST_CASE("max_mass_ratio: the largest M_i / L_i over live particles with possible observations", "[gpu][mass_ratio]") {
  std::mt19937_64 gen(21);
  const std::size_t P = 300;
  const gpu::PmfBatch xb = random_laws(gen, P), yb = random_laws(gen, P);
  std::vector<double> before(P), after(P);
  for (std::size_t i = 0; i < P; ++i) {
    before[i] = -10.0 * std::uniform_real_distribution<double>(0, 1)(gen);
    after[i] = i % 17 == 2 ? -inf : before[i] - 20.0 * std::uniform_real_distribution<double>(0, 1)(gen);
  }
  const auto x = gpu::Laws::from_host(xb, Backend::cpu), y = gpu::Laws::from_host(yb, Backend::cpu);
  const auto b = Column<double>::host_values(before), a = Column<double>::host_values(after);
  auto mass = [](const gpu::PmfBatch& l, std::size_t i) {
    double w = 0;
    for (const double v : l[i]) w += v;
    return std::exp(l.log_scale[i]) * w;
  };
  double want = 0, want_xy = 0;
  for (std::size_t i = 0; i < P; ++i) {
    if (!std::isfinite(after[i]) || xb.log_scale[i] == -inf) continue;
    const double l = std::exp(after[i] - before[i]);
    want = std::max(want, mass(xb, i) / l);
    if (yb.log_scale[i] != -inf) want_xy = std::max(want_xy, mass(xb, i) * mass(yb, i) / l);
  }
  REQUIRE(want > 0);
  CHECK(gpu::max_mass_ratio(x, nullptr, b, a) == Approx(want).epsilon(1e-12));
  CHECK(gpu::max_mass_ratio(x, &y, b, a) == Approx(want_xy).epsilon(1e-12));
  if (test::skip_without_device()) return;
  const auto xd = gpu::Laws::from_host(xb, Backend::cuda), yd = gpu::Laws::from_host(yb, Backend::cuda);
  const auto bd = Column<double>::from_host(before, Backend::cuda), ad = Column<double>::from_host(after, Backend::cuda);
  CHECK(gpu::max_mass_ratio(xd, nullptr, bd, ad) == Approx(want).epsilon(1e-12));
  CHECK(gpu::max_mass_ratio(xd, &yd, bd, ad) == Approx(want_xy).epsilon(1e-12));
}

TEST_CASE("max_mass_ratio over the laws of a table that particles hold leaves the others out", "[gpu][mass_ratio]") {
  std::mt19937_64 gen(37);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t K = 50, P = 2000;
  std::vector<double> mass(K), before(K), after(K);
  for (std::size_t k = 0; k < K; ++k) {
    mass[k] = k % 11 == 3 ? -inf : 2.0 * u(gen) - 1.0;
    before[k] = -5.0 * u(gen);
    after[k] = k % 13 == 5 ? -inf : before[k] - 30.0 * u(gen);
  }
  // the laws 40 .. 49 are held by no particle: the largest ratio of all is made one of theirs
  after[45] = before[45] - 700.0;
  std::vector<std::int64_t> held(P);
  for (std::size_t i = 0; i < P; ++i) held[i] = static_cast<std::int64_t>(gen() % 40);
  held[7] = -1;  // outside the table: counts for nothing
  held[8] = static_cast<std::int64_t>(K);
  double want = 0, all = 0;
  for (std::size_t k = 0; k < K; ++k) {
    if (!std::isfinite(after[k]) || mass[k] == -inf) continue;
    const double r = std::exp(mass[k] - (after[k] - before[k]));
    all = std::max(all, r);
    if (k < 40) want = std::max(want, r);
  }
  REQUIRE(want > 0);
  REQUIRE(all > 1e100 * want);  // (what the ratio over every law would say)
  const auto m = Column<double>::host_values(mass), b = Column<double>::host_values(before);
  const auto a = Column<double>::host_values(after);
  const auto h = Column<std::int64_t>::host_values(held);
  CHECK(gpu::max_mass_ratio_later(m, b, a, h).value() == Approx(want).epsilon(1e-13));
  if (test::skip_without_device()) return;
  const auto hd = Column<std::int64_t>::from_host(held, Backend::cuda);
  // the table on the device, and a small table's on the host with the index on the device
  CHECK(gpu::max_mass_ratio_later(Column<double>::from_host(mass, Backend::cuda),
                                  Column<double>::from_host(before, Backend::cuda),
                                  Column<double>::from_host(after, Backend::cuda), hd)
            .value() == Approx(want).epsilon(1e-13));
  CHECK(gpu::max_mass_ratio_later(m, b, a, hd).value() == Approx(want).epsilon(1e-13));
}

}  // namespace test_mass_ratio
