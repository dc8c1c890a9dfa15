// Equal laws computed once on the device: a prior shared by every particle and a law per group shared by its
// particles stay one law per block through thinnings, sums, observations of constants and resamplings, with the
// same log-weights and laws as the CPU graph; whatever touches a particle alone spreads them over the particles. A
// joint law that every particle holds is one table, on the host and on the device.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "models/joint_programs.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_shared_laws {

using namespace tally;
using namespace tally::runtime;

namespace {

/// The population model's season, per group, with a per-particle touch (a drawn count added) only where asked;
/// returns the graph's log-weights, the laws' means and the bytes they hold, and draws from shared laws.
struct Run {
  std::vector<double> log_weights, means;
  std::vector<std::int64_t> drawn, drawn_per_group;  // a law shared by all, and laws shared by groups, drawn
  std::size_t bytes = 0;
  std::string memory;  // every node's bytes (said with a failure)
};
Run seasons(Device device, std::size_t groups, std::size_t size, bool touch) {
  Graph g(Groups{groups, size}, 11, device);
  g.strict(!touch);
  std::vector<Thinning> survive, detect;
  std::vector<Poisson> start;
  for (std::size_t k = 0; k < groups; ++k) {
    survive.emplace_back(0.5 + 0.4 * double(k) / double(groups));
    detect.emplace_back(0.3 + 0.5 * double(groups - k) / double(groups));
    start.emplace_back(20.0 + double(k % 3));
  }
  Variable n = g.assume(Poisson(30.0));
  g.name(n, "n");
  const std::int64_t y[] = {17, 21, 14, 19};
  for (std::size_t t = 0; t < 4; ++t) {
    if (t == 1) n = g.add(n, g.assume(start));  // a law per group joins
    if (t > 0) n = g.add(g.assume(n, survive), g.assume(Poisson(8.0)));
    if (t == 2 && touch) {
      const Variable k = g.assume(Poisson(1.0));
      g.realize(k);  // drawn: a value per particle
      n = g.add(n, k);
    }
    const Observation o = g.observe(g.assume(n, detect), y[t]);
    REQUIRE((touch || o.exact()));
    if (t == 1) g.resample_groups(1.0);  // every group resampled within itself
  }
  const Variable m = g.add(n, g.constant(3));  // a shift by a constant
  g.name(m, "m");
  Run r{g.log_weights(), {}, {}, {}, 0, {}};
  for (const Pmf& p : g.marginal(m)) r.means.push_back(mean(p));
  for (const NodeMemory& node : g.memory()) {
    if (node.name == "m") r.bytes = node.bytes;
    r.memory += " " + (node.name.empty() ? std::string("?") : node.name) + ":" + std::to_string(node.bytes);
  }
  const Variable w = g.assume(Poisson(12.0));  // one law for all, conditioned on a constant, then drawn
  g.observe(g.binomial(w, 0.5), 3);
  r.drawn = g.value(w);
  r.drawn_per_group = g.value(n);
  return r;
}

}  // namespace

TEST_CASE("device: equal laws computed once, shared by all particles or by a group, equal the CPU graph's",
          "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  for (const bool touch : {false, true}) {
    for (const std::size_t size : {std::size_t{1}, std::size_t{64}}) {
      INFO("groups of " << size << (touch ? ", a value per particle added" : ""));
      const std::size_t groups = 5;
      const Run cpu = seasons(Device::cpu, groups, size, touch), cuda = seasons(Device::cuda, groups, size, touch);
      REQUIRE(cuda.log_weights.size() == groups * size);
      for (std::size_t i = 0; i < groups * size; ++i) {
        CHECK(cuda.log_weights[i] == Approx(cpu.log_weights[i]).epsilon(1e-12));
        CHECK(cuda.means[i] == Approx(cpu.means[i]).epsilon(1e-12));
      }
      CHECK(cuda.drawn == cpu.drawn);  // the same draws (the same uniforms, the same laws)
      CHECK(cuda.drawn_per_group == cpu.drawn_per_group);
      if (!touch && size > 1) {
        INFO("device:" << cuda.memory << "; cpu:" << cpu.memory);
        // one law per group held, not one per particle: the laws' bytes are those of 5 laws, not 320
        CHECK(cuda.bytes * size < cpu.bytes * 2);
      }
    }
  }
}

namespace {

/// The HMM of two unknown rates (its joint law of the rates and the state the same in every particle), on P
/// particles: the log-weights, each rate's marginal by particle, and the bytes the graph holds.
struct RateRun {
  std::vector<double> log_weights;
  std::vector<std::vector<Pmf>> rates;
  std::size_t bytes = 0;
};
RateRun rate_hmm(Device device, std::size_t particles, std::size_t steps) {
  Graph g(particles, 5, device);
  g.strict(true);
  models::joint::RateHmm h;
  h.y.resize(steps);
  const models::joint::RateHmmRun run = models::joint::run_rate_hmm(g, h);
  for (const Observation& o : run.observations) REQUIRE(o.exact());
  RateRun r{g.log_weights(), {}, g.bytes()};
  for (const Variable& rate : run.rates) r.rates.push_back(g.marginal(rate));
  return r;
}

}  // namespace

TEST_CASE("a joint law that every particle holds is one table, computed once, on the host and the device",
          "[runtime][joint][population][device]") {
  const std::size_t P = 4096, steps = 8;
  const RateRun one = rate_hmm(Device::cpu, 1, steps);
  std::vector<Device> devices{Device::cpu};
  if (gpu::cuda_available()) devices.push_back(Device::cuda);
  for (const Device device : devices) {
    INFO((device == Device::cpu ? "CPU graph" : "CUDA graph"));
    const RateRun many = rate_hmm(device, P, steps);
    REQUIRE(many.log_weights.size() == P);
    for (std::size_t i = 0; i < P; i += 97) {
      CHECK(many.log_weights[i] == Approx(one.log_weights[0]).epsilon(1e-13));
      for (std::size_t k = 0; k < one.rates.size(); ++k) {
        REQUIRE(many.rates[k][i].lo() == one.rates[k][0].lo());
        REQUIRE(many.rates[k][i].size() == one.rates[k][0].size());
        CHECK((many.rates[k][i].normalized().weights() - one.rates[k][0].normalized().weights()).cwiseAbs().maxCoeff() <
              1e-14);
      }
    }
    // the joint law held once, not once per particle: what P particles hold past their log-weights (8 bytes each)
    // is about one particle's
    INFO("P = 1: " << one.bytes << " bytes; P = " << P << ": " << many.bytes);
    CHECK(many.bytes - 8 * P < 4 * one.bytes);
  }
}

TEST_CASE("a count of a conjugate parameter that every particle holds is one law, on the host and the device",
          "[runtime][conjugate][population][device]") {
  // X | lambda ~ Poisson(2 lambda), lambda ~ Gamma(3, 0.5), marginalized (a child observed), then observed again
  const auto run = [](Device device, std::size_t particles) {
    Graph g(particles, 3, device);
    g.strict(true);
    const Continuous lambda = g.assume(Gamma(3.0, 0.5));
    const Variable x = g.poisson(lambda, 2.0);
    const Observation o = g.observe(g.binomial(x, 0.4), 5);
    REQUIRE(o.exact());
    const std::size_t bytes = g.bytes();
    const std::vector<Pmf> laws = g.marginal(x);
    return std::make_tuple(g.log_weights(), laws, bytes);
  };
  const auto [lw1, laws1, bytes1] = run(Device::cpu, 1);
  std::vector<Device> devices{Device::cpu};
  if (gpu::cuda_available()) devices.push_back(Device::cuda);
  const std::size_t P = 4096;
  for (const Device device : devices) {
    INFO((device == Device::cpu ? "CPU graph" : "CUDA graph"));
    const auto [lw, laws, bytes] = run(device, P);
    REQUIRE(lw.size() == P);
    for (std::size_t i = 0; i < P; i += 101) {
      CHECK(lw[i] == Approx(lw1[0]).epsilon(1e-13));
      REQUIRE(laws[i].lo() == laws1[0].lo());
      REQUIRE(laws[i].size() == laws1[0].size());
      CHECK((laws[i].normalized().weights() - laws1[0].normalized().weights()).cwiseAbs().maxCoeff() < 1e-14);
    }
    INFO("P = 1: " << bytes1 << " bytes; P = " << P << ": " << bytes);
    // the parameters are one pair per particle (16 bytes each) and the log-weights 8: the count's law is held once
    CHECK(bytes < bytes1 + 24 * P + 4096);  // (one law a particle: more than 1 MB)
  }
}

namespace {

/// A count drawn every season and its survivors joined by immigrants whose law a block of particles shares (one
/// Poisson law for all, then one per group): each particle's own law convolved with a shared one. The log-weights,
/// the draws, and the last season's laws' means.
struct DrawnRun {
  std::vector<double> log_weights, means;
  std::vector<std::vector<std::int64_t>> drawn;
};
DrawnRun drawn_seasons(Device device, std::size_t groups, std::size_t size) {
  Graph g(Groups{groups, size}, 23, device);
  std::vector<Poisson> immigrants;
  for (std::size_t k = 0; k < groups; ++k) immigrants.emplace_back(40.0 + 15.0 * double(k));
  Variable x = g.assume(Poisson(60.0));
  const std::int64_t y[] = {31, 45, 52, 60};
  DrawnRun r;
  for (std::size_t t = 0; t < 4; ++t) {
    if (t > 0) {
      const Variable survivors = g.binomial(x, 0.6);
      x = t % 2 == 1 ? g.add(survivors, g.assume(Poisson(35.0))) : g.add(g.assume(immigrants), survivors);
    }
    g.observe(g.binomial(x, 0.5), y[t]);
    if (t == 3) break;
    r.drawn.push_back(g.value(x));  // drawn: each particle's survivors have their own law
  }
  r.log_weights = g.log_weights();
  for (const Pmf& p : g.marginal(x)) r.means.push_back(mean(p));
  return r;
}

}  // namespace

TEST_CASE("device: a particle's own law plus a law its block shares equals the CPU graph's", "[runtime][groups][device]") {
  if (tally::test::skip_without_device()) return;
  for (const std::size_t size : {std::size_t{7}, std::size_t{64}, std::size_t{96}}) {
    INFO("groups of " << size);
    const std::size_t groups = 3;
    const DrawnRun cpu = drawn_seasons(Device::cpu, groups, size), cuda = drawn_seasons(Device::cuda, groups, size);
    REQUIRE(cuda.log_weights.size() == groups * size);
    CHECK(cuda.drawn == cpu.drawn);
    for (std::size_t i = 0; i < groups * size; ++i) {
      CHECK(cuda.log_weights[i] == Approx(cpu.log_weights[i]).epsilon(1e-12));
      CHECK(cuda.means[i] == Approx(cpu.means[i]).epsilon(1e-12));
    }
  }
}

namespace {

/// Counts drawn every season whose survivors, Binomial(x, 0.6) with one probability, join immigrants that every
/// particle shares, observed through Binomial(x, 0.5); one season's survivors are observed themselves first, a
/// binomial of drawn counts is drawn, and the particles are resampled once. The log-weights, the draws, the last
/// season's laws (their means and the bytes they would take one per particle), the observations' truncation bounds
/// and the bytes the graph holds.
struct CountRun {
  std::vector<double> log_weights, means, bounds;
  std::vector<std::vector<std::int64_t>> drawn;
  std::size_t dense_bytes = 0, bytes = 0;
};
CountRun counted_seasons(Device device, std::size_t particles) {
  Graph g(particles, 29, device);
  Variable x = g.assume(Poisson(60.0));
  const std::int64_t y[] = {31, 45, 52, 60, 41};
  CountRun r;
  for (std::size_t t = 0; t < 5; ++t) {
    if (t > 0) {
      const Variable survivors = g.binomial(x, 0.6);
      if (t == 2) r.bounds.push_back(g.observe(g.binomial(survivors, 0.9), 30).exactness().truncation_error);
      x = g.add(survivors, g.assume(Poisson(35.0)));
    }
    r.bounds.push_back(g.observe(g.binomial(x, 0.5), y[t]).exactness().truncation_error);
    if (t == 4) break;
    if (t == 2) {  // every even particle twice, before the counts are drawn
      std::vector<std::size_t> ancestors(particles);
      for (std::size_t i = 0; i < particles; ++i) ancestors[i] = i / 2 * 2;
      g.resample(ancestors);
    }
    r.drawn.push_back(g.value(x));
    const double quantiles[] = {0.5};
    g.summarize(x, quantiles);  // (a wait: from here the drawn counts' largest value is known to the host)
    if (t == 3) r.drawn.push_back(g.value(g.binomial(x, 0.3)));
  }
  r.log_weights = g.log_weights();
  for (const Pmf& p : g.marginal(x)) {
    r.means.push_back(mean(p));
    r.dense_bytes += 8 * static_cast<std::size_t>(p.size());
  }
  r.bytes = g.bytes();
  return r;
}

}  // namespace

TEST_CASE("device: laws of counts that few values share are made once per value and equal the CPU graph's",
          "[runtime][device]") {
  if (tally::test::skip_without_device()) return;
  const std::size_t P = 4096;  // counts of about 40 to 110: a table of a few hundred laws at most
  const CountRun cpu = counted_seasons(Device::cpu, P), cuda = counted_seasons(Device::cuda, P);
  REQUIRE(cuda.log_weights.size() == P);
  CHECK(cuda.drawn == cpu.drawn);  // the same uniforms and the same laws: the same draws
  for (std::size_t i = 0; i < P; ++i) {
    CHECK(cuda.log_weights[i] == Approx(cpu.log_weights[i]).epsilon(1e-12));
    CHECK(cuda.means[i] == Approx(cpu.means[i]).epsilon(1e-12));
  }
  REQUIRE(cuda.bounds.size() == cpu.bounds.size());
  for (std::size_t k = 0; k < cuda.bounds.size(); ++k) {
    INFO("observation " << k << ": the device's bound " << cuda.bounds[k] << ", the CPU's " << cpu.bounds[k]);
    // taken over the laws that particles hold: a count no particle has, for which an observation is all but
    // impossible, would make it large or infinite
    CHECK(cuda.bounds[k] < 1e-9);
  }
  // the last season's laws held as a table and an index, not one law per particle
  INFO("the graph holds " << cuda.bytes << " bytes; one law per particle would take " << cuda.dense_bytes);
  CHECK(4 * cuda.bytes < cuda.dense_bytes);
}

}  // namespace test_shared_laws
