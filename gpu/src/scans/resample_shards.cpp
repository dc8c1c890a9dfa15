// A shard's part in systematic resampling: the host passes over its own tiles, and the dispatch to the device's.
#include "tally/gpu/resample_shards.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally::gpu {
namespace {
constexpr std::size_t tile = tiles::tile_size;
}  // namespace

ShardedSystematic::ShardedSystematic(Backend where, std::size_t shards, std::size_t rank, std::size_t shard_particles,
                                     double u)
    : where_(where), shards_(shards), rank_(rank), particles_(shard_particles), tiles_(shard_particles / tile), u_(u) {
  if (rank >= shards || shard_particles == 0 || shard_particles % tile != 0)
    tally::detail::fail<domain_error>("tally::gpu::ShardedSystematic: shard ", rank, " of ", shards, " with ",
                                      shard_particles, " particles (a positive multiple of ", tile, " is needed)");
  if (where == Backend::cuda) {
    const std::size_t bytes = cuda::shard_bytes(shards * shard_particles, shard_particles);
    device_temp_ = Column<unsigned char>::allocate(where, bytes, "tally::gpu::ShardedSystematic");
  }
}

void ShardedSystematic::check(const Column<double>& log_w, const char* who) const {
  if (log_w.size() != particles_ || log_w.where() != where_)
    tally::detail::fail<shape_error>("tally::gpu::ShardedSystematic::", who, ": ", log_w.size(),
                                     " log-weights for a shard of ", particles_,
                                     log_w.where() != where_ ? " (in the other memory)" : "");
}

Column<double> ShardedSystematic::report(const Column<double>& log_w) {
  check(log_w, "report");
  auto out = Column<double>::allocate(where_, report_size(), "tally::gpu::ShardedSystematic::report");
  if (where_ == Backend::cuda) {
    cuda::shard_report(device_temp_.data(), shards_ * particles_, particles_, rank_ * tiles_, log_w.data(), out.data());
    return out;
  }
  const std::span<const double> l(log_w.host());
  double largest = -inf;
  for (const double v : l) largest = std::isnan(v) ? inf : std::max(largest, v);
  std::vector<double>& r = out.host();
  for (std::size_t j = 0; j < tiles_; ++j) {
    // (pass 1 needs weights without NaN or +inf; where the largest says there are some, the totals go unread)
    const tiles::TileTotals t = largest < inf ? tiles::tile_totals(l.subspan(j * tile, tile))
                                              : tiles::TileTotals{-inf, 0.0, 0.0};
    r[j] = t.max_log_weight;
    r[tiles_ + j] = t.sum;
    r[2 * tiles_ + j] = t.sum_squares;
  }
  r[3 * tiles_] = largest;
  return out;
}

const ShardedSystematic::Plan& ShardedSystematic::plan(const Column<double>& reports) {
  if (reports.size() != shards_ * report_size() || reports.where() != where_)
    tally::detail::fail<shape_error>("tally::gpu::ShardedSystematic::plan: ", reports.size(), " doubles for ", shards_,
                                     " reports of ", report_size());
  plan_ = Plan{};
  const std::size_t p = shards_ * particles_;
  if (where_ == Backend::cuda) {
    plan_.largest =
        cuda::shard_plan(device_temp_.data(), p, particles_, reports.data(), u_, plan_.summary, plan_.start, plan_.tiles);
    return plan_;
  }
  const std::vector<double>& r = reports.host();
  const std::size_t size = report_size();
  plan_.largest = -inf;
  for (std::size_t q = 0; q < shards_; ++q) plan_.largest = std::max(plan_.largest, r[q * size + 3 * tiles_]);
  if (!(plan_.largest > -inf) || plan_.largest == inf) return plan_;
  std::vector<tiles::TileTotals> totals(shards_ * tiles_);
  for (std::size_t q = 0; q < shards_; ++q)
    for (std::size_t j = 0; j < tiles_; ++j) {
      const double* at = r.data() + q * size;
      totals[q * tiles_ + j] = {at[j], at[tiles_ + j], at[2 * tiles_ + j]};
    }
  host_plan_ = tiles::combine_tiles(totals, p);
  plan_.summary = host_plan_.summary();
  plan_.start.resize(shards_ + 1);
  for (std::size_t q = 0; q <= shards_; ++q) plan_.start[q] = host_plan_.begin(q * tiles_, u_);
  // the tile of a position: the last t < n with k(O_t) <= position (the device's tile_of_position)
  const std::size_t n = shards_ * tiles_;
  auto tile_of = [&](std::size_t position) {
    std::size_t lo = 0, hi = n;
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (host_plan_.begin(mid, u_) <= position) lo = mid;
      else hi = mid;
    }
    return lo;
  };
  plan_.tiles.resize(2 * shards_);
  for (std::size_t q = 0; q < shards_; ++q) {
    plan_.tiles[2 * q] = tile_of(q * particles_);
    plan_.tiles[2 * q + 1] = tile_of((q + 1) * particles_ - 1);
  }
  return plan_;
}

Column<std::size_t> ShardedSystematic::ancestors(const Column<double>& log_w) {
  check(log_w, "ancestors");
  if (plan_.start.empty())
    tally::detail::fail<shape_error>("tally::gpu::ShardedSystematic::ancestors: no plan of finite weights (call plan "
                                     "first; a population with a NaN, +inf or no weight has no ancestors)");
  const std::size_t first = plan_.start[rank_], count = plan_.start[rank_ + 1] - first;
  auto out = Column<std::size_t>::allocate(where_, count, "tally::gpu::ShardedSystematic::ancestors");
  if (where_ == Backend::cuda) {
    if (count > 0)
      cuda::shard_ancestors(device_temp_.data(), shards_ * particles_, particles_,
                            rank_ * tiles_, first, log_w.data(), u_, out.data());
    return out;
  }
  const std::span<const double> l(log_w.host());
  const std::span<std::size_t> written(out.host());
  for (std::size_t j = 0; j < tiles_; ++j) {
    const std::size_t t = rank_ * tiles_ + j, k0 = host_plan_.begin(t, u_), k1 = host_plan_.begin(t + 1, u_);
    tiles::tile_ancestors(host_plan_, t, l.subspan(j * tile, tile), u_, written.subspan(k0 - first, k1 - k0));
  }
  return out;
}

}  // namespace tally::gpu
