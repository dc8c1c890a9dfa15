// Moving particles between shards: every live variable's laws and values sent to the shards whose particles need them.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <type_traits>
#include <variant>

#include "shard_collectives.hpp"
#include "sharding.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::runtime::detail {
namespace {

/// Who sends what: this shard asks each owner for the distinct particles it needs (sorted), and places them.
struct Exchange {
  std::vector<std::size_t> send, recv;  // particles to / from each rank
  std::vector<std::size_t> outgoing;    // local indices of the particles sent, rank after rank
  std::vector<std::size_t> placement;   // this shard's particle i: its index among the particles received
  gpu::Column<std::size_t> outgoing_column, placement_column;  // the same where the graph keeps its state
  // placement indexes this shard's own particles, then those received (gpu::detail::kept_first_placement): the
  // particles a shard keeps are not sent to itself but gathered straight from its state (gpu::detail::gather_two)
  bool kept_first = false;
  // (a plan made on the device, plan_sorted_exchange, leaves outgoing and placement empty: host_outgoing and
  // host_placement copy them back for the host laws that need them)
  std::size_t sent() const { return outgoing_column.size(); }
  std::size_t received() const { return std::accumulate(recv.begin(), recv.end(), std::size_t{0}); }
  std::vector<std::size_t> host_outgoing() const { return outgoing.empty() ? outgoing_column.to_host() : outgoing; }
  std::vector<std::size_t> host_placement() const {
    return placement.empty() ? placement_column.to_host() : placement;
  }
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

/// Entry i of an index column (host or device; a device read waits for the device).
std::size_t entry(const gpu::Column<std::size_t>& x, std::size_t i) {
  if (x.where() == gpu::Backend::cpu) return x.host()[i];
  std::size_t v = 0;
  gpu::detail::device_copy(&v, x.data() + i, sizeof v, 1);
  return v;
}

/// The exchange of a resampling whose ancestors are nondecreasing, as systematic resampling's are: shard r's
/// positions bounds[r] .. bounds[r + 1] - 1 take particles of one range [lo_r, hi_r] (their first and last
/// ancestors, or any range holding them: the tiles of the plan's), each other holder sends its part of it in
/// order, and shard r places its positions from its own particles and those received (kept_first: one gather, as
/// the unsharded resampling's). `x` holds this shard's ancestors from entry `at` on (the population's column, at =
/// bounds[me], or its own, at = 0); the index columns are made where the graph keeps its state. The ancestors are
/// not read: the caller vouches for them (systematic ancestors are nondecreasing by construction); empty (no plan)
/// where the ranges are out of order.
std::optional<Exchange> ranges_exchange(Context& ctx, const std::vector<std::size_t>& lo,
                                        const std::vector<std::size_t>& hi, const gpu::Column<std::size_t>& x,
                                        std::size_t at) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t g = c.size(), me = c.rank();
  for (std::size_t r = 0; r < g; ++r)  // (ends of nondecreasing ancestors; they may share a particle or a tile)
    if (lo[r] > hi[r] || hi[r] >= bounds.back() || (r + 1 < g && (lo[r] > lo[r + 1] || hi[r] > hi[r + 1])))
      return std::nullopt;
  // the overlap of [a, b] and [first, last] (inclusive), as a range
  auto overlap = [](std::size_t a, std::size_t b, std::size_t first, std::size_t last) {
    const std::size_t from = std::max(a, first), to = std::min(b, last);
    return from <= to ? gpu::detail::IndexRange{from, to - from + 1} : gpu::detail::IndexRange{from, 0};
  };
  Exchange out;
  out.send.assign(g, 0);
  out.recv.assign(g, 0);
  std::vector<gpu::detail::IndexRange> outgoing(g);
  for (std::size_t q = 0; q < g; ++q) {
    if (q == me) continue;  // (kept: gathered from this shard's state, not sent)
    outgoing[q] = overlap(lo[q], hi[q], bounds[me], bounds[me + 1] - 1);
    outgoing[q].first -= bounds[me];  // (local indices)
    out.send[q] = outgoing[q].count;
    out.recv[q] = overlap(lo[me], hi[me], bounds[q], bounds[q + 1] - 1).count;
  }
  out.outgoing_column = gpu::detail::index_ranges(outgoing, ctx.where);
  out.placement_column = gpu::detail::kept_first_placement(x, at, bounds[me], bounds[me + 1] - bounds[me], lo[me]);
  out.kept_first = true;
  return out;
}

/// The particles a range exchange may carry at most before the shards ask for their distinct ancestors instead
/// (TALLY_SHARD_REQUESTS_ABOVE, default 65536: half a megabyte a column; 0 always asks). Every rank must see the
/// same value (mpirun -x): the two ways call different collectives.
std::size_t requests_above() {
  const char* set = std::getenv("TALLY_SHARD_REQUESTS_ABOVE");
  if (set == nullptr || *set == '\0') return 65536;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(set, &end, 10);
  if (*end != '\0')
    tally::detail::fail<usage_error>("TALLY_SHARD_REQUESTS_ABOVE=", set, ": a number of particles is needed");
  return static_cast<std::size_t>(v);
}

/// The exchange of nondecreasing ancestors `mine` (this shard's) by requests: each shard asks the others for its
/// distinct ancestors they hold (gpu::detail::foreign_requests: the counts read back, one wait), the counts are
/// exchanged on the host, the requests travel where the state lives, and the owners send those particles only.
Exchange requested_exchange(Context& ctx, const gpu::Column<std::size_t>& mine) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = c.rank();
  gpu::detail::ForeignRequests asked = gpu::detail::foreign_requests(mine, bounds, me);
  Exchange x;
  x.recv = std::move(asked.per_shard);
  x.send = exchange_counts(c, x.recv);
  const std::size_t sent = std::accumulate(x.send.begin(), x.send.end(), std::size_t{0});
  auto wanted = gpu::Column<std::size_t>::allocate(ctx.where, sent, "tally::runtime::Graph (particles asked for)");
  c.all_to_all(asked.requests.data(), times(x.recv, sizeof(std::size_t)), wanted.data(),
               times(x.send, sizeof(std::size_t)), ctx.where);
  x.outgoing_column = gpu::detail::shifted_slice(wanted, 0, sent, bounds[me]);  // (this shard's local indices)
  x.placement_column = std::move(asked.placement);
  x.kept_first = true;
  return x;
}

/// ranges_exchange for the population's ancestors `whole` (the same on every shard): the host reads 2 G entries.
std::optional<Exchange> plan_sorted_exchange(Context& ctx, const gpu::Column<std::size_t>& whole) {
  const auto& bounds = shard_bounds(ctx);
  const std::size_t g = bounds.size() - 1;
  std::vector<std::size_t> lo(g), hi(g);
  for (std::size_t r = 0; r < g; ++r) {  // (each shard holds one particle at least: shard_bounds)
    lo[r] = entry(whole, bounds[r]);
    hi[r] = entry(whole, bounds[r + 1] - 1);
  }
  return ranges_exchange(ctx, lo, hi, whole, bounds[comm_of(ctx).rank()]);
}

/// The columns of a move (values, doubles: 8 bytes a particle each), sent together: each one's outgoing particles
/// gathered (add), then every column in one exchange (Communicator::all_to_all_many: one NCCL launch), then each
/// one's received particles placed (placed).
class ColumnMoves {
 public:
  explicit ColumnMoves(const Exchange& x) : x_(x) {}
  /// Queues a column; returns its index for placed().
  template <class T>
  std::size_t add(const gpu::Column<T>& column) {
    static_assert(sizeof(T) == 8);
    Move m;
    m.where = column.where();
    if constexpr (std::is_same_v<T, std::int64_t>) m.int_column = &column;
    else m.double_column = &column;
    m.out = x_.sent() > 0 ? gpu::gather(column, x_.outgoing_column) : gpu::Column<T>::allocate(m.where, 0, "");
    m.in = gpu::Column<T>::allocate(m.where, x_.received(), "tally::runtime::Graph (moving particles)");
    moves_.push_back(std::move(m));
    return moves_.size() - 1;
  }
  /// Every queued column's exchange at once.
  void exchange(Communicator& c) {
    if (moves_.empty()) return;
    std::vector<const void*> sends;
    std::vector<void*> recvs;
    for (Move& m : moves_) {
      sends.push_back(std::visit([](auto& col) -> const void* { return col.data(); }, m.out));
      recvs.push_back(std::visit([](auto& col) -> void* { return col.data(); }, m.in));
    }
    c.all_to_all_many(sends, times(x_.send, 8), recvs, times(x_.recv, 8), moves_.front().where);
  }
  /// The k-th column placed: this shard's kept particles and those received, in position order.
  template <class T>
  gpu::Column<T> placed(std::size_t k) {
    Move& m = moves_[k];
    const gpu::Column<T>* column = nullptr;
    if constexpr (std::is_same_v<T, std::int64_t>) column = m.int_column;
    else column = m.double_column;
    auto& in = std::get<gpu::Column<T>>(m.in);
    return x_.kept_first ? gpu::detail::gather_two(*column, in, x_.placement_column)
                         : gpu::gather(in, x_.placement_column);
  }

 private:
  struct Move {
    gpu::Backend where = gpu::Backend::cpu;
    const gpu::Column<std::int64_t>* int_column = nullptr;
    const gpu::Column<double>* double_column = nullptr;
    std::variant<gpu::Column<std::int64_t>, gpu::Column<double>> out, in;
  };
  const Exchange& x_;
  std::vector<Move> moves_;
};

/// gpu::Laws (host or device): the outgoing laws' lengths, lower ends, log-scales and weights sent; placed. The
/// host reads G + 1 of the gathered laws' offsets (where each destination's weights begin) and exchanges G byte
/// counts; the lengths travel where the laws live, and the receiver's offsets are their scan there.
gpu::Laws exchange_laws(Communicator& c, const Exchange& x, const gpu::Laws& laws, std::size_t max_length) {
  const gpu::Backend where = laws.where();
  constexpr const char* who = "tally::runtime::Graph (moving particles)";
  gpu::Laws out = x.sent() > 0 ? gpu::gather(laws, x.outgoing_column) : gpu::Laws::allocate(where, 0, 0, 0, "");
  // the offsets where each destination's laws begin: entries 0, send_0, send_0 + send_1, .., sent
  std::vector<std::size_t> send_weights(x.send.size());
  std::int64_t begin = 0;
  for (std::size_t q = 0, i = 0; q < x.send.size(); ++q) {
    i += x.send[q];
    std::int64_t end = 0;
    if (where == gpu::Backend::cpu) end = out.host().offset[i];
    else if (out.size() > 0) gpu::detail::device_copy(&end, out.view().offset + i, sizeof end, 1);
    send_weights[q] = static_cast<std::size_t>(end - begin) * sizeof(double);
    begin = end;
  }
  const std::vector<std::size_t> recv_weights = exchange_counts(c, send_weights);
  const std::vector<std::size_t> send8 = times(x.send, 8), recv8 = times(x.recv, 8);
  const auto lengths = gpu::detail::law_lengths(out);
  auto lengths_in = gpu::Column<std::int64_t>::allocate(where, x.received(), who);
  c.all_to_all(lengths.data(), send8, lengths_in.data(), recv8, where);
  const std::size_t total =
      std::accumulate(recv_weights.begin(), recv_weights.end(), std::size_t{0}) / sizeof(double);
  gpu::Laws in = gpu::detail::laws_of_lengths(lengths_in, total, max_length, who);
  if (where == gpu::Backend::cpu) {
    const gpu::PmfBatch& o = out.host();
    gpu::PmfBatch& i = in.host();
    c.all_to_all(o.lo.data(), send8, i.lo.data(), recv8, where);
    c.all_to_all(o.log_scale.data(), send8, i.log_scale.data(), recv8, where);
    c.all_to_all(o.weights.data(), send_weights, i.weights.data(), recv_weights, where);
  } else {
    const gpu::PmfBatchView o = out.view();
    const gpu::MutablePmfBatchView i = in.mutable_view();
    c.all_to_all(o.lo, send8, i.lo, recv8, where);
    c.all_to_all(o.log_scale, send8, i.log_scale, recv8, where);
    c.all_to_all(o.weights, send_weights, i.weights, recv_weights, where);
  }
  return x.kept_first ? gpu::detail::gather_two(laws, in, x.placement_column) : gpu::gather(in, x.placement_column);
}

/// Host laws (tally::Pmf per particle): lower end, log-scale, error bound, length and weights of each, sent; placed.
Batch<Pmf> exchange_pmfs(Communicator& c, const Exchange& x, const Batch<Pmf>& pmfs) {
  const std::size_t n = x.sent();
  const std::vector<std::size_t> outgoing = x.host_outgoing(), placement = x.host_placement();
  std::vector<std::int64_t> lo(n), length(n);
  std::vector<double> scale(n), error(n), weights;
  std::vector<std::size_t> send_weights(x.send.size(), 0);
  for (std::size_t q = 0, k = 0; q < x.send.size(); ++q)
    for (std::size_t j = 0; j < x.send[q]; ++j, ++k) {
      const Pmf& p = pmfs[outgoing[k]];
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
  return Batch<Pmf>::make(placement.size(), [&](std::size_t i) {
    if (x.kept_first && placement[i] < pmfs.size()) return pmfs[placement[i]];  // (kept: its own law)
    const std::size_t k = x.kept_first ? placement[i] - pmfs.size() : placement[i];
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

/// sharded_gather's work, with the exchange made by `plan` (a collective where it needs one, once every shard has
/// checked the items).
void gather_items(Context& ctx, const std::function<Exchange()>& plan, gpu::Column<double>* log_weights) {
  Communicator& c = comm_of(ctx);
  // the items, in the order of the live nodes; shared laws and values once (as Graph::gather)
  std::vector<Item> items;
  std::map<const void*, std::size_t> shared;
  auto add_laws = [&](Laws& l) {
    // laws shared by every particle (the same on every shard) or by a group (never split by an exchange) stay
    if (l.empty() || l.shared) return;
    if (l.indexed) l = dense(l);  // (a shard's Markov steps are dense already: push_realized)
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
  bool joint = false;  // a joint law (joint/joint.hpp) lives: not moved between shards yet
  for (Node* n = ctx.first_live; n != nullptr; n = n->next_live) {
    joint = joint || n->group != nullptr;
    add_laws(n->marginal);
    add_values(n->value);
    add_values(n->tie_c);
    add_laws(n->tie_base);
    if (auto* s = n->continuous.get()) {
      add_column(s->params.a);
      add_column(s->params.b);
      add_column(s->scalar);
      if (!s->params.dirichlet.empty() || !s->vector.empty()) {  // (rows of K entries a particle: not moved yet)
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
  // the same items on every shard, or an error on every shard: the count and the first headers in one host
  // collective (a second for the headers past the first 32)
  constexpr std::size_t inline_headers = 32;
  struct Block {
    std::uint64_t count;
    std::array<Header, inline_headers> headers;
  };
  Block block{items.size(), {}};
  std::copy_n(mine.begin(), std::min(items.size(), inline_headers), block.headers.begin());
  const std::vector<Block> blocks = gather_all(c, block);
  for (const Block& b : blocks)
    if (b.count != items.size())
      throw communicator_error("tally::runtime::Graph: the shards hold different live variables (the program must be "
                               "the same on every shard)");
  for (std::size_t r = 0; r < c.size(); ++r)
    std::copy_n(blocks[r].headers.begin(), std::min(items.size(), inline_headers), all.begin() + r * items.size());
  if (items.size() > inline_headers) {
    const std::size_t rest = items.size() - inline_headers;
    std::vector<Header> more(rest * c.size());
    c.all_gather(mine.data() + inline_headers, more.data(), rest * sizeof(Header), gpu::Backend::cpu);
    for (std::size_t r = 0; r < c.size(); ++r)
      std::copy_n(more.begin() + r * rest, rest, all.begin() + r * items.size() + inline_headers);
  }
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
  if (joint)  // the same program on every shard: every shard throws here, before anything moved
    tally::detail::fail<usage_error>("tally::runtime::Graph: a sharded population cannot move joint laws between shards "
                                     "yet (resample a program with coupled counts unsharded, or with "
                                     "Truncation::max_joint_bytes = 0)");
  for (const Item& it : items)
    if (it.kind == Item::dirichlet)
      tally::detail::fail<usage_error>("tally::runtime::Graph: a sharded population cannot move Dirichlet parameters "
                                       "between shards yet (resample a Dirichlet program unsharded)");

  // every item's moved state, computed aside
  const Exchange x = plan();
  std::vector<Laws> new_laws(items.size());
  std::vector<Values> new_values(items.size());
  std::vector<gpu::Column<double>> new_columns(items.size());
  std::vector<std::shared_ptr<const gpu::Column<double>>> new_p(items.size());
  // the columns first, all in one exchange (the laws, of varying lengths, each in their own below)
  ColumnMoves columns(x);
  std::vector<std::array<std::size_t, 3>> queued(items.size());
  for (std::size_t k = 0; k < items.size(); ++k) {
    const Item& it = items[k];
    if (it.same_as != 0) continue;
    switch (it.kind) {
      case Item::parameter_laws: {
        const ParameterForm& from = *it.laws->parameters;
        queued[k] = {columns.add(*from.n), columns.add(from.a), from.b.size() > 0 ? columns.add(from.b) : 0};
        break;
      }
      case Item::values: queued[k][0] = columns.add(*it.value->column); break;
      case Item::column: queued[k][0] = columns.add(*it.doubles); break;
      case Item::probabilities: queued[k][0] = columns.add(**it.p); break;
      default: break;
    }
  }
  const std::size_t weights_move = log_weights != nullptr ? columns.add(*log_weights) : 0;
  columns.exchange(c);
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
        form->n = make_values(columns.placed<std::int64_t>(queued[k][0]), from.n.nonnegative);
        form->a = columns.placed<double>(queued[k][1]);
        if (from.b.size() > 0) form->b = columns.placed<double>(queued[k][2]);
        new_laws[k].parameters = std::move(form);
        new_laws[k].device_error = h.error;
        new_laws[k].device_nonnegative = h.nonnegative != 0;
        break;
      }
      case Item::values:
        new_values[k] = make_values(columns.placed<std::int64_t>(queued[k][0]), h.nonnegative != 0);
        break;
      case Item::column:
        new_columns[k] = columns.placed<double>(queued[k][0]);
        break;
      case Item::probabilities:
        new_p[k] = std::make_shared<const gpu::Column<double>>(columns.placed<double>(queued[k][0]));
        break;
      case Item::dirichlet:
        break;
    }
  }
  gpu::Column<double> weights;
  if (log_weights != nullptr) weights = columns.placed<double>(weights_move);
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

}  // namespace

void sharded_gather(Context& ctx, const std::vector<std::size_t>& ancestors, gpu::Column<double>* log_weights) {
  gather_items(ctx, [&] { return plan_exchange(ctx, ancestors); }, log_weights);
}

gpu::Column<std::size_t> tiled_gather(Context& ctx, TiledPlan& tiled) {
  Communicator& c = comm_of(ctx);
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = c.rank(), g = c.size(), count = bounds[me + 1] - bounds[me];
  // pass 3 writes the ancestors of the positions this shard's particles fill, [start[me], start[me + 1]); each
  // goes to the shard that holds its position (both cuts known on every shard: no counts to exchange)
  std::optional<ShardPhase> phase(std::in_place, ctx, "resample: ancestors");
  const gpu::Column<std::size_t> written = tiled.resampler.ancestors(ctx.log_weight());
  const RepartitionCounts moved = repartition_counts(tiled.plan.start, bounds, me, sizeof(std::size_t));
  auto mine = gpu::Column<std::size_t>::allocate(ctx.where, count, "tally::runtime::Graph (a shard's ancestors)");
  c.all_to_all(written.data(), moved.send, mine.data(), moved.recv, ctx.where);
  // the ranges each shard sends and receives, from the plan alone (no wait for the ancestors): shard q's ancestors
  // are particles of the tiles plan.tiles[2 q] .. plan.tiles[2 q + 1], so of [T tiles[2 q], T (tiles[2 q + 1] + 1) - 1]
  // (at most a tile's particles too many at each end travel)
  std::vector<std::size_t> lo(g), hi(g);
  for (std::size_t q = 0; q < g; ++q) {
    lo[q] = tiled.plan.tiles[2 * q] * gpu::tiles::tile_size;
    hi[q] = std::min(bounds.back(), (tiled.plan.tiles[2 * q + 1] + 1) * gpu::tiles::tile_size) - 1;
  }
  // where a shard would receive many particles (as the plan says alike on every shard), most of them may have no
  // offspring (concentrated weights): the shards then ask for their distinct ancestors only, at the cost of a wait
  std::size_t most = 0;
  for (std::size_t r = 0; r < g; ++r) {
    std::size_t foreign = 0;
    for (std::size_t q = 0; q < g; ++q)
      if (q != r && lo[r] < bounds[q + 1] && hi[r] >= bounds[q])
        foreign += std::min(hi[r], bounds[q + 1] - 1) - std::max(lo[r], bounds[q]) + 1;
    most = std::max(most, foreign);
  }
  phase.emplace(ctx, "resample: move");
  if (most > requests_above()) {
    gather_items(ctx, [&] { return requested_exchange(ctx, mine); }, nullptr);
    return mine;
  }
  std::optional<Exchange> ranges = ranges_exchange(ctx, lo, hi, mine, 0);
  if (!ranges)
    throw communicator_error("tally::runtime::Graph: a sharded systematic resampling's plan is out of order");
  gather_items(ctx, [&] { return std::move(*ranges); }, nullptr);
  return mine;
}

gpu::Column<std::size_t> sharded_gather_whole(Context& ctx, const gpu::Column<std::size_t>& whole, bool sorted) {
  const auto& bounds = shard_bounds(ctx);
  const std::size_t me = comm_of(ctx).rank();
  auto mine = gpu::detail::shifted_slice(whole, bounds[me], bounds[me + 1] - bounds[me], 0);
  // the same decision on every shard: the ends come from the same whole column
  std::optional<Exchange> ranges;
  if (sorted) ranges = plan_sorted_exchange(ctx, whole);
  if (ranges) {
    gather_items(ctx, [&] { return std::move(*ranges); }, nullptr);
  } else {
    const std::vector<std::size_t> ancestors = mine.to_host();
    gather_items(ctx, [&] { return plan_exchange(ctx, ancestors); }, nullptr);
  }
  return mine;
}

}  // namespace tally::runtime::detail
