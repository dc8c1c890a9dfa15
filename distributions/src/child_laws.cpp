// Marginals of a child given its integer parent: thinning by Horner's rule, scaled Poisson mixtures, Markov steps.
#include "tally/distributions/child_laws.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "parent_checks.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/error.hpp"

namespace tally {

Thinning::Thinning(double keep_) : keep(keep_) { detail::check_probability(keep_, "tally::Thinning", "keep probability q"); }

ScaledPoisson::ScaledPoisson(double scale_) : scale(scale_) {
  detail::check_nonnegative(scale_, "tally::ScaledPoisson", "rate scale a");
}

MarkovStep::MarkovStep(Eigen::MatrixXd transition_) : transition(std::move(transition_)) {
  const char* who = "tally::MarkovStep";
  if (transition.rows() == 0 || transition.cols() == 0)
    detail::fail<shape_error>(who, ": the transition matrix is empty (", transition.rows(), " x ", transition.cols(), ")");
  for (Eigen::Index i = 0; i < transition.rows(); ++i) {
    for (Eigen::Index j = 0; j < transition.cols(); ++j) {
      const double t = transition(i, j);
      if (!(t >= 0.0) || !std::isfinite(t))
        detail::fail<domain_error>(who, ": entry T(", i, ", ", j, ") = ", t, " is not finite and >= 0");
    }
    const double row = transition.row(i).sum();
    if (std::abs(row - 1.0) > 1e-9) detail::fail<domain_error>(who, ": row ", i, " of T sums to ", row, ", not 1");
  }
}

IndexedPoisson::IndexedPoisson(Eigen::VectorXd rates_) : rates(std::move(rates_)) {
  if (rates.size() == 0) detail::fail<shape_error>("tally::IndexedPoisson: no rates");
  for (Eigen::Index i = 0; i < rates.size(); ++i) detail::check_nonnegative(rates[i], "tally::IndexedPoisson", "rate");
}

Pmf marginal(const Pmf& x, const Thinning& k, const Truncation& t) {
  const char* who = "tally::marginal(Thinning)";
  detail::require_count(x, who);
  const double q = k.keep, r = 1.0 - q;
  if (q == 0.0) return Pmf(0, Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  const Eigen::VectorXd& w = x.weights();
  const Eigen::Index n = w.size();
  // Horner's n^2/2 steps, then the convolution with Binomial(lo, q), whose pmf keeps ~75 standard deviations
  // (down to flush_fraction of its mode): refuse at once what would take longer than max_work
  const double nd = static_cast<double>(n), lo = static_cast<double>(x.lo());
  const double binomial_width = std::min(lo + 1.0, 80.0 * std::sqrt(lo * q * r) + 80.0);
  detail::check_work(nd * nd / 2 + (x.lo() == 0 ? 0.0 : nd * binomial_width), t, who, n,
                     static_cast<double>(n) + binomial_width);
  // acc holds sum_{i' >= i} w_{i'} Bernoulli(q)^{*(i' - i)}, as a vector of length n - i
  Eigen::VectorXd acc = Eigen::VectorXd::Zero(n), next = Eigen::VectorXd::Zero(n);
  acc[0] = w[n - 1];
  for (Eigen::Index i = n - 2, len = 1; i >= 0; --i, ++len) {
    // next = acc * [r, q] + w_i delta_0, over indices 0..len
    next[0] = r * acc[0] + w[i];
    next.segment(1, len - 1) = r * acc.segment(1, len - 1) + q * acc.head(len - 1);
    next[len] = q * acc[len - 1];
    acc.swap(next);
  }
  Pmf upper(0, std::move(acc), x.log_scale(), x.error_bound());
  if (x.lo() == 0) return upper;
  return sum(upper, to_pmf(Binomial(x.lo(), q)));  // the lo individuals every x has
}

namespace {
/// sum_x mu_X(x) Poisson(rate(x)), truncated where the smallest and largest rates over X's support put at most
/// tol/2 each beyond the cuts (Poisson tails are monotone in the rate).
///
/// Each term w_x Poisson(y; rate(x)) is summed only over its own non-negligible range: walking from the mode of
/// Poisson(rate(x)) outward (pmf(y+1) = pmf(y) rate / (y+1) in long double, re-anchored on log_poisson_pmf every
/// 64 steps) until the term falls below 2^-80 flush_fraction of R = max_x w_x max_y Poisson(y; rate(x)), which
/// is at most the result's largest entry. So an entry the result keeps (>= flush_fraction of its largest) loses
/// at most n 2^-80 of itself (n the parent's size), and the cost is O(sum_x sqrt(rate(x))) instead of
/// O(n (y_hi - y_lo)). The tail beyond each cut is bounded geometrically (the ratio of successive terms is at
/// most the ratio at the cut) and added to the error bound.
template <class Rate>
Pmf poisson_mixture(const Pmf& x, Rate rate, const Truncation& t, const char* who) {
  double lo_rate = std::numeric_limits<double>::infinity(), hi_rate = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    if (x.weights()[i] == 0.0) continue;
    lo_rate = std::min(lo_rate, rate(x.lo() + i));
    hi_rate = std::max(hi_rate, rate(x.lo() + i));
  }
  if (hi_rate == 0.0) return Pmf(0, Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  const std::int64_t y_lo = to_pmf(Poisson(lo_rate), t).lo();
  const std::int64_t y_hi = to_pmf(Poisson(hi_rate), t).hi();
  if (y_hi - y_lo + 1 > t.max_size)
    detail::fail<overflow_error>(who, ": the result needs ", y_hi - y_lo + 1, " entries, more than max_size = ", t.max_size);
  // each term's walk covers at most ~78 standard deviations of its Poisson (where it falls by 2^-1080) and the
  // result's range: refuse at once what would take longer than max_work terms
  double work = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i)
    if (x.weights()[i] != 0.0)
      work += std::min(static_cast<double>(y_hi - y_lo + 1), 80.0 * std::sqrt(rate(x.lo() + i)) + 80.0);
  detail::check_work(work, t, who, x.size(), static_cast<double>(y_hi - y_lo + 1));

  // the mode of Poisson(lambda) within [y_lo, y_hi] (the pmf is unimodal: it decreases away from it)
  const auto start_of = [&](double lambda) {
    const double m = std::floor(lambda);
    return m <= static_cast<double>(y_lo) ? y_lo : m >= static_cast<double>(y_hi) ? y_hi : static_cast<std::int64_t>(m);
  };
  // log R: terms are formed relative to R 2^-70, so that the cut (2^-1080 R) is a normal double and no sum overflows
  double log_ref = -std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double w = x.weights()[i];
    if (w == 0.0) continue;
    const double lambda = rate(x.lo() + i);
    log_ref = std::max(log_ref, std::log(w) + log_poisson_pmf(start_of(lambda), lambda));
  }
  const long double unit = static_cast<long double>(log_ref) - 70.0L * std::numbers::ln2_v<long double>;
  const long double cut = 0x1p-1010L;  // 2^-80 flush_fraction R, in units of R 2^-70

  std::vector<long double> acc(static_cast<std::size_t>(y_hi - y_lo + 1), 0.0L);
  long double* const r = acc.data();  // r[y - y_lo] for y in [y_lo, y_hi] (acc.data() - y_lo may not be a pointer)
  // 1 / y over the result's range (+1 past it), so that each step of a walk is one multiplication
  std::vector<long double> inverse(static_cast<std::size_t>(y_hi - y_lo + 2));
  for (std::size_t j = 0; j < inverse.size(); ++j)
    inverse[j] = 1.0L / static_cast<long double>(y_lo + static_cast<std::int64_t>(j));
  long double dropped = 0.0L;  // in units of R 2^-70
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double w = x.weights()[i];
    if (w == 0.0) continue;
    const double lambda_d = rate(x.lo() + i);
    const long double lambda = lambda_d, inverse_lambda = 1.0L / lambda;
    const long double log_w = std::log(static_cast<long double>(w)) - unit;
    const auto term_at = [&](std::int64_t y) {
      return std::exp(log_w + static_cast<long double>(log_poisson_pmf(y, lambda_d)));
    };
    const std::int64_t s = start_of(lambda_d);
    // upward from s: pmf(y) = pmf(y - 1) lambda / y, a ratio below 1 past the mode
    long double term = term_at(s);
    for (std::int64_t y = s, anchor = 64;;) {
      r[y - y_lo] += term;
      if (++y > y_hi) break;
      if (--anchor == 0) {
        anchor = 64;
        term = term_at(y);
      } else {
        term *= lambda * inverse[static_cast<std::size_t>(y - y_lo)];
      }
      if (term < cut && static_cast<long double>(y) >= lambda) {
        dropped += term / (1.0L - lambda * inverse[static_cast<std::size_t>(y + 1 - y_lo)]);  // >= the tail from y on
        break;
      }
    }
    // downward from s: pmf(y - 1) = pmf(y) y / lambda, a ratio below 1 below the mode
    term = s > y_lo ? term_at(s) : 0.0L;
    for (std::int64_t y = s, anchor = 64; y > y_lo;) {
      if (--anchor == 0) {
        anchor = 64;
        term = term_at(y - 1);
      } else {
        term *= static_cast<long double>(y) * inverse_lambda;
      }
      --y;
      if (term < cut && static_cast<long double>(y) < lambda) {
        dropped += term / (1.0L - static_cast<long double>(y) * inverse_lambda);  // >= the tail from y down
        break;
      }
      r[y - y_lo] += term;
    }
  }
  Eigen::VectorXd result(y_hi - y_lo + 1);
  long double total = 0.0L;
  for (std::size_t j = 0; j < acc.size(); ++j) {
    result[static_cast<Eigen::Index>(j)] = static_cast<double>(acc[j]);
    total += acc[j];
  }
  const double kept = static_cast<double>(total);
  const double cut_error = kept > 0.0 ? static_cast<double>(dropped / static_cast<long double>(kept)) : 0.0;
  if (!(kept > 0.0))
    detail::fail<overflow_error>(who, ": every term of the mixture underflowed (rates ", lo_rate, " to ", hi_rate, ")");
  return Pmf(y_lo, std::move(result), x.log_scale() + static_cast<double>(unit),
             x.error_bound() + t.tolerance * (1.0 + x.error_bound()) + cut_error);
}
}  // namespace

Pmf marginal(const Pmf& x, const ScaledPoisson& k, const Truncation& t) {
  detail::require_count(x, "tally::marginal(ScaledPoisson)");
  return poisson_mixture(x, [&](std::int64_t v) { return k.scale * static_cast<double>(v); }, t,
                         "tally::marginal(ScaledPoisson)");
}

Pmf marginal(const Pmf& x, const IndexedPoisson& k, const Truncation& t) {
  detail::require_states(x, k.rates.size(), "tally::marginal(IndexedPoisson)");
  return poisson_mixture(x, [&](std::int64_t v) { return k.rates[v]; }, t, "tally::marginal(IndexedPoisson)");
}

Pmf marginal(const Pmf& x, const MarkovStep& k) {
  const auto& T = k.transition;
  detail::require_states(x, T.rows(), "tally::marginal(MarkovStep)", "states (rows) of T");
  Eigen::VectorXd r = T.middleRows(x.lo(), x.size()).transpose() * x.weights();
  return Pmf(0, std::move(r), x.log_scale(), x.error_bound());
}

}  // namespace tally
