// Thinnings with a probability per law (per-group parameters): gpu::thin and gpu::condition_on_thinning with a
// column of q_i, against the one-probability forms law by law (CPU) and the device against the CPU reference on
// fresh random laws.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/random_count_laws.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_thinning_each {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

/// P count laws from lo in 0 .. 300 with 1 .. 120 values.
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P) { return test::random_count_laws(gen, P, 300, 120); }

std::vector<double> probabilities(std::mt19937_64& gen, std::size_t P) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> q(P);
  for (double& x : q) {
    const double r = u(gen);
    x = r < 0.05 ? 0.0 : r < 0.1 ? 1.0 : u(gen);
  }
  return q;
}

/// Law i of a batch alone.
gpu::PmfBatch one(const gpu::PmfBatch& b, std::size_t i) {
  gpu::PmfBatch out;
  for (const double w : b[i]) out.weights.push_back(w);
  out.offset.push_back(static_cast<std::int64_t>(out.weights.size()));
  out.lo.push_back(b.lo[i]);
  out.log_scale.push_back(b.log_scale[i]);
  return out;
}

void require_close(const gpu::PmfBatch& a, const gpu::PmfBatch& b, double tolerance) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("law " << i);
    REQUIRE(a.lo[i] == b.lo[i]);
    REQUIRE(a.length(i) == b.length(i));
    if (std::isinf(a.log_scale[i]) || std::isinf(b.log_scale[i])) {
      REQUIRE(a.log_scale[i] == b.log_scale[i]);
      continue;
    }
    REQUIRE(a.log_scale[i] == Approx(b.log_scale[i]).epsilon(tolerance).margin(tolerance));
    for (std::size_t k = 0; k < a.length(i); ++k)
      REQUIRE(std::abs(a[i][k] - b[i][k]) <= tolerance * std::max(1.0, std::abs(b[i][k])));
  }
}

}  // namespace

TEST_CASE("A thinning with a probability per law is each law's own thinning (CPU reference)", "[gpu][thinning]") {
  std::mt19937_64 gen(Catch::rngSeed() + 31);
  const std::size_t P = 60;
  const gpu::PmfBatch x = random_laws(gen, P);
  const auto q = probabilities(gen, P);
  std::vector<std::int64_t> v(P);
  for (std::size_t i = 0; i < P; ++i) v[i] = x.lo[i] + static_cast<std::int64_t>(gen() % 40) - 10;
  const gpu::Laws laws = gpu::Laws::from_host(x, Backend::cpu);
  const gpu::PmfBatch thinned = gpu::thin(laws, Column<double>::host_values(q)).to_host();
  auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
  const gpu::PmfBatch posterior =
      gpu::condition_on_thinning(laws, Column<std::int64_t>::host_values(v), Column<double>::host_values(q), ll)
          .to_host();
  for (std::size_t i = 0; i < P; ++i) {
    INFO("law " << i << ", q = " << q[i]);
    const gpu::Laws alone = gpu::Laws::from_host(one(x, i), Backend::cpu);
    require_close(one(thinned, i), gpu::thin(alone, q[i]).to_host(), 0.0);
    auto one_ll = Column<double>::host_values({0.5});
    const gpu::PmfBatch p =
        gpu::condition_on_thinning(alone, Column<std::int64_t>::host_values({v[i]}), q[i], one_ll).to_host();
    REQUIRE(ll.host()[i] == one_ll.host()[0]);
    if (std::isfinite(one_ll.host()[0])) require_close(one(posterior, i), p, 0.0);
  }
  REQUIRE_THROWS_AS(gpu::thin(laws, Column<double>::host_values(std::vector<double>(P - 1, 0.5))), shape_error);
  auto bad = q;
  bad[3] = 1.5;
  REQUIRE_THROWS_AS(gpu::thin(laws, Column<double>::host_values(bad)), domain_error);
}

TEST_CASE("device: a thinning with a probability per law agrees with the CPU reference", "[gpu][thinning][device]") {
  if (tally::test::skip_without_device()) return;
  std::mt19937_64 gen(Catch::rngSeed() + 32);
  for (const std::size_t P : {std::size_t{1}, std::size_t{37}, std::size_t{5000}}) {
    const gpu::PmfBatch x = random_laws(gen, P);
    const auto q = probabilities(gen, P);
    std::vector<std::int64_t> v(P);
    for (std::size_t i = 0; i < P; ++i) v[i] = x.lo[i] + static_cast<std::int64_t>(gen() % 40) - 10;
    const gpu::Laws hx = gpu::Laws::from_host(x, Backend::cpu), dx = gpu::Laws::from_host(x, Backend::cuda);
    require_close(gpu::thin(dx, Column<double>::from_host(q, Backend::cuda)).to_host(),
                  gpu::thin(hx, Column<double>::host_values(q)).to_host(), 1e-12);
    auto host_ll = Column<double>::host_values(std::vector<double>(P, 0.5));
    auto device_ll = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
    const auto h = gpu::condition_on_thinning(hx, Column<std::int64_t>::host_values(v), Column<double>::host_values(q),
                                              host_ll)
                       .to_host();
    const auto d = gpu::condition_on_thinning(dx, Column<std::int64_t>::from_host(v, Backend::cuda),
                                              Column<double>::from_host(q, Backend::cuda), device_ll)
                       .to_host();
    const auto dl = device_ll.to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("law " << i);
      if (std::isinf(host_ll.host()[i])) {
        REQUIRE(dl[i] == host_ll.host()[i]);
        continue;
      }
      REQUIRE(dl[i] == Approx(host_ll.host()[i]).epsilon(1e-12).margin(1e-12));
      require_close(one(d, i), one(h, i), 1e-12);
    }
  }
}

TEST_CASE("repeated spreads each group's value over its particles, on the CPU and the device", "[gpu][groups]") {
  std::mt19937_64 gen(Catch::rngSeed() + 33);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (const auto& [groups, times] : {std::pair<std::size_t, std::size_t>{1, 1}, {7, 3}, {300, 1}, {1, 4096}, {513, 77}}) {
    INFO(groups << " groups of " << times);
    std::vector<double> values(groups);
    for (double& v : values) v = u(gen);
    std::vector<double> want;
    for (const double v : values) want.insert(want.end(), times, v);
    REQUIRE(gpu::repeated(Column<double>::host_values(values), times).host() == want);
    if (tally::test::skip_without_device()) continue;
    REQUIRE(gpu::repeated(Column<double>::from_host(values, Backend::cuda), times).to_host() == want);
  }
  REQUIRE_THROWS_AS(gpu::repeated(Column<double>::host_values({0.5}), 0), shape_error);
}

}  // namespace test_thinning_each
