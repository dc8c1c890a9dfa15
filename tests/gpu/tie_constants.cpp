// A tie's constants after an observed sum (gpu::tie_constants): sign z where the observation was possible, a possible
// value of the sum from the operands' supports where it was not; on the host against the definition, on the device
// against the host, on fresh random laws.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_tie_constants {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

/// P laws on random supports lo .. lo + length - 1 (lo in -20 .. 20, length 1 .. 9).
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P) {
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < P; ++i) {
    std::vector<double> w(1 + gen() % 9);
    for (auto& x : w) x = 0.05 + static_cast<double>(gen() % 1000) / 1000.0;
    b.push_back(w, static_cast<std::int64_t>(gen() % 41) - 20);
  }
  return b;
}

}  // namespace

TEST_CASE("tie_constants: sign z where possible, a possible sum from the supports where not", "[gpu][population]") {
  std::mt19937_64 gen(20261207);
  const std::size_t P = 3000;
  const gpu::PmfBatch x = random_laws(gen, P), y = random_laws(gen, P);
  std::vector<std::int64_t> z(P);
  std::vector<double> ll(P);
  for (std::size_t i = 0; i < P; ++i) {
    z[i] = static_cast<std::int64_t>(gen() % 101) - 50;
    ll[i] = gen() % 4 == 0 ? -std::numeric_limits<double>::infinity() : -static_cast<double>(gen() % 100) / 7.0;
  }
  std::vector<Backend> places{Backend::cpu};
  if (!test::skip_without_device()) places.push_back(Backend::cuda);
  for (const int sign : {1, -1}) {
    std::vector<std::int64_t> host;
    for (const Backend where : places) {
      INFO("sign " << sign << (where == Backend::cuda ? ", device" : ", host"));
      const gpu::Laws lx = gpu::Laws::from_host(x, where), ly = gpu::Laws::from_host(y, where);
      const auto x_lo = gpu::support_end(lx, 1, P, false), y_hi = gpu::support_end(ly, 1, P, true);
      const auto y_end = sign > 0 ? gpu::support_end(ly, 1, P, false) : y_hi.clone();
      const auto got = gpu::tie_constants(Column<std::int64_t>::from_host(z, where), sign,
                                          Column<double>::from_host(ll, where), x_lo, y_end)
                           .to_host();
      REQUIRE(got.size() == P);
      const auto lo_host = x_lo.to_host(), hi_host = y_hi.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("particle " << i);
        REQUIRE(lo_host[i] == x.lo[i]);
        REQUIRE(hi_host[i] == y.lo[i] + std::int64_t(y.length(i)) - 1);
        if (ll[i] > -std::numeric_limits<double>::infinity()) {
          REQUIRE(got[i] == sign * z[i]);
        } else {  // the tie Y = -sign X + c at X = lo(x): on Y's support
          const std::int64_t y_at_lo = got[i] - sign * x.lo[i];
          REQUIRE(y_at_lo >= y.lo[i]);
          REQUIRE(y_at_lo <= hi_host[i]);
        }
      }
      if (where == Backend::cpu)
        host = got;
      else
        CHECK(got == host);
    }
  }
  // laws shared by blocks: particle i reads law i / per
  const gpu::Laws blocks = gpu::Laws::from_host(x, Backend::cpu);
  const auto shared = gpu::support_end(blocks, 4, 4 * P, true).to_host();
  for (std::size_t i = 0; i < 4 * P; ++i) REQUIRE(shared[i] == x.lo[i / 4] + std::int64_t(x.length(i / 4)) - 1);
  CHECK_THROWS_AS(gpu::support_end(blocks, 3, P, false), shape_error);
  const auto one = Column<std::int64_t>::from_host({1}, Backend::cpu);
  CHECK_THROWS_AS(gpu::tie_constants(one, 1, Column<double>::from_host(ll, Backend::cpu), one, one), shape_error);
}

}  // namespace test_tie_constants
