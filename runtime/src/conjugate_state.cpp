// Counts of conjugate parents on P particles: compound laws, closed-form evidence, conjugate updates and draws, by
// tally::gpu's population operations where the graph keeps its state (what has no kernel is staged on the host:
// everything of a Dirichlet, whose parameters live on the host).
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

}  // namespace

Laws count_laws(Place& at, const CountChild& c, Node& rho) {
  const bool known = rho.state == State::realized;
  auto& s = *rho.continuous;
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
        return known ? to_pmf(Poisson(c.scale * value[i]), t) : marginal_poisson(scaled(Gamma(a[i], b[i]), c.scale), t);
      case CountChild::categorical: break;
    }
    return known ? to_pmf(Categorical(s.vector[i]), t) : marginal_categorical(s.params.dirichlet[i]);
  };
  // particles with equal parameters share one law (all of them before anything is drawn: then one law for all)
  const auto bits = [](const std::vector<double>& v, std::size_t i) { return v.empty() ? 0 : std::bit_cast<std::uint64_t>(v[i]); };
  const auto first = first_copies(
      at.particles,
      [&](std::size_t i) {
        return mix(mix(mix(bits(a, i), bits(b, i)), bits(value, i)), n.empty() ? 0 : static_cast<std::uint64_t>(n[i]));
      },
      [&](std::size_t i, std::size_t j) {
        if (c.family == CountChild::categorical) {
          const Eigen::VectorXd &x = known ? s.vector[i] : s.params.dirichlet[i].alpha,
                                &y = known ? s.vector[j] : s.params.dirichlet[j].alpha;
          return x.size() == y.size() && x == y;
        }
        return bits(a, i) == bits(a, j) && bits(b, i) == bits(b, j) && bits(value, i) == bits(value, j) &&
               (n.empty() || n[i] == n[j]);
      });
  return place(at, to_batch(compute_once(first, law), at.particles));
}

/// add_count_log_likelihood for every family but the categorical (whose Dirichlet lives on the host): by
/// tally::gpu's population operations, where the graph keeps its columns (the same formulas on both).
void add_count_log_likelihood_columns(const CountChild& c, Node& rho, const Values& v, LogLikelihood& ll) {
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
    case CountChild::categorical: break;
  }
}

void add_count_log_likelihood(Place& at, const CountChild& c, Node& rho, const Values& v, LogLikelihood& ll) {
  if (c.family != CountChild::categorical) return add_count_log_likelihood_columns(c, rho, v, ll);
  // Categorical(pi): pi's Dirichlet parameters (or its realized vectors) live on the host
  const bool known = rho.state == State::realized;
  const auto& s = *rho.continuous;
  const std::vector<std::int64_t> k = to_vector(v);
  std::vector<double> add(at.particles);
  for (std::size_t i = 0; i < at.particles; ++i)
    add[i] = known ? log_pdf(Categorical(s.vector[i]), k[i]) : log_marginal_categorical(s.params.dirichlet[i], k[i]);
  add_host(ll, add);
}

void conjugate_update(Place& at, const CountChild& c, Node& rho, const Values& v) {
  auto& p = rho.continuous->params;
  // where the graph keeps them; particles with impossible values keep their parameters (their weight is 0)
  switch (c.family) {
    case CountChild::binomial: gpu::beta_update(p.a, p.b, *c.trials, *v); return;
    case CountChild::negative_binomial: gpu::negative_binomial_update(p.a, p.b, c.successes, *v); return;
    case CountChild::poisson: gpu::gamma_poisson_update(p.a, p.b, c.scale, *v); return;  // Gamma(k + x, theta + s)
    case CountChild::categorical: break;
  }
  const std::vector<std::int64_t> k = to_vector(v);
  for (std::size_t i = 0; i < at.particles; ++i)
    if (k[i] >= 0 && k[i] < p.dirichlet[i].alpha.size()) p.dirichlet.set(i, posterior_categorical(p.dirichlet[i], k[i]));
}

void draw_continuous(Place& at, Node& rho) {
  const auto& root = std::get<ContinuousRoot>(rho.kind);
  auto& s = *rho.continuous;
  const std::uint64_t k = at.draws;  // counted once drawn: a failed draw (device memory) is retried with k
  switch (root.family) {
    case ContinuousRoot::beta: s.scalar = gpu::sample_beta(s.params.a, s.params.b, at.seed, k, at.first_particle); break;
    case ContinuousRoot::gamma: s.scalar = gpu::sample_gamma(s.params.a, s.params.b, at.seed, k, at.first_particle); break;
    case ContinuousRoot::dirichlet:
      s.vector = Batch<Eigen::VectorXd>::make(at.particles, [&](std::size_t i) {
        const Eigen::VectorXd& alpha = s.params.dirichlet[i].alpha;
        Eigen::VectorXd g(alpha.size());
        // component j on its own key, so that the draws of different components are independent
        for (Eigen::Index j = 0; j < alpha.size(); ++j)
          g[j] = gpu::gamma_variate(alpha[j], at.seed ^ (0x9E37'79B9'7F4A'7C15ull * static_cast<std::uint64_t>(j + 1)),
                                    at.first_particle + i, k);
        return Eigen::VectorXd(g / g.sum());
      });
      break;
  }
  ++at.draws;
  s.params = {};
}

}  // namespace tally::runtime::detail
