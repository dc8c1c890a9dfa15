// Random pmf weights of several shapes, for tests that draw from laws or copy them (scans, indexed laws).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace tally::test {

/// Random weights in [0, 1]: kind 0 sparse over 20 decades (30 % zeros), 1 dense, 2 leading half zero, 3 trailing
/// half zero, 4 one positive weight, 5 all zero.
inline std::vector<double> random_pmf(std::mt19937_64& gen, std::size_t length, int kind) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> w(length);
  for (auto& x : w) x = kind == 0 ? (u(gen) < 0.3 ? 0.0 : std::pow(10.0, -20.0 * u(gen))) : 1.0 - u(gen);
  if (kind == 2) std::fill(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(length / 2), 0.0);
  if (kind == 3) std::fill(w.begin() + static_cast<std::ptrdiff_t>((length + 1) / 2), w.end(), 0.0);
  if (kind == 4) {
    std::fill(w.begin(), w.end(), 0.0);
    w[gen() % length] = 0.5;
  }
  if (kind == 5) std::fill(w.begin(), w.end(), 0.0);
  return w;
}

}  // namespace tally::test
