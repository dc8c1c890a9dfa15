// The three programs whose variables tally keeps in joint laws (coupled populations with migration, an HMM with
// unknown count rates, a Bayesian network with a diamond), written once for the examples and their tests.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

#include "tally/distributions/bernoulli.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/geometric.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::models::joint {

using tally::runtime::Graph;
using tally::runtime::Observation;
using tally::runtime::Variable;

// ---- (a) two populations coupled by migration ----------------------------------------------------------------
/// A_0 ~ Poisson(lambda_a), B_0 ~ Poisson(lambda_b); each later season a share M ~ Binomial(A, m) of A migrates to
/// B, then both survive with probability s and receive immigrants:
///   A' = Binomial(A - M, s) + Poisson(iota_a),   B' = Binomial(B + M, s) + Poisson(iota_b);
/// each season both are counted with detection probability p: ya_t ~ Binomial(A_t, p), yb_t ~ Binomial(B_t, p).
/// M is used twice (it leaves A and joins B): A and B are coupled from the first migration on.
struct Migration {
  double lambda_a = 30, lambda_b = 12, m = 0.25, s = 0.8, iota_a = 5, iota_b = 3, p = 0.6;
  std::vector<std::int64_t> ya{19, 17, 15, 16, 14, 13}, yb{7, 10, 12, 12, 13, 12};
  /// Migrants counted as they leave A, each seen with probability c: counted[t - 1] ~ Binomial(M_t, c) for seasons
  /// t >= 1 (empty: not counted). M then has two children that go on (B's growth and the count) besides A's loss.
  double c = 0.5;
  std::vector<std::int64_t> counted;
};

/// The populations after the last season, and each season's two observations.
struct MigrationRun {
  Variable a, b;
  std::vector<Observation> observations;
};

/// One season's transition, in its own scope so that its intermediate variables (the migrants, the survivors) are
/// dropped once the next populations are built: the runtime then sums them out of the joint law.
/// With a count of the migrants (counted >= 0), its observation is appended to `observations`.
inline std::pair<Variable, Variable> season(Graph& g, const Variable& a, const Variable& b, const Migration& w,
                                            std::int64_t counted, std::vector<Observation>& observations) {
  const Variable moved = g.binomial(a, w.m);
  if (counted >= 0) observations.push_back(g.observe(g.binomial(moved, w.c), counted));
  const Variable next_a = g.add(g.binomial(g.subtract(a, moved), w.s), g.assume(tally::Poisson(w.iota_a)));
  const Variable next_b = g.add(g.binomial(g.add(b, moved), w.s), g.assume(tally::Poisson(w.iota_b)));
  return {next_a, next_b};
}

/// Runs the program; after_season(t, r) (if given) is called once season t is observed (to read marginals).
inline MigrationRun run_migration(Graph& g, const Migration& w,
                                  const std::function<void(std::size_t, const MigrationRun&)>& after_season = {}) {
  MigrationRun r;
  r.a = g.assume(tally::Poisson(w.lambda_a));
  r.b = g.assume(tally::Poisson(w.lambda_b));
  for (std::size_t t = 0; t < w.ya.size(); ++t) {
    if (t > 0) std::tie(r.a, r.b) = season(g, r.a, r.b, w, w.counted.empty() ? -1 : w.counted.at(t - 1), r.observations);
    r.observations.push_back(g.observe(g.binomial(r.a, w.p), w.ya[t]));
    r.observations.push_back(g.observe(g.binomial(r.b, w.p), w.yb[t]));
    if (after_season) after_season(t, r);
  }
  return r;
}

/// The same program with A's immigrants drawn in each particle (a proposal for part of the state, as a bootstrap
/// filter would make): from the second season on the particles hold different joint laws of (A, B), which the
/// runtime computes as one batch (Truncation::joint_batches). immigrants[t - 1]: season t's draws, by particle.
struct DrawnImmigrantsRun : MigrationRun {
  std::vector<std::vector<std::int64_t>> immigrants;
};
inline DrawnImmigrantsRun run_migration_drawn_immigrants(Graph& g, const Migration& w) {
  DrawnImmigrantsRun r;
  r.a = g.assume(tally::Poisson(w.lambda_a));
  r.b = g.assume(tally::Poisson(w.lambda_b));
  for (std::size_t t = 0; t < w.ya.size(); ++t) {
    if (t > 0) {
      const Variable moved = g.binomial(r.a, w.m);
      const Variable drawn = g.assume(tally::Poisson(w.iota_a));
      r.immigrants.push_back(g.value(drawn));
      const Variable next_a = g.add(g.binomial(g.subtract(r.a, moved), w.s), drawn);
      const Variable next_b = g.add(g.binomial(g.add(r.b, moved), w.s), g.assume(tally::Poisson(w.iota_b)));
      r.a = next_a;
      r.b = next_b;
    }
    r.observations.push_back(g.observe(g.binomial(r.a, w.p), w.ya[t]));
    r.observations.push_back(g.observe(g.binomial(r.b, w.p), w.yb[t]));
  }
  return r;
}

// ---- (b) an HMM whose Poisson emission rates are unknown counts ----------------------------------------------
/// R_k ~ Geometric(q_k) (k = 0, 1: the rates are unknown counts); s_0 ~ Categorical(init), s_t | s_{t-1} ~
/// Categorical(T_{s_{t-1}, .}); y_t | s_t, R ~ Poisson(a R_{s_t}). Each emission has three random parents.
struct RateHmm {
  Eigen::VectorXd init = Eigen::Vector2d(0.6, 0.4);
  Eigen::MatrixXd T = (Eigen::MatrixXd(2, 2) << 0.9, 0.1, 0.2, 0.8).finished();
  Eigen::VectorXd q = Eigen::Vector2d(1.0 / 4.0, 1.0 / 13.0);  // prior means 3 and 12
  double a = 1.0;
  std::vector<std::int64_t> y{2, 4, 1, 3, 2, 14, 11, 16, 9, 13, 3, 2, 5, 1, 12, 15, 10, 2, 3, 4};
};

struct RateHmmRun {
  std::vector<Variable> rates;
  Variable state;  // the last state
  std::vector<Observation> observations;
};

inline RateHmmRun run_rate_hmm(Graph& g, const RateHmm& h) {
  RateHmmRun r;
  for (Eigen::Index k = 0; k < h.q.size(); ++k) r.rates.push_back(g.assume(tally::Geometric(h.q[k])));
  for (std::size_t t = 0; t < h.y.size(); ++t) {
    r.state = t == 0 ? g.assume(tally::Categorical(h.init)) : g.assume(r.state, tally::MarkovStep(h.T));
    r.observations.push_back(g.observe(g.poisson(r.state, r.rates, h.a), h.y[t]));
  }
  return r;
}

// ---- (c) a Bayesian network with a diamond -------------------------------------------------------------------
/// cloudy ~ Bernoulli(1/2); sprinkler | cloudy ~ Bernoulli(s[cloudy]); rain | cloudy ~ Bernoulli(r[cloudy]);
/// wet | sprinkler, rain ~ Bernoulli(w[2 sprinkler + rain]). Every probability is a multiple of 1/100, so every
/// posterior is a fraction with a denominator dividing 2 * 100^3.
struct WetGrass {
  int cloudy = 50;                 // P(cloudy) in hundredths
  int sprinkler[2] = {50, 10};     // P(sprinkler | cloudy = 0, 1)
  int rain[2] = {20, 80};          // P(rain | cloudy = 0, 1)
  int wet[4] = {0, 90, 90, 99};    // P(wet | sprinkler, rain) at 2 sprinkler + rain
};

struct WetGrassRun {
  Variable cloudy, sprinkler, rain;
  Observation wet;  // P(wet grass) as its likelihood
};

inline Eigen::MatrixXd bernoulli_rows(const int* hundredths, int rows) {
  Eigen::MatrixXd t(rows, 2);
  for (int k = 0; k < rows; ++k) t.row(k) << 1.0 - hundredths[k] / 100.0, hundredths[k] / 100.0;
  return t;
}

inline WetGrassRun run_wet_grass(Graph& g, const WetGrass& n) {
  WetGrassRun r;
  r.cloudy = g.assume(tally::Bernoulli(n.cloudy / 100.0));
  r.sprinkler = g.assume(r.cloudy, tally::MarkovStep(bernoulli_rows(n.sprinkler, 2)));
  r.rain = g.assume(r.cloudy, tally::MarkovStep(bernoulli_rows(n.rain, 2)));
  // the diamond: both parents of wet descend from cloudy
  const Variable parents = g.add(g.affine(r.sprinkler, 2, 0), r.rain);
  r.wet = g.observe(g.assume(parents, tally::MarkovStep(bernoulli_rows(n.wet, 4))), 1);
  return r;
}

}  // namespace tally::models::joint
