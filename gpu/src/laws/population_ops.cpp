// The population operations: the CPU reference (loops on one core) and the dispatch to CUDA by where data live.
#include "tally/gpu/population_ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "population_reference.hpp"
#include "population_cuda.hpp"
#include "binomial_math.hpp"
#include "population_math.hpp"
#include "thin_math.hpp"
#include "scan_math.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/convolve_batched.hpp"
#include "tally/gpu/sample_batched.hpp"
#include "infinities.hpp"

namespace tally::gpu {

namespace {


using detail::on_device;
using detail::same_shape;

/// A law per particle from its terms (population_math.hpp's BinomialTerms or BetaBinomialTerms), k = 0 .. n_i:
/// weights e^{log p_i(k) - M_i} with M_i = terms.top(), log_scale M_i, written by walk_chunks as the device does.
template <class MakeTerms>
Laws laws_from_terms(const std::vector<std::int64_t>& n, MakeTerms make_terms, const char* who) {
  std::size_t total = 0, longest = 0;
  for (std::int64_t ni : n) {
    if (ni < 0) tally::detail::fail<domain_error>(who, ": n = ", ni, " must be >= 0");
    if (ni >= (std::int64_t{1} << 32))
      tally::detail::fail<overflow_error>(who, ": n = ", ni, " would need a dense law of ", ni + 1, " weights");
    total += static_cast<std::size_t>(ni) + 1;
    longest = std::max(longest, static_cast<std::size_t>(ni) + 1);
  }
  Laws out = Laws::allocate(Backend::cpu, n.size(), total, longest, who);
  PmfBatch& b = out.host();
  std::size_t at = 0;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const auto m = static_cast<std::size_t>(n[i]) + 1;
    const auto terms = make_terms(i);
    const double top = terms.top();
    double* w = b.weights.data() + at;
    detail::walk_chunks(terms, top, static_cast<std::int64_t>(m), [&](std::int64_t k, double v) { w[k] = v; });
    b.log_scale[i] = top;
    at += m;
    b.offset[i + 1] = static_cast<std::int64_t>(at);
  }
  return out;
}

}  // namespace

Laws broadcast(std::span<const double> w, std::int64_t lo, double log_scale, std::size_t count, Backend where) {
  constexpr const char* who = "tally::gpu::broadcast";
  PmfBatch one;
  one.push_back(w, lo, log_scale);  // checks w
  if (on_device(where)) return population_cuda::broadcast(one.weights, lo, one.log_scale[0], count);
  const std::size_t m = w.size();
  Laws out = Laws::allocate(Backend::cpu, count, m * count, m, who);
  PmfBatch& b = out.host();
  for (std::size_t i = 0; i < count; ++i) {
    std::copy(one.weights.begin(), one.weights.end(), b.weights.begin() + static_cast<std::ptrdiff_t>(i * m));
    b.offset[i + 1] = static_cast<std::int64_t>((i + 1) * m);
    b.lo[i] = lo;
    b.log_scale[i] = one.log_scale[0];
  }
  return out;
}

Laws point_laws(const Column<std::int64_t>& v) {
  if (on_device(v.where())) return population_cuda::point_laws(v);
  Laws out = Laws::allocate(Backend::cpu, v.size(), v.size(), 1, "tally::gpu::point_laws");
  PmfBatch& b = out.host();
  for (std::size_t i = 0; i < v.size(); ++i) {
    b.weights[i] = 1.0;
    b.offset[i + 1] = static_cast<std::int64_t>(i + 1);
    b.lo[i] = v.host()[i];
  }
  return out;
}

Laws binomial_laws(const Column<std::int64_t>& n, const Column<double>& q, std::optional<std::int64_t> n_max) {
  constexpr const char* who = "tally::gpu::binomial_laws";
  same_shape(n, q, who);
  if (on_device(n.where())) return population_cuda::binomial_laws(n, q, n_max);
  for (double p : q.host()) tally::detail::check_probability(p, who, "q");
  return laws_from_terms(
      n.host(), [&](std::size_t i) { return detail::BinomialTerms(n.host()[i], q.host()[i]); }, who);
}

Laws beta_binomial_laws(const Column<std::int64_t>& n, const Column<double>& a, const Column<double>& b,
                        std::optional<std::int64_t> n_max) {
  constexpr const char* who = "tally::gpu::beta_binomial_laws";
  same_shape(n, a, who);
  same_shape(n, b, who);
  if (on_device(n.where())) return population_cuda::beta_binomial_laws(n, a, b, n_max);
  for (std::size_t i = 0; i < n.size(); ++i) {
    tally::detail::check_positive(a.host()[i], who, "a");
    tally::detail::check_positive(b.host()[i], who, "b");
  }
  return laws_from_terms(
      n.host(),
      [&](std::size_t i) {
        const std::int64_t ni = n.host()[i];
        const double ai = a.host()[i], bi = b.host()[i];
        return detail::BetaBinomialTerms(ni, ai, bi, detail::BetaBinomialTerms::constant(ni, ai, bi));
      },
      who);
}

Column<double> hazard_probabilities(const Column<std::int64_t>& k, double c) {
  constexpr const char* who = "tally::gpu::hazard_probabilities";
  tally::detail::check_nonnegative(c, who, "c");
  if (on_device(k.where())) return population_cuda::hazard_probabilities(k, c);
  std::vector<double> q(k.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (k.host()[i] < 0) tally::detail::fail<domain_error>(who, ": k = ", k.host()[i], " must be >= 0");
    q[i] = -std::expm1(-c * static_cast<double>(k.host()[i]));
  }
  return Column<double>::host_values(std::move(q));
}

namespace {
/// thin's CPU reference with law i's probability q_of(i).
template <class Q>
Laws thin_host(const Laws& x, Q q_of) {
  constexpr const char* who = "tally::gpu::thin";
  const PmfBatch& a = x.host();
  // law i's thinning lives on k = 0 .. lo_i + j_i, j_i its last entry of positive weight (0 without mass): the
  // zeros a conditioning leaves in a far tail (weights that underflowed) are not carried on, and lengths of laws
  // kept marginalized over many steps do not grow with the step. A box may start below 0 (a difference's box)
  // where its weights there are 0: the count's support starts at 0 or later.
  std::vector<std::size_t> lengths(a.size());
  std::size_t total = 0, longest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto m = static_cast<std::int64_t>(a.length(i));
    const double* w = a.weights.data() + a.offset[i];
    for (std::int64_t j = 0; j < m && a.lo[i] + j < 0; ++j)
      if (w[j] > 0.0)
        tally::detail::fail<domain_error>(who, ": particle ", i, "'s law has positive weight below 0: not a count");
    std::int64_t last = m - 1;
    while (last > 0 && !(w[last] > 0.0)) --last;
    const std::int64_t len = a.lo[i] + last + 1;  // >= 1 where the law has mass (its positive weights are at >= 0)
    lengths[i] = len > 0 ? static_cast<std::size_t>(len) : 1;
    total += lengths[i];
    longest = std::max(longest, lengths[i]);
  }
  Laws out = Laws::allocate(Backend::cpu, a.size(), total, longest, who);
  PmfBatch& b = out.host();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto len = static_cast<std::int64_t>(lengths[i]), m = static_cast<std::int64_t>(a.length(i)), lo = a.lo[i];
    const auto at = static_cast<std::size_t>(b.offset[i]);
    const double keep = q_of(i), drop = 1.0 - keep;
    const double* w = a.weights.data() + a.offset[i];
    double* acc = b.weights.data() + at;  // Horner's accumulator, in place (detail::horner_thinning_entry)
    double w_max = 0.0;
    for (std::int64_t n = 0; n < len; ++n)
      if (n - lo >= 0 && n - lo < m) w_max = std::fmax(w_max, w[n - lo]);
    std::fill(acc, acc + len, 0.0);
    const int e = w_max > 0.0 ? detail::thinning_scale_exponent(w_max) : 0;
    const double scale = std::ldexp(1.0, -e);  // exact: the largest weight in [1, 2)
    for (std::int64_t n = len - 1; w_max > 0.0 && n >= 0; --n) {
      const double wn = n - lo >= 0 && n - lo < m ? w[n - lo] * scale : 0.0;
      for (std::int64_t j = len - n - 1; j >= 1; --j) acc[j] = detail::horner_thinning_entry(keep, drop, acc[j], acc[j - 1]);
      acc[0] = detail::horner_thinning_entry(keep, drop, acc[0], 0.0) + wn;
    }
    const double top = *std::max_element(acc, acc + len);
    for (std::int64_t k = 0; k < len; ++k) acc[k] = top > 0.0 ? acc[k] / top : 0.0;
    b.offset[i + 1] = static_cast<std::int64_t>(at) + len;
    b.log_scale[i] = top > 0.0 ? a.log_scale[i] + (static_cast<double>(e) * detail::ln_two + std::log(top))
                               : -std::numeric_limits<double>::infinity();
  }
  return out;
}
}  // namespace

Laws thin(const Laws& x, double q) {
  tally::detail::check_probability(q, "tally::gpu::thin", "q");
  if (on_device(x.where())) return population_cuda::thin(x, q);
  return thin_host(x, [q](std::size_t) { return q; });
}

Laws thin(const Laws& x, const Column<double>& q) {
  constexpr const char* who = "tally::gpu::thin";
  same_shape(x, q, who);
  if (on_device(x.where())) return population_cuda::thin(x, q);
  for (const double v : q.host()) tally::detail::check_probability(v, who, "q");
  return thin_host(x, [&](std::size_t i) { return q.host()[i]; });
}

Laws negate(const Laws& x) {
  if (on_device(x.where())) return population_cuda::negate(x);
  Laws out = Laws::allocate(Backend::cpu, x.size(), x.total(), x.max_length(), "tally::gpu::negate");
  const PmfBatch& a = x.host();
  PmfBatch& b = out.host();
  b.offset = a.offset;
  b.log_scale = a.log_scale;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto first = a.weights.begin() + a.offset[i], last = a.weights.begin() + a.offset[i + 1];
    std::reverse_copy(first, last, b.weights.begin() + a.offset[i]);
    b.lo[i] = -(a.lo[i] + static_cast<std::int64_t>(a.length(i)) - 1);
  }
  return out;
}

Laws convolve(const Laws& x, const Laws& y) {
  same_shape(x, y, "tally::gpu::convolve");
  if (on_device(x.where())) return population_cuda::convolve(x, y);
  return Laws::from_host(cpu::convolve_batched(x.host(), y.host()), Backend::cpu);
}

Laws convolve_shared(const Laws& x, const Laws& y, std::size_t per) {
  constexpr const char* who = "tally::gpu::convolve_shared";
  if (per == 0 || y.size() * per != x.size() || (x.size() > 0 && y.size() == 0))
    tally::detail::fail<shape_error>(who, ": ", x.size(), " laws against ", y.size(), " shared by ", per, " each");
  if (x.where() != y.where()) tally::detail::fail<shape_error>(who, ": the laws are on different devices");
  if (on_device(x.where())) return population_cuda::convolve_shared(x, y, per);
  return Laws::from_host(cpu::convolve_shared_batched(x.host(), y.host(), per), Backend::cpu);
}

Laws condition_on_sum(const Laws& x, const Laws& y, const Column<std::int64_t>& z, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_sum";
  same_shape(x, y, who);
  same_shape(x, z, who);
  same_shape(x, log_likelihood, who);
  if (on_device(x.where())) return population_cuda::condition_on_sum(x, y, z, log_likelihood);
  SumConditioning c = cpu::condition_on_sum_batched(x.host(), y.host(), z.host());
  for (std::size_t i = 0; i < z.size(); ++i) log_likelihood.host()[i] += c.log_likelihood[i];
  return Laws::from_host(std::move(c.posterior), Backend::cpu);
}

Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, double q, Column<double>& log_likelihood,
                           Column<double>* prior_log_mass) {
  constexpr const char* who = "tally::gpu::condition_on_thinning";
  tally::detail::check_probability(q, who, "q");
  same_shape(x, v, who);
  same_shape(x, log_likelihood, who);
  if (prior_log_mass) same_shape(x, *prior_log_mass, who);
  if (on_device(x.where())) return population_cuda::condition_on_thinning(x, v, q, log_likelihood, prior_log_mass);
  if (prior_log_mass)
    for (std::size_t i = 0; i < x.size(); ++i) prior_log_mass->host()[i] = detail::log_mass(x.host(), i);
  const std::vector<std::int64_t>& observed = v.host();
  return detail::condition_by(
      x, [&](std::size_t i, std::int64_t k) { return detail::thinning_log_mass(k, observed[i], q); }, log_likelihood,
      who);
}

Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& q,
                           Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_thinning";
  same_shape(x, v, who);
  same_shape(x, q, who);
  same_shape(x, log_likelihood, who);
  if (on_device(x.where())) return population_cuda::condition_on_thinning(x, v, q, log_likelihood);
  for (const double p : q.host()) tally::detail::check_probability(p, who, "q");
  const std::vector<std::int64_t>& observed = v.host();
  return detail::condition_by(
      x, [&](std::size_t i, std::int64_t k) { return detail::thinning_log_mass(k, observed[i], q.host()[i]); },
      log_likelihood, who);
}

void add_log_mass(const Laws& x, const Column<std::int64_t>& v, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::add_log_mass";
  same_shape(x, v, who);
  same_shape(x, log_likelihood, who);
  if (on_device(x.where())) return population_cuda::add_log_mass(x, v, log_likelihood);
  const PmfBatch& a = x.host();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t j = v.host()[i] - a.lo[i];  // v and lo below 2^62 in magnitude (the laws' supports)
    const double w = j >= 0 && j < static_cast<std::int64_t>(a.length(i)) ? a.weights[std::size_t(a.offset[i] + j)] : 0.0;
    log_likelihood.host()[i] += w > 0.0 ? std::log(w) + a.log_scale[i] : neg_inf;
  }
}

double max_mass_ratio(const Laws& x, const Laws* y, const Column<double>& before, const Column<double>& after) {
  return std::max(0.0, max_mass_ratio_later(x, y, before, after).value());  // (the runtime's bound reads it so too)
}
double max_mass_ratio(const Column<double>& log_mass, const Column<double>& before, const Column<double>& after) {
  return std::max(0.0, max_mass_ratio_later(log_mass, before, after).value());
}

DeviceScalar max_mass_ratio_later(const Laws& x, const Laws* y, const Column<double>& before,
                                  const Column<double>& after) {
  constexpr const char* who = "tally::gpu::max_mass_ratio";
  same_shape(x, before, who);
  same_shape(x, after, who);
  if (y) same_shape(x, *y, who);
  if (on_device(x.where())) return population_cuda::max_mass_ratio(x, y, before, after);
  double out = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double l = after.host()[i] - before.host()[i];
    double m = detail::log_mass(x.host(), i);
    if (y) m += detail::log_mass(y->host(), i);
    if (std::isfinite(l) && m > neg_inf) out = std::max(out, std::exp(m - l));
  }
  return out;
}

DeviceScalar max_mass_ratio_later(const Column<double>& log_mass, const Column<double>& before,
                                  const Column<double>& after) {
  constexpr const char* who = "tally::gpu::max_mass_ratio";
  same_shape(log_mass, before, who);
  same_shape(log_mass, after, who);
  if (on_device(log_mass.where())) return population_cuda::max_mass_ratio(log_mass, before, after);
  double out = 0.0;
  for (std::size_t i = 0; i < log_mass.size(); ++i) {
    const double l = after.host()[i] - before.host()[i], m = log_mass.host()[i];
    if (std::isfinite(l) && m > neg_inf) out = std::max(out, std::exp(m - l));
  }
  return out;
}

DeviceScalar max_mass_ratio_later(const Column<double>& log_mass, const Column<double>& before,
                                  const Column<double>& after, const Column<std::int64_t>& held_by) {
  constexpr const char* who = "tally::gpu::max_mass_ratio (held laws)";
  same_shape(log_mass, before, who);
  same_shape(log_mass, after, who);
  if (on_device(held_by.where())) {
    if (on_device(log_mass.where()))
      return population_cuda::max_mass_ratio(log_mass, before, after, held_by);
    const auto there = [&](const Column<double>& c) { return Column<double>::from_host(c.host(), held_by.where()); };
    return population_cuda::max_mass_ratio(there(log_mass), there(before), there(after), held_by);
  }
  if (on_device(log_mass.where()))
    tally::detail::fail<shape_error>(who, ": a device table's laws held by particles on the host");
  const std::size_t laws = log_mass.size();
  double out = 0.0;
  for (const std::int64_t k : held_by.host()) {
    if (k < 0 || static_cast<std::size_t>(k) >= laws) continue;
    const auto j = static_cast<std::size_t>(k);
    const double l = after.host()[j] - before.host()[j], m = log_mass.host()[j];
    if (std::isfinite(l) && m > neg_inf) out = std::max(out, std::exp(m - l));
  }
  return out;
}

ValueRange support_range(const Laws& x) {
  if (on_device(x.where())) return population_cuda::support_range(x);
  const PmfBatch& a = x.host();
  ValueRange r{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.log_scale[i] == neg_inf) continue;
    const auto begin = static_cast<std::size_t>(a.offset[i]), m = a.length(i);
    for (std::size_t k = 0; k < m; ++k)
      if (a.weights[begin + k] > 0.0) {
        r.lo = std::min(r.lo, a.lo[i] + static_cast<std::int64_t>(k));
        break;
      }
    for (std::size_t k = m; k-- > 0;)
      if (a.weights[begin + k] > 0.0) {
        r.hi = std::max(r.hi, a.lo[i] + static_cast<std::int64_t>(k));
        break;
      }
  }
  return r;
}

void add_log_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood) {
  same_shape(x, v, "tally::gpu::add_log_equal");
  same_shape(x, log_likelihood, "tally::gpu::add_log_equal");
  if (on_device(x.where())) return population_cuda::add_log_equal(x, v, log_likelihood);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x.host()[i] != v.host()[i]) log_likelihood.host()[i] = neg_inf;
}

void observe_equal(const Column<std::int64_t>& x, const Column<std::int64_t>& v, Column<double>& log_likelihood,
                   Column<double>& log_weight) {
  constexpr const char* who = "tally::gpu::observe_equal";
  same_shape(x, v, who);
  same_shape(x, log_likelihood, who);
  same_shape(x, log_weight, who);
  if (on_device(x.where())) return population_cuda::observe_equal(x, v, log_likelihood, log_weight);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double l = x.host()[i] == v.host()[i] ? 0.0 : neg_inf;
    log_likelihood.host()[i] = l;
    log_weight.host()[i] += l;
  }
}

void add_to(Column<double>& acc, const Column<double>& x) {
  same_shape(acc, x, "tally::gpu::add_to");
  if (on_device(x.where())) return population_cuda::add_to(acc, x);
  for (std::size_t i = 0; i < x.size(); ++i) acc.host()[i] += x.host()[i];
}

void add_repeated(Column<double>& acc, const Column<double>& x, std::size_t times) {
  constexpr const char* who = "tally::gpu::add_repeated";
  if (times == 0 || acc.size() != x.size() * times)
    tally::detail::fail<shape_error>(who, ": ", acc.size(), " values and ", x.size(), " blocks of ", times);
  if (acc.where() != x.where()) tally::detail::fail<shape_error>(who, ": the columns live on different backends");
  if (on_device(x.where())) return population_cuda::add_repeated(acc, x, times);
  for (std::size_t i = 0; i < acc.size(); ++i) acc.host()[i] += x.host()[i / times];
}

Column<std::int64_t> sample(const Laws& x, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream) {
  if (on_device(x.where())) return population_cuda::sample(x, seed, counter, first_stream);
  if (first_stream == 0) return Column<std::int64_t>::host_values(cpu::sample_batched(x.host(), seed, counter));
  const PmfBatch& pmfs = x.host();
  std::vector<std::int64_t> out(pmfs.size());
  for (std::size_t i = 0; i < pmfs.size(); ++i) out[i] = cpu::sample_one(pmfs[i], pmfs.lo[i], seed, first_stream + i, counter);
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<std::int64_t> sample_shared(std::span<const double> w, std::int64_t lo, std::size_t count, std::uint64_t seed,
                                   std::uint64_t counter, std::uint64_t first_stream, Backend where) {
  if (w.empty()) tally::detail::fail<shape_error>("tally::gpu::sample_shared: a law without weights");
  const detail::DrawTable t = detail::draw_table(w);
  if (on_device(where)) return population_cuda::sample_shared(t, lo, count, seed, counter, first_stream);
  const auto tiles = static_cast<std::int64_t>(t.last_positive.size()), m = static_cast<std::int64_t>(w.size());
  std::vector<std::int64_t> out(count);
  for (std::size_t i = 0; i < count; ++i)
    out[i] = lo + detail::table_draw(t.carry.data(), t.c.data(), t.last_positive.data(), tiles, m, t.last_tile,
                                     philox_uniform(seed, first_stream + i, counter));
  return Column<std::int64_t>::host_values(std::move(out));
}

double gamma_variate(double shape, std::uint64_t seed, std::uint64_t particle, std::uint64_t counter) {
  tally::detail::check_positive(shape, "tally::gpu::gamma_variate", "shape");
  int next = 0;
  return detail::gamma_draw(shape, seed, particle, counter, next);
}

double beta_variate(double a, double b, std::uint64_t seed, std::uint64_t particle, std::uint64_t counter) {
  tally::detail::check_positive(a, "tally::gpu::beta_variate", "a");
  tally::detail::check_positive(b, "tally::gpu::beta_variate", "b");
  return detail::beta_draw(a, b, seed, particle, counter);
}

Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, const Column<double>& q, std::uint64_t seed,
                                     std::uint64_t counter, std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_binomial";
  same_shape(n, q, who);
  if (on_device(n.where())) return population_cuda::sample_binomial(n, q.data(), 0.0, seed, counter, first_stream);
  std::vector<std::int64_t> out(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    detail::check_binomial(who, i, n.host()[i], q.host()[i]);
    out[i] = detail::binomial_draw(n.host()[i], q.host()[i], philox_uniform(seed, first_stream + i, counter));
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<std::int64_t> sample_binomial(const Column<std::int64_t>& n, double q, std::uint64_t seed, std::uint64_t counter,
                                     std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_binomial";
  if (on_device(n.where())) return population_cuda::sample_binomial(n, nullptr, q, seed, counter, first_stream);
  std::vector<std::int64_t> out(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) {
    detail::check_binomial(who, i, n.host()[i], q);
    out[i] = detail::binomial_draw(n.host()[i], q, philox_uniform(seed, first_stream + i, counter));
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<double> sample_beta(const Column<double>& a, const Column<double>& b, std::uint64_t seed, std::uint64_t counter,
                           std::uint64_t first_stream) {
  constexpr const char* who = "tally::gpu::sample_beta";
  same_shape(a, b, who);
  if (on_device(a.where())) return population_cuda::sample_beta(a, b, seed, counter, first_stream);
  std::vector<double> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    tally::detail::check_positive(a.host()[i], who, "a");
    tally::detail::check_positive(b.host()[i], who, "b");
    out[i] = detail::beta_draw(a.host()[i], b.host()[i], seed, first_stream + i, counter);
  }
  return Column<double>::host_values(std::move(out));
}

Column<std::int64_t> linear(const Column<std::int64_t>& x, std::int64_t a, const Column<std::int64_t>& y,
                            std::int64_t b, std::int64_t c) {
  constexpr const char* who = "tally::gpu::linear";
  same_shape(x, y, who);
  if (on_device(x.where())) return population_cuda::linear(x, a, y, b, c);
  std::vector<std::int64_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const tally::detail::int128 r = tally::detail::int128{a} * x.host()[i] + tally::detail::int128{b} * y.host()[i] + c;
    if (r > std::numeric_limits<std::int64_t>::max() || r < std::numeric_limits<std::int64_t>::min())
      tally::detail::fail<overflow_error>(who, ": particle ", i, ": ", a, " * ", x.host()[i], " + ", b, " * ",
                                          y.host()[i], " + ", c, " overflows the 64-bit integer range");
    out[i] = static_cast<std::int64_t>(r);
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<std::int64_t> tie_constants(const Column<std::int64_t>& z, int sign, const Column<double>& log_likelihood,
                                   const Column<std::int64_t>& x_lo, const Column<std::int64_t>& y_end) {
  constexpr const char* who = "tally::gpu::tie_constants";
  same_shape(z, log_likelihood, who);
  same_shape(z, x_lo, who);
  same_shape(z, y_end, who);
  if (on_device(z.where())) return population_cuda::tie_constants(z, sign, log_likelihood, x_lo, y_end);
  std::vector<std::int64_t> out(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    const bool impossible = log_likelihood.host()[i] == -std::numeric_limits<double>::infinity();
    out[i] = sign * (impossible ? x_lo.host()[i] + sign * y_end.host()[i] : z.host()[i]);
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<std::int64_t> support_end(const Laws& laws, std::size_t per, std::size_t count, bool hi) {
  constexpr const char* who = "tally::gpu::support_end";
  if (per == 0 || laws.size() * per != count)
    tally::detail::fail<shape_error>(who, ": ", laws.size(), " laws shared by blocks of ", per, " for ", count,
                                     " particles");
  if (on_device(laws.where())) return population_cuda::support_end(laws, per, count, hi);
  const PmfBatch& b = laws.host();
  std::vector<std::int64_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = i / per;
    out[i] = b.lo[k] + (hi ? static_cast<std::int64_t>(b.length(k)) - 1 : 0);
  }
  return Column<std::int64_t>::host_values(std::move(out));
}

Column<std::int64_t> filled(std::int64_t v, std::size_t count, Backend where) {
  if (on_device(where)) return population_cuda::filled(v, count);
  return Column<std::int64_t>::host_values(std::vector<std::int64_t>(count, v));
}

Column<double> filled(double v, std::size_t count, Backend where) {
  if (on_device(where)) return population_cuda::filled(v, count);
  return Column<double>::host_values(std::vector<double>(count, v));
}

Column<double> repeated(const Column<double>& values, std::size_t times) {
  if (times == 0) tally::detail::fail<shape_error>("tally::gpu::repeated: times = 0");
  if (on_device(values.where())) return population_cuda::repeated(values, times);
  std::vector<double> out(values.size() * times);
  for (std::size_t g = 0; g < values.size(); ++g)
    std::fill_n(out.begin() + static_cast<std::ptrdiff_t>(g * times), times, values.host()[g]);
  return Column<double>::host_values(std::move(out));
}

Column<std::size_t> block_indices(std::size_t count, std::size_t per, Backend where) {
  if (per == 0) tally::detail::fail<shape_error>("tally::gpu::block_indices: per = 0");
  if (on_device(where)) return population_cuda::block_indices(count, per);
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = i / per;
  return Column<std::size_t>::host_values(std::move(out));
}

Laws repeated(const Laws& x, std::size_t times) {
  if (times == 0) tally::detail::fail<shape_error>("tally::gpu::repeated: times = 0");
  if (on_device(x.where())) return population_cuda::repeated(x, times);  // (offsets from x's: no lengths read back)
  return gather(x, block_indices(x.size() * times, times, x.where()));
}

void beta_update(Column<double>& a, Column<double>& b, const Column<std::int64_t>& n, const Column<std::int64_t>& k) {
  constexpr const char* who = "tally::gpu::beta_update";
  same_shape(a, b, who);
  same_shape(a, n, who);
  same_shape(a, k, who);
  if (on_device(a.where())) return population_cuda::beta_update(a, b, n, k);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (k.host()[i] < 0 || k.host()[i] > n.host()[i]) continue;  // an impossible count: the particle's weight is 0
    a.host()[i] += static_cast<double>(k.host()[i]);
    b.host()[i] += static_cast<double>(n.host()[i] - k.host()[i]);
  }
}

namespace {
/// The host's gathers, from x then y (y null: one source): entry or law i of the result is the a_i-th of their
/// concatenation; bad(k, n) raises the caller's error for an index k past their n entries.
template <class T, class Bad>
Column<T> gathered_values(const Column<T>& x, const Column<T>* y, const Column<std::size_t>& a, Bad bad) {
  const std::size_t nx = x.size(), n = nx + (y != nullptr ? y->size() : 0);
  std::vector<T> out(a.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t k = a.host()[i];
    if (k >= n) bad(k, n);
    out[i] = k < nx ? x.host()[k] : y->host()[k - nx];
  }
  return Column<T>::host_values(std::move(out));
}
template <class Bad>
Laws gathered_laws(const PmfBatch& x, const PmfBatch* y, const Column<std::size_t>& a, std::size_t max_length,
                   const char* who, Bad bad) {
  const std::size_t nx = x.size(), n = nx + (y != nullptr ? y->size() : 0);
  std::size_t total = 0;
  for (const std::size_t k : a.host()) {
    if (k >= n) bad(k, n);
    total += k < nx ? x.length(k) : y->length(k - nx);
  }
  Laws out = Laws::allocate(Backend::cpu, a.size(), total, max_length, who);
  PmfBatch& b = out.host();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::size_t k = a.host()[i];
    const PmfBatch& from = k < nx ? x : *y;
    const std::size_t j = k < nx ? k : k - nx;
    const auto src = from[j];
    std::copy(src.begin(), src.end(), b.weights.begin() + b.offset[i]);
    b.offset[i + 1] = b.offset[i] + static_cast<std::int64_t>(src.size());
    b.lo[i] = from.lo[j];
    b.log_scale[i] = from.log_scale[j];
  }
  return out;
}
/// An ancestor past the population (gather's error).
[[noreturn]] void bad_ancestor(std::size_t a, std::size_t n) {
  tally::detail::fail<shape_error>("tally::gpu::gather: ancestor ", a, " of ", n, " particles");
}
template <class T>
Column<T> gather_values(const Column<T>& x, const Column<std::size_t>& ancestors) {
  return gathered_values(x, static_cast<const Column<T>*>(nullptr), ancestors, bad_ancestor);
}
}  // namespace

namespace detail {
Column<std::size_t> index_ranges(std::span<const IndexRange> ranges, Backend where) {
  std::size_t total = 0;
  for (const IndexRange& r : ranges) total += r.count;
  if (on_device(where)) return population_cuda::index_ranges(ranges, total);
  std::vector<std::size_t> out;
  out.reserve(total);
  for (const IndexRange& r : ranges)
    for (std::size_t k = 0; k < r.count; ++k) out.push_back(r.first + k);
  return Column<std::size_t>::host_values(std::move(out));
}

Column<std::size_t> shifted_slice(const Column<std::size_t>& x, std::size_t first, std::size_t count,
                                  std::size_t shift) {
  constexpr const char* who = "tally::gpu::detail::shifted_slice";
  if (first > x.size() || count > x.size() - first)
    tally::detail::fail<shape_error>(who, ": entries ", first, " .. ", first + count, " of ", x.size());
  if (on_device(x.where())) return population_cuda::shifted_slice(x, first, count, shift);
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t v = x.host()[first + i];
    if (v < shift) tally::detail::fail<domain_error>(who, ": entry ", first + i, " is ", v, ", below ", shift);
    out[i] = v - shift;
  }
  return Column<std::size_t>::host_values(std::move(out));
}

namespace {
/// An index past both sources (gather_two's error).
[[noreturn]] void bad_index(std::size_t k, std::size_t n) {
  tally::detail::fail<shape_error>("tally::gpu::detail::gather_two: index ", k, " of ", n);
}
template <class T>
Column<T> gather_two_values(const Column<T>& x, const Column<T>& y, const Column<std::size_t>& a) {
  return gathered_values(x, &y, a, bad_index);
}
template <class T>
void same_place(const Column<T>& x, const Column<T>& y, const Column<std::size_t>& a) {
  if (x.where() != y.where() || x.where() != a.where())
    tally::detail::fail<shape_error>("tally::gpu::detail::gather_two: operands in different places");
}
}  // namespace

Column<std::int64_t> gather_two(const Column<std::int64_t>& x, const Column<std::int64_t>& y,
                                const Column<std::size_t>& a) {
  same_place(x, y, a);
  if (on_device(x.where())) return population_cuda::gather_two(x, y, a);
  return gather_two_values(x, y, a);
}

Column<double> gather_two(const Column<double>& x, const Column<double>& y, const Column<std::size_t>& a) {
  same_place(x, y, a);
  if (on_device(x.where())) return population_cuda::gather_two(x, y, a);
  return gather_two_values(x, y, a);
}

Laws gather_two(const Laws& x, const Laws& y, const Column<std::size_t>& a) {
  constexpr const char* who = "tally::gpu::detail::gather_two";
  if (x.where() != y.where() || x.where() != a.where())
    tally::detail::fail<shape_error>(who, ": operands in different places");
  const std::size_t max_length = std::max(x.max_length(), y.max_length());
  if (on_device(x.where())) return population_cuda::gather_two(x, y, a, max_length);
  return gathered_laws(x.host(), &y.host(), a, max_length, who, bad_index);
}

Column<std::size_t> kept_first_placement(const Column<std::size_t>& x, std::size_t at, std::size_t first,
                                         std::size_t count, std::size_t lo) {
  constexpr const char* who = "tally::gpu::detail::kept_first_placement";
  if (at > x.size() || count > x.size() - at)
    tally::detail::fail<shape_error>(who, ": entries ", at, " .. ", at + count, " of ", x.size());
  if (on_device(x.where())) return population_cuda::kept_first_placement(x, at, first, count, lo);
  // received: lo .. first - 1 (below = first - lo of them, none when lo >= first), then from above = max(first +
  // count, lo) on
  const std::size_t below = lo < first ? first - lo : 0, above = std::max(first + count, lo);
  std::vector<std::size_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t v = x.host()[at + i];
    if (v < lo) tally::detail::fail<domain_error>(who, ": entry ", at + i, " is ", v, ", below ", lo);
    out[i] = v >= first && v < first + count ? v - first
             : v < first                     ? count + (v - lo)
                                             : count + below + (v - above);
  }
  return Column<std::size_t>::host_values(std::move(out));
}

ForeignRequests foreign_requests(const Column<std::size_t>& x, std::span<const std::size_t> bounds, std::size_t me) {
  constexpr const char* who = "tally::gpu::detail::foreign_requests";
  if (bounds.size() < me + 2)
    tally::detail::fail<shape_error>(who, ": shard ", me, " among ", bounds.size(), " bounds");
  if (on_device(x.where())) return population_cuda::foreign_requests(x, bounds, me);
  const std::vector<std::size_t>& v = x.host();
  const std::size_t first = bounds[me], last = bounds[me + 1], count = v.size();
  ForeignRequests out{Column<std::size_t>::host_values({}), Column<std::size_t>::host_values({}),
                      std::vector<std::size_t>(bounds.size() - 1, 0)};
  std::vector<std::size_t>& requests = out.requests.host();
  std::vector<std::size_t> placement(count);
  for (std::size_t i = 0, q = 0; i < count; ++i) {
    if ((i > 0 && v[i] < v[i - 1]) || v[i] >= bounds.back())
      tally::detail::fail<domain_error>(who, ": entry ", i, " is ", v[i], " (nondecreasing entries below ",
                                        bounds.back(), " are needed)");
    if (v[i] >= first && v[i] < last) {
      placement[i] = v[i] - first;
      continue;
    }
    if (requests.empty() || requests.back() != v[i]) {
      requests.push_back(v[i]);
      while (v[i] >= bounds[q + 1]) ++q;  // (v nondecreasing: q only grows)
      ++out.per_shard[q];
    }
    placement[i] = count + requests.size() - 1;
  }
  out.placement = Column<std::size_t>::host_values(std::move(placement));
  return out;
}

Column<std::int64_t> law_lengths(const Laws& x) {
  if (on_device(x.where())) return population_cuda::law_lengths(x);
  std::vector<std::int64_t> out(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = x.host().offset[i + 1] - x.host().offset[i];
  return Column<std::int64_t>::host_values(std::move(out));
}

Laws laws_of_lengths(const Column<std::int64_t>& lengths, std::size_t total, std::size_t max_length, const char* who) {
  if (on_device(lengths.where())) return population_cuda::laws_of_lengths(lengths, total, max_length, who);
  Laws out = Laws::allocate(Backend::cpu, lengths.size(), total, max_length, who);
  std::vector<std::int64_t>& offset = out.host().offset;
  for (std::size_t i = 0; i < lengths.size(); ++i) offset[i + 1] = offset[i] + lengths.host()[i];
  if (offset.back() != static_cast<std::int64_t>(total))
    tally::detail::fail<shape_error>(who, ": laws of ", offset.back(), " weights in all, not ", total);
  return out;
}
}  // namespace detail

Column<std::int64_t> gather(const Column<std::int64_t>& x, const Column<std::size_t>& ancestors) {
  if (on_device(x.where())) return population_cuda::gather(x, ancestors);
  return gather_values(x, ancestors);
}

Column<double> gather(const Column<double>& x, const Column<std::size_t>& ancestors) {
  if (on_device(x.where())) return population_cuda::gather(x, ancestors);
  return gather_values(x, ancestors);
}

namespace {
template <class T>
std::vector<Column<T>> gather_columns(std::span<const Column<T>* const> xs, const Column<std::size_t>& ancestors) {
  for (const Column<T>* x : xs)
    if (x->where() != ancestors.where())
      tally::detail::fail<shape_error>("tally::gpu::gather: columns and ancestors in different memories");
  if (!xs.empty() && on_device(ancestors.where())) return population_cuda::gather(xs, ancestors);
  std::vector<Column<T>> out;
  out.reserve(xs.size());
  for (const Column<T>* x : xs) out.push_back(gather_values(*x, ancestors));
  return out;
}
}  // namespace

std::vector<Column<std::int64_t>> gather(std::span<const Column<std::int64_t>* const> xs,
                                         const Column<std::size_t>& ancestors) {
  return gather_columns(xs, ancestors);
}
std::vector<Column<double>> gather(std::span<const Column<double>* const> xs, const Column<std::size_t>& ancestors) {
  return gather_columns(xs, ancestors);
}

std::vector<Column<double>> copies(std::span<const Column<double>* const> xs) {
  for (const Column<double>* x : xs)
    if (x->size() != xs.front()->size() || x->where() != xs.front()->where())
      tally::detail::fail<shape_error>("tally::gpu::copies: columns of different sizes or places");
  if (!xs.empty() && on_device(xs.front()->where())) return population_cuda::copies(xs);
  std::vector<Column<double>> out;
  out.reserve(xs.size());
  for (const Column<double>* x : xs) out.push_back(x->clone());
  return out;
}

Laws gather(const Laws& x, const Column<std::size_t>& ancestors) {
  if (on_device(x.where())) return population_cuda::gather(x, ancestors);
  return gathered_laws(x.host(), nullptr, ancestors, x.max_length(), "tally::gpu::gather", bad_ancestor);
}

Column<std::size_t> resample(const Column<double>& log_w, Resampler kind, std::uint64_t seed, std::uint64_t counter,
                             WeightSummary& summary, double threshold, const WeightSummary* known) {
  if (on_device(log_w.where()))
    return population_cuda::resample(log_w, kind, seed, counter, summary, threshold, known);
  if (std::all_of(log_w.host().begin(), log_w.host().end(), [](double l) { return l == neg_inf; })) {
    summary = {neg_inf, neg_inf, 0.0};
    return {};
  }
  return Column<std::size_t>::host_values(cpu::resample(log_w.host(), kind, seed, counter, &summary));
}

}  // namespace tally::gpu
