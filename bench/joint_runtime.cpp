// The runtime's joint operations when the particles hold different joint tables: the migration example with A's
// immigrants drawn in each particle (models/joint_programs.hpp), its tables computed one after another on the host
// (Truncation::JointBatches::host) or as one batch (`batched`: the device's kernels on a CUDA graph, the CPU
// reference loops on a host graph). Usage: bench_joint_runtime [P ...]   (a developer's tool; prints a table;
// default P = 64 256; the host rows stop at P = 256, the CPU loops' batch at 64: they take about 20 and 70 ms a
// table and season). The joint budget is raised so that every run stays exact (its `sampled` column says so). The
// last column times what an engine reads after the filter: the marginals of A and B, a draw of A, then of B given A.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/joint_programs.hpp"
#include "tally/gpu/backend.hpp"

using namespace tally;
using runtime::Device;
using runtime::Graph;
namespace mj = tally::models::joint;
using Mode = Truncation::JointBatches;

namespace {

struct Run {
  double seconds = 0;       // the filter
  double read_seconds = 0;  // then the marginals of A and B, and a draw of A and of B given it
  std::vector<double> log_evidence;  // per particle
  std::size_t sampled = 0;           // variables the runtime sampled (a joint law past the budget): 0 is exact
};

/// The joint laws' budget: every particle's tables held exact (the default 256 MiB over all particles makes the
/// host's runs sample from P = 256 on, where a table with its dropped measure passes it).
constexpr std::int64_t budget = std::int64_t{48} << 30;

Run run(std::size_t P, Device d, Mode mode) {
  Truncation t;
  t.joint_batches = mode;
  t.max_joint_bytes = budget;
  const auto t0 = std::chrono::steady_clock::now();
  Graph g(P, 3, d, t);
  const mj::DrawnImmigrantsRun r = mj::run_migration_drawn_immigrants(g, mj::Migration{});
  Run out;
  out.log_evidence.assign(P, 0.0);
  for (const auto& o : r.observations) {
    out.sampled += o.exactness().sampled.size();
    for (std::size_t i = 0; i < P; ++i) out.log_evidence[i] += o[i];
  }
  const auto t1 = std::chrono::steady_clock::now();
  out.seconds = std::chrono::duration<double>(t1 - t0).count();
  // what an engine reads at the end: both marginals, then a draw of A and of B given it
  g.marginal(r.a);
  g.marginal(r.b);
  g.value(r.a);
  g.value(r.b);
  out.read_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return out;
}

double largest_difference(const Run& a, const Run& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.log_evidence.size(); ++i) d = std::max(d, std::abs(a.log_evidence[i] - b.log_evidence[i]));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes;
  for (int a = 1; a < argc; ++a) sizes.push_back(std::strtoull(argv[a], nullptr, 10));
  if (sizes.empty()) sizes = {64, 256};
  const bool cuda = gpu::cuda_available();
  if (cuda) run(1, Device::cuda, Mode::automatic);  // the CUDA context's start, outside the table
  std::printf("migration with drawn immigrants (6 seasons, every particle its own joint table from season 2): whole\n"
              "filter, seconds; log-evidence difference: largest over the particles against the host graph's\n"
              "one-table-at-a-time run\n\n");
  std::printf("| P | graph | joint tables | seconds | ms per distinct table-season | largest difference | sampled | "
              "then marginals and draws, ms |\n");
  std::printf("|---:|---|---|---:|---:|---:|---:|---:|\n");
  for (const std::size_t P : sizes) {
    const bool host_rows = P <= 256;
    Run reference;
    const auto row = [&](const char* graph, const char* how, const Run& r) {
      char difference[32] = "-";
      if (host_rows) std::snprintf(difference, sizeof difference, "%.1e", largest_difference(reference, r));
      std::printf("| %zu | %s | %s | %.3f | %.3f | %s | %zu | %.2f |\n", P, graph, how, r.seconds,
                  1e3 * r.seconds / (5.0 * double(P)), difference, r.sampled, 1e3 * r.read_seconds);
    };
    if (host_rows) {
      reference = run(P, Device::cpu, Mode::host);
      row("host", "one after another", reference);
      if (P <= 64) row("host", "batch (CPU loops)", run(P, Device::cpu, Mode::batched));
    }
    if (cuda) {
      if (P <= 64) row("CUDA", "one after another (host)", run(P, Device::cuda, Mode::host));
      row("CUDA", "batch (device)", run(P, Device::cuda, Mode::automatic));
    }
  }
  return 0;
}
