// Private: the per-particle formulas of count_laws (each law's window, its largest log mass and its dropped mass),
// shared by the CPU reference and the CUDA kernels.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "child_math.hpp"  // the Poisson cuts
#include "conjugate_math.hpp"
#include "tally/gpu/count_laws.hpp"

namespace tally::gpu::detail {
/// The error of particle i whose law failed with `status` (a CountStatus): domain_error or overflow_error.
[[noreturn]] void fail_count_law(const char* who, CountFamily family, double s, std::size_t i, double a, double b,
                                 int status, std::int64_t max_size);
/// count_laws' checks of its scalar arguments (domain_error).
void check_count_arguments(CountFamily family, double s, double tolerance, std::int64_t max_size, const char* who);
}  // namespace tally::gpu::detail

namespace tally::gpu::detail::counts {

namespace math = detail::conjugate;

/// One particle's law: the family with its parameters read (negative binomial forms as r, p and q = 1 - p, each
/// formed without cancellation: gamma_poisson's p = b / (b + s), q = s / (b + s)).
struct CountLaw {
  CountFamily family;
  double rate = 0.0;        // poisson: s a_i
  double r = 0.0, p = 1.0, q = 0.0;  // negative_binomial and beta_negative_binomial (r = s), gamma_poisson (r = a_i)
  double a = 0.0, b = 0.0;           // beta_negative_binomial: rho ~ Beta(a, b)
};

/// Why a particle has no law (count_laws' errors).
enum class CountStatus : int { ok = 0, bad_parameter, beyond_int64, too_long };

/// Particle i's law from the family, s and its parameters; bad_parameter where they leave their domain (NaN
/// included).
TALLY_HOST_DEVICE inline CountStatus read_law(CountFamily family, double s, double a, double b, CountLaw& out) {
  out.family = family;
  switch (family) {
    case CountFamily::poisson:
      out.rate = s * a;
      return math::nonnegative(a) && math::nonnegative(out.rate) ? CountStatus::ok : CountStatus::bad_parameter;
    case CountFamily::negative_binomial:
      out.r = s;
      out.p = a;
      out.q = 1.0 - a;
      return a > 0.0 && a <= 1.0 ? CountStatus::ok : CountStatus::bad_parameter;
    case CountFamily::gamma_poisson: {
      const double total = b + s;
      out.r = a;
      out.p = b / total;
      out.q = s / total;
      return math::positive(a) && math::positive(b) ? CountStatus::ok : CountStatus::bad_parameter;
    }
    case CountFamily::beta_negative_binomial:
      out.r = s;
      out.a = a;
      out.b = b;
      return math::positive(a) && math::positive(b) ? CountStatus::ok : CountStatus::bad_parameter;
  }
  return CountStatus::bad_parameter;
}

/// \f$\log P(K = k)\f$ of the law (-inf for k < 0): conjugate_math.hpp's saddle-point forms.
TALLY_HOST_DEVICE inline double log_mass(const CountLaw& d, std::int64_t k) {
  switch (d.family) {
    case CountFamily::poisson: return math::poisson_log_mass(d.rate, k);
    case CountFamily::negative_binomial:
    case CountFamily::gamma_poisson:
      if (d.q == 0.0) return k == 0 ? 0.0 : -INFINITY;
      return math::negative_binomial_term(k, d.r, d.p, d.q);
    case CountFamily::beta_negative_binomial: return math::beta_negative_binomial_log_mass(d.r, d.a, d.b, k);
  }
  return -INFINITY;
}

// ---- the negative binomial's cuts --------------------------------------------------------------------------------
// With rho_k = p(k + 1) / p(k) = (r + k) q / (k + 1): for k >= y + 1 every rho_k is at most
// rho* = q max(1, (r + y + 1) / (y + 2)) ((r + k) / (k + 1) decreases in k for r > 1 and increases to 1 for r < 1),
// so P(K > y) <= p(y + 1) / (1 - rho*) where rho* < 1. Going down, p(k - 1) / p(k) = k / ((r + k - 1) q) grows with
// k for r >= 1, so for k <= y - 1 it is at most sigma = (y - 1) / ((r + y - 2) q) and P(K < y) <= p(y - 1) /
// (1 - sigma) where sigma < 1 (y = 1: p(0) itself). For r < 1 the law decreases from 0: nothing is cut below.

/// log of the bound on P(K > y) (+inf where rho* >= 1). Non-increasing in y past the mode.
TALLY_HOST_DEVICE inline double negative_binomial_upper_tail_bound(const CountLaw& d, std::int64_t y) {
  const double yd = static_cast<double>(y), ratio = (d.r + yd + 1.0) / (yd + 2.0);
  const double rho = d.q * (ratio > 1.0 ? ratio : 1.0);
  if (!(rho < 1.0)) return INFINITY;
  return log_mass(d, y + 1) - ::log1p(-rho);
}

/// log of the bound on P(K < y) (-inf at y = 0, +inf where sigma >= 1); r >= 1.
TALLY_HOST_DEVICE inline double negative_binomial_lower_tail_bound(const CountLaw& d, std::int64_t y) {
  if (y <= 0) return -INFINITY;
  if (y == 1) return log_mass(d, 0);
  const double yd = static_cast<double>(y), sigma = (yd - 1.0) / ((d.r + yd - 2.0) * d.q);
  if (!(sigma < 1.0)) return INFINITY;
  return log_mass(d, y - 1) - ::log1p(-sigma);
}

/// The mode floor((r - 1) q / p) (0 for r <= 1).
TALLY_HOST_DEVICE inline double negative_binomial_mode(const CountLaw& d) {
  return d.r > 1.0 ? ::floor((d.r - 1.0) * d.q / d.p) : 0.0;
}

// ---- the beta-negative-binomial's cut ----------------------------------------------------------------------------
// Its tail is polynomial (of order k^-(a + 1)): no geometric bound. With s = a + r + b,
//   1 - rho_k = 1 - p(k + 1) / p(k) = ((a + 1) k + s - r b) / ((k + 1)(k + s)),
// and ((a + 1) k + s - r b) / (k + 1) = a + 1 - (r - 1)(b - 1) / (k + 1), so that for every k >= y
//   rho_k <= 1 - alpha / (k + s),   alpha = a + 1 - max(0, (r - 1)(b - 1)) / (y + 1).
// Then p(y + j) <= p(y) exp(-alpha sum_{i < j} 1 / (y + s + i)) <= p(y) ((y + s) / (y + s + j))^alpha, and for
// alpha > 1, summing over j >= 1 below the integral, P(K > y) <= p(y) (y + s) / (alpha - 1).

/// log of that bound on P(K > y) (+inf where alpha <= 1).
TALLY_HOST_DEVICE inline double beta_negative_binomial_upper_tail_bound(const CountLaw& d, std::int64_t y) {
  const double yd = static_cast<double>(y), s = d.a + d.r + d.b, c = (d.r - 1.0) * (d.b - 1.0);
  const double alpha = d.a + 1.0 - (c > 0.0 ? c / (yd + 1.0) : 0.0);
  if (!(alpha > 1.0)) return INFINITY;
  return log_mass(d, y) + ::log((yd + s) / (alpha - 1.0));
}

/// The mode: p(k + 1) >= p(k) exactly where k <= t = (r b - a - r - b) / (a + 1), so floor(t) + 1 (0 for t < 0).
TALLY_HOST_DEVICE inline double beta_negative_binomial_mode(const CountLaw& d) {
  const double t = (d.r * d.b - d.a - d.r - d.b) / (d.a + 1.0);
  return t >= 0.0 ? ::floor(t) + 1.0 : 0.0;
}

/// Means at or above this put the cuts beyond what a dense range can hold.
inline constexpr double count_mean_limit = 0x1p60;

/// One law's window [lo, hi], its largest log mass (top), and the mass outside the window as a relative bound
/// (error = dropped / (1 - dropped)).
struct CountRange {
  std::int64_t lo = 0, hi = 0;
  double top = 0.0, error = 0.0;
  CountStatus status = CountStatus::ok;
};

/// The largest log mass of a unimodal law with mode m: the largest of m - 1, m and m + 1 as evaluated.
TALLY_HOST_DEVICE inline double top_near(const CountLaw& d, double mode) {
  const auto m = static_cast<std::int64_t>(mode);
  double best = log_mass(d, m);
  if (m > 0) best = ::fmax(best, log_mass(d, m - 1));
  return ::fmax(best, log_mass(d, m + 1));
}

/// The window of a law that drops at most `tolerance` of its mass (half from each tail, by the bounds above: cuts
/// by bisection on them, as child_math.hpp's Poisson cuts; the beta-negative-binomial keeps 0 and the whole
/// tolerance goes to its upper tail). tolerance in (0, 1); too_long where the window holds more than max_size
/// entries.
TALLY_HOST_DEVICE inline CountRange count_range(const CountLaw& d, double tolerance, std::int64_t max_size) {
  CountRange out;
  const double half = tolerance / 2, t = ::log(half);
  switch (d.family) {
    case CountFamily::poisson: {
      if (d.rate == 0.0) return out;  // the point mass at 0
      if (!(d.rate < poisson_rate_limit)) {
        out.status = CountStatus::beyond_int64;
        return out;
      }
      out.lo = poisson_lower_cut(d.rate, half);
      out.hi = poisson_upper_cut(d.rate, half);
      const double dropped =
          ::exp(poisson_lower_tail_bound(d.rate, out.lo)) + ::exp(poisson_upper_tail_bound(d.rate, out.hi));
      out.error = dropped / (1.0 - dropped);
      out.top = top_near(d, ::floor(d.rate));
      break;
    }
    case CountFamily::negative_binomial:
    case CountFamily::gamma_poisson: {
      if (d.q == 0.0) return out;  // p = 1: the point mass at 0
      if (!(d.r * d.q < count_mean_limit * d.p)) {
        out.status = CountStatus::beyond_int64;
        return out;
      }
      const double mode = negative_binomial_mode(d);
      const auto m = static_cast<std::int64_t>(mode);
      // the lower cut: the largest y in [0, m] with bound(y) <= t (bound(0) = -inf)
      std::int64_t lo = 0;
      if (d.r > 1.0 && m > 0) {
        std::int64_t hi = m + 1;
        while (hi - lo > 1) {
          const std::int64_t mid = lo + (hi - lo) / 2;
          if (negative_binomial_lower_tail_bound(d, mid) <= t) lo = mid;
          else hi = mid;
        }
      }
      // the upper cut: galloping up from the mode in steps of the standard deviation doubling, then a bisection
      // keeping bound(hi) <= t < bound(below)
      const double sd = ::sqrt(d.r * d.q) / d.p;
      std::int64_t below = m - 1, step = static_cast<std::int64_t>(::ceil(sd)) + 1, hi = m + step;
      while (negative_binomial_upper_tail_bound(d, hi) > t) {
        if (step > (std::int64_t{1} << 61)) {
          out.status = CountStatus::beyond_int64;
          return out;
        }
        below = hi;
        step *= 2;
        hi = m + step;
      }
      while (hi - below > 1) {
        const std::int64_t mid = below + (hi - below) / 2;
        if (negative_binomial_upper_tail_bound(d, mid) <= t) hi = mid;
        else below = mid;
      }
      out.lo = lo;
      out.hi = hi;
      const double dropped =
          ::exp(negative_binomial_lower_tail_bound(d, lo)) + ::exp(negative_binomial_upper_tail_bound(d, hi));
      out.error = dropped / (1.0 - dropped);
      out.top = top_near(d, mode);
      break;
    }
    case CountFamily::beta_negative_binomial: {
      // the smallest y >= the mode whose bound is <= log(tolerance): galloping up by 16 doubling, then a bisection
      // keeping bound(hi) <= t' < bound(below); a y past max_size is too long at once
      const double mode = beta_negative_binomial_mode(d), whole = ::log(tolerance);
      if (!(mode < count_mean_limit)) {
        out.status = CountStatus::beyond_int64;
        return out;
      }
      const auto m = static_cast<std::int64_t>(mode);
      std::int64_t below = m - 1, step = 16, hi = m;
      while (beta_negative_binomial_upper_tail_bound(d, hi) > whole) {
        if (hi >= max_size) {
          out.status = CountStatus::too_long;
          return out;
        }
        below = hi;
        hi = m + step;
        step *= 2;
      }
      while (hi - below > 1) {
        const std::int64_t mid = below + (hi - below) / 2;
        if (beta_negative_binomial_upper_tail_bound(d, mid) <= whole) hi = mid;
        else below = mid;
      }
      out.hi = hi;
      const double dropped = ::exp(beta_negative_binomial_upper_tail_bound(d, hi));
      out.error = dropped / (1.0 - dropped);
      out.top = top_near(d, mode);
      break;
    }
  }
  if (out.hi - out.lo >= max_size) out.status = CountStatus::too_long;
  return out;
}

/// Particle i's law from the family, s, a_i and b_i, and its window (status bad_parameter where the parameters leave
/// their domain): what the host's loop, the device's windows pass and the device's error report each need.
TALLY_HOST_DEVICE inline CountRange window_of(CountFamily family, double s, double a, double b, double tolerance,
                                              std::int64_t max_size, CountLaw& law) {
  if (read_law(family, s, a, b, law) != CountStatus::ok) {
    CountRange bad;
    bad.status = CountStatus::bad_parameter;
    return bad;
  }
  return count_range(law, tolerance, max_size);
}

/// The weight of value k in a law with largest log mass top: e^{log p(k) - top}, at most 1.
TALLY_HOST_DEVICE inline double count_weight(const CountLaw& d, double top, std::int64_t k) {
  return ::fmin(::exp(log_mass(d, k) - top), 1.0);
}

}  // namespace tally::gpu::detail::counts
