// The CUDA forms of population_conjugate: one thread per particle, the formulas of conjugate_math.hpp; nothing is
// read back (a particle with bad parameters gets NaN where the CPU reference throws).
#include <cstdint>

#include "conjugate_math.hpp"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_math.hpp"
#include "tally/gpu/population_conjugate.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;
namespace math = detail::conjugate;

void add_beta_binomial_log_mass(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  const std::int64_t *np = n.data(), *kp = k.data();
  const double *ap = a.data(), *bp = b.data();
  double* l = log_likelihood.data();
  each(n.size(), [=] __device__(long long i) {
    const bool ok = np[i] >= 0 && math::positive(ap[i]) && math::positive(bp[i]);
    l[i] += ok ? math::beta_binomial_log_mass(np[i], kp[i], ap[i], bp[i]) : NAN;
  });
}

namespace {
/// One term of condition_on_beta_thinning: log BetaBinomial(v_i; k, a_i, b_i) for the parent value k (-inf for bad
/// parameters: the particle's log-likelihood is set to NaN after).
struct BetaThinningLogLik {
  const std::int64_t* v;
  const double *a, *b;
  __device__ double operator()(long long i, std::int64_t k) const {
    if (!math::positive(a[i]) || !math::positive(b[i])) return -INFINITY;
    return math::beta_binomial_log_mass(k, v[i], a[i], b[i]);
  }
};
}  // namespace

Laws condition_on_beta_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& a,
                                const Column<double>& b, Column<double>& log_likelihood) {
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), "tally::gpu::condition_on_beta_thinning");
  condition_laws(x, BetaThinningLogLik{v.data(), a.data(), b.data()}, out, log_likelihood);
  // (the conditioning takes a law whose terms are all NaN for impossible: bad parameters are NaN here, as documented)
  const double *ap = a.data(), *bp = b.data();
  double* l = log_likelihood.data();
  each(x.size(), [=] __device__(long long i) {
    if (!math::positive(ap[i]) || !math::positive(bp[i])) l[i] = NAN;
  });
  return out;
}

void add_binomial_log_mass(const Column<std::int64_t>& n, const double* q, double q_value,
                           const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  const std::int64_t *np = n.data(), *kp = k.data();
  double* l = log_likelihood.data();
  each(n.size(), [=] __device__(long long i) {
    const double qi = q != nullptr ? q[i] : q_value;
    const bool ok = np[i] >= 0 && math::probability(qi);
    l[i] += ok ? math::binomial_log_mass(np[i], kp[i], qi) : NAN;
  });
}

void observe_binomial(const Column<std::int64_t>& n, double q, const Column<std::int64_t>& k,
                      Column<double>& log_likelihood, Column<double>& log_weight) {
  const std::int64_t *np = n.data(), *kp = k.data();
  double *l = log_likelihood.data(), *w = log_weight.data();
  each(n.size(), [=] __device__(long long i) {
    const double li = 0.0 + (np[i] >= 0 ? math::binomial_log_mass(np[i], kp[i], q) : NAN);  // as added to a zero
    l[i] = li;
    w[i] += li;
  });
}

void add_negative_binomial_log_mass(double r, const Column<double>& q, const Column<std::int64_t>& k,
                                    Column<double>& log_likelihood) {
  const std::int64_t* kp = k.data();
  const double* qp = q.data();
  double* l = log_likelihood.data();
  each(q.size(), [=] __device__(long long i) {
    l[i] += math::probability(qp[i]) ? math::negative_binomial_log_mass(r, qp[i], kp[i]) : NAN;
  });
}

void add_beta_negative_binomial_log_mass(double r, const Column<double>& a, const Column<double>& b,
                                         const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  const std::int64_t* kp = k.data();
  const double *ap = a.data(), *bp = b.data();
  double* l = log_likelihood.data();
  each(a.size(), [=] __device__(long long i) {
    const bool ok = math::positive(ap[i]) && math::positive(bp[i]);
    l[i] += ok ? math::beta_negative_binomial_log_mass(r, ap[i], bp[i], kp[i]) : NAN;
  });
}

void add_poisson_log_mass(double s, const Column<double>& lambda, const Column<std::int64_t>& k,
                          Column<double>& log_likelihood) {
  const std::int64_t* kp = k.data();
  const double* lp = lambda.data();
  double* l = log_likelihood.data();
  each(lambda.size(), [=] __device__(long long i) {
    const double rate = s * lp[i];
    const bool ok = math::nonnegative(lp[i]) && math::nonnegative(rate);
    l[i] += ok ? math::poisson_log_mass(rate, kp[i]) : NAN;
  });
}

void add_gamma_poisson_log_mass(double s, const Column<double>& a, const Column<double>& b,
                                const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  const std::int64_t* kp = k.data();
  const double *ap = a.data(), *bp = b.data();
  double* l = log_likelihood.data();
  each(a.size(), [=] __device__(long long i) {
    const bool ok = math::positive(ap[i]) && math::positive(bp[i]);
    l[i] += ok ? math::gamma_poisson_log_mass(s, ap[i], bp[i], kp[i]) : NAN;
  });
}

void negative_binomial_update(Column<double>& a, Column<double>& b, double r, const Column<std::int64_t>& k) {
  double *ap = a.data(), *bp = b.data();
  const std::int64_t* kp = k.data();
  each(a.size(), [=] __device__(long long i) {
    if (kp[i] < 0) return;  // an impossible count: the particle's weight is 0
    ap[i] += r;
    bp[i] += static_cast<double>(kp[i]);
  });
}

void gamma_poisson_update(Column<double>& a, Column<double>& b, double s, const Column<std::int64_t>& k) {
  double *ap = a.data(), *bp = b.data();
  const std::int64_t* kp = k.data();
  each(a.size(), [=] __device__(long long i) {
    if (kp[i] < 0) return;  // an impossible count: the particle's weight is 0
    ap[i] += static_cast<double>(kp[i]);
    bp[i] += s;
  });
}

Column<double> sample_gamma(const Column<double>& a, const Column<double>& b, std::uint64_t seed,
                            std::uint64_t counter, std::uint64_t first_stream) {
  auto out = Column<double>::allocate(Backend::cuda, a.size(), "tally::gpu::sample_gamma");
  const double *ap = a.data(), *bp = b.data();
  double* o = out.data();
  each(a.size(), [=] __device__(long long i) {
    if (!(math::positive(ap[i]) && math::positive(bp[i]))) {
      o[i] = NAN;
      return;
    }
    int next = 0;
    o[i] = detail::gamma_draw(ap[i], seed, first_stream + static_cast<std::uint64_t>(i), counter, next) / bp[i];
  });
  return out;
}

}  // namespace tally::gpu::population_cuda
