// The population model shared by the examples: its parameters and its synthetic data.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tally/distributions/binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sample.hpp"

namespace tally::models::population {

/// N_0 ~ Poisson(lambda0); S_t ~ Binomial(N_{t-1}, phi); I_t ~ Poisson(iota); N_t = S_t + I_t;
/// y_t ~ Binomial(N_t, p), for t = 0 .. T-1 (y_0 counts N_0).
struct Model {
  double lambda0 = 50, phi = 0.8, iota = 10, p = 0.6;
};

/// Simulates the model forward from RandomStream(seed, 0); returns y_0 .. y_{T-1} and the true N_t.
inline std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> simulate(const Model& m, std::size_t T,
                                                                                std::uint64_t seed) {
  RandomStream rng(seed, 0);
  std::vector<std::int64_t> y, N;
  std::int64_t n = sample(to_pmf(Poisson(m.lambda0)), rng);
  for (std::size_t t = 0; t < T; ++t) {
    if (t > 0) n = sample(to_pmf(Binomial(n, m.phi)), rng) + sample(to_pmf(Poisson(m.iota)), rng);
    N.push_back(n);
    y.push_back(sample(to_pmf(Binomial(n, m.p)), rng));
  }
  return {y, N};
}

}  // namespace tally::models::population
