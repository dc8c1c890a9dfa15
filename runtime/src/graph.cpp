// The engine-facing API: builds nodes of the closed set of kinds and calls the delayed-sampling core.
#include "tally/runtime/graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "dependence.hpp"
#include "node.hpp"
#include "sharding.hpp"
#include "support.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/group_weights.hpp"
#include "tally/gpu/later_max.hpp"
#include "tally/gpu/population_ops.hpp"
#include "infinities.hpp"

namespace tally::runtime {

using detail::Node;
using detail::State;

namespace {
constexpr std::uint64_t resampling_key = 0x7265'7361'6d70'6c65ull;  // "resample": apart from the graph's draws

gpu::Backend resolve(Device d, std::size_t particles) {
  switch (d) {
    case Device::cpu: return gpu::Backend::cpu;
    case Device::cuda:
      if (!gpu::cuda_available())
        tally::detail::fail<cuda_error>("tally::runtime::Graph: Device::cuda asked for, but no device can be used here: ",
                                        gpu::device_description());
      return gpu::Backend::cuda;
    case Device::automatic: break;
  }
  if (const char* forced = std::getenv("TALLY_GRAPH_DEVICE"); forced != nullptr && gpu::cuda_available()) {
    if (std::string(forced) == "cuda") return gpu::Backend::cuda;
    if (std::string(forced) == "cpu") return gpu::Backend::cpu;
  }
  return gpu::cuda_available() && particles >= automatic_cuda_particles ? gpu::Backend::cuda : gpu::Backend::cpu;
}

/// A device allocation that failed, said again with how many particles would fit: the graph holds `held` bytes,
/// and this step asked for `e.requested` more.
[[noreturn]] void out_of_memory(std::size_t particles, const device_memory_error& e, std::size_t held) {
  const double P = static_cast<double>(particles);
  const double per_particle = (static_cast<double>(held) + static_cast<double>(e.requested)) / P;
  const double fit = std::floor((static_cast<double>(e.free) + static_cast<double>(held)) / per_particle);
  throw device_memory_error(
      tally::detail::message("tally::runtime::Graph of ", particles, " particles: ", e.what(), ". The graph holds ",
                             held, " bytes (", static_cast<double>(held) / P, " per particle); with this step it needs about ",
                             per_particle, " bytes per particle, so about ", fit, " particles would fit"),
      e.requested, e.free);
}

/// The host memory a process could still have: Linux's MemAvailable and SwapFree (0 where they cannot be read).
std::size_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::size_t kib = 0, sum = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:" || key == "SwapFree:") sum += kib * 1024;
  return sum;
}

/// A graph whose log-weights (8 bytes a particle) the host cannot hold: host_memory_error with how many would fit.
[[noreturn]] void host_out_of_memory(std::size_t particles) {
  const double bytes = 8.0 * static_cast<double>(particles);
  const std::size_t available = host_available_bytes();
  throw host_memory_error(
      tally::detail::message("tally::runtime::Graph of ", particles, " particles: the host cannot hold their ", bytes,
                             " bytes of log-weights (8 a particle, before any variable); ",
                             available > 0 ? tally::detail::message("about ", available, " bytes are available, so "
                                                                    "at most about ", available / 8,
                                                                    " particles would fit, fewer with variables")
                                           : std::string("the memory available could not be read, so how many "
                                                         "particles would fit is not known")),
      static_cast<std::size_t>(std::min(bytes, 1.8e19)), available);
}

/// f(), with a device allocation that fails said again with what the graph holds (counted only then). Only the
/// outermost guarded() of a call says it (one operation may call another: observe(x, v) makes a constant).
thread_local int guarded_depth = 0;  // one counter for every guarded() (a static inside would be one per F)
template <class F>
auto guarded(const Graph& g, F f) -> decltype(f()) {
  struct Depth {
    Depth() { ++guarded_depth; }
    ~Depth() { --guarded_depth; }
    Depth(const Depth&) = delete;
    Depth& operator=(const Depth&) = delete;
  } inside;
  // errors a device operation finds in its particles are raised where the host waits anyway (a summary, a
  // resampling decision, values or laws copied back), not by a round trip inside each operation
  const gpu::DeferChecks defer;
  if (guarded_depth > 1) return f();
  try {
    return f();
  } catch (const device_memory_error& e) {
    out_of_memory(g.particles(), e, g.bytes());
  }
}

/// fn(v) for each of the live values of c whose bound is open (device values without a number or pending pass yet),
/// once for values that share their bound.
template <class Fn>
void for_each_open_bound(detail::Context& c, Fn fn) {
  std::vector<const gpu::LaterMax*> seen;
  auto visit = [&](const detail::Values& v) {
    if (v.empty() || !v.largest || !v.largest->empty()) return;
    for (const gpu::LaterMax* o : seen)
      if (o == v.largest.get()) return;  // copies share their bound
    seen.push_back(v.largest.get());
    fn(v);
  };
  for (Node* n = c.first_live; n != nullptr; n = n->next_live) {
    visit(n->value);
    visit(n->tie_c);
    if (const auto* k = std::get_if<detail::CountChild>(&n->kind)) visit(k->trials);
    if (n->marginal.parameters) visit(n->marginal.parameters->n);
  }
}

/// Where an unsharded device graph is about to wait anyway (a summary, a resampling decision): the maxima of its live
/// values that have no bound yet, by one pass launched before the wait (gpu::largest_later), so that the device laws
/// of n made after it are sized from them without a wait of their own (Place::bound_values; only once some law
/// has needed one: a filter that makes none launches nothing). Columns the wait's summary covers are left out: the
/// summary brings their largest values back (bound_by_summary).
void bound_live_values(detail::Context& c, std::span<const gpu::Column<std::int64_t>* const> summarized = {}) {
  if (!c.bound_values || !c.device()) return;
  std::vector<const detail::Values*> open;
  for_each_open_bound(c, [&](const detail::Values& v) {
    if (std::find(summarized.begin(), summarized.end(), v.column.get()) == summarized.end()) open.push_back(&v);
  });
  if (open.empty()) return;
  std::vector<const gpu::Column<std::int64_t>*> columns;
  for (const detail::Values* v : open) columns.push_back(v->column.get());
  std::vector<gpu::LaterMax> maxima = gpu::largest_later(columns);
  for (std::size_t k = 0; k < open.size(); ++k) *open[k]->largest = std::move(maxima[k]);
}

/// The open bounds of the summarized columns, known now from their summaries' largest values (WeightedSummary::hi).
void bound_by_summary(detail::Context& c, std::span<const gpu::Column<std::int64_t>* const> summarized,
                      const std::vector<gpu::WeightedSummary>& summaries) {
  if (!c.bound_values || !c.device()) return;
  for_each_open_bound(c, [&](const detail::Values& v) {
    for (std::size_t k = 0; k < summarized.size(); ++k)
      if (summarized[k] == v.column.get()) {
        *v.largest = gpu::LaterMax(summaries[k].hi);
        return;
      }
  });
}

/// Records what the runtime samples while one observation computes (Context::report), and stops at scope exit.
struct Recording {
  // what the runtime sampled since the last observation, outside one (marginal, value, ...), is reported first
  explicit Recording(detail::Context& c) : ctx(c), sampled(std::move(c.pending)) {
    ctx.pending.clear();
    ctx.report = &sampled;
  }
  ~Recording() { ctx.report = nullptr; }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  detail::Context& ctx;
  std::vector<Sampled> sampled;
};
}  // namespace

Graph::Graph(std::size_t particles, std::uint64_t seed, Truncation t) : Graph(particles, seed, Device::automatic, t) {}

Graph::Graph(std::size_t particles, std::uint64_t seed, Device device, Truncation t) {
  if (particles == 0) tally::detail::fail<domain_error>("tally::runtime::Graph: particles must be >= 1");
  const gpu::Backend where = resolve(device, particles);
  // log-weights of a gigabyte or more that the host cannot hold are refused before they are asked for: where the
  // kernel overcommits memory, the allocation would succeed and the process be killed when they are written
  if (where == gpu::Backend::cpu && particles >= (std::size_t{1} << 27)) {
    const std::size_t available = host_available_bytes();
    if (available > 0 && particles > available / sizeof(double)) host_out_of_memory(particles);
  }
  try {
    context_ = std::make_shared<detail::Context>(particles, seed, where, t);
  } catch (const device_memory_error& e) {  // the log-weights alone do not fit
    out_of_memory(particles, e, 0);
  } catch (const std::bad_alloc&) {  // the host's: said with what would fit
    host_out_of_memory(particles);
  }
}

Graph::Graph(Groups groups, std::uint64_t seed, Device device, Truncation t)
    : Graph(groups.count == 0 || groups.size == 0 || groups.count > std::numeric_limits<std::size_t>::max() / groups.size
                ? 1
                : groups.count * groups.size,
            seed, device, t) {
  if (groups.count == 0 || groups.size == 0 || particles() != groups.count * groups.size)
    tally::detail::fail<domain_error>("tally::runtime::Graph: ", groups.count, " groups of ", groups.size,
                                      " particles (each must be >= 1, and their product a size)");
  context_->group_size = groups.size;
  context_->grouped = true;
}

Graph::Graph(Shard shard, std::shared_ptr<Communicator> communicator, std::uint64_t seed, Device device, Truncation t)
    : Graph(shard.count == 0 ? 1 : shard.count, seed, device, t) {
  constexpr const char* who = "tally::runtime::Graph (sharded)";
  if (!communicator) tally::detail::fail<usage_error>(who, ": no communicator");
  if (shard.count == 0 || shard.index != communicator->rank() || shard.index >= communicator->size() ||
      shard.first > shard.total || shard.count > shard.total - shard.first)
    tally::detail::fail<domain_error>(who, ": shard ", shard.index, " (", communicator->description(), ") holds ",
                                      shard.count, " particles from ", shard.first, " of ", shard.total);
  context_->shard = shard;
  context_->first_particle = shard.first;
  context_->sharded = true;
  context_->comm = std::move(communicator);
  detail::ShardPhase::new_graph();
}

namespace {
/// The shard of a rank's groups (Shard::even over the groups, in particles), checked.
Shard groups_shard(Groups groups, const std::shared_ptr<Communicator>& communicator) {
  constexpr const char* who = "tally::runtime::Graph (sharded groups)";
  if (!communicator) tally::detail::fail<usage_error>(who, ": no communicator");
  if (groups.count == 0 || groups.size == 0 || groups.count > std::numeric_limits<std::size_t>::max() / groups.size)
    tally::detail::fail<domain_error>(who, ": ", groups.count, " groups of ", groups.size,
                                      " particles (each must be >= 1, and their product a size)");
  if (groups.count < communicator->size())
    tally::detail::fail<domain_error>(who, ": ", groups.count, " groups for ", communicator->size(),
                                      " ranks (each rank holds whole groups: at least one)");
  const Shard mine = Shard::even(groups.count, communicator->size(), communicator->rank());
  return {mine.index, mine.count * groups.size, mine.first * groups.size, groups.count * groups.size};
}
}  // namespace

Graph::Graph(Groups groups, std::shared_ptr<Communicator> communicator, std::uint64_t seed, Device device, Truncation t)
    : Graph(groups_shard(groups, communicator), communicator, seed, device, t) {
  context_->group_size = groups.size;
  context_->grouped = true;
}

std::size_t Graph::particles() const { return context_->particles; }
std::size_t Graph::groups() const { return context_->particles / context_->group_size; }
std::size_t Graph::group_size() const { return context_->group_size; }
std::size_t Graph::first_group() const { return context_->grouped ? context_->shard.first / context_->group_size : 0; }

namespace {
/// The population's groups: a graph made with Groups (all of it, or a rank's share) is part of shard.total / S of
/// them; any other graph is one group, the population.
std::size_t population_groups(const detail::Context& c) { return c.grouped ? c.shard.total / c.group_size : 1; }
}  // namespace
const Shard& Graph::shard() const { return context_->shard; }
bool Graph::sharded() const { return context_->comm != nullptr; }
const std::shared_ptr<Communicator>& Graph::communicator() const { return context_->comm; }
gpu::Backend Graph::backend() const { return context_->where; }
void Graph::strict(bool on) { context_->strict = on; }
bool Graph::strict() const { return context_->strict; }
const std::vector<Sampled>& Graph::pending_samplings() const { return context_->pending; }
const Truncation& Graph::truncation() const { return context_->truncation; }
RandomStream& Graph::stream(std::size_t i) {
  if (i >= particles()) tally::detail::fail<domain_error>("tally::runtime::Graph::stream: particle ", i, " of ", particles());
  constexpr std::uint64_t engine_key = 0x656e'6769'6e65ull;  // "engine": apart from the graph's own draws
  auto& s = context_->streams;
  if (s.empty()) {
    s.reserve(particles());
    for (std::size_t k = 0; k < particles(); ++k) s.emplace_back(context_->seed ^ engine_key, context_->first_particle + k);
  }
  return s[i];
}
std::vector<double> Graph::log_weights() const { return context_->log_weight().to_host(); }
const gpu::Column<double>& Graph::log_weight_column() const { return context_->log_weight(); }
void Graph::reset_log_weights() {
  guarded(*this, [&] { context_->changing_log_weight() = gpu::filled(0.0, particles(), context_->where); });
}
std::int64_t Graph::live_nodes() { return Node::live(); }

template <class Handle>
std::shared_ptr<Node> Graph::node_of(const Handle& x, const char* who) const {
  if (!x.node_) tally::detail::fail<usage_error>(who, ": the variable handle is empty (default-constructed or moved from)");
  if (x.node_->context != context_) tally::detail::fail<usage_error>(who, ": the variable belongs to another Graph");
  return x.node_;
}

void Graph::name(const Variable& x, std::string name) { node_of(x, "name")->name = std::move(name); }
void Graph::name(const Continuous& x, std::string name) { node_of(x, "name")->name = std::move(name); }

Variable Graph::constant(std::int64_t v) {
  return guarded(*this, [&] {
    // filled where the graph lives (no host vector of P copies, no copy to the device)
    auto n = node_of(constant(gpu::filled(v, particles(), context_->where)), "constant");
    n->value.nonnegative = v >= 0;
    n->value.same = v;  // (operations on laws shared by particles stay shared with it)
    if (n->value.largest) *n->value.largest = gpu::LaterMax(v);  // its largest value, known: no pass to find it
    return Variable(n);
  });
}
Variable Graph::constant(const std::vector<std::int64_t>& v) {
  if (v.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::constant: ", v.size(), " values for ", particles(), " particles");
  return guarded(*this, [&] {
    auto n = node_of(constant(gpu::Column<std::int64_t>::from_host(v, context_->where)), "constant");
    n->value.nonnegative = std::all_of(v.begin(), v.end(), [](std::int64_t k) { return k >= 0; });
    return Variable(n);
  });
}
Variable Graph::constant(gpu::Column<std::int64_t> v) {
  if (v.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::constant: ", v.size(), " values for ", particles(), " particles");
  return guarded(*this, [&] {
    if (v.where() != context_->where) v = gpu::Column<std::int64_t>::from_host(v.to_host(), context_->where);
    auto n = std::make_shared<Node>(context_, detail::DiscreteRoot{Pmf::point(0), {}}, State::realized);
    n->value = detail::make_values(std::move(v));
    n->computed = true;
    return Variable(n);
  });
}

Variable Graph::assume(const Pmf& prior) {
  return Variable(std::make_shared<Node>(context_, detail::DiscreteRoot{prior, {}}, State::initialized));
}
Variable Graph::assume(const Pmf& prior, std::function<Pmf(const Truncation&)> family) {
  return Variable(std::make_shared<Node>(context_, detail::DiscreteRoot{prior, std::move(family)}, State::initialized));
}
namespace {
/// How many particles share each of `count` per-group or per-particle laws: the group's size, or 1 (shape_error for
/// another count).
std::size_t particles_per_law(const detail::Context& c, std::size_t count) {
  const std::size_t groups = c.particles / c.group_size;
  if (count == 0 || (count != groups && count != c.particles))
    tally::detail::fail<shape_error>("tally::runtime::Graph::assume: ", count, " laws for ", groups, " groups of ",
                                     c.group_size, " particles (one per group or one per particle)");
  return count == c.particles ? 1 : c.group_size;
}
}  // namespace

Variable Graph::assume(const std::vector<Pmf>& laws) {
  const std::size_t per = particles_per_law(*context_, laws.size());
  return guarded(*this, [&] {
    // the root's own prior: the law of largest error bound (what truncates() asks); no family, so no tails
    std::size_t widest = 0;
    for (std::size_t k = 1; k < laws.size(); ++k)
      if (laws[k].error_bound() > laws[widest].error_bound()) widest = k;
    auto n = std::make_shared<Node>(context_, detail::DiscreteRoot{laws[widest], {}}, State::marginalized);
    n->marginal = detail::per_group(*context_, laws, per);  // on the device, one law per group shared by its particles
    return Variable(std::move(n));
  });
}

Variable Graph::assume_value(std::type_index type, std::span<const std::byte> key,
                             std::function<Pmf(const Truncation&)> family) {
  auto& kept = context_->kept_priors;
  auto same = [&](const detail::Context::KeptPrior& k) { return k.type == type && std::ranges::equal(k.key, key); };
  auto it = std::find_if(kept.begin(), kept.end(), same);
  if (it == kept.end()) {
    Pmf law = family(truncation());  // a bad parameter throws here, before anything is kept
    if (kept.size() == detail::Context::kept_priors_at_most) kept.erase(kept.begin());
    kept.push_back({type, std::vector<std::byte>(key.begin(), key.end()), std::move(law)});
    it = kept.end() - 1;
  }
  return Variable(std::make_shared<Node>(context_, detail::DiscreteRoot{it->law, std::move(family), it->tails},
                                        State::initialized));
}

namespace {
std::shared_ptr<Node> child(const std::shared_ptr<detail::Context>& ctx, std::shared_ptr<Node> parent,
                            detail::ChildLaw law) {
  auto n = std::make_shared<Node>(ctx, detail::DiscreteChild{std::move(law)}, State::initialized);
  n->parents[0] = std::move(parent);
  return n;
}
}  // namespace

Variable Graph::assume(const Variable& x, const Thinning& law) { return Variable(child(context_, node_of(x, "assume"), law)); }
namespace {
/// Whether two child laws are the same law (the kept per-group laws are matched by this).
bool same_child_law(const detail::ChildLaw& a, const detail::ChildLaw& b) {
  if (a.index() != b.index()) return false;
  if (const auto* x = std::get_if<Thinning>(&a)) return x->keep == std::get<Thinning>(b).keep;
  if (const auto* x = std::get_if<ScaledPoisson>(&a)) return x->scale == std::get<ScaledPoisson>(b).scale;
  if (const auto* x = std::get_if<IndexedPoisson>(&a)) return x->rates == std::get<IndexedPoisson>(b).rates;
  if (const auto* x = std::get_if<MarkovStep>(&a)) return x->transition == std::get<MarkovStep>(b).transition;
  const auto& x = std::get<detail::AffineLaw>(a);
  const auto& y = std::get<detail::AffineLaw>(b);
  return x.a == y.a && x.c == y.c;
}
}  // namespace

template <class Law>
Variable Graph::assume_per_group(const Variable& x, const std::vector<Law>& given, const char* what) {
  auto parent = node_of(x, "assume");
  std::vector<detail::ChildLaw> laws(given.begin(), given.end());
  if (laws.size() != groups())
    tally::detail::fail<shape_error>("tally::runtime::Graph::assume: ", laws.size(), " ", what, " for ", groups(),
                                     " groups (one per group)");
  return guarded(*this, [&] {
    auto& kept = context_->kept_group_laws;
    const auto same = [&](const std::shared_ptr<const detail::GroupLaws>& k) {
      return std::ranges::equal(k->laws, laws, same_child_law);
    };
    std::shared_ptr<const detail::GroupLaws> each;
    if (const auto it = std::find_if(kept.begin(), kept.end(), same); it != kept.end()) {
      each = *it;
    } else {
      auto made = std::make_shared<detail::GroupLaws>();
      made->group_size = context_->group_size;
      auto one = std::make_shared<detail::GroupLaws>();  // the same laws, one particle per group
      if (std::holds_alternative<Thinning>(laws.front())) {
        // G probabilities copied, spread over their groups where the graph lives (no host vector of P values)
        std::vector<double> keep(laws.size());
        for (std::size_t g = 0; g < keep.size(); ++g) keep[g] = std::get<Thinning>(laws[g]).keep;
        one->keep = gpu::Column<double>::from_host(keep, context_->where);
        made->keep = gpu::repeated(one->keep, made->group_size);
      }
      one->laws = laws;
      made->laws = std::move(laws);
      made->one_per_group = std::move(one);
      if (kept.size() == detail::Context::kept_group_laws_at_most) kept.erase(kept.begin());
      kept.push_back(made);
      each = std::move(made);
    }
    auto n = child(context_, std::move(parent), each->laws.front());
    std::get<detail::DiscreteChild>(n->kind).each = std::move(each);
    return Variable(std::move(n));
  });
}

Variable Graph::assume(const Variable& x, const std::vector<Thinning>& laws) {
  return assume_per_group(x, laws, "thinnings");
}
Variable Graph::assume(const Variable& x, const std::vector<ScaledPoisson>& laws) {
  return assume_per_group(x, laws, "scaled Poisson laws");
}
Variable Graph::assume(const Variable& x, const std::vector<IndexedPoisson>& laws) {
  return assume_per_group(x, laws, "indexed Poisson laws");
}
Variable Graph::assume(const Variable& x, const std::vector<MarkovStep>& laws) {
  return assume_per_group(x, laws, "Markov steps");
}
Variable Graph::assume(const Variable& x, const ScaledPoisson& law) {
  return Variable(child(context_, node_of(x, "assume"), law));
}
Variable Graph::assume(const Variable& x, const IndexedPoisson& law) {
  return Variable(child(context_, node_of(x, "assume"), law));
}
Variable Graph::assume(const Variable& x, const MarkovStep& law) { return Variable(child(context_, node_of(x, "assume"), law)); }

Variable Graph::poisson(const Variable& state, const std::vector<Variable>& rates, double a) {
  constexpr const char* who = "tally::runtime::Graph::poisson";
  auto s = node_of(state, "poisson");
  if (rates.empty()) tally::detail::fail<shape_error>(who, ": no rates");
  tally::detail::check_nonnegative(a, who, "scale a");
  std::vector<std::shared_ptr<Node>> r;
  for (const auto& x : rates) r.push_back(node_of(x, "poisson"));
  auto n = std::make_shared<Node>(context_, detail::SelectedChild{detail::SelectedChild::poisson, a, {}}, State::initialized);
  n->parents[0] = std::move(s);
  n->more_parents = std::move(r);
  return Variable(n);
}

Variable Graph::binomial(const Variable& x, const Variable& state, const std::vector<double>& keep) {
  constexpr const char* who = "tally::runtime::Graph::binomial";
  auto s = node_of(state, "binomial");
  auto c = node_of(x, "binomial");
  if (keep.empty()) tally::detail::fail<shape_error>(who, ": no probabilities");
  for (double q : keep) tally::detail::check_probability(q, who, "keep probability");
  Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(keep.data(), static_cast<Eigen::Index>(keep.size()));
  auto n = std::make_shared<Node>(context_, detail::SelectedChild{detail::SelectedChild::thinning, 1.0, std::move(q)},
                                  State::initialized);
  n->parents[0] = std::move(s);
  n->more_parents = {std::move(c)};
  return Variable(n);
}

namespace {
/// A realized constant a x + b y + c, made at once from realized operands (no law is built).
std::shared_ptr<Node> realized_linear(const std::shared_ptr<detail::Context>& ctx, const Node& x, std::int64_t a,
                                      const Node* y, std::int64_t b, std::int64_t c) {
  auto n = std::make_shared<Node>(ctx, detail::DiscreteRoot{Pmf::point(0), {}}, State::realized);
  n->value = detail::linear(x.value, a, y ? y->value : detail::Values{}, b, c);
  n->computed = true;
  return n;
}
}  // namespace

Variable Graph::affine(const Variable& x, std::int64_t a, std::int64_t c) {
  if (a == 0) return assume(Pmf::point(c));
  if (auto n = node_of(x, "affine"); n->state == State::realized)
    return guarded(*this, [&] { return Variable(realized_linear(context_, *n, a, nullptr, 0, c)); });
  return Variable(child(context_, node_of(x, "affine"), detail::AffineLaw{a, c}));
}

namespace {
std::shared_ptr<Node> sum_node(const std::shared_ptr<detail::Context>& ctx, std::shared_ptr<Node> x,
                               std::shared_ptr<Node> y, int sign) {
  auto n = std::make_shared<Node>(ctx, detail::Sum{sign}, State::initialized);
  n->parents = {std::move(x), std::move(y)};
  return n;
}
}  // namespace

Variable Graph::add(const Variable& x, const Variable& y) {
  auto nx = node_of(x, "add"), ny = node_of(y, "add");
  if (nx == ny) return affine(x, 2, 0);  // x + x = 2x, exactly
  if (nx->state == State::realized && ny->state == State::realized)
    return guarded(*this, [&] { return Variable(realized_linear(context_, *nx, 1, ny.get(), 1, 0)); });
  return Variable(sum_node(context_, nx, ny, +1));
}

Variable Graph::subtract(const Variable& x, const Variable& y) {
  auto nx = node_of(x, "subtract"), ny = node_of(y, "subtract");
  if (nx == ny) return assume(Pmf::point(0));
  if (nx->state == State::realized && ny->state == State::realized)
    return guarded(*this, [&] { return Variable(realized_linear(context_, *nx, 1, ny.get(), -1, 0)); });
  return Variable(sum_node(context_, nx, ny, -1));
}

Continuous Graph::assume(const Beta& law) {
  return guarded(*this, [&] {
    auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::beta}, State::marginalized);
    n->continuous = std::make_unique<Node::ContinuousState>();
    n->continuous->params.a = gpu::filled(law.alpha, particles(), context_->where);
    n->continuous->params.b = gpu::filled(law.beta, particles(), context_->where);
    return Continuous(n);
  });
}
Continuous Graph::assume(const Gamma& law) {
  return guarded(*this, [&] {
    auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::gamma}, State::marginalized);
    n->continuous = std::make_unique<Node::ContinuousState>();
    n->continuous->params.a = gpu::filled(law.shape, particles(), context_->where);
    n->continuous->params.b = gpu::filled(law.rate, particles(), context_->where);
    return Continuous(n);
  });
}
Continuous Graph::assume(const Dirichlet& law) {
  return guarded(*this, [&] {
    auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::dirichlet},
                                    State::marginalized);
    n->continuous = std::make_unique<Node::ContinuousState>();
    n->continuous->params.dirichlet = gpu::Vectors::filled(
        std::span<const double>(law.alpha.data(), static_cast<std::size_t>(law.alpha.size())), particles(),
        context_->where);
    return Continuous(n);
  });
}

namespace {
/// A parameter of each law (one per group or per particle) spread over the particles where the graph keeps its state:
/// the laws' values copied, then repeated over their groups (one launch on the device, no host vector of P values).
template <class Law, class Get>
gpu::Column<double> spread(const detail::Context& c, const std::vector<Law>& laws, std::size_t per, Get get) {
  std::vector<double> v(laws.size());
  for (std::size_t k = 0; k < laws.size(); ++k) v[k] = get(laws[k]);
  auto column = gpu::Column<double>::from_host(v, c.where);
  if (per == 1) return column;
  return gpu::repeated(column, per);
}
/// A Beta or Gamma root of per-group or per-particle hyperparameters (a, b).
template <class Law, class A, class B>
std::shared_ptr<Node> two_parameter_root(const std::shared_ptr<detail::Context>& c,
                                         detail::ContinuousRoot::Family family, const std::vector<Law>& laws, A a, B b) {
  const std::size_t per = particles_per_law(*c, laws.size());
  auto n = std::make_shared<Node>(c, detail::ContinuousRoot{family}, State::marginalized);
  n->continuous = std::make_unique<Node::ContinuousState>();
  n->continuous->params.a = spread(*c, laws, per, a);
  n->continuous->params.b = spread(*c, laws, per, b);
  return n;
}
}  // namespace

Continuous Graph::assume(const std::vector<Beta>& laws) {
  return guarded(*this, [&] {
    return Continuous(two_parameter_root(context_, detail::ContinuousRoot::beta, laws,
                                         [](const Beta& d) { return d.alpha; }, [](const Beta& d) { return d.beta; }));
  });
}
Continuous Graph::assume(const std::vector<Gamma>& laws) {
  return guarded(*this, [&] {
    return Continuous(two_parameter_root(context_, detail::ContinuousRoot::gamma, laws,
                                         [](const Gamma& d) { return d.shape; }, [](const Gamma& d) { return d.rate; }));
  });
}
Continuous Graph::assume(const std::vector<Dirichlet>& laws) {
  const std::size_t per = particles_per_law(*context_, laws.size());
  const auto K = static_cast<std::size_t>(laws.front().alpha.size());
  for (std::size_t k = 0; k < laws.size(); ++k)
    if (static_cast<std::size_t>(laws[k].alpha.size()) != K)
      tally::detail::fail<shape_error>("tally::runtime::Graph::assume: Dirichlet law ", k, " has ", laws[k].alpha.size(),
                                       " categories where law 0 has ", K, " (one dimension for every particle)");
  std::vector<double> rows;  // one row per law, then spread over the particles (no host array of P rows)
  rows.reserve(laws.size() * K);
  for (const Dirichlet& d : laws) rows.insert(rows.end(), d.alpha.data(), d.alpha.data() + K);
  auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::dirichlet},
                                  State::marginalized);
  n->continuous = std::make_unique<Node::ContinuousState>();
  n->continuous->params.dirichlet = guarded(*this, [&] {
    gpu::Vectors v = gpu::Vectors::from_rows(rows, K, context_->where);
    return per == 1 ? std::move(v) : gpu::gather(v, gpu::block_indices(particles(), per, context_->where));
  });
  return Continuous(n);
}

namespace {
void require_family(const Node& n, detail::ContinuousRoot::Family family, const char* who, const char* what) {
  const auto& root = std::get<detail::ContinuousRoot>(n.kind);
  if (root.family != family) tally::detail::fail<usage_error>(who, ": the parameter is not a ", what, " variable");
}
}  // namespace

Variable Graph::binomial(std::int64_t n, const Continuous& rho) {
  return binomial(std::vector<std::int64_t>(particles(), n), rho);
}

Variable Graph::binomial(const std::vector<std::int64_t>& n, const Continuous& rho) {
  auto p = node_of(rho, "binomial");
  require_family(*p, detail::ContinuousRoot::beta, "binomial", "Beta");
  if (n.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::binomial: ", n.size(), " trial counts for ", particles(), " particles");
  for (auto k : n) tally::detail::check_count(k, "tally::runtime::Graph::binomial", "number of trials n");
  detail::CountChild c{detail::CountChild::binomial, guarded(*this, [&] { return detail::make_values(*context_, n); }),
                       0.0, 1.0};
  auto node = std::make_shared<Node>(context_, std::move(c), State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::negative_binomial(double r, const Continuous& rho) {
  auto p = node_of(rho, "negative_binomial");
  require_family(*p, detail::ContinuousRoot::beta, "negative_binomial", "Beta");
  tally::detail::check_positive(r, "tally::runtime::Graph::negative_binomial", "r");
  auto node = std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::negative_binomial, {}, r, 1.0},
                                     State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::poisson(const Continuous& lambda, double a) {
  auto p = node_of(lambda, "poisson");
  require_family(*p, detail::ContinuousRoot::gamma, "poisson", "Gamma");
  tally::detail::check_positive(a, "tally::runtime::Graph::poisson", "scale a");
  auto node = std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::poisson, {}, 0.0, a}, State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::categorical(const Continuous& pi) {
  auto p = node_of(pi, "categorical");
  require_family(*p, detail::ContinuousRoot::dirichlet, "categorical", "Dirichlet");
  auto node =
      std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::categorical, {}, 0.0, 1.0}, State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

namespace {
/// x's values where the graph keeps them, x realized first (drawn from its exact posterior) if it is not.
const detail::Values& realized(Node& n) {
  if (detail::draw_directly(n)) return n.value;
  detail::graft(n);
  if (n.state == State::marginalized) detail::sample(n);
  return n.value;
}
/// A Variable that the engine needs realized as a parameter: sampled as a Fallback::parent_realized if not.
const detail::Values& realized_parameter(Node& n) {
  if (n.state != State::realized) {
    detail::graft(n);
    if (n.state == State::marginalized) detail::fallback(n, Fallback::parent_realized);
  }
  return realized(n);
}
}  // namespace

Variable Graph::binomial(const Variable& x, const std::vector<double>& p) {
  if (p.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::binomial: ", p.size(), " probabilities for ", particles(), " particles");
  // checked here, on the host, whatever the backend (a device column's values are checked where they are used)
  for (double v : p) tally::detail::check_probability(v, "tally::runtime::Graph::binomial", "p");
  return guarded(*this, [&] { return binomial(x, gpu::Column<double>::from_host(p, context_->where)); });
}

Variable Graph::binomial(const Variable& x, gpu::Column<double> p) {
  constexpr const char* who = "tally::runtime::Graph::binomial";
  auto n = node_of(x, "binomial");
  if (p.size() != particles())
    tally::detail::fail<shape_error>(who, ": ", p.size(), " probabilities for ", particles(), " particles");
  return guarded(*this, [&] {
    auto q = std::make_shared<gpu::Column<double>>(
        p.where() == context_->where ? std::move(p) : gpu::Column<double>::from_host(p.to_host(), context_->where));
    if (q->where() == gpu::Backend::cpu)
      for (double v : q->host()) tally::detail::check_probability(v, who, "p");
    realized_parameter(*n);
    auto node = std::make_shared<Node>(context_, detail::PerParticleBinomial{std::move(q)}, State::initialized);
    node->parents[0] = std::move(n);
    return Variable(node);
  });
}

Variable Graph::binomial(const Variable& x, const Continuous& rho) {
  auto p = node_of(rho, "binomial");
  require_family(*p, detail::ContinuousRoot::beta, "binomial", "Beta");
  const auto nx = node_of(x, "binomial");
  if (nx->state != State::realized) {
    // observed, X is conditioned exactly (beta_thinning.cpp); any other use realizes X first
    auto node = std::make_shared<Node>(context_, detail::BetaThinning{}, State::initialized);
    node->parents = {nx, std::move(p)};
    return Variable(node);
  }
  const detail::Values& n = guarded(*this, [&]() -> const detail::Values& { return realized_parameter(*nx); });
  if (context_->where == gpu::Backend::cpu)
    for (std::size_t i = 0; i < particles(); ++i)
      tally::detail::check_count(n[i], "tally::runtime::Graph::binomial", "number of trials n");
  detail::CountChild c{detail::CountChild::binomial, n, 0.0, 1.0};
  auto node = std::make_shared<Node>(context_, std::move(c), State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Observation Graph::observe(const Variable& x, std::int64_t v) {
  node_of(x, "observe");
  return guarded(*this, [&] { return observe(x, constant(v)); });
}

Observation Graph::observe(const Variable& x, const std::vector<std::int64_t>& v) {
  if (v.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::observe: ", v.size(), " values for ", particles(), " particles");
  node_of(x, "observe");
  return guarded(*this, [&] { return observe(x, constant(v)); });
}

Observation Graph::observe(const Variable& x, const Variable& v) {
  auto n = node_of(x, "observe");
  auto nv = node_of(v, "observe");
  if (n == nv) tally::detail::fail<usage_error>("tally::runtime::Graph::observe: a variable observed at itself");
  if (n->state == State::realized && !n->computed)
    tally::detail::fail<usage_error>("tally::runtime::Graph::observe: ", n->name,
                                     " is already realized; observe each variable once, before value()");
  return guarded(*this, [&] {
    if (n->state == State::realized) {  // a computed constant (a bootstrap filter's simulated count): 0 or -inf
      const detail::Values values = realized(*nv);
      // 0 or -inf written and added to the log-weights in one pass
      auto ll = gpu::Column<double>::allocate(context_->where, particles(), "tally::runtime::Graph::observe");
      gpu::observe_equal(*n->value, *values, ll, context_->changing_log_weight());
      n->computed = false;
      return Observation(std::move(ll), Exactness{});
    }
    const detail::Values values = realized(*nv);
    Recording recording(*context_);
    if (auto impossible = detail::observe_outside_support(*n, values))
      return Observation(std::move(*impossible), Exactness{});
    // the truncated laws this likelihood reads are found before observe() realizes n and cuts its edges
    std::vector<std::string> truncated;
    if (context_->truncating > 0) truncated = detail::truncated_ancestors(*n);
    auto [loglik, error] = detail::observe(*n, values);
    if (error.pending())  // read when the engine asks (Observation::exactness), not now: no wait for the device
      return Observation(std::move(loglik), Exactness{std::move(recording.sampled), error.floor(), std::move(truncated)},
                         [error = error] { return error.value(); });
    if (error == 0.0) truncated.clear();
    return Observation(std::move(loglik), Exactness{std::move(recording.sampled), error, std::move(truncated)});
  });
}

bool Graph::in_support(const Variable& x, std::int64_t v) const {
  const auto s = detail::structural_support(*node_of(x, "in_support"));
  return !s || s->contains(v);
}

std::vector<std::int64_t> Graph::value(const Variable& x) {
  auto n = node_of(x, "value");
  return guarded(*this, [&] { return detail::to_vector(realized(*n)); });
}

const gpu::Column<std::int64_t>& Graph::values(const Variable& x) {
  auto n = node_of(x, "values");
  return guarded(*this, [&]() -> const gpu::Column<std::int64_t>& { return *realized(*n); });
}

std::vector<gpu::WeightedSummary> Graph::summarize(std::span<const Variable> xs,
                                                   std::span<const double> probabilities) {
  std::vector<std::shared_ptr<Node>> nodes;
  nodes.reserve(xs.size());
  for (const Variable& x : xs) nodes.push_back(node_of(x, "summarize"));
  return guarded(*this, [&] {
    std::vector<const gpu::Column<std::int64_t>*> columns;
    columns.reserve(nodes.size());
    for (const auto& n : nodes) columns.push_back(realized(*n).column.get());
    std::optional<detail::ShardPhase> phase;
    if (sharded()) phase.emplace(*context_, "summarize");
    if (sharded()) {
      // each shard's sums and histograms, added: O(P / G) a shard; on tile-aligned shards the systematic plan of
      // the weights with them, for a resampling that follows
      const std::span<const gpu::Column<std::int64_t>* const> mine(columns);
      std::optional<detail::PlanFor> plan_for;
      if (!context_->known_plan && detail::tile_aligned(*context_))
        plan_for = detail::PlanFor{context_->seed ^ resampling_key, context_->resamplings};
      if (auto parts = detail::sharded_summarize_parts(*context_, mine, probabilities, plan_for))
        return std::move(*parts);
    }
    if (sharded() && detail::whole_on_device(*context_)) {
      // values too spread for the bins: the whole population's columns on every shard, gpu::summarize's results
      // (the unsharded ones bit for bit), and the resampler's summary of the whole weights kept for a resampling
      // that follows (as below)
      std::vector<gpu::Column<std::int64_t>> whole;
      whole.reserve(columns.size());
      for (const auto* c : columns) whole.push_back(detail::whole_column(*context_, *c));
      std::vector<const gpu::Column<std::int64_t>*> values;
      for (const auto& c : whole) values.push_back(&c);
      const auto weights = detail::whole_column(*context_, context_->log_weight());
      if (context_->known_weights()) return gpu::summarize(values, weights, probabilities);
      std::optional<gpu::WeightSummary> known;
      auto out = gpu::summarize(values, weights, probabilities, known);
      context_->know_weights(known);
      return out;
    }
    if (sharded()) {
      std::vector<gpu::WeightedSummary> out;
      for (const auto* c : columns) out.push_back(detail::sharded_summarize(*context_, *c, probabilities));
      return out;
    }
    // on the device the resampler's summary of the weights comes back too (unless an earlier summary of the same
    // weights brought it): a resampling next needs no wait
    const std::span<const gpu::Column<std::int64_t>* const> values(columns);
    bound_live_values(*context_, values);
    const bool known = context_->known_weights().has_value();
    std::optional<gpu::WeightSummary> weights;
    auto out = known ? gpu::summarize(values, context_->log_weight(), probabilities)
                     : gpu::summarize(values, context_->log_weight(), probabilities, weights);
    if (!known) context_->know_weights(weights);
    bound_by_summary(*context_, values, out);
    return out;
  });
}

gpu::WeightedSummary Graph::summarize(const Variable& x, std::span<const double> probabilities) {
  return std::move(summarize(std::span<const Variable>(&x, 1), probabilities).front());
}

void Graph::realize(const Variable& x) {
  auto n = node_of(x, "realize");
  guarded(*this, [&] { realized(*n); });
}

void Graph::realize(const Continuous& x) {
  auto n = node_of(x, "realize");
  guarded(*this, [&] {
    if (n->state != State::realized) detail::sample_continuous(*n);
  });
}

std::vector<Pmf> Graph::marginal(const Variable& x) {
  auto n = node_of(x, "marginal");
  return guarded(*this, [&] {
    if (auto exact = detail::query_marginal(*n)) return detail::to_pmfs(*exact);  // nothing pruned, nothing drawn
    detail::graft(*n);
    if (n->state == State::realized) {
      std::vector<Pmf> out;
      for (std::int64_t v : detail::to_vector(n->value)) out.push_back(Pmf::point(v));
      return out;
    }
    return detail::to_pmfs(detail::law(*n));
  });
}

namespace {
/// The P vectors on the host, one Eigen vector each.
std::vector<Eigen::VectorXd> rows_of(const gpu::Vectors& v) {
  const std::vector<double> flat = v.to_host();
  const std::size_t K = v.dimension;
  std::vector<Eigen::VectorXd> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out.emplace_back(Eigen::Map<const Eigen::VectorXd>(flat.data() + i * K, static_cast<Eigen::Index>(K)));
  return out;
}
}  // namespace

std::vector<Eigen::VectorXd> Graph::value(const Continuous& x) {
  auto n = node_of(x, "value");
  guarded(*this, [&] {
    if (n->state != State::realized) detail::sample_continuous(*n);
  });
  const auto& c = *n->continuous;
  std::vector<Eigen::VectorXd> out;
  if (std::get<detail::ContinuousRoot>(n->kind).family == detail::ContinuousRoot::dirichlet) return rows_of(c.vector);
  for (double v : c.scalar.to_host()) out.push_back(Eigen::VectorXd::Constant(1, v));
  return out;
}

std::vector<double> Graph::scalar_value(const Continuous& x) {
  auto n = node_of(x, "scalar_value");
  if (std::get<detail::ContinuousRoot>(n->kind).family == detail::ContinuousRoot::dirichlet)
    tally::detail::fail<usage_error>("tally::runtime::Graph::scalar_value: ", n->name, " is a Dirichlet variable (use value)");
  guarded(*this, [&] {
    if (n->state != State::realized) detail::sample_continuous(*n);
  });
  return n->continuous->scalar.to_host();
}

namespace {
const Node& unrealized(const Graph& g, const std::shared_ptr<Node>& n, const char* who) {
  if (n->state == State::realized)
    tally::detail::fail<usage_error>(who, ": the variable is realized; it has a value, not parameters");
  guarded(g, [&] { detail::graft(*n); });  // prune: the parameters then include what the M-path absorbed
  return *n;
}
}  // namespace

std::vector<Beta> Graph::beta(const Continuous& x) {
  const auto node = node_of(x, "beta");
  require_family(*node, detail::ContinuousRoot::beta, "beta", "Beta");  // before grafting: a refused query changes nothing
  const auto& p = unrealized(*this, node, "beta").continuous->params;
  const auto a = p.a.to_host(), b = p.b.to_host();
  std::vector<Beta> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.emplace_back(a[i], b[i]);
  return out;
}
std::vector<Gamma> Graph::gamma(const Continuous& x) {
  const auto node = node_of(x, "gamma");
  require_family(*node, detail::ContinuousRoot::gamma, "gamma", "Gamma");  // before grafting: a refused query changes nothing
  const auto& p = unrealized(*this, node, "gamma").continuous->params;
  const auto a = p.a.to_host(), b = p.b.to_host();
  std::vector<Gamma> out;
  for (std::size_t i = 0; i < a.size(); ++i) out.emplace_back(a[i], b[i]);
  return out;
}
std::vector<Dirichlet> Graph::dirichlet(const Continuous& x) {
  const auto node = node_of(x, "dirichlet");
  require_family(*node, detail::ContinuousRoot::dirichlet, "dirichlet", "Dirichlet");  // before grafting: a refused query changes nothing
  const auto& p = unrealized(*this, node, "dirichlet").continuous->params;
  std::vector<Dirichlet> out;
  for (Eigen::VectorXd& alpha : rows_of(p.dirichlet)) out.emplace_back(std::move(alpha));
  return out;
}

std::vector<std::vector<std::size_t>> Graph::touches(const std::vector<Variable>& observations,
                                                     const std::vector<Variable>& variables,
                                                     DependenceMethod method) const {
  std::vector<Node*> o, v;
  for (const auto& x : observations) o.push_back(node_of(x, "touches").get());  // the handles keep the nodes alive
  for (const auto& x : variables) v.push_back(node_of(x, "touches").get());
  return detail::touches(o, v, method);
}

std::vector<std::vector<std::size_t>> Graph::touches(const std::vector<Variable>& observations,
                                                     const std::vector<Continuous>& parameters,
                                                     DependenceMethod method) const {
  std::vector<Node*> o, v;
  for (const auto& x : observations) o.push_back(node_of(x, "touches").get());
  for (const auto& x : parameters) v.push_back(node_of(x, "touches").get());
  return detail::touches(o, v, method);
}

Graph::Resampling Graph::resample_by_weight(gpu::Resampler kind) { return resample_by_weight(1.0, kind); }

Graph::Resampling Graph::resample_by_weight(double threshold, gpu::Resampler kind) {
  if (population_groups(*context_) > 1)
    tally::detail::fail<usage_error>("tally::runtime::Graph::resample_by_weight: a graph of ",
                                     population_groups(*context_),
                                     " groups resamples each group within itself (resample_groups)");
  if (sharded()) return guarded(*this, [&] { return sharded_resample_by_weight(threshold, kind); });
  return guarded(*this, [&]() -> Resampling {
  // the counter of this call's uniforms advances only when the call succeeds: a retry after a failure (a device
  // allocation) draws the same uniforms, as if the failed call had not been made
  // the weights' summary known from a summary of them (computed by the resampler's own passes: the same bits) makes
  // the decision without a pass or a wait; the results are those of the call without it
  const std::optional<gpu::WeightSummary> known = context_->known_weights();
  if (known && !(known->max_log_weight > -std::numeric_limits<double>::infinity())) {
    ++context_->resamplings;
    return {-std::numeric_limits<double>::infinity(), 0.0, {}};
  }
  if (known && threshold < 1.0 && !(known->ess < threshold * static_cast<double>(particles()))) {
    ++context_->resamplings;
    return {known->log_sum - std::log(static_cast<double>(particles())), known->ess, {}};
  }
  gpu::WeightSummary summary{};
  if (!known) bound_live_values(*context_);  // the resampler waits for the weights' summary
  auto ancestors = gpu::resample(context_->log_weight(), kind, context_->seed ^ resampling_key, context_->resamplings,
                                 summary, threshold, known ? &*known : nullptr);
  const double log_mean = summary.log_sum - std::log(static_cast<double>(particles()));
  if (ancestors.size() == 0) {  // every particle impossible
    ++context_->resamplings;
    return {-std::numeric_limits<double>::infinity(), 0.0, {}};
  }
  if (threshold < 1.0 && !(summary.ess < threshold * static_cast<double>(particles()))) {
    ++context_->resamplings;
    return {log_mean, summary.ess, {}};
  }
  auto zero = gpu::filled(0.0, particles(), context_->where);  // before gathering: the moves after it cannot fail
  gather(ancestors);
  context_->changing_log_weight() = std::move(zero);
  ++context_->resamplings;
  return {log_mean, summary.ess, std::move(ancestors), true};
  });
}

Graph::Resampling Graph::sharded_resample_by_weight(double threshold, gpu::Resampler kind) {
  // the same steps as the unsharded resampler, collectively: the counter advances on every shard alike
  const std::uint64_t counter = context_->resamplings++;
  const double total = static_cast<double>(context_->shard.total);
  if (kind == gpu::Resampler::systematic && detail::tile_aligned(*context_)) {
    // each shard passes over its own particles only: its tiles' totals, shared; the plan, on every shard alike
    const std::optional<gpu::WeightSummary> known = context_->known_weights();  // a whole summary's, if any
    if (known && !(known->max_log_weight > -inf)) return {-inf, 0.0, {}};
    if (known && threshold < 1.0 && !(known->ess < threshold * total))
      return {known->log_sum - std::log(total), known->ess, {}};
    detail::TiledPlan tiled = detail::tiled_plan(*context_, context_->seed ^ resampling_key, counter);
    const gpu::WeightSummary& summary = tiled.plan.summary;
    if (!(tiled.plan.largest > -inf)) return {-inf, 0.0, {}};
    const double log_mean = summary.log_sum - std::log(total);
    if (threshold < 1.0 && !(summary.ess < threshold * total)) return {log_mean, summary.ess, {}};
    auto zero = gpu::filled(0.0, particles(), context_->where);
    auto mine = detail::tiled_gather(*context_, tiled);
    context_->changing_log_weight() = std::move(zero);
    return {log_mean, summary.ess, std::move(mine), true};
  }
  if (detail::whole_on_device(*context_)) {
    const detail::ShardPhase phase(*context_, "resample: whole");
    return whole_resample_by_weight(threshold, kind, counter);
  }
  const detail::ShardedResampling weights = detail::sharded_summary(*context_);
  if (weights.impossible) return {-std::numeric_limits<double>::infinity(), 0.0, {}};
  const double log_mean = weights.summary.log_sum - std::log(total);
  if (threshold < 1.0 && !(weights.summary.ess < threshold * total)) return {log_mean, weights.summary.ess, {}};
  const auto ancestors = detail::sharded_ancestors(*context_, weights, kind, context_->seed ^ resampling_key, counter);
  auto zero = gpu::filled(0.0, particles(), context_->where);
  detail::sharded_gather(*context_, ancestors, nullptr);
  context_->changing_log_weight() = std::move(zero);
  return {log_mean, weights.summary.ess, gpu::Column<std::size_t>::from_host(ancestors, context_->where), true};
}

Graph::Resampling Graph::whole_resample_by_weight(double threshold, gpu::Resampler kind, std::uint64_t counter) {
  // the unsharded resampler's steps on the whole population's log-weights, gathered on every shard (the same
  // decision and ancestors on every shard, and those of the unsharded population); then only the moved particles
  // travel
  const double total = static_cast<double>(context_->shard.total);
  const std::optional<gpu::WeightSummary> known = context_->known_weights();  // a summary's, of the whole weights
  if (known && !(known->max_log_weight > -inf)) return {-inf, 0.0, {}};
  if (known && threshold < 1.0 && !(known->ess < threshold * total))
    return {known->log_sum - std::log(total), known->ess, {}};
  const auto weights = detail::whole_column(*context_, context_->log_weight());
  gpu::WeightSummary summary{};
  const auto whole = gpu::resample(weights, kind, context_->seed ^ resampling_key, counter, summary, threshold,
                                   known ? &*known : nullptr);
  const double log_mean = summary.log_sum - std::log(total);
  if (whole.size() == 0) return {-inf, 0.0, {}};
  if (threshold < 1.0 && !(summary.ess < threshold * total)) return {log_mean, summary.ess, {}};
  auto zero = gpu::filled(0.0, particles(), context_->where);
  auto mine = detail::sharded_gather_whole(*context_, whole, kind == gpu::Resampler::systematic);
  context_->changing_log_weight() = std::move(zero);
  return {log_mean, summary.ess, std::move(mine), true};
}

void Graph::resample(const std::vector<std::size_t>& ancestors) {
  const std::size_t range = sharded() ? context_->shard.total : particles();
  const bool sized = ancestors.size() == particles();
  const bool in_range = std::all_of(ancestors.begin(), ancestors.end(), [&](std::size_t a) { return a < range; });
  // each ancestor in its particle's group (the population's indices on a shard)
  const std::size_t s = context_->group_size, first = sharded() ? context_->shard.first : 0;
  std::size_t outside = ancestors.size();
  for (std::size_t i = 0; i < ancestors.size() && population_groups(*context_) > 1 && outside == ancestors.size(); ++i)
    if (ancestors[i] / s != (first + i) / s) outside = i;
  const bool valid = sized && in_range && outside == ancestors.size();
  if (sharded() && !detail::on_every_shard(*context_, valid) && valid)
    tally::detail::fail<domain_error>("tally::runtime::Graph::resample: another shard's ancestors are invalid");
  if (!sized)
    tally::detail::fail<shape_error>("tally::runtime::Graph::resample: ", ancestors.size(), " ancestors for ",
                                     particles(), " particles");
  for (std::size_t a : ancestors)
    if (a >= range) tally::detail::fail<domain_error>("tally::runtime::Graph::resample: ancestor ", a, " out of range");
  if (outside < ancestors.size())
    tally::detail::fail<domain_error>("tally::runtime::Graph::resample: particle ", outside, "'s ancestor ",
                                      ancestors[outside], " is outside its group ", (first + outside) / s);
  if (sharded()) {
    guarded(*this, [&] { detail::sharded_gather(*context_, ancestors, &context_->changing_log_weight()); });
    return;
  }
  guarded(*this, [&] {
    const auto where = gpu::Column<std::size_t>::from_host(ancestors, context_->where);
    auto weights = detail::gather(context_->log_weight(), where);  // before the nodes: the move after cannot fail
    gather(where);
    context_->changing_log_weight() = std::move(weights);
  });
}

Graph::GroupResampling Graph::resample_groups(double threshold, gpu::Resampler kind) {
  if (!(threshold >= 0.0))
    tally::detail::fail<domain_error>("tally::runtime::Graph::resample_groups: threshold ", threshold, " is not >= 0");
  if (population_groups(*context_) == 1) {  // the whole population's resampler (its fused passes), as one group
    Resampling r = resample_by_weight(std::min(threshold, 1.0), kind);
    const gpu::Backend where = context_->where;
    return {gpu::filled(r.log_mean_weight, 1, where), gpu::filled(r.ess, 1, where),
            gpu::filled(std::int64_t{r.resampled ? 1 : 0}, 1, where), std::move(r.ancestors)};
  }
  return guarded(*this, [&]() -> GroupResampling {
    // as resample_by_weight: the counter advances only when the call succeeds
    const std::size_t s = context_->group_size;
    gpu::GroupWeights weights = gpu::summarize_groups(context_->log_weight(), s);
    if (threshold == 0.0) {
      ++context_->resamplings;
      return {std::move(weights.log_mean_weight), std::move(weights.ess),
              gpu::filled(std::int64_t{0}, groups(), context_->where), {}};
    }
    // a rank's share of groups draws its groups' uniforms, as the whole population's graph would
    gpu::GroupResampled r = gpu::resample_groups(context_->log_weight(), s, weights, threshold, kind,
                                                 context_->seed ^ resampling_key, context_->resamplings, first_group());
    gather(r.ancestors);  // then the moves, which cannot fail
    context_->changing_log_weight() = std::move(r.log_w);
    ++context_->resamplings;
    return {std::move(weights.log_mean_weight), std::move(weights.ess), std::move(r.resampled), std::move(r.ancestors)};
  });
}

gpu::GroupMoments Graph::summarize_groups(const Variable& x) {
  auto n = node_of(x, "summarize_groups");
  if (sharded() && population_groups(*context_) == 1)
    tally::detail::fail<usage_error>("tally::runtime::Graph::summarize_groups: a sharded graph of one group (its ",
                                     "summary is the population's: summarize)");
  return guarded(*this, [&] {
    return gpu::summarize_values_by_group(*realized(*n).column, context_->log_weight(), context_->group_size);
  });
}

void Graph::gather(const gpu::Column<std::size_t>& a) {
  ++context_->epoch;
  // Two phases, so that a failure (a device allocation, host memory) leaves every particle as it was (the strong
  // guarantee; gathering node by node in place would leave some nodes resampled and others not): first every
  // node's gathered state is computed aside, then all are moved in, which cannot throw.
  // Laws and values shared between nodes (an operand's laws, a count's trials) are gathered once and stay shared.
  std::map<const void*, detail::Laws> laws;
  std::map<const void*, detail::Values> values;
  std::vector<std::pair<detail::Laws*, const detail::Laws*>> new_laws;  // shared: copied in
  std::vector<std::pair<detail::Values*, const detail::Values*>> new_values;
  std::vector<std::pair<gpu::Column<double>*, gpu::Column<double>>> new_columns;
  std::vector<std::pair<gpu::Vectors*, gpu::Vectors>> new_vectors;
  std::vector<std::pair<std::shared_ptr<const gpu::Column<double>>*, std::shared_ptr<const gpu::Column<double>>>> new_p;
  std::vector<std::pair<detail::Laws*, detail::Laws>> own_laws;  // host laws, not shared: moved in
  auto gather_laws = [&](detail::Laws& l) {
    if (l.empty() || l.shared) return;  // laws shared by groups (or by all): every resampling keeps them
    if (!l.device && !l.parameters) {
      own_laws.emplace_back(&l, detail::gather(l, a));
      return;
    }
    auto [it, fresh] = laws.try_emplace(l.device ? static_cast<const void*>(l.device.get()) : l.parameters.get());
    if (fresh) it->second = detail::gather(l, a);
    new_laws.emplace_back(&l, &it->second);
  };
  // the columns of values and of per-particle parameters are gathered together after the walk (one launch for
  // each type on the device), each distinct column once
  std::vector<const detail::Values*> value_sources;
  std::vector<gpu::Column<double>*> double_columns;
  auto gather_values = [&](detail::Values& v) {
    if (v.empty()) return;
    auto [it, fresh] = values.try_emplace(v.column.get());
    if (fresh) value_sources.push_back(&v);
    new_values.emplace_back(&v, &it->second);
  };
  auto gather_doubles = [&](gpu::Column<double>& c) {
    if (c.size() > 0) double_columns.push_back(&c);
  };
  std::optional<std::vector<std::size_t>> host_ancestors;  // read back only for joint laws (host tables)
  auto ancestors_on_host = [&]() -> const std::vector<std::size_t>& {
    if (!host_ancestors) host_ancestors = a.to_host();
    return *host_ancestors;
  };
  std::optional<detail::GroupGather> groups;  // joint laws live on the host
  for (Node* n = context_->first_live; n != nullptr; n = n->next_live)
    if (n->group) {
      groups = detail::gather_groups(context_->first_live, ancestors_on_host());
      break;
    }
  for (Node* n = context_->first_live; n != nullptr; n = n->next_live) {
    gather_laws(n->marginal);
    gather_values(n->value);
    gather_values(n->tie_c);
    gather_laws(n->tie_base);
    if (auto* c = n->continuous.get()) {
      gather_doubles(c->params.a);
      gather_doubles(c->params.b);
      gather_doubles(c->scalar);
      for (gpu::Vectors* v : {&c->params.dirichlet, &c->vector})
        if (!v->empty()) new_vectors.emplace_back(v, gpu::gather(*v, a));
    }
    if (n->operands)
      for (auto& o : *n->operands) gather_laws(o);
    if (auto* c = std::get_if<detail::CountChild>(&n->kind)) gather_values(c->trials);
    if (auto* b = std::get_if<detail::PerParticleBinomial>(&n->kind))
      new_p.emplace_back(&b->p, std::make_shared<const gpu::Column<double>>(detail::gather(*b->p, a)));
  }
  {
    std::vector<const gpu::Column<std::int64_t>*> columns;
    for (const detail::Values* v : value_sources) columns.push_back(v->column.get());
    auto gathered = gpu::gather(std::span<const gpu::Column<std::int64_t>* const>(columns), a);
    for (std::size_t k = 0; k < columns.size(); ++k)
      values[columns[k]] = detail::make_values(std::move(gathered[k]), value_sources[k]->nonnegative,
                                               value_sources[k]->largest ? *value_sources[k]->largest
                                                                         : gpu::LaterMax());  // a gather's values
  }
  {
    const std::vector<const gpu::Column<double>*> columns(double_columns.begin(), double_columns.end());
    auto gathered = gpu::gather(std::span<const gpu::Column<double>* const>(columns), a);
    for (std::size_t k = 0; k < columns.size(); ++k)
      new_columns.emplace_back(double_columns[k], std::move(gathered[k]));
  }
  // commit: moves, and copies of states held by shared_ptr (device laws, parameter forms, values: their host
  // batches are empty), none of which allocates or throws
  for (auto& [target, gathered] : own_laws) *target = std::move(gathered);
  for (auto& [target, gathered] : new_laws) *target = *gathered;
  for (auto& [target, gathered] : new_values) *target = *gathered;
  for (auto& [target, gathered] : new_columns) *target = std::move(gathered);
  for (auto& [target, gathered] : new_vectors) *target = std::move(gathered);
  for (auto& [target, gathered] : new_p) *target = std::move(gathered);
  if (groups) groups->commit();
}

std::vector<NodeMemory> Graph::memory() const {
  std::vector<NodeMemory> out;
  const double P = static_cast<double>(particles());
  for (Node* n = context_->first_live; n != nullptr; n = n->next_live) {
    std::size_t b = n->marginal.bytes() + (n->value.empty() ? 0 : n->value.column->bytes()) +
                    (n->tie_c.empty() ? 0 : n->tie_c.column->bytes());
    if (n->operands) b += (*n->operands)[0].bytes() + (*n->operands)[1].bytes();
    if (auto* c = n->continuous.get())
      b += c->params.a.bytes() + c->params.b.bytes() + c->scalar.bytes();
    if (n->group && detail::group_anchor(*n) == nullptr) b += n->group->bytes();  // a joint law: counted once
    out.push_back({n->name, b, static_cast<double>(b) / P});
  }
  return out;
}

std::size_t Graph::bytes() const {
  std::size_t total = context_->log_weight().bytes();
  for (const auto& m : memory()) total += m.bytes;
  return total;
}

}  // namespace tally::runtime
