// The collective steps of a sharded population: the shards' bounds, resampling across shards, moving particles.
#include "sharding.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "tally/error.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/runtime/graph.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/resample_tiles.hpp"

namespace tally::runtime::detail {

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::size_t tile = gpu::tiles::tile_size;

Communicator& comm_of(Context& ctx) { return *ctx.comm; }

std::vector<std::size_t> times(const std::vector<std::size_t>& items, std::size_t size) {
  std::vector<std::size_t> out(items.size());
  for (std::size_t q = 0; q < items.size(); ++q) out[q] = items[q] * size;
  return out;
}

/// One value from every rank, in rank order (host).
template <class T>
std::vector<T> gather_all(Communicator& c, const T& mine) {
  std::vector<T> out(c.size());
  c.all_gather(&mine, out.data(), sizeof(T), gpu::Backend::cpu);
  return out;
}

/// How many items each rank sends this one, given how many this one sends each rank (one host exchange).
std::vector<std::size_t> exchange_counts(Communicator& c, const std::vector<std::size_t>& send) {
  std::vector<std::size_t> recv(c.size());
  const std::vector<std::size_t> eight(c.size(), sizeof(std::size_t));
  c.all_to_all(send.data(), eight, recv.data(), eight, gpu::Backend::cpu);
  return recv;
}

/// Host items of a repartition: this rank holds the items [from[me], from[me + 1]) of a global array cut at `from`,
/// and gets those of [to[me], to[me + 1]) (the cuts are rank-ordered, from 0 to the same end).
template <class T>
std::vector<T> repartition(Communicator& c, const std::vector<T>& mine, const std::vector<std::size_t>& from,
                           const std::vector<std::size_t>& to) {
  const std::size_t me = c.rank(), g = c.size();
  std::vector<std::size_t> send(g), recv(g);
  const auto overlap = [](std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    const std::size_t lo = std::max(a0, b0), hi = std::min(a1, b1);
    return hi > lo ? hi - lo : 0;
  };
  for (std::size_t q = 0; q < g; ++q) {
    send[q] = overlap(from[me], from[me + 1], to[q], to[q + 1]) * sizeof(T);
    recv[q] = overlap(from[q], from[q + 1], to[me], to[me + 1]) * sizeof(T);
  }
  std::vector<T> out(to[me + 1] - to[me]);
  c.all_to_all(mine.data(), send, out.data(), recv, gpu::Backend::cpu);
  return out;
}

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

bool on_every_shard(Context& ctx, bool ok) {
  const auto all = gather_all(comm_of(ctx), static_cast<std::uint8_t>(ok ? 1 : 0));
  return std::all_of(all.begin(), all.end(), [](std::uint8_t v) { return v == 1; });
}

namespace {
/// This shard's log-weights on the host, checked on every shard (domain_error naming the population's particle).
std::vector<double> checked_log_weights(Context& ctx, const char* who) {
  std::vector<double> l = ctx.log_weight.to_host();
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
  const std::vector<double> l = ctx.log_weight.to_host();
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

// ---- moving particles between shards -----------------------------------------------------------------------------
namespace tally::runtime::detail {
namespace {

/// Who sends what: this shard asks each owner for the distinct particles it needs (sorted), and places them.
struct Exchange {
  std::vector<std::size_t> send, recv;  // particles to / from each rank
  std::vector<std::size_t> outgoing;    // local indices of the particles sent, rank after rank
  std::vector<std::size_t> placement;   // this shard's particle i: its index among the particles received
  gpu::Column<std::size_t> outgoing_column, placement_column;  // the same where the graph keeps its state
  std::size_t sent() const { return outgoing.size(); }
  std::size_t received() const { return std::accumulate(recv.begin(), recv.end(), std::size_t{0}); }
};

Exchange plan_exchange(Context& ctx, const std::vector<std::size_t>& ancestors) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t g = c.size();
  // the distinct ancestors in increasing order, and where each position's is among them (systematic ancestors come
  // sorted: one linear pass; others by a sort and a search per position)
  Exchange x;
  std::vector<std::size_t> needed;
  x.placement.resize(ancestors.size());
  if (std::is_sorted(ancestors.begin(), ancestors.end())) {
    for (std::size_t i = 0; i < ancestors.size(); ++i) {
      if (needed.empty() || needed.back() != ancestors[i]) needed.push_back(ancestors[i]);
      x.placement[i] = needed.size() - 1;
    }
  } else {
    needed = ancestors;
    std::sort(needed.begin(), needed.end());
    needed.erase(std::unique(needed.begin(), needed.end()), needed.end());
    for (std::size_t i = 0; i < ancestors.size(); ++i)
      x.placement[i] =
          static_cast<std::size_t>(std::lower_bound(needed.begin(), needed.end(), ancestors[i]) - needed.begin());
  }
  x.recv.assign(g, 0);
  std::vector<std::size_t> asked(needed.size());  // the owners' local indices, owner after owner (needed is sorted)
  for (std::size_t k = 0, r = 0; k < needed.size(); ++k) {
    while (needed[k] >= bounds[r + 1]) ++r;
    ++x.recv[r];
    asked[k] = needed[k] - bounds[r];
  }
  x.send = exchange_counts(c, x.recv);
  x.outgoing.resize(std::accumulate(x.send.begin(), x.send.end(), std::size_t{0}));
  c.all_to_all(asked.data(), times(x.recv, sizeof(std::size_t)), x.outgoing.data(), times(x.send, sizeof(std::size_t)),
               gpu::Backend::cpu);
  for (const std::size_t i : x.outgoing)
    if (i >= ctx.particles)
      throw communicator_error("tally::runtime::Graph: a shard asked for a particle this shard does not hold");
  x.outgoing_column = gpu::Column<std::size_t>::from_host(x.outgoing, ctx.where);
  x.placement_column = gpu::Column<std::size_t>::from_host(x.placement, ctx.where);
  return x;
}

/// A column's values at the outgoing particles, sent; the received ones, placed.
template <class T>
gpu::Column<T> exchange_column(Communicator& c, const Exchange& x, const gpu::Column<T>& column) {
  const gpu::Backend where = column.where();
  gpu::Column<T> out = x.sent() > 0 ? gpu::gather(column, x.outgoing_column) : gpu::Column<T>::allocate(where, 0, "");
  auto in = gpu::Column<T>::allocate(where, x.received(), "tally::runtime::Graph (moving particles)");
  c.all_to_all(out.data(), times(x.send, sizeof(T)), in.data(), times(x.recv, sizeof(T)), where);
  return gpu::gather(in, x.placement_column);
}

/// gpu::Laws (host or device): the outgoing laws' lengths, lower ends, log-scales and weights sent; placed.
gpu::Laws exchange_laws(Communicator& c, const Exchange& x, const gpu::Laws& laws, std::size_t max_length) {
  const gpu::Backend where = laws.where();
  const bool host = where == gpu::Backend::cpu;
  gpu::Laws out = x.sent() > 0 ? gpu::gather(laws, x.outgoing_column) : gpu::Laws::allocate(where, 0, 0, 0, "");
  std::vector<std::int64_t> offset(out.size() + 1, 0);
  if (host)
    offset = out.host().offset;
  else if (out.size() > 0)
    gpu::detail::device_copy(offset.data(), out.view().offset, offset.size() * sizeof(std::int64_t), 1);
  std::vector<std::int64_t> lengths(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) lengths[i] = offset[i + 1] - offset[i];
  std::vector<std::int64_t> lengths_in(x.received());
  c.all_to_all(lengths.data(), times(x.send, 8), lengths_in.data(), times(x.recv, 8), gpu::Backend::cpu);
  std::vector<std::size_t> send_weights(x.send.size()), recv_weights(x.recv.size());
  for (std::size_t q = 0, i = 0; q < x.send.size(); ++q) {
    const std::size_t begin = i;
    i += x.send[q];
    send_weights[q] = static_cast<std::size_t>(offset[i] - offset[begin]) * sizeof(double);
  }
  std::vector<std::int64_t> offset_in(x.received() + 1, 0);
  for (std::size_t q = 0, i = 0; q < x.recv.size(); ++q) {
    std::int64_t sum = 0;
    for (std::size_t k = 0; k < x.recv[q]; ++k, ++i) {
      sum += lengths_in[i];
      offset_in[i + 1] = offset_in[i] + lengths_in[i];
    }
    recv_weights[q] = static_cast<std::size_t>(sum) * sizeof(double);
  }
  const auto total = static_cast<std::size_t>(offset_in.back());
  gpu::Laws in = gpu::Laws::allocate(where, x.received(), total, max_length, "tally::runtime::Graph (moving particles)");
  const std::vector<std::size_t> send8 = times(x.send, 8), recv8 = times(x.recv, 8);
  if (host) {
    const gpu::PmfBatch& o = out.host();
    gpu::PmfBatch& i = in.host();
    i.offset = offset_in;
    c.all_to_all(o.lo.data(), send8, i.lo.data(), recv8, where);
    c.all_to_all(o.log_scale.data(), send8, i.log_scale.data(), recv8, where);
    c.all_to_all(o.weights.data() + offset[0], send_weights, i.weights.data(), recv_weights, where);
  } else {
    const gpu::PmfBatchView o = out.view();
    const gpu::MutablePmfBatchView i = in.mutable_view();
    gpu::detail::device_copy(i.offset, offset_in.data(), offset_in.size() * sizeof(std::int64_t), 0);
    c.all_to_all(o.lo, send8, i.lo, recv8, where);
    c.all_to_all(o.log_scale, send8, i.log_scale, recv8, where);
    c.all_to_all(o.weights + offset[0], send_weights, i.weights, recv_weights, where);
  }
  return gpu::gather(in, x.placement_column);
}

/// Host laws (tally::Pmf per particle): lower end, log-scale, error bound, length and weights of each, sent; placed.
Batch<Pmf> exchange_pmfs(Communicator& c, const Exchange& x, const Batch<Pmf>& pmfs) {
  const std::size_t n = x.sent();
  std::vector<std::int64_t> lo(n), length(n);
  std::vector<double> scale(n), error(n), weights;
  std::vector<std::size_t> send_weights(x.send.size(), 0);
  for (std::size_t q = 0, k = 0; q < x.send.size(); ++q)
    for (std::size_t j = 0; j < x.send[q]; ++j, ++k) {
      const Pmf& p = pmfs[x.outgoing[k]];
      lo[k] = p.lo();
      scale[k] = p.log_scale();
      error[k] = p.error_bound();
      length[k] = static_cast<std::int64_t>(p.weights().size());
      weights.insert(weights.end(), p.weights().data(), p.weights().data() + p.weights().size());
      send_weights[q] += static_cast<std::size_t>(p.weights().size()) * sizeof(double);
    }
  const std::size_t m = x.received();
  std::vector<std::int64_t> lo_in(m), length_in(m);
  std::vector<double> scale_in(m), error_in(m);
  const std::vector<std::size_t> send8 = times(x.send, 8), recv8 = times(x.recv, 8);
  constexpr gpu::Backend host = gpu::Backend::cpu;
  c.all_to_all(lo.data(), send8, lo_in.data(), recv8, host);
  c.all_to_all(length.data(), send8, length_in.data(), recv8, host);
  c.all_to_all(scale.data(), send8, scale_in.data(), recv8, host);
  c.all_to_all(error.data(), send8, error_in.data(), recv8, host);
  std::vector<std::size_t> recv_weights(x.recv.size(), 0), start(m + 1, 0);
  for (std::size_t q = 0, k = 0; q < x.recv.size(); ++q)
    for (std::size_t j = 0; j < x.recv[q]; ++j, ++k) {
      recv_weights[q] += static_cast<std::size_t>(length_in[k]) * sizeof(double);
      start[k + 1] = start[k] + static_cast<std::size_t>(length_in[k]);
    }
  std::vector<double> weights_in(start.back());
  c.all_to_all(weights.data(), send_weights, weights_in.data(), recv_weights, host);
  return Batch<Pmf>::make(x.placement.size(), [&](std::size_t i) {
    const std::size_t k = x.placement[i];
    Eigen::VectorXd w = Eigen::Map<const Eigen::VectorXd>(weights_in.data() + start[k],
                                                          static_cast<Eigen::Index>(length_in[k]));
    return Pmf(lo_in[k], std::move(w), scale_in[k], error_in[k]);
  });
}

/// One state to move, in the order of the live nodes (the same on every shard: the program is the same).
struct Item {
  enum Kind : std::uint64_t { pmfs = 1, device_laws, parameter_laws, values, column, probabilities, dirichlet };
  Kind kind = pmfs;
  Laws* laws = nullptr;
  Values* value = nullptr;
  gpu::Column<double>* doubles = nullptr;
  std::shared_ptr<const gpu::Column<double>>* p = nullptr;
  std::size_t same_as = 0;  // 1 + the index of an earlier item holding the same shared state, or 0
};
/// What each shard says of an item: checked equal on every shard (kind, sharing, form), and combined (the laws'
/// error bound: the largest; known nonnegative: on every shard; the length bound: the largest).
struct Header {
  std::uint64_t kind, same_as, form;
  double error;
  std::uint64_t nonnegative, max_length;
};

}  // namespace

void sharded_gather(Context& ctx, const std::vector<std::size_t>& ancestors, gpu::Column<double>* log_weights) {
  Communicator& c = comm_of(ctx);
  // the items, in the order of the live nodes; shared laws and values once (as Graph::gather)
  std::vector<Item> items;
  std::map<const void*, std::size_t> shared;
  auto add_laws = [&](Laws& l) {
    if (l.empty()) return;
    Item it;
    it.kind = l.parameters ? Item::parameter_laws : l.device ? Item::device_laws : Item::pmfs;
    it.laws = &l;
    if (l.device || l.parameters) {
      const void* key = l.device ? static_cast<const void*>(l.device.get()) : l.parameters.get();
      auto [at, fresh] = shared.try_emplace(key, items.size() + 1);
      if (!fresh) it.same_as = at->second;
    }
    items.push_back(it);
  };
  auto add_values = [&](Values& v) {
    if (v.empty()) return;
    Item it;
    it.kind = Item::values;
    it.value = &v;
    auto [at, fresh] = shared.try_emplace(v.column.get(), items.size() + 1);
    if (!fresh) it.same_as = at->second;
    items.push_back(it);
  };
  auto add_column = [&](gpu::Column<double>& col) {
    Item it;
    it.kind = Item::column;
    it.doubles = &col;
    if (col.size() > 0) items.push_back(it);
  };
  for (Node* n = ctx.first_live; n != nullptr; n = n->next_live) {
    add_laws(n->marginal);
    add_values(n->value);
    add_values(n->tie_c);
    add_laws(n->tie_base);
    if (auto* s = n->continuous.get()) {
      add_column(s->params.a);
      add_column(s->params.b);
      add_column(s->scalar);
      if (!s->params.dirichlet.empty() || !s->vector.empty()) {
        Item it;
        it.kind = Item::dirichlet;
        items.push_back(it);
      }
    }
    if (n->operands)
      for (auto& o : *n->operands) add_laws(o);
    if (auto* k = std::get_if<CountChild>(&n->kind)) add_values(k->trials);
    if (auto* b = std::get_if<PerParticleBinomial>(&n->kind)) {
      Item it;
      it.kind = Item::probabilities;
      it.p = &b->p;
      items.push_back(it);
    }
  }
  // the same items on every shard, or an error on every shard
  const auto counts = gather_all(c, static_cast<std::uint64_t>(items.size()));
  if (!std::all_of(counts.begin(), counts.end(), [&](std::uint64_t k) { return k == counts[0]; }))
    throw communicator_error("tally::runtime::Graph: the shards hold different live variables (the program must be "
                             "the same on every shard)");
  std::vector<Header> mine(items.size()), all(items.size() * c.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    Header& h = mine[k];
    h = {it.kind, it.same_as, 0, 0.0, 0, 0};
    if (it.laws != nullptr) {
      h.error = it.laws->device_error;
      h.nonnegative = it.laws->device_nonnegative;
      if (it.laws->device) h.max_length = it.laws->device->max_length();
      if (it.laws->parameters) h.form = static_cast<std::uint64_t>(it.laws->parameters->family) * 2 + (it.laws->parameters->b.size() > 0);
    }
    if (it.value != nullptr) h.nonnegative = it.value->nonnegative;
  }
  c.all_gather(mine.data(), all.data(), items.size() * sizeof(Header), gpu::Backend::cpu);
  std::vector<Header> combined = mine;
  for (std::size_t r = 0; r < c.size(); ++r)
    for (std::size_t k = 0; k < items.size(); ++k) {
      const Header& h = all[r * items.size() + k];
      Header& out = combined[k];
      if (h.kind != out.kind || h.same_as != out.same_as || h.form != out.form)
        throw communicator_error(tally::detail::message("tally::runtime::Graph: shard ", r, "'s live variables differ from shard ",
                                                        c.rank(), "'s (the program must be the same on every shard)"));
      out.error = std::max(out.error, h.error);
      out.nonnegative = out.nonnegative && h.nonnegative;
      out.max_length = std::max(out.max_length, h.max_length);
    }
  for (const Item& it : items)
    if (it.kind == Item::dirichlet)
      tally::detail::fail<usage_error>("tally::runtime::Graph: a sharded population cannot move Dirichlet parameters "
                                       "between shards yet (resample a Dirichlet program unsharded)");

  // every item's moved state, computed aside
  const Exchange x = plan_exchange(ctx, ancestors);
  std::vector<Laws> new_laws(items.size());
  std::vector<Values> new_values(items.size());
  std::vector<gpu::Column<double>> new_columns(items.size());
  std::vector<std::shared_ptr<const gpu::Column<double>>> new_p(items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    const Header& h = combined[k];
    if (it.same_as != 0) continue;
    switch (it.kind) {
      case Item::pmfs:
        new_laws[k].host = exchange_pmfs(c, x, it.laws->host);
        break;
      case Item::device_laws:
        new_laws[k].device = std::make_shared<const gpu::Laws>(exchange_laws(c, x, *it.laws->device, h.max_length));
        new_laws[k].device_error = h.error;
        new_laws[k].device_nonnegative = h.nonnegative != 0;
        break;
      case Item::parameter_laws: {
        const ParameterForm& from = *it.laws->parameters;
        auto form = std::make_shared<ParameterForm>();
        form->family = from.family;
        form->n = make_values(exchange_column(c, x, *from.n), from.n.nonnegative);
        form->a = exchange_column(c, x, from.a);
        if (from.b.size() > 0) form->b = exchange_column(c, x, from.b);
        new_laws[k].parameters = std::move(form);
        new_laws[k].device_error = h.error;
        new_laws[k].device_nonnegative = h.nonnegative != 0;
        break;
      }
      case Item::values:
        new_values[k] = make_values(exchange_column(c, x, *it.value->column), h.nonnegative != 0);
        break;
      case Item::column:
        new_columns[k] = exchange_column(c, x, *it.doubles);
        break;
      case Item::probabilities:
        new_p[k] = std::make_shared<const gpu::Column<double>>(exchange_column(c, x, **it.p));
        break;
      case Item::dirichlet:
        break;
    }
  }
  gpu::Column<double> weights;
  if (log_weights != nullptr) weights = exchange_column(c, x, *log_weights);
  // commit: moves and shared_ptr copies only
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    const std::size_t from = it.same_as == 0 ? k : it.same_as - 1;
    switch (it.kind) {
      case Item::pmfs:
        *it.laws = std::move(new_laws[k]);
        break;
      case Item::device_laws:
      case Item::parameter_laws:
        *it.laws = new_laws[from];
        break;
      case Item::values:
        *it.value = new_values[from];
        break;
      case Item::column:
        *it.doubles = std::move(new_columns[k]);
        break;
      case Item::probabilities:
        *it.p = std::move(new_p[k]);
        break;
      case Item::dirichlet:
        break;
    }
  }
  if (log_weights != nullptr) *log_weights = std::move(weights);
}

}  // namespace tally::runtime::detail

// ---- summaries over the shards ----------------------------------------------------------------------------------
namespace tally::runtime::detail {
namespace {
/// Sums of one double per rank, added in rank order (every rank the same).
std::vector<double> summed(Communicator& c, const std::vector<double>& mine) {
  std::vector<double> all(mine.size() * c.size()), out(mine.size(), 0.0);
  if (mine.empty()) return out;
  c.all_gather(mine.data(), all.data(), mine.size() * sizeof(double), gpu::Backend::cpu);
  for (std::size_t r = 0; r < c.size(); ++r)
    for (std::size_t k = 0; k < mine.size(); ++k) out[k] += all[r * mine.size() + k];
  return out;
}
}  // namespace

gpu::WeightedSummary sharded_summarize(Context& ctx, const gpu::Column<std::int64_t>& values,
                                       std::span<const double> probabilities) {
  constexpr const char* who = "tally::runtime::Graph::summarize";
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  bool good = true;
  for (const double p : probabilities) good = good && p >= 0.0 && p <= 1.0;
  if (!on_every_shard(ctx, good))
    tally::detail::fail<domain_error>(who, ": a probability is not in [0, 1] (on this shard or another)");
  const std::vector<double> l = checked_log_weights(ctx, who);
  const std::vector<std::int64_t> v = values.to_host();
  double top = -inf;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (const double x : l) top = std::max(top, x);
  const auto tops = gather_all(c, top);
  top = *std::max_element(tops.begin(), tops.end());
  gpu::WeightedSummary out;
  out.all_impossible = top == -inf;
  std::vector<double> w(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    w[i] = out.all_impossible ? 1.0 : std::exp(l[i] - top);
    if (w[i] > 0) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
  }
  // the values of positive weight span [lo, hi] over the population
  const auto los = gather_all(c, lo), his = gather_all(c, hi);
  lo = *std::min_element(los.begin(), los.end());
  hi = *std::max_element(his.begin(), his.end());
  double total = 0, squares = 0, moment = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    total += w[i];
    squares += w[i] * w[i];
    moment += w[i] * static_cast<double>(v[i]);
  }
  const std::vector<double> sums = summed(c, {total, squares, moment});
  total = sums[0];
  out.ess = sums[0] * sums[0] / sums[1];
  out.mean = sums[2] / total;
  out.quantiles.assign(probabilities.size(), hi);
  const double span = static_cast<double>(hi) - static_cast<double>(lo);
  const double p = static_cast<double>(bounds.back());
  if (span < 4.0 * p && span < double(1 << 20)) {  // the population's histogram of weight by value
    std::vector<double> h(static_cast<std::size_t>(hi - lo + 1), 0.0);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (w[i] > 0) h[static_cast<std::size_t>(v[i] - lo)] += w[i];
    h = summed(c, h);
    std::vector<bool> found(probabilities.size(), false);
    double cum = 0;
    for (std::size_t k = 0; k < h.size(); ++k) {
      if (!(h[k] > 0)) continue;
      cum += h[k];
      for (std::size_t q = 0; q < probabilities.size(); ++q)
        if (!found[q] && cum / total >= probabilities[q]) {
          out.quantiles[q] = lo + static_cast<std::int64_t>(k);
          found[q] = true;
        }
    }
    return out;
  }
  // bisection: Q(p) is the smallest x in [lo, hi] with sum_{v_i <= x} w_i / W >= p (hi where rounding leaves none)
  std::vector<std::int64_t> a(probabilities.size(), lo), b(probabilities.size(), hi);  // Q in [a, b] once found
  for (int step = 0; step < 66; ++step) {
    std::vector<double> below(probabilities.size(), 0.0);
    std::vector<std::int64_t> mid(probabilities.size());
    bool open = false;
    for (std::size_t q = 0; q < probabilities.size(); ++q) {
      mid[q] = a[q] + (b[q] - a[q]) / 2;
      open = open || a[q] < b[q];
      for (std::size_t i = 0; i < v.size(); ++i)
        if (w[i] > 0 && v[i] <= mid[q]) below[q] += w[i];
    }
    if (!open) break;
    below = summed(c, below);
    for (std::size_t q = 0; q < probabilities.size(); ++q) {
      if (a[q] >= b[q]) continue;
      if (below[q] / total >= probabilities[q]) {
        b[q] = mid[q];
      } else {
        a[q] = mid[q] + 1;
      }
    }
  }
  for (std::size_t q = 0; q < probabilities.size(); ++q) out.quantiles[q] = a[q];
  return out;
}

}  // namespace tally::runtime::detail
