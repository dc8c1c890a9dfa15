// The one engine: the exactness report and strict mode, and the same programs on the CPU and the GPU (same draws).
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/gpu/sample_batched.hpp"
#include "tally/runtime/graph.hpp"
#include "sanitizers.hpp"

namespace test_engine {

using namespace tally;
using namespace tally::runtime;

namespace {

/// x ~ Binomial(20, 0.5); y ~ Binomial(x, 0.3); w ~ Binomial(x, 0.6); z = y + w: y and w share x.
struct SharedAncestor {
  Variable x, y, w, z;
  explicit SharedAncestor(Graph& g) {
    x = g.assume(Binomial(20, 0.5));
    g.name(x, "x");
    y = g.assume(x, Thinning(0.3));
    w = g.assume(x, Thinning(0.6));
    z = g.add(y, w);
  }
};

std::vector<Device> devices() {
  std::vector<Device> d{Device::cpu};
  if (gpu::cuda_available()) d.push_back(Device::cuda);
  else WARN("device half skipped: " << gpu::device_description());
  return d;
}

const char* name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace

TEST_CASE("exactness: tree-shaped programs are exact, with their truncation bound", "[runtime][engine]") {
  for (const Device d : devices()) {
    for (const std::size_t P : {std::size_t{1}, std::size_t{64}}) {
      INFO(name(d) << ", P = " << P);
      const auto live = Graph::live_nodes();
      {
        Graph g(P, 3, d);
        g.strict(true);  // nothing may be sampled
        Variable X = g.assume(Poisson(50.0));
        g.name(X, "X0");
        const std::int64_t y[] = {10, 12, 9, 14};
        for (int t = 0; t < 4; ++t) {
          std::string immigrants = "I";
          immigrants += std::to_string(t);
          if (t > 0) {
            const Variable I = g.assume(Poisson(30.0 + t));
            g.name(I, immigrants);
            X = g.add(g.binomial(X, 0.26), I);
          }
          const Observation o = g.observe(g.binomial(X, 0.2), y[t]);
          REQUIRE(o.exact());
          CHECK_THAT(o.exactness().describe(), Catch::StartsWith("exact; truncated "));
          CHECK(o.exactness().truncation_error > 0.0);  // Poisson laws are truncated ...
          CHECK(o.exactness().truncation_error < 1e-9);  // ... far below anything that matters
          // ... and named: the truncated laws still linked to the observation (this season's immigrants; X0 on
          // the first), each once
          const auto& cut = o.exactness().truncated;
          CHECK(std::count(cut.begin(), cut.end(), t == 0 ? std::string("X0") : immigrants) == 1);
          CHECK(cut.size() <= static_cast<std::size_t>(t + 1));
          for (std::size_t i = 1; i < P; ++i) REQUIRE(o[i] == Approx(o[0]).epsilon(1e-12));
        }
      }
      CHECK(Graph::live_nodes() == live);
    }
  }
}

TEST_CASE("exactness: a CUDA graph's truncation bounds read late are those read at once", "[runtime][engine][device]") {
  // a CUDA graph leaves each observation's bound on the device until it is read (runtime/src/bound.hpp), and the
  // posterior's bound, a formula of it, goes on into the next season's sum and observation unread
  if (!gpu::cuda_available()) {
    WARN("skipped: " << gpu::device_description());
    return;
  }
  const auto seasons = [](bool read_at_once) {
    Graph g(64, 3, Device::cuda);
    Variable X = g.assume(Poisson(50.0));
    std::vector<Observation> kept;
    std::vector<double> bounds;
    for (int t = 0; t < 6; ++t) {
      if (t > 0) X = g.add(g.binomial(X, 0.26), g.assume(Poisson(30.0 + t)));
      kept.push_back(g.observe(g.binomial(X, 0.2), 10 + 2 * t));
      if (read_at_once) bounds.push_back(kept.back().exactness().truncation_error);
    }
    if (!read_at_once)
      for (const Observation& o : kept) bounds.push_back(o.exactness().truncation_error);
    return bounds;
  };
  const auto at_once = seasons(true), late = seasons(false);
  REQUIRE(at_once.size() == late.size());
  for (std::size_t t = 0; t < late.size(); ++t) {
    INFO("season " << t);
    CHECK(late[t] == at_once[t]);
    CHECK(late[t] > 0.0);  // (a CUDA graph's bounds grow faster than the host's: no prior tails are followed)
    CHECK(std::isfinite(late[t]));
  }
}

/// Joint laws off (Truncation::max_joint_bytes = 0): every coupling is a reported fallback, as before joint laws.
Truncation no_joint_laws() {
  Truncation t;
  t.max_joint_bytes = 0;
  return t;
}

TEST_CASE("exactness: with joint laws off, a sum of two children of one parent names the sampled ancestor; strict "
          "mode throws",
          "[runtime][engine]") {
  for (const Device d : devices()) {
    INFO(name(d));
    const auto live = Graph::live_nodes();
    {
      Graph g(16, 5, d, no_joint_laws());
      SharedAncestor p(g);
      const Observation o = g.observe(p.z, 9);
      REQUIRE_FALSE(o.exact());
      REQUIRE(o.exactness().sampled.size() == 1);
      CHECK(o.exactness().sampled[0].variable == "x");
      CHECK(o.exactness().sampled[0].reason == Fallback::joint_limit);  // joint laws off
      CHECK_THAT(o.exactness().describe(), Catch::Contains("x (beyond the joint laws' limit"));
      // the fallback is honest: given the drawn x, the likelihood is that of Binomial(x, .3) + Binomial(x, .6)
      const auto x = g.value(p.x);
      for (std::size_t i = 0; i < 16; ++i) {
        const Pmf law = sum(to_pmf(Binomial(x[i], 0.3)), to_pmf(Binomial(x[i], 0.6)));
        REQUIRE(o[i] == Approx(log_pdf(law, 9)).epsilon(1e-9));
      }
    }
    {
      Graph g(16, 5, d, no_joint_laws());
      g.strict(true);
      SharedAncestor p(g);
      try {
        g.observe(p.z, 9);
        FAIL("strict mode sampled");
      } catch (const inexact_error& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("x") && Catch::Contains("joint laws' limit"));
        REQUIRE(e.sampled.size() == 1);
        CHECK(e.sampled[0].variable == "x");
      }
      // nothing was drawn: x is still a law, and the graph goes on exactly
      CHECK(g.marginal(p.x)[0].size() == 21);
      const Observation o = g.observe(p.y, 4);
      CHECK(o.exact());
      CHECK(std::isfinite(o[0]));
    }
    CHECK(Graph::live_nodes() == live);
  }
}

TEST_CASE("exactness: with joint laws on (the default), the same sum is exact in every particle, also in strict mode",
          "[runtime][engine][joint]") {
  for (const Device d : devices()) {
    INFO(name(d));
    const auto live = Graph::live_nodes();
    {
      Graph g(16, 5, d);
      g.strict(true);
      SharedAncestor p(g);
      const Observation o = g.observe(p.z, 9);
      REQUIRE(o.exact());
      // P(y + w = 9) = sum_x Bin(x; 20, .5) P(Bin(x, .3) + Bin(x, .6) = 9): y and w independent given x only
      double want = 0.0;
      for (std::int64_t x = 0; x <= 20; ++x)
        want += pdf(to_pmf(Binomial(20, 0.5)), x) * pdf(sum(to_pmf(Binomial(x, 0.3)), to_pmf(Binomial(x, 0.6))), 9);
      for (std::size_t i = 0; i < 16; ++i) REQUIRE(o[i] == Approx(std::log(want)).epsilon(1e-12));
    }
    CHECK(Graph::live_nodes() == live);
  }
}

TEST_CASE("exactness: a second child of a variable with a marginalized child is kept exact; pruned only with joint "
          "laws off, and then reported", "[runtime][engine]") {
  {
    Graph g(1, 2);
    g.strict(true);
    Variable x = g.assume(Poisson(6.0));
    Variable y = g.assume(x, Thinning(0.5));
    g.marginal(y);  // y joins x's M-path
    const Observation o = g.observe(g.assume(x, Thinning(0.2)), 1);
    CHECK(o.exact());
    // z ~ Binomial(x, .2) at 1, x ~ Poisson(6): Poisson(1.2) at 1
    CHECK(o[0] == Approx(std::log(1.2) - 1.2).epsilon(1e-12));
    // y | z = 1: y = Binomial(x, .5) with x - 1 ~ Poisson(4.8) given z: its mean 0.5 + 2.4
    const Pmf m = g.marginal(y)[0];
    double mean = 0;
    for (std::int64_t k = m.lo(); k <= m.hi(); ++k) mean += static_cast<double>(k) * pdf(m, k);
    CHECK(mean == Approx(0.5 + 2.4).epsilon(1e-9));
  }
  Graph g(1, 2, Device::cpu, no_joint_laws());
  Variable x = g.assume(Poisson(6.0));
  Variable y = g.assume(x, Thinning(0.5));
  g.name(y, "y");
  g.marginal(y);  // y joins x's M-path
  Variable z = g.assume(x, Thinning(0.2));
  const Observation o = g.observe(z, 1);
  REQUIRE(o.exactness().sampled.size() == 1);
  CHECK(o.exactness().sampled[0].variable == "y");
  CHECK(o.exactness().sampled[0].reason == Fallback::joint_limit);
  // observing y's sibling with nothing on the path is exact again
  const Observation o2 = g.observe(g.assume(x, Thinning(0.4)), 2);
  CHECK(o2.exact());
}

TEST_CASE("exactness: a marginalized child nobody holds any more, with nothing observed below it, is dropped, "
          "not drawn", "[runtime][engine]") {
  for (const bool joint : {true, false}) {
    INFO((joint ? "joint laws on" : "joint laws off"));
    for (const std::size_t depth : {std::size_t{1}, std::size_t{3}}) {
      INFO("a path of " << depth << " unheld nodes");
      Graph g(1, 2, Device::cpu, joint ? Truncation{} : no_joint_laws());
      g.strict(true);
      const Variable x = g.assume(Poisson(6.0));
      {
        Variable y = g.assume(x, Thinning(0.5));
        for (std::size_t k = 1; k < depth; ++k) y = g.assume(y, Thinning(0.9));
        g.marginal(y);  // the path x -> ... -> y, then every handle below x dropped
      }
      const Observation o = g.observe(g.assume(x, Thinning(0.2)), 1);
      CHECK(o.exact());
      CHECK(o.exactness().sampled.empty());
      CHECK(o[0] == Approx(std::log(1.2) - 1.2).epsilon(1e-12));  // Binomial(x, .2) of Poisson(6): Poisson(1.2) at 1
    }
  }
  // with an observation below it the child still counts, held or not (kept exact by a joint law, or reported)
  Graph g(1, 2, Device::cpu, no_joint_laws());
  const Variable x = g.assume(Poisson(6.0));
  {
    const Variable y = g.assume(x, Thinning(0.5));
    REQUIRE(g.observe(g.assume(y, Thinning(0.5)), 1).exact());  // y absorbed the observation
  }
  const Observation o = g.observe(g.assume(x, Thinning(0.2)), 1);
  REQUIRE(o.exactness().sampled.size() == 1);
  CHECK(o.exactness().sampled[0].reason == Fallback::joint_limit);
}

TEST_CASE("the CPU draws by sample_batched's rule: the k-th draw uses philox_uniform(seed, i, k)", "[runtime][engine]") {
  const std::size_t P = 300;
  Graph g(P, 77, Device::cpu);
  const Pmf law = to_pmf(Binomial(40, 0.35));
  Variable a = g.assume(law);
  const auto first = g.value(a);  // the graph's draw number 0
  gpu::PmfBatch batch;
  for (std::size_t i = 0; i < P; ++i)
    batch.push_back(std::span<const double>(law.weights().data(), std::size_t(law.size())), law.lo(), law.log_scale());
  CHECK(first == gpu::cpu::sample_batched(batch, 77, 0));
  const auto second = g.value(g.assume(law));
  CHECK(second == gpu::cpu::sample_batched(batch, 77, 1));
}

namespace {

/// What a random program did, step by step, in a form two devices can be compared on.
struct Trace {
  std::vector<std::string> events;              // the operation and, for refused ones, the exception's type
  std::vector<std::vector<double>> likelihoods; // every observation's log-likelihoods
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::vector<double>> means;       // marginals' means
};

/// A random program of every node kind the engine has: roots, thinnings, scaled and indexed Poisson children,
/// Markov steps, affine maps, sums and differences, Beta, Gamma and Dirichlet parents with their counts,
/// observations (possible or not), values, marginals, dropped handles, resampling, strict mode switched on and off.
Trace random_program(std::uint64_t program, Device d, std::size_t P) {
  std::mt19937_64 gen(program);
  std::uniform_int_distribution<int> pick(0, 99);
  Trace tr;
  Graph g(P, program, d);
  std::vector<Variable> vars, states;
  std::vector<Continuous> betas, gammas, dirichlets;
  Eigen::MatrixXd T(3, 3);
  T << .7, .2, .1, .1, .8, .1, .2, .2, .6;
  Eigen::VectorXd rates(3);
  rates << 1.0, 4.0, 9.0;
  const int steps = 4 + pick(gen) % 14;
  auto any = [&](std::vector<Variable>& v) -> Variable& { return v[static_cast<std::size_t>(pick(gen)) % v.size()]; };
  for (int s = 0; s < steps; ++s) {
    const int r = pick(gen);
    std::string what;
    try {
      if (vars.empty() || r < 12) {
        what = "root";
        vars.push_back(r % 3 == 0 ? g.assume(Binomial(3 + r % 5, 0.4))
                       : r % 3 == 1 ? g.assume(Poisson(1.0 + r % 3))
                                    : g.assume(NegativeBinomial(2.0, 0.6)));
      } else if (r < 24) {
        what = "thinning";
        vars.push_back(g.binomial(any(vars), 0.5));
      } else if (r < 28) {
        what = "scaled poisson";
        vars.push_back(g.assume(any(vars), ScaledPoisson(0.7)));
      } else if (r < 33) {
        what = "markov";
        if (states.empty()) states.push_back(g.assume(Categorical(Eigen::Vector3d(.5, .3, .2))));
        states.push_back(g.assume(any(states), MarkovStep(T)));
        if (r % 2) vars.push_back(g.assume(states.back(), IndexedPoisson(rates)));
      } else if (r < 39) {
        what = "affine";
        vars.push_back(g.affine(any(vars), r % 2 ? 1 : -1, r % 3));
      } else if (r < 52) {
        what = "sum";
        Variable a = any(vars), b = any(vars);
        vars.push_back(r % 2 ? g.add(a, b) : g.subtract(a, b));
      } else if (r < 60) {
        what = "conjugate";
        switch (r % 3) {
          case 0:
            if (betas.empty() || r % 2) betas.push_back(g.assume(Beta(2, 2)));
            vars.push_back(r % 4 == 0 ? g.negative_binomial(3.0, betas.back()) : g.binomial(2 + r % 4, betas.back()));
            break;
          case 1:
            if (gammas.empty() || r % 2) gammas.push_back(g.assume(Gamma(3, 1)));
            vars.push_back(g.poisson(gammas.back(), 1.0 + r % 2));
            break;
          default:
            if (dirichlets.empty() || r % 2) dirichlets.push_back(g.assume(Dirichlet(Eigen::Vector3d(1, 2, 3))));
            vars.push_back(g.categorical(dirichlets.back()));
        }
      } else if (r < 76) {
        what = "observe";
        const Observation o = g.observe(any(vars), pick(gen) % 6);
        tr.likelihoods.push_back(o.log_likelihoods());
      } else if (r < 83) {
        what = "value";
        tr.values.push_back(g.value(any(vars)));
      } else if (r < 89) {
        what = "marginal";
        std::vector<double> m;
        for (const Pmf& p : g.marginal(any(vars))) m.push_back(mean(p));
        tr.means.push_back(std::move(m));
      } else if (r < 92 && !betas.empty()) {
        what = "beta value";
        tr.likelihoods.push_back(g.scalar_value(betas.back()));
      } else if (r < 95) {
        what = "resample";
        g.resample_by_weight(0.9);
        tr.likelihoods.push_back(g.log_weights());
      } else if (r < 97) {
        what = "strict";
        g.strict(!g.strict());
      } else {
        what = "drop";
        if (vars.size() > 1) vars.erase(vars.begin() + static_cast<std::ptrdiff_t>(pick(gen) % vars.size()));
      }
      tr.events.push_back(what);
    } catch (const usage_error&) {
      tr.events.push_back(what + ": usage_error");
    } catch (const inexact_error&) {
      tr.events.push_back(what + ": inexact_error");
    } catch (const tally::domain_error&) {
      tr.events.push_back(what + ": domain_error");
    } catch (const tally::overflow_error&) {
      tr.events.push_back(what + ": overflow_error");
    }
  }
  tr.likelihoods.push_back(g.log_weights());
  return tr;
}

bool close(double a, double b) {
  if (a == b) return true;  // both -inf
  return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a));
}

}  // namespace

TEST_CASE("random programs of every node kind leak nothing on each device", "[runtime][engine]") {
  for (const Device d : devices()) {
    INFO(name(d));
    const auto live = Graph::live_nodes();
    const int programs = tally::test::runs(d == Device::cpu ? 2000 : 10000);
    for (int p = 0; p < programs; ++p) random_program(static_cast<std::uint64_t>(p), d, p % 5 == 0 ? 8 : 1);
    CHECK(Graph::live_nodes() == live);
  }
}

TEST_CASE("random programs give the same draws and likelihoods on the CPU and the GPU", "[runtime][engine][device]") {
  if (tally::test::skip_without_device()) return;
  int compared = 0;
  for (std::uint64_t p = 0; p < 400; ++p) {
    const std::size_t P = p % 2 ? 16 : 1;
    const Trace host = random_program(p, Device::cpu, P), device = random_program(p, Device::cuda, P);
    std::ostringstream events;
    for (const auto& e : host.events) events << e << "; ";
    INFO("program " << p << " (P = " << P << "): " << events.str());
    REQUIRE(host.events == device.events);
    REQUIRE(host.values == device.values);
    REQUIRE(host.likelihoods.size() == device.likelihoods.size());
    for (std::size_t k = 0; k < host.likelihoods.size(); ++k)
      for (std::size_t i = 0; i < host.likelihoods[k].size(); ++i) {
        INFO("likelihoods " << k << ", particle " << i << ": " << host.likelihoods[k][i] << " vs " << device.likelihoods[k][i]);
        REQUIRE(close(host.likelihoods[k][i], device.likelihoods[k][i]));
      }
    REQUIRE(host.means.size() == device.means.size());
    for (std::size_t k = 0; k < host.means.size(); ++k)
      for (std::size_t i = 0; i < host.means[k].size(); ++i) REQUIRE(close(host.means[k][i], device.means[k][i]));
    ++compared;
  }
  CHECK(compared == 400);
}

TEST_CASE("summarize: several variables at once are each one's summary", "[runtime][engine]") {
  constexpr double band[] = {0.05, 0.5, 0.95};
  for (const Device d : devices()) {
    INFO(name(d));
    Graph g(512, 11, d);
    const Variable X = g.assume(Poisson(40.0));
    const Variable Y = g.binomial(X, 0.3);
    g.observe(g.binomial(X, 0.5), 21);  // weights that differ between particles
    const Variable Z = g.add(X, Y);
    const Variable all[] = {X, Y, Z};
    const auto together = g.summarize(all, band);
    REQUIRE(together.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
      const auto alone = g.summarize(all[k], band);
      CHECK(together[k].mean == alone.mean);
      CHECK(together[k].ess == alone.ess);
      CHECK(together[k].quantiles == alone.quantiles);
    }
    CHECK(together[2].mean == Approx(together[0].mean + together[1].mean).epsilon(1e-12));
  }
}

TEST_CASE("resample_by_weight after a summary decides, draws and reports as without it", "[runtime][engine][device]") {
  // on the device a summary also brings back the resampler's own summary of the weights (the same passes, so the
  // same bits), and a resampling that follows with the weights unchanged decides from it without a wait: every
  // result must be the one of the call made without the summary before it, also where the weights changed in
  // between (a summary, then an observation) and where every particle is impossible
  static constexpr double band[] = {0.1, 0.9};
  struct Step {
    double log_mean, ess;
    bool resampled;
    std::vector<std::size_t> ancestors;
    bool operator==(const Step&) const = default;
  };
  for (const Device d : devices()) {
    INFO(name(d));
    const auto run = [d](bool summaries) {
      Graph g(10000, 5, d);  // three of the resampler's tiles of 4096
      std::vector<Step> steps;
      std::vector<std::int64_t> last;
      Variable X = g.assume(Poisson(30.0));
      g.realize(X);
      const double thresholds[] = {0.5, 0.0, 1.0, 0.9, 0.5, 0.5, 0.2};
      for (int t = 0; t < 7; ++t) {
        if (t > 0) {
          X = g.add(g.binomial(X, 0.7), g.assume(Poisson(9.0)));
          g.realize(X);
        }
        g.observe(g.binomial(X, 0.5), t == 5 ? 1000000 : 12 + t);  // season 5: every particle impossible
        if (summaries) g.summarize(X, band);
        if (summaries && t == 2) g.summarize(X, band);  // a second summary of the same weights
        if (t == 3) g.observe(g.binomial(X, 0.25), 7);  // the weights change after the summary
        const Graph::Resampling r = g.resample_by_weight(thresholds[t]);
        steps.push_back({r.log_mean_weight, r.ess, r.resampled, r.ancestors.size() ? r.ancestors.to_host()
                                                                                    : std::vector<std::size_t>{}});
        if (t == 5) g.reset_log_weights();
        last = g.value(X);
      }
      return std::make_pair(steps, last);
    };
    const auto with = run(true), without = run(false);
    REQUIRE(with.first.size() == without.first.size());
    int resampled = 0;
    for (std::size_t t = 0; t < with.first.size(); ++t) {
      INFO("season " << t << ": log-mean " << with.first[t].log_mean << " vs " << without.first[t].log_mean
                     << ", ess " << with.first[t].ess << " vs " << without.first[t].ess);
      CHECK(with.first[t] == without.first[t]);
      resampled += with.first[t].resampled;
    }
    CHECK(with.first[5].log_mean == -std::numeric_limits<double>::infinity());
    CHECK(resampled >= 2);   // some seasons resample (threshold 1, and low ESS) ...
    CHECK(resampled <= 5);   // ... and threshold 0 and the impossible season do not
    CHECK(with.second == without.second);
  }
}

}  // namespace test_engine
