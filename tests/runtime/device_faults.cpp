// Fault injection on the device: every device allocation of a filter step of each model fails in turn.
// Each failure must be a device_memory_error naming how many particles would fit; the engine retries the failed
// operation and goes on, and the run must then equal a run that never failed (the graph stays usable and exact);
// no device memory and no node leaks. Device tests: skipped without a GPU (run them under compute-sanitizer).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"

namespace test_device_faults {

using namespace tally;
using namespace tally::runtime;

namespace {

constexpr std::size_t particles = 64;

/// A model's filter, written as the engine writes it, cut into operations: operation j of step t is one call of
/// the Graph API (or of gpu::, for the engine's own arrays), which either succeeds or throws and changes no handle
/// the program holds, so that the engine can retry it. `start()` makes the Graph.
struct Program {
  virtual ~Program() = default;
  virtual void start() = 0;
  virtual std::size_t operations(std::size_t t) const = 0;
  /// Operation j of step t; `graph_only`: false when it also calls gpu:: directly (whose errors cannot know P).
  virtual void run(std::size_t t, std::size_t j) = 0;
  virtual bool graph_only(std::size_t /*t*/, std::size_t /*j*/) const { return true; }
  /// What the comparison with a run that never failed reads after each step: log-weights and the state's values.
  virtual std::vector<std::int64_t> state() = 0;
  std::optional<Graph> g;
};

/// x_0 ~ Categorical(init); x_t ~ Categorical(T[x_{t-1}]); y_t ~ Poisson(rates[x_t]) (models/hmm.cpp's delayed
/// filter: observe, then x_t drawn from its posterior, weighted states, resampling when ESS < P/2).
struct Hmm : Program {
  Eigen::VectorXd init = Eigen::Vector3d(0.5, 0.3, 0.2);
  Eigen::MatrixXd T = (Eigen::MatrixXd(3, 3) << 0.85, 0.10, 0.05, 0.10, 0.80, 0.10, 0.05, 0.15, 0.80).finished();
  Eigen::VectorXd rates = Eigen::Vector3d(2, 10, 25);
  std::vector<std::int64_t> y{3, 12, 9, 27};
  Variable x, obs;
  void start() override {
    g.emplace(particles, 5, Device::cuda);
    x = g->assume(Categorical(init));
  }
  std::size_t operations(std::size_t) const override { return 6; }
  void run(std::size_t t, std::size_t j) override {
    switch (j) {
      case 0: if (t > 0) x = g->assume(x, MarkovStep(T)); break;
      case 1: obs = g->assume(x, IndexedPoisson(rates)); break;
      case 2: g->observe(obs, y[t % y.size()]); break;
      case 3: g->realize(x); break;
      case 4: g->value(x); break;
      case 5: g->resample_by_weight(0.5); break;
    }
  }
  std::vector<std::int64_t> state() override { return g->value(x); }
};

/// N_0 ~ Poisson(50); N_t = Binomial(N_{t-1}, 0.8) + Poisson(10); y_t ~ Binomial(N_t, 0.6) (models/population.cpp's
/// delayed filter: S_t, I_t, N_t marginalized, y_t observed, N_t drawn, summarized, resampled when ESS < P/2).
struct Population : Program {
  std::vector<std::int64_t> y{31, 30, 34, 29};
  Variable N, S, I, obs;
  void start() override {
    g.emplace(particles, 9, Device::cuda);
    N = g->assume(Poisson(50.0));
  }
  std::size_t operations(std::size_t) const override { return 8; }
  void run(std::size_t t, std::size_t j) override {
    static constexpr double band[] = {0.05, 0.95};
    switch (j) {
      case 0: if (t > 0) S = g->binomial(N, 0.8); break;
      case 1: if (t > 0) I = g->assume(Poisson(10.0)); break;
      case 2: if (t > 0) N = g->add(S, I); break;
      case 3: obs = g->binomial(N, 0.6); break;
      case 4: g->observe(obs, y[t % y.size()]); break;
      case 5: g->realize(N); break;
      case 6: g->summarize(N, band); break;
      case 7: g->resample_by_weight(0.5); break;
    }
  }
  std::vector<std::int64_t> state() override { return g->value(N); }
};

/// models/sir.cpp's delayed filter on the boarding-school outbreak: delta, gamma ~ Beta(2, 2) stay conjugate; the
/// contacts tau ~ Binomial(S, hazard(I)) are drawn (a chain binomial), new ~ Binomial(tau, delta) and rec ~
/// Binomial(I, gamma) stay marginalized until new - rec is observed; S, R summarized; resampled every day.
struct Sir : Program {
  std::vector<std::int64_t> infected{3, 3, 8, 26, 76};
  Continuous delta, gamma;
  Variable S, I, R, tau, n, r, d, seen, change;
  std::optional<gpu::Column<double>> hazard;
  void start() override {
    g.emplace(particles, 3, Device::cuda);
    delta = g->assume(runtime::Beta(2, 2));
    gamma = g->assume(runtime::Beta(2, 2));
    S = g->constant(760);
    I = g->constant(3);
    R = g->constant(0);
  }
  std::size_t operations(std::size_t) const override { return 14; }
  bool graph_only(std::size_t, std::size_t j) const override { return j > 1; }  // the hazards, their copy
  void run(std::size_t t, std::size_t j) override {
    static constexpr double band[] = {0.05, 0.95};
    switch (j) {
      case 0: hazard = gpu::hazard_probabilities(g->values(I), 10.0 / 763.0); break;
      case 1: tau = g->binomial(S, hazard->clone()); break;
      case 2: g->realize(tau); break;
      case 3: n = g->binomial(tau, delta); break;
      case 4: r = g->binomial(I, gamma); break;
      case 5: d = g->subtract(n, r); break;
      case 6: seen = g->constant(infected[t + 1]); break;
      case 7: change = g->subtract(seen, I); break;
      case 8: g->observe(d, change); break;
      case 9: S = g->subtract(S, n); break;
      case 10: I = g->add(I, d); break;
      case 11: R = g->add(R, r); break;
      case 12: {
        const Variable both[] = {S, R};
        (void)g->summarize(both, band);  // the two summaries in one copy back
        break;
      }
      case 13: g->resample_by_weight(1.0); break;
    }
  }
  std::vector<std::int64_t> state() override {
    std::vector<std::int64_t> out = g->value(S);
    for (auto v : g->value(I)) out.push_back(v);
    for (auto v : g->value(R)) out.push_back(v);
    return out;
  }
};

struct Snapshot {
  std::vector<double> log_weights;
  std::vector<std::int64_t> state;
};

/// Where the injected failure happened in the last run (operation and message), for the reports.
std::string last_failure;

/// Runs `f`, retrying it after each device_memory_error (each must name how many particles would fit when
/// `graph_only`); returns the number of failures seen. TALLY_FAULT_TRACE=1: each failure on stderr as it happens.
int with_retries(const std::function<void()>& f, bool graph_only, const std::string& where) {
  for (int failures = 0;; ++failures) {
    try {
      f();
      return failures;
    } catch (const device_memory_error& e) {
      last_failure = where + ": " + e.what();
      if (std::getenv("TALLY_FAULT_TRACE")) std::fprintf(stderr, "injected: %s\n", last_failure.c_str());
      INFO(where << ": " << e.what());
      const std::string what = e.what();
      CHECK(e.requested > 0);
      CHECK(what.find("injected") != std::string::npos);  // the only failures here are the injected ones
      if (graph_only) CHECK(what.find("particles would fit") != std::string::npos);
      REQUIRE(failures < 2);
    }
  }
}

/// Runs `steps` steps of a fresh program, the k-th device allocation from the start failing (k = 0: none), each
/// failed operation retried; a snapshot after every step.
template <class P>
std::vector<Snapshot> run_program(std::size_t steps, std::size_t k, int& failures) {
  P p;
  failures = 0;
  gpu::detail::fail_device_allocation_after(k);
  failures += with_retries([&] { p.start(); }, true, "start");
  std::vector<Snapshot> out;
  for (std::size_t t = 0; t < steps; ++t) {
    for (std::size_t j = 0; j < p.operations(t); ++j)
      failures += with_retries([&] { p.run(t, j); }, p.graph_only(t, j),
                               "step " + std::to_string(t) + ", operation " + std::to_string(j));
    // the hook paused while the snapshot is read (its allocations are not the program's)
    const std::size_t left = gpu::detail::fail_device_allocation_after(0);
    out.push_back({p.g->log_weights(), p.state()});
    gpu::detail::fail_device_allocation_after(left);
  }
  gpu::detail::fail_device_allocation_after(0);
  return out;
}

/// The number of device allocations a fresh program makes in `steps` steps.
template <class P>
std::size_t allocations(std::size_t steps) {
  const std::size_t before = gpu::detail::device_allocation_count();
  P p;
  p.start();
  for (std::size_t t = 0; t < steps; ++t)
    for (std::size_t j = 0; j < p.operations(t); ++j) p.run(t, j);
  return gpu::detail::device_allocation_count() - before;
}

/// "" when the runs agree (values equal, log-weights equal to 1e-12), else what differs first.
std::string difference(const std::vector<Snapshot>& a, const std::vector<Snapshot>& b) {
  if (a.size() != b.size()) return "different numbers of steps";
  for (std::size_t t = 0; t < a.size(); ++t) {
    const std::string step = "after step " + std::to_string(t) + ": ";
    if (a[t].state != b[t].state) return step + "the state's values differ";
    if (a[t].log_weights.size() != b[t].log_weights.size()) return step + "different numbers of log-weights";
    for (std::size_t i = 0; i < a[t].log_weights.size(); ++i) {
      const double x = a[t].log_weights[i], y = b[t].log_weights[i];
      if (std::isnan(x)) return step + "a NaN log-weight";
      if (std::isinf(y) ? x != y : std::abs(x - y) > 1e-12 * (1.0 + std::abs(y)))
        return step + "log-weight " + std::to_string(i) + " differs: " + std::to_string(x) + " vs " + std::to_string(y);
    }
  }
  return "";
}

/// Walks k over every device allocation of the start and the first two steps of program P, then runs a third.
template <class P>
void walk_every_allocation(const char* name) {
  constexpr std::size_t walked = 2, steps = 3;
  int failures = 0;
  const auto reference = run_program<P>(steps, 0, failures);
  REQUIRE(failures == 0);
  const std::size_t count = allocations<P>(walked);
  REQUIRE(count > 0);
  WARN(name << ": " << count << " device allocations in the start and the first " << walked << " steps at P = "
            << particles << ", each failed in turn");
  const std::size_t in_use = gpu::detail::device_bytes_in_use();
  const auto live = Graph::live_nodes();
  // TALLY_FAULT_STRIDE=s walks every s-th allocation only (for slow runs, under compute-sanitizer)
  const char* stride_env = std::getenv("TALLY_FAULT_STRIDE");
  const std::size_t stride = stride_env ? std::max<std::size_t>(1, std::strtoull(stride_env, nullptr, 10)) : 1;
  std::string differing;  // every k whose run differs from the reference, with where it failed
  std::size_t walked_count = 0, differ = 0;
  for (std::size_t k = 1; k <= count; k += stride) {
    INFO(name << ": allocation " << k << " of " << count << " fails");
    last_failure.clear();
    const auto run = run_program<P>(steps, k, failures);
    ++walked_count;
    CHECK(failures == 1);
    if (const std::string d = difference(run, reference); !d.empty()) {
      ++differ;
      differing += "\n  k = " + std::to_string(k) + " (" + last_failure + "): " + d;
    }
    CHECK(Graph::live_nodes() == live);
    CHECK(gpu::detail::device_bytes_in_use() == in_use);
  }
  INFO(name << ": " << differ << " of " << walked_count << " runs differ from the run that never failed:" << differing);
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("every device allocation of an HMM filter step may fail: the engine retries and the run is exact",
          "[runtime][device][device_faults]") {
  if (test::skip_without_device()) return;
  walk_every_allocation<Hmm>("hmm");
}

TEST_CASE("every device allocation of a population filter step may fail: the engine retries and the run is exact",
          "[runtime][device][device_faults]") {
  if (test::skip_without_device()) return;
  walk_every_allocation<Population>("population");
}

TEST_CASE("every device allocation of an SIR filter step may fail: the engine retries and the run is exact",
          "[runtime][device][device_faults]") {
  if (test::skip_without_device()) return;
  walk_every_allocation<Sir>("sir");
}

TEST_CASE("a failed device allocation says how many particles would fit, and the hook fires once",
          "[runtime][device][device_faults]") {
  if (test::skip_without_device()) return;
  Graph g(particles, 1, Device::cuda);
  const Variable x = g.assume(Poisson(20.0));
  gpu::detail::fail_device_allocation_after(1);
  try {
    g.observe(g.binomial(x, 0.5), 7);
    FAIL("the injected failure did not fire");
  } catch (const device_memory_error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("particles would fit") && Catch::Contains("injected"));
  }
  // the hook is off again: the same program goes through
  const double ll = g.observe(g.binomial(x, 0.5), 7)[0];
  CHECK(ll == Approx(std::log(pdf(Poisson(10.0), 7))).epsilon(1e-9));
}

TEST_CASE("the device-allocation hook is free on the CPU: a CPU graph makes no device allocation",
          "[runtime][device_faults]") {
  const std::size_t before = gpu::detail::device_allocation_count();
  gpu::detail::fail_device_allocation_after(1);
  Graph g(8, 1, Device::cpu);
  const Variable x = g.assume(Poisson(20.0));
  const double ll = g.observe(g.binomial(x, 0.5), 7)[0];
  g.resample_by_weight(1.0);
  gpu::detail::fail_device_allocation_after(0);
  CHECK(ll == Approx(std::log(pdf(Poisson(10.0), 7))).epsilon(1e-9));
  CHECK(gpu::detail::device_allocation_count() == before);
}

}  // namespace test_device_faults
