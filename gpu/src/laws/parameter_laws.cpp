// Count laws given by their parameters: the CPU reference of conditioning their sum on a value, and the dispatch.
#include "tally/gpu/parameter_laws.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "diagonal_math.hpp"
#include "population_cuda.hpp"
#include "population_reference.hpp"
#include "tally/gpu/population_ops.hpp"
#include "infinities.hpp"

namespace tally::gpu {

namespace {


/// The checks every form makes: shapes, a sign of +-1, the same place.
void check_operands(const ParameterLaws& x, const ParameterLaws& y, int sign, const Column<std::int64_t>& z,
                    const Column<double>& log_likelihood, const char* who) {
  if (sign != 1 && sign != -1) tally::detail::fail<domain_error>(who, ": sign ", sign, " must be +1 or -1");
  for (const ParameterLaws* p : {&x, &y}) {
    detail::same_shape(p->n, z, who);
    detail::same_shape(p->a, z, who);
    if (p->family == ParameterFamily::beta_binomial) detail::same_shape(p->b, z, who);
  }
  detail::same_shape(log_likelihood, z, who);
}

/// The first particle whose parameters are bad, as a domain_error.
template <class Parameters>
void check_parameters(const Parameters& p, std::size_t count, const char* who, const char* law) {
  for (std::size_t i = 0; i < count; ++i)
    if (p.bad(static_cast<std::int64_t>(i)))
      tally::detail::fail<domain_error>(who, ": particle ", i, " has ", law, " with n = ", p.n[i],
                                        p.n[i] < 0 ? " (n must be >= 0)"
                                        : p.n[i] >= (std::int64_t{1} << 32) ? " (too large for a dense law)"
                                                                           : " and parameters outside their domain");
}

/// One particle's posterior on its diagonal d (host): raw weights relative to the largest log mass at the chunks'
/// first k (walk_law per chunk; walked again with a higher base if any overflows), then scaled to maximum 1.
template <class Terms>
void condition_one(const Terms& terms, const detail::Diagonal& d, PmfBatch& out, std::size_t i,
                   std::vector<double>& w, double& log_likelihood) {
  const std::int64_t chunks = detail::diagonal_chunks(d), m = d.length();
  double base = neg_inf;
  for (std::int64_t c = 0; c < chunks; ++c) base = std::max(base, terms.log_mass(d.first + c * detail::law_chunk));
  if (base == neg_inf)  // no chunk starts where both masses are positive (point masses): the largest of every k
    for (std::int64_t k = d.first; k <= d.last; ++k) base = std::max(base, terms.log_mass(k));
  if (base == neg_inf) base = 0.0;  // impossible: every weight 0
  w.assign(static_cast<std::size_t>(m), 0.0);
  double mx = 0.0, sum = 0.0;
  for (;;) {
    mx = 0.0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const std::int64_t k0 = c * detail::law_chunk;
      const int len = static_cast<int>(std::min<std::int64_t>(detail::law_chunk, m - k0));
      detail::walk_law(terms, base, d.first + k0, len, [&](int j, double v) { w[static_cast<std::size_t>(k0 + j)] = v; },
                       std::numeric_limits<double>::infinity());
    }
    for (double v : w) mx = std::max(mx, v);
    if (std::isfinite(mx)) break;
    base += detail::diagonal_base_step;
  }
  for (double v : w) sum += v;
  if (!(mx > 0.0)) {  // impossible: the diagonal's weights 0, no mass
    out.weights.insert(out.weights.end(), w.size(), 0.0);
    out.lo[i] = d.first;
    out.log_scale[i] = neg_inf;
    log_likelihood = neg_inf;
  } else {
    for (double v : w) out.weights.push_back(v / mx);
    out.lo[i] = d.first;
    out.log_scale[i] = std::log(mx) - std::log(sum);  // normalized, as condition_on_sum's posteriors are
    log_likelihood = base + std::log(sum);
  }
  out.offset[i + 1] = static_cast<std::int64_t>(out.weights.size());
}

template <class PX, class PY>
Laws condition_host(const PX& px, const PY& py, int sign, const Column<std::int64_t>& z, Column<double>& ll,
                    const char* who) {
  const std::size_t count = z.size();
  Laws out = Laws::allocate(Backend::cpu, count, 0, 1, who);
  PmfBatch& b = out.host();
  std::vector<double> w;
  for (std::size_t i = 0; i < count; ++i) {
    const auto k = static_cast<std::int64_t>(i);
    const detail::Diagonal d = detail::diagonal_of(px.n[i], py.n[i], sign, z.host()[i]);
    double add = neg_inf;
    if (d.empty()) {
      b.weights.push_back(0.0);
      b.lo[i] = detail::impossible_lo(d, px.n[i]);
      b.log_scale[i] = neg_inf;
      b.offset[i + 1] = static_cast<std::int64_t>(b.weights.size());
    } else {
      condition_one(detail::DiagonalTerms(px.terms(k), py.terms(k), z.host()[i], sign), d, b, i, w, add);
    }
    ll.host()[i] += add;
  }
  return Laws::from_host(std::move(b), Backend::cpu);
}

}  // namespace

Laws weights_of(const ParameterLaws& x) {
  return x.family == ParameterFamily::binomial ? binomial_laws(x.n, x.a, x.n_max)
                                               : beta_binomial_laws(x.n, x.a, x.b, x.n_max);
}

Laws condition_on_sum(const ParameterLaws& x, const ParameterLaws& y, int sign, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_sum (parameter laws)";
  check_operands(x, y, sign, z, log_likelihood, who);
  if (detail::on_device(z.where())) return population_cuda::condition_on_sum(x, y, sign, z, log_likelihood);
  const std::size_t count = z.size();
  const auto binomial = [](const ParameterLaws& p) { return detail::BinomialParameters{p.n.data(), p.a.data()}; };
  const auto beta_binomial = [](const ParameterLaws& p) {
    return detail::BetaBinomialParameters{p.n.data(), p.a.data(), p.b.data()};
  };
  const bool bx = x.family == ParameterFamily::binomial, by = y.family == ParameterFamily::binomial;
  if (bx) check_parameters(binomial(x), count, who, "Binomial(n, q)");
  else check_parameters(beta_binomial(x), count, who, "BetaBinomial(n, a, b)");
  if (by) check_parameters(binomial(y), count, who, "Binomial(n, q)");
  else check_parameters(beta_binomial(y), count, who, "BetaBinomial(n, a, b)");
  if (bx && by) return condition_host(binomial(x), binomial(y), sign, z, log_likelihood, who);
  if (bx) return condition_host(binomial(x), beta_binomial(y), sign, z, log_likelihood, who);
  if (by) return condition_host(beta_binomial(x), binomial(y), sign, z, log_likelihood, who);
  return condition_host(beta_binomial(x), beta_binomial(y), sign, z, log_likelihood, who);
}

}  // namespace tally::gpu
