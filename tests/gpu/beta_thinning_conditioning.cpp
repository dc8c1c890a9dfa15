// Count laws conditioned on an observed Binomial(X, rho) with rho ~ Beta(a, b) integrated out
// (gpu::condition_on_beta_thinning): the CPU reference against an enumeration in long double (lgamma), law by law,
// and the device against the CPU reference on fresh random laws and parameters.
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
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_beta_thinning_conditioning {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// P count laws from lo in 0 .. 400 with 1 .. 300 values, 2 % already without mass.
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t P) { return test::random_count_laws(gen, P, 400, 300, 0.02); }

/// Beta parameters from 0.05 to 500, log-uniform; observations around each law's values, some below (impossible
/// or possible), some above every value (impossible).
struct Inputs {
  std::vector<double> a, b;
  std::vector<std::int64_t> v;
};
Inputs random_inputs(std::mt19937_64& gen, const gpu::PmfBatch& x) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto log_uniform = [&](double lo, double hi) { return std::exp(std::log(lo) + u(gen) * std::log(hi / lo)); };
  Inputs in;
  for (std::size_t i = 0; i < x.size(); ++i) {
    in.a.push_back(log_uniform(0.05, 500.0));
    in.b.push_back(log_uniform(0.05, 500.0));
    const auto hi = x.lo[i] + static_cast<std::int64_t>(x.length(i)) - 1;
    in.v.push_back(u(gen) < 0.05 ? hi + 1 + static_cast<std::int64_t>(gen() % 5)
                                 : static_cast<std::int64_t>(u(gen) * double(hi + 1)));
  }
  return in;
}

/// Particle i's probability of value k: w_{i,k} e^{log_scale_i}.
double probability(const gpu::PmfBatch& b, std::size_t i, std::int64_t k) {
  const std::int64_t j = k - b.lo[i];
  if (j < 0 || j >= static_cast<std::int64_t>(b.length(i))) return 0.0;
  return b[i][static_cast<std::size_t>(j)] * std::exp(b.log_scale[i]);
}

}  // namespace

TEST_CASE("A count conditioned on its beta-binomial thinning: the CPU reference is a long-double enumeration",
          "[gpu][conjugate][thinning]") {
  std::mt19937_64 gen(Catch::rngSeed() + 71);
  const std::size_t P = 300;
  const gpu::PmfBatch x = random_laws(gen, P);
  const Inputs in = random_inputs(gen, x);
  auto ll = Column<double>::host_values(std::vector<double>(P, 0.25));
  const gpu::PmfBatch post =
      gpu::condition_on_beta_thinning(gpu::Laws::from_host(x, Backend::cpu), Column<std::int64_t>::host_values(in.v),
                                      Column<double>::host_values(in.a), Column<double>::host_values(in.b), ll)
          .to_host();
  std::size_t possible = 0;
  for (std::size_t i = 0; i < P; ++i) {
    INFO("law " << i << ", a = " << in.a[i] << ", b = " << in.b[i] << ", v = " << in.v[i]);
    REQUIRE(post.lo[i] == x.lo[i]);
    REQUIRE(post.length(i) == x.length(i));
    if (x.log_scale[i] == -inf) {  // already without mass: stays so
      REQUIRE(ll.host()[i] == -inf);
      continue;
    }
    // log w_k + log BetaBinomial(v; k, a, b) by lgamma in long double, normalized by their log-sum-exp
    const long double a = in.a[i], b = in.b[i], v = static_cast<long double>(in.v[i]);
    const auto lbeta = [](long double p, long double q) { return std::lgamma(p) + std::lgamma(q) - std::lgamma(p + q); };
    std::vector<long double> terms(x.length(i), -HUGE_VALL);
    long double top = -HUGE_VALL;
    for (std::size_t j = 0; j < x.length(i); ++j) {
      const long double k = static_cast<long double>(x.lo[i] + static_cast<std::int64_t>(j));
      if (x[i][j] > 0.0 && k >= v)
        terms[j] = std::log(static_cast<long double>(x[i][j])) + std::lgamma(k + 1) - std::lgamma(v + 1) -
                   std::lgamma(k - v + 1) + lbeta(a + v, b + k - v) - lbeta(a, b);
      top = std::max(top, terms[j]);
    }
    if (top == -HUGE_VALL) {  // impossible: -inf, the law unchanged
      REQUIRE(ll.host()[i] == -inf);
      for (std::size_t k = 0; k < x.length(i); ++k) REQUIRE(post[i][k] == x[i][k]);
      continue;
    }
    ++possible;
    long double total = 0;
    for (const long double t : terms) total += std::exp(t - top);
    const long double log_l = static_cast<long double>(x.log_scale[i]) + top + std::log(total);
    REQUIRE(ll.host()[i] - 0.25 == Approx(static_cast<double>(log_l)).epsilon(1e-12).margin(1e-11));
    for (std::size_t j = 0; j < x.length(i); ++j) {
      const double e = static_cast<double>(std::exp(terms[j] - top) / total);
      INFO("value " << x.lo[i] + static_cast<std::int64_t>(j) << ": " << probability(post, i, x.lo[i] + std::int64_t(j))
                    << " against " << e);
      REQUIRE(std::abs(probability(post, i, x.lo[i] + std::int64_t(j)) - e) <= 1e-10 * e + 1e-300);
    }
  }
  CHECK(possible > P / 2);
  // shapes and parameters
  auto short_ll = Column<double>::host_values(std::vector<double>(P - 1, 0.0));
  REQUIRE_THROWS_AS(gpu::condition_on_beta_thinning(gpu::Laws::from_host(x, Backend::cpu),
                                                    Column<std::int64_t>::host_values(in.v),
                                                    Column<double>::host_values(in.a),
                                                    Column<double>::host_values(in.b), short_ll),
                    shape_error);
  auto bad = in.b;
  bad[7] = -1.0;
  REQUIRE_THROWS_AS(gpu::condition_on_beta_thinning(gpu::Laws::from_host(x, Backend::cpu),
                                                    Column<std::int64_t>::host_values(in.v),
                                                    Column<double>::host_values(in.a),
                                                    Column<double>::host_values(bad), ll),
                    domain_error);
}

TEST_CASE("device: a count conditioned on its beta-binomial thinning agrees with the CPU reference",
          "[gpu][conjugate][thinning][device]") {
  if (tally::test::skip_without_device()) return;
  std::mt19937_64 gen(Catch::rngSeed() + 72);
  for (const std::size_t P : {std::size_t{1}, std::size_t{37}, std::size_t{5000}, std::size_t{70000}}) {
    INFO(P << " laws");
    const gpu::PmfBatch x = random_laws(gen, P);
    const Inputs in = random_inputs(gen, x);
    auto host_ll = Column<double>::host_values(std::vector<double>(P, 0.5));
    auto device_ll = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
    const gpu::PmfBatch h =
        gpu::condition_on_beta_thinning(gpu::Laws::from_host(x, Backend::cpu), Column<std::int64_t>::host_values(in.v),
                                        Column<double>::host_values(in.a), Column<double>::host_values(in.b), host_ll)
            .to_host();
    const gpu::PmfBatch d =
        gpu::condition_on_beta_thinning(
            gpu::Laws::from_host(x, Backend::cuda), Column<std::int64_t>::from_host(in.v, Backend::cuda),
            Column<double>::from_host(in.a, Backend::cuda), Column<double>::from_host(in.b, Backend::cuda), device_ll)
            .to_host();
    const auto dl = device_ll.to_host();
    std::size_t bad = 0;
    for (std::size_t i = 0; i < P; ++i) {
      bool ok = d.lo[i] == h.lo[i] && d.length(i) == h.length(i);
      if (std::isinf(host_ll.host()[i])) ok = ok && dl[i] == host_ll.host()[i];
      else ok = ok && std::abs(dl[i] - host_ll.host()[i]) <= 1e-12 * std::max(1.0, std::abs(host_ll.host()[i]));
      for (std::size_t k = 0; ok && k < h.length(i); ++k)
        ok = std::abs(probability(d, i, h.lo[i] + std::int64_t(k)) - probability(h, i, h.lo[i] + std::int64_t(k))) <=
             1e-11 * probability(h, i, h.lo[i] + std::int64_t(k)) + 1e-290;
      if (!ok && ++bad <= 3) WARN("law " << i << ": device " << dl[i] << ", host " << host_ll.host()[i]);
    }
    CHECK(bad == 0);
  }
  // a particle with bad parameters gets NaN on the device (nothing is read back), where the host throws
  const gpu::PmfBatch x = random_laws(gen, 4);
  Inputs in = random_inputs(gen, x);
  in.a[2] = -1.0;
  in.v[2] = x.lo[2];
  auto ll = Column<double>::from_host(std::vector<double>(4, 0.0), Backend::cuda);
  (void)gpu::condition_on_beta_thinning(gpu::Laws::from_host(x, Backend::cuda),
                                        Column<std::int64_t>::from_host(in.v, Backend::cuda),
                                        Column<double>::from_host(in.a, Backend::cuda),
                                        Column<double>::from_host(in.b, Backend::cuda), ll);
  if (x.log_scale[2] != -inf) CHECK(std::isnan(ll.to_host()[2]));
}

}  // namespace test_beta_thinning_conditioning
