// Private: a node of the delayed-sampling graph, its closed set of kinds and states, and who owns whom.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/runtime/batch.hpp"
#include "tally/runtime/conjugate.hpp"

namespace tally::runtime::detail {

/// y = a x + c, a != 0.
struct AffineLaw {
  std::int64_t a, c;
};

/// The law of a discrete child given its discrete parent.
using ChildLaw = std::variant<Thinning, ScaledPoisson, IndexedPoisson, MarkovStep, AffineLaw>;

// ---- What a node is given its parents: a closed set of cases ----------------------------------------------------
/// A discrete variable with constant parameters.
struct DiscreteRoot {
  Pmf prior;
};
/// A discrete child of one discrete parent (parents[0]).
struct DiscreteChild {
  ChildLaw law;
};
/// parents[0] + sign * parents[1] for independent operands.
struct Sum {
  int sign;
};
/// s_x X + s_y Y where Y | X ~ law is a direct child of X (parents[0] = X): the pair is enumerated jointly over X.
/// The operand Y is held weakly (operand_y) so that it can be tied to X when the sum is observed.
struct JointSum {
  ChildLaw law;
  int sign_x, sign_y;
};
/// A conjugate continuous variable; its parameters are in Node::beta / gamma / dirichlet.
struct ContinuousRoot {
  enum Family { beta, gamma, dirichlet } family;
};
/// A count whose parameter is a continuous variable (parents[0]): Binomial(n, rho), NegativeBinomial(r, rho),
/// Poisson(lambda), Categorical(pi).
struct CountChild {
  enum Family { binomial, negative_binomial, poisson, categorical } family;
  Batch<std::int64_t> trials;  // n of a Binomial, one per particle
  double successes = 0;        // r of a NegativeBinomial
};
using Kind = std::variant<DiscreteRoot, DiscreteChild, Sum, JointSum, ContinuousRoot, CountChild>;

enum class State { initialized, marginalized, realized };

class Node;

/// What all nodes of one program share: the number of particles, their random streams and log-weights.
struct Context {
  Context(std::size_t particles, std::uint64_t seed, Truncation truncation);
  std::size_t particles;
  std::vector<RandomStream> streams;  // particle i draws from stream i
  std::vector<double> log_weight;
  Truncation truncation;
  std::uint64_t seed;              // the program's seed (particle i's stream is (seed, i))
  std::uint64_t resamplings = 0;   // Graph::resample_by_weight calls so far: the counter of their uniforms
  Node* first_live = nullptr;  // every live node of this context, linked through Node::next_live
};

/// A node. Ownership (strong references) always points one way along each edge, so the graph of strong references
/// is acyclic and reference counting frees everything:
///  - an *initialized* node owns its parents (`parents`): it needs their laws to be marginalized later, and
///    nothing points down to it;
///  - when it is *marginalized*, it gives those references up, and its marginalized parent owns it instead
///    (`parent->mchild`): the parent must be able to reach it to prune the M-path, and information the child has
///    absorbed (observations below it) must not be lost if the program drops its handle. The child keeps only
///    raw back-pointers (`mparents`) to condition its parents when it is realized; a parent's destructor clears
///    them, so they never dangle;
///  - a *realized* node owns nothing and is owned by its initialized children (which read its value) and by
///    handles;
///  - after an observed sum ties Y = a X + c, X owns Y (`tied`) and Y points back with a raw pointer (`tied_to`).
/// Every strong edge goes from a node to a node created before it (a parent) or from a marginalized parent to its
/// marginalized child, and a node is never both; so there is no cycle. Destruction is iterative (see ~Node).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node(std::shared_ptr<Context> context, Kind kind, State state);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::shared_ptr<Context> context;
  Kind kind;
  State state;

  std::array<std::shared_ptr<Node>, 2> parents;  // owning, while initialized
  std::weak_ptr<Node> operand_y;                 // JointSum only: the child operand, not owned
  std::array<Node*, 2> mparents{};               // raw, while marginalized: the parents to condition on realization
  std::shared_ptr<Node> mchild;                  // owning: the marginalized child (next on the M-path)
  std::shared_ptr<Node> tied;                    // owning: Y = tie_a X + tie_c after an observed sum
  Node* tied_to = nullptr;                       // raw: the X whose realization realizes this node
  std::int64_t tie_a = 0;
  Batch<std::int64_t> tie_c;

  Batch<Pmf> marginal;        // discrete, marginalized
  Batch<std::int64_t> value;  // discrete, realized

  /// The state only continuous nodes have, on the heap so that discrete nodes stay small.
  struct ContinuousState {
    Batch<Beta> beta;  // parameters (one family used)
    Batch<Gamma> gamma;
    Batch<Dirichlet> dirichlet;
    Batch<Eigen::VectorXd> value;  // realized (length 1 for Beta and Gamma)
  };
  std::unique_ptr<ContinuousState> continuous;
  /// Sum nodes only: the operands' laws when the sum was marginalized (so a dropped operand does not matter).
  std::unique_ptr<std::array<Batch<Pmf>, 2>> operands;

  Node* prev_live = nullptr;  // the context's intrusive list of live nodes (for resampling)
  Node* next_live = nullptr;

  bool discrete() const { return !std::holds_alternative<ContinuousRoot>(kind); }

  /// Live nodes in this process (for the tests: back to zero when every handle is dropped).
  static std::int64_t live();
};

// ---- The delayed-sampling operations (delayed_sampling.cpp) -----------------------------------------------------
/// Make n marginalized with no marginalized child (or realized): Murray et al.'s graft.
void graft(Node& n);
/// Realize n with one value per particle (n must be a marginalized node without a marginalized child).
void realize(Node& n, const Batch<std::int64_t>& values);
/// Realize n by sampling from its marginal.
void sample(Node& n);
/// Realize a continuous n by sampling from its parameters.
void sample_continuous(Node& n);
/// graft, add log P(n = v) to each particle's weight, realize n = v; returns the per-particle log-likelihoods.
std::vector<double> observe(Node& n, const Batch<std::int64_t>& values);

// ---- Reachability (reachability.cpp) --------------------------------------------------------------------------
/// Calls f(u) for every node u that n's law depends on directly: its owning parents (while initialized), its raw
/// mparents (while marginalized) and tied_to (a node fixed by an observed sum). These are the dependence edges of
/// uninstantiated_ancestors and Graph::touches. They form no directed cycle (parents and mparents point to older
/// nodes; a tie joins two operands that were independent), though they may form undirected ones.
template <class F>
void for_each_dependence_edge(const Node& n, F&& f) {
  for (const auto& p : n.parents)
    if (p) f(p.get());
  for (Node* p : n.mparents)
    if (p) f(p);
  if (n.tied_to) f(n.tied_to);
}
/// The non-realized nodes that n depends on: n and every node reachable through parents, mparents and tied_to.
std::vector<Node*> uninstantiated_ancestors(Node& n);
/// A node of the first set that is also in the second, or nullptr.
Node* shared_ancestor(Node& x, Node& y);

}  // namespace tally::runtime::detail
