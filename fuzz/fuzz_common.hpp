// Shared by the fuzz targets: decoding parameters from bytes, the properties every result must have, and the
// exception and slow-call policy (only tally's documented errors; no call far slower than its output's size).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <limits>
#include <string>
#include <typeinfo>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sparse_pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/error.hpp"

namespace tally::fuzz {

/// Reports a violated property and aborts (libFuzzer then saves the input as a crash).
[[noreturn]] inline void violated(const std::string& what) {
  std::fprintf(stderr, "tally fuzz: property violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) violated(what);
}

/// A double from the input, drawn from the kinds of values a hostile user tries: small integers, probabilities
/// near 0 and 1, powers of ten from 1e-300 to 1e300, and raw bit patterns (NaN, infinities, denormals).
inline double any_double(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return static_cast<double>(in.ConsumeIntegralInRange<int>(-3, 40));
    case 1: return in.ConsumeProbability<double>();
    case 2: return 1.0 - std::ldexp(1.0, -in.ConsumeIntegralInRange<int>(1, 60));
    case 3: return std::pow(10.0, in.ConsumeIntegralInRange<int>(-300, 300));
    case 4: {
      const auto bits = in.ConsumeIntegral<std::uint64_t>();
      double d;
      static_assert(sizeof d == sizeof bits);
      __builtin_memcpy(&d, &bits, sizeof d);
      return d;
    }
    default: return in.ConsumeFloatingPointInRange<double>(0.0, 100.0);
  }
}

/// A probability-like double: mostly in [0, 1], sometimes not.
inline double any_probability(FuzzedDataProvider& in) {
  return in.ConsumeIntegralInRange<int>(0, 7) == 0 ? any_double(in) : in.ConsumeProbability<double>();
}

/// An integer: mostly small, sometimes near the ends of int64.
inline std::int64_t any_integer(FuzzedDataProvider& in, std::int64_t small = 60) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return in.ConsumeIntegral<std::int64_t>();
    case 1: return std::numeric_limits<std::int64_t>::max() - in.ConsumeIntegralInRange<std::int64_t>(0, 100);
    case 2: return std::numeric_limits<std::int64_t>::min() + in.ConsumeIntegralInRange<std::int64_t>(0, 100);
    case 3: return in.ConsumeIntegralInRange<std::int64_t>(-1000000, 1000000);
    default: return in.ConsumeIntegralInRange<std::int64_t>(-small / 4, small);
  }
}

/// The truncation the targets use: a fuzzed tolerance, and sizes small enough that every call is quick (so that
/// a slow call is a finding, not a big input).
inline Truncation any_truncation(FuzzedDataProvider& in) {
  Truncation t;
  t.tolerance = in.ConsumeBool() ? 1e-15 : any_probability(in);
  t.max_size = std::int64_t{1} << in.ConsumeIntegralInRange<int>(0, 13);
  t.max_work = std::int64_t{1} << 21;
  return t;
}

/// The properties of every Pmf: finite non-negative weights with largest 1, a finite log scale, a non-negative
/// error bound, no NaN probability, and a normalized copy of mass 1 within 1e-9.
inline void check(const Pmf& d) {
  require(d.size() >= 1, "a pmf has no entries");
  double top = 0.0;
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    const double w = d.weights()[i];
    require(std::isfinite(w) && w >= 0.0, "a pmf weight is NaN, infinite or negative");
    top = std::max(top, w);
  }
  require(top == 1.0, "a pmf's largest weight is not 1");
  require(d.weights()[0] > 0.0 && d.weights()[d.size() - 1] > 0.0, "a pmf's first or last entry is zero");
  require(std::isfinite(d.log_scale()), "a pmf's log scale is not finite");
  require(d.error_bound() >= 0.0, "a pmf's error bound is negative or NaN");
  const double lm = d.log_mass();
  require(!std::isnan(lm) && lm < std::numeric_limits<double>::infinity(), "a pmf's log mass is NaN or +inf");
  const Pmf n = d.normalized();
  require(std::abs(std::exp(n.log_mass()) - 1.0) <= 1e-9, "a normalized pmf's mass is not 1 within 1e-9");
  const double m = mean(n);
  require(!std::isnan(m), "a pmf's mean is NaN");
  require(!(variance(n) < -1e-9 * (1.0 + m * m)), "a pmf's variance is negative");
}

inline void check(const SparsePmf& d) {
  require(d.size() >= 1, "a sparse pmf has no entries");
  for (Eigen::Index i = 0; i < d.size(); ++i) {
    require(std::isfinite(d.weights()[i]) && d.weights()[i] >= 0.0, "a sparse pmf weight is NaN or negative");
    if (i > 0) require(d.points()[i] > d.points()[i - 1], "a sparse pmf's points are not increasing");
  }
  require(std::isfinite(d.log_scale()), "a sparse pmf's log scale is not finite");
  require(d.error_bound() >= 0.0, "a sparse pmf's error bound is negative or NaN");
}

/// A probability (pdf, cdf): in [0, 1] (to rounding), never NaN.
inline void check_probability(double p, const char* what) {
  if (!(p >= 0.0 && p <= 1.0 + 1e-12)) violated(std::string(what) + " is not a probability: " + std::to_string(p));
}

/// A log-probability or log-likelihood: finite or -inf, never NaN or +inf (a log-weight may exceed 0 only for
/// unnormalized measures, so only NaN and +inf are checked).
inline void check_log(double l, const char* what) {
  if (std::isnan(l) || l == std::numeric_limits<double>::infinity())
    violated(std::string(what) + " is NaN or +inf");
}

/// Seconds a call may take before it is reported slow: base + per_unit x the size of what it produced (or was
/// asked to produce). Generous, for sanitizer builds on a loaded machine; TALLY_FUZZ_SLOW_SECONDS scales it
/// (0 turns the check off). TALLY_FUZZ_TRACE (set) prints every call's name, CPU seconds and size to stderr.
inline double slow_scale() {
  static const double s = [] {
    const char* e = std::getenv("TALLY_FUZZ_SLOW_SECONDS");
    return e ? std::atof(e) : 1.0;
  }();
  return s;
}

/// Runs f(); anything thrown but tally's documented error types (and the extra types the caller allows by
/// `Allowed`) is a finding; so is a call slower than 10 s + 20 us per unit of `size()` (evaluated after the
/// call: the size of its result), in the CPU time of this thread: the bound is on work, so that a shared, loaded
/// machine (a long run niced behind other builds) does not turn waiting into findings. The 10 s: the slowest calls
/// the library allows by design (a quantile walking up to its 2^23-term bound, then two cdfs of as many terms:
/// 1.1 s optimized, 5.0 s in this instrumented build; a NegativeBinomial's truncation or quantile through 113-bit
/// incomplete betas near the median at r = 1e11, below the 2^40 limit: 0.26 s optimized, 3.7 to 4.4 s here)
/// took 5.1 to 5.8 s of thread time with 31 jobs on the device machine's 32 hardware threads; the cliffs this
/// bound is for took minutes. Returns whether f completed
/// without throwing; `error` gets the message.
inline double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
template <class F, class Size>
bool guarded(const char* what, F&& f, Size&& size, std::string* error = nullptr) {
  const double start = thread_seconds();
  bool ok = false;
  try {
    f();
    ok = true;
  } catch (const tally::domain_error& e) {
    if (error) *error = e.what();
  } catch (const tally::shape_error& e) {
    if (error) *error = e.what();
  } catch (const tally::overflow_error& e) {
    if (error) *error = e.what();
  } catch (const std::bad_alloc&) {
    violated(std::string(what) + ": std::bad_alloc (a size check is missing)");
  } catch (const std::exception& e) {
    violated(std::string(what) + ": foreign exception " + typeid(e).name() + ": " + e.what());
  }
  const double seconds = thread_seconds() - start;
  static const bool trace = std::getenv("TALLY_FUZZ_TRACE") != nullptr;  // each call, to find what makes a slow input
  if (trace) std::fprintf(stderr, "fuzz: %s: %.3f s, size %.0f\n", what, seconds, static_cast<double>(size()));
  const double bound = slow_scale() * (10.0 + 2e-5 * static_cast<double>(size()));
  if (slow_scale() > 0.0 && seconds > bound)
    violated(std::string(what) + ": slow call, " + std::to_string(seconds) + " s for a result of size " +
             std::to_string(static_cast<double>(size())));
  return ok;
}

}  // namespace tally::fuzz
