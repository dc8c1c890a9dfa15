// Private: the CUDA forms of population_ops (population_ops_cuda.cu; throwing stubs in population_none.cpp).
#pragma once

#include "tally/gpu/count_laws.hpp"
#include "tally/gpu/indexed_laws.hpp"
#include "tally/gpu/later_max.hpp"
#include "tally/gpu/parameter_laws.hpp"
#include "tally/gpu/population_chain.hpp"
#include "tally/gpu/population_children.hpp"
#include "tally/gpu/population_dirichlet.hpp"
#include "tally/gpu/population_ops.hpp"
#include "scan_math.hpp"

namespace tally::gpu::population_cuda {
// population_children_cuda.cu
Laws mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, double tolerance, std::int64_t max_size);
Laws condition_on_mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood);
// population_chain_cuda.cu
Laws markov_step(const Laws& x, const Table& t);
/// per > 0: a table of `states` rows per set of per particles, stacked in t.
Laws markov_rows(const Column<std::int64_t>& x, const Table& t, std::size_t per, std::size_t states);
Laws condition_on_markov(const Laws& x, const Table& t, const Column<std::int64_t>& y, Column<double>& log_likelihood);
Laws condition_on_poisson(const Laws& x, const Table& rates, const Column<std::int64_t>& v,
                          Column<double>& log_likelihood);
Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood, std::size_t per,
                         std::size_t states);
// count_laws_cuda.cu (b: null where the family has none)
CountLaws count_laws(CountFamily family, double s, const Column<double>& a, const Column<double>* b, double tolerance,
                     std::int64_t max_size);
std::optional<double> common_value(const Column<double>& c);  // c not empty
// population_ops_cuda.cu
Laws broadcast(std::span<const double> w, std::int64_t lo, double log_scale, std::size_t count);
Laws point_laws(const Column<std::int64_t>& v);
Laws binomial_laws(const Column<std::int64_t>& n, const Column<double>& q, std::optional<std::int64_t> n_max);
Laws beta_binomial_laws(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                        std::optional<std::int64_t> n_max);
Column<double> hazard_probabilities(const Column<std::int64_t>& k, double c);
Laws thin(const Laws& x, double q);
Laws thin(const Laws& x, const Column<double>& q);
Laws negate(const Laws& x);
Laws convolve(const Laws& x, const Laws& y);
Laws convolve_shared(const Laws& x, const Laws& y, std::size_t per);
Laws condition_on_sum(const Laws& x, const Laws& y, const Column<std::int64_t>& z, Column<double>& log_likelihood);
Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, double q, Column<double>& log_likelihood,
                           Column<double>* prior_log_mass);
Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& q,
                           Column<double>& log_likelihood);
void add_log_mass(const Laws& x, const Column<std::int64_t>& v, Column<double>& log_likelihood);
void add_log_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood);
void observe_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood,
                   Column<double>& log_weight);
ValueRange support_range(const Laws& x);
DeviceScalar max_mass_ratio(const Laws& x, const Laws* y, const Column<double>& before, const Column<double>& after);
DeviceScalar max_mass_ratio(const Column<double>& log_mass, const Column<double>& before, const Column<double>& after);
DeviceScalar max_mass_ratio(const Column<double>& log_mass, const Column<double>& before, const Column<double>& after,
                            const Column<std::int64_t>& held_by);
void add_to(Column<double>& acc, const Column<double>& x);
/// The process's kept memory, freed: largest_later's slots (false where some are in use), the calling thread's
/// pinned guard of the resampler.
bool release_later_max_slots();
void release_pinned_guard();
void add_repeated(Column<double>& acc, const Column<double>& x, std::size_t times);
Column<std::size_t> block_indices(std::size_t count, std::size_t per);
Column<std::int64_t> sample(const Laws& x, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream);
// indexed_laws_cuda.cu
Laws indexed(const Laws& table, const Column<std::int64_t>& index);
Column<std::int64_t> sample_indexed(const Laws& table, const Column<std::int64_t>& index, std::uint64_t seed,
                                    std::uint64_t counter, std::uint64_t first_stream);
void add_indexed(Column<double>& acc, const Column<double>& x, const Column<std::int64_t>& index);
void check_indices(const Column<std::int64_t>& index, std::size_t laws, const char* who);
// shared_draws_cuda.cu
Column<std::int64_t> sample_shared(const detail::DrawTable& t, std::int64_t lo, std::size_t count, std::uint64_t seed,
                                   std::uint64_t counter, std::uint64_t first_stream);
/// q: a column, or nullptr for q_value in every particle (the same for add_binomial_log_mass)
Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, const double* q, double q_value, std::uint64_t seed,
                                     std::uint64_t counter, std::uint64_t first_stream);
Column<double> sample_beta(const Column<double>& a, const Column<double>& b, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream);
Column<std::int64_t> linear(const Column<std::int64_t>& x, std::int64_t a, const Column<std::int64_t>& y,
                            std::int64_t b, std::int64_t c);
Column<std::int64_t> tie_constants(const Column<std::int64_t>& z, int sign, const Column<double>& log_likelihood,
                                   const Column<std::int64_t>& x_lo, const Column<std::int64_t>& y_end);
Column<std::int64_t> support_end(const Laws& laws, std::size_t per, std::size_t count, bool hi);
Column<std::int64_t> filled(std::int64_t v, std::size_t count);
Column<double> filled(double v, std::size_t count);
Column<double> repeated(const Column<double>& values, std::size_t times);
Laws repeated(const Laws& x, std::size_t times);
void beta_update(Column<double>& a, Column<double>& b, const Column<std::int64_t>& n, const Column<std::int64_t>& k);
Column<std::size_t> index_ranges(std::span<const detail::IndexRange> ranges, std::size_t total);
Column<std::size_t> shifted_slice(const Column<std::size_t>& x, std::size_t first, std::size_t count,
                                  std::size_t shift);
Column<std::int64_t> gather_two(const Column<std::int64_t>& x, const Column<std::int64_t>& y,
                                const Column<std::size_t>& a);
Column<double> gather_two(const Column<double>& x, const Column<double>& y, const Column<std::size_t>& a);
Laws gather_two(const Laws& x, const Laws& y, const Column<std::size_t>& a, std::size_t max_length);
Column<std::size_t> kept_first_placement(const Column<std::size_t>& x, std::size_t at, std::size_t first,
                                         std::size_t count, std::size_t lo);
detail::ForeignRequests foreign_requests(const Column<std::size_t>& x, std::span<const std::size_t> bounds,
                                         std::size_t me);
Column<std::int64_t> law_lengths(const Laws& x);
Laws laws_of_lengths(const Column<std::int64_t>& lengths, std::size_t total, std::size_t max_length, const char* who);
Column<std::int64_t> gather(const Column<std::int64_t>& x, const Column<std::size_t>& ancestors);
Column<double> gather(const Column<double>& x, const Column<std::size_t>& ancestors);
std::vector<Column<std::int64_t>> gather(std::span<const Column<std::int64_t>* const> xs,
                                         const Column<std::size_t>& ancestors);
std::vector<Column<double>> gather(std::span<const Column<double>* const> xs, const Column<std::size_t>& ancestors);
std::vector<Column<double>> copies(std::span<const Column<double>* const> xs);
Laws gather(const Laws& x, const Column<std::size_t>& ancestors);
Column<std::size_t> resample(const Column<double>& log_w, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                             WeightSummary& summary, double threshold, const WeightSummary* known);
// later_max_cuda.cu (device columns, none empty)
std::vector<LaterMax> largest_later(std::span<const Column<std::int64_t>* const> columns);
// parameter_laws_cuda.cu
Laws condition_on_sum(const ParameterLaws& x, const ParameterLaws& y, int sign, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood);
// population_conjugate_cuda.cu
void add_beta_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood);
Laws condition_on_beta_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& a,
                                const Column<double>& b, Column<double>& log_likelihood);
void add_binomial_log_mass(const Column<std::int64_t>& n, const double* q, double q_value,
                           const Column<std::int64_t>& k, Column<double>& log_likelihood);
void observe_binomial(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                      Column<double>& log_likelihood, Column<double>& log_weight);
void add_negative_binomial_log_mass(double r, const Column<double>& q, const Column<std::int64_t>& k,
                                    Column<double>& log_likelihood);
void add_beta_negative_binomial_log_mass(double r, const Column<double>& a, const Column<double>& b,
                                         const Column<std::int64_t>& k, Column<double>& log_likelihood);
void add_poisson_log_mass(double s, const Column<double>& lambda, const Column<std::int64_t>& k,
                          Column<double>& log_likelihood);
void add_gamma_poisson_log_mass(double s, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood);
void negative_binomial_update(Column<double>& a, Column<double>& b, double r, const Column<std::int64_t>& k);
void gamma_poisson_update(Column<double>& a, Column<double>& b, double s, const Column<std::int64_t>& k);
Column<double> sample_gamma(const Column<double>& a, const Column<double>& b, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream);
// population_dirichlet_cuda.cu (alpha: the rows are Dirichlet parameters, else probability vectors)
Column<double> tiled(std::span<const double> row, std::size_t count);
void add_categorical_log_mass(const Vectors& x, bool alpha, const Column<std::int64_t>& k,
                              Column<double>& log_likelihood);
void dirichlet_update(Vectors& alpha, const Column<std::int64_t>& k);
Laws categorical_laws(const Vectors& rows);
Vectors sample_dirichlet(const Vectors& alpha, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream);
Column<double> gather_rows(const Vectors& x, const Column<std::size_t>& ancestors);
}  // namespace tally::gpu::population_cuda
