// Private: a node's per-particle state where the graph keeps it (host or device), and the one dispatch point of the
// array operations the delayed-sampling algorithm performs on it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/gpu/later_max.hpp"
#include "tally/gpu/parameter_laws.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "bound.hpp"
#include "tally/gpu/population_chain.hpp"
#include "tally/gpu/population_children.hpp"
#include "tally/gpu/population_dirichlet.hpp"
#include "tally/runtime/batch.hpp"
#include "tally/runtime/conjugate.hpp"

namespace tally::runtime::detail {

/// y = a x + c, a != 0.
struct AffineLaw {
  std::int64_t a, c;
};

/// The law of a discrete child given its discrete parent.
using ChildLaw = std::variant<Thinning, ScaledPoisson, IndexedPoisson, MarkovStep, AffineLaw>;

/// The laws of a Markov step from each state of its matrix for a CUDA graph (push_realized's table of rows, on the
/// host where small), kept for the next step with the same matrix: a time-homogeneous chain makes its table once.
struct StateRows {
  Eigen::MatrixXd transition;
  std::shared_ptr<const gpu::Laws> rows;
};

/// Where a graph's state lives and what its operations need: the number of particles, the backend, the
/// truncation, and the draws so far (the k-th draw of the graph uses philox_uniform(seed, first_particle + i, k) in
/// particle i: first_particle is 0 but for one shard of a sharded population, whose particle i is the population's
/// particle first_particle + i, so that the shards draw what the whole population would).
struct Place {
  std::size_t particles = 1;
  gpu::Backend where = gpu::Backend::cpu;
  Truncation truncation;
  std::uint64_t seed = 1;
  std::uint64_t draws = 0;
  std::uint64_t first_particle = 0;
  /// Set by the first device law of n (a binomial or beta-binomial kept as parameters) made while n had no bound on
  /// the host: from then on the graph computes its live values' maxima where it waits anyway (Graph::summarize), so
  /// that later such laws are sized from them, without reading their lengths back. Never set on the host.
  bool bound_values = false;
  /// One shard of a sharded population: the forms its laws take (shared or one per particle) must not depend on
  /// its particles' data, since every shard must hold the same forms for an exchange of particles.
  bool sharded = false;
  /// The last Markov step's table of rows (shared by the places made from this one).
  std::shared_ptr<StateRows> state_rows = std::make_shared<StateRows>();
  /// A place of one particle per law of an indexed table (one_per_law, state.cpp): the index of the particles that
  /// hold those laws, so that an observation's error bound is taken over the laws some particle holds (a row no
  /// particle holds may make the observation almost impossible, and would loosen every particle's bound). Null
  /// elsewhere.
  const gpu::Column<std::int64_t>* holders = nullptr;
  bool device() const { return where == gpu::Backend::cuda; }
};

/// P integers (realized values, per-particle constants) where the graph keeps them; immutable, shared by copies.
struct Values {
  std::shared_ptr<const gpu::Column<std::int64_t>> column;
  bool nonnegative = false;  // known to be >= 0 in every particle (without reading device values back)
  /// Device values: an upper bound on them known on the host, or pending on the device, or none yet (empty), shared
  /// by the copies (the graph fills it where it waits: bound_values); null on the host.
  std::shared_ptr<gpu::LaterMax> largest;
  std::optional<std::int64_t> same;  // where known: the one value of every particle (a constant)
  bool empty() const { return !column; }
  /// The bound, where it is known by now (never waits).
  std::optional<std::int64_t> bound() const { return largest ? largest->value() : std::nullopt; }
  /// Host values only (a CPU graph).
  std::int64_t operator[](std::size_t i) const { return column->host()[i]; }
  const gpu::Column<std::int64_t>& operator*() const { return *column; }
};

/// Device count laws kept as their parameters (Binomial(n_i, q_i) or BetaBinomial(n_i, a_i, b_i), q, a and b copied
/// when the laws were made): their weights are written only where an operation needs them (dense()), and an observed
/// sum of two such laws is conditioned straight from the parameters (gpu::condition_on_sum of ParameterLaws).
struct ParameterForm;

/// Device laws chosen from a table by an index per particle (Laws::indexed, below).
struct IndexedForm;

/// P laws of a marginalized count: tally::Pmf per particle on the host (with its own error bound), or one batch in
/// device memory with one bound for all (the largest; the same propagation rules as Pmf's), or, on the device, their
/// parameters alone (exact: no bound), or, on the device, laws shared by blocks of particles, or, on the device, laws
/// chosen from a table by an index per particle.
///
/// Shared laws: `shared` holds P / per laws and particle i's law is shared[i / per]: one law for every particle (per
/// = P: a prior before anything per particle touched it) or one per group (per = S: a per-group law). An operation
/// whose inputs are all shared by blocks (shared laws, a value the same in every particle, a law per group) runs
/// once per block and its result is shared the same way, so that equal laws are computed once; anything else makes
/// them one per particle first (dense). Every resampling keeps particles in their groups, so it leaves shared laws
/// as they are.
///
/// Indexed laws: `indexed` holds a table of K laws and particle i's law is table[index_i] (gpu/indexed_laws.hpp):
/// the laws of a Markov step from a realized state, one per state of the transition matrix, or a binomial of a
/// realized count with one probability, one law per value of the count (tabled, state.cpp). An operation whose
/// other inputs are the same in every particle (a child law, a constant observation) runs once per law of the table
/// and its result is indexed by the same index; a draw takes each particle's law from the table; anything else
/// spreads them first (dense). A resampling gathers the index, not the laws.
struct Laws {
  Batch<Pmf> host;
  std::shared_ptr<const gpu::Laws> device;
  std::shared_ptr<const ParameterForm> parameters;  // set only while `device` and `shared` are not
  std::shared_ptr<const gpu::Laws> shared;  // set only while `device` and `parameters` are not
  std::size_t per = 0;                      // particles per shared law (with `shared`)
  std::shared_ptr<const IndexedForm> indexed;  // set only while `device`, `parameters` and `shared` are not
  Bound device_error = 0.0;  // pending where an observation's bound is still on the device (bound.hpp)
  bool device_nonnegative = false;  // device laws known to lie on [0, inf) without reading them back
  bool empty() const { return host.empty() && !device && !parameters && !shared && !indexed; }
  void clear() {
    host.clear();
    device.reset();
    parameters.reset();
    shared.reset();
    per = 0;
    indexed.reset();
    device_error = 0.0;
    device_nonnegative = false;
  }
  /// The largest error bound of the laws.
  double error() const;
  std::size_t bytes() const;
};

/// Whether x's laws are host Pmfs (x.host), neither on the device nor in parameter form nor shared nor indexed.
inline bool on_host(const Laws& x) { return !x.device && !x.parameters && !x.shared && !x.indexed; }


struct IndexedForm {
  std::shared_ptr<const gpu::Laws> table;  // K laws, on the device or (a small table) on the host
  Values index;                            // particle i's law is table[index_i]
  std::optional<std::int64_t> hi;          // a bound on every value of the table, where known
};

struct ParameterForm {
  gpu::ParameterFamily family;
  Values n;
  gpu::Column<double> a, b;  // b: beta-binomial only (empty for a binomial)
  std::optional<double> same_a;  // where known: the one value of a in every particle (a binomial's one probability)
  gpu::ParameterLaws laws() const {
    return {family, *n, a, family == gpu::ParameterFamily::binomial ? a : b, n.bound()};
  }
};

/// Per-particle conjugate parameters where the graph keeps them: Beta(a, b) or Gamma(shape a, rate b) as two columns,
/// or Dirichlet(alpha) as one vector per particle.
struct Params {
  gpu::Column<double> a, b;
  gpu::Vectors dirichlet;
};

/// A log-likelihood per particle where the graph keeps it, and the largest relative error bound of the likelihoods
/// (from truncated laws).
struct LogLikelihood {
  gpu::Column<double> values;
  Bound error = 0.0;
};

// ---- values -------------------------------------------------------------------------------------------------
Values make_values(const Place& at, const std::vector<std::int64_t>& v);
Values make_values(gpu::Column<std::int64_t> v, bool nonnegative = false);
/// As above, with a bound on the values known to the caller (an operation's values within its input's: a gather,
/// a binomial draw of n trials); ignored on the host.
Values make_values(gpu::Column<std::int64_t> v, bool nonnegative, const gpu::LaterMax& largest);
Values filled_values(const Place& at, std::int64_t v);
std::vector<std::int64_t> to_vector(const Values& v);
/// a x_i + b y_i + c (y may be empty when b = 0); tally::overflow_error outside int64.
Values linear(const Values& x, std::int64_t a, const Values& y, std::int64_t b, std::int64_t c);
LogLikelihood zero_log_likelihood(const Place& at);
/// Adds host log-likelihoods (one per particle, or one for every particle) into ll, in place on the host, staged
/// for a device graph.
void add_host(LogLikelihood& ll, const std::vector<double>& values);

// ---- laws ---------------------------------------------------------------------------------------------------
/// Host Pmfs (one per particle) as laws where `at` keeps them (a device batch carries the largest error bound).
Laws place(const Place& at, Batch<Pmf> host);
/// Device laws with their bound (the largest of the laws') and whether they are known to lie on [0, inf).
Laws device_laws(gpu::Laws laws, Bound error, bool nonnegative = false);
/// P copies of one law (on the device: one law shared by all).
Laws prior(const Place& at, const Pmf& law);
/// One law per group, groups of `per` particles (laws.size() per == at.particles): shared on the device where per > 1,
/// one per particle otherwise.
Laws per_group(const Place& at, const std::vector<Pmf>& laws, std::size_t per);
/// Point masses at v_i.
Laws points(const Place& at, const Values& v);
/// A Markov step's transition matrix as a row-major table where `where` says.
gpu::Table markov_table(const Eigen::MatrixXd& t, gpu::Backend where);
/// An indexed Poisson's rates as a K x 1 table where `where` says.
gpu::Table rates_table(const IndexedPoisson& k, gpu::Backend where);
/// A child law as the population kernels evaluate it (its table, if any, placed where `where` says).
gpu::ChildKernel child_kernel(const ChildLaw& law, gpu::Backend where);
/// A child law per group (Graph::assume(x, std::vector<Thinning>) and the other child laws' forms): particle i's
/// law is laws[i / group_size], all of one kind. For thinnings, keep holds their probabilities, one per particle,
/// where the graph keeps its state (the device's kernels read it); other kinds run on the host, each particle with
/// its group's law. Shared by the node and whatever reads it; resampling keeps particles in their groups, so it
/// never moves.
struct GroupLaws {
  std::vector<ChildLaw> laws;
  std::size_t group_size = 1;
  gpu::Column<double> keep;  // thinnings only (else empty)
  /// The same laws with one particle per group (keep: G probabilities): what laws shared by groups take.
  std::shared_ptr<const GroupLaws> one_per_group;
  const ChildLaw& at(std::size_t i) const { return laws[i / group_size]; }
  bool thinning() const { return !keep.empty(); }
  /// One number per particle on the host that tells the groups' laws apart (a thinning's probability, else the
  /// group's index): what the host paths' distinct_inputs compare.
  std::vector<double> host_key(std::size_t particles) const {
    if (thinning()) return keep.to_host();
    std::vector<double> key(particles);
    for (std::size_t i = 0; i < particles; ++i) key[i] = static_cast<double>(i / group_size);
    return key;
  }
};
/// Particle i's law of a child whose law is `law` in every particle (each null) or one per group (each).
inline const ChildLaw& law_at(const ChildLaw& law, const GroupLaws* each, std::size_t i) {
  return each ? each->at(i) : law;
}
/// Whether particles i and i - 1 (i > 0) have the same law: always with one law; with a law per group, where they are
/// in one group (two groups of equal laws are told apart: only a table's sharing is lost).
inline bool same_law_as_previous(const GroupLaws* each, std::size_t i) { return !each || i % each->group_size != 0; }
/// Whether particles i and j have one law in each (of one group).
inline bool same_law_as(const GroupLaws* each, std::size_t i, std::size_t j) {
  return !each || i / each->group_size == j / each->group_size;
}
/// push, push_realized and condition (below) with particle i's law each.at(i).
Laws push(Place& at, const Laws& x, const GroupLaws& each);
Laws push_realized(Place& at, const Values& x, const GroupLaws& each);
Laws condition(Place& at, const Laws& x, const GroupLaws& each, const Values& y, LogLikelihood& ll);
/// The law of a child y | x ~ law of marginalized x (push) or of realized x (push_realized).
Laws push(Place& at, const Laws& x, const ChildLaw& law);
Laws push_realized(Place& at, const Values& x, const ChildLaw& law);
/// Binomial(n_i, p_i) (a device graph keeps the parameters: p copied).
Laws binomial_laws(Place& at, const Values& n, const gpu::Column<double>& p);
/// The same from a column of p_i the laws take over (no copy: a probability filled for this law alone).
Laws binomial_laws(Place& at, const Values& n, gpu::Column<double>&& p);
/// Binomial(n_i, p) with one p for every particle (a device graph notes that it is one: tabled, state.cpp).
Laws binomial_laws(Place& at, const Values& n, double p);
/// Laws of the family on the device, kept as their parameters (a and b copied); sets at.bound_values where n has no
/// bound yet.
Laws parameter_laws(Place& at, gpu::ParameterFamily family, const Values& n, const gpu::Column<double>& a,
                    const gpu::Column<double>* b);
/// x with its weights, one law per particle: x itself unless it is kept as parameters (then its weights are written)
/// or shared or indexed (then spread over the particles).
Laws dense(const Laws& x);
/// X | Y = y_i for the child Y | X ~ law; adds log P(Y = y_i) to ll.
Laws condition(Place& at, const Laws& x, const ChildLaw& law, const Values& y, LogLikelihood& ll);
/// Device laws x given an observed y_i ~ Binomial(x_i, rho): rho ~ Beta(a_i, b_i) integrated out (b given:
/// gpu::condition_on_beta_thinning) or a known rho_i = a_i (b null: the thinning with q_i = a_i), with the bounds of
/// any device conditioning; domain_error, before anything changes, where x has mass below 0.
Laws condition_on_beta_thinning(Place& at, const Laws& x, const gpu::Column<double>& a, const gpu::Column<double>* b,
                                const Values& y, LogLikelihood& ll);
/// X + sign Y for independent X, Y.
Laws sum(Place& at, const Laws& x, const Laws& y, int sign);
/// X | X + sign Y = z_i; adds log P(X + sign Y = z_i) to ll.
Laws condition_on_sum(Place& at, const Laws& x, const Laws& y, int sign, const Values& z, LogLikelihood& ll);
/// a X + c_i (a = +-1: a shift; otherwise a sparse image made dense).
Laws affine(Place& at, const Laws& x, std::int64_t a, const Values& c);
/// s_x X + s_y Y for Y | X ~ law, enumerated over X; and X given that sum = z_i (adding its log-likelihood). With
/// `each`, particle i's Y | X ~ law_at(law, each, i), on the host (a device graph's laws go there and back).
Laws joint_sum(Place& at, const Laws& x, const ChildLaw& law, int sign_x, int sign_y, const GroupLaws* each = nullptr);
Laws condition_on_joint_sum(Place& at, const Laws& x, const ChildLaw& law, int sign_x, int sign_y, const Values& z,
                            LogLikelihood& ll, const GroupLaws* each = nullptr);
/// Adds log P(X_i = v_i) to ll.
void add_log_mass(const Place& at, const Laws& x, const Values& v, LogLikelihood& ll);
/// Adds 0 where x_i = v_i, -inf elsewhere.
void add_log_equal(const Values& x, const Values& v, LogLikelihood& ll);
/// One draw per particle (the graph's next draw).
Values sample(Place& at, const Laws& x);
/// The laws as Pmfs on the host (a law with no mass, a particle of weight zero, reads as a point mass at its lo).
std::vector<Pmf> to_pmfs(const Laws& x);
/// The same as a batch: uniform where every particle holds one law (a uniform host batch, one shared device law),
/// so that the host reads it once.
Batch<Pmf> host_laws(const Laws& x);
/// Resampling: law / value i becomes that of ancestors[i].
Laws gather(const Laws& x, const gpu::Column<std::size_t>& ancestors);
Values gather(const Values& x, const gpu::Column<std::size_t>& ancestors);
gpu::Column<double> gather(const gpu::Column<double>& x, const gpu::Column<std::size_t>& ancestors);

}  // namespace tally::runtime::detail
