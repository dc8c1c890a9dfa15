// 50-digit reference log-pmfs for the families beyond Binomial and Poisson, and the checks every family goes through.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>

#include "reference.hpp"
#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"

namespace tally::test {

/// log Gamma(x) in 50 digits.
inline big log_gamma(const big& x) { return boost::multiprecision::lgamma(x); }

/// log of the Geometric(p) pmf at k >= 0: log p + k log(1 - p).
inline big log_geometric(std::int64_t k, const big& p) {
  using boost::multiprecision::log;
  return log(p) + (k > 0 ? big(k) * log(1 - p) : big(0));
}

/// log of the NegativeBinomial(r, p) pmf at k >= 0: log Gamma(k+r) - log k! - log Gamma(r) + r log p + k log(1-p).
inline big log_negative_binomial(std::int64_t k, const big& r, const big& p) {
  using boost::multiprecision::log;
  big v = log_gamma(big(k) + r) - log_factorial(k) - log_gamma(r) + r * log(p);
  if (k > 0) v += big(k) * log(1 - p);
  return v;
}

/// log C(n, k) for 0 <= k <= n.
inline big log_choose(std::int64_t n, std::int64_t k) { return log_factorial(n) - log_factorial(k) - log_factorial(n - k); }

/// log of the Hypergeometric(N, K, n) pmf at k (in its support): log C(K,k) + log C(N-K,n-k) - log C(N,n).
inline big log_hypergeometric(std::int64_t big_n, std::int64_t big_k, std::int64_t n, std::int64_t k) {
  return log_choose(big_k, k) + log_choose(big_n - big_k, n - k) - log_choose(big_n, n);
}

/// log B(a, b) = log Gamma(a) + log Gamma(b) - log Gamma(a + b).
inline big log_beta(const big& a, const big& b) { return log_gamma(a) + log_gamma(b) - log_gamma(a + b); }

/// log of the BetaBinomial(n, a, b) pmf at 0 <= k <= n: log C(n,k) + log B(k+a, n-k+b) - log B(a,b).
inline big log_beta_binomial(std::int64_t n, const big& a, const big& b, std::int64_t k) {
  return log_choose(n, k) + log_beta(big(k) + a, big(n - k) + b) - log_beta(a, b);
}

/// exp of a 50-digit log, as a 50-digit value (no underflow: the exponent range of cpp_bin_float is huge).
inline big exp_big(const big& x) { return boost::multiprecision::exp(x); }

/// log_pdf(d, k) within a few ulps of the 50-digit log `ref` (1e-14 + 8e-16 |log|), and pdf(d, k) within 1e-13
/// relative wherever the value is a normal double (within 1e-323 absolute where it is subnormal).
template <class D>
void check_pmf_at(const D& d, std::int64_t k, const big& ref) {
  const double lp = log_pdf(d, k);
  INFO("k = " << k << ", log_pdf = " << lp << ", reference " << static_cast<double>(ref));
  REQUIRE(std::abs(static_cast<double>(big(lp) - ref)) <= 1e-14 + 8e-16 * std::abs(lp));
  const big p = exp_big(ref);
  if (p >= big(std::numeric_limits<double>::min()))
    REQUIRE(relative_error(pdf(d, k), p) <= 1e-13);
  else
    REQUIRE(static_cast<double>(abs(big(pdf(d, k)) - p)) <= 1e-323);
}

/// For prob in a grid (1 too when the support is bounded): k = quantile(d, prob) is the smallest k with
/// cdf(d, k) >= prob; and quantile(d, cdf(d, k)) = k wherever pdf(d, k) is not negligible.
template <class D>
void check_cdf_quantile(const D& d) {
  const auto [first, last] = support(d);
  const bool bounded = last != std::numeric_limits<std::int64_t>::max();
  for (double prob : {0.0, 1e-300, 1e-12, 1e-3, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999, 1.0 - 1e-12, 1.0}) {
    if (prob == 1.0 && !bounded) continue;
    const std::int64_t k = quantile(d, prob);
    INFO("prob = " << prob << ", quantile = " << k);
    REQUIRE(k >= first);
    REQUIRE(k <= last);
    REQUIRE(cdf(d, k) >= prob);
    if (k > first) REQUIRE(cdf(d, k - 1) < prob);
    if (pdf(d, k) > 1e-10) REQUIRE(quantile(d, cdf(d, k)) == k);
  }
  if (first > std::numeric_limits<std::int64_t>::min()) REQUIRE(cdf(d, first - 1) == 0.0);
  if (bounded) REQUIRE(cdf(d, last) == 1.0);
}

/// cdf(d, k) for k in [first, last] against running sums of the 50-digit pmf `ref` over the whole support
/// [first, last]: relative error 1e-13 on the smaller of the cdf and its complement.
template <class D, class Ref>
void check_cdf_sums(const D& d, std::int64_t first, std::int64_t last, Ref ref) {
  std::vector<big> mass;
  big total = 0;
  for (std::int64_t k = first; k <= last; ++k) mass.push_back(total += exp_big(ref(k)));
  REQUIRE(static_cast<double>(abs(total - 1)) <= 1e-30);  // the reference itself sums to 1 (bounded support)
  for (std::int64_t k = first; k <= last; ++k) {
    const big below = mass[static_cast<std::size_t>(k - first)], above = total - below;
    const double c = cdf(d, k);
    INFO("k = " << k << ", cdf = " << c << ", reference " << static_cast<double>(below));
    if (below <= above)
      REQUIRE(relative_error(c, below) <= 1e-13);
    else
      REQUIRE(static_cast<double>(abs((1 - big(c)) - above)) <= 1e-13 * static_cast<double>(above) + 2e-16);
  }
}

/// cdf(d, k) against the running sums of the law's own tabulated pmf (summed by Pmf, not by the law's cdf), at
/// about 200 points across it: relative error 1e-12 where the cdf is below 1/2 (and above 1e-250, where the
/// pmf's flushing of entries below flush_fraction does not show), absolute 1e-14 above.
template <class D>
void check_cdf_against_pmf(const D& d) {
  const tally::Pmf pmf = to_pmf(d);
  for (std::int64_t k = pmf.lo(); k <= pmf.hi(); k += 1 + (pmf.hi() - pmf.lo()) / 200) {
    const double mine = cdf(d, k), summed = cdf(pmf, k);
    INFO("k = " << k << ", cdf = " << mine << ", summed pmf " << summed);
    if (summed < 1e-250)
      REQUIRE(mine < 1e-240);
    else if (summed <= 0.5)
      REQUIRE(std::abs(mine - summed) <= 1e-12 * summed);
    else
      REQUIRE(std::abs(mine - summed) <= 1e-14);
  }
}

/// For an unbounded law truncated at tol: the pmf sums to 1 within its error bound, the bound is the mass that a
/// far finer truncation holds outside the kept range (an upper bound, and not a loose one), and it is <= tol.
template <class D>
void check_truncation(const D& d, double tol) {
  const tally::Pmf coarse = to_pmf(d, {tol}), fine = to_pmf(d, {tol * 1e-6 > 1e-300 ? tol * 1e-6 : 1e-300});
  const double mass = std::exp(coarse.log_mass()), bound = coarse.error_bound();
  INFO("tol = " << tol << ", kept [" << coarse.lo() << ", " << coarse.hi() << "], bound " << bound);
  REQUIRE(bound <= tol / (1 - tol) * (1 + 1e-12));
  REQUIRE(std::abs(1 - mass) <= bound * mass + 1e-14);
  double outside = 0.0;
  for (std::int64_t k = fine.lo(); k <= fine.hi(); ++k)
    if (k < coarse.lo() || k > coarse.hi()) outside += pdf(fine, k);
  REQUIRE(outside <= bound * mass * (1 + 1e-9) + 1e-15);
  REQUIRE(outside + fine.error_bound() >= bound * mass * (1 - 1e-6) - 1e-15);
  // the kept entries are the law's own
  for (std::int64_t k = coarse.lo(); k <= coarse.hi(); k += 1 + (coarse.hi() - coarse.lo()) / 50)
    REQUIRE(std::abs(log_pdf(coarse, k) - log_pdf(d, k)) <= 1e-13 * (1 + std::abs(log_pdf(d, k))));
}

/// For a bounded law whose to_pmf drops only negligible entries: the pmf sums to 1 within its error bound, every
/// entry left out of the support is below flush_fraction of the largest, their mass (from log_pdf) is within the
/// bound, and the entries kept at both ends are not below it. Supports over 2e5 values are checked at the two
/// entries next to the kept range only, which bound all the others when the law is unimodal.
template <class D>
void check_bounded_pmf(const D& d) {
  const tally::Pmf pmf = to_pmf(d);
  const auto [first, last] = support(d);
  REQUIRE(pmf.lo() >= first);
  REQUIRE(pmf.hi() <= last);
  REQUIRE(std::abs(pmf.log_mass()) <= pmf.error_bound() + 1e-14);
  const double cut = pmf.log_scale() + std::log(tally::flush_fraction);  // the largest weight is 1
  double worst = -std::numeric_limits<double>::infinity(), left_out = 0.0;
  if (last - first <= 200000) {
    for (std::int64_t k = first; k <= last; ++k) {
      if (k >= pmf.lo() && k <= pmf.hi()) continue;
      worst = std::max(worst, log_pdf(d, k));
      left_out += std::exp(log_pdf(d, k) - pmf.log_mass());
    }
  } else {
    if (pmf.lo() > first) worst = std::max(worst, log_pdf(d, pmf.lo() - 1));
    if (pmf.hi() < last) worst = std::max(worst, log_pdf(d, pmf.hi() + 1));
    left_out = static_cast<double>((last - first) - (pmf.hi() - pmf.lo())) * std::exp(worst - pmf.log_mass());
  }
  REQUIRE(worst < cut);
  REQUIRE(left_out <= pmf.error_bound());
  REQUIRE(log_pdf(d, pmf.lo()) >= cut - 1e-9);
  REQUIRE(log_pdf(d, pmf.hi()) >= cut - 1e-9);
}

/// mean and variance of the law against those of its own pmf (finely truncated when unbounded).
template <class D>
void check_moments(const D& d) {
  const tally::Pmf pmf = to_pmf(d, {1e-300});
  REQUIRE(mean(d) == Approx(mean(pmf)).epsilon(1e-10).margin(1e-12));
  REQUIRE(variance(d) == Approx(variance(pmf)).epsilon(1e-10).margin(1e-12));
}

}  // namespace tally::test
