// Private: what the CPU references of the population operations share: shape checks and errors, and conditioning
// each particle's law on an observation by a per-value likelihood.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "binomial_math.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "infinities.hpp"

namespace tally::gpu::detail {

/// shape_error unless a and b have the same size and place.
template <class A, class B>
void same_shape(const A& a, const B& b, const char* who) {
  if (a.size() != b.size() || a.where() != b.where())
    tally::detail::fail<shape_error>(who, ": operands of ", a.size(), " and ", b.size(), " particles",
                                     a.where() != b.where() ? " in different memories (host and device)" : "");
}

inline bool on_device(Backend where) { return where == Backend::cuda; }

/// The errors of population_chain (host and device alike): a law leaving the table's k states, a state not one.
[[noreturn]] inline void fail_states(const char* who, std::size_t i, std::int64_t lo, std::int64_t hi, std::size_t k) {
  tally::detail::fail<domain_error>(who, ": particle ", i, "'s law on ", lo, " .. ", hi, " leaves the ", k,
                                    " states 0 .. ", k - 1, " of the table");
}
[[noreturn]] inline void fail_state(const char* who, std::size_t i, std::int64_t s, std::size_t k) {
  tally::detail::fail<domain_error>(who, ": particle ", i, "'s state ", s, " is not one of the ", k, " states 0 .. ",
                                    k - 1, " of the table");
}

/// sample_binomial's parameter check (host and device alike): 0 <= n <= 2^53 (binomial_draw_max_n) and q in [0, 1].
inline void check_binomial(const char* who, std::size_t i, std::int64_t n, double q) {
  if (n < 0 || n > binomial_draw_max_n || !(q >= 0.0 && q <= 1.0))
    tally::detail::fail<domain_error>(who, ": particle ", i, " asks for Binomial(n = ", n, ", q = ", q,
                                      "): n must be in 0 .. 2^53 and q in [0, 1]");
}

/// log M_i = log_scale_i + log sum_k w_{i,k}: the mass of law i (-inf without mass).
inline double log_mass(const PmfBatch& a, std::size_t i) {
  double w = 0.0;
  for (std::size_t k = 0; k < a.length(i); ++k) w += a.weights[static_cast<std::size_t>(a.offset[i]) + k];
  return a.log_scale[i] + std::log(w);
}

/// Law i becomes \f$ w'_{i,k} \propto w_{i,k}\, e^{\ell(i, lo_i + k)} \f$ (max 1 again, log_scale the normalizer)
/// and \f$ \log L_i = \mathrm{log\_scale}_i + \log \sum_k w_{i,k} e^{\ell(i, lo_i + k)} \f$ is added to
/// log_likelihood; the terms are formed in logarithms, so likelihoods far below the smallest double stay exact. A
/// dead particle (log_scale -inf) stays dead and adds -inf; an impossible observation (every term -inf) adds -inf
/// and leaves the law as it was (as tally::condition does: the particle's weight says it). Host laws only; the
/// device form is population_kernels.cuh's condition_kernel, with the same steps.
template <class LogLik>
Laws condition_by(const Laws& x, LogLik log_lik, Column<double>& log_likelihood, const char* who) {
  Laws out = Laws::allocate(Backend::cpu, x.size(), x.total(), x.max_length(), who);
  const PmfBatch& a = x.host();
  PmfBatch& b = out.host();
  b.offset = a.offset;
  b.lo = a.lo;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto begin = static_cast<std::size_t>(a.offset[i]), m = a.length(i);
    double top = neg_inf;
    for (std::size_t k = 0; k < m; ++k) {
      const double w = a.weights[begin + k];
      const double l = w > 0.0 ? std::log(w) + log_lik(i, a.lo[i] + std::int64_t(k)) : neg_inf;
      top = std::max(top, b.weights[begin + k] = l);
    }
    if (top == neg_inf || a.log_scale[i] == neg_inf) {  // impossible here (the law stays), or already dead
      std::copy_n(a.weights.begin() + static_cast<std::ptrdiff_t>(begin), m,
                  b.weights.begin() + static_cast<std::ptrdiff_t>(begin));
      b.log_scale[i] = a.log_scale[i];
      log_likelihood.host()[i] = neg_inf;
      continue;
    }
    double sum = 0;
    for (std::size_t k = 0; k < m; ++k) sum += (b.weights[begin + k] = std::exp(b.weights[begin + k] - top));
    b.log_scale[i] = -std::log(sum);
    log_likelihood.host()[i] += a.log_scale[i] + top + std::log(sum);
  }
  return out;
}

}  // namespace tally::gpu::detail
