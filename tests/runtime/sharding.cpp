// Sharded populations: G shards (in one process) give the unsharded population's draws, weights and resamplings.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/runtime/graph.hpp"
#if defined(TALLY_HAVE_NCCL)
#include "tally/runtime/nccl_communicator.hpp"
#endif

namespace test_sharding {

using namespace tally;
using namespace tally::runtime;

namespace {

/// What one shard (or the unsharded population) saw, step by step.
struct Record {
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::vector<double>> log_weights, beta_draws, engine_draws;
  std::vector<std::vector<std::size_t>> ancestors;
  std::vector<std::vector<Pmf>> laws;
  std::vector<double> log_means, ess;
  std::vector<gpu::WeightedSummary> summaries;
  std::size_t population = 0;  ///< the whole population's particles (Shard::total)
};

constexpr double summary_probabilities[] = {0.05, 0.5, 0.95};

/// The population model's seasons (thinning, immigration, observed binomial counts, resampling), with states left
/// marginalized across some resamplings so that laws, per-particle probabilities and Beta parameters move between
/// shards. The same program whatever the shard: per-particle inputs depend on the population's particle index.
Record population_program(Graph& g) {
  static const std::int64_t y[] = {31, 27, 35, 22, 30};
  const std::size_t n = g.particles(), first = g.shard().first;
  Record r;
  r.population = g.shard().total;
  r.engine_draws.emplace_back();  // the engine's own streams: the population's particle's stream
  for (std::size_t i = 0; i < n; ++i) r.engine_draws.back().push_back(g.stream(i).uniform());
  auto note_resampling = [&](const Graph::Resampling& s) {
    r.log_means.push_back(s.log_mean_weight);
    r.ess.push_back(s.ess);
    r.ancestors.push_back(s.ancestors.to_host());
  };
  // a conjugate parameter observed per particle, kept marginalized across the resamplings
  const Continuous rho = g.assume(Beta(2.0, 3.0));
  std::vector<std::int64_t> successes(n);
  for (std::size_t i = 0; i < n; ++i) successes[i] = static_cast<std::int64_t>((first + i) % 7);
  g.observe(g.binomial(6, rho), successes);

  Variable N = g.assume(Poisson(50.0));
  for (std::size_t t = 0; t < std::size(y); ++t) {
    if (t > 0) N = g.add(g.binomial(N, 0.8), g.assume(Poisson(10.0)));
    g.observe(g.binomial(N, 0.6), y[t]);
    r.log_weights.push_back(g.log_weights());
    if (t % 2 == 0) {  // N marginalized while the particles move: its laws travel
      r.laws.push_back(g.marginal(N));
      note_resampling(g.resample_by_weight(t == 2 ? gpu::Resampler::multinomial : gpu::Resampler::systematic));
      r.values.push_back(g.value(N));
    } else {
      r.values.push_back(g.value(N));
      r.summaries.push_back(g.summarize(N, summary_probabilities));
      // a per-particle binomial left unrealized across the resampling: its probabilities travel
      std::vector<double> p(n);
      for (std::size_t i = 0; i < n; ++i) p[i] = 0.2 + 0.1 * static_cast<double>((first + i) % 5);
      const Variable D = g.binomial(N, p);
      note_resampling(g.resample_by_weight(0.9));
      r.values.push_back(g.value(D));
    }
  }
  r.beta_draws.push_back(g.scalar_value(rho));
  return r;
}

/// The shards' records, joined in rank order (per-particle vectors concatenated; population-wide numbers checked
/// equal on every shard and kept once).
Record join(const std::vector<Record>& shards) {
  Record out = shards[0];
  auto append = [](auto& into, const auto& from) {
    for (std::size_t k = 0; k < into.size(); ++k) into[k].insert(into[k].end(), from[k].begin(), from[k].end());
  };
  for (std::size_t s = 1; s < shards.size(); ++s) {
    const Record& r = shards[s];
    append(out.values, r.values);
    append(out.log_weights, r.log_weights);
    append(out.beta_draws, r.beta_draws);
    append(out.engine_draws, r.engine_draws);
    append(out.ancestors, r.ancestors);
    append(out.laws, r.laws);
    for (std::size_t k = 0; k < out.log_means.size(); ++k) {
      REQUIRE(r.log_means[k] == out.log_means[k]);
      REQUIRE(r.ess[k] == out.ess[k]);
    }
    for (std::size_t k = 0; k < out.summaries.size(); ++k) {
      REQUIRE(r.summaries[k].mean == out.summaries[k].mean);
      REQUIRE(r.summaries[k].quantiles == out.summaries[k].quantiles);
      REQUIRE(r.summaries[k].lo == out.summaries[k].lo);
      REQUIRE(r.summaries[k].hi == out.summaries[k].hi);
    }
  }
  return out;
}

void require_same_laws(const std::vector<Pmf>& a, const std::vector<Pmf>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("particle " << i);
    REQUIRE(a[i].lo() == b[i].lo());
    REQUIRE(a[i].log_scale() == b[i].log_scale());
    REQUIRE(a[i].weights() == b[i].weights());  // bit for bit
  }
}

/// The sharded record equals the unsharded one: draws, log-weights, ancestors, laws and evidence bit for bit;
/// summaries to rounding (their sums are combined in another order: relative 4 n 2^-53 for n particles).
void require_same(const Record& sharded, const Record& whole) {
  REQUIRE(sharded.values == whole.values);
  REQUIRE(sharded.log_weights == whole.log_weights);
  REQUIRE(sharded.ancestors == whole.ancestors);
  REQUIRE(sharded.log_means == whole.log_means);
  REQUIRE(sharded.ess == whole.ess);
  REQUIRE(sharded.beta_draws == whole.beta_draws);
  REQUIRE(sharded.engine_draws == whole.engine_draws);
  REQUIRE(sharded.laws.size() == whole.laws.size());
  for (std::size_t k = 0; k < whole.laws.size(); ++k) require_same_laws(sharded.laws[k], whole.laws[k]);
  REQUIRE(sharded.summaries.size() == whole.summaries.size());
  // a sum of n terms added in another order differs by at most about n ulps of the result (relative n 2^-53)
  const double sum_order = std::max(1e-13, 4.0 * static_cast<double>(whole.population) * 0x1p-53);
  for (std::size_t k = 0; k < whole.summaries.size(); ++k) {
    CHECK(sharded.summaries[k].mean == Approx(whole.summaries[k].mean).epsilon(sum_order));
    CHECK(sharded.summaries[k].ess == Approx(whole.summaries[k].ess).epsilon(sum_order));
    CHECK(sharded.summaries[k].quantiles == whole.summaries[k].quantiles);
    CHECK(sharded.summaries[k].lo == whole.summaries[k].lo);  // every value's range over the population
    CHECK(sharded.summaries[k].hi == whole.summaries[k].hi);
  }
}

/// The program on `counts.size()` shards holding counts[r] particles each, in one process.
Record run_sharded(const std::vector<std::size_t>& counts, std::uint64_t seed, Device device) {
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<Record> records(counts.size());
  InProcessGroup::run(counts.size(), [&](std::shared_ptr<Communicator> comm) {
    const std::size_t r = comm->rank();
    const std::size_t first = std::accumulate(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(r), std::size_t{0});
    Graph g(Shard{r, counts[r], first, total}, comm, seed, device);
    records[r] = population_program(g);
  });
  return join(records);
}

void check_splits(Device device) {
  // 5000 particles: two resampling tiles (4096 each), cut anywhere by the shards
  const std::size_t total = 5000;
  const std::uint64_t seed = 17;
  Graph whole_graph(total, seed, device);
  const Record whole = population_program(whole_graph);
  // the program resamples (the particles move) and its laws differ between particles (they are worth moving)
  REQUIRE(whole.ancestors[0].size() == total);
  REQUIRE(whole.ancestors[2].size() == total);
  std::size_t differ = 0;
  for (const Pmf& law : whole.laws[1]) differ += law.weights() != whole.laws[1][0].weights();
  REQUIRE(differ > total / 2);
  const std::vector<std::vector<std::size_t>> splits = {
      {5000}, {2500, 2500}, {4089, 911}, {1, 4100, 899}, {1667, 1667, 1666}, {1000, 1000, 1000, 2000}, {4096, 1, 1, 902}};
  for (const auto& counts : splits) {
    INFO("shards: " << counts.size() << ", first " << counts[0]);
    require_same(run_sharded(counts, seed, device), whole);
  }
}

}  // namespace

TEST_CASE("Shard::even splits a population in rank order", "[runtime][sharding]") {
  std::size_t next = 0;
  for (std::size_t r = 0; r < 3; ++r) {
    const Shard s = Shard::even(10, 3, r);
    CHECK(s.index == r);
    CHECK(s.first == next);
    CHECK(s.count == (r == 0 ? 4u : 3u));
    next += s.count;
  }
  CHECK(next == 10);
  CHECK_THROWS_AS(Shard::even(2, 3, 0), tally::domain_error);
  CHECK_THROWS_AS(Shard::even(5, 3, 3), tally::domain_error);
}

TEST_CASE("A communicator counts what its rank sends the others", "[runtime][sharding]") {
  InProcessGroup::run(3, [](std::shared_ptr<Communicator> comm) {
    CHECK(comm->traffic().host_bytes == 0);
    const std::uint64_t mine = comm->rank();
    std::vector<std::uint64_t> all(3);
    comm->all_gather(&mine, all.data(), sizeof mine, gpu::Backend::cpu);
    CHECK(all == std::vector<std::uint64_t>{0, 1, 2});
    // rank r sends r + 1 words to each rank (itself included: not counted) and receives q + 1 from rank q
    const std::size_t r = comm->rank();
    std::vector<std::size_t> send(3, 8 * (r + 1)), recv{8, 16, 24};
    std::vector<std::uint64_t> out(6), in(3 * (r + 1), r);
    comm->all_to_all(in.data(), send, out.data(), recv, gpu::Backend::cpu);
    CHECK(out == std::vector<std::uint64_t>{0, 1, 1, 2, 2, 2});
    const Communicator::Traffic t = comm->traffic();
    CHECK(t.host_collectives == 2);
    CHECK(t.host_bytes == 2 * 8 + 2 * 8 * (r + 1));  // the all-gather's word to two others, then r + 1 words to each
    CHECK(t.device_bytes == 0);
    CHECK(t.device_collectives == 0);
    // two buffers exchanged together: one collective (NCCL groups them), twice the bytes
    std::vector<std::uint64_t> out2(6);
    const void* sends[] = {in.data(), in.data()};
    void* recvs[] = {out.data(), out2.data()};
    comm->all_to_all_many(sends, send, recvs, recv, gpu::Backend::cpu);
    CHECK(out2 == out);
    CHECK(comm->traffic().host_collectives == 3);
    CHECK(comm->traffic().host_bytes == t.host_bytes + 2 * 2 * 8 * (r + 1));
  });
}

TEST_CASE("G shards on the CPU give the unsharded population's draws, weights, laws and evidence",
          "[runtime][sharding]") {
  check_splits(Device::cpu);
}

TEST_CASE("Shards of a population of many tiles (40009 particles, 10 tiles) give the unsharded results",
          "[runtime][sharding]") {
  const std::uint64_t seed = 23;
  const std::size_t total = 40009;
  Graph whole_graph(total, seed, Device::cpu);
  const Record whole = population_program(whole_graph);
  for (const std::vector<std::size_t>& counts : {std::vector<std::size_t>{20005, 20004}, {4097, 30000, 5912}}) {
    INFO("shards: " << counts.size());
    require_same(run_sharded(counts, seed, Device::cpu), whole);
  }
}

/// Shards of one size, a multiple of the tile (4096): a systematic resampling passes over each shard's own tiles
/// (gpu::ShardedSystematic), the others as before; every result equals the unsharded population's.
static void check_tile_aligned(Device device) {
  const std::uint64_t seed = 31;
  const std::size_t total = 8 * 4096;
  Graph whole_graph(total, seed, device);
  const Record whole = population_program(whole_graph);
  for (const std::size_t shards : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8}}) {
    INFO("shards: " << shards);
    require_same(run_sharded(std::vector<std::size_t>(shards, total / shards), seed, device), whole);
  }
}

/// What a program does between its observation and its resampling: nothing; a summary (whose parts bring the
/// resampling's plan); a summary, then an observation that changes the weights (the plan it brought is stale).
enum class BeforeResampling { nothing, summary, summary_then_observation };

/// The weight in a few particles (survivors[k]: the population's particle indices; every other particle's
/// log-weight is -inf), resampled systematically on tile-aligned shards: the ancestors and the moved values are the
/// unsharded population's. One survivor: a tile owning every position (the device's spread pass).
static void check_concentrated(Device device, const std::vector<std::size_t>& survivors, std::size_t shards,
                               BeforeResampling before = BeforeResampling::nothing) {
  const std::size_t total = 4 * 4096;
  const std::uint64_t seed = 7;
  auto program = [&](Graph& g) {
    const std::size_t first = g.shard().first, n = g.particles();
    const Variable x = g.assume(Binomial(3, 0.5));
    std::vector<std::int64_t> obs(n, 5);  // impossible, but for the survivors
    for (std::size_t k = 0; k < survivors.size(); ++k)
      if (survivors[k] >= first && survivors[k] < first + n)
        obs[survivors[k] - first] = static_cast<std::int64_t>(k % 4);
    g.observe(x, obs);
    std::vector<double> numbers;
    if (before != BeforeResampling::nothing) {
      const double half[] = {0.5};
      const auto summary = g.summarize(x, half);
      numbers.insert(numbers.end(), {summary.ess, static_cast<double>(summary.quantiles[0])});
    }
    if (before == BeforeResampling::summary_then_observation)  // every weight halved: a stale plan tells the old mean
      g.observe(g.binomial(g.assume(Binomial(1, 0.5)), 1.0), std::vector<std::int64_t>(n, 1));
    const auto step = g.resample_by_weight();
    numbers.insert(numbers.end(), {step.log_mean_weight, step.ess});
    return std::make_pair(step.ancestors.to_host(), numbers);
  };
  Graph whole_graph(total, seed, device);
  const auto whole = program(whole_graph);
  std::vector<std::size_t> ancestors;
  std::vector<std::vector<double>> summaries(shards);
  std::vector<std::vector<std::size_t>> parts(shards);
  InProcessGroup::run(shards, [&](std::shared_ptr<Communicator> comm) {
    Graph g(Shard::even(total, shards, comm->rank()), comm, seed, device);
    auto [a, s] = program(g);
    parts[comm->rank()] = std::move(a);
    summaries[comm->rank()] = std::move(s);
  });
  for (const auto& p : parts) ancestors.insert(ancestors.end(), p.begin(), p.end());
  REQUIRE(ancestors == whole.first);
  for (const auto& s : summaries) {  // the summary's ESS to rounding (its sums added in another order), else exactly
    REQUIRE(s.size() == whole.second.size());
    for (std::size_t k = 0; k < s.size(); ++k)
      if (before != BeforeResampling::nothing && k == 0) REQUIRE(s[k] == Approx(whole.second[k]).epsilon(1e-12));
      else REQUIRE(s[k] == whole.second[k]);
  }
}

TEST_CASE("Shards of one size at tile borders resample over their own tiles, as the unsharded population",
          "[runtime][sharding]") {
  check_tile_aligned(Device::cpu);
  check_concentrated(Device::cpu, {5000}, 4);
  check_concentrated(Device::cpu, {3, 4096 * 3 + 17}, 2);
  check_concentrated(Device::cpu, {1, 4095, 4096, 8191, 9000, 16383}, 4);
  for (const auto before : {BeforeResampling::summary, BeforeResampling::summary_then_observation}) {
    check_concentrated(Device::cpu, {5000}, 4, before);
    check_concentrated(Device::cpu, {1, 4095, 4096, 8191, 9000, 16383}, 4, before);
  }
}

/// The tile-aligned cases again with every resampling's particles asked for by the shards (their distinct
/// ancestors only) instead of sent as ranges.
static void check_requests(Device device) {
  struct Asking {  // TALLY_SHARD_REQUESTS_ABOVE=0 while it lives
    Asking() { setenv("TALLY_SHARD_REQUESTS_ABOVE", "0", 1); }
    ~Asking() { unsetenv("TALLY_SHARD_REQUESTS_ABOVE"); }
  } asking;
  check_tile_aligned(device);
  check_concentrated(device, {5000}, 4, BeforeResampling::summary);
  check_concentrated(device, {3, 4096 * 3 + 17}, 2);
  check_concentrated(device, {1, 4095, 4096, 8191, 9000, 16383}, 4, BeforeResampling::summary_then_observation);
}

TEST_CASE("Shards of one size at tile borders that ask for their distinct ancestors give the unsharded results",
          "[runtime][sharding]") {
  check_requests(Device::cpu);
  if (!gpu::cuda_available()) {
    WARN("device half skipped: " << gpu::device_description());
    return;
  }
  check_requests(Device::cuda);
}

TEST_CASE("A small population on more shards than tiles, every split", "[runtime][sharding]") {
  const std::uint64_t seed = 5;
  Graph whole_graph(7, seed, Device::cpu);
  const Record whole = population_program(whole_graph);
  for (const std::vector<std::size_t>& counts : {std::vector<std::size_t>{3, 4}, {1, 1, 5}, {2, 2, 2, 1}, {1, 1, 1, 4}})
    require_same(run_sharded(counts, seed, Device::cpu), whole);
}

TEST_CASE("G shards on one GPU give the unsharded device population's results", "[runtime][sharding][device]") {
  if (!gpu::cuda_available()) {
    WARN("device half skipped: " << gpu::device_description());
    return;
  }
  check_splits(Device::cuda);
}

TEST_CASE("Shards of one size on one GPU (whole log-weights gathered, summaries by parts) give the unsharded results",
          "[runtime][sharding][device]") {
  if (!gpu::cuda_available()) {
    WARN("device test skipped: " << gpu::device_description());
    return;
  }
  // many tiles, cut by the shards inside tiles and at their ends; systematic resamplings move ranges of particles
  const std::uint64_t seed = 29;
  const std::size_t total = 40000;
  Graph whole_graph(total, seed, Device::cuda);
  const Record whole = population_program(whole_graph);
  for (const std::vector<std::size_t>& counts :
       {std::vector<std::size_t>{20000, 20000},
        {10000, 10000, 10000, 10000},
        {5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000}}) {
    INFO("shards: " << counts.size());
    require_same(run_sharded(counts, seed, Device::cuda), whole);
  }
}

TEST_CASE("Shards of one size at tile borders on one GPU resample over their own tiles, as the unsharded population",
          "[runtime][sharding][device]") {
  if (!gpu::cuda_available()) {
    WARN("device test skipped: " << gpu::device_description());
    return;
  }
  check_tile_aligned(Device::cuda);
  check_concentrated(Device::cuda, {5000}, 4);
  check_concentrated(Device::cuda, {3, 4096 * 3 + 17}, 2);
  check_concentrated(Device::cuda, {1, 4095, 4096, 8191, 9000, 16383}, 4);
  for (const auto before : {BeforeResampling::summary, BeforeResampling::summary_then_observation}) {
    check_concentrated(Device::cuda, {5000}, 4, before);
    check_concentrated(Device::cuda, {1, 4095, 4096, 8191, 9000, 16383}, 4, before);
  }
}

TEST_CASE("Sharded resampling of an impossible population, explicit ancestors, and bad input", "[runtime][sharding]") {
  InProcessGroup::run(3, [](std::shared_ptr<Communicator> comm) {
    const Shard s = Shard::even(10, 3, comm->rank());
    Graph g(s, comm, 3, Device::cpu);
    const Variable x = g.assume(Binomial(4, 0.5));
    // -inf on one shard only: the population still resamples, that shard's particles get no offspring
    std::vector<std::int64_t> obs(s.count, s.index == 1 ? 9 : 2);
    g.observe(x, obs);
    const auto step = g.resample_by_weight();
    REQUIRE(step.resampled);
    for (const std::size_t a : step.ancestors.to_host()) CHECK((a < 4 || a >= 7));
    for (const std::int64_t v : g.value(x)) CHECK(v == 2);
    // every particle impossible: nothing changes, on every shard
    const Variable z = g.assume(Binomial(4, 0.5));
    g.observe(z, 7);
    const auto dead = g.resample_by_weight();
    CHECK(dead.log_mean_weight == -std::numeric_limits<double>::infinity());
    CHECK(dead.ancestors.empty());
    // explicit ancestors are the population's indices; a bad one on one shard throws on every shard
    g.reset_log_weights();
    std::vector<std::size_t> reversed(s.count);
    for (std::size_t i = 0; i < s.count; ++i) reversed[i] = 9 - (s.first + i);
    const Variable w = g.constant([&] {
      std::vector<std::int64_t> v(s.count);
      for (std::size_t i = 0; i < s.count; ++i) v[i] = static_cast<std::int64_t>(s.first + i);
      return v;
    }());
    // more live variables than the first collective's headers hold (32): the rest travel in a second
    std::vector<Variable> many;
    for (std::int64_t k = 0; k < 40; ++k) many.push_back(g.add(w, g.constant(k)));
    g.resample(reversed);
    const auto moved = g.value(w);
    for (std::size_t i = 0; i < s.count; ++i) CHECK(moved[i] == static_cast<std::int64_t>(9 - (s.first + i)));
    for (std::int64_t k = 0; k < 40; ++k) {
      const auto v = g.value(many[static_cast<std::size_t>(k)]);
      for (std::size_t i = 0; i < s.count; ++i) CHECK(v[i] == moved[i] + k);
    }
    std::vector<std::size_t> bad = reversed;
    if (s.index == 2) bad[0] = 10;
    CHECK_THROWS_AS(g.resample(bad), tally::domain_error);
    CHECK(g.value(w) == moved);  // unchanged
  });
}

TEST_CASE("Shards on one GPU: an impossible shard, an impossible population, a bad probability on one shard",
          "[runtime][sharding][device]") {
  if (!gpu::cuda_available()) {
    WARN("device test skipped: " << gpu::device_description());
    return;
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  InProcessGroup::run(3, [](std::shared_ptr<Communicator> comm) {
    const Shard s = Shard::even(12, 3, comm->rank());  // shards of one size: the device's sharded paths
    Graph g(s, comm, 3, Device::cuda);
    const Variable x = g.assume(Binomial(4, 0.5));
    // -inf on one shard only: the summary and the resampling weigh the other shards' particles
    std::vector<std::int64_t> obs(s.count, s.index == 1 ? 9 : 2);
    g.observe(x, obs);
    const double half[] = {0.5};
    const auto summary = g.summarize(x, half);
    CHECK_FALSE(summary.all_impossible);
    CHECK(summary.mean == 2.0);
    CHECK(summary.quantiles == std::vector<std::int64_t>{2});
    CHECK(summary.lo == 2);  // every particle's value, the impossible shard's 9 included
    CHECK(summary.hi == 9);
    const auto step = g.resample_by_weight();
    REQUIRE(step.resampled);
    for (const std::size_t a : step.ancestors.to_host()) CHECK((a < 4 || a >= 8));
    for (const std::int64_t v : g.value(x)) CHECK(v == 2);
    // every particle impossible: the unweighted summary; no resampling, on every shard
    g.observe(g.assume(Binomial(4, 0.5)), 7);
    const auto unweighted = g.summarize(x, half);
    CHECK(unweighted.all_impossible);
    CHECK(unweighted.mean == 2.0);
    const auto dead = g.resample_by_weight();
    CHECK(dead.log_mean_weight == -inf);
    CHECK(dead.ancestors.empty());
    // a probability outside [0, 1] on one shard: every shard throws, and the graph stays usable
    const double p[] = {s.index == 2 ? 1.5 : 0.5};
    CHECK_THROWS_AS(g.summarize(x, p), tally::domain_error);
    g.reset_log_weights();
    CHECK(g.summarize(x, half).mean == 2.0);
  });
}

TEST_CASE("Sharded resampling refuses joint laws with a usage_error, and the shards stay usable", "[runtime][sharding]") {
  InProcessGroup::run(2, [](std::shared_ptr<Communicator> comm) {
    Graph g(Shard::even(6, 2, comm->rank()), comm, 5, Device::cpu);
    const Variable a = g.assume(Binomial(20, 0.5));
    const Variable moved = g.binomial(a, 0.3), stayed = g.subtract(a, moved);  // both parts go on: a joint law
    g.observe(g.binomial(stayed, 0.5), 4);
    CHECK_THROWS_AS(g.resample_by_weight(), tally::runtime::usage_error);
    const auto after = g.observe(g.binomial(moved, 0.5), 2);  // still usable: the joint law conditions exactly
    CHECK(after.exactness().exact());
  });
}

TEST_CASE("InProcessGroup: a shard that throws stops the others' collectives", "[runtime][sharding]") {
  struct Boom : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  int reached = 0;
  CHECK_THROWS_AS(InProcessGroup::run(3,
                                      [&](std::shared_ptr<Communicator> comm) {
                                        Graph g(Shard::even(30, 3, comm->rank()), comm, 1, Device::cpu);
                                        g.observe(g.assume(Binomial(4, 0.5)), 2);
                                        if (comm->rank() == 1) throw Boom("shard 1 fails");
                                        try {
                                          g.resample_by_weight();
                                        } catch (const communicator_error&) {
                                          ++reached;
                                          throw;
                                        }
                                      }),
                  Boom);
  CHECK(reached == 2);
  // a shard that returns while the others enter a collective
  CHECK_THROWS_AS(InProcessGroup::run(2,
                                      [&](std::shared_ptr<Communicator> comm) {
                                        Graph g(Shard::even(4, 2, comm->rank()), comm, 1, Device::cpu);
                                        if (comm->rank() == 0) g.resample_by_weight();
                                      }),
                  communicator_error);
  CHECK_THROWS_AS(Graph(Shard{1, 4, 0, 4}, nullptr, 1, Device::cpu), usage_error);
}

#if defined(TALLY_HAVE_NCCL)
/// Whether this test runs as one of several ranks: started by scripts/launch-local, or by mpirun (MPI bootstrap).
static bool launched_ranks() {
#if defined(TALLY_HAVE_MPI)
  if (MpiBootstrap::launched()) return true;
#endif
  return LauncherBootstrap::launched();
}
/// The launched ranks' communicator, made once for the program (MPI is initialized once, and finalized at exit).
static std::shared_ptr<NcclCommunicator> launched_communicator() {
  if (LauncherBootstrap::launched()) {
    static const auto comm = LauncherBootstrap().nccl();
    return comm;
  }
#if defined(TALLY_HAVE_MPI)
  static MpiBootstrap mpi(nullptr, nullptr);
  static const auto comm = mpi.nccl();
  return comm;
#else
  throw std::logic_error("no launcher");
#endif
}

TEST_CASE("The NCCL communicator with one rank on one GPU gives the unsharded results", "[runtime][sharding][nccl]") {
  if (!gpu::cuda_available()) {
    WARN("NCCL test skipped: " << gpu::device_description());
    return;
  }
  if (launched_ranks()) {  // a launched rank uses its own GPU only (tally: one device per process)
    WARN("one-rank NCCL test skipped under a launcher: the launched test below covers it");
    return;
  }
  // NCCL cannot put two ranks on one device: one rank here; several need several GPUs (README, "Several GPUs").
  const std::uint64_t seed = 17;
  Graph whole_graph(5000, seed, Device::cuda);
  const Record whole = population_program(whole_graph);
  auto comm = std::make_shared<NcclCommunicator>(NcclCommunicator::unique_id(), 0, 1, 0);
  Graph g(Shard{0, 5000, 0, 5000}, comm, seed, Device::cuda);
  require_same(population_program(g), whole);
}
/// The part of the unsharded record that one shard holds: its particles' entries, and every population-wide number.
static Record slice(const Record& whole, std::size_t first, std::size_t count) {
  Record out = whole;
  auto cut = [&](auto& rows) {
    for (auto& row : rows)
      if (row.size() == whole.population)  // (a resampling that did not resample has no ancestors)
        row = std::decay_t<decltype(row)>(row.begin() + static_cast<std::ptrdiff_t>(first),
                                          row.begin() + static_cast<std::ptrdiff_t>(first + count));
  };
  cut(out.values);
  cut(out.log_weights);
  cut(out.beta_draws);
  cut(out.engine_draws);
  cut(out.ancestors);
  cut(out.laws);
  return out;
}

TEST_CASE("The NCCL communicator across launched ranks, one GPU each, gives each rank its part of the unsharded "
          "results",
          "[runtime][sharding][nccl]") {
  if (!launched_ranks()) {
    WARN("several ranks skipped: start it as scripts/launch-local G test_runtime \"[nccl]\", or under mpirun -np G "
         "(README, Several GPUs)");
    return;
  }
  if (!gpu::cuda_available()) {
    WARN("NCCL test skipped: " << gpu::device_description());
    return;
  }
  auto comm = launched_communicator();
  const std::uint64_t seed = 17;
  // 49152 = 12 tiles: shards of one size at tile borders for 1, 2, 3 and 4 ranks (each over its own tiles)
  for (const std::size_t total : {std::size_t{5000}, std::size_t{100003}, std::size_t{49152}}) {
    INFO("rank " << comm->rank() << " of " << comm->size() << " on device " << comm->device() << ", " << total
                 << " particles");
    Graph whole_graph(total, seed, Device::cuda);  // every rank computes the whole population on its own GPU
    const Record whole = population_program(whole_graph);
    const Shard shard = Shard::even(total, comm->size(), comm->rank());
    Graph g(shard, comm, seed, Device::cuda);
    require_same(population_program(g), slice(whole, shard.first, shard.count));
  }
}
#endif

}  // namespace test_sharding
