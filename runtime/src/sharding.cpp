// The shards of a population: their bounds, and resampling across them (the tiles' passes, chained multinomial sums).
#include "sharding.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <string>

#include "shard_collectives.hpp"
#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/runtime/graph.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/resample_shards.hpp"
#include "tally/gpu/resample_tiles.hpp"
#include "infinities.hpp"

namespace tally::runtime::detail {

namespace {
constexpr std::size_t tile = gpu::tiles::tile_size;

/// The tiles [tiles_begin, tiles_end) a rank owns: those whose first particle it holds.
std::size_t first_tile(std::size_t first_particle) { return (first_particle + tile - 1) / tile; }
}  // namespace

const std::vector<std::size_t>& shard_bounds(Context& ctx) {
  if (!ctx.shard_bounds.empty()) return ctx.shard_bounds;
  Communicator& c = comm_of(ctx);
  struct Mine {
    std::uint64_t first, count, total, backend;
  };
  const auto all = gather_all(c, Mine{ctx.shard.first, ctx.shard.count, ctx.shard.total,
                                      static_cast<std::uint64_t>(ctx.where)});
  std::vector<std::size_t> bounds{0};
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].first != bounds.back() || all[r].count == 0 || all[r].total != all[0].total ||
        all[r].backend != all[0].backend)
      tally::detail::fail<domain_error>("tally::runtime::Graph (", c.description(), "): shard ", r, " holds particles ",
                                        all[r].first, " .. ", all[r].first + all[r].count, " of ", all[r].total,
                                        all[r].backend != all[0].backend ? " on another device kind" : "",
                                        "; the shards must cover the population in rank order, one particle at least each");
    bounds.push_back(all[r].first + all[r].count);
  }
  if (bounds.back() != all[0].total)
    tally::detail::fail<domain_error>("tally::runtime::Graph (", c.description(), "): the shards hold ", bounds.back(),
                                      " particles of ", all[0].total);
  ctx.shard_bounds = std::move(bounds);
  return ctx.shard_bounds;
}

namespace {
/// The profile's totals: seconds and calls by phase, printed when the program ends.
struct PhaseTotals {
  std::map<std::string, std::pair<double, std::size_t>> by_name;
  std::size_t graph = 0;  // the sharded graphs made so far: each prints its own totals
  void flush() {
    for (const auto& [name, t] : by_name)
      std::fprintf(stderr, "shard phase, graph %zu: %-22s %10.6f s in %4zu calls (%.1f us each)\n", graph,
                   name.c_str(), t.first, t.second, 1e6 * t.first / static_cast<double>(t.second));
    by_name.clear();
  }
  ~PhaseTotals() { flush(); }
};
PhaseTotals& phase_totals() {
  static PhaseTotals totals;
  return totals;
}
bool profiling() {
  static const bool on = std::getenv("TALLY_SHARD_PROFILE") != nullptr;
  return on;
}
/// Waits for the device's work so far (a read of one log-weight), and returns the time.
double settled(Context& ctx) {
  if (ctx.where == gpu::Backend::cuda && ctx.particles > 0) {
    double v = 0;
    gpu::detail::device_copy(&v, ctx.log_weight().data(), sizeof v, 1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void ShardPhase::new_graph() {
  if (!profiling()) return;
  PhaseTotals& totals = phase_totals();
  totals.flush();
  ++totals.graph;
}

ShardPhase::ShardPhase(Context& ctx, const char* name) {
  if (!profiling()) return;
  ctx_ = &ctx;
  name_ = name;
  start_ = settled(ctx);
}

ShardPhase::~ShardPhase() {
  if (ctx_ == nullptr) return;
  auto& t = phase_totals().by_name[name_];
  t.first += settled(*ctx_) - start_;
  ++t.second;
}

bool tile_aligned(Context& ctx) {
  const auto& bounds = shard_bounds(ctx);
  const std::size_t s = bounds[1] - bounds[0];
  if (s % tile != 0) return false;
  for (std::size_t r = 1; r + 1 < bounds.size(); ++r)
    if (bounds[r + 1] - bounds[r] != s) return false;
  return true;
}

PendingPlan launch_tiled_plan(Context& ctx, std::uint64_t seed, std::uint64_t counter) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  gpu::ShardedSystematic resampler(ctx.where, c.size(), c.rank(), bounds[1] - bounds[0],
                                   gpu::philox_uniform(seed, 0, counter));
  const gpu::Column<double> report = resampler.report(ctx.log_weight());
  auto reports = gpu::Column<double>::allocate(ctx.where, c.size() * report.size(),
                                               "tally::runtime::Graph (a sharded resampling's tile totals)");
  c.all_gather(report.data(), reports.data(), report.bytes(), ctx.where);
  return {std::move(resampler), std::move(reports), seed, counter};
}

TiledPlan finish_tiled_plan(PendingPlan&& pending) {
  TiledPlan out{std::move(pending.resampler), {}, pending.seed, pending.counter};
  out.plan = out.resampler.plan(pending.reports);  // (the wait)
  return out;
}

TiledPlan tiled_plan(Context& ctx, std::uint64_t seed, std::uint64_t counter) {
  const ShardPhase phase(ctx, "resample: plan");
  // the plan a summary made of these weights (the same on every shard: they summarized alike), or one made now
  const std::shared_ptr<TiledPlan> kept = std::move(ctx.known_plan);
  TiledPlan out = kept && kept->seed == seed && kept->counter == counter
                      ? std::move(*kept)
                      : finish_tiled_plan(launch_tiled_plan(ctx, seed, counter));
  if (out.plan.largest == inf) {  // (on every shard: each names its first bad particle, the first of them is told)
    checked_log_weights(ctx, "tally::runtime::Graph::resample_by_weight");
    throw communicator_error("tally::runtime::Graph::resample_by_weight: the shards' reports of their log-weights "
                             "disagree with the log-weights");
  }
  return out;
}

bool whole_on_device(Context& ctx) {
  if (ctx.where != gpu::Backend::cuda) return false;
  const auto& bounds = shard_bounds(ctx);
  for (std::size_t r = 1; r + 1 < bounds.size(); ++r)
    if (bounds[r + 1] - bounds[r] != bounds[1] - bounds[0]) return false;
  return true;
}

namespace {
template <class T>
gpu::Column<T> gathered_whole(Context& ctx, const gpu::Column<T>& mine) {
  auto whole = gpu::Column<T>::allocate(ctx.where, shard_bounds(ctx).back(),
                                        "tally::runtime::Graph (a sharded population's whole column)");
  comm_of(ctx).all_gather(mine.data(), whole.data(), mine.bytes(), ctx.where);
  return whole;
}
}  // namespace

gpu::Column<double> whole_column(Context& ctx, const gpu::Column<double>& mine) { return gathered_whole(ctx, mine); }
gpu::Column<std::int64_t> whole_column(Context& ctx, const gpu::Column<std::int64_t>& mine) {
  return gathered_whole(ctx, mine);
}

bool on_every_shard(Context& ctx, bool ok) {
  const auto all = gather_all(comm_of(ctx), static_cast<std::uint8_t>(ok ? 1 : 0));
  return std::all_of(all.begin(), all.end(), [](std::uint8_t v) { return v == 1; });
}

std::vector<double> checked_log_weights(Context& ctx, const char* who) {
  std::vector<double> l = ctx.log_weight().to_host();
  std::size_t bad = std::numeric_limits<std::size_t>::max();
  for (std::size_t i = 0; i < l.size() && bad == std::numeric_limits<std::size_t>::max(); ++i)
    if (std::isnan(l[i]) || l[i] == inf) bad = ctx.shard.first + i;
  const auto all = gather_all(comm_of(ctx), bad);
  const std::size_t first_bad = *std::min_element(all.begin(), all.end());
  if (first_bad != std::numeric_limits<std::size_t>::max())
    tally::detail::fail<domain_error>(who, ": the log-weight of particle ", first_bad,
                                      " of the population is NaN or +inf");
  return l;
}

namespace {
/// The tile cuts: rank r owns the tiles from first_tile(bounds[r]) on, so the particles [cut[r], cut[r + 1]).
std::vector<std::size_t> tile_cuts(const std::vector<std::size_t>& bounds) {
  std::vector<std::size_t> cut(bounds.size());
  for (std::size_t r = 0; r < bounds.size(); ++r) cut[r] = std::min(bounds.back(), first_tile(bounds[r]) * tile);
  return cut;
}

ShardedResampling tile_plan(Context& ctx, const std::vector<double>& log_w) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = c.rank(), g = c.size(), p = bounds.back();
  ShardedResampling out;
  out.cut = tile_cuts(bounds);
  out.owned = repartition(c, log_w, bounds, out.cut);
  const std::size_t t0 = first_tile(bounds[me]), t1 = first_tile(bounds[me + 1]);
  std::vector<gpu::tiles::TileTotals> mine;
  for (std::size_t t = t0; t < std::min(t1, (p + tile - 1) / tile); ++t) {
    const std::size_t a = t * tile - out.cut[me], e = std::min(p, (t + 1) * tile) - out.cut[me];
    mine.push_back(gpu::tiles::tile_totals(std::span<const double>(out.owned).subspan(a, e - a)));
  }
  // every rank's tiles to every rank: the tiles' totals in tile order
  const std::size_t n = (p + tile - 1) / tile;
  std::vector<std::size_t> send(g, mine.size() * sizeof(gpu::tiles::TileTotals)), recv(g);
  std::vector<gpu::tiles::TileTotals> all(n);
  std::vector<gpu::tiles::TileTotals> repeated;
  repeated.reserve(mine.size() * g);
  for (std::size_t q = 0; q < g; ++q) repeated.insert(repeated.end(), mine.begin(), mine.end());
  for (std::size_t r = 0; r < g; ++r)
    recv[r] = (std::min(n, first_tile(bounds[r + 1])) - std::min(n, first_tile(bounds[r]))) *
              sizeof(gpu::tiles::TileTotals);
  c.all_to_all(repeated.data(), send, all.data(), recv, gpu::Backend::cpu);
  out.impossible = std::all_of(all.begin(), all.end(), [](const auto& t) { return t.max_log_weight == -inf; });
  if (!out.impossible) {
    out.plan = gpu::tiles::combine_tiles(all, p);
    out.summary = out.plan.summary();
  }
  return out;
}
}  // namespace

ShardedResampling sharded_summary(Context& ctx) {
  return tile_plan(ctx, checked_log_weights(ctx, "tally::runtime::Graph::resample_by_weight"));
}

namespace {
std::vector<std::size_t> systematic(Context& ctx, const ShardedResampling& tiled, double u) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = c.rank(), p = bounds.back(), n = (p + tile - 1) / tile;
  // the positions each rank's tiles write: [begin(tile of cut[r]), begin(tile of cut[r + 1]))
  std::vector<std::size_t> positions(bounds.size());
  for (std::size_t r = 0; r < bounds.size(); ++r) positions[r] = tiled.plan.begin(std::min(n, first_tile(bounds[r])), u);
  std::vector<std::size_t> written(positions[me + 1] - positions[me]);
  for (std::size_t t = first_tile(bounds[me]); t < std::min(n, first_tile(bounds[me + 1])); ++t) {
    const std::size_t a = t * tile - tiled.cut[me], e = std::min(p, (t + 1) * tile) - tiled.cut[me];
    const std::size_t k0 = tiled.plan.begin(t, u), k1 = tiled.plan.begin(t + 1, u);
    gpu::tiles::tile_ancestors(tiled.plan, t, std::span<const double>(tiled.owned).subspan(a, e - a), u,
                               std::span<std::size_t>(written).subspan(k0 - positions[me], k1 - k0));
  }
  return repartition(c, written, positions, bounds);
}

/// Multinomial as the CPU reference draws it: C_i = C_{i-1} + e^{l_i - m} in particle order over the whole
/// population (each shard continues the sum where the shard before it stopped), then ancestor j = the first i
/// with C_i > u_j C_{P-1} (none: the first with C_i = C_{P-1}), asked of the shard that holds it.
std::vector<std::size_t> multinomial(Context& ctx, std::uint64_t seed, std::uint64_t counter) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = c.rank(), g = c.size();
  const std::vector<double> l = ctx.log_weight().to_host();
  double local_max = -inf;
  for (const double v : l) local_max = std::max(local_max, v);
  const auto maxima = gather_all(c, local_max);
  const double m = *std::max_element(maxima.begin(), maxima.end());
  // the chain: in round k, rank k knows the sum before its particles, sums them and passes its last to rank k + 1
  std::vector<double> cum(l.size());
  double before = 0.0;
  for (std::size_t k = 0; k < g; ++k) {
    if (k == me) {
      double sum = before;
      for (std::size_t i = 0; i < l.size(); ++i) cum[i] = sum = sum + std::exp(l[i] - m);
    }
    if (k + 1 == g) break;
    std::vector<std::size_t> send(g, 0), recv(g, 0);
    if (k == me) send[k + 1] = sizeof(double);
    if (k + 1 == me) recv[k] = sizeof(double);
    const double last = cum.back();
    c.all_to_all(&last, send, &before, recv, gpu::Backend::cpu);
  }
  const auto lasts = gather_all(c, cum.back());
  const double total = lasts.back();
  // each position's target, to the shard holding its ancestor
  const std::size_t mine = bounds[me + 1] - bounds[me];
  std::vector<double> target(mine);
  std::vector<std::size_t> owner(mine), send(g, 0);
  for (std::size_t j = 0; j < mine; ++j) {
    target[j] = gpu::philox_uniform(seed, bounds[me] + j, counter) * total;
    std::size_t r = 0;
    while (r < g && !(lasts[r] > target[j])) ++r;
    if (r == g)
      for (r = 0; !(lasts[r] >= total); ++r) {
      }
    owner[j] = r;
    ++send[r];
  }
  std::vector<std::size_t> order(mine);  // positions grouped by owner, in order within each
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return owner[a] < owner[b]; });
  std::vector<double> asked(mine);
  for (std::size_t k = 0; k < mine; ++k) asked[k] = target[order[k]];
  const std::vector<std::size_t> recv = exchange_counts(c, send);
  std::vector<double> queries(std::accumulate(recv.begin(), recv.end(), std::size_t{0}));
  c.all_to_all(asked.data(), times(send, sizeof(double)), queries.data(), times(recv, sizeof(double)),
               gpu::Backend::cpu);
  std::vector<std::size_t> answers(queries.size());
  for (std::size_t k = 0; k < queries.size(); ++k) {
    auto it = std::upper_bound(cum.begin(), cum.end(), queries[k]);
    if (it == cum.end()) it = std::lower_bound(cum.begin(), cum.end(), total);
    answers[k] = bounds[me] + static_cast<std::size_t>(it - cum.begin());
  }
  std::vector<std::size_t> replies(mine);
  c.all_to_all(answers.data(), times(recv, sizeof(std::size_t)), replies.data(), times(send, sizeof(std::size_t)),
               gpu::Backend::cpu);
  std::vector<std::size_t> out(mine);
  for (std::size_t k = 0; k < mine; ++k) out[order[k]] = replies[k];
  return out;
}
}  // namespace

std::vector<std::size_t> sharded_ancestors(Context& ctx, const ShardedResampling& weights, gpu::Resampler kind,
                                           std::uint64_t seed, std::uint64_t counter) {
  if (weights.impossible) return {};
  if (kind == gpu::Resampler::systematic) return systematic(ctx, weights, gpu::philox_uniform(seed, 0, counter));
  return multinomial(ctx, seed, counter);
}

}  // namespace tally::runtime::detail
