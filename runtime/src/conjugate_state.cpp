// Counts of conjugate parents on P particles: compound laws, closed-form evidence, conjugate updates and draws
// (Beta-binomial on the device by tally::gpu; the other families on the host, staged for a CUDA graph).
#include <cmath>
#include <limits>

#include "node.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"
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

/// Host laws placed where the graph keeps them.
Laws placed(const Place& at, std::vector<Pmf> pmfs) {
  return place(at, Batch<Pmf>::make(pmfs.size(), [&](std::size_t i) { return std::move(pmfs[i]); }));
}

/// A Poisson(a lambda) count's parameter seen as the rate a lambda: Gamma(k, theta / a).
Gamma scaled(const Gamma& g, double a) { return Gamma(g.shape, g.rate / a); }

}  // namespace

Laws count_laws(Place& at, const CountChild& c, Node& rho) {
  const bool known = rho.state == State::realized;
  auto& s = *rho.continuous;
  if (at.device() && c.family == CountChild::binomial) {
    Laws out;
    out.device = std::make_shared<const gpu::Laws>(known ? gpu::binomial_laws(*c.trials, s.scalar)
                                                         : gpu::beta_binomial_laws(*c.trials, s.params.a, s.params.b));
    out.device_nonnegative = true;
    return out;
  }
  const HostParameters p(c, rho);
  const auto &a = p.a, &b = p.b, &value = p.value;
  const auto& n = p.n;
  const Truncation& t = at.truncation;
  std::vector<Pmf> out;
  out.reserve(at.particles);
  for (std::size_t i = 0; i < at.particles; ++i) {
    switch (c.family) {
      case CountChild::binomial:
        out.push_back(known ? to_pmf(Binomial(n[i], value[i]), t) : marginal_binomial(Beta(a[i], b[i]), n[i], t));
        break;
      case CountChild::negative_binomial:
        out.push_back(known ? to_pmf(NegativeBinomial(c.successes, value[i]), t)
                            : marginal_negative_binomial(Beta(a[i], b[i]), c.successes, t));
        break;
      case CountChild::poisson:
        out.push_back(known ? to_pmf(Poisson(c.scale * value[i]), t) : marginal_poisson(scaled(Gamma(a[i], b[i]), c.scale), t));
        break;
      case CountChild::categorical:
        out.push_back(known ? to_pmf(Categorical(s.vector[i]), t) : marginal_categorical(s.params.dirichlet[i]));
        break;
    }
  }
  return placed(at, std::move(out));
}

void add_count_log_likelihood(Place& at, const CountChild& c, Node& rho, const Values& v, LogLikelihood& ll) {
  const bool known = rho.state == State::realized;
  auto& s = *rho.continuous;
  const HostParameters p(c, rho);
  const auto &a = p.a, &b = p.b, &value = p.value;
  const auto& n = p.n;
  const std::vector<std::int64_t> k = to_vector(v);
  std::vector<double> add(at.particles);
  for (std::size_t i = 0; i < at.particles; ++i) {
    switch (c.family) {
      case CountChild::binomial:
        add[i] = known ? log_pdf(Binomial(n[i], value[i]), k[i]) : log_marginal_binomial(Beta(a[i], b[i]), n[i], k[i]);
        break;
      case CountChild::negative_binomial:
        add[i] = known ? log_pdf(NegativeBinomial(c.successes, value[i]), k[i])
                       : log_marginal_negative_binomial(Beta(a[i], b[i]), c.successes, k[i]);
        break;
      case CountChild::poisson:
        add[i] = known ? log_pdf(Poisson(c.scale * value[i]), k[i]) : log_marginal_poisson(scaled(Gamma(a[i], b[i]), c.scale), k[i]);
        break;
      case CountChild::categorical:
        add[i] = known ? log_pdf(Categorical(s.vector[i]), k[i]) : log_marginal_categorical(s.params.dirichlet[i], k[i]);
        break;
    }
  }
  add_host(ll, add);
}

void conjugate_update(Place& at, const CountChild& c, Node& rho, const Values& v) {
  auto& p = rho.continuous->params;
  if (c.family == CountChild::binomial) {
    gpu::beta_update(p.a, p.b, *c.trials, *v);  // where the graph keeps them
    return;
  }
  const std::vector<std::int64_t> k = to_vector(v);
  if (c.family == CountChild::categorical) {
    for (std::size_t i = 0; i < at.particles; ++i)
      if (k[i] >= 0 && k[i] < p.dirichlet[i].alpha.size()) p.dirichlet[i] = posterior_categorical(p.dirichlet[i], k[i]);
    return;
  }
  std::vector<double> a = p.a.to_host(), b = p.b.to_host();
  for (std::size_t i = 0; i < at.particles; ++i) {
    if (k[i] < 0) continue;  // an impossible value: the particle's weight is 0, its parameters stay
    if (c.family == CountChild::negative_binomial) {
      const Beta post = posterior_negative_binomial(Beta(a[i], b[i]), c.successes, k[i]);
      a[i] = post.alpha, b[i] = post.beta;
    } else {  // Poisson(s lambda): Gamma(k + x, theta + s)
      a[i] += static_cast<double>(k[i]);
      b[i] += c.scale;
    }
  }
  p.a = gpu::Column<double>::from_host(a, at.where);
  p.b = gpu::Column<double>::from_host(b, at.where);
}

void draw_continuous(Place& at, Node& rho) {
  const auto& root = std::get<ContinuousRoot>(rho.kind);
  auto& s = *rho.continuous;
  const std::uint64_t k = at.draws++;
  switch (root.family) {
    case ContinuousRoot::beta: s.scalar = gpu::sample_beta(s.params.a, s.params.b, at.seed, k); break;
    case ContinuousRoot::gamma: {
      const auto a = s.params.a.to_host(), b = s.params.b.to_host();
      std::vector<double> out(at.particles);
      for (std::size_t i = 0; i < at.particles; ++i) out[i] = gpu::gamma_variate(a[i], at.seed, i, k) / b[i];
      s.scalar = gpu::Column<double>::from_host(out, at.where);
      break;
    }
    case ContinuousRoot::dirichlet:
      s.vector = Batch<Eigen::VectorXd>::make(at.particles, [&](std::size_t i) {
        const Eigen::VectorXd& alpha = s.params.dirichlet[i].alpha;
        Eigen::VectorXd g(alpha.size());
        // component j on its own key, so that the draws of different components are independent
        for (Eigen::Index j = 0; j < alpha.size(); ++j)
          g[j] = gpu::gamma_variate(alpha[j], at.seed ^ (0x9E37'79B9'7F4A'7C15ull * static_cast<std::uint64_t>(j + 1)), i, k);
        return Eigen::VectorXd(g / g.sum());
      });
      break;
  }
  s.params = {};
}

}  // namespace tally::runtime::detail
