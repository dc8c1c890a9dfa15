// Brute-force joint enumeration in 50 digits for the joint-law tests: tables as maps, random joints, comparisons.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "brute_force.hpp"
#include "reference.hpp"
#include "tally/distributions/joint.hpp"

namespace tally::test {

/// A joint law as a map from coordinates to 50-digit mass.
using JointLaw = std::map<Coordinates, big>;

inline JointLaw joint_law_of(const JointPmf& d) {
  JointLaw out;
  const big scale = boost::multiprecision::exp(big(d.log_scale()));
  Coordinates x(d.lo());
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    std::int64_t rest = i;
    for (int a = d.rank(); a-- > 0;) {
      x[static_cast<std::size_t>(a)] = d.lo(a) + rest % d.extent(a);
      rest /= d.extent(a);
    }
    if (d.weights()[i] > 0) out[x] = big(d.weights()[i]) * scale;
  }
  return out;
}

inline big binomial_big(std::int64_t n, std::int64_t k, double q) {
  if (k < 0 || k > n) return 0;
  if (q == 0.0) return k == 0 ? 1 : 0;
  if (q == 1.0) return k == n ? 1 : 0;
  return boost::multiprecision::exp(log_binomial(n, k, big(q)));
}

inline big poisson_big(std::int64_t k, double rate) {
  if (k < 0) return 0;
  if (rate == 0.0) return k == 0 ? 1 : 0;
  return boost::multiprecision::exp(log_poisson(k, big(rate)));
}

/// A dependent (not a product) joint law on the box lo + [0, shape): weights spread over `decades` orders of
/// magnitude (down to 1e-250 with decades = 250), about one in ten zero, under a log scale.
inline JointPmf random_joint(std::mt19937_64& gen, Coordinates lo, Coordinates shape, double decades = 6.0,
                             double log_scale = 0.0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::int64_t n = 1;
  for (std::int64_t e : shape) n *= e;
  Eigen::VectorXd w(n);
  for (auto& x : w) x = u(gen) < 0.1 ? 0.0 : std::pow(10.0, -decades * u(gen));
  w[0] = w[n - 1] = 1.0;  // the box's corners, so that the box is not trimmed
  return JointPmf(std::move(lo), std::move(shape), w, log_scale);
}

/// |a - b| / b in 50 digits (no underflow for values far below 1e-308).
inline double relative_error_big(const big& a, const big& b) {
  if (b == 0) return a == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(abs((a - b) / b));
}

/// A random pmf as test::random_pmf, with one entry (the second) equal to `tiny` times the largest.
inline Pmf tiny_pmf(std::mt19937_64& gen, std::int64_t lo, Eigen::Index n, double tiny, double decades = 6.0) {
  Eigen::VectorXd w = random_pmf(gen, lo, n, decades).weights();
  w[1] = tiny * w.maxCoeff();
  return Pmf(lo, w);
}

/// A Pmf against a 1-D law as require_law does, but compared in 50 digits (scales far below 1e-308 allowed).
inline void require_pmf(const Pmf& got, const Law& want, double rel = 1e-12) {
  const Law g = law_of(got);
  for (const auto& [k, p] : want) {
    if (p == 0) continue;
    CAPTURE(k);
    REQUIRE(g.count(k) == 1);
    const double err = relative_error_big(g.at(k), p);
    INFO("relative error " << std::scientific << err);
    REQUIRE(err <= rel);
  }
  for (const auto& [k, p] : g) {
    CAPTURE(k);
    REQUIRE(want.count(k) == 1);
  }
}

/// Every entry of `want` above floor times its largest matches `got` to `rel`; every entry of got is in want.
inline void require_joint(const JointPmf& got, const JointLaw& want, double rel = 1e-12, double floor = 1e-290) {
  const JointLaw g = joint_law_of(got);
  big top = 0;
  for (const auto& [k, p] : want) top = p > top ? p : top;
  std::size_t checked = 0;
  for (const auto& [k, p] : want) {
    if (p == 0 || p < top * floor) continue;
    ++checked;
    CAPTURE(k);
    INFO("entry " << std::scientific << static_cast<double>(p / top) << " of the largest");
    REQUIRE(g.count(k) == 1);
    const double err = relative_error_big(g.at(k), p);
    INFO("relative error " << std::scientific << err);
    REQUIRE(err <= rel);
  }
  REQUIRE(checked > 0);
  for (const auto& [k, p] : g) {
    CAPTURE(k);
    REQUIRE(want.count(k) == 1);
    REQUIRE(want.at(k) > 0);
  }
}

/// |log L - log want| within rel of 1 (as a relative error of the likelihood).
inline void require_log_likelihood(double got, const big& want, double rel = 1e-12) {
  REQUIRE(want > 0);
  REQUIRE(relative_error_log(got, boost::multiprecision::log(want)) <= rel);
}

/// The smallest positive entry of a law relative to its largest (to show that tiny entries were checked).
inline double smallest_ratio(const JointLaw& l) {
  big top = 0, bottom = 0;
  for (const auto& [k, p] : l) {
    if (p > top) top = p;
    if (p > 0 && (bottom == 0 || p < bottom)) bottom = p;
  }
  return static_cast<double>(bottom / top);
}

}  // namespace tally::test
