// Population: P particles running one delayed-sampling program, each node's state as P laws or values in one place
// (host memory: the CPU reference; device memory: one or a few kernel launches per operation for all particles).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/runtime/conjugate.hpp"
#include "tally/runtime/graph.hpp"  // usage_error

namespace tally::runtime {

namespace detail {
struct PopulationNode;
struct PopulationState;
}  // namespace detail

/// A count of a Population (a handle: cheap to copy; see Population for what keeps a node alive).
class Count {
 public:
  Count() = default;
  bool empty() const { return node_ == nullptr; }

 private:
  friend class Population;
  explicit Count(std::shared_ptr<detail::PopulationNode> n) : node_(std::move(n)) {}
  std::shared_ptr<detail::PopulationNode> node_;
};

/// A Beta-distributed probability of a Population (conjugate parent of binomial counts).
class Probability {
 public:
  Probability() = default;
  bool empty() const { return node_ == nullptr; }

 private:
  friend class Population;
  explicit Probability(std::shared_ptr<detail::PopulationNode> n) : node_(std::move(n)) {}
  std::shared_ptr<detail::PopulationNode> node_;
};

/// What one live node of a population holds.
struct NodeMemory {
  std::string name;
  std::size_t bytes;
  double bytes_per_particle;
};

/// P particles running one program, in delayed sampling (Murray et al. 2018) with the ProbZelus discipline: every
/// node is in one of three states,
/// - initialized: a thinning y ~ Binomial(x, q) of a marginalized x, or an emission y ~ Poisson(r_x), recorded only
///   (it holds x);
/// - marginalized: P laws, its exact marginal given what was observed. A marginalized node may have one
///   marginalized child (the M-path), which it holds; the child knows its parents only weakly;
/// - realized: P values;
/// so strong references point from an initialized node up to its parent and from a node down to its marginalized
/// child, and never form a cycle. The structure is the same in every particle; the laws and values differ.
/// Operations (each acts on all P particles, on the host or by a few kernel launches on the device):
/// - graft: a new child of x first prunes x's marginalized child (realizes it: samples it from its exact
///   posterior and conditions x on it), so x has at most one marginalized child and an operand of a sum is always
///   independent of the other;
/// - observe(x, v): adds \f$\log p(x = v \mid \text{observations so far})\f$ to each particle's log-weight, exactly:
///   for an initialized thinning, \f$\log \sum_n p(n) \binom{n}{v} q^v (1-q)^{n-v}\f$ and its parent conditioned
///   (one kernel), for an emission likewise with \f$\mathrm{Pois}(v; r_k)\f$; for an unconvolved sum, the skew diagonal of its operands' outer product (no convolution);
///   else the law's mass at v. x is then realized at v;
/// - realize(x) / value(x): a draw from x's exact posterior (after pruning x's marginalized child);
/// - realizing a node conditions its marginalized parent: a thinning's parent by condition_on_thinning, a Markov
///   step's by \f$w_k T_{k, y}\f$, a Beta
///   parent by the conjugate update (a += k, b += n - k), and a sum's live operands are drawn from their exact
///   joint posterior given the sum (operand 0 from \f$p(x \mid x + y = z)\f$, operand 1 = z - x).
/// Draws: particle i's draw number c (c counts the population's sampling operations) is made from
/// philox_uniform(seed, i, c) by sample_batched's rule, so a population on the host and one on the device give the
/// same values for the same seed (up to the rounding of their laws, about 1e-15). Resampling copies every live
/// node's laws and values by ancestor index where they live (no host round trip), so particles share nothing
/// mutable afterwards. Impossible observations give -inf log-weights. A Population is not thread-safe.
class Population {
 public:
  /// particles >= 1 (tally::shape_error otherwise). `where`: gpu::Backend::cpu (host memory, one core) or
  /// gpu::Backend::cuda (device memory; tally::cuda_error without a device). Unbounded priors are truncated at
  /// `truncation` (use Truncation{1e-300} where data sit in far tails).
  Population(std::size_t particles, std::uint64_t seed, gpu::Backend where = gpu::Backend::cpu,
             Truncation truncation = {});
  ~Population();
  Population(Population&&) noexcept;
  Population& operator=(Population&&) noexcept;
  Population(const Population&) = delete;
  Population& operator=(const Population&) = delete;

  std::size_t particles() const;
  gpu::Backend where() const;

  // ---- variables ----
  /// x ~ prior, the same law in every particle (marginalized at once: P copies of the law).
  Count assume(const Pmf& prior);
  template <class Family>
  Count assume(const Family& law)
    requires requires(const Family& f, const Truncation& t) { to_pmf(f, t); }
  {
    return assume(to_pmf(law, truncation()));
  }
  /// A realized count: v in every particle, or v[i] in particle i.
  Count constant(std::int64_t v);
  Count constant(const std::vector<std::int64_t>& v);
  /// y ~ Binomial(n, q): initialized while n is marginalized, else Binomial(n_i, q) laws at once.
  Count binomial(const Count& n, double q);
  /// y ~ Binomial(n, 1 - exp(-c k)): the chain binomial of epidemics (a susceptible escapes each of k infectious
  /// contacts at rate c). n and k are realized first (drawn, if they are not yet).
  Count chain_binomial(const Count& n, const Count& k, double c);
  /// rho ~ Beta(alpha, beta), in every particle.
  Probability assume(const Beta& prior);
  /// k ~ Binomial(n, rho): while rho is marginalized, k is its marginalized child with the BetaBinomial(n, a_i,
  /// b_i) laws (rho's previous child is pruned); once rho is realized, Binomial(n_i, rho_i). n is realized first.
  Count binomial(const Count& n, const Probability& rho);
  /// y | x ~ Categorical(T_{x, .}), one step of a Markov chain (T: K x C, rows checked by MarkovStep): while x is
  /// marginalized, y is its marginalized child with the laws \f$\mu_x^\top T\f$ (x's previous child pruned first);
  /// once x is realized, the rows \f$T_{x_i, \cdot}\f$. Realizing y conditions a marginalized x
  /// (\f$w_k T_{k, y}\f$). x's laws must lie on 0 .. K - 1 (tally::domain_error otherwise).
  Count assume(const Count& x, const MarkovStep& step);
  /// y | x ~ Poisson(r_x), an emission of a state x on 0 .. K - 1: recorded (initialized) until observed; then
  /// observe(y, v) adds \f$\log \sum_k p(x = k \mid \ldots)\, \mathrm{Pois}(v; r_k)\f$ and conditions x exactly
  /// (x stays marginalized), or, for a realized x, adds \f$\log \mathrm{Pois}(v; r_{x_i})\f$. Its own law (a mixture
  /// of Poissons) is never built: any use of y but observe is a usage_error.
  Count assume(const Count& x, const IndexedPoisson& emission);
  /// x + y and x - y: realized when both are; else a sum node over the operands' laws (a realized operand is a
  /// point mass). usage_error when x and y are the same node.
  Count add(const Count& x, const Count& y);
  Count subtract(const Count& x, const Count& y);

  // ---- observations and queries ----
  /// Observes x = v (in every particle) or x = v_i (v a Count, realized first): the exact log-likelihood is
  /// added to the log-weights.
  void observe(const Count& x, std::int64_t v);
  void observe(const Count& x, const Count& v);
  /// Realizes x (a draw from its exact posterior), without copying anything back.
  void realize(const Count& x);
  void realize(const Probability& rho);
  /// x's values (realized first), copied to the host.
  std::vector<std::int64_t> value(const Count& x);
  std::vector<double> value(const Probability& rho);
  /// x's laws given the observations (its marginalized child pruned first), copied to the host; a realized x
  /// gives point masses.
  gpu::PmfBatch marginal(const Count& x);
  /// rho's posterior per particle (its marginalized child pruned first); usage_error once rho is realized.
  std::vector<Beta> beta(const Probability& rho);

  // ---- weights and resampling ----
  /// Each particle's accumulated log-weight, copied to the host.
  std::vector<double> log_weights() const;
  /// What one end of step did.
  struct Step {
    double log_mean_weight;  ///< \f$\log \frac1P \sum_i e^{\ell_i}\f$ (-inf when every particle has weight 0)
    double ess;              ///< the weights' effective sample size (0 when every weight is 0)
    bool resampled;
  };
  /// Summarizes the log-weights and, when ESS < threshold P (threshold 1: always; 0: never) and some particle has
  /// weight, resamples: every live node's state is gathered by the ancestors (gpu::resample, uniforms
  /// philox_uniform(seed ^ key, j, k) for the k-th call) and the log-weights are reset to 0. Otherwise the weights
  /// stay and are summarized only.
  Step resample(double threshold = 1.0, gpu::Resampler kind = gpu::Resampler::systematic);
  const Truncation& truncation() const;

  // ---- memory ----
  /// Every live node's state: its bytes and bytes per particle (laws: 8 per weight and 24 per law; values: 8).
  std::vector<NodeMemory> memory() const;
  /// All live nodes' bytes, with the log-weights.
  std::size_t bytes() const;
  /// Nodes of all populations alive in this process (the tests check it returns to its start).
  static std::int64_t live_nodes();

 private:
  template <class Handle>
  std::shared_ptr<detail::PopulationNode> node_of(const Handle& h, const char* who) const;
  std::unique_ptr<detail::PopulationState> state_;
};

}  // namespace tally::runtime
