// Population: the delayed-sampling operations (graft, prune, realize, observe) on P-batched laws and values.
#include "tally/runtime/population.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "population_node.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::runtime {

using detail::PopulationNode;
using detail::PopulationState;
using Node = std::shared_ptr<PopulationNode>;
using State = PopulationNode::State;
using Relation = PopulationNode::Relation;

namespace {

constexpr double neg_inf = -std::numeric_limits<double>::infinity();
constexpr std::uint64_t resampling_key = 0x7265'7361'6d70'6c65ull;  // "resample": apart from the particles' draws

Node make(PopulationState& s, const char* kind, State state) {
  auto n = std::make_shared<PopulationNode>();
  n->state = state;
  n->name = std::string(kind) + " #" + std::to_string(s.made++);
  n->owner = &s;
  if (s.registry.size() >= 64 && s.registry.size() == s.registry.capacity())  // amortized: drop the dead
    std::erase_if(s.registry, [](const std::weak_ptr<PopulationNode>& w) { return w.expired(); });
  s.registry.push_back(n);
  return n;
}

gpu::Column<double> scratch(const PopulationState& s) { return gpu::filled(0.0, s.particles, s.where); }

void realize(PopulationState& s, const Node& x);
void set_realized(PopulationState& s, const Node& x, gpu::Column<std::int64_t> values,
                  const gpu::Laws* operand_posterior = nullptr);

/// The laws of a marginalized count (a sum is convolved here, once; its operands' laws are kept only while an
/// operand lives to be conditioned on the sum).
const gpu::Laws& laws_of(const Node& x) {
  if (!x->laws) x->laws = std::make_shared<const gpu::Laws>(gpu::convolve(*x->operand_laws[0], *x->operand_laws[1]));
  if (x->relation == Relation::sum && x->parent[0].expired() && x->parent[1].expired()) {
    x->operand_laws[0].reset();
    x->operand_laws[1].reset();
    x->relation = Relation::none;
  }
  return *x->laws;
}

/// Prune: x's marginalized child is realized (which conditions x on it), so that x may take a new child.
void prune(PopulationState& s, const Node& x) {
  if (Node c = x->child) realize(s, c);
  x->child.reset();
}

/// Graft: an initialized thinning becomes marginalized (Binomial laws of a realized parent, or the thinning of a
/// marginalized parent's laws, as the parent's new marginalized child); a marginalized node's child is pruned.
void graft(PopulationState& s, const Node& x) {
  if (x->state == State::initialized) {
    if (x->relation == Relation::emission)
      throw usage_error("tally::runtime::Population: " + x->name + " (y | x ~ Poisson(r_x)) can only be observed: " +
                        "its own law, a mixture of Poissons, is never built");
    Node p = std::move(x->initialized_parent);
    if (p->state != State::realized) prune(s, p);
    if (p->state == State::realized) {
      x->laws = std::make_shared<const gpu::Laws>(
          gpu::binomial_laws(p->values, gpu::filled(x->q, s.particles, s.where)));
    } else {
      x->laws = std::make_shared<const gpu::Laws>(gpu::thin(laws_of(p), x->q));
      x->relation = Relation::thinning;
      x->parent[0] = p;
      p->child = x;
    }
    x->state = State::marginalized;
  } else if (x->state == State::marginalized) {
    prune(s, x);
  }
}

void realize(PopulationState& s, const Node& x) {
  if (x->state == State::realized) return;
  graft(s, x);  // may realize x (when its child was a sum over it)
  if (x->state == State::realized) return;
  if (x->is_probability) {
    x->rho = gpu::sample_beta(x->a, x->b, s.seed, s.draws++);
    x->a = {};
    x->b = {};
    x->state = State::realized;
    return;
  }
  set_realized(s, x, gpu::sample(laws_of(x), s.seed, s.draws++));
}

/// x takes its values; its marginalized parents are conditioned on them (see Population).
void set_realized(PopulationState& s, const Node& x, gpu::Column<std::int64_t> values,
                  const gpu::Laws* operand_posterior) {
  x->values = std::move(values);
  x->state = State::realized;
  x->child.reset();
  if (x->relation == Relation::thinning) {
    if (Node p = x->parent[0].lock(); p && p->state == State::marginalized) {
      auto ignored = scratch(s);
      p->laws = std::make_shared<const gpu::Laws>(gpu::condition_on_thinning(laws_of(p), x->values, x->q, ignored));
      if (p->child == x) p->child.reset();
    }
  } else if (x->relation == Relation::beta) {
    if (Node rho = x->parent[0].lock(); rho && rho->state == State::marginalized) {
      gpu::beta_update(rho->a, rho->b, x->trials, x->values);
      if (rho->child == x) rho->child.reset();
    }
  } else if (x->relation == Relation::markov) {
    if (Node p = x->parent[0].lock(); p && p->state == State::marginalized) {  // w_k T_{k, x}
      auto ignored = scratch(s);
      p->laws = std::make_shared<const gpu::Laws>(gpu::condition_on_markov(laws_of(p), *x->table, x->values, ignored));
      if (p->child == x) p->child.reset();
    }
  } else if (x->relation == Relation::sum) {
    Node o[2] = {x->parent[0].lock(), x->parent[1].lock()};
    const bool wanted[2] = {o[0] && o[0]->state != State::realized, o[1] && o[1]->state != State::realized};
    if (wanted[0] || wanted[1]) {  // operand 0 from p(x0 | x0 + x1 = z), operand 1 = sign (z - x0)
      gpu::Laws computed;
      if (operand_posterior == nullptr) {
        auto ignored = scratch(s);
        computed = gpu::condition_on_sum(*x->operand_laws[0], *x->operand_laws[1], x->values, ignored);
        operand_posterior = &computed;
      }
      gpu::Column<std::int64_t> x0 = gpu::sample(*operand_posterior, s.seed, s.draws++);
      gpu::Column<std::int64_t> x1 = gpu::linear(x->values, x->sign, x0, -x->sign, 0);
      for (int k = 0; k < 2; ++k)
        if (wanted[k]) {
          o[k]->child.reset();
          set_realized(s, o[k], k == 0 ? std::move(x0) : std::move(x1));
        }
    }
  }
  x->relation = Relation::none;
  x->laws.reset();
  x->operand_laws[0].reset();
  x->operand_laws[1].reset();
  x->parent[0].reset();
  x->parent[1].reset();
  x->trials = {};
  x->table.reset();
}

/// y | x ~ Poisson(r_x) observed at v: a marginalized x is conditioned exactly (its marginalized child pruned
/// first) and the particles weighed by the mixture's likelihood; a realized x weighs them by Pois(v_i; r_{x_i}).
void observe_emission(PopulationState& s, const Node& y, const gpu::Column<std::int64_t>& v) {
  Node x = y->initialized_parent;
  graft(s, x);  // an initialized x is marginalized; a marginalized x's child pruned (which may realize x)
  if (x->state == State::realized)
    gpu::condition_on_poisson(gpu::point_laws(x->values), *y->table, v, s.log_w);
  else
    x->laws = std::make_shared<const gpu::Laws>(gpu::condition_on_poisson(laws_of(x), *y->table, v, s.log_w));
  y->initialized_parent.reset();
  y->relation = Relation::none;
  y->table.reset();
  y->values = v.clone();
  y->state = State::realized;
}

void observe(PopulationState& s, const Node& x, const gpu::Column<std::int64_t>& v) {
  if (x->state == State::initialized && x->relation == Relation::emission) return observe_emission(s, x, v);
  if (x->state == State::initialized) {
    Node p = x->initialized_parent;
    if (p->state != State::realized) prune(s, p);  // may realize p
    if (p->state != State::realized) {              // p | x = v, and p(x = v | ...) into the weights
      p->laws = std::make_shared<const gpu::Laws>(gpu::condition_on_thinning(laws_of(p), v, x->q, s.log_w));
      x->initialized_parent.reset();
      x->values = v.clone();
      x->state = State::realized;
      return;
    }
    graft(s, x);
  }
  if (x->state == State::marginalized) prune(s, x);  // may realize x
  if (x->state == State::realized) {
    gpu::add_log_equal(x->values, v, s.log_w);
    return;
  }
  if (!x->laws && x->relation == Relation::sum) {  // one skew diagonal per particle, no convolution
    gpu::Laws posterior = gpu::condition_on_sum(*x->operand_laws[0], *x->operand_laws[1], v, s.log_w);
    set_realized(s, x, v.clone(), &posterior);
    return;
  }
  gpu::add_log_mass(laws_of(x), v, s.log_w);
  set_realized(s, x, v.clone());
}

/// A realized count's laws as an operand: point masses.
std::shared_ptr<const gpu::Laws> operand_laws(const Node& x) {
  if (x->state == State::realized) return std::make_shared<const gpu::Laws>(gpu::point_laws(x->values));
  laws_of(x);
  return x->laws;
}

Node combine(PopulationState& s, const Node& x, const Node& y, int sign) {
  if (x == y) throw usage_error("tally::runtime::Population::add/subtract: x and y are the same variable (not "
                                "independent of itself)");
  graft(s, x);
  graft(s, y);
  if (x->state == State::realized && y->state == State::realized)
    return [&] {
      Node z = make(s, sign > 0 ? "sum" : "difference", State::realized);
      z->values = gpu::linear(x->values, 1, y->values, sign, 0);
      return z;
    }();
  Node z = make(s, sign > 0 ? "sum" : "difference", State::marginalized);
  z->relation = Relation::sum;
  z->sign = sign;
  z->operand_laws[0] = operand_laws(x);
  z->operand_laws[1] = sign > 0 ? operand_laws(y) : std::make_shared<const gpu::Laws>(gpu::negate(*operand_laws(y)));
  const Node ops[2] = {x, y};
  for (int k = 0; k < 2; ++k) {
    z->parent[k] = ops[k];
    if (ops[k]->state == State::marginalized) ops[k]->child = z;
  }
  return z;
}

/// Rethrows a device allocation that failed with what the population holds and how many particles would fit.
[[noreturn]] void out_of_memory(const PopulationState& s, const device_memory_error& e, std::size_t held) {
  const double per_particle = (static_cast<double>(held) + static_cast<double>(e.requested)) / double(s.particles);
  const double fit = std::floor((static_cast<double>(e.free) + static_cast<double>(held)) / per_particle);
  throw device_memory_error(
      tally::detail::message("tally::runtime::Population of ", s.particles, " particles: ", e.what(),
                             ". The population holds ", held, " bytes (", double(held) / double(s.particles),
                             " per particle); with this step it needs about ", per_particle,
                             " bytes per particle, so about ", fit, " particles would fit"),
      e.requested, e.free);
}

}  // namespace

// ---- construction ----

Population::Population(std::size_t particles, std::uint64_t seed, gpu::Backend where, Truncation truncation)
    : state_(std::make_unique<PopulationState>()) {
  if (particles == 0) throw shape_error("tally::runtime::Population: particles must be >= 1");
  state_->particles = particles;
  state_->seed = seed;
  state_->where = where;
  state_->truncation = truncation;
  try {
    state_->log_w = gpu::filled(0.0, particles, where);
  } catch (const device_memory_error& e) {
    out_of_memory(*state_, e, 0);
  }
}
Population::~Population() = default;
Population::Population(Population&&) noexcept = default;
Population& Population::operator=(Population&&) noexcept = default;

std::size_t Population::particles() const { return state_->particles; }
gpu::Backend Population::where() const { return state_->where; }
const Truncation& Population::truncation() const { return state_->truncation; }
std::int64_t Population::live_nodes() { return detail::live_population_nodes.load(); }

template <class Handle>
Node Population::node_of(const Handle& h, const char* who) const {
  if (h.empty()) throw usage_error(std::string(who) + ": empty handle");
  if (h.node_->owner != state_.get()) throw usage_error(std::string(who) + ": a variable of another population");
  return h.node_;
}

/// Runs an operation; a device allocation that fails is rethrown with the population's numbers.
#define TALLY_POPULATION_GUARD(...)                    \
  try {                                                \
    __VA_ARGS__                                        \
  } catch (const device_memory_error& e) {             \
    out_of_memory(*state_, e, bytes());                \
  }

// ---- variables ----

Count Population::assume(const Pmf& prior) {
  TALLY_POPULATION_GUARD({
    Node x = make(*state_, "assume", State::marginalized);
    const Eigen::VectorXd& w = prior.weights();
    x->laws = std::make_shared<const gpu::Laws>(gpu::broadcast(std::span<const double>(w.data(), std::size_t(w.size())),
                                                               prior.lo(), prior.log_scale(), particles(), where()));
    return Count(x);
  })
}

Count Population::constant(std::int64_t v) {
  TALLY_POPULATION_GUARD({
    Node x = make(*state_, "constant", State::realized);
    x->values = gpu::filled(v, particles(), where());
    return Count(x);
  })
}

Count Population::constant(const std::vector<std::int64_t>& v) {
  if (v.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Population::constant: ", v.size(), " values for ", particles(),
                                     " particles");
  TALLY_POPULATION_GUARD({
    Node x = make(*state_, "constant", State::realized);
    x->values = gpu::Column<std::int64_t>::from_host(v, where());
    return Count(x);
  })
}

Count Population::binomial(const Count& n, double q) {
  constexpr const char* who = "tally::runtime::Population::binomial";
  tally::detail::check_probability(q, who, "q");
  Node p = node_of(n, who);
  TALLY_POPULATION_GUARD({
    if (p->state == State::initialized) graft(*state_, p);
    if (p->state == State::realized) {
      Node y = make(*state_, "binomial", State::marginalized);
      y->laws = std::make_shared<const gpu::Laws>(gpu::binomial_laws(p->values, gpu::filled(q, particles(), where())));
      return Count(y);
    }
    Node y = make(*state_, "binomial", State::initialized);
    y->initialized_parent = p;
    y->q = q;
    return Count(y);
  })
}

Count Population::chain_binomial(const Count& n, const Count& k, double c) {
  constexpr const char* who = "tally::runtime::Population::chain_binomial";
  Node pn = node_of(n, who), pk = node_of(k, who);
  TALLY_POPULATION_GUARD({
    runtime::realize(*state_, pn);
    runtime::realize(*state_, pk);
    Node y = make(*state_, "chain binomial", State::marginalized);
    y->laws = std::make_shared<const gpu::Laws>(gpu::binomial_laws(pn->values, gpu::hazard_probabilities(pk->values, c)));
    return Count(y);
  })
}

Probability Population::assume(const Beta& prior) {
  TALLY_POPULATION_GUARD({
    Node r = make(*state_, "Beta", State::marginalized);
    r->is_probability = true;
    r->a = gpu::filled(prior.alpha, particles(), where());
    r->b = gpu::filled(prior.beta, particles(), where());
    return Probability(r);
  })
}

Count Population::binomial(const Count& n, const Probability& rho) {
  constexpr const char* who = "tally::runtime::Population::binomial";
  Node pn = node_of(n, who), r = node_of(rho, who);
  TALLY_POPULATION_GUARD({
    runtime::realize(*state_, pn);
    Node k = make(*state_, "binomial of Beta", State::marginalized);
    if (r->state == State::realized) {
      k->laws = std::make_shared<const gpu::Laws>(gpu::binomial_laws(pn->values, r->rho));
      return Count(k);
    }
    prune(*state_, r);
    k->laws = std::make_shared<const gpu::Laws>(gpu::beta_binomial_laws(pn->values, r->a, r->b));
    k->relation = Relation::beta;
    k->parent[0] = r;
    k->trials = pn->values.clone();
    r->child = k;
    return Count(k);
  })
}

Count Population::assume(const Count& x, const MarkovStep& step) {
  constexpr const char* who = "tally::runtime::Population::assume(MarkovStep)";
  Node p = node_of(x, who);
  TALLY_POPULATION_GUARD({
    const Eigen::MatrixXd& t = step.transition;
    std::vector<double> row_major;
    row_major.reserve(std::size_t(t.size()));
    for (Eigen::Index r = 0; r < t.rows(); ++r)
      for (Eigen::Index c = 0; c < t.cols(); ++c) row_major.push_back(t(r, c));
    auto table = std::make_shared<const gpu::Table>(
        gpu::Table::from_host(row_major, std::size_t(t.rows()), std::size_t(t.cols()), where()));
    graft(*state_, p);  // p's marginalized child pruned (which may realize p); an initialized p marginalized
    Node y = make(*state_, "Markov step", State::marginalized);
    if (p->state == State::realized) {
      y->laws = std::make_shared<const gpu::Laws>(gpu::markov_rows(p->values, *table));
      return Count(y);
    }
    y->laws = std::make_shared<const gpu::Laws>(gpu::markov_step(laws_of(p), *table));
    y->relation = Relation::markov;
    y->parent[0] = p;
    y->table = std::move(table);
    p->child = y;
    return Count(y);
  })
}

Count Population::assume(const Count& x, const IndexedPoisson& emission) {
  Node p = node_of(x, "tally::runtime::Population::assume(IndexedPoisson)");
  TALLY_POPULATION_GUARD({
    const Eigen::VectorXd& r = emission.rates;
    Node y = make(*state_, "IndexedPoisson", State::initialized);
    y->initialized_parent = p;
    y->relation = Relation::emission;
    y->table = std::make_shared<const gpu::Table>(
        gpu::Table::from_host(std::span<const double>(r.data(), std::size_t(r.size())), std::size_t(r.size()), 1,
                              where()));
    return Count(y);
  })
}

Count Population::add(const Count& x, const Count& y) {
  Node a = node_of(x, "tally::runtime::Population::add"), b = node_of(y, "tally::runtime::Population::add");
  TALLY_POPULATION_GUARD({ return Count(combine(*state_, a, b, +1)); })
}

Count Population::subtract(const Count& x, const Count& y) {
  Node a = node_of(x, "tally::runtime::Population::subtract"), b = node_of(y, "tally::runtime::Population::subtract");
  TALLY_POPULATION_GUARD({ return Count(combine(*state_, a, b, -1)); })
}

// ---- observations and queries ----

void Population::observe(const Count& x, std::int64_t v) {
  Node n = node_of(x, "tally::runtime::Population::observe");
  TALLY_POPULATION_GUARD({ runtime::observe(*state_, n, gpu::filled(v, particles(), where())); })
}

void Population::observe(const Count& x, const Count& v) {
  Node n = node_of(x, "tally::runtime::Population::observe"), values = node_of(v, "tally::runtime::Population::observe");
  TALLY_POPULATION_GUARD({
    runtime::realize(*state_, values);
    runtime::observe(*state_, n, values->values);
  })
}

void Population::realize(const Count& x) {
  Node n = node_of(x, "tally::runtime::Population::realize");
  TALLY_POPULATION_GUARD({ runtime::realize(*state_, n); })
}

void Population::realize(const Probability& rho) {
  Node n = node_of(rho, "tally::runtime::Population::realize");
  TALLY_POPULATION_GUARD({ runtime::realize(*state_, n); })
}

std::vector<std::int64_t> Population::value(const Count& x) {
  realize(x);
  return x.node_->values.to_host();
}

std::vector<double> Population::value(const Probability& rho) {
  realize(rho);
  return rho.node_->rho.to_host();
}

gpu::PmfBatch Population::marginal(const Count& x) {
  Node n = node_of(x, "tally::runtime::Population::marginal");
  TALLY_POPULATION_GUARD({
    graft(*state_, n);
    if (n->state == State::realized) return gpu::point_laws(n->values).to_host();
    return laws_of(n).to_host();
  })
}

std::vector<Beta> Population::beta(const Probability& rho) {
  Node r = node_of(rho, "tally::runtime::Population::beta");
  TALLY_POPULATION_GUARD({
    prune(*state_, r);
    if (r->state == State::realized) throw usage_error("tally::runtime::Population::beta: the probability is realized");
    const std::vector<double> a = r->a.to_host(), b = r->b.to_host();
    std::vector<Beta> out;
    out.reserve(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) out.emplace_back(a[i], b[i]);
    return out;
  })
}

// ---- weights and resampling ----

std::vector<double> Population::log_weights() const { return state_->log_w.to_host(); }

Population::Step Population::resample(double threshold, gpu::Resampler kind) {
  PopulationState& s = *state_;
  TALLY_POPULATION_GUARD({
    gpu::WeightSummary summary{};
    const gpu::Column<std::size_t> ancestors =
        gpu::resample(s.log_w, kind, s.seed ^ resampling_key, s.resamplings++, summary);
    if (ancestors.size() == 0) return Step{neg_inf, 0.0, false};
    const Step step{summary.log_sum - std::log(double(s.particles)), summary.ess,
                    threshold >= 1.0 || summary.ess < threshold * double(s.particles)};
    if (!step.resampled) return step;
    // every live node's state, by ancestor; laws shared between nodes stay shared
    std::map<const gpu::Laws*, std::shared_ptr<const gpu::Laws>> moved;
    auto gather_laws = [&](std::shared_ptr<const gpu::Laws>& l) {
      if (!l) return;
      auto [it, fresh] = moved.try_emplace(l.get());
      if (fresh) it->second = std::make_shared<const gpu::Laws>(gpu::gather(*l, ancestors));
      l = it->second;
    };
    std::erase_if(s.registry, [](const std::weak_ptr<PopulationNode>& w) { return w.expired(); });
    for (const auto& w : s.registry) {
      const Node n = w.lock();
      if (n->values.size()) n->values = gpu::gather(n->values, ancestors);
      if (n->rho.size()) n->rho = gpu::gather(n->rho, ancestors);
      if (n->a.size()) n->a = gpu::gather(n->a, ancestors);
      if (n->b.size()) n->b = gpu::gather(n->b, ancestors);
      if (n->trials.size()) n->trials = gpu::gather(n->trials, ancestors);
      gather_laws(n->laws);
      gather_laws(n->operand_laws[0]);
      gather_laws(n->operand_laws[1]);
    }
    s.log_w = gpu::filled(0.0, s.particles, s.where);
    return step;
  })
}

// ---- memory ----

std::vector<NodeMemory> Population::memory() const {
  std::vector<NodeMemory> out;
  std::set<const gpu::Laws*> counted;
  auto laws_bytes = [&](const std::shared_ptr<const gpu::Laws>& l) -> std::size_t {
    return l && counted.insert(l.get()).second ? l->bytes() : 0;
  };
  for (const auto& w : state_->registry) {
    const Node n = w.lock();
    if (!n) continue;
    const std::size_t bytes = n->values.bytes() + n->rho.bytes() + n->a.bytes() + n->b.bytes() + n->trials.bytes() +
                              (n->table ? n->table->values.bytes() : 0) +
                              laws_bytes(n->laws) + laws_bytes(n->operand_laws[0]) + laws_bytes(n->operand_laws[1]);
    out.push_back({n->name, bytes, double(bytes) / double(state_->particles)});
  }
  return out;
}

std::size_t Population::bytes() const {
  std::size_t total = state_->log_w.bytes();
  for (const NodeMemory& m : memory()) total += m.bytes;
  return total;
}

}  // namespace tally::runtime
