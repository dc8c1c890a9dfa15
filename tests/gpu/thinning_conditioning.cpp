// condition_on_thinning on the device (its fast path of walked likelihood ratios and its per-entry path) against the
// host's per-entry reference on fresh random laws: smooth laws, laws with far tails and zeros, q near 0 and 1,
// observations below, inside and above the laws, dead particles.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/gpu/population_ops.hpp"

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// P laws: counts from lo in 0 .. 400 with 1 .. 700 values; smooth bumps (a discretized Gaussian in logs, down to
/// e^-700 in the tails), rough ones (random logs over 300 decades, some zeros), and dead particles.
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;  // offset starts as {0}
  for (std::size_t i = 0; i < P; ++i) {
    const auto lo = static_cast<std::int64_t>(u(gen) * 400), m = 1 + static_cast<std::int64_t>(u(gen) * 700);
    const double shape = u(gen), centre = u(gen) * double(m), width = 1.0 + u(gen) * double(m) / 3.0;
    double top = 0.0;
    std::vector<double> w(static_cast<std::size_t>(m));
    for (std::int64_t k = 0; k < m; ++k) {
      const double z = (double(k) - centre) / width;
      const double l = shape < 0.7 ? std::max(-0.5 * z * z, -700.0) : (u(gen) < 0.1 ? -inf : -690.0 * u(gen));
      top = std::max(top, w[static_cast<std::size_t>(k)] = std::exp(l));
    }
    if (top == 0.0) w[0] = top = 1.0;
    for (double& x : w) b.weights.push_back(x / top);
    b.offset.push_back(static_cast<std::int64_t>(b.weights.size()));
    b.lo.push_back(lo);
    b.log_scale.push_back(u(gen) < 0.02 ? -inf : -10.0 * u(gen));
  }
  return b;
}

}  // namespace

TEST_CASE("condition_on_thinning: the device computes what the host does", "[population][thinning][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261125);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 20000;
  for (const double q : {0.2, 0.5, 1e-6, 0.999999, 1e-300, 0.0, 1.0}) {
    INFO("q = " << q);
    const gpu::PmfBatch x = random_laws(gen, P);
    std::vector<std::int64_t> v(P);
    for (std::size_t i = 0; i < P; ++i) {
      const std::int64_t lo = x.lo[i], hi = lo + static_cast<std::int64_t>(x[i].size()) - 1;
      const double c = u(gen);
      // mostly a likely count of the law's values, sometimes one above them (impossible), or below 0
      v[i] = c < 0.9 ? static_cast<std::int64_t>(q * double(lo + static_cast<std::int64_t>(u(gen) * double(hi - lo + 1))) +
                                                 (u(gen) - 0.5) * 8.0)
             : c < 0.97 ? hi + 1 + static_cast<std::int64_t>(u(gen) * 3)
                        : -1;
    }
    auto host_ll = Column<double>::host_values(std::vector<double>(P, 0.25));
    auto device_ll = Column<double>::from_host(std::vector<double>(P, 0.25), Backend::cuda);
    const gpu::PmfBatch h = gpu::condition_on_thinning(gpu::Laws::from_host(x, Backend::cpu),
                                                       Column<std::int64_t>::host_values(v), q, host_ll)
                                .to_host();
    const gpu::PmfBatch d = gpu::condition_on_thinning(gpu::Laws::from_host(x, Backend::cuda),
                                                       Column<std::int64_t>::from_host(v, Backend::cuda), q, device_ll)
                                .to_host();
    const std::vector<double> dl = device_ll.to_host();
    REQUIRE(d.offset == h.offset);
    REQUIRE(d.lo == h.lo);
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ": lo " << x.lo[i] << ", " << x[i].size() << " values, v = " << v[i]);
      const double want = host_ll.host()[i], got = dl[i];
      if (want == -inf) {
        REQUIRE(got == -inf);
        REQUIRE(d.log_scale[i] == h.log_scale[i]);
        continue;
      }
      REQUIRE(std::abs(got - want) <= 1e-11 * std::max(1.0, std::abs(want)));
      REQUIRE(std::abs(d.log_scale[i] - h.log_scale[i]) <= 1e-11 * std::max(1.0, std::abs(h.log_scale[i])));
      const auto hw = h[i], dw = d[i];
      for (std::size_t k = 0; k < hw.size(); ++k) {
        if (hw[k] < 1e-250 && dw[k] < 1e-250) continue;
        INFO("k = " << k << ": host " << hw[k] << ", device " << dw[k] << ", relative " << (dw[k] - hw[k]) / hw[k]);
        REQUIRE(std::abs(dw[k] - hw[k]) <= 1e-11 * hw[k]);
      }
    }
  }
}
