// Exact 50-digit enumeration of small discrete programs, conjugate closed forms, and checks of tally against them.
#pragma once

#include <algorithm>
#include <boost/math/distributions/chi_squared.hpp>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "brute_force.hpp"
#include "reference.hpp"
#include "tally/distributions/pmf.hpp"

namespace tally::test {

// ---- laws of the families, in 50 digits ---------------------------------------------------------------------
inline big exp_big(const big& x) { return boost::multiprecision::exp(x); }

inline Law point_law(std::int64_t v) { return {{v, big(1)}}; }

/// Binomial(n, p), each (n, p) computed once (the enumerations ask for the same laws many times: 50-digit logs and
/// exponentials are slow).
inline const Law& binomial_law(std::int64_t n, double p) {
  static thread_local std::map<std::pair<std::int64_t, double>, Law> made;
  auto [it, fresh] = made.try_emplace({n, p});
  if (fresh)
    for (std::int64_t k = 0; k <= n; ++k) it->second[k] = exp_big(log_binomial(n, k, big(p)));
  return it->second;
}

/// Poisson(rate) on [0, kmax]: kmax is chosen by the caller so that the dropped tail is far below any tolerance.
inline Law poisson_law(double rate, std::int64_t kmax) {
  if (rate == 0) return point_law(0);
  static thread_local std::map<std::pair<double, std::int64_t>, Law> made;
  auto [it, fresh] = made.try_emplace({rate, kmax});
  if (fresh)
    for (std::int64_t k = 0; k <= kmax; ++k) it->second[k] = exp_big(log_poisson(k, big(rate)));
  return it->second;
}

inline Law uniform_law(std::int64_t lo, std::int64_t hi) {
  Law l;
  for (std::int64_t k = lo; k <= hi; ++k) l[k] = big(1) / big(hi - lo + 1);
  return l;
}

inline Law categorical_law(const std::vector<double>& w) {
  big total = 0;
  for (double x : w) total += big(x);
  Law l;
  for (std::size_t k = 0; k < w.size(); ++k)
    if (w[k] > 0) l[static_cast<std::int64_t>(k)] = big(w[k]) / total;
  return l;
}

// ---- enumeration of a program --------------------------------------------------------------------------------
/// The values of a program's variables, in the order they were introduced.
using Assignment = std::vector<std::int64_t>;
/// The law of variable i given the values of variables 0..i-1. A kernel may return only some values (e.g. the
/// one that is observed, with its likelihood): the enumeration then holds the joint mass of those values only.
using Kernel = std::function<Law(const Assignment&)>;
/// Every assignment with positive mass, and its joint probability.
using Joint = std::vector<std::pair<Assignment, big>>;

inline Joint enumerate(const std::vector<Kernel>& program) {
  Joint atoms{{Assignment{}, big(1)}};
  for (const Kernel& k : program) {
    Joint next;
    for (const auto& [a, p] : atoms)
      for (const auto& [v, q] : k(a)) {
        if (q == 0) continue;
        Assignment b = a;
        b.push_back(v);
        next.emplace_back(std::move(b), p * q);
      }
    atoms = std::move(next);
  }
  return atoms;
}

using Event = std::function<bool(const Assignment&)>;
using Statistic = std::function<std::int64_t(const Assignment&)>;

/// P(event).
inline big probability(const Joint& j, const Event& e) {
  big s = 0;
  for (const auto& [a, p] : j)
    if (e(a)) s += p;
  return s;
}

/// The law of f given the event (normalized; empty when the event has probability zero).
inline Law posterior(const Joint& j, const Statistic& f, const Event& e) {
  Law l;
  for (const auto& [a, p] : j)
    if (e(a)) l[f(a)] += p;
  return mass(l) == 0 ? Law{} : normalized(l);
}

/// The law of variable i given the event.
inline Law posterior(const Joint& j, std::size_t i, const Event& e) {
  return posterior(j, [i](const Assignment& a) { return a[i]; }, e);
}

/// The law of Z = X + Y for independent X, Y (what a wrong, dependence-blind convolution would use).
inline Law convolve(const Law& x, const Law& y) {
  Law out;
  for (const auto& [a, p] : x)
    for (const auto& [b, q] : y) out[a + b] += p * q;
  return out;
}

// ---- conjugate closed forms, in 50 digits --------------------------------------------------------------------
inline big lgamma_big(const big& x) { return boost::multiprecision::lgamma(x); }
inline big log_beta_fn(const big& a, const big& b) { return lgamma_big(a) + lgamma_big(b) - lgamma_big(a + b); }
inline big log_choose(std::int64_t n, std::int64_t k) { return log_factorial(n) - log_factorial(k) - log_factorial(n - k); }

/// log BetaBinomial(k; n, a, b) = log C(n, k) + log B(a + k, b + n - k) - log B(a, b).
inline big log_beta_binomial(std::int64_t n, std::int64_t k, double a, double b) {
  return log_choose(n, k) + log_beta_fn(big(a) + k, big(b) + (n - k)) - log_beta_fn(big(a), big(b));
}

/// log NegativeBinomial(k; r, p) = log Gamma(r + k) - log k! - log Gamma(r) + r log p + k log(1 - p), p = rate/(rate+1)
/// for a Poisson count whose rate is Gamma(shape r, rate): written with the rate to stay in 50 digits.
inline big log_gamma_poisson(std::int64_t k, double shape, double rate) {
  using boost::multiprecision::log;
  const big r(shape), b(rate);
  return lgamma_big(r + k) - log_factorial(k) - lgamma_big(r) + r * log(b / (b + 1)) - big(k) * log(b + 1);
}

/// log of the beta-negative-binomial: Gamma(r + k) / (k! Gamma(r)) B(a + r, b + k) / B(a, b).
inline big log_beta_negative_binomial(std::int64_t k, double r, double a, double b) {
  return lgamma_big(big(r) + k) - log_factorial(k) - lgamma_big(big(r)) + log_beta_fn(big(a) + big(r), big(b) + k) -
         log_beta_fn(big(a), big(b));
}

// ---- comparisons -------------------------------------------------------------------------------------------------
/// tally's law `got` (normalized) equals `want` (normalized) to `rel` on every point of `want` with probability above
/// `missing`; points of `want` that tally dropped (truncation) have probability at most `missing`, or at most got's
/// error bound when that is larger; tally has no point outside `want`.
inline void require_law_close(const Pmf& got, Law want, double rel = 1e-12, double missing = 1e-14) {
  REQUIRE(mass(want) > 0);
  missing = std::max(missing, got.error_bound());
  want = normalized(want);
  const Law g = law_of(got.normalized());
  for (const auto& [k, p] : want) {
    INFO("value " << k << ", exact probability " << static_cast<double>(p));
    if (g.count(k) == 0) {
      REQUIRE(p <= missing);
    } else if (p > missing) {
      REQUIRE(relative_error(static_cast<double>(g.at(k)), p) <= rel);
    }
  }
  for (const auto& [k, p] : g) {
    INFO("tally gives value " << k << " probability " << static_cast<double>(p) << ", impossible in the reference");
    REQUIRE(want.count(k) == 1);
  }
}

/// log-likelihood `ll` from tally equals log(want): -inf when want is zero, else to relative error `rel`.
inline void require_log_prob(double ll, const big& want, double rel = 1e-12) {
  INFO("tally: " << ll << ", exact: " << static_cast<double>(boost::multiprecision::log(want)));
  if (want == 0) {
    REQUIRE(ll == -std::numeric_limits<double>::infinity());
  } else {
    REQUIRE(std::isfinite(ll));
    REQUIRE(relative_error_log(ll, boost::multiprecision::log(want)) <= rel);
  }
}

/// Pearson's chi-square goodness of fit of the draws' counts against the exact law: adjacent values are pooled
/// until each bin expects at least 5 draws; the test fails when a draw is impossible or the statistic exceeds the
/// chi-square quantile at 1 - 1e-6.
inline void require_goodness_of_fit(const std::map<std::int64_t, std::int64_t>& counts, Law want) {
  want = normalized(want);
  std::int64_t n = 0;
  for (const auto& [k, c] : counts) {
    INFO("drew value " << k << ", impossible under the exact law");
    REQUIRE(want.count(k) == 1);
    n += c;
  }
  std::vector<std::pair<double, double>> bins;  // (expected, observed)
  double e = 0, o = 0;
  for (const auto& [k, p] : want) {
    e += static_cast<double>(p) * static_cast<double>(n);
    o += counts.count(k) ? static_cast<double>(counts.at(k)) : 0.0;
    if (e >= 5.0) {
      bins.emplace_back(e, o);
      e = o = 0;
    }
  }
  if (bins.empty()) bins.emplace_back(0.0, 0.0);
  bins.back().first += e;  // the remainder joins the last bin
  bins.back().second += o;
  double stat = 0;
  for (const auto& [ex, ob] : bins) stat += (ob - ex) * (ob - ex) / ex;
  if (bins.size() < 2) return;  // a single bin: every draw is possible, nothing more to test
  const boost::math::chi_squared chi(static_cast<double>(bins.size() - 1));
  const double critical = boost::math::quantile(chi, 1.0 - 1e-6);
  INFO("chi-square " << stat << " with " << bins.size() - 1 << " degrees of freedom, critical value " << critical);
  REQUIRE(stat < critical);
}

/// The mean of `xs` is within k standard errors (from the sample's own spread, or `sd` when given) of `want`.
inline void require_mean_near(const std::vector<double>& xs, double want, double k = 5.0, double sd = -1.0) {
  double m = 0, v = 0;
  for (double x : xs) m += x;
  m /= static_cast<double>(xs.size());
  for (double x : xs) v += (x - m) * (x - m);
  v /= static_cast<double>(xs.size() - 1);
  const double se = (sd >= 0 ? sd : std::sqrt(v)) / std::sqrt(static_cast<double>(xs.size()));
  INFO("mean " << m << ", exact " << want << ", standard error " << se);
  REQUIRE(std::abs(m - want) <= k * se + 1e-12);
}

}  // namespace tally::test
