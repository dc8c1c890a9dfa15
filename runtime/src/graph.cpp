// The engine-facing API: builds nodes of the closed set of kinds and calls the delayed-sampling core.
#include "tally/runtime/graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dependence.hpp"
#include "node.hpp"
#include "support.hpp"
#include "tally/error.hpp"

namespace tally::runtime {

using detail::Node;
using detail::State;

namespace {
template <class T>
Batch<T> batch_of(const std::vector<T>& v) {
  return Batch<T>::make(v.size(), [&](std::size_t i) { return v[i]; });
}
template <class T>
std::vector<T> vector_of(const Batch<T>& b) {
  std::vector<T> v;
  v.reserve(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) v.push_back(b[i]);
  return v;
}
}  // namespace

Graph::Graph(std::size_t particles, std::uint64_t seed, Truncation t) {
  if (particles == 0) tally::detail::fail<domain_error>("tally::runtime::Graph: particles must be >= 1");
  context_ = std::make_shared<detail::Context>(particles, seed, t);
}

std::size_t Graph::particles() const { return context_->particles; }
const Truncation& Graph::truncation() const { return context_->truncation; }
RandomStream& Graph::stream(std::size_t i) { return context_->streams.at(i); }
const std::vector<double>& Graph::log_weights() const { return context_->log_weight; }
void Graph::reset_log_weights() { std::fill(context_->log_weight.begin(), context_->log_weight.end(), 0.0); }
std::int64_t Graph::live_nodes() { return Node::live(); }

template <class Handle>
std::shared_ptr<Node> Graph::node_of(const Handle& x, const char* who) const {
  if (!x.node_) tally::detail::fail<usage_error>(who, ": the variable handle is empty (default-constructed or moved from)");
  if (x.node_->context != context_) tally::detail::fail<usage_error>(who, ": the variable belongs to another Graph");
  return x.node_;
}

Variable Graph::assume(const Pmf& prior) {
  return Variable(std::make_shared<Node>(context_, detail::DiscreteRoot{prior}, State::initialized));
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
Variable Graph::assume(const Variable& x, const ScaledPoisson& law) {
  return Variable(child(context_, node_of(x, "assume"), law));
}
Variable Graph::assume(const Variable& x, const IndexedPoisson& law) {
  return Variable(child(context_, node_of(x, "assume"), law));
}
Variable Graph::assume(const Variable& x, const MarkovStep& law) { return Variable(child(context_, node_of(x, "assume"), law)); }

Variable Graph::affine(const Variable& x, std::int64_t a, std::int64_t c) {
  if (a == 0) return assume(Pmf::point(c));
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
  return Variable(sum_node(context_, nx, ny, +1));
}

Variable Graph::subtract(const Variable& x, const Variable& y) {
  auto nx = node_of(x, "subtract"), ny = node_of(y, "subtract");
  if (nx == ny) return assume(Pmf::point(0));
  return Variable(sum_node(context_, nx, ny, -1));
}

Continuous Graph::assume(const Beta& law) {
  auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::beta}, State::marginalized);
  n->continuous = std::make_unique<Node::ContinuousState>();
  n->continuous->beta = Batch<Beta>::filled(particles(), law);
  return Continuous(n);
}
Continuous Graph::assume(const Gamma& law) {
  auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::gamma}, State::marginalized);
  n->continuous = std::make_unique<Node::ContinuousState>();
  n->continuous->gamma = Batch<Gamma>::filled(particles(), law);
  return Continuous(n);
}
Continuous Graph::assume(const Dirichlet& law) {
  auto n = std::make_shared<Node>(context_, detail::ContinuousRoot{detail::ContinuousRoot::dirichlet},
                                  State::marginalized);
  n->continuous = std::make_unique<Node::ContinuousState>();
  n->continuous->dirichlet = Batch<Dirichlet>::filled(particles(), law);
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
  detail::CountChild c{detail::CountChild::binomial, batch_of(n), 0.0};
  auto node = std::make_shared<Node>(context_, std::move(c), State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::negative_binomial(double r, const Continuous& rho) {
  auto p = node_of(rho, "negative_binomial");
  require_family(*p, detail::ContinuousRoot::beta, "negative_binomial", "Beta");
  tally::detail::check_positive(r, "tally::runtime::Graph::negative_binomial", "r");
  auto node = std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::negative_binomial, {}, r},
                                     State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::poisson(const Continuous& lambda) {
  auto p = node_of(lambda, "poisson");
  require_family(*p, detail::ContinuousRoot::gamma, "poisson", "Gamma");
  auto node = std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::poisson, {}, 0.0}, State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

Variable Graph::categorical(const Continuous& pi) {
  auto p = node_of(pi, "categorical");
  require_family(*p, detail::ContinuousRoot::dirichlet, "categorical", "Dirichlet");
  auto node =
      std::make_shared<Node>(context_, detail::CountChild{detail::CountChild::categorical, {}, 0.0}, State::initialized);
  node->parents[0] = std::move(p);
  return Variable(node);
}

std::vector<double> Graph::observe(const Variable& x, std::int64_t v) {
  return observe(x, std::vector<std::int64_t>(particles(), v));
}

std::vector<double> Graph::observe(const Variable& x, const std::vector<std::int64_t>& v) {
  auto n = node_of(x, "observe");
  if (v.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::observe: ", v.size(), " values for ", particles(), " particles");
  if (n->state == State::realized)
    tally::detail::fail<usage_error>("tally::runtime::Graph::observe: the variable is already realized (value ",
                                     n->value[0], " in particle 0); observe each variable once, before value()");
  const auto values = batch_of(v);
  if (auto impossible = detail::observe_outside_support(*n, values)) return std::move(*impossible);
  return detail::observe(*n, values);
}

bool Graph::in_support(const Variable& x, std::int64_t v) const {
  const auto s = detail::structural_support(*node_of(x, "in_support"));
  return !s || s->contains(v);
}

std::vector<std::int64_t> Graph::value(const Variable& x) {
  auto n = node_of(x, "value");
  detail::graft(*n);
  if (n->state == State::marginalized) detail::sample(*n);
  return vector_of(n->value);
}

std::vector<Pmf> Graph::marginal(const Variable& x) {
  auto n = node_of(x, "marginal");
  detail::graft(*n);
  if (n->state == State::realized) {
    std::vector<Pmf> out;
    for (std::size_t i = 0; i < particles(); ++i) out.push_back(Pmf::point(n->value[i]));
    return out;
  }
  return vector_of(n->marginal);
}

std::vector<Eigen::VectorXd> Graph::value(const Continuous& x) {
  auto n = node_of(x, "value");
  if (n->state != State::realized) detail::sample_continuous(*n);
  return vector_of(n->continuous->value);
}

namespace {
const Node& unrealized(const std::shared_ptr<Node>& n, const char* who) {
  if (n->state == State::realized)
    tally::detail::fail<usage_error>(who, ": the variable is realized; it has a value, not parameters");
  detail::graft(*n);  // prune: the parameters then include what the M-path below absorbed
  return *n;
}
}  // namespace

std::vector<Beta> Graph::beta(const Continuous& x) {
  const auto node = node_of(x, "beta");
  require_family(*node, detail::ContinuousRoot::beta, "beta", "Beta");  // before grafting: a refused query changes nothing
  return vector_of(unrealized(node, "beta").continuous->beta);
}
std::vector<Gamma> Graph::gamma(const Continuous& x) {
  const auto node = node_of(x, "gamma");
  require_family(*node, detail::ContinuousRoot::gamma, "gamma", "Gamma");  // before grafting: a refused query changes nothing
  return vector_of(unrealized(node, "gamma").continuous->gamma);
}
std::vector<Dirichlet> Graph::dirichlet(const Continuous& x) {
  const auto node = node_of(x, "dirichlet");
  require_family(*node, detail::ContinuousRoot::dirichlet, "dirichlet", "Dirichlet");  // before grafting: a refused query changes nothing
  return vector_of(unrealized(node, "dirichlet").continuous->dirichlet);
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

Graph::Resampling Graph::resample_by_weight(gpu::Resampler kind) {
  const auto& lw = context_->log_weight;
  if (std::all_of(lw.begin(), lw.end(), [](double l) { return l == -std::numeric_limits<double>::infinity(); }))
    return {-std::numeric_limits<double>::infinity(), 0.0, {}};
  constexpr std::uint64_t resampling_key = 0x7265'7361'6d70'6c65ull;  // "resample": apart from particle streams
  gpu::WeightSummary summary{};  // from the resampler's own passes over the weights: no second pass
  auto ancestors = gpu::resample(lw, kind, context_->seed ^ resampling_key, context_->resamplings++, &summary);
  resample(ancestors);
  reset_log_weights();
  return {summary.log_sum - std::log(static_cast<double>(particles())), summary.ess, std::move(ancestors)};
}

void Graph::resample(const std::vector<std::size_t>& ancestors) {
  if (ancestors.size() != particles())
    tally::detail::fail<shape_error>("tally::runtime::Graph::resample: ", ancestors.size(), " ancestors for ",
                                     particles(), " particles");
  for (std::size_t a : ancestors)
    if (a >= particles()) tally::detail::fail<domain_error>("tally::runtime::Graph::resample: ancestor ", a, " out of range");
  for (Node* n = context_->first_live; n != nullptr; n = n->next_live) {
    n->marginal.select(ancestors);
    n->value.select(ancestors);
    n->tie_c.select(ancestors);
    if (auto* c = n->continuous.get()) {
      c->beta.select(ancestors);
      c->gamma.select(ancestors);
      c->dirichlet.select(ancestors);
      c->value.select(ancestors);
    }
    if (n->operands)
      for (auto& o : *n->operands) o.select(ancestors);
    if (auto* c = std::get_if<detail::CountChild>(&n->kind)) c->trials.select(ancestors);
  }
  std::vector<double> w(particles());
  for (std::size_t i = 0; i < particles(); ++i) w[i] = context_->log_weight[ancestors[i]];
  context_->log_weight = std::move(w);
}

}  // namespace tally::runtime
