// Private: a node of the delayed-sampling graph, its closed set of kinds and states, and who owns whom.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <variant>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/truncation.hpp"
#include "joint/joint.hpp"
#include "state.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/runtime/batch.hpp"
#include "tally/runtime/communicator.hpp"
#include "tally/runtime/conjugate.hpp"
#include "tally/runtime/observation.hpp"

namespace tally::runtime::detail {

/// What a family's truncated prior dropped (joint/tails.cpp): the dropped measure located outside its window, in
/// the prior's units, and the relative mass of what is not located (spread). Computed once per kept prior.
struct PriorTails {
  std::optional<Pmf> dropped;
  double spread = 0.0;
};
/// A prior's tails once computed (`computed`): `known` empty where the family could not say.
struct PriorTailsOnce {
  bool computed = false;
  std::optional<PriorTails> known;
};

// ---- What a node is given its parents: a closed set of cases ----------------------------------------------------
/// A discrete variable with constant parameters.
struct DiscreteRoot {
  Pmf prior;
  /// The prior's family under other truncation settings (empty where the engine gave only a Pmf): its tails.
  std::function<Pmf(const Truncation&)> family;
  /// The tails, shared by the roots made from one kept prior (Context::kept_priors); null for another root.
  std::shared_ptr<PriorTailsOnce> tails = nullptr;
};
/// A discrete child of one discrete parent (parents[0]).
struct DiscreteChild {
  ChildLaw law;
  /// A law per group (state.hpp), or null: law in every particle. Where set, law is the first group's; the joint
  /// laws apply each particle's own (law_at), on the host.
  std::shared_ptr<const GroupLaws> each = nullptr;
};
/// Binomial(x_i, p_i) with per-particle p (parents[0] = x, realized before the node is made).
struct PerParticleBinomial {
  std::shared_ptr<const gpu::Column<double>> p;
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
  std::shared_ptr<const GroupLaws> each = nullptr;  // Y's law per group, as DiscreteChild::each
};
/// A conjugate continuous variable; its parameters are in Node::beta / gamma / dirichlet.
struct ContinuousRoot {
  enum Family { beta, gamma, dirichlet } family;
};
/// A count whose parameter is a continuous variable (parents[0]): Binomial(n, rho), NegativeBinomial(r, rho),
/// Poisson(lambda), Categorical(pi).
struct CountChild {
  enum Family { binomial, negative_binomial, poisson, categorical } family;
  Values trials;           // n of a Binomial, one per particle
  double successes = 0;    // r of a NegativeBinomial
  double scale = 1.0;      // a of a Poisson(a lambda)
};
/// A child of several random parents (parents[0] = the state S, Node::more_parents the others), always kept in a
/// joint law with them (joint/joint.hpp): Poisson(a R_S) with more_parents = R_0, ..., R_{K-1}, or Binomial(X, q_S)
/// with more_parents = {X}.
struct SelectedChild {
  enum Family { poisson, thinning } family;
  double scale = 1.0;     // a of Poisson(a R_S)
  Eigen::VectorXd keep;   // q_0, ..., q_{K-1} of Binomial(X, q_S)
};
/// Binomial(X, rho) with a random count X (parents[0]) and a Beta rho (parents[1]) (beta_thinning.cpp): observed
/// while X is marginalized, X is conditioned under BetaBinomial(y; x, a, b) and rho waits for X's value
/// (ContinuousState::mixture_count); grafted for any other use, X is realized first and the node becomes a
/// CountChild.
struct BetaThinning {};
using Kind = std::variant<DiscreteRoot, DiscreteChild, PerParticleBinomial, Sum, JointSum, ContinuousRoot, CountChild,
                          SelectedChild, BetaThinning>;

enum class State { initialized, marginalized, realized };

class Node;
struct TiledPlan;  // sharding.hpp

/// What all nodes of one program share: the number of particles, where their state lives, the draws so far,
/// the log-weights, and the report of the observation being computed.
struct Context : Place {
  Context(std::size_t particles, std::uint64_t seed, gpu::Backend where, Truncation truncation);
  std::vector<RandomStream> streams;  // particle i's stream for the engine's own draws (made on first use)
  /// The log-weights, read.
  const gpu::Column<double>& log_weight() const { return log_weight_; }
  /// The log-weights, to change (add to, replace): forgets their known summary.
  gpu::Column<double>& changing_log_weight() {
    known_weights_.reset();
    known_plan.reset();
    return log_weight_;
  }
  /// The resampler's summary of the current log-weights, where a summary computed it with them (Graph::summarize on
  /// the device) and they have not changed since: Graph::resample_by_weight then decides without a wait. A shard
  /// whose population is gathered whole (detail::whole_on_device) keeps the whole population's summary here.
  const std::optional<gpu::WeightSummary>& known_weights() const { return known_weights_; }
  void know_weights(const std::optional<gpu::WeightSummary>& s) { known_weights_ = s; }
  /// A sharded population's systematic resampling plan of the current log-weights (TiledPlan: its seed and counter
  /// with it), made by a summary with its parts, so that the resampling that follows waits for nothing; forgotten
  /// when the log-weights change.
  std::shared_ptr<TiledPlan> known_plan;
  std::uint64_t resamplings = 0;   // Graph::resample_by_weight calls so far: the counter of their uniforms
  std::size_t group_size;          // the particles of each group (Groups): particle i is in group i / group_size
  bool grouped = false;            // made with Groups (else one group: the population, however sharded)
  std::uint64_t made = 0;          // nodes made so far (their default names #k)
  /// Bumped where the marginalized part of the graph or its laws change (graft, realize, a resampling's gather).
  /// A component that an absorb found past the budget (its nodes) is not tried again at the same epoch by a
  /// marginal query (query_marginal), which answers by elimination instead: a stale entry costs a joint law not
  /// kept, never exactness.
  std::uint64_t epoch = 0;
  std::uint64_t over_budget_epoch = ~std::uint64_t{0};
  std::vector<const Node*> over_budget_component;
  std::uint64_t truncating = 0;    // nodes made so far whose own laws are truncated (see truncates())
  bool strict = false;
  std::vector<Sampled>* report = nullptr;  // while an observation computes: what the runtime sampled
  std::vector<Sampled> pending;  // what it sampled outside an observation (marginal, value, ...): the next reports it
  Node* first_live = nullptr;  // every live node of this context, linked through Node::next_live
  // One shard of a sharded population (runtime/src/sharding.hpp): the shard (Place::first_particle is its first),
  // the communicator (null for an unsharded graph: Shard{0, P, 0, P}), and the shards' bounds once gathered.
  Shard shard;
  std::shared_ptr<Communicator> comm;
  std::vector<std::size_t> shard_bounds;
  /// The per-group thinnings Graph::assume made last (most recent last, at most kept_group_laws_at_most), given
  /// again for equal probabilities: a filter's step reuses its probabilities' column instead of copying it again.
  std::vector<std::shared_ptr<const GroupLaws>> kept_group_laws;
  static constexpr std::size_t kept_group_laws_at_most = 4;
  /// The priors Graph::assume made last for value families (tally::value_family), most recent last: a law is made
  /// once for a family of equal type and bytes among these (the graph's truncation never changes).
  struct KeptPrior {
    std::type_index type;
    std::vector<std::byte> key;
    Pmf law;
    std::shared_ptr<PriorTailsOnce> tails = std::make_shared<PriorTailsOnce>();
  };
  static constexpr std::size_t kept_priors_at_most = 8;
  std::vector<KeptPrior> kept_priors;

 private:
  gpu::Column<double> log_weight_;
  std::optional<gpu::WeightSummary> known_weights_;
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
///  - after an observed sum ties Y = a X + c, X owns Y (`tied`) and Y points back with a raw pointer (`tied_to`);
///  - a Beta that waits for a count X after an observed Binomial(X, rho) (beta_thinning.cpp) owns X and the observed
///    node (ContinuousState::mixture_count, mixture_observed); nothing that X owns reaches a continuous node
///    (marginalized nodes own only their M-path child, tie and joint group, all discrete), so no cycle forms;
///  - coupled marginalized variables kept in one joint law (joint/joint.hpp) each own the law's JointGroup
///    (`group`), which holds them only weakly; such a member owns nothing else (no parents, no M-path child), and a
///    member that dies is summed out of the law.
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
  std::vector<std::shared_ptr<Node>> more_parents;  // owning, while initialized: a SelectedChild's other parents
  std::shared_ptr<JointGroup> group;             // owning: the joint law this marginalized node is an axis of
  Tails tails;                                   // where known: what truncation dropped from `marginal`
  std::uint64_t id = 0;                          // the order of creation in its graph (older nodes: smaller)
  std::weak_ptr<Node> operand_y;                 // JointSum only: the child operand, not owned
  std::array<Node*, 2> mparents{};               // raw, while marginalized: the parents to condition on realization
  std::shared_ptr<Node> mchild;                  // owning: the marginalized child (next on the M-path)
  std::shared_ptr<Node> tied;                    // owning: Y = tie_a X + tie_c after an observed sum
  Node* tied_to = nullptr;                       // raw: the X whose realization realizes this node
  std::int64_t tie_a = 0;
  Values tie_c;
  Laws tie_base;  // X's laws when X died while tied (this node's laws are then a tie_base + c)

  /// discrete, marginalized: the laws (empty for a sum not yet convolved, and for a node tied to another, whose
  /// laws follow its partner's: see law())
  Laws marginal;
  Values value;  // discrete, realized
  std::string name;  // for reports: Graph::name, or "#k"
  bool computed = false;  // realized as a constant or from realized operands, never observed (observable once)
  /// marginalized: its laws hold observations made below it (a conditioned child, a tie) since its marginalized
  /// parents' laws were pushed to it, so that P(n = v) is read from its own laws, not from its parents'
  bool absorbed = false;
  /// marginalized: a Beta waits for this count's value (ContinuousState::mixture_count), a dependence edge into it that
  /// the node itself does not hold (shared_ancestor's fast answer checks it; it may stay set after the Beta died)
  bool awaited_by_beta = false;

  /// The state only continuous nodes have, on the heap so that discrete nodes stay small.
  struct ContinuousState {
    Params params;                 // the posterior parameters while marginalized (one family used)
    gpu::Column<double> scalar;    // realized Beta or Gamma
    gpu::Vectors vector;           // realized Dirichlet: one probability vector per particle
    /// A Beta whose posterior is a mixture over a count X after an observed y ~ Binomial(X, rho): params are the
    /// Beta before that observation, and rho | X = x ~ Beta(a + y, b + x - y). Owning: X (mixture_count) and the
    /// observed node (mixture_observed, realized: its values are y, moved with the particles when resampling).
    /// resolve_mixture() draws X (if not realized) and applies the update when rho is next needed.
    std::shared_ptr<Node> mixture_count, mixture_observed;
  };
  std::unique_ptr<ContinuousState> continuous;
  /// Sum nodes only: the operands' laws when the sum was marginalized (so a dropped operand does not matter).
  std::unique_ptr<std::array<Laws, 2>> operands;
  /// Sum nodes only, where the host follows what truncation dropped: the operands' tails for those laws.
  std::unique_ptr<std::array<Tails, 2>> operand_tails;

  Node* prev_live = nullptr;  // the context's intrusive list of live nodes (for resampling)
  Node* next_live = nullptr;

  bool discrete() const { return !std::holds_alternative<ContinuousRoot>(kind); }

  /// Live nodes in this process (for the tests: back to zero when every handle is dropped).
  static std::int64_t live();
};

// ---- The delayed-sampling operations (delayed_sampling.cpp) -----------------------------------------------------
/// Make n marginalized with no marginalized child (or realized): Murray et al.'s graft.
void graft(Node& n);
/// n's laws for a query (Graph::marginal) where grafting n would prune its M-path past the joint laws' budget (its
/// component's law, with every held variable an axis, too large): its exact posterior from the component, n's M-path
/// left as it is (component_marginal); nothing otherwise (graft, then law(n), is the answer).
std::optional<Laws> query_marginal(Node& n);
/// n's laws (a sum's convolution is made here on first use; a tied node's are its partner's, mapped).
const Laws& law(Node& n);
/// Realize n with one value per particle (n must be a marginalized node without a marginalized child).
void realize(Node& n, const Values& values);
/// Realize n by sampling from its marginal.
void sample(Node& n);
/// Realizes an initialized binomial whose parameters are all realized (Binomial(x, p) with per-particle p, a
/// thinning of a realized count, Binomial(n, rho) with rho realized) by drawing it directly, the graph's next draw
/// by gpu::sample_binomial (no law is built: O(sqrt(n q (1 - q))) work and nothing stored per particle), or an
/// initialized discrete root by gpu::sample_shared (its one law, not P copies of it; the draws those of its
/// marginal's); false, and nothing done, for any other node. Its distribution is the node's exact conditional law.
bool draw_directly(Node& n);
/// Realize a continuous n by sampling from its parameters.
void sample_continuous(Node& n);

// ---- Counts of conjugate parents (conjugate_state.cpp) ------------------------------------------------------------
/// The laws of a count c given its parameter rho (marginalized: the compound law; realized: the plain family).
Laws count_laws(Place& at, const CountChild& c, Node& rho);
/// Adds log P(c = v) with rho integrated out (or known), in closed form.
void add_count_log_likelihood(Place& at, const CountChild& c, Node& rho, const Values& v, LogLikelihood& ll);
/// The conjugate update of a marginalized rho by c = v (particles with impossible values keep their parameters).
void conjugate_update(Place& at, const CountChild& c, Node& rho, const Values& v);
/// Draws a continuous node's values from its parameters (the graph's next draw) and drops the parameters.
void draw_continuous(Place& at, Node& rho);
/// A fallback the runtime is about to take: sampling n for `reason`. Strict mode throws inexact_error here (before
/// anything is drawn); otherwise the sampling is recorded in the current observation's report.
void fallback(Node& n, Fallback reason);
/// graft, add log P(n = v) to each particle's weight, realize n = v; returns the per-particle log-likelihoods and
/// the largest error bound of the laws they were read from.
std::pair<gpu::Column<double>, Bound> observe(Node& n, const Values& values);

// ---- Tails that truncation cut, brought back where an observation needs them (tail_window.cpp) ---------------------
/// The prior of the root `root` (a DiscreteRoot tabulated from its family) again, with a window that holds the
/// values [lo, hi] where the graph's truncation cut them: the family tabulated at a smaller tolerance (down to
/// 1e-300), its cut mass carried as the law's error bound. Nothing where the prior's window holds them already,
/// where nothing was cut, or where the root has no family.
std::optional<Pmf> widened_prior(const Node& root, std::int64_t lo, std::int64_t hi);
/// The same for observing y of a child (law) of the root: the parent values the observation needs (x >= y for a
/// thinning, x = (y - c) / a for an affine map, x near y / a for Poisson(a x)) and a margin past them.
std::optional<Pmf> widened_prior_for_child(const Node& root, const ChildLaw& law, const Values& y);
/// The smallest and largest of observed values y on a host graph; on a device graph the largest alone where the
/// host knows it (no values are read back for it), else nothing.
std::vector<std::int64_t> observed_range(const Context& ctx, const Values& y);

// ---- Binomial(X, rho) with a random count X and a Beta rho (beta_thinning.cpp) ---------------------------------
/// Observes an initialized BetaThinning node n = v exactly when it can: a host graph, X (grafted here) a
/// marginalized count with no joint law, tie or marginalized child, and rho a marginalized Beta that X does not
/// depend on, or a realized rho. Then each particle's law of X is multiplied by BetaBinomial(v_i; x, a_i, b_i)
/// (realized rho: Binomial(v_i; x, rho_i)), log sum_x p(x) times that likelihood is added to ll, n is realized at v
/// and a marginalized rho waits for X (ContinuousState::mixture_count). Returns false, having changed nothing but
/// the grafting of rho and X, when it cannot.
bool observe_beta_thinning(Node& n, const Values& v, LogLikelihood& ll);
/// An initialized BetaThinning node about to be grafted (or observed where the exact path does not apply): X is
/// realized (Fallback::parent_realized if it was not), and n becomes the CountChild Binomial(x, rho).
void make_count_child(Node& n);
/// rho is needed (grafted, drawn): if it waits for a count X, X is drawn from its exact posterior (a
/// Fallback::mixture_resolved, refused in strict mode before anything changes) unless it is realized, and rho's
/// parameters become Beta(a + y, b + x - y).
void resolve_mixture(Node& rho);

// ---- Reachability (reachability.cpp) --------------------------------------------------------------------------
/// Calls f(u) for every node u that n's law depends on directly: its owning parents (while initialized), its raw
/// mparents (while marginalized), tied_to (a node fixed by an observed sum) and, for a member of a joint law, the
/// oldest other member (so that members touch one another). These are the dependence edges of
/// uninstantiated_ancestors and Graph::touches. They form no directed cycle (parents, mparents and group anchors
/// point to older nodes; a tie joins two operands that were independent), though they may form undirected ones.
/// The oldest other live member of n's joint group, or nullptr (joint/groups.cpp).
Node* group_anchor(const Node& n);
template <class F>
void for_each_dependence_edge(const Node& n, F&& f) {
  for (const auto& p : n.parents)
    if (p) f(p.get());
  for (const auto& p : n.more_parents)
    if (p) f(p.get());
  if (n.group)
    if (Node* a = group_anchor(n)) f(a);
  for (Node* p : n.mparents)
    if (p) f(p);
  if (n.tied_to) f(n.tied_to);
  if (n.continuous && n.continuous->mixture_count) f(n.continuous->mixture_count.get());
}
/// The non-realized nodes that n depends on: n and every node reachable through parents, mparents and tied_to.
std::vector<Node*> uninstantiated_ancestors(Node& n);
/// A node of the first set that is also in the second, or nullptr.
Node* shared_ancestor(Node& x, Node& y);
/// Whether n's own law is cut where its tail mass falls below the truncation's tolerance when it is made: an
/// unbounded prior, a Poisson child (scaled or indexed), a negative-binomial or Poisson count of a conjugate parent.
bool truncates(const Node& n);
/// The names of the nodes among n's uninstantiated ancestors (n included) whose laws are truncated, in the order
/// found; after `limit` nodes visited the search stops and "..." ends the list.
std::vector<std::string> truncated_ancestors(Node& n, std::size_t limit = 256);

}  // namespace tally::runtime::detail
