// The population operations of counts of Beta and Gamma parents: the CPU reference (loops on one core, parameters
// checked) and the dispatch to CUDA by where the columns live.
#include "tally/gpu/population_conjugate.hpp"

#include <vector>

#include "conjugate_math.hpp"
#include "population_cuda.hpp"
#include "population_math.hpp"
#include "population_reference.hpp"

namespace tally::gpu {

namespace {

using detail::on_device;
using detail::same_shape;
namespace math = detail::conjugate;

/// domain_error naming particle i unless ok.
void check(bool ok, const char* who, std::size_t i, const char* what, double value, const char* rule) {
  if (!ok) tally::detail::fail<domain_error>(who, ": particle ", i, "'s ", what, " = ", value, " ", rule);
}
void check_positive(const Column<double>& c, const char* who, const char* what) {
  for (std::size_t i = 0; i < c.size(); ++i)
    check(math::positive(c.host()[i]), who, i, what, c.host()[i], "must be finite and > 0");
}
void check_trials(const Column<std::int64_t>& n, const char* who) {
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n.host()[i] < 0)
      tally::detail::fail<domain_error>(who, ": particle ", i, "'s n = ", n.host()[i], " must be >= 0");
}

}  // namespace

void add_beta_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_beta_binomial_log_mass";
  same_shape(n, a, who);
  same_shape(n, b, who);
  same_shape(n, k, who);
  same_shape(n, log_likelihood, who);
  if (on_device(n.where())) return population_cuda::add_beta_binomial_log_mass(n, a, b, k, log_likelihood);
  check_trials(n, who);
  check_positive(a, who, "a");
  check_positive(b, who, "b");
  for (std::size_t i = 0; i < n.size(); ++i)
    log_likelihood.host()[i] += math::beta_binomial_log_mass(n.host()[i], k.host()[i], a.host()[i], b.host()[i]);
}

Laws condition_on_beta_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& a,
                                const Column<double>& b, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_beta_thinning";
  same_shape(x, v, who);
  same_shape(x, a, who);
  same_shape(x, b, who);
  same_shape(x, log_likelihood, who);
  if (on_device(x.where())) return population_cuda::condition_on_beta_thinning(x, v, a, b, log_likelihood);
  check_positive(a, who, "a");
  check_positive(b, who, "b");
  const std::vector<std::int64_t>& observed = v.host();
  return detail::condition_by(
      x,
      [&](std::size_t i, std::int64_t k) {
        return math::beta_binomial_log_mass(k, observed[i], a.host()[i], b.host()[i]);
      },
      log_likelihood, who);
}

void add_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& q, const Column<std::int64_t>& k,
                           Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_binomial_log_mass";
  same_shape(n, q, who);
  same_shape(n, k, who);
  same_shape(n, log_likelihood, who);
  if (on_device(n.where())) return population_cuda::add_binomial_log_mass(n, q.data(), 0.0, k, log_likelihood);
  check_trials(n, who);
  for (std::size_t i = 0; i < n.size(); ++i) {
    check(math::probability(q.host()[i]), who, i, "q", q.host()[i], "is not a probability in [0, 1]");
    log_likelihood.host()[i] += math::binomial_log_mass(n.host()[i], k.host()[i], q.host()[i]);
  }
}

void add_binomial_log_mass(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                           Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_binomial_log_mass";
  same_shape(n, k, who);
  same_shape(n, log_likelihood, who);
  if (!math::probability(q)) tally::detail::fail<domain_error>(who, ": q = ", q, " is not a probability in [0, 1]");
  if (on_device(n.where())) return population_cuda::add_binomial_log_mass(n, nullptr, q, k, log_likelihood);
  check_trials(n, who);
  for (std::size_t i = 0; i < n.size(); ++i)
    log_likelihood.host()[i] += math::binomial_log_mass(n.host()[i], k.host()[i], q);
}

void observe_binomial(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                      Column<double>& log_likelihood, Column<double>& log_weight) {
  constexpr const char* who = "tally::gpu::observe_binomial";
  same_shape(n, k, who);
  same_shape(n, log_likelihood, who);
  same_shape(n, log_weight, who);
  if (!math::probability(q)) tally::detail::fail<domain_error>(who, ": q = ", q, " is not a probability in [0, 1]");
  if (on_device(n.where())) return population_cuda::observe_binomial(n, q, k, log_likelihood, log_weight);
  check_trials(n, who);
  for (std::size_t i = 0; i < n.size(); ++i) {
    const double l = 0.0 + math::binomial_log_mass(n.host()[i], k.host()[i], q);  // as added to a zero
    log_likelihood.host()[i] = l;
    log_weight.host()[i] += l;
  }
}

void add_negative_binomial_log_mass(double r, const Column<double>& q, const Column<std::int64_t>& k,
                                    Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_negative_binomial_log_mass";
  tally::detail::check_positive(r, who, "r");
  same_shape(q, k, who);
  same_shape(q, log_likelihood, who);
  if (on_device(q.where())) return population_cuda::add_negative_binomial_log_mass(r, q, k, log_likelihood);
  for (std::size_t i = 0; i < q.size(); ++i) {
    check(math::probability(q.host()[i]), who, i, "q", q.host()[i], "is not a probability in [0, 1]");
    log_likelihood.host()[i] += math::negative_binomial_log_mass(r, q.host()[i], k.host()[i]);
  }
}

void add_beta_negative_binomial_log_mass(double r, const Column<double>& a, const Column<double>& b,
                                         const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_beta_negative_binomial_log_mass";
  tally::detail::check_positive(r, who, "r");
  same_shape(a, b, who);
  same_shape(a, k, who);
  same_shape(a, log_likelihood, who);
  if (on_device(a.where())) return population_cuda::add_beta_negative_binomial_log_mass(r, a, b, k, log_likelihood);
  check_positive(a, who, "a");
  check_positive(b, who, "b");
  for (std::size_t i = 0; i < a.size(); ++i)
    log_likelihood.host()[i] += math::beta_negative_binomial_log_mass(r, a.host()[i], b.host()[i], k.host()[i]);
}

void add_poisson_log_mass(double s, const Column<double>& lambda, const Column<std::int64_t>& k,
                          Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_poisson_log_mass";
  tally::detail::check_nonnegative(s, who, "s");
  same_shape(lambda, k, who);
  same_shape(lambda, log_likelihood, who);
  if (on_device(lambda.where())) return population_cuda::add_poisson_log_mass(s, lambda, k, log_likelihood);
  for (std::size_t i = 0; i < lambda.size(); ++i) {
    const double rate = s * lambda.host()[i];
    check(math::nonnegative(lambda.host()[i]) && math::nonnegative(rate), who, i, "lambda", lambda.host()[i],
          "must be >= 0, with a finite rate s lambda");
    log_likelihood.host()[i] += math::poisson_log_mass(rate, k.host()[i]);
  }
}

void add_gamma_poisson_log_mass(double s, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_gamma_poisson_log_mass";
  tally::detail::check_positive(s, who, "s");
  same_shape(a, b, who);
  same_shape(a, k, who);
  same_shape(a, log_likelihood, who);
  if (on_device(a.where())) return population_cuda::add_gamma_poisson_log_mass(s, a, b, k, log_likelihood);
  check_positive(a, who, "a");
  check_positive(b, who, "b");
  for (std::size_t i = 0; i < a.size(); ++i)
    log_likelihood.host()[i] += math::gamma_poisson_log_mass(s, a.host()[i], b.host()[i], k.host()[i]);
}

void negative_binomial_update(Column<double>& a, Column<double>& b, double r, const Column<std::int64_t>& k) {
  constexpr const char* who = "tally::gpu::negative_binomial_update";
  tally::detail::check_positive(r, who, "r");
  same_shape(a, b, who);
  same_shape(a, k, who);
  if (on_device(a.where())) return population_cuda::negative_binomial_update(a, b, r, k);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (k.host()[i] < 0) continue;  // an impossible count: the particle's weight is 0
    a.host()[i] += r;
    b.host()[i] += static_cast<double>(k.host()[i]);
  }
}

void gamma_poisson_update(Column<double>& a, Column<double>& b, double s, const Column<std::int64_t>& k) {
  constexpr const char* who = "tally::gpu::gamma_poisson_update";
  tally::detail::check_positive(s, who, "s");
  same_shape(a, b, who);
  same_shape(a, k, who);
  if (on_device(a.where())) return population_cuda::gamma_poisson_update(a, b, s, k);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (k.host()[i] < 0) continue;  // an impossible count: the particle's weight is 0
    a.host()[i] += static_cast<double>(k.host()[i]);
    b.host()[i] += s;
  }
}

Column<double> sample_gamma(const Column<double>& a, const Column<double>& b, std::uint64_t seed,
                            std::uint64_t counter, std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_gamma";
  same_shape(a, b, who);
  if (on_device(a.where())) return population_cuda::sample_gamma(a, b, seed, counter, first_stream);
  check_positive(a, who, "a");
  check_positive(b, who, "b");
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    int next = 0;
    out[i] = detail::gamma_draw(a.host()[i], seed, first_stream + i, counter, next) / b.host()[i];
  }
  return Column<double>::host_values(std::move(out));
}

}  // namespace tally::gpu
