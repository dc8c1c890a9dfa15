// Test populations of log-weights for the resamplers: spread, concentrated, dead tiles, heavy tiles.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace tally::test {

/// Log-weights of P particles for the resamplers' tests. kind 0: U[-40, 0], every 11th -inf; 1: U[-700, 0] (300
/// decades); 2: one at 0, the rest -40; 3: one at 0, the rest -inf; 4: the first half -inf; 5: all but 3 -inf;
/// 6: 0 or -inf at random (every sum exact); 7: tiles 1 to 3 all -inf; 8: one live particle every 20000 (tiles
/// owning many times T positions: the spread pass); 9: one live particle per tile, in every other tile (about 2 T
/// positions each: a block's threads loop over several rounds).
inline std::vector<double> population(std::mt19937_64& gen, std::size_t p, int kind) {
  constexpr std::size_t t = 4096;
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::uniform_real_distribution<double> u(-40.0, 0.0);
  std::vector<double> l(p);
  for (std::size_t i = 0; i < p; ++i) {
    switch (kind) {
      case 0: l[i] = i % 11 == 1 ? -inf : u(gen); break;
      case 1: l[i] = 700.0 / 40.0 * u(gen); break;
      case 2: l[i] = -40.0; break;
      case 4: l[i] = i < p / 2 ? -inf : u(gen); break;
      case 6: l[i] = gen() % 2 == 0 ? 0.0 : -inf; break;
      case 7: l[i] = i >= t && i < 4 * t ? -inf : u(gen); break;
      case 8: l[i] = i % 20000 == 19 ? u(gen) : -inf; break;
      case 9: l[i] = i % t == 1000 && i / t % 2 == 0 ? u(gen) : -inf; break;
      default: l[i] = -inf;
    }
  }
  if (kind == 2 || kind == 3) l[gen() % p] = 0.0;
  if (kind == 5)
    for (int k = 0; k < 3; ++k) l[gen() % p] = u(gen);
  if (std::all_of(l.begin(), l.end(), [](double x) { return x == -inf; })) l[gen() % p] = 0.0;
  return l;
}

}  // namespace tally::test
