// Batched joint laws (tally::gpu::JointLaws): the CPU loops against the distributions' JointPmf operations (split,
// conditioning on a thinning child, summing out), and the device against the CPU loops, on fresh random laws.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::JointLaws;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// P laws of the given rank: counts from lo in 0 .. 20 with 1 .. max_extent values an axis, weights e^{-50 u} with a
/// fifth of them zero (one weight kept positive), log scales in [-5, 5], and every 50th law a single point.
std::vector<JointLaws::Law> random_laws(std::mt19937_64& gen, std::size_t P, int rank, int max_extent) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<JointLaws::Law> out(P);
  for (std::size_t i = 0; i < P; ++i) {
    JointLaws::Law& law = out[i];
    std::size_t size = 1;
    for (int a = 0; a < rank; ++a) {
      law.lo.push_back(static_cast<std::int64_t>(u(gen) * 21));
      law.shape.push_back(i % 50 == 0 ? 1 : 1 + static_cast<std::int64_t>(u(gen) * max_extent));
      size *= static_cast<std::size_t>(law.shape.back());
    }
    for (std::size_t e = 0; e < size; ++e) law.weights.push_back(u(gen) < 0.2 ? 0.0 : std::exp(-50.0 * u(gen)));
    law.weights[static_cast<std::size_t>(u(gen) * double(size))] = 0.5;
    law.log_scale = 10.0 * u(gen) - 5.0;
  }
  return out;
}

JointPmf to_joint(const JointLaws::Law& law) {
  return JointPmf(law.lo, law.shape, Eigen::Map<const Eigen::VectorXd>(law.weights.data(), Eigen::Index(law.weights.size())),
                  law.log_scale);
}

/// log mu(x) of a batch law at every point of its box, with the box's coordinates.
template <class F>
void each_point(const JointLaws::Law& law, F f) {
  const std::size_t k = law.lo.size();
  Coordinates x(k);
  for (std::size_t e = 0; e < law.weights.size(); ++e) {
    std::size_t rest = e;
    for (std::size_t a = k; a-- > 0;) {
      x[a] = law.lo[a] + static_cast<std::int64_t>(rest % static_cast<std::size_t>(law.shape[a]));
      rest /= static_cast<std::size_t>(law.shape[a]);
    }
    f(x, law.weights[e] > 0.0 ? std::log(law.weights[e]) + law.log_scale : -inf);
  }
}

/// The batch law and the JointPmf are the same measure: at every point of the batch law's box (which holds the
/// JointPmf's trimmed box), the same log mass within 1e-11 relative, or both far below the largest (underflow).
void require_same_measure(const JointLaws::Law& got, const JointPmf& want) {
  double top = -inf, covered = 0.0;
  each_point(got, [&](const Coordinates&, double l) { top = std::max(top, l); });
  each_point(got, [&](const Coordinates& x, double l) {
    const double w = log_pdf(want, x);
    if (w > -inf) covered += std::exp(w - want.log_mass());
    if (l < top - 600 && w < top - 600) return;
    INFO("at x_0 = " << x[0] << ": batch " << l << ", JointPmf " << w);
    REQUIRE(std::abs(l - w) <= 1e-11 * std::max(1.0, std::abs(w)));
  });
  REQUIRE(covered == Approx(1.0).epsilon(1e-12));
}

/// The device batch equals the host one: boxes, log scales and weights (relative 1e-12 where above 1e-250).
void require_same_batch(const JointLaws& device, const JointLaws& host) {
  REQUIRE(device.lo() == host.lo());
  REQUIRE(device.shape() == host.shape());
  const auto d = device.to_host(), h = host.to_host();
  for (std::size_t i = 0; i < h.size(); ++i) {
    INFO("law " << i);
    if (h[i].log_scale == -inf) {
      REQUIRE(d[i].log_scale == -inf);
    } else {
      REQUIRE(std::abs(d[i].log_scale - h[i].log_scale) <= 1e-12 * std::max(1.0, std::abs(h[i].log_scale)));
    }
    for (std::size_t e = 0; e < h[i].weights.size(); ++e) {
      if (h[i].weights[e] < 1e-250 && d[i].weights[e] < 1e-250) continue;
      REQUIRE(std::abs(d[i].weights[e] - h[i].weights[e]) <= 1e-12 * h[i].weights[e]);
    }
  }
}

}  // namespace

TEST_CASE("batched joint laws: the CPU loops are the distributions' joint operations", "[gpu][joint]") {
  std::mt19937_64 gen(20261125);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 120;
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 5 : 9);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const double q = axis == 1 ? 1e-3 : 0.35;
      const auto split = gpu::joint_split(x, axis, q).to_host();
      std::vector<std::int64_t> v(P);
      for (std::size_t i = 0; i < P; ++i)  // mostly possible counts, sometimes one above every value (impossible)
        v[i] = u(gen) < 0.9 ? static_cast<std::int64_t>(q * double(laws[i].lo[std::size_t(axis)] + 5))
                            : laws[i].lo[std::size_t(axis)] + laws[i].shape[std::size_t(axis)];
      auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
      const auto posterior = gpu::joint_condition_on_thinning(x, axis, q, Column<std::int64_t>::host_values(v), ll)
                                 .to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf d = to_joint(laws[i]);
        require_same_measure(split[i], tally::split(d, axis, q));
        const JointConditioned c = condition(d, axis, Thinning(q), v[i]);
        if (!c.posterior) {
          REQUIRE(ll.host()[i] == -inf);
          continue;
        }
        REQUIRE(ll.host()[i] - 0.5 == Approx(c.log_likelihood).epsilon(1e-11));
        require_same_measure(posterior[i], *c.posterior);
      }
      if (rank >= 2) {
        const auto summed = gpu::joint_sum_out(x, axis).to_host();
        for (std::size_t i = 0; i < P; ++i) require_same_measure(summed[i], marginalize_out(to_joint(laws[i]), axis));
      }
    }
  }
}

TEST_CASE("batched joint laws: bad arguments are named errors", "[gpu][joint]") {
  std::mt19937_64 gen(7);
  const auto laws = random_laws(gen, 4, 2, 4);
  const JointLaws x = JointLaws::from_host(2, laws, Backend::cpu);
  auto ll = Column<double>::host_values(std::vector<double>(4, 0.0));
  const auto v = Column<std::int64_t>::host_values(std::vector<std::int64_t>(4, 1));
  REQUIRE_THROWS_AS(gpu::joint_split(x, 2, 0.5), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_split(x, 0, 1.5), domain_error);
  REQUIRE_THROWS_AS(gpu::joint_sum_out(JointLaws::from_host(1, random_laws(gen, 2, 1, 3), Backend::cpu), 0),
                    shape_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_thinning(x, 0, 0.5, Column<std::int64_t>::host_values({1}), ll),
                    shape_error);
  auto negative = laws;
  negative[1].lo[0] = -3;
  REQUIRE_THROWS_AS(gpu::joint_split(JointLaws::from_host(2, negative, Backend::cpu), 0, 0.5), domain_error);
  REQUIRE_THROWS_AS(JointLaws::from_host(3, laws, Backend::cpu), shape_error);
  auto nan = laws;
  nan[0].weights[0] = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_AS(JointLaws::from_host(2, nan, Backend::cpu), domain_error);
  REQUIRE(gpu::joint_split(x, 0, 0.5).rank() == 3);  // the batch is still usable
}

TEST_CASE("batched joint laws: the device computes what the CPU loops do", "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261126);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 3001;
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 1 ? 300 : rank == 2 ? 40 : 12);
    const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu), d = JointLaws::from_host(rank, laws, Backend::cuda);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const double q = axis == 0 ? 0.6 : 0.02;
      require_same_batch(gpu::joint_split(d, axis, q), gpu::joint_split(h, axis, q));
      std::vector<std::int64_t> v(P);
      for (std::size_t i = 0; i < P; ++i)
        v[i] = u(gen) < 0.9 ? static_cast<std::int64_t>(q * double(laws[i].lo[std::size_t(axis)] + 5))
                            : laws[i].lo[std::size_t(axis)] + laws[i].shape[std::size_t(axis)];
      auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
      auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
      const JointLaws hp = gpu::joint_condition_on_thinning(h, axis, q, Column<std::int64_t>::host_values(v), hl);
      const JointLaws dp =
          gpu::joint_condition_on_thinning(d, axis, q, Column<std::int64_t>::from_host(v, Backend::cuda), dl);
      require_same_batch(dp, hp);
      const std::vector<double> got = dl.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        if (hl.host()[i] == -inf) {
          REQUIRE(got[i] == -inf);
          continue;
        }
        REQUIRE(std::abs(got[i] - hl.host()[i]) <= 1e-12 * std::max(1.0, std::abs(hl.host()[i])));
      }
      if (rank >= 2) require_same_batch(gpu::joint_sum_out(d, axis), gpu::joint_sum_out(h, axis));
    }
  }
}
