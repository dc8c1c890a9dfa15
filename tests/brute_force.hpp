// Brute-force enumeration in 50 digits, and random pmfs, for checking the algebra on small supports.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>

#include "reference.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sparse_pmf.hpp"

namespace tally::test {

/// A law as a map from value to 50-digit probability.
using Law = std::map<std::int64_t, big>;

inline Law law_of(const Pmf& d) {
  Law out;
  const big scale = boost::multiprecision::exp(big(d.log_scale()));
  for (Eigen::Index i = 0; i < d.size(); ++i)
    if (d.weights()[i] > 0) out[d.lo() + i] = big(d.weights()[i]) * scale;
  return out;
}

inline Law law_of(const SparsePmf& d) {
  Law out;
  const big scale = boost::multiprecision::exp(big(d.log_scale()));
  for (Eigen::Index i = 0; i < d.size(); ++i) out[d.points()[i]] = big(d.weights()[i]) * scale;
  return out;
}

/// The total of a law held as a map to 50-digit masses (Law here, the joint tests' JointLaw).
template <class Map>
big mass(const Map& l) {
  big s = 0;
  for (const auto& [k, p] : l) s += p;
  return s;
}

template <class Map>
Map normalized(Map l) {
  const big s = mass(l);
  for (auto& [k, p] : l) p /= s;
  return l;
}

/// A random pmf on [lo, lo + n) with weights spread over `decades` orders of magnitude, and some zeros inside.
inline Pmf random_pmf(std::mt19937_64& gen, std::int64_t lo, Eigen::Index n, double decades = 3.0) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::VectorXd w(n);
  for (auto& x : w) x = u(gen) < 0.1 ? 0.0 : std::pow(10.0, -decades * u(gen));
  w[0] = w[n - 1] = 0.5;
  return Pmf(lo, w).normalized();
}

/// Every value of `got` matches `want` to `rel` relative error, and both have the same support.
template <class D>
void require_law(const D& got, const Law& want, double rel = 1e-13) {
  const Law g = law_of(got);
  for (const auto& [k, p] : want) {
    if (p == 0) continue;
    INFO("value " << k);
    REQUIRE(g.count(k) == 1);
    REQUIRE(relative_error(static_cast<double>(g.at(k)), p) <= rel);
  }
  for (const auto& [k, p] : g) {
    INFO("value " << k << " is not in the reference support");
    REQUIRE(want.count(k) == 1);
  }
}

}  // namespace tally::test
