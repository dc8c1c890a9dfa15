// Private: the arithmetic of subset walks (scaled products, exact sums, Gray code, a keyed permutation), host and device.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef TALLY_HD
#if defined(__CUDACC__)
#define TALLY_HD __host__ __device__
#else
#define TALLY_HD
#endif
#endif
#if defined(__CUDA_ARCH__)
#define TALLY_UNROLL _Pragma("unroll")
#else
#define TALLY_UNROLL
#endif

namespace tally::gpu::detail {

// ---- scaled products ----------------------------------------------------------------------------------------------
/// A positive number m 2^e with m in [1/2, 1): a product of any number of factors neither overflows nor underflows.
struct Scaled {
  double m;
  int e;
};
TALLY_HD inline Scaled scaled(double x) {  // x > 0 and finite
  int e = 0;
  const double m = frexp(x, &e);
  return {m, e};
}
/// One rounding: m_a m_b is in [1/4, 1), renormalized by an exact doubling.
TALLY_HD inline Scaled times(Scaled a, Scaled b) {
  double m = a.m * b.m;
  int e = a.e + b.e;
  if (m < 0.5) {
    m *= 2.0;
    --e;
  }
  return {m, e};
}
/// m 2^e as a double: 0 or subnormal only when the value is below the smallest normal double. On the device the
/// power of two is built from its exponent bits when it is a normal double (exact, as ldexp; ldexp otherwise).
TALLY_HD inline double value(Scaled a) {
#if defined(__CUDA_ARCH__)
  if (a.e >= -1021 && a.e <= 1023) return a.m * __hiloint2double((a.e + 1023) << 20, 0);
#endif
  return ldexp(a.m, a.e);
}

// ---- exact sums ---------------------------------------------------------------------------------------------------
/// A double-double hi + lo (|lo| <= ulp(hi)/2): sums of a few dozen doubles stay exact while the weights span fewer
/// than about 50 binary orders of magnitude, so hi is the correctly rounded subset sum whatever the order of adds.
struct DoubleDouble {
  double hi = 0.0, lo = 0.0;
};
/// TwoSum(hi, b) (Knuth: s + e = hi + b exactly), then lo folded in and renormalized (FastTwoSum).
TALLY_HD inline DoubleDouble add(DoubleDouble a, double b) {
  const double s = a.hi + b;
  const double bb = s - a.hi;
  double e = (a.hi - (s - bb)) + (b - bb);
  e += a.lo;
  const double hi = s + e;
  return {hi, e - (hi - s)};
}

/// The running sum of a walk and its sort key: int64 weights sum exactly; double weights in double-double.
TALLY_HD inline void step(std::int64_t& s, std::int64_t w, bool on) { s += on ? w : -w; }
TALLY_HD inline void step(DoubleDouble& s, double w, bool on) { s = add(s, on ? w : -w); }
TALLY_HD inline std::int64_t total(std::int64_t s) { return s; }
TALLY_HD inline double total(DoubleDouble s) { return s.hi; }
template <class W>
struct Accumulator {
  using type = std::int64_t;
};
template <>
struct Accumulator<double> {
  using type = DoubleDouble;
};

// ---- Gray code ----------------------------------------------------------------------------------------------------
TALLY_HD inline std::uint64_t gray(std::uint64_t i) { return i ^ (i >> 1); }
/// Trailing zeros of x != 0: the Gray-code bit that changes between i - 1 and i is ctz(i).
TALLY_HD inline int ctz(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(x)) - 1;
#else
  return __builtin_ctzll(x);
#endif
}

/// One weight of a walk with 0 < p < 1, q = 1 - p, hi = max(p, q): the factors of its two states relative to the
/// most likely one (rel_on = p / hi, rel_off = q / hi; one of them is 1), and the ratios of a switch
/// (on = p / q when it joins the subset, off = q / p when it leaves).
template <class W>
struct WalkItem {
  W w;
  Scaled rel_on, rel_off, on, off;
};

/// The length of a run: a walk restarts from a subset computed from scratch every 16 steps, so that every weight
/// has at most n + 2 * 15 roundings of products (plus one per factor): the Gray steps never drift.
inline constexpr int run_log2 = 4;
inline constexpr std::uint32_t run_length = 1u << run_log2;

/// Subset number `index` (Gray code gray(index): bit i selects item i) from scratch, in item order: the sum, and the
/// probability relative to the most likely subset.
template <class W>
struct Visit {
  typename Accumulator<W>::type sum{};
  Scaled weight{0.5, 1};  // 1
};
template <class W>
TALLY_HD inline Visit<W> from_scratch(const WalkItem<W>* items, int n, std::uint64_t mask,
                                      typename Accumulator<W>::type start) {
  Visit<W> v;
  v.sum = start;
  for (int i = 0; i < n; ++i) {
    const bool on = (mask >> i) & 1u;
    if (on) step(v.sum, items[i].w, true);
    v.weight = times(v.weight, on ? items[i].rel_on : items[i].rel_off);
  }
  return v;
}

/// Visits subsets gray(first), ..., gray(first + length - 1) in Gray-code order (first a multiple of run_length,
/// length <= run_length): the first from scratch, then each by one add of +-w_b and one multiply by a ratio,
/// b = ctz(j) < run_log2 for the j-th step. visit(sum, Scaled weight) is called for each, in order.
template <class W, class F>
TALLY_HD inline void walk_run(const WalkItem<W>* items, int n, typename Accumulator<W>::type start, std::uint64_t first,
                              std::uint32_t length, F&& visit) {
  Visit<W> v = from_scratch(items, n, gray(first), start);
  visit(total(v.sum), v.weight);
  TALLY_UNROLL
  for (std::uint32_t j = 1; j < length; ++j) {
    const int b = ctz(j);
    const bool on = (gray(first + j) >> b) & 1u;
    step(v.sum, items[b].w, on);
    v.weight = times(v.weight, on ? items[b].on : items[b].off);
    visit(total(v.sum), v.weight);
  }
}

/// Neumaier's compensated sum: the long sums of positive weights (many subsets with one total) stay within a few
/// roundings whatever their length.
struct Compensated {
  double sum = 0.0, c = 0.0;
  TALLY_HD void add(double x) {
    const double t = sum + x;
    c += fabs(sum) >= fabs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  TALLY_HD double value() const { return sum + c; }
};

/// Radix-sortable keys: non-negative int64 sums as they are; non-negative double sums by their bit patterns (which
/// order like the values; +0 is the only zero a walk produces).
TALLY_HD inline std::uint64_t sort_key(std::int64_t s) { return static_cast<std::uint64_t>(s); }
TALLY_HD inline std::uint64_t sort_key(double s) {
  std::uint64_t bits;
  memcpy(&bits, &s, sizeof bits);
  return bits;
}
template <class W>
TALLY_HD inline W from_key(std::uint64_t k) {
  if constexpr (std::is_floating_point_v<W>) {
    double s;
    memcpy(&s, &k, sizeof s);
    return s;
  } else {
    return static_cast<W>(k);
  }
}

// ---- a keyed permutation of [0, 2^n) ------------------------------------------------------------------------------
/// splitmix64's finalizer: a bijective mixer of 64-bit words.
TALLY_HD inline std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/// The key of vector i's permutation under `seed`.
TALLY_HD inline std::uint64_t permutation_key(std::uint64_t seed, std::uint64_t i) {
  return mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull));
}
/// pi(x) for x in [0, 2^n), 0 <= n <= 63: a 4-round balanced Feistel network on 2h >= n bits (h = ceil(n / 2)) is a
/// bijection of [0, 2^2h); cycle walking (apply it again while the result is >= 2^n) restricts it to a bijection of
/// [0, 2^n), in fewer than 2 rounds on average since 2^2h <= 2^(n+1).
TALLY_HD inline std::uint64_t permute(std::uint64_t x, int n, std::uint64_t key) {
  if (n == 0) return 0;
  const int h = (n + 1) / 2;
  const std::uint64_t half = (std::uint64_t{1} << h) - 1;
  do {
    std::uint64_t l = x >> h, r = x & half;
    for (std::uint64_t round = 0; round < 4; ++round) {
      const std::uint64_t f = mix64(r ^ (key + round * 0x9e3779b97f4a7c15ull)) & half;
      const std::uint64_t t = l ^ f;
      l = r;
      r = t;
    }
    x = (l << h) | r;
  } while ((x >> n) != 0);
  return x;
}

}  // namespace tally::gpu::detail
