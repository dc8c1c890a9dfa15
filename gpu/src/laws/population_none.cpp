// The population operations of a build without CUDA: device columns cannot exist, and these entry points say so.
#include <string>

#include "population_cuda.hpp"
#include "tally/gpu/deferred_checks.hpp"

namespace tally::gpu {
namespace detail {
void* device_allocate(std::size_t, const char* who) {
  throw cuda_error(std::string(who) + ": tally was built without CUDA (no device memory)");
}
void device_free(void*) noexcept {}
std::size_t device_bytes_in_use() { return 0; }
void device_copy(void*, const void*, std::size_t, int) {
  throw cuda_error("tally::gpu::detail::device_copy: tally was built without CUDA");
}
}  // namespace detail
std::size_t device_free_bytes() { return 0; }
bool release_cached_memory() { return true; }
void raise_deferred_checks() {}  // without CUDA no check is ever deferred
namespace detail {
void raise_checked_after_wait() {}
void set_thinning_laws_per_warp(int) {}  // without CUDA there is no device kernel to set
}  // namespace detail

namespace population_cuda {
namespace {
[[noreturn]] void none(const char* who) {
  throw cuda_error(std::string("tally::gpu::") + who + ": tally was built without CUDA");
}
}  // namespace
std::vector<LaterMax> largest_later(std::span<const Column<std::int64_t>* const>) { none("largest_later"); }
Laws markov_step(const Laws&, const Table&) { none("markov_step"); }
Laws markov_rows(const Column<std::int64_t>&, const Table&, std::size_t, std::size_t) { none("markov_rows"); }
Laws condition_on_markov(const Laws&, const Table&, const Column<std::int64_t>&, Column<double>&) {
  none("condition_on_markov");
}
Laws condition_on_poisson(const Laws&, const Table&, const Column<std::int64_t>&, Column<double>&) {
  none("condition_on_poisson");
}
Laws condition_on_states(const Laws&, const Table&, Column<double>&, std::size_t, std::size_t) {
  none("condition_on_states");
}
Laws mix(const Laws&, const ChildKernel&, int, int, double, std::int64_t) { none("mix"); }
Laws condition_on_mix(const Laws&, const ChildKernel&, int, int, const Column<std::int64_t>&, Column<double>&) {
  none("condition_on_mix");
}
CountLaws count_laws(CountFamily, double, const Column<double>&, const Column<double>*, double, std::int64_t) {
  none("count_laws");
}
std::optional<double> common_value(const Column<double>&) { none("common_value"); }
Laws broadcast(std::span<const double>, std::int64_t, double, std::size_t) { none("broadcast"); }
Laws point_laws(const Column<std::int64_t>&) { none("point_laws"); }
Laws binomial_laws(const Column<std::int64_t>&, const Column<double>&, std::optional<std::int64_t>) {
  none("binomial_laws");
}
Laws condition_on_sum(const ParameterLaws&, const ParameterLaws&, int, const Column<std::int64_t>&, Column<double>&) {
  none("condition_on_sum");
}
Laws beta_binomial_laws(const Column<std::int64_t>&, const Column<double>&, const Column<double>&,
                        std::optional<std::int64_t>) {
  none("beta_binomial_laws");
}
Column<double> hazard_probabilities(const Column<std::int64_t>&, double) { none("hazard_probabilities"); }
Laws thin(const Laws&, double) { none("thin"); }
Laws thin(const Laws&, const Column<double>&) { none("thin"); }
Laws negate(const Laws&) { none("negate"); }
Laws convolve(const Laws&, const Laws&) { none("convolve"); }
Laws convolve_shared(const Laws&, const Laws&, std::size_t) { none("convolve_shared"); }
Laws condition_on_sum(const Laws&, const Laws&, const Column<std::int64_t>&, Column<double>&) { none("condition_on_sum"); }
Laws condition_on_thinning(const Laws&, const Column<std::int64_t>&, double, Column<double>&, Column<double>*) {
  none("condition_on_thinning");
}
Laws condition_on_thinning(const Laws&, const Column<std::int64_t>&, const Column<double>&, Column<double>&) {
  none("condition_on_thinning");
}
void add_log_mass(const Laws&, const Column<std::int64_t>&, Column<double>&) { none("add_log_mass"); }
void add_log_equal(const Column<std::int64_t>&, const Column<std::int64_t>&, Column<double>&) { none("add_log_equal"); }
void observe_equal(const Column<std::int64_t>&, const Column<std::int64_t>&, Column<double>&, Column<double>&) {
  none("observe_equal");
}
void observe_binomial(const Column<std::int64_t>&, double, const Column<std::int64_t>&, Column<double>&,
                      Column<double>&) {
  none("observe_binomial");
}
ValueRange support_range(const Laws&) { none("support_range"); }
DeviceScalar max_mass_ratio(const Laws&, const Laws*, const Column<double>&, const Column<double>&) {
  none("max_mass_ratio");
}
DeviceScalar max_mass_ratio(const Column<double>&, const Column<double>&, const Column<double>&,
                            const Column<std::int64_t>&) {
  none("max_mass_ratio");
}
DeviceScalar max_mass_ratio(const Column<double>&, const Column<double>&, const Column<double>&) {
  none("max_mass_ratio");
}
void add_to(Column<double>&, const Column<double>&) { none("add_to"); }
Column<std::int64_t> sample(const Laws&, std::uint64_t, std::uint64_t, std::uint64_t) { none("sample"); }
Column<std::int64_t> sample_shared(const detail::DrawTable&, std::int64_t, std::size_t, std::uint64_t, std::uint64_t,
                                   std::uint64_t) {
  none("sample_shared");
}
Column<std::int64_t> sample_binomial(const Column<std::int64_t>&, const double*, double, std::uint64_t, std::uint64_t,
                                     std::uint64_t) { none("sample_binomial"); }
Column<double> sample_beta(const Column<double>&, const Column<double>&, std::uint64_t, std::uint64_t, std::uint64_t) { none("sample_beta"); }
Column<std::int64_t> linear(const Column<std::int64_t>&, std::int64_t, const Column<std::int64_t>&, std::int64_t, std::int64_t) { none("linear"); }
Column<std::int64_t> tie_constants(const Column<std::int64_t>&, int, const Column<double>&,
                                   const Column<std::int64_t>&, const Column<std::int64_t>&) {
  none("tie_constants");
}
Column<std::int64_t> support_end(const Laws&, std::size_t, std::size_t, bool) { none("support_end"); }
Column<std::int64_t> filled(std::int64_t, std::size_t) { none("filled"); }
Column<double> filled(double, std::size_t) { none("filled"); }
Column<double> repeated(const Column<double>&, std::size_t) { none("repeated"); }
Laws repeated(const Laws&, std::size_t) { none("repeated"); }
void add_repeated(Column<double>&, const Column<double>&, std::size_t) { none("add_repeated"); }
Column<std::size_t> block_indices(std::size_t, std::size_t) { none("block_indices"); }
void beta_update(Column<double>&, Column<double>&, const Column<std::int64_t>&, const Column<std::int64_t>&) { none("beta_update"); }
Column<std::size_t> index_ranges(std::span<const detail::IndexRange>, std::size_t) { none("index_ranges"); }
Column<std::size_t> shifted_slice(const Column<std::size_t>&, std::size_t, std::size_t, std::size_t) {
  none("shifted_slice");
}
Column<std::int64_t> gather_two(const Column<std::int64_t>&, const Column<std::int64_t>&, const Column<std::size_t>&) {
  none("gather_two");
}
Column<double> gather_two(const Column<double>&, const Column<double>&, const Column<std::size_t>&) {
  none("gather_two");
}
Laws gather_two(const Laws&, const Laws&, const Column<std::size_t>&, std::size_t) { none("gather_two"); }
Column<std::size_t> kept_first_placement(const Column<std::size_t>&, std::size_t, std::size_t, std::size_t,
                                         std::size_t) {
  none("kept_first_placement");
}
detail::ForeignRequests foreign_requests(const Column<std::size_t>&, std::span<const std::size_t>, std::size_t) {
  none("foreign_requests");
}
Column<std::int64_t> law_lengths(const Laws&) { none("law_lengths"); }
Laws laws_of_lengths(const Column<std::int64_t>&, std::size_t, std::size_t, const char*) { none("laws_of_lengths"); }
Column<std::int64_t> gather(const Column<std::int64_t>&, const Column<std::size_t>&) { none("gather"); }
Column<double> gather(const Column<double>&, const Column<std::size_t>&) { none("gather"); }
std::vector<Column<std::int64_t>> gather(std::span<const Column<std::int64_t>* const>, const Column<std::size_t>&) {
  none("gather");
}
std::vector<Column<double>> gather(std::span<const Column<double>* const>, const Column<std::size_t>&) {
  none("gather");
}
std::vector<Column<double>> copies(std::span<const Column<double>* const>) { none("copies"); }
Laws gather(const Laws&, const Column<std::size_t>&) { none("gather"); }
Laws indexed(const Laws&, const Column<std::int64_t>&) { none("indexed"); }
Column<std::int64_t> sample_indexed(const Laws&, const Column<std::int64_t>&, std::uint64_t, std::uint64_t, std::uint64_t) {
  none("sample_indexed");
}
void add_indexed(Column<double>&, const Column<double>&, const Column<std::int64_t>&) { none("add_indexed"); }
void check_indices(const Column<std::int64_t>&, std::size_t, const char*) { none("check_indices"); }
Column<std::size_t> resample(const Column<double>&, Resampler, std::uint64_t, std::uint64_t, WeightSummary&, double,
                             const WeightSummary*) {
  none("resample");
}
Column<double> tiled(std::span<const double>, std::size_t) { none("Vectors::filled"); }
void add_categorical_log_mass(const Vectors&, bool, const Column<std::int64_t>&, Column<double>&) {
  none("add_categorical_log_mass");
}
void dirichlet_update(Vectors&, const Column<std::int64_t>&) { none("dirichlet_update"); }
Laws categorical_laws(const Vectors&) { none("categorical_laws"); }
Vectors sample_dirichlet(const Vectors&, std::uint64_t, std::uint64_t, std::uint64_t) { none("sample_dirichlet"); }
Column<double> gather_rows(const Vectors&, const Column<std::size_t>&) { none("gather"); }
Laws condition_on_beta_thinning(const Laws&, const Column<std::int64_t>&, const Column<double>&, const Column<double>&,
                                Column<double>&) {
  none("condition_on_beta_thinning");
}
void add_beta_binomial_log_mass(const Column<std::int64_t>&, const Column<double>&, const Column<double>&,
                                const Column<std::int64_t>&, Column<double>&) { none("add_beta_binomial_log_mass"); }
void add_binomial_log_mass(const Column<std::int64_t>&, const double*, double, const Column<std::int64_t>&,
                           Column<double>&) {
  none("add_binomial_log_mass");
}
void add_negative_binomial_log_mass(double, const Column<double>&, const Column<std::int64_t>&, Column<double>&) {
  none("add_negative_binomial_log_mass");
}
void add_beta_negative_binomial_log_mass(double, const Column<double>&, const Column<double>&, const Column<std::int64_t>&,
                                         Column<double>&) { none("add_beta_negative_binomial_log_mass"); }
void add_poisson_log_mass(double, const Column<double>&, const Column<std::int64_t>&, Column<double>&) { none("add_poisson_log_mass"); }
void add_gamma_poisson_log_mass(double, const Column<double>&, const Column<double>&, const Column<std::int64_t>&, Column<double>&) {
  none("add_gamma_poisson_log_mass");
}
void negative_binomial_update(Column<double>&, Column<double>&, double, const Column<std::int64_t>&) { none("negative_binomial_update"); }
void gamma_poisson_update(Column<double>&, Column<double>&, double, const Column<std::int64_t>&) { none("gamma_poisson_update"); }
Column<double> sample_gamma(const Column<double>&, const Column<double>&, std::uint64_t, std::uint64_t, std::uint64_t) { none("sample_gamma"); }
}  // namespace population_cuda
}  // namespace tally::gpu
