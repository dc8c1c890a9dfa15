// Test helpers of the batched joint laws: random laws, their JointPmf, and comparisons of measures and batches.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::test {

using gpu::JointLaws;

inline constexpr double inf = std::numeric_limits<double>::infinity();

/// P laws of the given rank: counts from lo in 0 .. 20 with 1 .. max_extent values an axis, weights e^{-50 u} with a
/// fifth of them zero (one weight kept positive), log scales in [-5, 5], and every 50th law a single point.
inline std::vector<JointLaws::Law> random_laws(std::mt19937_64& gen, std::size_t P, int rank, int max_extent) {
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

inline JointPmf to_joint(const JointLaws::Law& law) {
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
inline void require_same_measure(const JointLaws::Law& got, const JointPmf& want) {
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
inline void require_same_batch(const JointLaws& device, const JointLaws& host, double log_slack = 0.0) {
  REQUIRE(device.lo() == host.lo());
  REQUIRE(device.shape() == host.shape());
  const auto d = device.to_host(), h = host.to_host();
  for (std::size_t i = 0; i < h.size(); ++i) {
    INFO("law " << i << ": log scales host " << h[i].log_scale << ", device " << d[i].log_scale << "; "
                << h[i].weights.size() << " weights, host first " << h[i].weights[0] << ", device first "
                << d[i].weights[0] << ", box lo " << h[i].lo[0] << " shape " << h[i].shape[0]);
    if (h[i].log_scale == -inf) {
      REQUIRE(d[i].log_scale == -inf);
    } else {
      REQUIRE(std::abs(d[i].log_scale - h[i].log_scale) <= 1e-12 * std::max(1.0, std::abs(h[i].log_scale)) + log_slack);
    }
    for (std::size_t e = 0; e < h[i].weights.size(); ++e) {
      if (h[i].weights[e] < 1e-250 && d[i].weights[e] < 1e-250) continue;
      // entries formed as e^{l - M}: the device's and glibc's log, lgamma and exp differ by ulps of the terms of l,
      // so the tolerance is on the logarithm, relative to its size (1e-12 relative for entries near 1)
      const double lh = std::log(h[i].weights[e]), ld = std::log(d[i].weights[e]);
      if (!(std::abs(ld - lh) <= 1e-12 * std::max(1.0, std::abs(lh)) + log_slack))  // (no INFO per entry: slow)
        FAIL("entry " << e << ": host " << h[i].weights[e] << ", device " << d[i].weights[e]);
    }
  }
}


}  // namespace tally::test
