// Joint operations computed as batches (Truncation::joint_batches, runtime/src/joint/batches.hpp): the batch forms
// against the host's one-table-at-a-time operations, on the examples and on filters whose particles hold different
// joint tables; on a CUDA graph, the device's batches against the host graph.
#include <catch2/catch.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "gpu/device.hpp"
#include "models/joint_programs.hpp"
#include "runtime/src/joint/batches.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_joint_batches {

using namespace tally;
using namespace tally::runtime;
namespace mj = tally::models::joint;
using Mode = Truncation::JointBatches;

namespace {

Truncation batches(Mode mode, std::int64_t entries = std::int64_t{1} << 16) {
  Truncation t;
  t.joint_batches = mode;
  t.joint_batch_entries = entries;
  return t;
}

std::uint64_t batches_so_far() { return tally::runtime::detail::joint_steps::batches_run().load(); }

double total(const std::vector<Observation>& obs, std::size_t i) {
  double s = 0;
  for (const auto& o : obs) s += o[i];
  return s;
}
double bound(const std::vector<Observation>& obs) {
  double s = 0;
  for (const auto& o : obs) s += o.exactness().truncation_error;
  return s;
}

/// Two runs' log-likelihoods agree to rounding (the batch forms and the host's evaluate different but exact
/// formulas), and each is within the other's carried bound.
void require_same_likelihoods(const std::vector<Observation>& want, const std::vector<Observation>& got, std::size_t P) {
  REQUIRE(want.size() == got.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("observation " << k);
    CHECK(want[k].exact() == got[k].exact());
    CHECK(std::isfinite(got[k].exactness().truncation_error));
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ": host " << want[k][i] << ", batch " << got[k][i]);
      REQUIRE(std::abs(got[k][i] - want[k][i]) <= 1e-10 * std::max(1.0, std::abs(want[k][i])));
    }
  }
}

void require_same_marginals(Graph& host, const Variable& x, Graph& batch, const Variable& y) {
  const auto want = host.marginal(x), got = batch.marginal(y);
  REQUIRE(want.size() == got.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Pmf a = want[i].normalized(), b = got[i].normalized();
    for (std::int64_t v = std::min(a.lo(), b.lo()); v <= std::max(a.hi(), b.hi()); ++v) {
      INFO("particle " << i << ", value " << v);
      const double p = pdf(a, v), q = pdf(b, v);
      REQUIRE(std::abs(p - q) <= 1e-10 * std::max(p, 1e-300) + 1e-15);
    }
  }
}

}  // namespace

TEST_CASE("joint batches: the host's threads visit every table once, split by weight, and pass on a failure",
          "[runtime][batches]") {
  namespace js = tally::runtime::detail::joint_steps;
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{300}, std::size_t{5000}}) {
    INFO("tables " << n);
    std::vector<std::size_t> weight(n);
    for (auto& w : weight) w = std::uniform_int_distribution<std::size_t>(0, 40000)(gen);
    std::vector<std::atomic<int>> visits(n);
    js::parallel_tables(
        n, [&](std::size_t k) { return weight[k]; }, [&](std::size_t k) { visits[k].fetch_add(1); }, 4096);
    for (std::size_t k = 0; k < n; ++k) REQUIRE(visits[k].load() == 1);
    if (n == 0) continue;
    const std::size_t bad = std::uniform_int_distribution<std::size_t>(0, n - 1)(gen);
    CHECK_THROWS_AS(js::parallel_tables(
                        n, [&](std::size_t k) { return weight[k]; },
                        [&](std::size_t k) {
                          if (k == bad) throw tally::domain_error("table " + std::to_string(k));
                        },
                        4096),
                    tally::domain_error);
  }
}

TEST_CASE("joint batches: many random tables summed out as one batch (on the host's threads) give the host's "
          "marginals", "[runtime][batches]") {
  namespace js = tally::runtime::detail::joint_steps;
  const std::uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  // 48 tables of 40 x 300 to 60 x 500 entries: past 2^16 entries a part, so that a 2-core machine splits them
  const std::size_t n = 48;
  std::vector<std::shared_ptr<const JointPmf>> made;
  for (std::size_t k = 0; k < n; ++k) {
    const std::int64_t rows = 40 + std::int64_t(gen() % 21), cols = 300 + std::int64_t(gen() % 201);
    Eigen::VectorXd w(rows * cols);
    for (auto& x : w) x = u(gen) < 0.1 ? 0.0 : u(gen);
    made.push_back(std::make_shared<const JointPmf>(Coordinates{std::int64_t(gen() % 5), -std::int64_t(gen() % 9)},
                                                    Coordinates{rows, cols}, std::move(w), u(gen) - 0.5, 1e-9 * u(gen)));
  }
  const js::Tables in = js::Tables::make(n, [&](std::size_t k) { return made[k]; });
  js::Starts starts(n);
  for (std::size_t k = 0; k < n; ++k) starts[k] = k;
  tally::runtime::detail::JointGroup host;
  host.set(in);
  for (const int axis : {0, 1}) {
    // the host's tables into one batch, summed out there, then kept resident and read back as host tables
    js::BatchOut out = js::sum_out_batch(js::batch_input(host, starts, gpu::Backend::cpu), axis);
    REQUIRE(out.laws.size() == n);
    REQUIRE(out.log_mass.size() == n);
    std::vector<std::uint32_t> index(n);
    // particle k holds table n - 1 - k
    for (std::size_t k = 0; k < n; ++k) index[k] = static_cast<std::uint32_t>(n - 1 - k);
    tally::runtime::detail::JointGroup resident;
    resident.set(tally::runtime::detail::JointGroup::Resident{
        std::make_shared<const gpu::JointLaws>(std::move(out.laws)), out.bounds, out.log_mass, index});
    REQUIRE(resident.resident());
    CHECK_FALSE(resident.uniform());
    CHECK_FALSE(resident.repeats(1));
    const js::Tables got_all = resident.laws();  // made on the host's threads
    REQUIRE_FALSE(resident.resident());
    REQUIRE(got_all.size() == n);
    for (std::size_t k = 0; k < n; ++k) {
      INFO("table " << k << ", axis " << axis);
      const JointPmf want = marginalize_out(*in[k], axis);
      const JointPmf& got = *got_all[n - 1 - k];
      CHECK(out.log_mass[k] == Approx(in[k]->log_mass()).epsilon(1e-14));
      REQUIRE(got.lo() == want.lo());
      REQUIRE(got.shape() == want.shape());
      CHECK(got.error_bound() == in[k]->error_bound());
      CHECK(std::abs(got.log_scale() - want.log_scale()) <= 1e-12);
      for (Eigen::Index e = 0; e < want.size(); ++e)
        REQUIRE(std::abs(got.weights()[e] - want.weights()[e]) <= 1e-13);
    }
  }
}

TEST_CASE("joint batches: the examples computed as batches (the CPU reference loops) give the host's evidence",
          "[runtime][joint][batches]") {
  const auto live = Graph::live_nodes();
  {
    const mj::Migration w;
    Graph host(1, 1, batches(Mode::host));
    const mj::MigrationRun want = mj::run_migration(host, w);
    const std::uint64_t before = batches_so_far();
    Graph batch(1, 1, batches(Mode::batched));
    const mj::MigrationRun got = mj::run_migration(batch, w);
    CHECK(batches_so_far() > before + 20);  // every season's operations ran as batches
    require_same_likelihoods(want.observations, got.observations, 1);
    // sound: the two evidences (both within rounding of the exact one) are within the batch's carried bound
    CHECK(std::abs(total(got.observations, 0) - total(want.observations, 0)) <= bound(got.observations) + 1e-12);
    require_same_marginals(host, want.a, batch, got.a);
    require_same_marginals(host, want.b, batch, got.b);
  }
  {
    const mj::RateHmm h;
    Graph host(1, 1, batches(Mode::host)), batch(1, 1, batches(Mode::batched));
    const mj::RateHmmRun want = mj::run_rate_hmm(host, h), got = mj::run_rate_hmm(batch, h);
    require_same_likelihoods(want.observations, got.observations, 1);
    for (std::size_t k = 0; k < want.rates.size(); ++k) require_same_marginals(host, want.rates[k], batch, got.rates[k]);
  }
  {
    Graph host(1, 1, batches(Mode::host)), batch(1, 1, batches(Mode::batched));
    const mj::WetGrassRun want = mj::run_wet_grass(host, mj::WetGrass{}), got = mj::run_wet_grass(batch, mj::WetGrass{});
    CHECK(got.wet[0] == Approx(want.wet[0]).epsilon(1e-13));
  }
  CHECK(Graph::live_nodes() == live);
}

TEST_CASE("joint batches: a filter whose particles hold different joint tables gives the host's likelihoods, draws "
          "and marginals",
          "[runtime][joint][batches]") {
  namespace js = tally::runtime::detail::joint_steps;
  const auto live = Graph::live_nodes();
  {
    const mj::Migration w;
    const std::size_t P = 4;
    Graph host(P, 7, Device::cpu, batches(Mode::host));
    const mj::DrawnImmigrantsRun want = mj::run_migration_drawn_immigrants(host, w);
    const std::uint64_t before = batches_so_far(), to_host = js::tables_to_host();
    Graph batch(P, 7, Device::cpu, batches(Mode::batched));
    const mj::DrawnImmigrantsRun got = mj::run_migration_drawn_immigrants(batch, w);
    CHECK(batches_so_far() > before + 20);
    // the tables stayed in their batch from one operation to the next: none came to the host during the filter
    CHECK(js::tables_to_host() - to_host == 0);
    REQUIRE(got.immigrants == want.immigrants);  // the same draws (from the priors)
    bool differ = false;  // the particles' tables differ: so do their likelihoods
    for (std::size_t i = 1; i < P; ++i) differ = differ || got.observations.back()[i] != got.observations.back()[0];
    CHECK(differ);
    require_same_likelihoods(want.observations, got.observations, P);
    require_same_marginals(host, want.a, batch, got.a);
    require_same_marginals(host, want.b, batch, got.b);
    // draws from the joint posterior: the same values (inverse cdf over laws equal to rounding)
    CHECK(host.value(want.a) == batch.value(got.a));
    CHECK(host.value(want.b) == batch.value(got.b));
    // the marginals, the draw of a (b's tables sliced at it) and b's law once alone were read in the batch too
    CHECK(js::tables_to_host() - to_host == 0);
  }
  {
    // `automatic` on a host graph: one table after another, never a batch
    const std::uint64_t before = batches_so_far();
    Graph g(4, 7, Device::cpu, batches(Mode::automatic, 1));
    mj::run_migration_drawn_immigrants(g, mj::Migration{});
    CHECK(batches_so_far() == before);
  }
  CHECK(Graph::live_nodes() == live);
}

namespace {

/// What the programs below report: their observations and two variables whose marginals are compared.
struct TwoCounts {
  std::vector<Observation> observations;
  Variable a, b;
};

/// A program run on a graph of the host's tables and on one of batches: batches ran, no resident table came to the
/// host, and the likelihoods and both marginals are the host's. Returns the batches' run.
template <class Program>
TwoCounts require_batched_as_host(Graph& host, Graph& batch, Program run) {
  namespace js = tally::runtime::detail::joint_steps;
  const TwoCounts want = run(host);
  const std::uint64_t before = batches_so_far(), to_host = js::tables_to_host();
  TwoCounts got = run(batch);
  CHECK(batches_so_far() > before);
  CHECK(js::tables_to_host() - to_host == 0);
  require_same_likelihoods(want.observations, got.observations, host.particles());
  require_same_marginals(host, want.a, batch, got.a);
  require_same_marginals(host, want.b, batch, got.b);
  return got;
}

/// Two independent counts per particle (their laws differ between particles), each in a joint law of its own: A with
/// its thinned child B summed to it, C added to itself; then the two sums are added (the two groups' outer product
/// in each particle) and observed; then a third count's Poisson child added to the count's own sum and observed.
TwoCounts run_two_groups(Graph& g) {
  const std::size_t P = g.particles();
  std::vector<Binomial> la;
  std::vector<Poisson> lc;
  for (std::size_t i = 0; i < P; ++i) {
    la.emplace_back(6 + std::int64_t(i % 3), 0.5);
    lc.emplace_back(2.0 + 0.5 * double(i % 4));
  }
  TwoCounts r{{}, g.assume(la), g.assume(lc)};
  const Variable b = g.binomial(r.a, 0.3);
  const Variable ab = g.add(b, r.a), cc = g.add(r.b, r.b);
  r.observations.push_back(g.observe(g.add(ab, cc), 9));
  // a Poisson child of a member of a third group (D added to itself) joins its law, appended on each table's window
  std::vector<Binomial> ld;
  for (std::size_t i = 0; i < P; ++i) ld.emplace_back(4 + std::int64_t(i % 5), 0.6);
  const Variable d = g.assume(ld), dd = g.add(d, d);
  r.observations.push_back(g.observe(g.add(g.assume(d, ScaledPoisson(0.8)), dd), 9));
  return r;
}

}  // namespace

namespace {

/// Groups of particles, each with its own laws (G groups of S): a count A and its thinned child B summed (a joint
/// law of the two), B's own thinning C and a Markov step M of A, each a law per group, C and M observed; then such
/// children summed with a member (they join the law) and observed, a Poisson child per group (of another count) too,
/// and the first sum observed: every operation on the joint law under each group's own child law.
TwoCounts run_per_group(Graph& g, std::size_t G) {
  std::vector<Binomial> la;
  std::vector<Thinning> lb, lc;
  std::vector<MarkovStep> lm;
  for (std::size_t k = 0; k < G; ++k) {
    la.emplace_back(5 + std::int64_t(k % 3), 0.3 + 0.1 * double(k % 4));
    lb.emplace_back(0.2 + 0.15 * double(k % 5));
    lc.emplace_back(0.9 - 0.1 * double(k % 3));
    Eigen::MatrixXd t(8, 3);
    for (int r = 0; r < 8; ++r) {
      const double p = 0.1 + 0.8 * double((r + int(k)) % 5) / 4.0;
      t.row(r) << p * 0.5, p * 0.5, 1.0 - p;
    }
    lm.emplace_back(t);
  }
  TwoCounts r{{}, g.assume(la), {}};
  r.b = g.assume(r.a, lb);
  const Variable sum = g.add(r.a, r.b);
  const Variable c = g.assume(r.b, lc), m = g.assume(r.a, lm);
  r.observations.push_back(g.observe(c, 1));
  r.observations.push_back(g.observe(m, 2));
  // children of members that join the law: summed with a member, observed
  const Variable d = g.assume(r.b, lc), n = g.assume(r.a, lm);
  r.observations.push_back(g.observe(g.add(d, r.a), 4));
  r.observations.push_back(g.observe(g.add(n, r.b), 3));
  // a Poisson child per group of a member of another law (E added to itself), appended on each table's window
  std::vector<ScaledPoisson> lp;
  for (std::size_t k = 0; k < G; ++k) lp.emplace_back(0.4 + 0.2 * double(k % 3));
  const Variable e = g.assume(la), ee = g.add(e, e);
  r.observations.push_back(g.observe(g.add(g.assume(e, lp), ee), 7));
  r.observations.push_back(g.observe(sum, 6));
  return r;
}

}  // namespace

TEST_CASE("joint batches: a child law per group runs as a batch, each table under its own group's law",
          "[runtime][joint][batches][groups]") {
  const std::size_t G = 6, S = 3;
  Graph host(Groups{G, S}, 9, Device::cpu, batches(Mode::host));
  Graph batch(Groups{G, S}, 9, Device::cpu, batches(Mode::batched));
  const TwoCounts got = require_batched_as_host(host, batch, [&](Graph& g) { return run_per_group(g, G); });
  bool differ = false;  // the groups' laws differ: so do their likelihoods
  for (std::size_t i = S; i < G * S; i += S) differ = differ || got.observations[0][i] != got.observations[0][0];
  CHECK(differ);
}

TEST_CASE("joint batches: two groups multiplied (an outer product) as a batch give the host's likelihoods and "
          "marginals",
          "[runtime][joint][batches]") {
  Graph host(12, 3, Device::cpu, batches(Mode::host)), batch(12, 3, Device::cpu, batches(Mode::batched));
  require_batched_as_host(host, batch, run_two_groups);
}

TEST_CASE("joint batches: on a CUDA graph the device's batches give the host graph's likelihoods and draws",
          "[runtime][joint][batches][device]") {
  if (tally::test::skip_without_device()) return;
  const mj::Migration w;
  const std::size_t P = 64;
  Graph host(P, 5, Device::cpu, batches(Mode::host));
  const mj::DrawnImmigrantsRun want = mj::run_migration_drawn_immigrants(host, w);
  namespace js = tally::runtime::detail::joint_steps;
  const std::uint64_t before = batches_so_far(), to_host = js::tables_to_host();
  Graph device(P, 5, Device::cuda, batches(Mode::automatic, 1));  // every operation with a batch form batches
  const mj::DrawnImmigrantsRun got = mj::run_migration_drawn_immigrants(device, w);
  CHECK(batches_so_far() > before + 20);
  REQUIRE(got.immigrants == want.immigrants);
  require_same_likelihoods(want.observations, got.observations, P);
  require_same_marginals(host, want.a, device, got.a);
  require_same_marginals(host, want.b, device, got.b);
  CHECK(host.value(want.a) == device.value(got.a));
  require_same_marginals(host, want.b, device, got.b);  // b given a, read from the device's slices
  CHECK(host.value(want.b) == device.value(got.b));
  CHECK(js::tables_to_host() - to_host == 0);  // marginals, draws and the slices all on the device
  // two groups multiplied, a child law per group: on the device
  Graph host2(P, 3, Device::cpu, batches(Mode::host)), device2(P, 3, Device::cuda, batches(Mode::automatic, 1));
  require_batched_as_host(host2, device2, run_two_groups);
  const std::size_t G = 16, S = 4;
  Graph host3(Groups{G, S}, 9, Device::cpu, batches(Mode::host));
  Graph device3(Groups{G, S}, 9, Device::cuda, batches(Mode::automatic, 1));
  require_batched_as_host(host3, device3, [&](Graph& g) { return run_per_group(g, G); });
}

}  // namespace test_joint_batches
