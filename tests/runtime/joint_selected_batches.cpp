// Joint operations on children of several members and on splits per group, computed as batches: a Poisson emission
// or a thinning whose parameter a state member selects, appended or observed, with every parent a member or one of
// them realized; a count split by a thinning per group. Each against the host's one-table-at-a-time operations (the
// same likelihoods and marginals), with each operation's own batch counted, and on a CUDA graph against the host graph.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gpu/device.hpp"
#include "runtime/src/joint/batches.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_joint_selected_batches {

using namespace tally;
using namespace tally::runtime;
using Mode = Truncation::JointBatches;
namespace js = tally::runtime::detail::joint_steps;

namespace {

Truncation batches(Mode mode) {
  Truncation t;
  t.joint_batches = mode;
  t.joint_batch_entries = 1;  // on a CUDA graph, every operation with a batch form batches
  return t;
}

std::uint64_t batches_so_far() { return js::batches_run().load(); }

/// What a program reports: its observations, the batches that each step of interest ran, and the variables whose
/// marginals are compared.
struct Run {
  std::vector<Observation> observations;
  std::vector<std::uint64_t> step_batches;
  std::vector<Variable> read;
};

/// f() run as one step: the batches it ran appended to r.step_batches.
template <class F>
void step(Run& r, F f) {
  const std::uint64_t before = batches_so_far();
  f();
  r.step_batches.push_back(batches_so_far() - before);
}

/// A state S in {0, 1} and two rates R_0, R_1 whose laws differ between particles, coupled into one joint law by an
/// observed sum; then Y ~ Poisson(0.7 R_S) appended (every parent a member). A second state S' coupled with a count
/// R the same way, a count C drawn, and T ~ Binomial(C, q_{S'}) appended (a realized parent: a constant axis) and
/// U ~ Binomial(C, q'_{S'}) observed (the same); then Y + R_0 and T + R observed.
Run run_selected(Graph& g) {
  const std::size_t P = g.particles();
  std::vector<Binomial> ls, l0, l1, lc;
  for (std::size_t i = 0; i < P; ++i) {
    ls.emplace_back(1, 0.3 + 0.1 * double(i % 5));
    l0.emplace_back(5 + std::int64_t(i % 3), 0.5);
    l1.emplace_back(3 + std::int64_t(i % 4), 0.6);
    lc.emplace_back(6 + std::int64_t(i % 2), 0.5);
  }
  Run r;
  const Variable s = g.assume(ls), r0 = g.assume(l0), r1 = g.assume(l1);
  r.observations.push_back(g.observe(g.add(g.add(s, r0), r1), 6));
  const Variable y = g.poisson(s, {r0, r1}, 0.7);
  step(r, [&] { g.marginal(y); });  // Y appended to the group's tables
  const Variable s2 = g.assume(ls), r2 = g.assume(l1);
  r.observations.push_back(g.observe(g.add(s2, r2), 3));
  const Variable c = g.assume(lc);
  g.value(c);  // drawn: a realized parent below
  const Variable t = g.binomial(c, s2, {0.3, 0.8});
  step(r, [&] { g.marginal(t); });  // T appended, C a constant axis
  const Variable u = g.binomial(c, s2, {0.6, 0.1});
  step(r, [&] { r.observations.push_back(g.observe(u, 0)); });  // U observed, C a constant axis
  r.observations.push_back(g.observe(g.add(y, r0), 7));
  r.observations.push_back(g.observe(g.add(t, r2), 3));
  r.read = {s, r1, s2, r2};
  return r;
}

/// Groups of particles, each with its own laws: a count X, its thinning Y by the group's own probability, and Z =
/// X - Y while nothing else holds X (X split in place into (Z, Y) under each group's thinning); then Z + Y and Y's
/// own thinning per group observed.
Run run_split(Graph& g, std::size_t G) {
  std::vector<Binomial> lx;
  std::vector<Thinning> ly, lw;
  for (std::size_t k = 0; k < G; ++k) {
    lx.emplace_back(6 + std::int64_t(k % 3), 0.4 + 0.1 * double(k % 4));
    ly.emplace_back(0.15 + 0.1 * double(k % 6));
    lw.emplace_back(0.8 - 0.1 * double(k % 3));
  }
  Run r;
  Variable y, z;
  {
    const Variable x = g.assume(lx);
    y = g.assume(x, ly);
    z = g.subtract(x, y);
  }
  step(r, [&] { g.marginal(z); });  // the split per group
  r.observations.push_back(g.observe(g.add(z, y), 5));
  r.observations.push_back(g.observe(g.assume(y, lw), 1));
  r.read = {y, z};
  return r;
}

/// The runs' likelihoods (to rounding: the batch forms and the host's evaluate different but exact formulas) and
/// the marginals of the variables read.
void require_same(Graph& host, const Run& want, Graph& other, const Run& got) {
  REQUIRE(want.observations.size() == got.observations.size());
  for (std::size_t k = 0; k < want.observations.size(); ++k) {
    INFO("observation " << k);
    CHECK(want.observations[k].exact() == got.observations[k].exact());
    CHECK(std::isfinite(got.observations[k].exactness().truncation_error));
    for (std::size_t i = 0; i < host.particles(); ++i) {
      const double a = want.observations[k][i], b = got.observations[k][i];
      INFO("particle " << i << ": host " << a << ", batch " << b);
      REQUIRE(std::isfinite(a));
      REQUIRE(std::abs(b - a) <= 1e-10 * std::max(1.0, std::abs(a)));
    }
  }
  for (std::size_t v = 0; v < want.read.size(); ++v) {
    const auto a = host.marginal(want.read[v]), b = other.marginal(got.read[v]);
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const Pmf p = a[i].normalized(), q = b[i].normalized();
      for (std::int64_t x = std::min(p.lo(), q.lo()); x <= std::max(p.hi(), q.hi()); ++x) {
        INFO("variable " << v << ", particle " << i << ", value " << x);
        REQUIRE(std::abs(pdf(p, x) - pdf(q, x)) <= 1e-10 * std::max(pdf(p, x), 1e-300) + 1e-15);
      }
    }
  }
}

/// The program on a host-tables graph and on a batches graph: the same results, no resident table brought to the
/// host, and each step of interest ran a batch of its own (its host form runs none). Returns the batches' run.
template <class Program>
Run require_batched_as_host(Graph& host, Graph& batch, Program run) {
  const Run want = run(host);
  for (const std::uint64_t n : want.step_batches) CHECK(n == 0);
  const std::uint64_t to_host = js::tables_to_host();
  Run got = run(batch);
  CHECK(js::tables_to_host() - to_host == 0);
  for (std::size_t k = 0; k < got.step_batches.size(); ++k) {
    INFO("step " << k);
    CHECK(got.step_batches[k] >= 1);
  }
  require_same(host, want, batch, got);
  return got;
}

}  // namespace

TEST_CASE("joint batches: a child of several members, appended or observed, with a realized parent too, runs as a "
          "batch and gives the host's likelihoods and marginals",
          "[runtime][joint][batches]") {
  Graph host(24, 5, Device::cpu, batches(Mode::host)), batch(24, 5, Device::cpu, batches(Mode::batched));
  const Run got = require_batched_as_host(host, batch, run_selected);
  bool differ = false;  // the particles' tables differ: so do their likelihoods
  for (std::size_t i = 1; i < 24; ++i) differ = differ || got.observations[1][i] != got.observations[1][0];
  CHECK(differ);
}

TEST_CASE("joint batches: a count split by a thinning per group runs as a batch, each table under its group's",
          "[runtime][joint][batches][groups]") {
  const std::size_t G = 6, S = 3;
  Graph host(Groups{G, S}, 9, Device::cpu, batches(Mode::host));
  Graph batch(Groups{G, S}, 9, Device::cpu, batches(Mode::batched));
  const Run got = require_batched_as_host(host, batch, [&](Graph& g) { return run_split(g, G); });
  bool differ = false;
  for (std::size_t i = S; i < G * S; i += S) differ = differ || got.observations[0][i] != got.observations[0][0];
  CHECK(differ);
}

TEST_CASE("joint batches: on a CUDA graph, children of several members and splits per group give the host graph's "
          "results",
          "[runtime][joint][batches][device]") {
  if (tally::test::skip_without_device()) return;
  Graph host(64, 5, Device::cpu, batches(Mode::host)), device(64, 5, Device::cuda, batches(Mode::automatic));
  require_batched_as_host(host, device, run_selected);
  const std::size_t G = 16, S = 4;
  Graph host2(Groups{G, S}, 9, Device::cpu, batches(Mode::host));
  Graph device2(Groups{G, S}, 9, Device::cuda, batches(Mode::automatic));
  require_batched_as_host(host2, device2, [&](Graph& g) { return run_split(g, G); });
}

}  // namespace test_joint_selected_batches
