// Counts of conjugate parents on P particles: compound laws, closed-form evidence, conjugate updates and draws, by
// tally::gpu's population operations where the graph keeps its state (population_conjugate for Beta and Gamma
// parents, population_dirichlet for a Dirichlet's categorical counts).
#include <bit>
#include <cmath>
#include <limits>
#include <optional>

#include "distinct.hpp"
#include "node.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/gpu/count_laws.hpp"
#include "tally/gpu/population_conjugate.hpp"
#include "tally/gpu/population_dirichlet.hpp"
#include "tally/gpu/population_ops.hpp"

namespace tally::runtime::detail {
namespace {

/// What the host loops below read of a count's parameter, per particle: the posterior parameters a, b (Beta or
/// Gamma) while rho is marginalized, its scalar value once realized (Beta or Gamma), and the trials of a Binomial.
struct HostParameters {
  std::vector<double> a, b, value;
  std::vector<std::int64_t> n;
  HostParameters(const CountChild& c, const Node& rho) {
    const auto& s = *rho.continuous;
    if (rho.state != State::realized) {
      a = s.params.a.to_host();
      b = s.params.b.to_host();
    } else if (c.family != CountChild::categorical) {
      value = s.scalar.to_host();
    }
    if (c.family == CountChild::binomial) n = to_vector(c.trials);
  }
};

/// A Poisson(a lambda) count's parameter seen as the rate a lambda: Gamma(k, theta / a).
Gamma scaled(const Gamma& g, double a) { return Gamma(g.shape, g.rate / a); }

/// A negative binomial or Poisson count's laws on a CUDA graph. Where every particle holds the same parameters
/// (nothing per particle has entered rho yet), the one law the CPU graph makes, shared by all; otherwise
/// gpu::count_laws over the population (each law cut to its own window: at most the same mass dropped, by tail
/// bounds rather than the host's exact tails, so a window may hold a few entries more; a Beta's negative binomial,
/// the same law as the host's).
Laws device_count_laws(Place& at, const CountChild& c, Node& rho) {
  const bool known = rho.state == State::realized, poisson = c.family == CountChild::poisson;
  const auto& s = *rho.continuous;
  const Truncation& t = at.truncation;
  const gpu::Column<double>& a = known ? s.scalar : s.params.a;
  const std::optional<double> a0 = gpu::common_value(a);
  const std::optional<double> b0 = known ? std::optional<double>(0.0)
                                   : a0  ? gpu::common_value(s.params.b)
                                         : std::nullopt;
  if (a0 && b0) {
    if (known) return prior(at, poisson ? to_pmf(Poisson(c.scale * *a0), t) : to_pmf(NegativeBinomial(c.successes, *a0), t));
    return prior(at, poisson ? marginal_poisson(scaled(Gamma(*a0, *b0), c.scale), t)
                             : marginal_negative_binomial(Beta(*a0, *b0), c.successes, t));
  }
  using gpu::CountFamily;
  const CountFamily family = known ? (poisson ? CountFamily::poisson : CountFamily::negative_binomial)
                                   : (poisson ? CountFamily::gamma_poisson : CountFamily::beta_negative_binomial);
  const gpu::Column<double> none;
  gpu::CountLaws made =
      gpu::count_laws(family, poisson ? c.scale : c.successes, a, known ? none : s.params.b, t.tolerance, t.max_size);
  return device_laws(std::move(made.laws), made.error, true);
}

/// A categorical count's laws: Categorical(pi_i), or with pi ~ Dirichlet(alpha_i) integrated out its marginal
/// Categorical(alpha_i / sum alpha_i). Rows known to be equal (nothing per particle entered alpha yet): one law for
/// all; otherwise a law per particle (the device's gpu::categorical_laws; the host's once per distinct row).
Laws categorical_count_laws(Place& at, Node& rho) {
  const bool known = rho.state == State::realized;
  const auto& s = *rho.continuous;
  const gpu::Vectors& rows = known ? s.vector : s.params.dirichlet;
  const std::size_t K = rows.dimension;
  const auto law_of = [&](const double* r) {
    const Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(r, static_cast<Eigen::Index>(K));
    return known ? to_pmf(Categorical(v), at.truncation) : marginal_categorical(Dirichlet(v));
  };
  if (rows.uniform) {
    std::vector<double> first(K);  // row 0, read back from the device (K numbers)
    if (rows.where() == gpu::Backend::cpu) std::copy_n(rows.entries.host().begin(), K, first.begin());
    else gpu::detail::device_copy(first.data(), rows.entries.data(), K * sizeof(double), 1);
    return prior(at, law_of(first.data()));
  }
  if (at.device()) return device_laws(gpu::categorical_laws(rows), 0.0, true);
  const double* h = rows.entries.host().data();
  const auto row = [&](std::size_t i) { return h + i * K; };
  const auto first = first_copies(
      at.particles,
      [&](std::size_t i) {
        std::uint64_t key = 0;
        for (std::size_t j = 0; j < K; ++j) key = mix(key, std::bit_cast<std::uint64_t>(row(i)[j]));
        return key;
      },
      [&](std::size_t i, std::size_t j) { return std::equal(row(i), row(i) + K, row(j)); });
  return place(at, to_batch(compute_once(first, [&](std::size_t i) { return law_of(row(i)); }), at.particles));
}

}  // namespace

Laws count_laws(Place& at, const CountChild& c, Node& rho) {
  const bool known = rho.state == State::realized;
  auto& s = *rho.continuous;
  if (c.family == CountChild::categorical) return categorical_count_laws(at, rho);
  if (at.device() && c.family == CountChild::binomial)  // kept as parameters: weights written when needed
    return known ? parameter_laws(at, gpu::ParameterFamily::binomial, c.trials, s.scalar, nullptr)
                 : parameter_laws(at, gpu::ParameterFamily::beta_binomial, c.trials, s.params.a, &s.params.b);
  if (at.device() && (c.family == CountChild::poisson || c.family == CountChild::negative_binomial))
    return device_count_laws(at, c, rho);
  const HostParameters p(c, rho);
  const auto &a = p.a, &b = p.b, &value = p.value;
  const auto& n = p.n;
  const Truncation& t = at.truncation;
  const auto law = [&](std::size_t i) {
    switch (c.family) {
      case CountChild::binomial:
        return known ? to_pmf(Binomial(n[i], value[i]), t) : marginal_binomial(Beta(a[i], b[i]), n[i], t);
      case CountChild::negative_binomial:
        return known ? to_pmf(NegativeBinomial(c.successes, value[i]), t)
                     : marginal_negative_binomial(Beta(a[i], b[i]), c.successes, t);
      case CountChild::poisson:
      case CountChild::categorical: break;  // (categorical: above)
    }
    return known ? to_pmf(Poisson(c.scale * value[i]), t) : marginal_poisson(scaled(Gamma(a[i], b[i]), c.scale), t);
  };
  // particles with equal parameters share one law (all of them before anything is drawn: then one law for all)
  const auto bits = [](const std::vector<double>& v, std::size_t i) { return v.empty() ? 0 : std::bit_cast<std::uint64_t>(v[i]); };
  const auto first = first_copies(
      at.particles,
      [&](std::size_t i) {
        return mix(mix(mix(bits(a, i), bits(b, i)), bits(value, i)), n.empty() ? 0 : static_cast<std::uint64_t>(n[i]));
      },
      [&](std::size_t i, std::size_t j) {
        return bits(a, i) == bits(a, j) && bits(b, i) == bits(b, j) && bits(value, i) == bits(value, j) &&
               (n.empty() || n[i] == n[j]);
      });
  return place(at, to_batch(compute_once(first, law), at.particles));
}

/// add_count_log_likelihood: by tally::gpu's population operations, where the graph keeps its columns (the same
/// formulas on both).
void add_count_log_likelihood(Place&, const CountChild& c, Node& rho, const Values& v, LogLikelihood& ll) {
  const bool known = rho.state == State::realized;
  auto& s = *rho.continuous;
  switch (c.family) {
    case CountChild::binomial:
      if (known) gpu::add_binomial_log_mass(*c.trials, s.scalar, *v, ll.values);
      else gpu::add_beta_binomial_log_mass(*c.trials, s.params.a, s.params.b, *v, ll.values);
      return;
    case CountChild::negative_binomial:
      if (known) gpu::add_negative_binomial_log_mass(c.successes, s.scalar, *v, ll.values);
      else gpu::add_beta_negative_binomial_log_mass(c.successes, s.params.a, s.params.b, *v, ll.values);
      return;
    case CountChild::poisson:
      if (known) gpu::add_poisson_log_mass(c.scale, s.scalar, *v, ll.values);
      else gpu::add_gamma_poisson_log_mass(c.scale, s.params.a, s.params.b, *v, ll.values);
      return;
    case CountChild::categorical:
      if (known) gpu::add_categorical_log_mass(s.vector, *v, ll.values);
      else gpu::add_dirichlet_categorical_log_mass(s.params.dirichlet, *v, ll.values);
      return;
  }
}

void conjugate_update(Place&, const CountChild& c, Node& rho, const Values& v) {
  auto& p = rho.continuous->params;
  // where the graph keeps them; particles with impossible values keep their parameters (their weight is 0)
  switch (c.family) {
    case CountChild::binomial: gpu::beta_update(p.a, p.b, *c.trials, *v); return;
    case CountChild::negative_binomial: gpu::negative_binomial_update(p.a, p.b, c.successes, *v); return;
    case CountChild::poisson: gpu::gamma_poisson_update(p.a, p.b, c.scale, *v); return;  // Gamma(k + x, theta + s)
    case CountChild::categorical: {  // alpha_k + 1; one category observed in every particle keeps the rows equal
      const bool uniform = p.dirichlet.uniform && v.same.has_value();
      gpu::dirichlet_update(p.dirichlet, *v);
      p.dirichlet.uniform = uniform;
      return;
    }
  }
}

void draw_continuous(Place& at, Node& rho) {
  const auto& root = std::get<ContinuousRoot>(rho.kind);
  auto& s = *rho.continuous;
  const std::uint64_t k = at.draws;  // counted once drawn: a failed draw (device memory) is retried with k
  switch (root.family) {
    case ContinuousRoot::beta: s.scalar = gpu::sample_beta(s.params.a, s.params.b, at.seed, k, at.first_particle); break;
    case ContinuousRoot::gamma: s.scalar = gpu::sample_gamma(s.params.a, s.params.b, at.seed, k, at.first_particle); break;
    case ContinuousRoot::dirichlet:
      s.vector = gpu::sample_dirichlet(s.params.dirichlet, at.seed, k, at.first_particle);
      break;
  }
  ++at.draws;
  s.params = {};
}

}  // namespace tally::runtime::detail
