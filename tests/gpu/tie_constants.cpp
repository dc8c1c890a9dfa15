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
      const auto got = gpu::tie_constants(Column<std::int64_t>::from_host(z, where), sign,
                                          Column<double>::from_host(ll, where), gpu::Laws::from_host(x, where),
                                          gpu::Laws::from_host(y, where))
                           .to_host();
      REQUIRE(got.size() == P);
      for (std::size_t i = 0; i < P; ++i) {
        INFO("particle " << i);
        if (ll[i] > -std::numeric_limits<double>::infinity()) {
          REQUIRE(got[i] == sign * z[i]);
        } else {  // Y = sign (c' - X) at X = lo(x): on Y's support
          const std::int64_t x_lo = x.lo[i], y_lo = y.lo[i], y_hi = y.lo[i] + std::int64_t(y.length(i)) - 1;
          const std::int64_t y_at_lo = got[i] - sign * x_lo;  // Y = -sign X + c at X = lo(x)
          REQUIRE(y_at_lo >= y_lo);
          REQUIRE(y_at_lo <= y_hi);
        }
      }
      if (where == Backend::cpu)
        host = got;
      else
        CHECK(got == host);
    }
  }
  CHECK_THROWS_AS(gpu::tie_constants(Column<std::int64_t>::from_host({1}, Backend::cpu), 1,
                                     Column<double>::from_host(ll, Backend::cpu), gpu::Laws::from_host(x, Backend::cpu),
                                     gpu::Laws::from_host(y, Backend::cpu)),
                  shape_error);
}

}  // namespace test_tie_constants
