// The array operations of a population (P laws or values per node), each on the host or on the device by where
// its operands live: the CPU loops are the reference, the CUDA kernels follow the same rules.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu {

// Every function below runs where its operands are (Backend::cpu: loops on one core; Backend::cuda: one or a few
// kernel launches on the default stream, synchronous where a size must come back to the host, as noted) and
// throws tally::shape_error when operands have different sizes or places. Laws are pmfs with weights in [0, 1]
// and a log-scale, as in PmfBatch; a law with no mass (log_scale -inf) is a particle of weight zero.

/// P copies of one law w_k exp(log_scale) on lo, lo + 1, ... (w non-empty, in [0, 1]).
Laws broadcast(std::span<const double> w, std::int64_t lo, double log_scale, std::size_t count, Backend where);
/// Point masses at v_i (the law of a realized value).
Laws point_laws(const Column<std::int64_t>& v);

/// Binomial(n_i, q_i) on 0 .. n_i (n_i >= 0, q_i in [0, 1]; tally::domain_error otherwise):
/// \f$\log p_i(k) = \log\binom{n_i}{k} + k \log q_i + (n_i - k) \log(1 - q_i)\f$ (lgamma), stored as
/// \f$e^{\log p_i(k) - M_i}\f$ with \f$M_i = \max_k \log p_i(k)\f$ (evaluated at the mode and its neighbours)
/// and log_scale M_i. The weights are written in chunks of 16 of the flat weight array: the lgamma formula at each
/// chunk's first weight (and each law's), the exact ratios \f$p_i(k + 1) / p_i(k)\f$ from there (a relative
/// 1e-14 at most on top of the formula's own rounding; the same chunks and arithmetic on the host and the device).
/// Device: the lengths are scanned and their total read back (one synchronization) before the weights are written;
/// unless the caller knows a bound n_max >= every n_i (tally/gpu/later_max.hpp), in [0, 2^32): then the laws get
/// room for P (n_max + 1) weights (total() is that room; offset[P], the weights in use) and nothing is read back: a
/// bad parameter, or an n_i above n_max, is a deferred check (tally/gpu/deferred_checks.hpp), raised with the same
/// message where the host next waits (at once outside a DeferChecks scope). The host ignores n_max.
Laws binomial_laws(const Column<std::int64_t>& n, const Column<double>& q,
                   std::optional<std::int64_t> n_max = std::nullopt);
/// BetaBinomial(n_i, a_i, b_i) on 0 .. n_i (a_i, b_i > 0): \f$\log p_i(k) = \log\binom{n_i}{k} + \log B(k + a_i,
/// n_i - k + b_i) - \log B(a_i, b_i)\f$, stored and written as above (M_i at the mode's neighbours for
/// a_i + b_i > 2, else at 0 or n_i); n_max as for binomial_laws.
Laws beta_binomial_laws(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                        std::optional<std::int64_t> n_max = std::nullopt);
/// q_i = 1 - exp(-c k_i) (the chance of at least one event at rate c per unit of k_i; c >= 0, k_i >= 0).
Column<double> hazard_probabilities(const Column<std::int64_t>& k, double c);

/// The law of a thinning Binomial(X_i, q) of a count X_i >= 0 (no positive weight below 0: a box may start below 0
/// where its weights are 0, as a difference's does; tally::domain_error naming the particle otherwise):
/// \f$ r_{i,k} = \sum_{n \ge k} w_{i,n} \binom{n}{k} q^k (1-q)^{n-k} \f$ on k = 0 .. hi_i, hi_i the largest value of
/// positive weight (zeros after it, a far tail that underflowed, are not carried on; lo_i for a law without mass),
/// rescaled to maximum 1 (log_scale_i + log max). By Horner's rule on the generating function, \f$G_Y(s) = G_X(1 - q +
/// q s)\f$: (hi_i + 1)(hi_i + 2) / 2 multiply-add pairs of non-negative terms and no special function, each entry
/// within about 2 (hi_i + 1) ulps; the CPU and the device do the same operations in the same order. A marginal,
/// computed only where one is needed.
Laws thin(const Laws& x, double q);
/// The same with law i's own probability q_i (q.size() == x.size(): shape_error): per-group or per-particle
/// parameters. The CPU checks each q_i in [0, 1] (domain_error); the device reads them as given (the caller checks).
Laws thin(const Laws& x, const Column<double>& q);
/// The law of -X_i: weights reversed, lo = -(lo_i + m_i - 1).
Laws negate(const Laws& x);
/// The law of X_i + Y_i (convolve_batched; the device form's kernel is picked by max_length).
Laws convolve(const Laws& x, const Laws& y);
/// The law of X_i + Y_{b(i)} with b(i) = floor(i / per): each of x's P laws convolved with the law of y that its
/// block of `per` particles shares (y.size() per == P, per >= 1: shape_error otherwise), rescaled after as
/// convolve's: the same laws as convolve(x, repeated(y, per)), by the same kernels, without the copies (each pair
/// reads its shared law where it is: cuda::convolve_shared_device).
Laws convolve_shared(const Laws& x, const Laws& y, std::size_t per);
/// X_i given X_i + Y_i = z_i (condition_on_sum_batched); adds log P(X_i + Y_i = z_i) to log_likelihood.
Laws condition_on_sum(const Laws& x, const Laws& y, const Column<std::int64_t>& z, Column<double>& log_likelihood);
/// X_i given an observed thinning v_i ~ Binomial(X_i, q):
/// \f$ w'_{i,k} \propto w_{i,k} \binom{k}{v_i} q^{v_i} (1-q)^{k - v_i} \f$ (max 1 again), and
/// \f$ \log L_i = \mathrm{log\_scale}_i + \log \sum_k w_{i,k} \binom{k}{v_i} q^{v_i} (1-q)^{k-v_i} \f$ added to
/// log_likelihood. The terms are formed in logarithms, so likelihoods far below the smallest double stay exact.
/// An impossible observation adds -inf and leaves the law as it was (the particle's weight says it).
/// When prior_log_mass is given (a column of x.size() entries), it receives each prior law's log mass
/// \f$ \log M_i = \mathrm{log\_scale}_i + \log \sum_k w_{i,k} \f$ (-inf for a law without mass), read in the same
/// pass: what max_mass_ratio needs for the error bound, without a second pass over the laws.
Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, double q, Column<double>& log_likelihood,
                           Column<double>* prior_log_mass = nullptr);
/// The same with law i's own probability q_i (checked as by thin's per-law form); the device conditions one law a
/// warp with the exact log-likelihoods (the likelihood's table shared between laws needs one q).
Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& q,
                           Column<double>& log_likelihood);
namespace detail {
/// The laws a warp of condition_on_thinning's device kernel takes: 0 (the default) chooses by the batch and the
/// device (32, or 16 or 8 where the batch is too small to fill the device); 8, 16 or 32 force it, so that tests
/// can check each. Process-wide, not synchronized: set it while no other thread conditions.
void set_thinning_laws_per_warp(int laws);
}  // namespace detail
/// Adds log P(X_i = v_i) = log w_{i, v_i - lo_i} + log_scale_i (-inf off the support) to log_likelihood.
void add_log_mass(const Laws& x, const Column<std::int64_t>& v, Column<double>& log_likelihood);
/// Adds 0 where x_i = v_i and -inf elsewhere (an observation of a realized value).
void add_log_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood);
/// An observation of realized values in one pass: log_likelihood_i = 0 where x_i = v_i and -inf elsewhere, written
/// (its contents are not read), and the same added to log_weight_i.
void observe_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood,
                   Column<double>& log_weight);
/// The smallest and largest values of positive weight over every law (laws with no mass left out); lo > hi
/// when no law has mass. Device: one pass, one warp per law, and the two numbers read back (one synchronization).
struct ValueRange {
  /// The smallest and largest value of positive weight.
  ///@{
  std::int64_t lo, hi;
  ///@}
  /// Whether no law has mass.
  bool empty() const { return lo > hi; }
};
/// The smallest and largest values of positive weight over every law (ValueRange above; device: one pass and the two
/// numbers read back).
ValueRange support_range(const Laws& x);
/// The largest over the particles of \f$ M_i / L_i \f$, where \f$ M_i = e^{s_i} \sum_k w_{i,k} \f$ is the mass of
/// law i (times that of y's law i, when y is given) and \f$ \log L_i = \mathrm{after}_i - \mathrm{before}_i \f$ the
/// log-likelihood an observation added; particles with no mass or an impossible observation are left out (0 when
/// none is left). A conditioning's error bound e becomes \f$ \rho = e \max_i M_i / L_i \f$, as tally::condition
/// bounds it one law at a time. Device: one warp per law, a CUB reduction, one number read back.
double max_mass_ratio(const Laws& x, const Laws* y, const Column<double>& before, const Column<double>& after);
/// The same from the laws' log masses log M_i already known (condition_on_thinning's prior_log_mass): one thread a
/// particle on the device, a CUB reduction, one number read back.
double max_mass_ratio(const Column<double>& log_mass, const Column<double>& before, const Column<double>& after);
/// max_mass_ratio left on the device (nothing read back, no wait): the number is copied back when first read.
///@{
DeviceScalar max_mass_ratio_later(const Laws& x, const Laws* y, const Column<double>& before,
                                  const Column<double>& after);
DeviceScalar max_mass_ratio_later(const Column<double>& log_mass, const Column<double>& before,
                                  const Column<double>& after);
///@}
/// The same for the K laws of a table (gpu/indexed_laws.hpp) that P particles hold, law held_by_i in particle i:
/// \f$ \max_i M_{k_i} / L_{k_i} \f$ with \f$ k_i = \mathrm{held\_by}_i \f$, so that a law no particle holds is left out
/// (the rule above otherwise; a k_i outside 0 .. K - 1 counts for nothing). The three columns of K values may be on
/// the host where held_by is on the device (a small table's; copied over). Device: one thread a particle, one
/// number left on the device.
DeviceScalar max_mass_ratio_later(const Column<double>& log_mass, const Column<double>& before,
                                  const Column<double>& after, const Column<std::int64_t>& held_by);
/// acc_i += x_i.
void add_to(Column<double>& acc, const Column<double>& x);
/// \f$acc_i \mathrel{+}= x_{\lfloor i / \mathrm{times} \rfloor}\f$: one value per block of `times` particles added to
/// each particle of its block (a log-likelihood computed once per shared law). acc.size() == x.size() times, times > 0
/// (shape_error otherwise).
void add_repeated(Column<double>& acc, const Column<double>& x, std::size_t times);

/// One draw per law: sample_batched's rule with u_i = philox_uniform(seed, first_stream + i, counter) (identical on
/// both). first_stream: the global index of particle 0 when the laws are one shard of a larger population (a sharded
/// runtime::Graph), so that a shard draws what the whole population draws for its particles; 0 otherwise. The same
/// holds for the draws below.
Column<std::int64_t> sample(const Laws& x, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream = 0);
/// `count` draws from one law, the weights w (not all required to be normalized; lo the first value), placed in
/// `where`: what sample draws from broadcast(w, lo, 0, count, where), without the count copies of the law (the
/// draw rule's sums made once, detail::draw_table, then a binary search and a short scan a draw).
Column<std::int64_t> sample_shared(std::span<const double> w, std::int64_t lo, std::size_t count, std::uint64_t seed,
                                   std::uint64_t counter, std::uint64_t first_stream, Backend where);
/// One Binomial(n_i, q_i) draw per particle from u_i = philox_uniform(seed, i, counter) without a table: the unit
/// interval cut into the masses in the order m, m + 1, m - 1, m + 2, ... from the mode m (binomial_math.hpp's
/// binomial_draw: p(m) by Loader's saddle-point form, about 1.6 sqrt(n q (1 - q)) steps each, nothing stored; the
/// same arithmetic on both). An exact draw, not monotone in q for one u. tally::domain_error naming the first
/// particle with n_i outside 0 .. 2^53 or q_i outside [0, 1] (device: a flag and the particle's n and q recorded;
/// raised at once, or inside gpu::DeferChecks where the host next waits).
Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, const Column<double>& q, std::uint64_t seed,
                                     std::uint64_t counter, std::uint64_t first_stream = 0);
/// The same with one q for every particle (a thinning's), without a column of P copies of it: the same draws.
Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, double q, std::uint64_t seed, std::uint64_t counter,
                                     std::uint64_t first_stream = 0);
/// One Beta(a_i, b_i) draw per particle, X / (X + Y) with X ~ Gamma(a_i), Y ~ Gamma(b_i) by Marsaglia and Tsang
/// (2000) on the uniforms philox_uniform(seed, i, counter * 256 + j), j < 256 (gamma_math.hpp).
Column<double> sample_beta(const Column<double>& a, const Column<double>& b, std::uint64_t seed,
                           std::uint64_t counter, std::uint64_t first_stream = 0);

/// The host draws behind sample_beta, one particle at a time: a Gamma(shape, 1) variate (Marsaglia and Tsang) and
/// a Beta(a, b) variate on the uniforms philox_uniform(seed, particle, counter * 256 + j), j < 256.
///@{
double gamma_variate(double shape, std::uint64_t seed, std::uint64_t particle, std::uint64_t counter);
double beta_variate(double a, double b, std::uint64_t seed, std::uint64_t particle, std::uint64_t counter);
///@}
/// r_i = a x_i + b y_i + c, or tally::overflow_error when some r_i leaves int64 (device: a flag and the particle's
/// x and y recorded; raised at once, or inside gpu::DeferChecks where the host next waits).
Column<std::int64_t> linear(const Column<std::int64_t>& x, std::int64_t a, const Column<std::int64_t>& y,
                            std::int64_t b, std::int64_t c);
/// The constants of a tie Y = sign (z - X) after the observed sum z = X + sign Y: \f$c_i = \mathrm{sign}\, z_i\f$,
/// except where the observation was impossible (log_likelihood_i = -inf: that particle's weight is 0, and X kept its
/// prior), where z_i is replaced by a possible value of the sum, x_lo_i + sign y_end_i (x_lo_i the lowest value of X_i; y_end_i
/// the lowest value of Y_i for sign > 0, its highest for sign < 0), so that the tie keeps Y on its support where X
/// takes its lowest value. shape_error for sizes or places that differ.
Column<std::int64_t> tie_constants(const Column<std::int64_t>& z, int sign, const Column<double>& log_likelihood,
                                   const Column<std::int64_t>& x_lo, const Column<std::int64_t>& y_end);
/// The lowest (hi false) or highest (hi true) value of each of count laws, particle i's being laws[i / per] (per =
/// 1: one law a particle; laws shared by blocks of per particles otherwise), as stored (zero weights at the ends
/// included). shape_error where laws.size() * per != count or per = 0.
Column<std::int64_t> support_end(const Laws& laws, std::size_t per, std::size_t count, bool hi);
/// P copies of v.
///@{
Column<std::int64_t> filled(std::int64_t v, std::size_t count, Backend where);
Column<double> filled(double v, std::size_t count, Backend where);
///@}
/// Each value `times` times, in order, where `values` lives: \f$r_i = v_{\lfloor i / \mathrm{times} \rfloor}\f$ for i
/// < values.size() times (a per-group parameter spread over its group's particles; one launch on the device, no copy
/// of P values). times = 0: shape_error.
Column<double> repeated(const Column<double>& values, std::size_t times);
/// \f$r_i = \lfloor i / \mathrm{per} \rfloor\f$ for i < count, where `where` says: the ancestors that spread one law
/// per block of `per` particles over the particles (per = 0: shape_error).
Column<std::size_t> block_indices(std::size_t count, std::size_t per, Backend where);
/// Each law `times` times, in order: law i of the result is law \f$\lfloor i / \mathrm{times} \rfloor\f$ of x (laws
/// shared by blocks of particles made one per particle: on the host a gather by block_indices; on the device one
/// launch whose offsets come from x's, with no lengths read back). times = 0: shape_error.
Laws repeated(const Laws& x, std::size_t times);
/// The conjugate update of Beta(a_i, b_i) by k_i successes in n_i trials: a_i += k_i, b_i += n_i - k_i (nothing
/// where k_i is outside 0 .. n_i: an impossible count, whose particle has weight 0).
void beta_update(Column<double>& a, Column<double>& b, const Column<std::int64_t>& n, const Column<std::int64_t>& k);

namespace detail {
/// A range of indices first, first + 1, .., first + count - 1.
struct IndexRange {
  std::size_t first = 0, count = 0;
};
/// The ranges' indices one range after another, where `where` says: a gather's index column made without a
/// host loop over its entries (a sharded resampling's particles to send: a few ranges of many particles).
/// Empty ranges add nothing.
Column<std::size_t> index_ranges(std::span<const IndexRange> ranges, Backend where);
/// out_i = x_{first + i} - shift for 0 <= i < count: a piece of an index column, made relative to `shift`.
/// tally::shape_error where first + count > x.size(); tally::domain_error on the host where an entry is below
/// `shift`, whose result would wrap (the device does not check: its callers' entries are at least `shift` by
/// construction, a sorted column's piece shifted by its first entry).
Column<std::size_t> shifted_slice(const Column<std::size_t>& x, std::size_t first, std::size_t count,
                                  std::size_t shift);
/// Gathers from two sources, as from their concatenation: out_i = x_{a_i} for a_i < x.size(), else
/// y_{a_i - x.size()} (tally::shape_error on the host where a_i >= x.size() + y.size(), or the places differ). A
/// sharded resampling places its particles so: those it kept from its own state, those received from the others.
Column<std::int64_t> gather_two(const Column<std::int64_t>& x, const Column<std::int64_t>& y,
                                const Column<std::size_t>& a);
Column<double> gather_two(const Column<double>& x, const Column<double>& y, const Column<std::size_t>& a);
Laws gather_two(const Laws& x, const Laws& y, const Column<std::size_t>& a);
/// Where each of a shard's positions finds its particle among its own `count` particles (the population's first ..
/// first + count - 1) followed by those it received, in order: lo .. first - 1 (b = first - lo of them from the
/// shards before it; none when lo >= first), then those from s = max(first + count, lo) on (from the shards after
/// it); for the entries v = x_{at + i}, i < count, of nondecreasing ancestors x (lo <= every v): x is the
/// population's (at = first) or this shard's own (at = 0).
/// out_i = v - first where first <= v < first + count, count + v - lo where v < first, else count + b + v - s.
/// The index gather_two takes with its own particles as x and those received as y (tally::shape_error where
/// at + count > x.size(), tally::domain_error on the host where some v < lo).
Column<std::size_t> kept_first_placement(const Column<std::size_t>& x, std::size_t at, std::size_t first,
                                         std::size_t count, std::size_t lo);
/// The particles a shard needs from the other shards, each once, for its nondecreasing ancestors x (population
/// indices) and the shards' bounds (G + 1 numbers: shard q holds bounds[q] .. bounds[q + 1] - 1; this shard is
/// `me`, count = x.size() its particles): requests, the distinct x_i outside this shard in increasing order (so
/// grouped by the shard holding them, in rank order), where x lives; per_shard[q], how many of them shard q holds (0
/// for me), on the host (a device x: read back, the one wait); placement_i = x_i - bounds[me] for this shard's own
/// x_i, else count + the index of x_i among the requests: the index gather_two takes with this shard's particles as
/// x and the requested ones, received in order, as y. A sharded resampling whose ranges would carry many particles
/// of no offspring sends these instead. tally::shape_error unless bounds has me + 2 entries at least; the host
/// checks that x is nondecreasing and within the bounds (tally::domain_error), the device does not.
struct ForeignRequests {
  Column<std::size_t> requests, placement;
  std::vector<std::size_t> per_shard;
};
ForeignRequests foreign_requests(const Column<std::size_t>& x, std::span<const std::size_t> bounds, std::size_t me);
/// Law i's length offset_{i+1} - offset_i, where the laws live (a sharded resampling sends them before the
/// weights, so that the receiver lays its laws out without the host).
Column<std::int64_t> law_lengths(const Laws& x);
/// Room for laws of the given lengths, where they live, whose sum is `total` (the caller's, from the same lengths'
/// sender) and none longer than max_length: the offsets are the exclusive scan of the lengths, the lower ends,
/// log-scales and weights are left for the caller to write (the device leaves them uninitialized). The host checks
/// the sum (tally::shape_error); the device does not (its offset P is set to `total`).
Laws laws_of_lengths(const Column<std::int64_t>& lengths, std::size_t total, std::size_t max_length, const char* who);
}  // namespace detail

/// Resampling by ancestors: out_i = x_{ancestors_i}.
///@{
Column<std::int64_t> gather(const Column<std::int64_t>& x, const Column<std::size_t>& ancestors);
Column<double> gather(const Column<double>& x, const Column<std::size_t>& ancestors);
///@}
/// Several columns of one place gathered by the same ancestors, in the order given: out_{k,i} = x_{k, ancestors_i}
/// (what gather returns for each); on the device one launch for all of them (a resampling moves every live column).
///@{
std::vector<Column<std::int64_t>> gather(std::span<const Column<std::int64_t>* const> xs,
                                         const Column<std::size_t>& ancestors);
std::vector<Column<double>> gather(std::span<const Column<double>* const> xs, const Column<std::size_t>& ancestors);
///@}
/// Copies of several columns of one place and one size (Column::clone of each; on the device one launch for all).
std::vector<Column<double>> copies(std::span<const Column<double>* const> xs);
/// Laws: law i becomes law ancestors_i (device: lengths gathered, scanned and their total read back, then the
/// weights copied one warp per law).
Laws gather(const Laws& x, const Column<std::size_t>& ancestors);
/// Ancestors drawn from the log-weights (tally::gpu::resample's contract; the device form reads nothing back but
/// the summary), and the weights' summary. When every log-weight is -inf: no ancestors (an empty column) and the
/// summary {-inf, -inf, 0}. `threshold` < 1: the caller resamples only where ESS < threshold P (the summary's
/// ess, compared so); the device then writes the ancestors only in that case (their values are unspecified
/// otherwise), so a step that keeps its particles does not pay for them. `known` (nullptr: none): the weights'
/// summary as computed by the resampler's own passes (gpu::summarize's `weights`, the weights unchanged since),
/// not all -inf; the device then takes it as the summary and writes the ancestors (systematic) without reading
/// anything back.
Column<std::size_t> resample(const Column<double>& log_w, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                             WeightSummary& summary, double threshold = 1.0, const WeightSummary* known = nullptr);

}  // namespace tally::gpu
