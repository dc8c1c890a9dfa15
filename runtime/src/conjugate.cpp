// Conjugate continuous parents: validation, sampling, and the marginal/posterior pairs of their count children.
#include "tally/runtime/conjugate.hpp"

#include <cmath>
#include <limits>
#include <numbers>

#include "tally/distributions/beta_binomial.hpp"
#include "tally/distributions/categorical.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/error.hpp"
#include "tally/gpu/count_laws.hpp"

namespace tally::runtime {

Beta::Beta(double a, double b) : alpha(a), beta(b) {
  tally::detail::check_positive(a, "tally::runtime::Beta", "alpha");
  tally::detail::check_positive(b, "tally::runtime::Beta", "beta");
}

Gamma::Gamma(double k, double theta) : shape(k), rate(theta) {
  tally::detail::check_positive(k, "tally::runtime::Gamma", "shape");
  tally::detail::check_positive(theta, "tally::runtime::Gamma", "rate");
}

Dirichlet::Dirichlet(Eigen::VectorXd a) : alpha(std::move(a)) {
  if (alpha.size() == 0) tally::detail::fail<shape_error>("tally::runtime::Dirichlet: alpha is empty");
  for (Eigen::Index i = 0; i < alpha.size(); ++i)
    tally::detail::check_positive(alpha[i], "tally::runtime::Dirichlet", "alpha_i");
}

double mean(const Beta& d) { return d.alpha / (d.alpha + d.beta); }
double mean(const Gamma& d) { return d.shape / d.rate; }
Eigen::VectorXd mean(const Dirichlet& d) { return d.alpha / d.alpha.sum(); }

namespace {
double standard_normal(RandomStream& rng) {  // Box-Muller, one of the pair
  const double u = rng.uniform(), v = rng.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}
// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 through Gamma(shape + 1) U^(1/shape)
double standard_gamma(double shape, RandomStream& rng) {
  if (shape < 1.0) return standard_gamma(shape + 1.0, rng) * std::pow(rng.uniform(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng.uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}
}  // namespace

double sample(const Gamma& d, RandomStream& rng) { return standard_gamma(d.shape, rng) / d.rate; }

double sample(const Beta& d, RandomStream& rng) {
  const double x = standard_gamma(d.alpha, rng), y = standard_gamma(d.beta, rng);
  return x / (x + y);
}

Eigen::VectorXd sample(const Dirichlet& d, RandomStream& rng) {
  Eigen::VectorXd g(d.alpha.size());
  for (Eigen::Index i = 0; i < g.size(); ++i) g[i] = standard_gamma(d.alpha[i], rng);
  return g / g.sum();
}

Pmf marginal_binomial(const Beta& rho, std::int64_t n, const Truncation& t) {
  return to_pmf(BetaBinomial(n, rho.alpha, rho.beta), t);
}

Beta posterior_binomial(const Beta& rho, std::int64_t n, std::int64_t k) {
  return Beta(rho.alpha + static_cast<double>(k), rho.beta + static_cast<double>(n - k));
}

double log_marginal_binomial(const Beta& rho, std::int64_t n, std::int64_t k) {
  return log_pdf(BetaBinomial(n, rho.alpha, rho.beta), k);
}

double log_marginal_negative_binomial(const Beta& rho, double r, std::int64_t k) {
  // log P(k) = lgamma(r + k) - lgamma(k + 1) - lgamma(r) + lbeta(a + r, b + k) - lbeta(a, b)
  if (k < 0) return -std::numeric_limits<double>::infinity();
  auto lbeta = [](double x, double y) { return std::lgamma(x) + std::lgamma(y) - std::lgamma(x + y); };
  const double kd = static_cast<double>(k), a = rho.alpha, b = rho.beta;
  return std::lgamma(r + kd) - std::lgamma(kd + 1.0) - std::lgamma(r) + lbeta(a + r, b + kd) - lbeta(a, b);
}

double log_marginal_poisson(const Gamma& lambda, std::int64_t x) {
  return log_pdf(NegativeBinomial(lambda.shape, lambda.rate / (lambda.rate + 1.0)), x);
}

double log_marginal_categorical(const Dirichlet& pi, std::int64_t x) {
  if (x < 0 || x >= pi.alpha.size()) return -std::numeric_limits<double>::infinity();
  return std::log(pi.alpha[x] / pi.alpha.sum());
}

Pmf marginal_negative_binomial(const Beta& rho, double r, const Truncation& t) {
  tally::detail::check_positive(r, "tally::runtime::marginal_negative_binomial", "r");
  // the cut by a bound on the polynomial tail, the masses by the saddle-point forms: gpu::count_laws' rule and
  // formulas (a CUDA graph's laws are the same)
  const gpu::CountLaws laws = gpu::count_laws(gpu::CountFamily::beta_negative_binomial, r,
                                              gpu::Column<double>::host_values({rho.alpha}),
                                              gpu::Column<double>::host_values({rho.beta}), t.tolerance, t.max_size);
  const gpu::PmfBatch& b = laws.laws.host();
  const auto w = b[0];
  return Pmf(b.lo[0], Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(w.data(), static_cast<Eigen::Index>(w.size()))),
             b.log_scale[0], laws.error);
}

Beta posterior_negative_binomial(const Beta& rho, double r, std::int64_t k) {
  return Beta(rho.alpha + r, rho.beta + static_cast<double>(k));
}

Pmf marginal_poisson(const Gamma& lambda, const Truncation& t) {
  return to_pmf(NegativeBinomial(lambda.shape, lambda.rate / (lambda.rate + 1.0)), t);
}

Gamma posterior_poisson(const Gamma& lambda, std::int64_t x) {
  return Gamma(lambda.shape + static_cast<double>(x), lambda.rate + 1.0);
}

Pmf marginal_categorical(const Dirichlet& pi) { return to_pmf(Categorical(pi.alpha)); }

Dirichlet posterior_categorical(const Dirichlet& pi, std::int64_t x) {
  if (x < 0 || x >= pi.alpha.size())
    tally::detail::fail<domain_error>("tally::runtime::posterior_categorical: category ", x, " outside [0, ",
                                      pi.alpha.size(), ")");
  Dirichlet out = pi;
  out.alpha[x] += 1.0;
  return out;
}

}  // namespace tally::runtime
