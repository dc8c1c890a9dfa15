// The one dispatch point of the runtime's state operations: host laws by the distributions' algebra (per particle,
// with Pmf's error bounds), device laws by tally::gpu's batched operations (population_ops, population_chain,
// population_children), each with a CPU reference of the same contract.
#include "state.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "distinct.hpp"

#include "tally/distributions/algebra.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"
#include "tally/gpu/indexed_laws.hpp"
#include "tally/gpu/population_children.hpp"
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/sample_batched.hpp"
#include "infinities.hpp"
#include "overloaded.hpp"

namespace tally::runtime::detail {
namespace {

/// Laws shared by blocks of particles (Laws::shared, below).
Place one_per_block(const Place& at, std::size_t per);
Laws shared_by(Laws x, std::size_t per);

}  // namespace

Laws place(const Place& at, Batch<Pmf> host) {
  Laws out;
  if (!at.device()) {
    out.host = std::move(host);
    return out;
  }
  // host laws all equal (joint laws' marginals where every particle holds the same tables; copies share their
  // weights, so most comparisons are O(1)) go to the device once, shared by every particle
  if (!at.sharded && host.size() > 1 && host.size() == at.particles) {
    bool equal = true;  // (a uniform batch holds one law)
    for (std::size_t i = 1; i < host.size() && equal && !host.uniform(); ++i) equal = same_law(host[i], host[0]);
    if (equal) return shared_by(place(one_per_block(at, at.particles), Batch<Pmf>::filled(1, host[0])), at.particles);
  }
  gpu::PmfBatch batch;
  double error = 0.0;
  bool nonnegative = true;
  for (std::size_t i = 0; i < host.size(); ++i) {
    const Pmf& p = host[i];
    batch.push_back(std::span<const double>(p.weights().data(), static_cast<std::size_t>(p.size())), p.lo(),
                    p.log_scale());
    error = std::max(error, p.error_bound());
    nonnegative = nonnegative && p.lo() >= 0;
  }
  out.device = std::make_shared<const gpu::Laws>(gpu::Laws::from_host(std::move(batch), at.where));
  out.device_error = error;
  out.device_nonnegative = nonnegative;
  return out;
}

Laws device_laws(gpu::Laws laws, Bound error, bool nonnegative) {
  Laws out;
  out.device = std::make_shared<const gpu::Laws>(std::move(laws));
  out.device_error = std::move(error);
  out.device_nonnegative = nonnegative;
  return out;
}

namespace {

/// A thinning's or scaled Poisson's parent must be a count: device laws not known to be are checked, as the host's
/// Pmf algebra checks them (tally::domain_error). A box may start below 0 with zeros there (the box of a difference
/// X - M whose support is >= 0, which a host Pmf would have trimmed): then the positive weights decide, in one pass
/// (gpu::support_range), and only a law with positive weight below 0 is an error.
void require_counts(const Laws& x, const char* who) {
  if (!x.device || x.device_nonnegative) return;
  std::vector<std::int64_t> lo;  // (a table of indexed laws may be a batch on the host)
  if (x.device->where() == gpu::Backend::cpu) {
    lo = x.device->host().lo;
  } else {
    const gpu::PmfBatchView v = x.device->view();
    lo.resize(v.count);
    if (v.count > 0) gpu::detail::device_copy(lo.data(), v.lo, v.count * sizeof(std::int64_t), 1);
  }
  if (std::all_of(lo.begin(), lo.end(), [](std::int64_t l) { return l >= 0; })) return;
  const gpu::ValueRange r = gpu::support_range(*x.device);
  if (r.empty() || r.lo >= 0) return;
  const gpu::PmfBatch h = x.device->to_host();  // an error: name the first particle
  for (std::size_t i = 0; i < h.size(); ++i)
    for (std::size_t j = 0; j < h.length(i) && h.lo[i] + static_cast<std::int64_t>(j) < 0; ++j)
      if (h.weights[static_cast<std::size_t>(h.offset[i]) + j] > 0.0 && h.log_scale[i] > -HUGE_VAL)
        tally::detail::fail<domain_error>(who, ": the parent must be a count >= 0, but particle ", i,
                                          "'s support starts at ", h.lo[i] + static_cast<std::int64_t>(j));
}

/// first_copies (distinct.hpp) of the particles' inputs to a host operation: their laws x[i] (and y[i]) and their
/// values v[i] (w[i]), where given.
std::vector<std::size_t> distinct_inputs(const Place& at, const Batch<Pmf>* x, const Batch<Pmf>* y = nullptr,
                                         const std::int64_t* v = nullptr, const double* w = nullptr) {
  const auto hash = [&](std::size_t i) {
    std::uint64_t h = 0;
    if (x) h = mix(h, law_hash((*x)[i]));
    if (y) h = mix(h, law_hash((*y)[i]));
    if (v) h = mix(h, static_cast<std::uint64_t>(v[i]));
    if (w) h = mix(h, std::bit_cast<std::uint64_t>(w[i]));
    return h;
  };
  const auto same = [&](std::size_t i, std::size_t j) {
    return (!x || same_law((*x)[i], (*x)[j])) && (!y || same_law((*y)[i], (*y)[j])) && (!v || v[i] == v[j]) &&
           (!w || std::bit_cast<std::uint64_t>(w[i]) == std::bit_cast<std::uint64_t>(w[j]));
  };
  return first_copies(at.particles, hash, same);
}

/// The host conditionings cond(i) (a tally::Conditioned) computed once per distinct input (`first`): the posteriors
/// (where an observation is impossible, the particle keeps its law prior(i): its weight says so), their
/// log-likelihoods added to ll and its bound raised to theirs.
template <class Cond, class Prior>
Laws host_conditioned(const Place& at, const std::vector<std::size_t>& first, LogLikelihood& ll, Cond cond, Prior prior) {
  auto c = compute_once(first, cond);
  if (c.distinct.size() == 1 && at.particles > 1) {  // one input for every particle: one law, one log-likelihood
    Conditioned one = std::move(c.distinct[0]);
    add_host(ll, {one.log_likelihood});
    ll.error = std::max(ll.error.value(), one.log_likelihood_error);
    return place(at, Batch<Pmf>::uniform(at.particles, one.posterior ? std::move(*one.posterior) : prior(0)));
  }
  std::vector<double> add(at.particles);
  auto out = Batch<Pmf>::make(at.particles, [&](std::size_t i) {
    Conditioned ci = c.take(i);
    add[i] = ci.log_likelihood;
    ll.error = std::max(ll.error.value(), ci.log_likelihood_error);
    return ci.posterior ? std::move(*ci.posterior) : prior(i);
  });
  add_host(ll, add);
  return place(at, std::move(out));
}

/// host_map computing make(i) once per distinct input (`first`, from distinct_inputs): the same laws, copied.
template <class Make>
Laws host_map_once(const Place& at, const std::vector<std::size_t>& first, Make make) {
  return place(at, to_batch(compute_once(first, make), at.particles));
}

Pmf affine_pmf(const Pmf& x, std::int64_t a, std::int64_t c, const Truncation& t) {
  if (a == 1) return shift(x, c);
  if (a == -1) return shift(negate(x), c);
  return to_dense(affine(x, a, c), t);
}

Pmf push_pmf(const Pmf& x, const ChildLaw& law, const Truncation& t) {
  return std::visit(overloaded{[&](const Thinning& k) { return marginal(x, k); },
                               [&](const ScaledPoisson& k) { return marginal(x, k, t); },
                               [&](const IndexedPoisson& k) { return marginal(x, k, t); },
                               [&](const MarkovStep& k) { return marginal(x, k); },
                               [&](const AffineLaw& k) { return affine_pmf(x, k.a, k.c, t); }},
                    law);
}

/// Refuses at once (overflow_error naming the sizes) a joint enumeration over x's support that would take more than
/// t.max_work terms: each value v costs about three tabulations of the child's law given v (its kept range found
/// twice, then its terms), of ~80 standard deviations each (fuzz/corpus/engine/regress-slow-*: a Poisson(1.25 X) child
/// of an X over 7843 values took seconds per particle).
void check_joint_work(const Pmf& x, const ChildLaw& law, const Truncation& t, const char* who) {
  const auto width = [&](std::int64_t v) -> double {
    const double n = static_cast<double>(v);
    return std::visit(overloaded{[&](const Thinning& k) {
                                   return std::min(n + 1.0, 80.0 * std::sqrt(std::max(0.0, n * k.keep * (1.0 - k.keep))) + 80.0);
                                 },
                                 [&](const ScaledPoisson& k) { return 80.0 * std::sqrt(std::max(0.0, k.scale * n)) + 80.0; },
                                 [&](const IndexedPoisson& k) {
                                   return v >= 0 && v < k.rates.size() ? 80.0 * std::sqrt(k.rates[v]) + 80.0 : 1.0;
                                 },
                                 [&](const MarkovStep& k) { return static_cast<double>(k.transition.cols()); },
                                 [&](const AffineLaw&) { return 1.0; }},
                      law);
  };
  double work = 0.0;
  for (std::int64_t j = 0; j < x.size(); ++j)
    if (x.weights()[j] != 0.0) work += 3.0 * width(x.lo() + j);
  if (work > static_cast<double>(t.max_work))
    tally::detail::fail<overflow_error>(who, ": enumerating a parent of ", x.size(), " values with its child needs about ",
                                        work, " terms, more than max_work = ", t.max_work, " (raise Truncation::max_work)");
}

Conditioned pull_pmf(const Pmf& x, const ChildLaw& law, std::int64_t y) {
  return std::visit(overloaded{[&](const AffineLaw& k) { return condition_affine(x, k.a, k.c, y); },
                               [&](const auto& k) { return condition(x, k, y); }},
                    law);
}

}  // namespace

gpu::Table markov_table(const Eigen::MatrixXd& t, gpu::Backend where) {
  // Eigen is column-major; the table is row-major
  std::vector<double> rows(static_cast<std::size_t>(t.size()));
  for (Eigen::Index r = 0; r < t.rows(); ++r)
    for (Eigen::Index c = 0; c < t.cols(); ++c) rows[static_cast<std::size_t>(r * t.cols() + c)] = t(r, c);
  return gpu::Table::from_host(rows, static_cast<std::size_t>(t.rows()), static_cast<std::size_t>(t.cols()), where);
}

gpu::Table rates_table(const IndexedPoisson& k, gpu::Backend where) {
  const auto K = static_cast<std::size_t>(k.rates.size());
  return gpu::Table::from_host(std::span<const double>(k.rates.data(), K), K, 1, where);
}

gpu::ChildKernel child_kernel(const ChildLaw& law, gpu::Backend where) {
  return std::visit(
      overloaded{[&](const Thinning& k) { return gpu::ChildKernel::binomial(k.keep); },
                 [&](const ScaledPoisson& k) { return gpu::ChildKernel::scaled_poisson(k.scale); },
                 [&](const IndexedPoisson& k) { return gpu::ChildKernel::indexed_poisson(rates_table(k, where)); },
                 [&](const MarkovStep& k) { return gpu::ChildKernel::categorical(markov_table(k.transition, where)); },
                 [&](const AffineLaw& k) { return gpu::ChildKernel::affine(k.a, k.c); }},
      law);
}

namespace {

/// The error bound of a mixture over laws with bound e: the Poisson kinds drop at most the tolerance of each law.
Bound mixed_error(const gpu::ChildKernel& k, const Bound& e, const Truncation& t) {
  if (!k.poisson()) return e;
  const double tol = t.tolerance;
  return Bound::combine(e, e, [tol](double a, double) { return a + tol * (1.0 + a); });
}

/// x's laws as host Pmfs (copied back from the device where they are there), each with x's bound.
Laws host_copy(const Laws& x) {
  std::vector<Pmf> pmfs = to_pmfs(x);
  Laws out;
  out.host = Batch<Pmf>::make(pmfs.size(), [&](std::size_t i) { return std::move(pmfs[i]); });
  return out;
}

/// Whether the groups' laws are of one kind with tables of one shape (what stacks into one device table).
bool stackable(const GroupLaws& each) {
  if (each.laws.empty()) return false;
  const ChildLaw& first = each.laws[0];
  return std::all_of(each.laws.begin(), each.laws.end(), [&](const ChildLaw& law) {
    if (law.index() != first.index()) return false;
    if (auto* r = std::get_if<IndexedPoisson>(&law)) return r->rates.size() == std::get<IndexedPoisson>(first).rates.size();
    if (auto* m = std::get_if<MarkovStep>(&law)) {
      const Eigen::MatrixXd& t = std::get<MarkovStep>(first).transition;
      return m->transition.rows() == t.rows() && m->transition.cols() == t.cols();
    }
    return true;
  });
}

/// The groups' K x 1 tables of log-likelihoods of one observed value y, stacked (group g's K entries from g K): a
/// Markov step's log T_{k, y} or an indexed Poisson's log Pois(y; r_k) (condition_on_states' tables); none for other
/// kinds.
std::optional<gpu::Table> group_state_log_likelihoods(const GroupLaws& each, std::int64_t y, gpu::Backend where) {
  if (!stackable(each) || !(std::holds_alternative<MarkovStep>(each.laws[0]) ||
                            std::holds_alternative<IndexedPoisson>(each.laws[0])))
    return std::nullopt;
  std::vector<double> stacked;
  for (const ChildLaw& law : each.laws) {
    const gpu::Table l =
        std::holds_alternative<MarkovStep>(law)
            ? gpu::markov_state_log_likelihoods(markov_table(std::get<MarkovStep>(law).transition, gpu::Backend::cpu), y,
                                                gpu::Backend::cpu)
            : gpu::poisson_state_log_likelihoods(rates_table(std::get<IndexedPoisson>(law), gpu::Backend::cpu), y,
                                                 gpu::Backend::cpu);
    stacked.insert(stacked.end(), l.values.host().begin(), l.values.host().end());
  }
  return gpu::Table::from_host(stacked, stacked.size(), 1, where);
}

/// The groups' Markov tables stacked (group g's K rows from g K), for markov_rows of realized states; none for
/// other kinds.
std::optional<gpu::Table> group_markov_table(const GroupLaws& each, gpu::Backend where) {
  if (!stackable(each) || !std::holds_alternative<MarkovStep>(each.laws[0])) return std::nullopt;
  std::vector<double> stacked;
  std::size_t cols = 0;
  for (const ChildLaw& law : each.laws) {
    const gpu::Table t = markov_table(std::get<MarkovStep>(law).transition, gpu::Backend::cpu);
    stacked.insert(stacked.end(), t.values.host().begin(), t.values.host().end());
    cols = t.cols;
  }
  return gpu::Table::from_host(stacked, stacked.size() / cols, cols, where);
}

/// The device's child for a law per group: set g the child of group g, for the `laws` laws of x (one per particle of
/// each group, or one per group); none where the groups' laws have no such form (affine maps, tables of several
/// shapes), which stay on the host.
std::optional<gpu::ChildKernel> group_kernel(const GroupLaws& each, std::size_t laws, gpu::Backend where) {
  if (!stackable(each) || std::holds_alternative<AffineLaw>(each.laws[0]) ||
      laws != each.laws.size() * each.group_size)
    return std::nullopt;
  std::vector<gpu::ChildKernel> sets;
  sets.reserve(each.laws.size());
  for (const ChildLaw& law : each.laws) sets.push_back(child_kernel(law, gpu::Backend::cpu));
  return gpu::ChildKernel::per_set(sets, each.group_size, where);
}

/// s_x X + s_y Y for a child Y | X of device laws X (gpu::mix), with its error bound.
Laws device_mix(const Place& at, const Laws& x, const gpu::ChildKernel& k, int sign_x, int sign_y) {
  const bool nonnegative = sign_x >= 0 && sign_y > 0 && (sign_x == 0 || x.device_nonnegative) &&
                           (k.kind != gpu::ChildKernel::Kind::affine || (k.a > 0 && k.c >= 0 && x.device_nonnegative));
  return device_laws(gpu::mix(*x.device, k, sign_x, sign_y, at.truncation.tolerance, at.truncation.max_size),
                     mixed_error(k, x.device_error, at.truncation), nonnegative);
}
Laws device_mix(const Place& at, const Laws& x, const ChildLaw& law, int sign_x, int sign_y) {
  return device_mix(at, x, child_kernel(law, at.where), sign_x, sign_y);
}

/// The bounds from rho = e max_i M_i / L_i (conditioned(), below) on the posterior, min(2, 2 rho) and at least e,
/// and on ll, -log1p(-rho). The ratio stays on the device: both bounds are read (and the ratio copied back) only when
/// asked; their floors are e and ll's bound before.
Laws bounded(gpu::Laws posterior, const Bound& e, gpu::DeviceScalar ratio, LogLikelihood& ll, bool nonnegative) {
  const auto likelihood = [](double rho) {
    return rho < 1.0 ? -std::log1p(-rho) : std::numeric_limits<double>::infinity();
  };
  const auto rho = [=] { return e.value() * std::max(0.0, ratio.value()); };
  const auto likelihood_bound = [=] { return likelihood(rho()); };
  const auto posterior_bound = [=] { return std::max(e.value(), std::min(2.0, 2.0 * rho())); };
  if (ratio.known() && !e.pending()) {  // (a host graph's: no formula kept)
    ll.error = larger(ll.error, likelihood_bound());
    return device_laws(std::move(posterior), posterior_bound(), nonnegative);
  }
  ll.error = larger(ll.error, Bound::later(0.0, likelihood_bound, e.depth() + 1));
  return device_laws(std::move(posterior), Bound::later(e.floor(), posterior_bound, e.depth() + 1), nonnegative);
}

/// A device conditioning (op adds each particle's log-likelihood into ll and returns the posterior laws) with its
/// error bounds set as tally::condition sets them one law at a time: from the prior's bound e, rho = e max_i M_i /
/// L_i (gpu::max_mass_ratio over x's laws, times y's for a sum; computed, one number read back, only where e > 0),
/// the likelihood's relative bound -log1p(-rho) and the posterior's min(2, 2 rho) (at least e: an impossible
/// particle keeps its law).
template <class Op>
Laws conditioned(const Laws& x, const gpu::Laws* y, const Bound& e, LogLikelihood& ll, bool nonnegative, Op op) {
  if (e.zero()) return device_laws(op(), 0.0, nonnegative);
  const gpu::Column<double> before = ll.values.clone();
  gpu::Laws posterior = op();
  return bounded(std::move(posterior), e, gpu::max_mass_ratio_later(*x.device, y, before, ll.values), ll, nonnegative);
}

/// conditioned() for an observed thinning, whose pass over the prior laws also reports their masses (no second
/// pass for the bound). At a table's place (at.holders), the bound is taken over the laws some particle holds.
Laws conditioned_on_thinning(const Place& at, const Laws& x, const gpu::Column<std::int64_t>& y, double q,
                             LogLikelihood& ll) {
  const Bound& e = x.device_error;
  if (e.zero()) return device_laws(gpu::condition_on_thinning(*x.device, y, q, ll.values), 0.0, true);
  const gpu::Column<double> before = ll.values.clone();
  auto mass = gpu::Column<double>::allocate(ll.values.where(), x.device->size(), "tally::runtime: observe");
  gpu::Laws posterior = gpu::condition_on_thinning(*x.device, y, q, ll.values, &mass);
  const gpu::DeviceScalar ratio = at.holders ? gpu::max_mass_ratio_later(mass, before, ll.values, *at.holders)
                                             : gpu::max_mass_ratio_later(mass, before, ll.values);
  return bounded(std::move(posterior), e, ratio, ll, true);
}

/// y, or -y in `storage` (sign < 0).
const gpu::Laws& signed_laws(const gpu::Laws& y, int sign, gpu::Laws& storage) {
  if (sign > 0) return y;
  storage = gpu::negate(y);
  return storage;
}

// ---- laws shared by blocks of particles (Laws::shared) ----
// An operation runs once per block where every input is the same within blocks: shared laws (blocks of x.per: P or
// S), a constant (all P), a law per group (S), with S dividing P; the blocks are the smallest of its inputs'.

/// The place of one particle per block of `per`.
Place one_per_block(const Place& at, std::size_t per) {
  Place sub = at;
  sub.particles = at.particles / per;
  sub.holders = nullptr;
  return sub;
}

/// x (shared by blocks of x.per, a multiple of per) as one device law per block of `per`.
Laws per_block(const Laws& x, std::size_t per) {
  Laws out = x;
  out.device = x.per == per ? x.shared : std::make_shared<const gpu::Laws>(gpu::repeated(*x.shared, x.per / per));
  out.shared.reset();
  out.per = 0;
  return out;
}

/// v (the same in every particle) as one value per block of `sub`.
Values per_block(const Place& sub, const Values& v) { return filled_values(sub, *v.same); }

/// A result computed once per block of `per` particles, shared by them (where it is itself shared by blocks of
/// blocks, by blocks of both).
Laws shared_by(Laws x, std::size_t per) {
  if (x.shared) {
    x.per *= per;
    return x;
  }
  if (!x.device) x = dense(x);  // (kept as parameters: their weights written, once per block)
  x.shared = std::move(x.device);
  x.per = per;
  return x;
}

/// An operation once per block of `per` particles, op(sub) on one particle per block, its result shared by the block.
template <class Op>
Laws mapped_per_block(Place& at, std::size_t per, Op op) {
  Place sub = one_per_block(at, per);
  Laws out = shared_by(op(sub), per);
  at.bound_values = at.bound_values || sub.bound_values;
  return out;
}

/// An observation's operation once per block: op(sub, sub_ll) with sub_ll zero, its values then added to each
/// particle of their block in ll, and its bound carried over.
template <class Op>
Laws observed_per_block(Place& at, std::size_t per, LogLikelihood& ll, Op op) {
  Place sub = one_per_block(at, per);
  LogLikelihood block{gpu::filled(0.0, sub.particles, sub.where), ll.error};
  Laws out = shared_by(op(sub, block), per);
  gpu::add_repeated(ll.values, block.values, per);
  ll.error = std::move(block.error);
  at.bound_values = at.bound_values || sub.bound_values;
  return out;
}

// ---- laws chosen from a table by an index (Laws::indexed) ----
// An operation whose other inputs are the same in every particle runs once per law of the table; its result is
// indexed as its input was.

/// The place of the table's laws, one particle each, where the table lives (a small one on the host).
Place one_per_law(const Place& at, const Laws& x) {
  Place sub = at;
  sub.particles = x.indexed->table->size();
  sub.where = x.indexed->table->where();
  sub.holders = nullptr;
  return sub;
}

/// x's table as laws of their own, one per state.
Laws table_of(const Laws& x) {
  Laws out;
  out.device = x.indexed->table;
  out.device_error = x.device_error;
  out.device_nonnegative = x.device_nonnegative;
  return out;
}

/// The laws r of x's table's states, indexed as x is (hi: a bound on their values, where known).
Laws indexed_as(Laws r, const Laws& x, std::optional<std::int64_t> hi = std::nullopt) {
  r = dense(r);
  Laws out;
  out.indexed = std::make_shared<const IndexedForm>(IndexedForm{std::move(r.device), x.indexed->index, hi});
  out.device_error = std::move(r.device_error);
  out.device_nonnegative = r.device_nonnegative;
  return out;
}

/// An operation once per law of x's table, op(sub, table).
template <class Op>
Laws mapped_per_law(Place& at, const Laws& x, Op op) {
  Place sub = one_per_law(at, x);
  Laws out = indexed_as(op(sub, table_of(x)), x);
  at.bound_values = at.bound_values || sub.bound_values;
  return out;
}

/// An observation's operation once per law of x's table, op(sub, table, sub_ll) with sub_ll zero, its values then
/// added to each particle of that law in ll; the laws' support can only shrink (their bound is kept).
template <class Op>
Laws observed_per_law(Place& at, const Laws& x, LogLikelihood& ll, Op op) {
  Place sub = one_per_law(at, x);
  sub.holders = &*x.indexed->index;  // (bounds over the laws held)
  LogLikelihood table{gpu::filled(0.0, sub.particles, sub.where), ll.error};
  Laws out = indexed_as(op(sub, table_of(x), table), x, x.indexed->hi);
  gpu::add_indexed(ll.values, table.values, *x.indexed->index);
  ll.error = std::move(table.error);
  at.bound_values = at.bound_values || sub.bound_values;
  return out;
}

/// The largest table of indexed laws kept on the host (K states x C values): its laws' operations are a few
/// thousand host operations, cheaper than a kernel launch (about 5 us of the host's time each).
constexpr Eigen::Index host_table_entries = 4096;

/// The values 0 .. k - 1, where `at` keeps its state.
Values states(const Place& at, std::size_t k) {
  std::vector<std::int64_t> v(k);
  for (std::size_t j = 0; j < k; ++j) v[j] = static_cast<std::int64_t>(j);
  return make_values(at, v);
}

/// The most laws a table made by tabled() holds, and the fewest particles a law of it must stand for on average.
constexpr std::size_t tabled_laws_most = 4096;
constexpr std::size_t particles_per_tabled_law = 8;

/// Device laws Binomial(n_i, q) kept as parameters, with one q in every particle (ParameterForm::same_a) and
/// counts 0 <= n_i <= b, b known on the host, as indexed laws: the table of the b + 1 laws Binomial(k, q),
/// k = 0 .. b, and n as the index. Particles with the same count hold the same law, so an operation whose other
/// inputs are the same in every particle (a law every particle shares, one observed value) is done once per count,
/// not once per particle. None where the table would not be much smaller than the particles' laws (more than
/// P / particles_per_tabled_law or tabled_laws_most laws), for a shard (shards exchange dense laws), for
/// beta-binomial laws and for probabilities that differ between particles.
std::optional<Laws> tabled(const Place& at, const Laws& x) {
  const ParameterForm* f = x.parameters.get();
  if (f == nullptr || !at.device() || at.sharded || f->family != gpu::ParameterFamily::binomial || !f->same_a ||
      !f->n.nonnegative)
    return std::nullopt;
  const std::optional<std::int64_t> b = f->n.bound();
  if (!b || *b < 0) return std::nullopt;
  const auto laws = static_cast<std::size_t>(*b) + 1;
  if (laws > tabled_laws_most || laws * particles_per_tabled_law > at.particles) return std::nullopt;
  const Values k = states(at, laws);
  Laws out;
  out.indexed = std::make_shared<const IndexedForm>(IndexedForm{
      std::make_shared<const gpu::Laws>(gpu::binomial_laws(*k, gpu::filled(*f->same_a, laws, at.where), *b)), f->n,
      *b});
  out.device_nonnegative = true;
  return out;
}

/// Whether x is one law that every particle shares.
bool one_for_all(const Place& at, const Laws& x) { return x.shared && x.per == at.particles && x.shared->size() == 1; }

}  // namespace

void add_host(LogLikelihood& ll, const std::vector<double>& values) {
  const bool one = values.size() == 1;  // the same for every particle
  if (ll.values.where() == gpu::Backend::cpu) {
    for (std::size_t i = 0; i < ll.values.size(); ++i) ll.values.host()[i] += values[one ? 0 : i];
    return;
  }
  gpu::add_to(ll.values, one ? gpu::filled(values[0], ll.values.size(), ll.values.where())
                             : gpu::Column<double>::from_host(values, ll.values.where()));
}

// ---- Laws, Values ---------------------------------------------------------------------------------------------
double Laws::error() const {
  if (device || shared || indexed) return device_error;
  double e = 0.0;
  for (std::size_t i = 0; i < (host.uniform() ? 1 : host.size()); ++i) e = std::max(e, host[i].error_bound());
  return e;
}

std::size_t Laws::bytes() const {
  if (device) return device->bytes();
  if (shared) return shared->bytes();
  if (indexed) return indexed->table->bytes() + indexed->index.column->bytes();
  if (parameters) return parameters->n.column->bytes() + parameters->a.bytes() + parameters->b.bytes();
  std::size_t b = 0;
  for (std::size_t i = 0; i < (host.uniform() ? 1 : host.size()); ++i) b += 8 * static_cast<std::size_t>(host[i].size()) + 24;
  return host.empty() ? 0 : b + 8;  // as gpu::Laws::bytes counts them (a law every particle holds: once)
}

Values make_values(const Place& at, const std::vector<std::int64_t>& v) {
  return make_values(gpu::Column<std::int64_t>::from_host(v, at.where),
                     std::all_of(v.begin(), v.end(), [](std::int64_t k) { return k >= 0; }));
}
Values make_values(gpu::Column<std::int64_t> v, bool nonnegative) {
  return make_values(std::move(v), nonnegative, gpu::LaterMax());
}
Values make_values(gpu::Column<std::int64_t> v, bool nonnegative, const gpu::LaterMax& largest) {
  const bool device = v.where() == gpu::Backend::cuda;
  return Values{std::make_shared<const gpu::Column<std::int64_t>>(std::move(v)), nonnegative,
                device ? std::make_shared<gpu::LaterMax>(largest) : nullptr, std::nullopt};
}
Values filled_values(const Place& at, std::int64_t v) {
  Values out = make_values(gpu::filled(v, at.particles, at.where), v >= 0, gpu::LaterMax(v));
  out.same = v;
  return out;
}
std::vector<std::int64_t> to_vector(const Values& v) { return v.column->to_host(); }

Values linear(const Values& x, std::int64_t a, const Values& y, std::int64_t b, std::int64_t c) {
  Values out = y.empty() ? make_values(gpu::linear(*x, a, *x, 0, c), x.nonnegative && a >= 0 && c >= 0)
                         : make_values(gpu::linear(*x, a, *y, b, c),
                                       x.nonnegative && y.nonnegative && a >= 0 && b >= 0 && c >= 0);
  // a x + b y + c of constants is a constant (gpu::linear refused an overflow above)
  std::int64_t ax = 0, by = 0, sum = 0, v = 0;
  if (x.same && (y.empty() || y.same) && !__builtin_mul_overflow(a, *x.same, &ax) &&
      !__builtin_mul_overflow(y.empty() ? 0 : b, y.empty() ? 0 : *y.same, &by) && !__builtin_add_overflow(ax, by, &sum) &&
      !__builtin_add_overflow(sum, c, &v))
    out.same = v;
  return out;
}

LogLikelihood zero_log_likelihood(const Place& at) { return {gpu::filled(0.0, at.particles, at.where), 0.0}; }

// ---- laws ---------------------------------------------------------------------------------------------------
Laws prior(const Place& at, const Pmf& law) {
  Laws out;
  if (!at.device()) {
    out.host = Batch<Pmf>::uniform(at.particles, law);
    return out;
  }
  // one law, shared by every particle until something per particle touches it (shared with one particle too: the
  // shards of a population hold the same forms of laws, whatever their sizes)
  return shared_by(device_laws(gpu::broadcast(std::span<const double>(law.weights().data(), static_cast<std::size_t>(law.size())),
                                              law.lo(), law.log_scale(), 1, at.where),
                               law.error_bound(), law.lo() >= 0),
                   at.particles);
}

Laws per_group(const Place& at, const std::vector<Pmf>& laws, std::size_t per) {
  if (!at.device() || per == 1) return place(at, Batch<Pmf>::make(at.particles, [&](std::size_t i) { return laws[i / per]; }));
  return shared_by(place(one_per_block(at, per), Batch<Pmf>::make(laws.size(), [&](std::size_t k) { return laws[k]; })),
                   per);
}

Laws points(const Place& at, const Values& v) {
  if (at.device() && v.same)  // a constant: one point mass shared by every particle
    return shared_by(device_laws(gpu::point_laws(gpu::filled(*v.same, 1, at.where)), 0.0, v.nonnegative), at.particles);
  if (at.device()) return device_laws(gpu::point_laws(*v), 0.0, v.nonnegative);
  Laws out;
  out.host = Batch<Pmf>::make(at.particles, [&](std::size_t i) { return Pmf::point(v[i]); });
  return out;
}

Laws push(Place& at, const Laws& x, const ChildLaw& law) {
  if (x.shared) return mapped_per_block(at, x.per, [&](Place& sub) { return push(sub, per_block(x, x.per), law); });
  if (x.indexed) return mapped_per_law(at, x, [&](Place& sub, const Laws& t) { return push(sub, t, law); });
  if (x.parameters) return push(at, dense(x), law);
  if (x.device) {
    if (auto* t = std::get_if<Thinning>(&law)) {
      require_counts(x, "tally::runtime: Binomial(x, q)");
      return device_laws(gpu::thin(*x.device, t->keep), x.device_error, true);
    }
    if (auto* m = std::get_if<MarkovStep>(&law))
      return device_laws(gpu::markov_step(*x.device, markov_table(m->transition, at.where)), x.device_error, true);
    if (auto* f = std::get_if<AffineLaw>(&law)) return affine(at, x, f->a, filled_values(at, f->c));
    return device_mix(at, x, law, 0, 1);  // scaled and indexed Poisson mixtures
  }
  const Batch<Pmf>& h = x.host;
  return host_map_once(at, distinct_inputs(at, &h), [&](std::size_t i) { return push_pmf(h[i], law, at.truncation); });
}

Laws push_realized(Place& at, const Values& x, const ChildLaw& law) {
  if (at.device()) {
    if (auto* t = std::get_if<Thinning>(&law)) return binomial_laws(at, x, t->keep);
    if (auto* m = std::get_if<MarkovStep>(&law)) {
      const Eigen::MatrixXd& matrix = m->transition;
      if (at.sharded)  // (shards exchange dense laws)
        return device_laws(gpu::markov_rows(*x, markov_table(matrix, at.where)), 0.0, true);
      // one law per state, each particle's chosen by its state: K rows for P particles, made once per matrix and
      // kept on the host where small (their work then costs no launch: the device's kernels take them along)
      StateRows& cache = *at.state_rows;
      if (!cache.rows || cache.transition.rows() != matrix.rows() || cache.transition.cols() != matrix.cols() ||
          cache.transition != matrix) {
        Place table_at = at;
        table_at.where = matrix.size() <= host_table_entries ? gpu::Backend::cpu : at.where;
        const auto k = static_cast<std::size_t>(matrix.rows());
        cache.rows = std::make_shared<const gpu::Laws>(
            gpu::markov_rows(*states(table_at, k), markov_table(matrix, table_at.where)));
        cache.transition = matrix;
      }
      const auto k = static_cast<std::int64_t>(matrix.rows());
      if (!(x.nonnegative && x.bound() && *x.bound() < k))
        gpu::check_indices(*x, static_cast<std::size_t>(k), "tally::runtime: MarkovStep of a realized state");
      Laws state;
      state.indexed = std::make_shared<const IndexedForm>(
          IndexedForm{cache.rows, x, static_cast<std::int64_t>(matrix.cols()) - 1});
      state.device_nonnegative = true;
      return state;
    }
    if (auto* f = std::get_if<AffineLaw>(&law)) return points(at, linear(x, f->a, {}, 0, f->c));
    return push(at, points(at, x), law);
  }
  const std::int64_t* v = x.column->host().data();
  return host_map_once(at, distinct_inputs(at, nullptr, nullptr, v),
                       [&](std::size_t i) { return push_pmf(Pmf::point(x[i]), law, at.truncation); });
}

Laws push(Place& at, const Laws& x, const GroupLaws& each) {
  const std::size_t per = each.group_size;  // shared laws (by groups or all) with a law per group: once per group
  if (x.shared && each.one_per_group && x.per % per == 0)
    return mapped_per_block(at, per, [&](Place& sub) { return push(sub, per_block(x, per), *each.one_per_group); });
  if (x.parameters || x.shared || x.indexed) return push(at, dense(x), each);
  if (x.device && each.thinning()) {
    require_counts(x, "tally::runtime: Binomial(x, q)");
    return device_laws(gpu::thin(*x.device, each.keep), x.device_error, true);
  }
  if (x.device) {  // other kinds per group: one kernel over the groups' children
    if (auto k = group_kernel(each, x.device->size(), at.where)) return device_mix(at, x, *k, 0, 1);
    return push(at, host_copy(x), each);  // (affine maps per group: on the host, the laws back after)
  }
  const Batch<Pmf>& h = x.host;
  const auto key = each.host_key(at.particles);
  return host_map_once(at, distinct_inputs(at, &h, nullptr, nullptr, key.data()),
                       [&](std::size_t i) { return push_pmf(h[i], each.at(i), at.truncation); });
}

Laws push_realized(Place& at, const Values& x, const GroupLaws& each) {
  if (each.thinning()) return binomial_laws(at, x, each.keep);
  if (at.device()) {  // a Markov step per group: each particle its group's row; other kinds by their mixtures
    if (at.particles == each.laws.size() * each.group_size)
      if (auto t = group_markov_table(each, at.where))
        return device_laws(gpu::markov_rows(*x, *t, each.group_size), 0.0, true);
    return push(at, points(at, x), each);
  }
  const std::int64_t* v = x.column->host().data();
  const auto key = each.host_key(at.particles);
  return host_map_once(at, distinct_inputs(at, nullptr, nullptr, v, key.data()),
                       [&](std::size_t i) { return push_pmf(Pmf::point(x[i]), each.at(i), at.truncation); });
}

Laws binomial_laws(Place& at, const Values& n, const gpu::Column<double>& p) {
  if (at.device()) return parameter_laws(at, gpu::ParameterFamily::binomial, n, p, nullptr);
  return host_map_once(at, distinct_inputs(at, nullptr, nullptr, n.column->host().data(), p.host().data()),
                       [&](std::size_t i) { return push_pmf(Pmf::point(n[i]), Thinning(p.host()[i]), at.truncation); });
}

namespace {
/// The parameter laws of `form` (its family and columns set), n's bound noted.
Laws parameter_laws_of(Place& at, std::shared_ptr<ParameterForm> form) {
  if (!form->n.bound()) at.bound_values = true;  // this law's lengths will be read back: later ones need not be
  Laws out;
  out.parameters = std::move(form);
  out.device_nonnegative = true;
  return out;
}
}  // namespace

Laws binomial_laws(Place& at, const Values& n, gpu::Column<double>&& p) {
  if (!at.device()) return binomial_laws(at, n, static_cast<const gpu::Column<double>&>(p));
  auto form = std::make_shared<ParameterForm>();  // kept as their parameters, p taken over
  form->family = gpu::ParameterFamily::binomial;
  form->n = n;
  form->a = std::move(p);
  return parameter_laws_of(at, std::move(form));
}

Laws binomial_laws(Place& at, const Values& n, double p) {
  if (!at.device()) return binomial_laws(at, n, gpu::filled(p, at.particles, at.where));
  auto form = std::make_shared<ParameterForm>();
  form->family = gpu::ParameterFamily::binomial;
  form->n = n;
  form->a = gpu::filled(p, at.particles, at.where);
  form->same_a = p;
  return parameter_laws_of(at, std::move(form));
}

Laws parameter_laws(Place& at, gpu::ParameterFamily family, const Values& n, const gpu::Column<double>& a,
                    const gpu::Column<double>* b) {
  auto form = std::make_shared<ParameterForm>();
  form->family = family;
  form->n = n;
  if (b == nullptr) {
    form->a = a.clone();
  } else {  // both copied in one launch on the device
    const gpu::Column<double>* both[] = {&a, b};
    auto copied = gpu::copies(both);
    form->a = std::move(copied[0]);
    form->b = std::move(copied[1]);
  }
  return parameter_laws_of(at, std::move(form));
}

Laws dense(const Laws& x) {
  if (x.shared) return per_block(x, 1);
  if (x.indexed)
    return device_laws(gpu::indexed(*x.indexed->table, *x.indexed->index), x.device_error, x.device_nonnegative);
  if (!x.parameters) return x;
  return device_laws(gpu::weights_of(x.parameters->laws()), 0.0, true);
}

Laws condition(Place& at, const Laws& x, const GroupLaws& each, const Values& y, LogLikelihood& ll) {
  const std::size_t per = each.group_size;
  if (x.shared && y.same && each.one_per_group && x.per % per == 0)
    return observed_per_block(at, per, ll, [&](Place& sub, LogLikelihood& l) {
      return condition(sub, per_block(x, per), *each.one_per_group, per_block(sub, y), l);
    });
  if (x.parameters || x.shared || x.indexed) return condition(at, dense(x), each, y, ll);
  if (x.device && each.thinning()) {
    require_counts(x, "tally::runtime: Binomial(x, q)");
    return conditioned(x, nullptr, x.device_error, ll, true,
                       [&] { return gpu::condition_on_thinning(*x.device, *y, each.keep, ll.values); });
  }
  if (x.device) {  // other kinds per group: p(y_i | k) per entry from each group's child, exact
    if (y.same && x.device->size() == each.laws.size() * each.group_size)  // one observed value: each group's
      if (auto l = group_state_log_likelihoods(each, *y.same, at.where))   // likelihood of each state, once
        return conditioned(x, nullptr, x.device_error, ll, true,
                           [&] { return gpu::condition_on_states(*x.device, *l, ll.values, each.group_size); });
    if (auto k = group_kernel(each, x.device->size(), at.where))
      return conditioned(x, nullptr, x.device_error, ll, x.device_nonnegative,
                         [&] { return gpu::condition_on_mix(*x.device, *k, 0, 1, *y, ll.values); });
    return condition(at, host_copy(x), each, y, ll);  // (affine maps per group: on the host)
  }
  const Batch<Pmf>& h = x.host;
  const auto yv = to_vector(y);
  const auto key = each.host_key(at.particles);
  return host_conditioned(
      at, distinct_inputs(at, &h, nullptr, yv.data(), key.data()), ll,
      [&](std::size_t i) { return pull_pmf(h[i], each.at(i), yv[i]); }, [&](std::size_t i) -> const Pmf& { return h[i]; });
}

Laws condition_on_beta_thinning(Place& at, const Laws& x, const gpu::Column<double>& a, const gpu::Column<double>* b,
                                const Values& y, LogLikelihood& ll) {
  if (x.parameters || x.shared || x.indexed) return condition_on_beta_thinning(at, dense(x), a, b, y, ll);
  if (!x.device)
    tally::detail::fail<std::logic_error>("tally::runtime: condition_on_beta_thinning is for device laws (a host graph "
                                     "conditions its distinct laws one at a time)");
  require_counts(x, "tally::runtime: Binomial(x, rho)");
  return conditioned(x, nullptr, x.device_error, ll, true, [&] {
    return b ? gpu::condition_on_beta_thinning(*x.device, *y, a, *b, ll.values)
             : gpu::condition_on_thinning(*x.device, *y, a, ll.values);
  });
}

Laws condition(Place& at, const Laws& x, const ChildLaw& law, const Values& y, LogLikelihood& ll) {
  if (x.shared && y.same)
    return observed_per_block(at, x.per, ll, [&](Place& sub, LogLikelihood& l) {
      return condition(sub, per_block(x, x.per), law, per_block(sub, y), l);
    });
  if (x.indexed && y.same)
    return observed_per_law(at, x, ll, [&](Place& sub, const Laws& t, LogLikelihood& l) {
      return condition(sub, t, law, filled_values(sub, *y.same), l);
    });
  if (x.parameters && y.same)  // counts few values share: once per value (tabled)
    if (auto t = tabled(at, x)) return condition(at, *t, law, y, ll);
  if (x.parameters || x.shared || x.indexed) return condition(at, dense(x), law, y, ll);
  if (x.device) {
    const Bound& e = x.device_error;
    if (auto* t = std::get_if<Thinning>(&law)) {
      require_counts(x, "tally::runtime: Binomial(x, q)");
      return conditioned_on_thinning(at, x, *y, t->keep, ll);
    }
    // one observed value in every particle: the likelihood of each state tabulated once
    if (auto* m = std::get_if<MarkovStep>(&law))
      return conditioned(x, nullptr, e, ll, true, [&] {
        if (y.same)
          return gpu::condition_on_states(
              *x.device,
              gpu::markov_state_log_likelihoods(markov_table(m->transition, gpu::Backend::cpu), *y.same, at.where),
              ll.values);
        return gpu::condition_on_markov(*x.device, markov_table(m->transition, at.where), *y, ll.values);
      });
    if (auto* r = std::get_if<IndexedPoisson>(&law)) {
      return conditioned(x, nullptr, e, ll, true, [&] {
        if (y.same)
          return gpu::condition_on_states(
              *x.device, gpu::poisson_state_log_likelihoods(rates_table(*r, gpu::Backend::cpu), *y.same, at.where),
              ll.values);
        return gpu::condition_on_poisson(*x.device, rates_table(*r, at.where), *y, ll.values);
      });
    }
    // a scaled Poisson or an affine child: the likelihood p(y_i | k) per entry, exact
    return conditioned(x, nullptr, e, ll, x.device_nonnegative, [&] {
      return gpu::condition_on_mix(*x.device, child_kernel(law, at.where), 0, 1, *y, ll.values);
    });
  }
  const Batch<Pmf>& h = x.host;
  const auto yv = to_vector(y);
  return host_conditioned(
      at, distinct_inputs(at, &h, nullptr, yv.data()), ll, [&](std::size_t i) { return pull_pmf(h[i], law, yv[i]); },
      [&](std::size_t i) -> const Pmf& { return h[i]; });
}

namespace {
/// The error bound of a sum of laws with bounds a and b (laws of mass within 1 +- a and 1 +- b): a + b + a b.
Bound sum_error(const Bound& a, const Bound& b) {
  return Bound::combine(a, b, [](double u, double v) { return u + v + u * v; });
}
}  // namespace

Laws sum(Place& at, const Laws& x, const Laws& y, int sign) {
  // counts few values share (tabled) and one law for every particle: once per value, the sums indexed by it
  if (x.parameters && one_for_all(at, y))
    if (auto t = tabled(at, x)) return sum(at, *t, y, sign);
  if (y.parameters && one_for_all(at, x))
    if (auto t = tabled(at, y)) return sum(at, x, *t, sign);
  // (a table kept on the host, a small Markov step's, is spread instead: the shared law lives on the device)
  const auto table_with = [&](const Laws& t, const Laws& all) {
    return t.indexed && one_for_all(at, all) && t.indexed->table->where() == all.shared->where();
  };
  if (table_with(x, y) || table_with(y, x)) {
    const Laws& all = x.indexed ? y : x;
    return mapped_per_law(at, x.indexed ? x : y, [&](Place& sub, const Laws& t) {
      const Laws one = shared_by(per_block(all, all.per), sub.particles);
      return x.indexed ? sum(sub, t, one, sign) : sum(sub, one, t, sign);
    });
  }
  if (x.shared && y.shared) {
    const std::size_t per = std::min(x.per, y.per);
    return mapped_per_block(at, per, [&](Place& sub) { return sum(sub, per_block(x, per), per_block(y, per), sign); });
  }
  if ((x.shared != nullptr) != (y.shared != nullptr)) {
    // one operand shared by blocks of particles (a prior, a law per group), the other one a particle: each block's
    // law is read where it is, not copied to every particle
    const Laws& s = x.shared ? x : y;
    const Laws d = dense(x.shared ? y : x);
    if (d.device) {
      gpu::Laws negated;
      const gpu::Laws& signed_d = x.shared ? signed_laws(*d.device, sign, negated) : *d.device;
      const gpu::Laws& signed_s = x.shared ? *s.shared : signed_laws(*s.shared, sign, negated);
      const Bound e = sum_error(d.device_error, s.device_error);
      return device_laws(gpu::convolve_shared(signed_d, signed_s, s.per), e,
                         sign > 0 && d.device_nonnegative && s.device_nonnegative);
    }
  }
  if (x.parameters || y.parameters || x.shared || y.shared || x.indexed || y.indexed)
    return sum(at, dense(x), dense(y), sign);
  if (x.device && y.device) {
    const Bound e = sum_error(x.device_error, y.device_error);
    gpu::Laws negated;
    return device_laws(gpu::convolve(*x.device, signed_laws(*y.device, sign, negated)), e,
                       sign > 0 && x.device_nonnegative && y.device_nonnegative);
  }
  return host_map_once(at, distinct_inputs(at, &x.host, &y.host), [&](std::size_t i) {
    return sign > 0 ? tally::sum(x.host[i], y.host[i]) : difference(x.host[i], y.host[i]);
  });
}

Laws condition_on_sum(Place& at, const Laws& x, const Laws& y, int sign, const Values& z, LogLikelihood& ll) {
  if (x.parameters && y.parameters)  // one skew diagonal from the parameters: no dense law, an exact posterior
    return device_laws(gpu::condition_on_sum(x.parameters->laws(), y.parameters->laws(), sign, *z, ll.values), 0.0,
                       true);
  if (x.shared && y.shared && z.same) {
    const std::size_t per = std::min(x.per, y.per);
    return observed_per_block(at, per, ll, [&](Place& sub, LogLikelihood& l) {
      return condition_on_sum(sub, per_block(x, per), per_block(y, per), sign, per_block(sub, z), l);
    });
  }
  if (x.parameters || y.parameters || x.shared || y.shared || x.indexed || y.indexed)
    return condition_on_sum(at, dense(x), dense(y), sign, z, ll);
  if (x.device && y.device) {
    // |L - L'| <= M_x M_y (e_x + e_y + 2 e_x e_y) for laws of mass M (tally::condition_on_sum)
    const Bound e =
        Bound::combine(x.device_error, y.device_error, [](double a, double b) { return a + b + 2.0 * a * b; });
    gpu::Laws negated;
    const gpu::Laws& signed_y = signed_laws(*y.device, sign, negated);
    return conditioned(x, y.device.get(), e, ll, x.device_nonnegative,
                       [&] { return gpu::condition_on_sum(*x.device, signed_y, *z, ll.values); });
  }
  return host_conditioned(
      at, distinct_inputs(at, &x.host, &y.host, z.column->host().data()), ll,
      [&](std::size_t i) {
        return sign > 0 ? condition_on_sum(x.host[i], y.host[i], z[i]) : condition_on_difference(x.host[i], y.host[i], z[i]);
      },
      [&](std::size_t i) -> const Pmf& { return x.host[i]; });
}

Laws affine(Place& at, const Laws& x, std::int64_t a, const Values& c) {
  if (x.shared && c.same)
    return mapped_per_block(at, x.per, [&](Place& sub) { return affine(sub, per_block(x, x.per), a, per_block(sub, c)); });
  if (x.indexed && c.same)
    return mapped_per_law(at, x, [&](Place& sub, const Laws& t) { return affine(sub, t, a, filled_values(sub, *c.same)); });
  if (x.parameters || x.shared || x.indexed) return affine(at, dense(x), a, c);
  if (x.device) {
    // a X by a sign, or by a sparse image made dense (|a| > 1); then the shift by c_i, a convolution with the point
    // mass at c_i
    gpu::Laws scaled;
    if (a != 1 && a != -1) scaled = gpu::mix(*x.device, gpu::ChildKernel::affine(a, 0), 0, 1, at.truncation.tolerance, at.truncation.max_size);
    const gpu::Laws& base = a == 1 || a == -1 ? signed_laws(*x.device, static_cast<int>(a), scaled) : scaled;
    return device_laws(gpu::convolve(base, gpu::point_laws(*c)), x.device_error);
  }
  const Batch<Pmf>& h = x.host;
  const auto cv = to_vector(c);
  return host_map_once(at, distinct_inputs(at, &h, nullptr, cv.data()),
                       [&](std::size_t i) { return affine_pmf(h[i], a, cv[i], at.truncation); });
}

/// For each x in the support of X, the law of Y given x, signed and shifted into the law of z; mixed by P(X = x).
Laws joint_sum(Place& at, const Laws& x, const ChildLaw& law, int sign_x, int sign_y, const GroupLaws* each) {
  if (x.shared && (!each || (each->one_per_group && x.per % each->group_size == 0))) {
    const std::size_t per = each ? each->group_size : x.per;
    const GroupLaws* sub_each = each ? each->one_per_group.get() : nullptr;
    return mapped_per_block(at, per,
                            [&](Place& sub) { return joint_sum(sub, per_block(x, per), law, sign_x, sign_y, sub_each); });
  }
  if (x.indexed && !each)
    return mapped_per_law(at, x, [&](Place& sub, const Laws& t) { return joint_sum(sub, t, law, sign_x, sign_y); });
  if (x.parameters || x.shared || x.indexed) return joint_sum(at, dense(x), law, sign_x, sign_y, each);
  if (x.device && each) {
    if (auto k = group_kernel(*each, x.device->size(), at.where)) return device_mix(at, x, *k, sign_x, sign_y);
    return joint_sum(at, host_copy(x), law, sign_x, sign_y, each);
  }
  if (x.device) return device_mix(at, x, law, sign_x, sign_y);
  const Batch<Pmf>& h = x.host;
  const auto key = each ? each->host_key(at.particles) : std::vector<double>{};
  return host_map_once(at, distinct_inputs(at, &h, nullptr, nullptr, each ? key.data() : nullptr), [&](std::size_t i) {
    const Pmf& px = h[i];
    const ChildLaw& law_i = law_at(law, each, i);
    check_joint_work(px, law_i, at.truncation, "tally::runtime: the joint law of a variable and its child");
    std::vector<std::pair<double, Pmf>> parts;  // (weight of x, law of z given x)
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    double error = 0.0;
    for (std::int64_t j = 0; j < px.size(); ++j) {  // (v <= hi; ++v would overflow at INT64_MAX)
      const std::int64_t v = px.lo() + j;
      const double wx = px.weights()[j];
      if (wx == 0.0) continue;
      Pmf z = affine_pmf(push_pmf(Pmf::point(v), law_i, at.truncation), sign_y, sign_x * v, at.truncation);
      lo = std::min(lo, z.lo());
      hi = std::max(hi, z.hi());
      error = std::max(error, z.error_bound());
      parts.emplace_back(wx, std::move(z));
    }
    Eigen::VectorXd w = Eigen::VectorXd::Zero(hi - lo + 1);
    for (const auto& [wx, z] : parts) w.segment(z.lo() - lo, z.size()) += z.weights() * (wx * std::exp(z.log_scale()));
    return Pmf(lo, std::move(w), px.log_scale(), px.error_bound() + error);
  });
}

/// X given s_x X + s_y Y = z: posterior proportional to P(X = x) P(Y = s_y (z - s_x x) | X = x).
Laws condition_on_joint_sum(Place& at, const Laws& x, const ChildLaw& law, int sign_x, int sign_y, const Values& z,
                            LogLikelihood& ll, const GroupLaws* each) {
  if (x.shared && z.same && (!each || (each->one_per_group && x.per % each->group_size == 0))) {
    const std::size_t per = each ? each->group_size : x.per;
    const GroupLaws* sub_each = each ? each->one_per_group.get() : nullptr;
    return observed_per_block(at, per, ll, [&](Place& sub, LogLikelihood& l) {
      return condition_on_joint_sum(sub, per_block(x, per), law, sign_x, sign_y, per_block(sub, z), l, sub_each);
    });
  }
  if (x.indexed && z.same && !each)
    return observed_per_law(at, x, ll, [&](Place& sub, const Laws& t, LogLikelihood& l) {
      return condition_on_joint_sum(sub, t, law, sign_x, sign_y, filled_values(sub, *z.same), l);
    });
  if (x.parameters || x.shared || x.indexed) return condition_on_joint_sum(at, dense(x), law, sign_x, sign_y, z, ll, each);
  if (x.device && each) {
    if (auto k = group_kernel(*each, x.device->size(), at.where))
      return conditioned(x, nullptr, x.device_error, ll, x.device_nonnegative, [&] {
        return gpu::condition_on_mix(*x.device, *k, sign_x, sign_y, *z, ll.values);
      });
    return condition_on_joint_sum(at, host_copy(x), law, sign_x, sign_y, z, ll, each);
  }
  if (x.device)  // p(y | k) evaluated exactly per entry: only X's own bound
    return conditioned(x, nullptr, x.device_error, ll, x.device_nonnegative, [&] {
      return gpu::condition_on_mix(*x.device, child_kernel(law, at.where), sign_x, sign_y, *z, ll.values);
    });
  const Batch<Pmf>& h = x.host;
  const auto zv = to_vector(z);
  const auto cond = [&](std::size_t i) -> Conditioned {
    const Pmf& px = h[i];
    const ChildLaw& law_i = law_at(law, each, i);
    check_joint_work(px, law_i, at.truncation, "tally::runtime: conditioning a variable on a sum with its child");
    Eigen::VectorXd lw(px.size());
    double error = px.error_bound();
    for (std::int64_t j = 0; j < px.size(); ++j) {  // (v <= hi; ++v would overflow at INT64_MAX)
      const std::int64_t v = px.lo() + j;
      const Pmf y = push_pmf(Pmf::point(v), law_i, at.truncation);
      error = std::max(error, px.error_bound() + y.error_bound());
      lw[v - px.lo()] = std::log(px.weights()[v - px.lo()]) + log_pdf(y, sign_y * (zv[i] - sign_x * v));
    }
    const double m = lw.maxCoeff();
    if (m == neg_inf) return {std::nullopt, neg_inf, error};  // impossible: the weight says so
    return {Pmf::from_log(px.lo(), lw, px.error_bound()).normalized(), px.log_scale() + m + std::log((lw.array() - m).exp().sum()),
            error};
  };
  const auto key = each ? each->host_key(at.particles) : std::vector<double>{};
  return host_conditioned(at, distinct_inputs(at, &h, nullptr, zv.data(), each ? key.data() : nullptr), ll, cond,
                          [&](std::size_t i) -> const Pmf& { return h[i]; });
}

void add_log_mass(const Place& at, const Laws& x, const Values& v, LogLikelihood& ll) {
  if (x.shared && v.same) {  // once per block, added to each particle of it
    const Place sub = one_per_block(at, x.per);
    LogLikelihood block{gpu::filled(0.0, sub.particles, sub.where), ll.error};
    add_log_mass(sub, per_block(x, x.per), per_block(sub, v), block);
    gpu::add_repeated(ll.values, block.values, x.per);
    ll.error = std::move(block.error);
    return;
  }
  if (x.indexed && v.same) {  // once per law of the table, added to each particle holding it
    const Place sub = one_per_law(at, x);
    LogLikelihood table{gpu::filled(0.0, sub.particles, sub.where), ll.error};
    add_log_mass(sub, table_of(x), filled_values(sub, *v.same), table);
    gpu::add_indexed(ll.values, table.values, *x.indexed->index);
    ll.error = std::move(table.error);
    return;
  }
  if (x.parameters || x.shared || x.indexed) return add_log_mass(at, dense(x), v, ll);
  if (x.device) {
    ll.error = larger(ll.error, x.device_error);
    gpu::add_log_mass(*x.device, *v, ll.values);
    return;
  }
  for (std::size_t i = 0; i < at.particles; ++i) {
    ll.values.host()[i] += log_pdf(x.host[i], v[i]);
    ll.error = std::max(ll.error.value(), x.host[i].error_bound());
  }
}

void add_log_equal(const Values& x, const Values& v, LogLikelihood& ll) { gpu::add_log_equal(*x, *v, ll.values); }

Values sample(Place& at, const Laws& x) {
  if (x.shared && x.per == at.particles) {
    // one law for every particle: drawn from it alone (gpu::sample_shared gives the draws of its copies), with no
    // copy per particle; a law of no mass (every particle impossible) is left to the general path
    const gpu::PmfBatch one = x.shared->to_host();
    const auto w = one[0];
    if (one.log_scale[0] > -HUGE_VAL && std::any_of(w.begin(), w.end(), [](double v) { return v > 0.0; })) {
      const std::uint64_t k = at.draws;
      // the draws' largest value is at most the law's last of positive weight: known here, without a pass
      std::size_t last = w.size() - 1;
      while (w[last] == 0.0) --last;
      Values drawn = make_values(gpu::sample_shared(w, one.lo[0], at.particles, at.seed, k, at.first_particle, at.where),
                                 x.device_nonnegative, gpu::LaterMax(one.lo[0] + static_cast<std::int64_t>(last)));
      ++at.draws;
      return drawn;
    }
  }
  const std::uint64_t k = at.draws;  // counted once drawn: a failed draw (device memory) is retried with k
  if (x.indexed) {  // each particle's law drawn from in the table: the draws of the spread laws, without them
    const IndexedForm& f = *x.indexed;
    Values drawn = make_values(gpu::sample_indexed(*f.table, *f.index, at.seed, k, at.first_particle),
                               x.device_nonnegative, f.hi ? gpu::LaterMax(*f.hi) : gpu::LaterMax());
    ++at.draws;
    return drawn;
  }
  if (auto t = tabled(at, x)) return sample(at, *t);  // counts few values share: each law's draw table once
  if (x.parameters || x.shared) return sample(at, dense(x));
  if (x.device) {
    Values drawn = make_values(gpu::sample(*x.device, at.seed, k, at.first_particle), x.device_nonnegative);
    ++at.draws;
    return drawn;
  }
  ++at.draws;
  std::vector<std::int64_t> out(at.particles);
  for (std::size_t i = 0; i < at.particles; ++i) {
    const Pmf& p = x.host[i];
    out[i] = gpu::cpu::sample_one(std::span<const double>(p.weights().data(), static_cast<std::size_t>(p.size())),
                                  p.lo(), at.seed, at.first_particle + i, k);
  }
  return make_values(gpu::Column<std::int64_t>::host_values(std::move(out)));
}

Batch<Pmf> host_laws(const Laws& x) {
  if (on_host(x)) return x.host;
  if (x.shared && x.shared->size() == 1) return Batch<Pmf>::uniform(x.per, to_pmfs(per_block(x, x.per))[0]);
  std::vector<Pmf> pmfs = to_pmfs(x);
  return Batch<Pmf>::make(pmfs.size(), [&](std::size_t i) { return std::move(pmfs[i]); });
}

std::vector<Pmf> to_pmfs(const Laws& x) {
  if (x.indexed) {  // the table read back once, each particle's law a copy of its state's (sharing its weights)
    const std::vector<Pmf> table = to_pmfs(table_of(x));
    const std::vector<std::int64_t> index = to_vector(x.indexed->index);
    std::vector<Pmf> out;
    out.reserve(index.size());
    for (const std::int64_t j : index) out.push_back(table.at(static_cast<std::size_t>(j)));
    return out;
  }
  if (x.shared) {  // each law read back once, copied over its block (Pmf copies share their weights)
    const std::vector<Pmf> one = to_pmfs(per_block(x, x.per));
    std::vector<Pmf> out;
    out.reserve(one.size() * x.per);
    for (const Pmf& p : one) out.insert(out.end(), x.per, p);
    return out;
  }
  if (x.parameters) return to_pmfs(dense(x));
  std::vector<Pmf> out;
  if (!x.device) {
    out.reserve(x.host.size());
    for (std::size_t i = 0; i < x.host.size(); ++i) out.push_back(x.host[i]);
    return out;
  }
  const gpu::PmfBatch b = x.device->to_host();
  out.reserve(b.size());
  for (std::size_t i = 0; i < b.size(); ++i) {
    const auto w = b[i];
    if (b.log_scale[i] == neg_inf || std::none_of(w.begin(), w.end(), [](double v) { return v > 0.0; })) {
      out.push_back(Pmf::point(b.lo[i]));  // a particle of weight zero: any law will do
      continue;
    }
    Eigen::VectorXd weights = Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Eigen::Index>(w.size()));
    out.emplace_back(b.lo[i], std::move(weights), b.log_scale[i], x.device_error);
  }
  return out;
}

Laws gather(const Laws& x, const gpu::Column<std::size_t>& ancestors) {
  if (x.shared) return x;  // a resampling keeps particles in their groups: in the blocks that share a law
  Laws out = x;
  if (x.indexed) {  // the states move, not the table
    const IndexedForm& f = *x.indexed;
    out.indexed = std::make_shared<const IndexedForm>(IndexedForm{f.table, gather(f.index, ancestors), f.hi});
    return out;
  }
  if (const ParameterForm* p = x.parameters.get()) {  // the parameters move, not the weights
    auto form = std::make_shared<ParameterForm>();
    form->family = p->family;
    form->n = gather(p->n, ancestors);
    form->a = p->same_a ? gpu::filled(*p->same_a, p->a.size(), p->a.where()) : gpu::gather(p->a, ancestors);
    form->same_a = p->same_a;
    if (p->b.size() > 0) form->b = gpu::gather(p->b, ancestors);
    out.parameters = std::move(form);
    return out;
  }
  if (x.device) {
    out.device = std::make_shared<const gpu::Laws>(gpu::gather(*x.device, ancestors));
    return out;
  }
  std::vector<std::size_t> a = ancestors.host();
  out.host.select(a);
  return out;
}

Values gather(const Values& x, const gpu::Column<std::size_t>& ancestors) {
  if (x.empty() || x.same) return x;  // a constant is the same after any resampling
  return make_values(gpu::gather(*x, ancestors), x.nonnegative);
}

gpu::Column<double> gather(const gpu::Column<double>& x, const gpu::Column<std::size_t>& ancestors) {
  if (x.size() == 0) return {};
  return gpu::gather(x, ancestors);
}

}  // namespace tally::runtime::detail
