// Test helpers of the batched joint laws: random laws, tables and observations, their JointPmf, and comparisons of
// measures, conditionings, draws and batches.
#pragma once

#include <catch2/catch.hpp>
#include <Eigen/Core>
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

/// A rows x cols row-stochastic table with entries in [0.05, 1) before normalizing.
inline Eigen::MatrixXd random_transition(std::mt19937_64& gen, std::int64_t rows, std::int64_t cols) {
  std::uniform_real_distribution<double> u(0.05, 1.0);
  Eigen::MatrixXd t(rows, cols);
  for (Eigen::Index i = 0; i < t.rows(); ++i) {
    for (Eigen::Index j = 0; j < t.cols(); ++j) t(i, j) = u(gen);
    t.row(i) /= t.row(i).sum();
  }
  return t;
}

/// A matrix's entries row by row (a Table's layout).
inline std::vector<double> row_major(const Eigen::MatrixXd& m) {
  std::vector<double> v;
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) v.push_back(m(i, j));
  return v;
}

/// Laws whose axis 0 is a state in {0, 1} (a selected emission's selector), the other axes counts.
inline std::vector<JointLaws::Law> state_laws(std::mt19937_64& gen, std::size_t P, int rank, int max_extent) {
  auto laws = random_laws(gen, P, rank, max_extent);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& law : laws) {
    const std::int64_t old = law.shape[0], now = std::min<std::int64_t>(old, 2);
    law.lo[0] = now == 2 ? 0 : static_cast<std::int64_t>(u(gen) * 2);
    law.shape[0] = now;
    law.weights.resize(law.weights.size() / static_cast<std::size_t>(old) * static_cast<std::size_t>(now));
    law.weights[static_cast<std::size_t>(u(gen) * double(law.weights.size()))] = 0.5;
  }
  return laws;
}

/// The observation's checks: -inf where the JointPmf's is impossible, else the log-likelihood and the posterior.
inline void require_same_conditioning(const std::vector<JointLaws::Law>& posterior, const std::vector<double>& ll,
                               std::size_t i, const JointConditioned& want) {
  if (!want.posterior) {
    REQUIRE(ll[i] == -inf);
    return;
  }
  REQUIRE(ll[i] - 0.5 == Approx(want.log_likelihood).epsilon(1e-11));
  require_same_measure(posterior[i], *want.posterior);
}

/// The sampled tuple is a point of positive weight where the target u * total falls in the row-major cdf.
inline void require_inverse_cdf(const JointLaws::Law& law, double u, const std::int64_t* x) {
  const std::size_t k = law.lo.size();
  std::size_t at = 0;
  for (std::size_t a = 0; a < k; ++a) {
    REQUIRE(x[a] >= law.lo[a]);
    REQUIRE(x[a] < law.lo[a] + law.shape[a]);
    at = at * static_cast<std::size_t>(law.shape[a]) + static_cast<std::size_t>(x[a] - law.lo[a]);
  }
  REQUIRE(law.weights[at] > 0.0);
  long double before = 0, total = 0;
  for (std::size_t e = 0; e < law.weights.size(); ++e) {
    total += law.weights[e];
    if (e < at) before += law.weights[e];
  }
  const long double target = static_cast<long double>(u) * total;
  CHECK(before <= target * (1 + 1e-12L) + 1e-300L);
  CHECK(before + law.weights[at] >= target * (1 - 1e-12L));
}

/// Observations for axis values: mostly likely ones, sometimes impossible ones.
inline std::vector<std::int64_t> observations(std::mt19937_64& gen, std::size_t P, std::int64_t typical,
                                              std::int64_t bad) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<std::int64_t> v(P);
  for (auto& e : v) e = u(gen) < 0.9 ? static_cast<std::int64_t>(u(gen) * double(typical + 1)) : bad;
  return v;
}

}  // namespace tally::test
