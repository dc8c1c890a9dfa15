// Private: the collective steps of a sharded population (resampling, moving particles, summaries) over a Communicator.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "node.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/resample_shards.hpp"
#include "tally/gpu/resample_tiles.hpp"
#include "tally/gpu/summaries.hpp"

namespace tally::runtime::detail {

/// The shards' first particles and the population's size: bounds[r] .. bounds[r + 1] - 1 are shard r's particles
/// (G + 1 numbers). Gathered on the first call (a collective) and checked: the shards cover 0 .. total - 1 in rank
/// order, each with at least one particle, all on one backend (tally::domain_error on every rank otherwise).
const std::vector<std::size_t>& shard_bounds(Context& ctx);

/// Whether `ok` holds on every shard (one all-gather): so that a check that fails on one shard throws on all of
/// them, and none is left waiting in a collective.
bool on_every_shard(Context& ctx, bool ok);

/// What the whole population's log-weights say (tally::gpu::resample's summary, bit for bit: the tiles of
/// gpu/include/tally/gpu/resample_tiles.hpp), and, when asked, this shard's P_s ancestors (global indices) drawn
/// by `kind` with the uniforms of the unsharded resampler (seed, counter): systematic by the tiles' passes,
/// multinomial by the sequential prefix sums of the CPU reference, chained from shard to shard. impossible: every
/// log-weight of the population is -inf (no ancestors). Collective; tally::domain_error on every shard for a NaN
/// or +inf log-weight on any.
struct ShardedResampling {
  gpu::WeightSummary summary{};
  bool impossible = false;
  gpu::tiles::TilePlan plan;       // pass 2, the same on every shard
  std::vector<double> owned;       // the log-weights of the tiles this shard owns: the particles [cut[me], cut[me + 1])
  std::vector<std::size_t> cut;    // rank r owns the tiles whose first particle it holds
};
ShardedResampling sharded_summary(Context& ctx);
std::vector<std::size_t> sharded_ancestors(Context& ctx, const ShardedResampling& weights, gpu::Resampler kind,
                                           std::uint64_t seed, std::uint64_t counter);

/// Where a sharded population's time goes, for tuning (TALLY_SHARD_PROFILE=1): a phase waits for the device when
/// it begins and ends and adds its wall time to its name's total; the totals go to stderr when the program ends.
/// Unset, a phase costs a flag's test and waits for nothing.
class ShardPhase {
 public:
  ShardPhase(Context& ctx, const char* name);
  ~ShardPhase();
  /// A sharded graph begins: the totals so far are printed (as the previous graph's) and start again.
  static void new_graph();
  ShardPhase(const ShardPhase&) = delete;
  ShardPhase& operator=(const ShardPhase&) = delete;

 private:
  Context* ctx_ = nullptr;  // null: off
  const char* name_ = nullptr;
  double start_ = 0;
};

/// Whether every shard holds the same number S of particles, a multiple of the resampling tile (4096): then a
/// systematic resampling passes over each shard's own particles only (tiled_plan, tiled_gather). Collective the
/// first time (shard_bounds).
bool tile_aligned(Context& ctx);
/// The plan of a systematic resampling of tile-aligned shards (gpu::ShardedSystematic, uniform philox_uniform(seed,
/// 0, counter)): the tiles' pass 1 on each shard's own log-weights, one all-gather of the G reports (3 S / 4096 + 1
/// doubles each), pass 2 on every shard alike: the unsharded resampler's summary and plan, bit for bit (the same on
/// every shard). plan.largest = -inf: every log-weight is -inf (no plan). tiled_plan takes the plan a summary kept
/// (Context::known_plan, for the same seed and counter) where there is one, and throws tally::domain_error on
/// every shard, naming the particle, for a NaN or +inf log-weight on any (the halves leave plan.largest = +inf).
/// Collective.
struct TiledPlan {
  gpu::ShardedSystematic resampler;
  gpu::ShardedSystematic::Plan plan;
  std::uint64_t seed = 0, counter = 0;
};
/// In two halves, so that other collectives can travel before the plan's one wait: pass 1 and the all-gather
/// launched (no wait), then pass 2 and its read-back.
struct PendingPlan {
  gpu::ShardedSystematic resampler;
  gpu::Column<double> reports;
  std::uint64_t seed = 0, counter = 0;
};
PendingPlan launch_tiled_plan(Context& ctx, std::uint64_t seed, std::uint64_t counter);
TiledPlan finish_tiled_plan(PendingPlan&& pending);
TiledPlan tiled_plan(Context& ctx, std::uint64_t seed, std::uint64_t counter);
/// Its pass 3 on each shard's own tiles, the ancestors sent to the shards holding their positions (one exchange of
/// about 8 S bytes a shard), and every live variable's state moved as sharded_gather moves it, by ranges (the
/// ancestors are nondecreasing: only the particles that change shards travel, with at most a tile more at each end
/// of a range: the ranges come from the plan's tiles, so the host waits for no ancestor). Returns this shard's
/// ancestors (population indices), where the graph keeps its state. Collective.
gpu::Column<std::size_t> tiled_gather(Context& ctx, TiledPlan& tiled);

/// Every live variable's state (the state Graph::gather moves: laws, values, conjugate parameters, per-particle
/// probabilities) and, when log_weights is given, the log-weights: particle i of this shard becomes a copy of the
/// population's particle ancestors[i], wherever it lives. Each shard asks the owners for the distinct particles it
/// needs; the owners gather them and send them (Communicator::all_to_all), and each shard places them: the same
/// laws and values, bit for bit, as Graph::gather of the unsharded population. Computed aside, then moved in (the
/// strong guarantee, as Graph::gather, where the communicator itself does not fail). Dirichlet states cannot move
/// between shards yet: usage_error on every shard. Collective.
void sharded_gather(Context& ctx, const std::vector<std::size_t>& ancestors, gpu::Column<double>* log_weights);
/// The same for the whole population's ancestors `whole` (P of them, the same on every shard, where the graph keeps
/// its state), and this shard's part of them returned (positions bounds[me] .. bounds[me + 1] - 1). `sorted`: they
/// are nondecreasing (a systematic resampling's); then each shard's ancestors are one range of particles, only the
/// particles that change shards travel and the plan is made on the device (the host reads 2 G numbers); else as
/// above, from this shard's ancestors copied to the host. Collective.
gpu::Column<std::size_t> sharded_gather_whole(Context& ctx, const gpu::Column<std::size_t>& whole, bool sorted);

/// Whether the shards' columns can be gathered whole on every shard: the population on the device, its shards of
/// one size (Communicator::all_gather's contract). Then a summary and a resampling's decision and ancestors come
/// from the whole population's columns, on every shard, by gpu::summarize and gpu::resample themselves: the
/// unsharded results, bit for bit, at the cost of P (not P / G) log-weights and values gathered and passed over on
/// each shard. Collective the first time (shard_bounds).
bool whole_on_device(Context& ctx);
/// Every shard's `mine` one after the other (the whole population's column, in particle order), on every shard:
/// one all-gather on the device (whole_on_device must hold). Collective.
gpu::Column<double> whole_column(Context& ctx, const gpu::Column<double>& mine);
gpu::Column<std::int64_t> whole_column(Context& ctx, const gpu::Column<std::int64_t>& mine);

/// gpu::summarize over the whole population (every shard gets the same summary): the largest log-weight, the sums
/// W, sum w^2 and sum w v combined in rank order, and the quantiles from the population's histogram of weight by
/// value (summed over the shards) where the values span fewer than 4 P integers (at most 2^20), else by bisection
/// over the values (one all-gather a step, at most 64 steps). The same definitions as gpu::summarize; its sums are
/// added in another order, so the numbers agree to rounding (about 1e-15 relative; a quantile may differ where the
/// cumulative weight lands within that of p). Collective.
gpu::WeightedSummary sharded_summarize(Context& ctx, const gpu::Column<std::int64_t>& values,
                                       std::span<const double> probabilities);
/// The same for several columns, each shard passing over its own particles only (gpu::detail::summary_ranges and
/// summary_sums: each part all-gathered where the columns live, the second under the population's largest
/// log-weight and ranges, and one copy back, the host's one wait; the sums and histograms added in rank order; the
/// quantiles by gpu::summarize's rule from the population's histogram): gpu::summarize's results to rounding. Empty
/// (on every shard) where a column's values span summary_bins integers or more. Collective.
/// With `plan_for` (the seed and counter of the resampling that may follow; tile_aligned must hold), the systematic
/// plan of the log-weights is made with the parts, in the same wait, and kept in ctx.known_plan.
struct PlanFor {
  std::uint64_t seed = 0, counter = 0;
};
std::optional<std::vector<gpu::WeightedSummary>> sharded_summarize_parts(
    Context& ctx, std::span<const gpu::Column<std::int64_t>* const> columns, std::span<const double> probabilities,
    std::optional<PlanFor> plan_for = std::nullopt);

}  // namespace tally::runtime::detail
