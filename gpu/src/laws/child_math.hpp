// Private: the per-particle formulas of population_children, shared by the CPU reference and the CUDA kernels:
// log p(y | k) of each child kind, the Poisson cuts, each particle's range and the entries of its mixture.
#pragma once

#include <math.h>

#include <cstddef>
#include <cstdint>

#include "population_math.hpp"
#include "population_reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_children.hpp"

namespace tally::gpu::detail {

using ChildKind = ChildKernel::Kind;
using tally::detail::int128;

/// What the formulas read of a ChildKernel: its scalars and its table's values where the laws live. A per_set
/// kernel's view holds every set's (q_each, the stacked table); at(i) is law i's own.
struct ChildView {
  ChildKind kind;
  double q;
  std::int64_t a, c;
  const double* table;
  std::int64_t rows, cols;
  const double* q_each = nullptr;  // per_set: each set's q (binomial, scaled_poisson)
  std::int64_t per = 0;            // per_set: laws per set (0: every law's child is this one)
  /// Law i's child: set s = i / per's q and rows (K of them, from row s K of the stacked table).
  TALLY_HOST_DEVICE ChildView at(std::int64_t i) const {
    if (per == 0) return *this;
    ChildView v = *this;
    const std::int64_t s = i / per;
    if (q_each) v.q = q_each[s];  // (a set of scalar children)
    else v.table = table + s * rows * cols;
    v.per = 0;
    return v;
  }
};

/// k's view with its table's values (and a per_set kernel's scalars) at `table` and `q_each`, where they live.
inline ChildView child_view(const ChildKernel& k, const double* table, const double* q_each = nullptr) {
  const bool stacked = k.per > 0 && k.set_rows > 0;
  return {k.kind,
          k.q,
          k.a,
          k.c,
          table,
          static_cast<std::int64_t>(stacked ? k.set_rows : k.table.rows),
          static_cast<std::int64_t>(k.table.cols),
          q_each,
          static_cast<std::int64_t>(k.per)};
}

/// \f$ \log p(y \mid k) \f$ (-inf where impossible).
TALLY_HOST_DEVICE inline double child_log_mass(const ChildView& ch, std::int64_t k, std::int64_t y) {
  switch (ch.kind) {
    case ChildKind::binomial: return binomial_log_mass(k, y, ch.q);
    case ChildKind::scaled_poisson: return poisson_log_mass(y, ch.q * static_cast<double>(k));
    case ChildKind::indexed_poisson: return k >= 0 && k < ch.rows ? poisson_log_mass(y, ch.table[k]) : -INFINITY;
    case ChildKind::categorical: return table_log_entry(ch.table, ch.rows, ch.cols, k, y);
    case ChildKind::affine: return static_cast<int128>(ch.a) * k + ch.c == y ? 0.0 : -INFINITY;
  }
  return -INFINITY;
}

/// True when v fits in int64.
TALLY_HOST_DEVICE inline bool fits(int128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

/// \f$ \ell(z, k) = \log p(s_y (z - s_x k) \mid k) \f$ (-inf where that y leaves int64: no child reaches it).
TALLY_HOST_DEVICE inline double mix_log_lik(const ChildView& ch, int sx, int sy, std::int64_t z, std::int64_t k) {
  const int128 y = sy * (static_cast<int128>(z) - static_cast<int128>(sx) * k);
  return fits(y) ? child_log_mass(ch, k, static_cast<std::int64_t>(y)) : -INFINITY;
}

/// \f$ r(z) = \sum_j w_j\, p(s_y (z - s_x (lo + j)) \mid lo + j) \f$ over the m weights w of a law on lo, lo + 1, ...,
/// in increasing j (host and device alike). An affine child has one term at most (when s_x + s_y a != 0), or
/// the sum of the weights where z = s_y c (when s_x + s_y a = 0): taken directly.
TALLY_HOST_DEVICE inline double mix_entry(const ChildView& ch, int sx, int sy, const double* w, std::int64_t m,
                                          std::int64_t lo, std::int64_t z) {
  if (ch.kind == ChildKind::affine) {  // z = (s_x + s_y a) k + s_y c
    const int128 d = sx + sy * static_cast<int128>(ch.a), rest = static_cast<int128>(z) - sy * static_cast<int128>(ch.c);
    if (d == 0) {
      if (rest != 0) return 0.0;
      double s = 0.0;
      for (std::int64_t j = 0; j < m; ++j) s += w[j];
      return s;
    }
    if (rest % d != 0) return 0.0;
    const int128 j = rest / d - lo;
    return j >= 0 && j < m ? w[static_cast<std::int64_t>(j)] : 0.0;
  }
  double s = 0.0;
  for (std::int64_t j = 0; j < m; ++j) {
    if (!(w[j] > 0.0)) continue;
    const double l = mix_log_lik(ch, sx, sy, z, lo + j);
    if (l > -INFINITY) s += w[j] * ::exp(l);
  }
  return s;
}

// ---- the Poisson cuts -------------------------------------------------------------------------------------------

/// The log of a bound on \f$ P(\mathrm{Poisson}(r) < y) = \sum_{j < y} p(j) \f$: the terms below y - 1 shrink by
/// the ratio j / r <= (y - 1) / r < 1 each step down, so the sum is at most \f$ p(y - 1) / (1 - (y - 1)/r) \f$;
/// +inf where y - 1 >= r (no such bound), -inf at y = 0 (nothing below). Non-decreasing in y.
TALLY_HOST_DEVICE inline double poisson_lower_tail_bound(double r, std::int64_t y) {
  if (y <= 0) return -INFINITY;
  const double below = static_cast<double>(y - 1);
  if (!(below < r)) return INFINITY;
  return poisson_log_mass(y - 1, r) - ::log1p(-below / r);
}

/// The log of a bound on \f$ P(\mathrm{Poisson}(r) > y) = \sum_{j > y} p(j) \f$: the terms above y + 1 shrink by
/// r / (j + 1) <= r / (y + 2) < 1 each step up, so the sum is at most \f$ p(y + 1) / (1 - r / (y + 2)) \f$; +inf
/// where y + 2 <= r. Non-increasing in y.
TALLY_HOST_DEVICE inline double poisson_upper_tail_bound(double r, std::int64_t y) {
  const double above = static_cast<double>(y) + 2.0;
  if (!(above > r)) return INFINITY;
  return poisson_log_mass(y + 1, r) - ::log1p(-r / above);
}

/// Rates at or above this put the cuts beyond what a dense range can hold (an overflow).
inline constexpr double poisson_rate_limit = 0x1p60;

/// The largest y >= 0 whose lower-tail bound is <= log(half): P(Poisson(r) < y) <= half. Rate 0: 0. A bisection
/// on [0, floor(r) + 2) (the bound is +inf from floor(r) + 2 on). r < poisson_rate_limit.
TALLY_HOST_DEVICE inline std::int64_t poisson_lower_cut(double r, double half) {
  if (!(r > 0.0)) return 0;
  const double t = ::log(half);
  std::int64_t lo = 0, hi = static_cast<std::int64_t>(::floor(r)) + 2;  // bound(lo) <= t < bound(hi)
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (poisson_lower_tail_bound(r, mid) <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/// The smallest y >= 0 whose upper-tail bound is <= log(half): P(Poisson(r) > y) <= half. Rate 0: 0. Galloping
/// up from the mode in steps of sqrt(r) doubling, then a bisection. r < poisson_rate_limit and half < 1/2.
TALLY_HOST_DEVICE inline std::int64_t poisson_upper_cut(double r, double half) {
  if (!(r > 0.0)) return 0;
  const double t = ::log(half);
  const auto mode = static_cast<std::int64_t>(::floor(r));
  std::int64_t lo = mode >= 1 ? mode - 2 : -1;  // bound(lo) > t (+inf there; y = -1 stands for P(Y > -1) = 1)
  std::int64_t step = static_cast<std::int64_t>(::ceil(::sqrt(r))), hi = mode + step;
  while (poisson_upper_tail_bound(r, hi) > t) {
    if (step > (std::int64_t{1} << 61)) return INT64_MAX;  // not reached below poisson_rate_limit
    lo = hi;
    step *= 2;
    hi = mode + step;
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (poisson_upper_tail_bound(r, mid) <= t)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

// ---- each particle's range ----------------------------------------------------------------------------------------

/// Why a particle has no range: its parent's support (not a count, not a state), a range leaving int64, or one
/// longer than max_size.
enum class MixStatus : int { ok = 0, not_count = 1, not_state = 2, overflow = 3, too_long = 4 };

struct MixRange {
  std::int64_t lo, hi;  // the z-range (dead: 0 .. 0)
  MixStatus status;
  bool dead;
};

/// The parent checks of a child kind for a law on [lo, hi].
TALLY_HOST_DEVICE inline MixStatus parent_status(const ChildView& ch, std::int64_t lo, std::int64_t hi) {
  switch (ch.kind) {
    case ChildKind::binomial:
    case ChildKind::scaled_poisson: return lo < 0 ? MixStatus::not_count : MixStatus::ok;
    case ChildKind::indexed_poisson:
    case ChildKind::categorical: return lo < 0 || hi >= ch.rows ? MixStatus::not_state : MixStatus::ok;
    case ChildKind::affine: return MixStatus::ok;
  }
  return MixStatus::ok;
}

/// The entries of positive weight of a law (m weights w): the first and the last, or -1 and -1 for none.
TALLY_HOST_DEVICE inline void positive_entries(const double* w, std::int64_t m, std::int64_t& first, std::int64_t& last) {
  first = -1, last = -1;
  for (std::int64_t j = 0; j < m; ++j)
    if (w[j] > 0.0) {
      if (first < 0) first = j;
      last = j;
    }
}

/// The parent checks on a law's support of positive weight [lo + first, lo + last], as tally's Pmf checks its
/// trimmed support (zero weights at the edges do not count); a dead law (no positive weight, or log-scale -inf)
/// passes: it adds nothing.
TALLY_HOST_DEVICE inline MixStatus live_parent_status(const ChildView& ch, const double* w, std::int64_t m,
                                                      std::int64_t lo, double s) {
  std::int64_t first, last;
  positive_entries(w, m, first, last);
  if (first < 0 || s == -INFINITY) return MixStatus::ok;
  return parent_status(ch, lo + first, lo + last);
}

/// The z-range of a law (m weights w on lo, lo + 1, ..., log-scale s): population_children.hpp's rules, on the
/// law's support of positive weight.
TALLY_HOST_DEVICE inline MixRange mix_range(const ChildView& ch, int sx, int sy, const double* w, std::int64_t m,
                                            std::int64_t stored_lo, double s, double half, std::int64_t max_size) {
  MixRange r{0, 0, MixStatus::ok, false};
  std::int64_t first, last;  // entries of positive weight
  positive_entries(w, m, first, last);
  if (first < 0 || s == -INFINITY) {
    r.dead = true;
    return r;
  }
  const std::int64_t lo = stored_lo + first, hi = stored_lo + last;
  r.status = parent_status(ch, lo, hi);
  if (r.status != MixStatus::ok) return r;
  w += first;
  last -= first;
  first = 0;
  int128 y_lo = 0, y_hi = 0;
  switch (ch.kind) {
    case ChildKind::binomial: y_hi = hi; break;
    case ChildKind::categorical: y_hi = ch.cols - 1; break;
    case ChildKind::affine: {
      const int128 u = static_cast<int128>(ch.a) * lo + ch.c, v = static_cast<int128>(ch.a) * hi + ch.c;
      y_lo = u < v ? u : v;
      y_hi = u < v ? v : u;
      break;
    }
    case ChildKind::scaled_poisson:
    case ChildKind::indexed_poisson: {
      double low = INFINITY, high = 0.0;
      for (std::int64_t j = first; j <= last; ++j) {
        if (!(w[j] > 0.0)) continue;
        const double rate = ch.kind == ChildKind::scaled_poisson ? ch.q * static_cast<double>(lo + j) : ch.table[lo + j];
        low = rate < low ? rate : low;
        high = rate > high ? rate : high;
      }
      if (!(high < poisson_rate_limit)) {
        r.status = MixStatus::overflow;
        return r;
      }
      y_lo = poisson_lower_cut(low, half);
      y_hi = poisson_upper_cut(high, half);
      break;
    }
  }
  if (!fits(y_lo) || !fits(y_hi)) {
    r.status = MixStatus::overflow;
    return r;
  }
  const int128 x_lo = sx == 1 ? lo : sx == -1 ? -static_cast<int128>(hi) : 0;
  const int128 x_hi = sx == 1 ? hi : sx == -1 ? -static_cast<int128>(lo) : 0;
  const int128 z_lo = x_lo + (sy == 1 ? y_lo : -y_hi), z_hi = x_hi + (sy == 1 ? y_hi : -y_lo);
  if (!fits(z_lo) || !fits(z_hi)) {
    r.status = MixStatus::overflow;
    return r;
  }
  r.lo = static_cast<std::int64_t>(z_lo);
  r.hi = static_cast<std::int64_t>(z_hi);
  if (z_hi - z_lo + 1 > max_size) r.status = MixStatus::too_long;
  return r;
}

/// The length a range takes in the result (1 for a dead particle).
TALLY_HOST_DEVICE inline std::int64_t mix_length(const MixRange& r) { return r.dead ? 1 : r.hi - r.lo + 1; }

/// The host's error for particle i whose range came back with a bad status (k: the table's states).
[[noreturn]] inline void fail_mix(const char* who, std::size_t i, const MixRange& r, std::int64_t lo, std::int64_t hi,
                                  std::size_t k, std::int64_t max_size) {
  switch (r.status) {
    case MixStatus::not_count:
      tally::detail::fail<domain_error>(who, ": particle ", i, "'s law on ", lo, " .. ", hi,
                                        " is not a count (lo < 0), as a thinning or a scaled Poisson needs");
    case MixStatus::not_state: fail_states(who, i, lo, hi, k);
    case MixStatus::too_long: {
      const auto size = static_cast<unsigned long long>(r.hi) - static_cast<unsigned long long>(r.lo) + 1ULL;
      tally::detail::fail<overflow_error>(who, ": particle ", i, "'s result on ", r.lo, " .. ", r.hi, " needs ",
                                          size == 0 ? "2^64" : std::to_string(size), " entries, more than max_size = ",
                                          max_size);
    }
    case MixStatus::overflow:
    case MixStatus::ok: break;
  }
  tally::detail::fail<overflow_error>(who, ": particle ", i, "'s result (its law on ", lo, " .. ", hi,
                                      ") reaches beyond the 64-bit integer range");
}

}  // namespace tally::gpu::detail
