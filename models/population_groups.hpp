// The population model's filter over many parameter sets at once: one group per set of (phi, p).
#pragma once

#include <cstdint>
#include <vector>

#include "population_model.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::models::population {

/// Each set's log-likelihood at its (phi_k, p_k), from one graph of a group per set and `particles` particles a
/// group: by delayed sampling (nothing drawn: exact in every particle) or by the bootstrap filter (N drawn every
/// season, each group resampled within itself every season). The log-evidence is copied back to the host (every
/// season for the bootstrap filter).
inline std::vector<double> group_log_likelihoods(const Model& m, const std::vector<std::int64_t>& y,
                                                 const std::vector<double>& phi, const std::vector<double>& p,
                                                 std::size_t particles, bool bootstrap, std::uint64_t seed,
                                                 runtime::Device device) {
  const auto thinnings = [](const std::vector<double>& q) {
    std::vector<Thinning> out;
    for (const double v : q) out.emplace_back(v);
    return out;
  };
  runtime::Graph g(runtime::Groups{phi.size(), particles}, seed, device);
  const auto survive = thinnings(phi), detect = thinnings(p);
  runtime::Variable n = g.assume(Poisson(m.lambda0));
  if (bootstrap) g.realize(n);
  std::vector<double> out(phi.size(), 0.0);
  for (std::size_t t = 0; t < y.size(); ++t) {
    if (t > 0) {
      const runtime::Variable s = g.assume(n, survive), i = g.assume(Poisson(m.iota));
      if (bootstrap) {
        g.realize(s);
        g.realize(i);
      }
      n = g.add(s, i);
    }
    g.observe(g.assume(n, detect), y[t]);
    if (bootstrap) {
      const auto step = g.resample_groups(1.0).log_mean_weight.to_host();
      for (std::size_t k = 0; k < out.size(); ++k) out[k] += step[k];
    }
  }
  // delayed sampling: every particle of a group holds the exact law, so the group's mean weight is its likelihood
  return bootstrap ? out : g.resample_groups(0.0).log_mean_weight.to_host();
}

}  // namespace tally::models::population
