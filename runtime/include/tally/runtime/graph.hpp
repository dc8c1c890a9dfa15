// The engine-facing API: a program's random variables, kept marginalized as long as possible (delayed sampling).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeindex>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/distributions/value_family.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/group_weights.hpp"
#include "tally/gpu/summaries.hpp"
#include "tally/runtime/communicator.hpp"
#include "tally/runtime/conjugate.hpp"
#include "tally/runtime/observation.hpp"

/// The delayed-sampling runtime that an engine drives: Graph and its handles (Variable, Continuous), the reports
/// of its observations (Observation, Exactness, Fallback), and sharding (Shard, Communicator).
namespace tally::runtime {

namespace detail {
class Node;
struct Context;
}  // namespace detail

/// Misuse of the API: an empty (moved-from) handle, observing an already realized variable, mixing graphs, ...
struct usage_error : std::logic_error {
  using std::logic_error::logic_error;
};

/// A handle to a discrete random variable (a count or a category) of a Graph. Cheap to copy; the variable lives
/// while a handle, a child or its M-path needs it (see runtime/src/node.hpp for the ownership rules).
class Variable {
 public:
  Variable() = default;
  /// Whether the handle is empty (default-made or moved from): every Graph call refuses it (usage_error).
  bool empty() const { return node_ == nullptr; }

 private:
  friend class Graph;
  explicit Variable(std::shared_ptr<detail::Node> n) : node_(std::move(n)) {}
  std::shared_ptr<detail::Node> node_;
};

/// A handle to a conjugate continuous variable (Beta, Gamma, Dirichlet) of a Graph.
class Continuous {
 public:
  Continuous() = default;
  /// Whether the handle is empty (default-made or moved from): every Graph call refuses it (usage_error).
  bool empty() const { return node_ == nullptr; }

 private:
  friend class Graph;
  explicit Continuous(std::shared_ptr<detail::Node> n) : node_(std::move(n)) {}
  std::shared_ptr<detail::Node> node_;
};

/// Where a graph keeps its particles' laws and values.
enum class Device {
  cpu,        ///< host memory: each particle's law a tally::Pmf, computed by the distributions' algebra
  cuda,       ///< device memory: each node's P laws in one batch, computed by tally::gpu's array operations
  automatic,  ///< cuda when a device is present (gpu::cuda_available()) and particles >= automatic_cuda_particles;
              ///< the environment variable TALLY_GRAPH_DEVICE=cuda (or cpu) makes every automatic graph use that
              ///< device whatever its size, where a device is present (so the tests run every program on the GPU)
};
/// Below this many particles a graph on `automatic` stays on the CPU: a step's launches (a few microseconds each)
/// cost more than the host's loops (bench/RESULTS.md, "One engine").
inline constexpr std::size_t automatic_cuda_particles = 4096;

/// What one live variable of a graph holds (Graph::memory).
struct NodeMemory {
  /// Its name (Graph::name), or "#k".
  std::string name;
  /// The bytes its state holds (laws: 8 per weight and 24 per law; values: 8 per particle; a joint law counted once).
  std::size_t bytes;
  /// bytes / P.
  double bytes_per_particle;
};

/// How Graph::touches answers (every method gives the same answer; `search` and `closure` are for tests and
/// benchmarks, and for callers who know their graphs):
enum class DependenceMethod {
  /// `closure` when the query has enough pairs and reaches few enough nodes for it to pay (the thresholds below),
  /// else `search`.
  automatic,
  /// The CPU path, per pair: one depth-first search for each observation's ancestors, then one per variable that
  /// stops at the first node they share (as the runtime's own check for dependent operands does).
  search,
  /// The transitive closure: the N nodes the queries reach (one depth-first search), their adjacency as an N x N
  /// bit matrix, tally::gpu::transitive_closure (on the device when one is present and N >=
  /// gpu::cuda_min_closure_nodes, else the CPU's reverse-topological closure), then each pair by a word-wise AND
  /// of two rows (or, on the device, one boolean product for many pairs). Memory: two N x N bit matrices.
  closure,
};

/// `automatic` uses the closure when the query has at least dependence_closure_min_pairs pairs (M observations
/// times K variables) and reaches at most dependence_closure_nodes_per_pair x M x K non-realized nodes, and at most
/// dependence_closure_max_nodes; else the search (the search for the reach stops at that limit, so that a query
/// answered by search wastes at most that many steps). Measured by bench/dependence.cpp (bench/RESULTS.md,
/// "Dependence queries in the runtime"): on chains and running sums a pair's search walks a good part of
/// the graph while the closure costs about N^2 / 64 word operations and two allocations, and they break even near
/// N = 64 M K; below 16 pairs the closure's fixed cost (a few microseconds) loses to the search on small graphs.
///@{
inline constexpr std::size_t dependence_closure_min_pairs = 16;
inline constexpr std::size_t dependence_closure_nodes_per_pair = 64;
///@}
/// Above this the closure's two bit matrices (2 x N^2 / 8 bytes: 64 MiB at 16384) are not worth their memory.
inline constexpr std::size_t dependence_closure_max_nodes = 16384;

/// One probabilistic program over P particles (P = 1: the ordinary single graph), on the CPU or on a GPU. Every
/// variable's state is a batch of P laws or values, kept where the graph's Device keeps them, and each call below
/// acts on all particles at once. The algorithm is the same on both devices (runtime/src/delayed_sampling.cpp); the
/// state operations dispatch once (runtime/src/state.cpp): host laws are tally::Pmf with the distributions'
/// algebra and error bounds, device laws are tally::gpu batches. What has no device kernel runs on the host for a
/// CUDA graph, its laws copied there and back, with the same results: the joint laws (below) where every particle
/// holds one table or an operation has no batch form. A Dirichlet's
/// parameters and draws are one vector per particle where the graph keeps its state (gpu::Vectors). The laws of
/// negative binomial and Poisson counts of a Beta or Gamma parameter (marginalized or realized), and the
/// categorical counts of a Dirichlet, are one host law shared by every particle while the particles' parameters are
/// equal, and gpu::count_laws (gpu::categorical_laws) over the population once they differ (a drawn count entered
/// each posterior): each count law cut to its own window by tail bounds, so that it may hold a few entries more
/// than the CPU graph's, never less mass. A child law per group (a thinning, a scaled or indexed Poisson, a Markov
/// step) runs on the device as one kernel over the groups' own parameters.
///
/// Equal laws are computed once. On the host, particles whose inputs to an operation are identical share one
/// computation and one copy of its result. On the device, a prior is one law shared by every particle and a
/// per-group law one law per group; an operation whose inputs are all shared that way (shared laws, a constant, a
/// per-group child law) runs once per law and its result stays shared, through observations of constants and every
/// resampling, until something per particle (a drawn value, a per-particle parameter) makes the laws one per
/// particle. A filter whose particles all hold the same exact laws then costs about one particle's work. A sum of a
/// particle's own law and a shared one (drawn survivors plus immigrants of one law, say) convolves each particle's
/// law with its block's shared law where that is held (gpu::convolve_shared: no copy per particle). A Markov
/// step from a realized state holds one law per state of its matrix (made once per matrix), each particle's chosen
/// by its state: conditioning it on a constant observation, or pushing a child law through it, runs once per state
/// (each particle's log-likelihood then its state's), a draw takes each particle's law from that table, and a
/// resampling moves the states alone (an HMM's step costs K laws, not P). The same
/// holds on the host: a prior, and a joint law, that every particle holds is stored once (tally::runtime::Batch's
/// uniform form), and an operation whose inputs are all held once runs once.
///
/// Groups (Graph(Groups{G, S}, ...)): the P = G S particles are G filters of S particles each, one per parameter
/// set. A per-group law (assume(std::vector<Family>), assume(x, std::vector<Thinning>)) is one law in every
/// particle of its group and stays on the exact path as any other; the weights are summarized and resampled group
/// by group (resample_groups), so that particles never leave their group. G = 1 is the ordinary graph. Groups split
/// over ranks (Graph(Groups, communicator, ...)) stay whole, each on one rank: a rank filters its groups alone.
///
/// Draws: the k-th draw of the graph (any variable's sampling) gives particle i the uniform
/// philox_uniform(seed, i, k) and inverts the law by gpu::sample_batched's rule, so a CPU graph and a CUDA graph
/// give the same values for the same seed (up to ties within the rounding of the laws' sums, about 1e-15).
///
/// Delayed sampling (Murray et al. 2018): `assume` only records a variable; `observe`, `value` and `marginal`
/// graft it onto a marginalized path and compute exactly:
/// - observe(x, v) adds log P(x = v | everything observed so far) to each particle's log-weight, and conditions;
/// - value(x) draws x from its exact posterior (and conditions its marginalized parents on the draw);
/// - marginal(x) is x's law given the observations, exactly (a marginalized child of x that absorbed observations
///   is kept: x and it become coordinates of one joint law, see "One exact mechanism" below).
/// Sums: z = x + y is an exact convolution when x and y are independent. When y is an initialized direct child
/// of x (y ~ Binomial(x, q), y = x + 1, ...), the pair is enumerated jointly over x, exactly (and when y lives on
/// after the sum, held by a handle or a child, y and the sum are kept in one joint law: see "Joint laws" below).
/// Otherwise, when x and y share an uninstantiated ancestor (found by reachability), that ancestor becomes a joint
/// law that x and y join as they are grafted, so that the sum is a linear combination of its coordinates, exactly;
/// with joint laws off or past their budget, that ancestor is realized (sampled from its exact posterior, reported
/// as Fallback::joint_limit) before the convolution: never a silently wrong convolution. Observing z conditions x on the skew
/// diagonal, and ties y = z - x (y is realized with x). Observing a sum that was never needed as a law takes the
/// skew diagonal of its operands' outer product directly (no convolution); observing an initialized child of a
/// marginalized or realized parent (Binomial(x, q), Poisson(a x), Poisson(rates[x]), Categorical(T[x])) conditions
/// the parent directly, without building the child's law.
/// Joint laws (runtime/src/joint/joint.hpp): where an operation would couple marginalized variables that share an
/// ancestor, the runtime keeps their joint law instead of sampling: the second child of a count that lives on
/// (y ~ Binomial(x, m) kept with x - y: a migration), a sum of two descendants of one variable (a diamond), a
/// child of several random parents (poisson(state, rates), binomial(x, state, keep)). Each particle then holds one
/// tally::JointPmf over the coupled variables that are still needed: every child grafted below one of them joins the
/// law as a new coordinate, an observed child conditions it directly (its coordinate is never built), a variable
/// realized (observed, drawn) is sliced out, and one that nobody can reach any more (no handle, no child) is summed
/// out at the next operation on the law (variable elimination on the fly); a law left with one variable becomes
/// that variable's marginal again. Ownership stays acyclic (node.hpp). Such programs are exact: their observations
/// report nothing sampled.
/// One exact mechanism: the marginalized part of the graph is a set of factors over discrete variables. Plain
/// marginals and M-paths (Murray et al.) are the cheap case: one law per variable, each child's law given its
/// parents. Wherever an operation would couple variables that such a path cannot represent — a second child of a
/// variable whose first child is on its M-path (two thinned children that both go on), a sum whose operands share
/// an ancestor at any depth, a variable and its own descendants, a tie of an observed sum that takes a new child,
/// marginal(), value() or beta() of a variable with a marginalized child — the whole marginalized component
/// (the M-path through the variable, every marginalized parent that feeds it, and the ties among them) is taken over
/// by one joint law (runtime/src/joint/absorb.cpp): the tops' marginals, each node's law given its parents
/// reweighted to the marginal it holds, which is exactly the posterior the path represents. Nothing is drawn. Then
/// the new child joins that law as a coordinate (elimination on the fly, as above). Which handles are alive changes
/// which coordinates stay in a table (memory), never whether the answer is exact, within the budget below. Cost: a
/// joint law of k coordinates holds the product of their ranges per distinct particle table (particles with equal
/// tables share one). Sums, differences and affine maps of coupled variables are not coordinates: each is a linear
/// form of them (a derived member), its law read from the table's hyperplanes and its observation conditioning the
/// table on one, so live sums of sums of one variable cost no memory; such a form becomes a coordinate only where
/// an operation needs one (a child of it, or a variable of its form summed out). Elimination order: a variable is summed out at the first operation after nothing
/// can reach it; when a component is taken over, its law is built parents first and each variable that nothing
/// outside the component holds is summed out as soon as the last node that reads it has entered (a child that is
/// its only reader takes its coordinate in place), so that a chain of unheld steps between two held variables
/// costs one table over those two and one step, whatever its length. A chain of add()s grafts in time linear in
/// its length (an operand that is its own only ancestor is answered at once by the shared-ancestor search).
/// Sampling happens only past the budget: a joint law larger than Truncation::max_joint_bytes over all particles
/// (default 256 MiB; 0 turns joint laws off) is not formed, and the variables that would enter it are drawn from
/// their exact posteriors first, reported as Fallback::joint_limit (refused in strict mode before anything is
/// drawn). Components a joint law cannot hold are drawn as before and reported with their own reasons: a count of
/// a marginalized Beta, Gamma or Dirichlet parameter (Fallback::pruned, parent_realized, shared_ancestor). Joint
/// laws live on the host, for a CUDA graph too (their inputs are copied to the host, their marginals and draws back
/// to the device), one table per distinct input: particles with equal tables share one (a law formed from equal inputs
/// is made once however its particles lie, a tie's constants drawn from a few values say; an operation on it after
/// that, once per run of equal neighbours), and where every particle holds the same table (nothing per particle has
/// entered it) the law is that one table, each operation on it made once, whatever P. Where the particles hold many
/// different tables (a member drawn in each), a CUDA graph computes an operation on all of them as one batch of device
/// kernels (Truncation::joint_batches): the same results to rounding, with coarser (still sound) error bounds. The
/// batch's results stay in device memory, trimmed there, and the next operation with a batch form reads them there (a
/// resampling remaps which table each particle holds), as do a member's marginal (on a CUDA graph, laws indexed by each
/// particle's table) and its draw (the other members sliced at its values); they come to the host only for a law past
/// gpu::max_joint_rank (8) axes (counting, for a child of several parents, one axis for each realized parent and one
/// for the child). Two groups multiplied (a sum of their members, say) are their tables' outer product, a batch too; a
/// child law per group gives each table its own group's (a split of a count by a thinning per group too); a Poisson
/// child appended keeps each table's window (tally::add_child's, from the rates over the table's box; the mass past it
/// in the bound); a child of several members (poisson(state, rates), binomial(x, state, keep)), appended or observed,
/// takes each realized parent as a constant axis of the batch, summed out after it (with every parent realized it is
/// no joint law: its law is made per particle on the host, for a CUDA graph too).
/// Binomial(x, rho) with rho a Beta variable is not a joint law: observed, it conditions x exactly and rho waits for
/// x's value (see binomial(x, rho) below).
/// Every sampling the runtime does on its own (Fallback) is reported by the next observation's exactness(): while
/// that observation computes, or before it (a marginal(), value() or beta() that had to prune a marginalized child
/// draws it; the observation that follows lists it first). Strict mode refuses each of them at once (marginal()
/// and the others throw inexact_error too).
/// Impossible observations give that particle a log-weight of -inf; the graph stays usable.
/// Error bounds: what truncation cuts from an unbounded prior is kept where it was cut and carried along (inside
/// joint laws as their dropped measure; on a CPU graph along the ordinary path too: pushed through thinnings and
/// Markov steps, convolved into sums, held once for particles with equal laws), and each observation weighs it by its
/// own likelihood, so the reported bound stays near the true error over long filters (Truncation::track_dropped).
/// The tails are computed when a bound is first read (Observation::exactness) or a joint law takes them over, at
/// the latest every 32 pending steps of a chain (fewer in large populations: 2^16 particle laws pending at most):
/// an engine that reads no bound pays almost nothing for them; one that reads every bound pays one more pass over
/// each distinct law (about 1.4 times the work of a single particle's filter; little on large populations, whose
/// particles share laws). The bound is the same whenever it is read. CUDA graphs keep the ordinary path's bound (sound, often far looser).
/// Observations in the tail that truncation cut from an unbounded prior are not -inf: where a root still holds its
/// prior (observed itself, or through a thinning, an affine map or a Poisson(a x) child, when first grafted) and the
/// observed values fall outside its window, the window is extended from its family (the family tabulated at a
/// smaller tolerance, down to 1e-300), so the log-likelihood is exact within the bound it reports. Values whose
/// prior mass is below about 1e-300, and tails of laws already conditioned or computed (sums, joint laws), can
/// still read -inf: tighten Truncation (the third constructor argument, e.g. {1e-300}) where such data are
/// expected. On a CUDA graph the extension needs the observed values' largest known on the host (a constant
/// observation has it). A Graph is not thread-safe.
///
/// Exceptions (tests/runtime/exception_safety.cpp; fuzz/engine.cpp checks them on random programs). Every
/// operation throws only tally's documented types: usage_error (misuse), tally::domain_error, shape_error,
/// overflow_error (a law larger than Truncation::max_size, or costlier than max_work), inexact_error (strict
/// mode), cuda_error and device_memory_error (a CUDA graph), host_memory_error (a constructor whose log-weights do
/// not fit on the host), and tally::runtime::communicator_error (a sharded graph whose ranks fail or disagree:
/// tally/runtime/communicator.hpp). Each gives one of two guarantees:
/// - *Strong* (nothing changed: log-weights, laws, values, draws and the live nodes are as before the call):
///   every check of the arguments (an empty handle or one of another Graph, a variable observed twice or at
///   itself, per-particle vectors of the wrong size, out-of-range probabilities and ancestors), which all come
///   before any change; constant, assume (priors, children, conjugate parents and their counts of constant or
///   realized trials), poisson(state, rates, a) and binomial(x, state, keep), add, subtract, affine, name, strict, stream, in_support, touches, log_weights, memory, bytes,
///   reset_log_weights; resample and
///   resample_by_weight (the particles are gathered aside and moved in only when all succeeded; a failed
///   resample_by_weight leaves its resampling counter as it was, so a retry draws the same uniforms); strict mode's
///   inexact_error, raised before the fallback would sample.
/// - *Basic* (the graph stays usable, its invariants hold and nothing leaks; work already done is kept): observe,
///   value, values, realize, summarize, marginal, value / scalar_value / beta / gamma / dirichlet of a conjugate
///   parameter, and binomial(x, p) and binomial(x, rho), which realize x first when it is not (binomial(x, rho)
///   realizes nothing when it is made: the strong guarantee). Operations on joint laws compute each new table aside and commit
///   it at once, so a failure leaves each joint law as it was (two laws merged into one, exactly, may stay merged).
///   These graft, marginalize and realize nodes along a path before the step that may fail (a child law
///   that does not fit its parent's support, a law past max_size, a device allocation): the nodes already moved
///   keep their new exact states (a marginalized law, or a value drawn from its exact posterior, as a fallback would
///   draw it), the failed node and everything below it stay as they were, and the log-weights change only when an
///   observation completes. Asking again for the failed variable fails again the same way while the cause remains;
///   everything else goes on as if the failed call had been a marginal() of the nodes it reached.
/// - *Deferred* (a CUDA graph only): an error that only the device can see (a per-particle parameter outside its
///   domain, an integer overflow, a state outside a Markov or rate table) does not make the host wait: it is raised,
///   with the same type and message naming the particle and the operation, by the next call that waits for the
///   device anyway (values or laws copied back, summarize, resample_by_weight, a failed allocation); the first such
///   error wins (gpu/include/tally/gpu/deferred_checks.hpp). By then the failed operation's results are in the
///   graph: treat the graph as one whose last operations failed (the basic guarantee), as on the CPU path, where
///   the same error is thrown by the operation itself.
/// \class tally::runtime::Graph

/// A population of G groups of S particles each (G S particles in all): particle i is in group i / S. Each group is
/// a filter of its own: its own parameters (a per-group parameter, see Graph), its own weights, resampled within
/// the group (Graph::resample_groups), and its own log-evidence. Groups{1, P} is an ordinary graph of P particles.
struct Groups {
  std::size_t count = 1;  ///< G
  std::size_t size = 1;   ///< S, the particles of each group
};

class Graph {
 public:
  /// particles >= 1 (domain_error otherwise); Device::automatic.
  explicit Graph(std::size_t particles = 1, std::uint64_t seed = 1, Truncation truncation = {});
  /// Device::cuda without a usable device: tally::cuda_error. Too many particles for their log-weights alone:
  /// device_memory_error (the device) or host_memory_error (the host, a std::bad_alloc; Python's MemoryError), each
  /// saying about how many particles would fit.
  Graph(std::size_t particles, std::uint64_t seed, Device device, Truncation truncation = {});
  /// G groups of S particles (Groups): domain_error where G or S is 0 or G S overflows; Device::cuda without a
  /// usable device: tally::cuda_error. Device::automatic chooses by G S particles.
  Graph(Groups groups, std::uint64_t seed, Device device = Device::automatic, Truncation truncation = {});
  /// One shard of a population sharded over communicator->size() shards (docs/gpu.md, "Several GPUs"): this graph holds
  /// the population's particles shard.first .. shard.first + shard.count - 1 (shard.index = communicator->rank()),
  /// and every shard runs the same program. What the unsharded Graph(shard.total, seed, ...) would compute for
  /// those particles, this shard computes:
  /// - draws: particle i draws philox_uniform(seed, shard.first + i, k), the population's particle's uniform, and
  ///   stream(i) is the population's stream(shard.first + i);
  /// - resample_by_weight (collective): the population's log-evidence increment and ESS, and the same ancestors
  ///   (global indices; bit for bit: systematic by the tiles of gpu/include/tally/gpu/resample_tiles.hpp, multinomial
  ///   by the CPU reference's sequential sums), with the particles' laws and values moved between the shards
  ///   (runtime/src/sharding.hpp);
  /// - resample(ancestors) (collective): ancestors are the population's indices, one per particle of this shard;
  /// - summarize (collective): the population's summary (to rounding: sums combined in another order).
  /// Everything else (assume, observe, value, marginal, log_weights, ...) is this shard's, with no communication.
  /// The shards' ancestors are computed on the host from the log-weights copied there (8 bytes a particle each
  /// way for a CUDA shard). Dirichlet parameters cannot move between shards yet (usage_error when resampling).
  /// The communicator must outlive the graph. tally::domain_error for shard.count = 0, shard.index !=
  /// communicator->rank() or a shard outside shard.total (the shards' agreement is checked on their first collective).
  Graph(Shard shard, std::shared_ptr<Communicator> communicator, std::uint64_t seed, Device device,
        Truncation truncation = {});
  /// A population of G groups of S particles split over the communicator's ranks with each group whole on one rank:
  /// rank r holds groups Shard::even(G, ranks, r) (its particles the groups' S each). Every rank runs the same
  /// program, and computes for its groups what the unsharded Graph(groups, seed, ...) computes for them: the same
  /// draws; resample_groups and summarize_groups over its own groups, with no communication (a group's uniforms are
  /// those of its index in the population). As every input of a shard, per-group laws are its own groups' (groups()
  /// of them, from first_group()). What would mix groups is refused as on one graph (resample_by_weight; resample()
  /// to an ancestor of another group).
  /// tally::domain_error where G < ranks, or as Graph(Groups, ...); usage_error without a communicator.
  Graph(Groups groups, std::shared_ptr<Communicator> communicator, std::uint64_t seed, Device device,
        Truncation truncation = {});
  /// This graph's particles (a shard's own: shard().count).
  std::size_t particles() const;
  /// Its groups: G, and S particles each (1 and particles() for a graph made without groups).
  ///@{
  std::size_t groups() const;
  std::size_t group_size() const;
  ///@}
  /// The population's index of this graph's first group (0 unless the graph is a rank's share of groups).
  std::size_t first_group() const;
  /// The shard this graph holds: Shard{0, P, 0, P} for an unsharded graph.
  const Shard& shard() const;
  /// Whether this graph is one shard of a sharded population (made with a communicator).
  bool sharded() const;
  /// The shards' communicator (null for an unsharded graph): for an engine's own collectives between the shards.
  const std::shared_ptr<Communicator>& communicator() const;
  /// Where the laws and values live (automatic resolved).
  gpu::Backend backend() const;
  /// Strict mode: any fallback the runtime would take (see Fallback) throws inexact_error naming the variable
  /// instead of sampling it. Off by default.
  ///@{
  void strict(bool on);
  bool strict() const;
  ///@}
  /// The variables the runtime sampled on its own since the last observation (a marginal(), value(), beta(), ...
  /// that had to prune a marginalized child or fall back), in the order drawn: what the next observation's
  /// exactness() will list first. Empty while everything since the last observation was exact. A decision about
  /// the whole population (a joint law past its budget in one particle) is reported here for every particle.
  const std::vector<Sampled>& pending_samplings() const;
  /// Names x in reports and errors (exactness, memory); variables are "#k" otherwise.
  ///@{
  void name(const Variable& x, std::string name);
  void name(const Continuous& x, std::string name);
  ///@}

  // ---- discrete variables ----
  /// x ~ prior (constant parameters); any family with to_pmf works: assume(Binomial(100, 0.3)).
  Variable assume(const Pmf& prior);
  /// x ~ prior, where family(t) is the same law truncated under other settings t (prior = family(truncation())):
  /// the runtime asks it for the tails the prior dropped, to bound their effect where they are (joint laws'
  /// error bounds, tally::JointPmf::dropped). The family overload below passes it.
  Variable assume(const Pmf& prior, std::function<Pmf(const Truncation&)> family);
  /// A family that is a plain value (tally::value_family: Poisson, Binomial, ...) has its law made once per graph
  /// for each distinct value among the last few assumed, and given again for an equal one.
  template <class Family>
  Variable assume(const Family& law)
    requires requires(const Family& f, const Truncation& t) { to_pmf(f, t); }
  {
    std::function<Pmf(const Truncation&)> family = [law](const Truncation& t) { return to_pmf(law, t); };
    if constexpr (value_family<Family>) {
      static_assert(std::is_trivially_copyable_v<Family>, "a value_family holds its parameters by value");
      return assume_value(typeid(Family), std::as_bytes(std::span<const Family, 1>(&law, 1)), std::move(family));
    } else {
      Pmf prior = family(truncation());  // (before family is moved into the call)
      return assume(prior, std::move(family));
    }
  }
  /// Per-group or per-particle parameters: x ~ laws[g] in every particle of group g (laws.size() == groups()), or
  /// x ~ laws[i] in particle i (laws.size() == particles(); shape_error for another size), for any family with
  /// to_pmf (Poisson, Binomial, NegativeBinomial, Geometric, Categorical, ...) or given Pmfs. The variable is
  /// marginalized at once (each group's law made once, shared by its particles) and goes on on the exact path like
  /// any root. Its tails are those of the graph's truncation (each law's error bound): unlike a root of constant
  /// parameters, an observation far past a law's window is not widened from its family.
  ///@{
  Variable assume(const std::vector<Pmf>& laws);
  template <class Family>
  Variable assume(const std::vector<Family>& laws)
    requires requires(const Family& f, const Truncation& t) { to_pmf(f, t); }
  {
    std::vector<Pmf> pmfs;
    pmfs.reserve(laws.size());
    for (std::size_t k = 0; k < laws.size(); ++k) {
      bool same = false;
      if constexpr (value_family<Family>)  // equal neighbours (a grid's repeated parameters) made once
        same = k > 0 && std::ranges::equal(std::as_bytes(std::span<const Family, 1>(&laws[k], 1)),
                                           std::as_bytes(std::span<const Family, 1>(&laws[k - 1], 1)));
      pmfs.push_back(same ? pmfs.back() : to_pmf(laws[k], truncation()));
    }
    return assume(pmfs);
  }
  ///@}
  /// A realized count: v in every particle, or v[i] in particle i (per-particle values the engine computed).
  ///@{
  Variable constant(std::int64_t v);
  Variable constant(const std::vector<std::int64_t>& v);
  Variable constant(gpu::Column<std::int64_t> v);
  ///@}
  /// y | x ~ law: Binomial(x, q), Poisson(a x), Poisson(rates[x]), Categorical(T[x]).
  ///@{
  Variable assume(const Variable& x, const Thinning& law);
  Variable assume(const Variable& x, const ScaledPoisson& law);
  Variable assume(const Variable& x, const IndexedPoisson& law);
  Variable assume(const Variable& x, const MarkovStep& law);
  ///@}
  /// y | x ~ laws[g] in group g: a thinning probability per group (laws.size() == groups(), shape_error
  /// otherwise), kept on the exact path as one law: y's laws, and x's posterior when y is observed, are each
  /// particle's own (on a CUDA graph: one kernel over the population with the probabilities in device memory).
  /// A per-particle probability is a graph of P groups of 1 (or binomial(x, p), which realizes x). Where x is a
  /// coordinate of a joint law, or y joins one (a sum of x and y, say), the joint law applies each particle's own
  /// thinning: exact, as a batch of each table under its group's law where a batch runs (see Joint laws above).
  Variable assume(const Variable& x, const std::vector<Thinning>& laws);
  /// The same with a scaled Poisson, an indexed Poisson or a Markov step per group (a contact rate, emission rates
  /// or a transition matrix per parameter set): exact as the thinning's, each particle's laws computed with its
  /// group's law (on a CUDA graph, one kernel over the population; in a joint law, its batch as the thinning's).
  ///@{
  Variable assume(const Variable& x, const std::vector<ScaledPoisson>& laws);
  Variable assume(const Variable& x, const std::vector<IndexedPoisson>& laws);
  Variable assume(const Variable& x, const std::vector<MarkovStep>& laws);
  ///@}
  /// Binomial(x, q) (the same as assume(x, Thinning(q))).
  Variable binomial(const Variable& x, double q) { return assume(x, Thinning(q)); }
  /// Children of several random parents, kept exactly in one joint law with them (see "Joint laws" above):
  /// y ~ Poisson(a R_s) with s = state in {0, ..., K-1} selecting one of the counts rates = R_0, ..., R_{K-1}
  /// (an HMM whose emission rates are unknown counts), a >= 0 (domain_error), rates not empty (shape_error).
  /// A state outside [0, K) or a negative rate where the law has mass: domain_error when the child is built.
  Variable poisson(const Variable& state, const std::vector<Variable>& rates, double a = 1.0);
  /// y ~ Binomial(x, keep[s]) with s = state in {0, ..., keep.size() - 1}: a thinning whose probability a random
  /// category selects. Each keep in [0, 1] (domain_error), keep not empty (shape_error).
  Variable binomial(const Variable& x, const Variable& state, const std::vector<double>& keep);
  /// Binomial(x_i, p_i) with per-particle probabilities the engine computed (from realized values, say:
  /// gpu::hazard_probabilities(values(I), c) for an epidemic's chain binomial), where the graph keeps its state
  /// (a host vector is copied there). x is realized first if it is not (Fallback::parent_realized), so the laws
  /// are Binomial(x_i, p_i) at once. p_i in [0, 1], one per particle (domain_error, shape_error). A host vector
  /// and a host column are checked here, before anything changes; a device column's values are checked on the
  /// device when the laws are formed or drawn from (domain_error naming the particle then), so that building the
  /// node reads nothing back.
  ///@{
  Variable binomial(const Variable& x, const std::vector<double>& p);
  Variable binomial(const Variable& x, gpu::Column<double> p);
  ///@}
  /// y ~ Binomial(x, rho) with rho a Beta variable (usage_error for another family) and x a random count.
  /// With x not realized, y is recorded and x is left as it is, and:
  /// - observe(y, v) (v per particle or one for all) is exact when, after grafting, rho is a marginalized Beta(a_i,
  ///   b_i) and x a marginalized count with no joint law, no tie by an observed sum and no marginalized child (its
  ///   M-path is pruned first, as for any new child), that does not depend on rho (x is not a count of rho, nor
  ///   below one). Each particle's law of x is multiplied by the beta-binomial likelihood (rho integrated out)
  ///   \f$\ell(x) = \binom{x}{v_i} B(a_i + v_i, b_i + x - v_i) / B(a_i, b_i)\f$ (zero for x < v_i), and
  ///   \f$\log \sum_x p_i(x) \ell(x)\f$ is the log-likelihood: the observation reports nothing sampled (strict mode
  ///   allows it). x's law is then its exact posterior, and rho's posterior is the mixture over x of Beta(a_i + v_i,
  ///   b_i + x - v_i), which no conjugate state holds: rho *waits for x*. Nothing is drawn until rho is needed: its
  ///   value, its parameters (beta()), a new child's law or observation, a sum or joint law that reaches it. Then x
  ///   is drawn from its exact posterior (Fallback::mixture_resolved, reported by the next observation, refused
  ///   in strict mode before anything is drawn) unless it was realized meanwhile (by value(x), an observation of
  ///   x, ...: then nothing is reported), and rho's parameters become Beta(a_i + v_i, b_i + x_i - v_i). The pair
  ///   (x, rho) so drawn has the exact joint posterior; an observation that needed rho (a second Binomial(n, rho),
  ///   say) is then exact given that draw of x, as after any fallback. A resampling moves the waiting state (x's
  ///   laws and v) with the particles and draws nothing. While rho waits, touches() has it depend on x (a new
  ///   count of rho touches x). A realized rho (drawn before the observation) needs no waiting: x is conditioned
  ///   under Binomial(v_i; x, rho_i), exactly. A count x whose support starts below 0 is refused by the
  ///   observation (domain_error, before x's law or the log-weights change).
  /// - otherwise (x in a joint law or tied, x depending on rho), and for any other use of y (its value, its law, a
  ///   child of y, a sum), x is realized first (Fallback::parent_realized, refused in strict mode) when it is not,
  ///   and y is the count Binomial(x_i, rho) of rho, as before. A CUDA graph does the same on the device
  ///   (gpu::condition_on_beta_thinning; a realized rho: gpu::condition_on_thinning with q_i = rho_i).
  Variable binomial(const Variable& x, const Continuous& rho);
  /// a x + c (a != 0), and x + y, x - y.
  ///@{
  Variable affine(const Variable& x, std::int64_t a, std::int64_t c);
  Variable add(const Variable& x, const Variable& y);
  Variable subtract(const Variable& x, const Variable& y);
  ///@}

  // ---- conjugate continuous parents and their counts ----
  /// rho ~ law, a conjugate continuous root: a Beta for binomial, bernoulli and negative_binomial counts, a Gamma for
  /// poisson counts, a Dirichlet for categorical ones. It stays marginalized while its counts are observed (conjugate
  /// updates, exactly).
  ///@{
  Continuous assume(const Beta& law);
  Continuous assume(const Gamma& law);
  Continuous assume(const Dirichlet& law);
  ///@}
  /// Per-group or per-particle hyperparameters: rho ~ laws[g] in every particle of group g (laws.size() ==
  /// groups()) or laws[i] in particle i (laws.size() == particles(); shape_error for another size or none). The
  /// conjugate updates and marginals then go on per particle, exactly as from one law (a parameter set's own prior
  /// in each group of a grouped graph).
  ///@{
  Continuous assume(const std::vector<Beta>& laws);
  Continuous assume(const std::vector<Gamma>& laws);
  Continuous assume(const std::vector<Dirichlet>& laws);
  ///@}
  /// k ~ Binomial(n, rho) with rho ~ Beta; n may differ per particle (one entry per particle).
  ///@{
  Variable binomial(std::int64_t n, const Continuous& rho);
  Variable binomial(const std::vector<std::int64_t>& n, const Continuous& rho);
  ///@}
  /// k ~ Bernoulli(rho), rho ~ Beta: binomial(1, rho).
  Variable bernoulli(const Continuous& rho) { return binomial(1, rho); }
  /// k ~ NegativeBinomial(r, rho) (failures before the r-th success), rho ~ Beta.
  Variable negative_binomial(double r, const Continuous& rho);
  /// c ~ Poisson(a lambda), lambda ~ Gamma(k, theta), a > 0: the marginal is NegativeBinomial(k, theta / (theta
  /// + a)) and observing c = x gives lambda | c ~ Gamma(k + x, theta + a).
  Variable poisson(const Continuous& lambda, double a = 1.0);
  /// c ~ Categorical(pi), pi ~ Dirichlet.
  Variable categorical(const Continuous& pi);

  // ---- observations and queries ----
  /// Observes x = v in every particle; returns log P(x = v | ...) per particle (added to the log-weights).
  /// Before anything is grafted, v is checked against x's structural support (see in_support): when it lies
  /// outside in every particle, every log-weight becomes -inf and x is realized at v at once, without building a
  /// dense pmf (which may not fit: 10^6 B_1 + 3 * 10^6 B_2 spans 4 * 10^6 + 1 integers for 4 possible values) and
  /// without conditioning x's parents (every particle is dead). Otherwise, when some value is possible, the usual
  /// path runs for all particles and gives -inf to the impossible ones.
  /// The Observation says, besides the log-likelihoods, whether they are exact given the past and, if not, which
  /// variables were sampled to compute them and why.
  Observation observe(const Variable& x, std::int64_t v);
  /// x may be a realized variable computed from constants and realized values (constant(), or add/subtract/affine
  /// of realized operands: a bootstrap filter's simulated count), observed once: log-likelihood 0 where x_i = v_i
  /// and -inf elsewhere. Observing any other realized variable (observed before, or drawn by value()) is a
  /// usage_error.
  /// Observes x = v[i] in particle i.
  Observation observe(const Variable& x, const std::vector<std::int64_t>& v);
  /// Observes x = v in each particle, v a variable of this graph (realized first if it is not: a draw, not a
  /// fallback: the engine asked for it).
  Observation observe(const Variable& x, const Variable& v);
  /// The structural check: false only when x = v is impossible in every particle, whatever is observed later.
  /// It reads the graph's structure and marginalizes, samples and caches nothing: the support of a root is the
  /// points of positive mass of its prior, of a x + c and of x +- y the image and the sumset of their operands'
  /// supports (bit-packed), of a realized variable its values and of a marginalized one the range of its marginals'
  /// entries of positive mass (for a CUDA graph, found on the device: two numbers read back).
  /// Where that is not known (thinning, Poisson and Markov children, counts of conjugate parents, supports too
  /// large to enumerate cheaply), the answer is true: in_support is a necessary condition, never a sufficient one.
  bool in_support(const Variable& x, std::int64_t v) const;
  /// x's value in each particle, drawn from its exact posterior if x is not yet realized.
  std::vector<std::int64_t> value(const Variable& x);
  /// The same values where the graph keeps them (device memory for a CUDA graph: no copy). The column is x's own
  /// (realized values never change): valid while a handle to x lives.
  const gpu::Column<std::int64_t>& values(const Variable& x);
  /// x's values (realized first, as value()) summarized under the particles' current log-weights where the graph
  /// keeps them (tally::gpu::summarize): the weighted mean, the effective sample size and the weighted quantiles
  /// at `probabilities`. A CUDA graph copies back those few numbers, not P values. Summarize before resampling:
  /// resampling moves the values and resets the weights.
  gpu::WeightedSummary summarize(const Variable& x, std::span<const double> probabilities);
  /// The summaries of several variables under the same log-weights, in the order given: one copy back (one wait
  /// for the device) for all of them on a CUDA graph, where summarizing each would wait once each.
  std::vector<gpu::WeightedSummary> summarize(std::span<const Variable> xs, std::span<const double> probabilities);
  /// Realizes x (draws it from its exact posterior where it is not yet realized) and copies nothing back.
  ///@{
  void realize(const Variable& x);
  void realize(const Continuous& x);
  ///@}
  /// x's law in each particle (a point mass once realized). Where x has a marginalized child and the joint law its
  /// component would need (every held variable an axis: many units of an observed total, say) passes the budget,
  /// the answer is still exact and nothing is drawn: x's posterior from the component with every other variable
  /// summed out at its last use, the graph left as it was (only a component whose chain alone passes the budget,
  /// or that a joint law cannot hold, is pruned as described above: reported, refused in strict mode).
  std::vector<Pmf> marginal(const Variable& x);
  /// A continuous variable's value per particle (drawn if needed): rho for Beta/Gamma, pi for Dirichlet.
  std::vector<Eigen::VectorXd> value(const Continuous& x);
  /// The scalar value of a Beta or Gamma variable per particle (drawn if needed); usage_error for a Dirichlet.
  std::vector<double> scalar_value(const Continuous& x);
  /// The posterior parameters per particle; usage_error if realized or of another family. As for marginal(), a
  /// marginalized child that absorbed observations is realized first, so that the parameters reflect them.
  ///@{
  std::vector<Beta> beta(const Continuous& x);
  std::vector<Gamma> gamma(const Continuous& x);
  std::vector<Dirichlet> dirichlet(const Continuous& x);
  ///@}

  // ---- dependence ----
  /// Which variables observing each observation can change now. result[i] lists, in increasing order, every j with
  /// \f$\mathrm{anc}^*(o_i) \cap \mathrm{anc}^*(v_j) \neq \emptyset\f$ (o_i = observations[i], v_j = variables[j]),
  /// where anc*(x) is x itself and every node reachable from x along dependence edges (x's parents while it is
  /// initialized, its marginalized parents while it is marginalized, the node an observed sum tied it to, the
  /// oldest other coordinate of the joint law it is a coordinate of: coordinates of one joint law touch) through
  /// non-realized nodes only. A realized node is a constant: it blocks the search, and a realized observation or
  /// variable touches nothing. So a non-realized node touches itself, two roots never touch, a child touches its
  /// parent and every ancestor, a sum touches its operands, and two children of one parent touch through it until
  /// it is realized (by value(), say). Touching is structural and the same in every particle: when o_i does not
  /// touch v_j, observing o_i leaves v_j's law as it is; when it does, it generally changes it.
  /// The query changes nothing (no grafting, sampling or conditioning). Throws usage_error for an empty handle or
  /// a handle of another Graph, among either list. Cost: see DependenceMethod; `search` is O(M (A + K B)) for
  /// observations with A ancestors and variables B steps from them, `closure` O(N^2 / 64 + E N / 64 + M K N / 64)
  /// word operations at most for N reachable nodes and E edges, with N^2 / 4 bytes.
  std::vector<std::vector<std::size_t>> touches(const std::vector<Variable>& observations,
                                                const std::vector<Variable>& variables,
                                                DependenceMethod method = DependenceMethod::automatic) const;
  /// The same for conjugate parameters: which of them observing each observation can change (a count touches its
  /// Beta, Gamma or Dirichlet parameter until the parameter is realized).
  std::vector<std::vector<std::size_t>> touches(const std::vector<Variable>& observations,
                                                const std::vector<Continuous>& parameters,
                                                DependenceMethod method = DependenceMethod::automatic) const;

  /// The accumulated log-weight of each particle: the sum of its observations' log-likelihoods (a copy to the
  /// host for a CUDA graph).
  std::vector<double> log_weights() const;
  /// The same where they live.
  const gpu::Column<double>& log_weight_column() const;
  /// Sets every log-weight to 0 (after resampling).
  void reset_log_weights();
  /// Resampling: particle i becomes a copy of particle ancestors[i], in every live variable (size P each). A shard
  /// of a sharded population: ancestors are indices of the population's particles (< shard().total), and the call
  /// is collective. A graph of several groups: each ancestor in its particle's own group (domain_error otherwise).
  void resample(const std::vector<std::size_t>& ancestors);
  /// What resample_by_weight did.
  struct Resampling {
    double log_mean_weight;               ///< \f$\log \frac1P \sum_i e^{\ell_i}\f$: the log-evidence increment
    double ess;                           ///< effective sample size of the weights before resampling
    gpu::Column<std::size_t> ancestors;   ///< where the graph keeps them (to_host() copies them); empty when
                                          ///< nothing was resampled. A shard's: the population's indices.
    bool resampled = false;               ///< whether the particles were resampled
  };
  /// Resamples by the particles' own log-weights (tally::gpu::resample, where the state lives, the device's fused
  /// resampler for a CUDA graph; `kind` systematic or multinomial, uniforms philox_uniform(seed ^ key, j, k) for
  /// the k-th call, apart from the particles' draws), then resets the log-weights to 0. When every log-weight is
  /// -inf (every particle impossible), nothing changes and log_mean_weight is -inf.
  Resampling resample_by_weight(gpu::Resampler kind = gpu::Resampler::systematic);
  /// The same only when the effective sample size is below threshold x P (threshold 1: always, 0: never); else
  /// the weights are only summarized (ancestors empty) and kept. A CUDA graph copies nothing back but the summary
  /// (the ancestors stay on the device until their to_host() is called). A graph of several groups: usage_error
  /// (resampling the whole population would mix the groups: resample_groups).
  Resampling resample_by_weight(double threshold, gpu::Resampler kind = gpu::Resampler::systematic);
  /// What resample_groups did: columns where the graph keeps its state (to_host() copies them back).
  struct GroupResampling {
    gpu::Column<double> log_mean_weight;  ///< G: \f$\log \frac1S \sum_{i \in g} e^{\ell_i}\f$, each group's
                                          ///< log-evidence increment (-inf where every particle is impossible)
    gpu::Column<double> ess;              ///< G: each group's effective sample size before resampling, in [1, S]
                                          ///< (0 where every particle is impossible)
    gpu::Column<std::int64_t> resampled;  ///< G: 1 where the group was resampled (its log-weights reset to 0)
    gpu::Column<std::size_t> ancestors;   ///< P: particle i's ancestor, in its own group (i where its group was not
                                          ///< resampled); empty for threshold 0, and for one group not resampled.
                                          ///< On a rank's share of groups: the rank's own indices (its groups are
                                          ///< whole there), where resample() takes the population's
  };
  /// Resamples each group within itself, where its effective sample size is below threshold x S (threshold 1:
  /// every group; 0: none, the weights only summarized) and not every particle of it is impossible, by the
  /// group's own log-weights (gpu::resample_groups: systematic, one uniform per group, or multinomial), then resets
  /// the resampled groups' log-weights to 0; the other groups keep theirs. One segmented operation over the whole
  /// population, with no host wait on a CUDA graph. A graph of one group (one made without groups, say) is
  /// resampled by resample_by_weight (its uniforms, its fused passes; collective on a sharded graph) and its
  /// results given as columns of one. A rank's share of groups resamples its own groups with no communication.
  /// domain_error for a negative threshold. The counter of its uniforms is resample_by_weight's.
  GroupResampling resample_groups(double threshold = 1.0, gpu::Resampler kind = gpu::Resampler::systematic);
  /// x's values (realized first, as value()) summarized group by group under the particles' current log-weights
  /// (gpu::summarize_values_by_group): each group's weighted mean and variance, and its effective sample size (0
  /// where every particle of the group is impossible; the mean and variance are then unweighted), as columns of
  /// G values where the graph keeps its state (one segmented operation, no host wait on a CUDA graph). Summarize
  /// before resampling, as summarize(). On a rank's share of groups: its own groups; usage_error on
  /// a sharded graph of one group (its summary is the population's: summarize).
  gpu::GroupMoments summarize_groups(const Variable& x);
  /// Every live variable's state: bytes and bytes per particle (laws: 8 per weight and 24 per law; values: 8).
  std::vector<NodeMemory> memory() const;
  /// All live variables' bytes, with the log-weights.
  std::size_t bytes() const;
  /// Particle i's random stream (for the engine's own draws, reproducibly; apart from the graph's draws).
  RandomStream& stream(std::size_t i);
  /// The truncation settings the graph was made with (tolerance, max_size, the joint laws' budget, ...).
  const Truncation& truncation() const;

  /// Live variables of all graphs in this process (the tests check it returns to zero).
  static std::int64_t live_nodes();

 private:
  /// assume(x, laws) for one child law per group (`what` names them in errors).
  template <class Law>
  Variable assume_per_group(const Variable& x, const std::vector<Law>& laws, const char* what);
  /// The node behind a handle, or usage_error (empty handle, another graph's variable).
  template <class Handle>
  std::shared_ptr<detail::Node> node_of(const Handle& x, const char* who) const;
  /// assume(family(truncation()), family) for a value_family of type `type` and bytes `key`: the law is taken from
  /// the graph's few kept ones where an equal family made it (detail::Context::kept_priors).
  Variable assume_value(std::type_index type, std::span<const std::byte> key,
                        std::function<Pmf(const Truncation&)> family);
  /// Every live variable's state by ancestors (resampling, where the state lives).
  void gather(const gpu::Column<std::size_t>& ancestors);
  /// resample_by_weight of a shard: collective (runtime/src/sharding.hpp).
  Resampling sharded_resample_by_weight(double threshold, gpu::Resampler kind);
  /// Its form where the whole population's log-weights are gathered on every shard (detail::whole_on_device).
  Resampling whole_resample_by_weight(double threshold, gpu::Resampler kind, std::uint64_t counter);
  std::shared_ptr<detail::Context> context_;
};

}  // namespace tally::runtime
