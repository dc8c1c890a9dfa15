// condition_on_thinning on the device (its table of one shared observation's likelihood, its walked likelihood
// ratios, its per-entry path) against the host's per-entry reference on fresh random laws: smooth laws, laws with
// far tails and zeros, q near 0 and 1, observations below, inside and above the laws, dead particles; the prior
// masses it reports, on both sides.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "gpu/device.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_thinning_conditioning {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// P laws: counts from lo in 0 .. lo_max with 1 .. max_values values; smooth bumps (a discretized Gaussian in logs, down to
/// e^-700 in the tails), rough ones (random logs over 300 decades, some zeros), and dead particles.
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P, double max_values, double lo_max = 400) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;  // offset starts as {0}
  for (std::size_t i = 0; i < P; ++i) {
    const auto lo = static_cast<std::int64_t>(u(gen) * lo_max), m = 1 + static_cast<std::int64_t>(u(gen) * (max_values - 1));
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

/// condition_on_thinning of x by v and q on the device and on the host: the same log-likelihoods, prior masses and
/// posteriors (up to the roundings of the lgamma formula's two implementations and of the device's paths).
void check_against_host(const gpu::PmfBatch& x, const std::vector<std::int64_t>& v, double q) {
  const std::size_t P = x.size();
  auto host_ll = Column<double>::host_values(std::vector<double>(P, 0.25));
  auto device_ll = Column<double>::from_host(std::vector<double>(P, 0.25), Backend::cuda);
  auto host_mass = Column<double>::allocate(Backend::cpu, P, "test");
  auto device_mass = Column<double>::allocate(Backend::cuda, P, "test");
  const auto host_before = host_ll.clone();
  const auto device_before = device_ll.clone();
  const gpu::Laws hx = gpu::Laws::from_host(x, Backend::cpu), dx = gpu::Laws::from_host(x, Backend::cuda);
  const gpu::PmfBatch h =
      gpu::condition_on_thinning(hx, Column<std::int64_t>::host_values(v), q, host_ll, &host_mass).to_host();
  const gpu::PmfBatch d =
      gpu::condition_on_thinning(dx, Column<std::int64_t>::from_host(v, Backend::cuda), q, device_ll, &device_mass)
          .to_host();
  const std::vector<double> dl = device_ll.to_host();
  {  // the prior masses read in the same pass: log_scale + log sum w (-inf without mass), on both sides
    const std::vector<double> dm = device_mass.to_host();
    for (std::size_t i = 0; i < P; ++i) {
      double w = 0.0;
      for (const double wk : x[i]) w += wk;
      const double want = x.log_scale[i] + std::log(w);
      INFO("particle " << i);
      if (want == -inf) {
        REQUIRE(host_mass.host()[i] == -inf);
        REQUIRE(dm[i] == -inf);
        continue;
      }
      REQUIRE(std::abs(host_mass.host()[i] - want) <= 1e-13 * std::max(1.0, std::abs(want)));
      REQUIRE(std::abs(dm[i] - want) <= 1e-13 * std::max(1.0, std::abs(want)));
    }
    // the error bound's ratio from them is the one max_mass_ratio finds by its own pass over the laws
    const double from_laws = gpu::max_mass_ratio(dx, nullptr, device_before, device_ll);
    REQUIRE(gpu::max_mass_ratio(device_mass, device_before, device_ll) == Approx(from_laws).epsilon(1e-12));
    REQUIRE(gpu::max_mass_ratio(host_mass, host_before, host_ll) ==
            Approx(gpu::max_mass_ratio(hx, nullptr, host_before, host_ll)).epsilon(1e-12));
  }
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

/// check_against_host with each width of the device kernel's warps (8, 16 and 32 laws a warp), the choice back to
/// the default after.
void check_each_width(const gpu::PmfBatch& x, const std::vector<std::int64_t>& v, double q) {
  struct Default {
    ~Default() { gpu::detail::set_thinning_laws_per_warp(0); }
  } reset;
  for (const int laws : {8, 16, 32}) {
    INFO(laws << " laws a warp");
    gpu::detail::set_thinning_laws_per_warp(laws);
    check_against_host(x, v, q);
  }
}

}  // namespace

TEST_CASE("condition_on_thinning: the device computes what the host does", "[population][thinning][device]") {
  if (test::skip_without_device()) return;
  REQUIRE_THROWS_AS(gpu::detail::set_thinning_laws_per_warp(12), domain_error);  // only 0, 8, 16 or 32
  std::mt19937_64 gen(20261125);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 20000;
  // laws of up to 700 values (the long tile) and batches of laws of at most 256 (the short tile's kernel)
  for (const double q : {0.2, 0.5, 1e-6, 0.999999, 1e-300, 0.0, 1.0, 0.3, 0.9}) {
    const double max_values = q == 0.3 || q == 0.9 ? 256 : 700;
    INFO("q = " << q << ", up to " << max_values << " values a law");
    const gpu::PmfBatch x = random_laws(gen, P, max_values);
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
    check_each_width(x, v, q);
  }
}

TEST_CASE("condition_on_thinning: one observation shared by the particles (the device's table path)",
          "[population][thinning][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261127);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 20000;
  struct Case {
    double q, max_values, lo_max;
    std::int64_t v;
    double other_v;  // the fraction of particles observing v + 1 (their blocks walk instead)
  };
  // short tile (laws of <= 256 values: a table of 544), long tile (2176); ranges within and beyond the table; an
  // observation in most laws' far tail (the per-entry formula); v below every law; q near 0 and 1
  for (const Case c : {Case{0.6, 200, 100, 37, 0.0}, Case{0.6, 200, 100, 37, 0.005}, Case{0.3, 700, 400, 120, 0.0},
                       Case{0.3, 700, 1500, 120, 0.0}, Case{0.5, 150, 60, 0, 0.0}, Case{0.999, 100, 50, 140, 0.0},
                       Case{1e-6, 256, 300, 1, 0.0}, Case{0.9, 256, 400, 900, 0.0}}) {
    INFO("q = " << c.q << ", v = " << c.v << ", up to " << c.max_values << " values from lo <= " << c.lo_max);
    const gpu::PmfBatch x = random_laws(gen, P, c.max_values, c.lo_max);
    std::vector<std::int64_t> v(P, c.v);
    for (auto& vi : v)
      if (u(gen) < c.other_v) vi = c.v + 1;
    check_each_width(x, v, c.q);
  }
}

namespace {

/// The device's thinning d against the host's h: the same offsets and bounds, log-scales to 1e-12, and weights equal
/// (the same multiplications, additions and divisions in the same order on both sides: Horner's rule, no fused
/// multiply-add; 1e-14 relative allowed for a host compiler that fuses them). x and q, where given, name each law.
void require_same_thinning(const gpu::PmfBatch& h, const gpu::PmfBatch& d, const gpu::PmfBatch* x = nullptr,
                           const std::vector<double>* q = nullptr) {
  REQUIRE(d.offset == h.offset);
  REQUIRE(d.lo == h.lo);
  for (std::size_t i = 0; i < h.size(); ++i) {
    std::ostringstream law;
    law << "law " << i;
    if (x) law << " (lo " << x->lo[i] << ", " << x->length(i) << " values)";
    if (q) law << ", q = " << (*q)[i];
    INFO(law.str());
    if (h.log_scale[i] == -inf) {
      REQUIRE(d.log_scale[i] == -inf);
      continue;
    }
    REQUIRE(std::abs(d.log_scale[i] - h.log_scale[i]) <= 1e-12 * std::max(1.0, std::abs(h.log_scale[i])));
    const auto hw = h[i], dw = d[i];
    for (std::size_t k = 0; k < hw.size(); ++k) {
      INFO("k = " << k << ": host " << hw[k] << ", device " << dw[k]);
      REQUIRE(std::abs(dw[k] - hw[k]) <= 1e-14 * hw[k]);
    }
  }
}

}  // namespace

TEST_CASE("thin: the device computes what the host does, and zeros in a far tail are not carried on",
          "[population][thinning]") {
  std::mt19937_64 gen(20261126);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 300;
  gpu::PmfBatch x = random_laws(gen, P, 120);
  // zero the last entries of some laws (as a posterior's tail that underflowed), all of them in one
  std::vector<std::int64_t> want_hi(P);
  for (std::size_t i = 0; i < P; ++i) {
    const auto begin = static_cast<std::size_t>(x.offset[i]), m = x.length(i);
    const std::size_t zeros = i == 7 ? m : (u(gen) < 0.5 ? static_cast<std::size_t>(u(gen) * double(m)) : 0);
    for (std::size_t k = m - zeros; k < m; ++k) x.weights[begin + k] = 0.0;
    std::int64_t last = static_cast<std::int64_t>(m) - 1;
    while (last > 0 && !(x.weights[begin + static_cast<std::size_t>(last)] > 0.0)) --last;
    want_hi[i] = x.lo[i] + last;
  }
  for (const double q : {0.3, 0.97}) {
    INFO("q = " << q);
    const gpu::PmfBatch h = gpu::thin(gpu::Laws::from_host(x, Backend::cpu), q).to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("law " << i);
      REQUIRE(h.lo[i] == 0);
      REQUIRE(static_cast<std::int64_t>(h.length(i)) == want_hi[i] + 1);  // k = 0 .. the last value with mass
      if (i == 7 || x.log_scale[i] == -inf) REQUIRE(h.log_scale[i] == -inf);
    }
    if (test::skip_without_device()) continue;
    require_same_thinning(h, gpu::thin(gpu::Laws::from_host(x, Backend::cuda), q).to_host());
  }
}

TEST_CASE("thin on the device: every width of its kernels (registers for laws of up to 1024 values, in place past "
          "them) computes what the host does, with one probability per law",
          "[population][thinning][device]") {
  if (test::skip_without_device()) return;
  std::random_device fresh;
  const std::uint64_t seed = (std::uint64_t{fresh()} << 32) | fresh();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // the longest thinned law of a batch (lo + its last positive entry + 1) picks the kernel: 32 x 1, 2, 4, ..., 32
  // values in registers, or the accumulator in place past 1024
  for (const double longest : {20.0, 33.0, 100.0, 250.0, 500.0, 1000.0, 1024.0, 1300.0}) {
    INFO("laws of up to " << longest << " values after thinning");
    const std::size_t P = 1 + gen() % 200;
    const double lo_max = u(gen) * longest / 2;
    gpu::PmfBatch x = random_laws(gen, P, std::max(1.0, longest - lo_max), lo_max);
    std::vector<double> q(P);
    for (double& v : q) v = u(gen) < 0.1 ? 1e-3 : u(gen) < 0.1 ? 1.0 - 1e-3 : u(gen);
    const auto hq = Column<double>::host_values(q), dq = Column<double>::from_host(q, Backend::cuda);
    const gpu::PmfBatch h = gpu::thin(gpu::Laws::from_host(x, Backend::cpu), hq).to_host();
    require_same_thinning(h, gpu::thin(gpu::Laws::from_host(x, Backend::cuda), dq).to_host(), &x, &q);
  }
}

namespace {

/// The law of Binomial(X, q) for X's law (w on lo .. lo + m - 1, log-scale 0), by the defining sum in long double
/// logarithms: \f$r_k = \sum_n w_n \binom{n}{k} q^k (1-q)^{n-k}\f$, each term from lgammal (about 1e-16 of the
/// term for n up to a few thousand): an independent reference for Horner's rule. Unnormalized.
std::vector<long double> thinning_by_sum(const std::vector<double>& w, std::int64_t lo, double q, std::int64_t len) {
  std::vector<long double> r(static_cast<std::size_t>(len), 0.0L);
  const long double lq = std::log(static_cast<long double>(q)), lp = std::log1p(-static_cast<long double>(q));
  for (std::int64_t k = 0; k < len; ++k)
    for (std::size_t j = 0; j < w.size(); ++j) {
      const std::int64_t n = lo + static_cast<std::int64_t>(j);
      if (n < k || !(w[j] > 0.0)) continue;
      const long double nd = n, kd = k;
      long double l = std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1);
      l += (k > 0 ? kd * lq : 0.0L) + (n > k ? (nd - kd) * lp : 0.0L);
      r[static_cast<std::size_t>(k)] += static_cast<long double>(w[j]) * std::exp(l);
    }
  return r;
}

}  // namespace

TEST_CASE("thin is each law's thinning by the defining sum, for long laws, weights far from 1 and q near 0 and 1",
          "[population][thinning]") {
  std::mt19937_64 gen(20261129);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // laws of up to 2500 values: at q = 0.5 and k ~ 1200, q^k is below the smallest double, as the terms' factors
  // are, but the entries themselves are not; weights scaled by 1e-280 .. 1 (the log-scale holds the rest)
  for (int trial = 0; trial < 40; ++trial) {
    const std::int64_t m = 1 + static_cast<std::int64_t>(u(gen) * (trial < 4 ? 2500 : 300));
    const std::int64_t lo = static_cast<std::int64_t>(u(gen) * (trial % 3 == 0 ? 0 : 200));
    const double q = trial % 10 == 0 ? 1e-3 : trial % 10 == 1 ? 1.0 - 1e-3 : u(gen);
    const double factor = std::pow(10.0, -280.0 * u(gen));  // laws hold weights in [0, 1]
    std::vector<double> w(static_cast<std::size_t>(m));
    const double centre = u(gen) * double(m), width = 1.0 + u(gen) * double(m) / 2.0;
    for (std::int64_t k = 0; k < m; ++k) {
      const double z = (double(k) - centre) / width;
      w[static_cast<std::size_t>(k)] = factor * std::exp(std::max(-0.5 * z * z, -600.0));
    }
    gpu::PmfBatch x;
    x.weights = w;
    x.offset.push_back(m);
    x.lo.push_back(lo);
    x.log_scale.push_back(0.0);
    const gpu::PmfBatch h = gpu::thin(gpu::Laws::from_host(x, Backend::cpu), q).to_host();
    const std::int64_t len = lo + m;
    REQUIRE(static_cast<std::int64_t>(h.length(0)) == len);
    const std::vector<long double> want = thinning_by_sum(w, lo, q, len);
    const long double top = *std::max_element(want.begin(), want.end());
    INFO("trial " << trial << ": m = " << m << ", lo = " << lo << ", q = " << q << ", weights x " << factor);
    // the log-scale holds the largest entry exactly (weights rescaled to maximum 1)
    REQUIRE(std::abs(h.log_scale[0] - static_cast<double>(std::log(top))) <= 1e-12 * std::max(1.0, std::abs(h.log_scale[0])));
    // each entry within 2 (len + 1) ulps of itself (Horner's bound), 1e-12 relative here at most; entries below 1e-250
    // of the largest are subnormal products of the sum's terms and are left out
    const double tolerance = std::max(1e-13, 4.0 * static_cast<double>(len + 1) * 1.2e-16);
    for (std::int64_t k = 0; k < len; ++k) {
      const double want_k = static_cast<double>(want[static_cast<std::size_t>(k)] / top);
      const double got = h[0][static_cast<std::size_t>(k)];
      if (want_k < 1e-250) {
        REQUIRE(got < 1e-240);
        continue;
      }
      INFO("k = " << k << ": got " << got << ", want " << want_k);
      REQUIRE(std::abs(got - want_k) <= tolerance * want_k);
    }
  }
}

namespace {

/// x with each law's box widened by `pad` zeros before its first entry (its support unchanged: the box of a
/// difference X - M whose support is >= 0 starts below 0 this way).
gpu::PmfBatch padded_below(const gpu::PmfBatch& x, const std::vector<std::int64_t>& pad) {
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < x.size(); ++i) {
    b.weights.insert(b.weights.end(), static_cast<std::size_t>(pad[i]), 0.0);
    const auto w = x[i];
    b.weights.insert(b.weights.end(), w.begin(), w.end());
    b.offset.push_back(static_cast<std::int64_t>(b.weights.size()));
    b.lo.push_back(x.lo[i] - pad[i]);
    b.log_scale.push_back(x.log_scale[i]);
  }
  return b;
}

}  // namespace

TEST_CASE("thin and condition_on_thinning take counts whose boxes start below 0 with zeros there, and refuse positive "
          "weight below 0",
          "[population][thinning]") {
  std::mt19937_64 gen(20261127);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 200;
  const gpu::PmfBatch x = random_laws(gen, P, 80, 30);
  std::vector<std::int64_t> pad(P);
  for (std::size_t i = 0; i < P; ++i)  // most boxes start below 0, by up to 40 values
    pad[i] = u(gen) < 0.8 ? x.lo[i] + 1 + static_cast<std::int64_t>(u(gen) * 40) : 0;
  const gpu::PmfBatch padded = padded_below(x, pad);
  const std::vector<std::int64_t> v(P, 9);
  for (const Backend where : {Backend::cpu, Backend::cuda}) {
    if (where == Backend::cuda && test::skip_without_device()) continue;
    INFO((where == Backend::cpu ? "host" : "device"));
    for (const double q : {0.35, 0.9}) {
      INFO("q = " << q);
      // the thinning of a padded law is the thinning of the law (its support decides, not its box)
      const gpu::PmfBatch want = gpu::thin(gpu::Laws::from_host(x, Backend::cpu), q).to_host();
      const gpu::PmfBatch got = gpu::thin(gpu::Laws::from_host(padded, where), q).to_host();
      REQUIRE(got.offset == want.offset);
      REQUIRE(got.lo == want.lo);
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i << ", padded by " << pad[i]);
        if (want.log_scale[i] == -inf) {
          REQUIRE(got.log_scale[i] == -inf);
          continue;
        }
        REQUIRE(std::abs(got.log_scale[i] - want.log_scale[i]) <= 1e-12 * std::max(1.0, std::abs(want.log_scale[i])));
        for (std::size_t k = 0; k < want.length(i); ++k) {
          const double a = want[i][k], b = got[i][k];
          if (a < 1e-250 && b < 1e-250) continue;
          REQUIRE(std::abs(a - b) <= 1e-10 * a);
        }
      }
      // conditioning on an observed thinning: the same log-likelihoods, the padded posteriors the same on the support
      auto want_ll = Column<double>::host_values(std::vector<double>(P, 0.0));
      auto got_ll = Column<double>::from_host(std::vector<double>(P, 0.0), where);
      const gpu::PmfBatch wc = gpu::condition_on_thinning(gpu::Laws::from_host(x, Backend::cpu),
                                                         Column<std::int64_t>::host_values(v), q, want_ll)
                                   .to_host();
      const gpu::PmfBatch gc = gpu::condition_on_thinning(gpu::Laws::from_host(padded, where),
                                                         Column<std::int64_t>::from_host(v, where), q, got_ll)
                                   .to_host();
      const std::vector<double> wl = want_ll.to_host(), gl = got_ll.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i << ", padded by " << pad[i]);
        if (wl[i] == -inf) {
          REQUIRE(gl[i] == -inf);
          continue;
        }
        REQUIRE(std::abs(gl[i] - wl[i]) <= 1e-11 * std::max(1.0, std::abs(wl[i])));
        REQUIRE(gc.lo[i] == x.lo[i] - pad[i]);
        for (std::size_t k = 0; k < static_cast<std::size_t>(pad[i]); ++k) REQUIRE(gc[i][k] == 0.0);
        const double ws = std::exp(wc.log_scale[i]), gs = std::exp(gc.log_scale[i]);
        for (std::size_t k = 0; k < wc.length(i); ++k) {
          const double a = wc[i][k] * ws, b = gc[i][k + static_cast<std::size_t>(pad[i])] * gs;
          if (a < 1e-250 && b < 1e-250) continue;
          REQUIRE(std::abs(a - b) <= 1e-10 * a);
        }
      }
    }
    // positive weight below 0: refused, naming the particle
    gpu::PmfBatch bad = padded;
    const std::size_t i = 17;
    bad.lo[i] = -3;
    bad.weights[static_cast<std::size_t>(bad.offset[i])] = 0.5;
    REQUIRE_THROWS_AS(gpu::thin(gpu::Laws::from_host(bad, where), 0.5), domain_error);
    REQUIRE_THROWS_WITH(gpu::thin(gpu::Laws::from_host(bad, where), 0.5),
                        "tally::gpu::thin: particle 17's law has positive weight below 0: not a count");
  }
}

}  // namespace test_thinning_conditioning
