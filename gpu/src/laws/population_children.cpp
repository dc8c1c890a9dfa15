// Children of population laws (mixtures s_x X + s_y Y and conditionings on them): the CPU reference, the checks,
// and the dispatch to the CUDA forms.
#include "tally/gpu/population_children.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "child_math.hpp"
#include "population_cuda.hpp"
#include "population_reference.hpp"
#include "infinities.hpp"

namespace tally::gpu {

namespace {

using detail::on_device;
using detail::same_shape;
using Kind = ChildKernel::Kind;

/// A per_set child's scalars on the host (null for a single child or a table child).
const double* host_q(const ChildKernel& k) { return k.q_each.empty() ? nullptr : k.q_each.host().data(); }

void check_signs(int sign_x, int sign_y, const char* who) {
  if (sign_x < -1 || sign_x > 1 || (sign_y != -1 && sign_y != 1))
    tally::detail::fail<domain_error>(who, ": signs s_x = ", sign_x, ", s_y = ", sign_y,
                                      " (s_x must be -1, 0 or 1 and s_y -1 or 1)");
}

/// The scalars of a child, and its table's shape and place (the entries are checked by the named constructors); a
/// per_set child's sets against the laws.
void check_child(const ChildKernel& k, Backend where, std::size_t laws, const char* who) {
  if (k.per > 0) {
    if (k.laws() != laws)
      tally::detail::fail<shape_error>(who, ": a child per set of ", k.per, " laws for ", k.sets, " sets takes ",
                                       k.laws(), " laws, not ", laws);
    if (k.kind == Kind::binomial || k.kind == Kind::scaled_poisson) {
      if (k.q_each.size() != k.sets || k.q_each.where() != where)
        tally::detail::fail<shape_error>(who, ": the sets' parameters are not one per set where the laws are");
      return;  // (each checked by the constructor it came from)
    }
  }
  switch (k.kind) {
    case Kind::binomial: tally::detail::check_probability(k.q, who, "keep probability q"); return;
    case Kind::scaled_poisson: tally::detail::check_nonnegative(k.q, who, "rate scale a"); return;
    case Kind::affine:
      if (k.a == 0) tally::detail::fail<domain_error>(who, ": an affine child y = a k + c needs a != 0");
      return;
    case Kind::indexed_poisson:
    case Kind::categorical: break;
  }
  if (k.table.rows == 0 || k.table.cols == 0 || k.table.values.size() != k.table.rows * k.table.cols)
    tally::detail::fail<shape_error>(who, ": the child's table is empty or malformed (", k.table.rows, " x ",
                                     k.table.cols, ")");
  if (k.kind == Kind::indexed_poisson && k.table.cols != 1)
    tally::detail::fail<shape_error>(who, ": rates must be a K x 1 table, not ", k.table.rows, " x ", k.table.cols);
  if (k.table.where() != where)
    tally::detail::fail<shape_error>(who, ": the child's table and the particles are in different memories (host and device)");
}

}  // namespace

ChildKernel ChildKernel::binomial(double q) {
  tally::detail::check_probability(q, "tally::gpu::ChildKernel::binomial", "keep probability q");
  ChildKernel k;
  k.kind = Kind::binomial;
  k.q = q;
  return k;
}

ChildKernel ChildKernel::scaled_poisson(double a) {
  tally::detail::check_nonnegative(a, "tally::gpu::ChildKernel::scaled_poisson", "rate scale a");
  ChildKernel k;
  k.kind = Kind::scaled_poisson;
  k.q = a;
  return k;
}

ChildKernel ChildKernel::indexed_poisson(Table rates) {
  constexpr const char* who = "tally::gpu::ChildKernel::indexed_poisson";
  if (rates.rows == 0 || rates.cols != 1)
    tally::detail::fail<shape_error>(who, ": rates must be a K x 1 table (K >= 1), not ", rates.rows, " x ", rates.cols);
  for (double r : rates.host_values()) tally::detail::check_nonnegative(r, who, "rate");
  ChildKernel k;
  k.kind = Kind::indexed_poisson;
  k.table = std::move(rates);
  return k;
}

ChildKernel ChildKernel::categorical(Table transition) {
  constexpr const char* who = "tally::gpu::ChildKernel::categorical";
  if (transition.rows == 0 || transition.cols == 0)
    tally::detail::fail<shape_error>(who, ": the transition table is empty (", transition.rows, " x ", transition.cols, ")");
  const std::vector<double> t = transition.host_values();
  for (std::size_t i = 0; i < transition.rows; ++i) {
    double row = 0.0;
    for (std::size_t j = 0; j < transition.cols; ++j) {
      const double e = t[i * transition.cols + j];
      if (!(e >= 0.0) || !std::isfinite(e))
        tally::detail::fail<domain_error>(who, ": entry T(", i, ", ", j, ") = ", e, " is not finite and >= 0");
      row += e;
    }
    if (std::abs(row - 1.0) > 1e-9) tally::detail::fail<domain_error>(who, ": row ", i, " of T sums to ", row, ", not 1");
  }
  ChildKernel k;
  k.kind = Kind::categorical;
  k.table = std::move(transition);
  return k;
}

ChildKernel ChildKernel::per_set(const std::vector<ChildKernel>& sets, std::size_t per, Backend where) {
  constexpr const char* who = "tally::gpu::ChildKernel::per_set";
  if (sets.empty() || per == 0)
    tally::detail::fail<domain_error>(who, ": needs at least one set and per >= 1 (", sets.size(), " sets, per = ", per, ")");
  ChildKernel k;
  k.kind = sets[0].kind;
  k.per = per;
  k.sets = sets.size();
  for (const ChildKernel& s : sets)
    if (s.kind != k.kind || s.per != 0)
      tally::detail::fail<domain_error>(who, ": the sets' children must be single children of one kind");
  switch (k.kind) {
    case Kind::affine: tally::detail::fail<domain_error>(who, ": affine children have no per-set form");
    case Kind::binomial:
    case Kind::scaled_poisson: {
      std::vector<double> q;
      q.reserve(sets.size());
      for (const ChildKernel& s : sets) q.push_back(s.q);
      k.q = sets[0].q;
      k.q_each = on_device(where) ? Column<double>::from_host(q, where) : Column<double>::host_values(std::move(q));
      return k;
    }
    case Kind::indexed_poisson:
    case Kind::categorical: break;
  }
  const std::size_t rows = sets[0].table.rows, cols = sets[0].table.cols;
  std::vector<double> stacked;
  stacked.reserve(sets.size() * rows * cols);
  for (const ChildKernel& s : sets) {
    if (s.table.rows != rows || s.table.cols != cols)
      tally::detail::fail<shape_error>(who, ": the sets' tables must have one shape (", rows, " x ", cols, ", not ",
                                       s.table.rows, " x ", s.table.cols, ")");
    const std::vector<double> v = s.table.host_values();
    stacked.insert(stacked.end(), v.begin(), v.end());
  }
  k.table = Table::from_host(stacked, sets.size() * rows, cols, where);
  k.set_rows = rows;
  return k;
}

ChildKernel ChildKernel::affine(std::int64_t a, std::int64_t c) {
  if (a == 0) tally::detail::fail<domain_error>("tally::gpu::ChildKernel::affine: y = a k + c needs a != 0");
  ChildKernel k;
  k.kind = Kind::affine;
  k.a = a;
  k.c = c;
  return k;
}

Laws mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, double tolerance, std::int64_t max_size) {
  constexpr const char* who = "tally::gpu::mix";
  check_signs(sign_x, sign_y, who);
  check_child(child, x.where(), x.size(), who);
  if (child.poisson() && !(tolerance > 0.0 && tolerance < 1.0))
    tally::detail::fail<domain_error>(who, ": tolerance = ", tolerance, " must lie in (0, 1) for a Poisson child");
  if (max_size < 1) tally::detail::fail<domain_error>(who, ": max_size = ", max_size, " must be >= 1");
  if (on_device(x.where())) return population_cuda::mix(x, child, sign_x, sign_y, tolerance, max_size);

  const PmfBatch& a = x.host();
  const detail::ChildView all = detail::child_view(child, child.table.values.host().data(), host_q(child));
  const double half = tolerance / 2;
  std::vector<detail::MixRange> ranges(a.size());
  std::size_t total = 0, longest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {  // one pass: the first particle with any error, as on the device
    const auto m = static_cast<std::int64_t>(a.length(i));
    const detail::ChildView ch = all.at(static_cast<std::int64_t>(i));
    const detail::MixRange r =
        detail::mix_range(ch, sign_x, sign_y, a.weights.data() + a.offset[i], m, a.lo[i], a.log_scale[i], half, max_size);
    if (r.status != detail::MixStatus::ok)
      detail::fail_mix(who, i, r, a.lo[i], a.lo[i] + m - 1, static_cast<std::size_t>(ch.rows), max_size);
    ranges[i] = r;
    const auto len = static_cast<std::size_t>(detail::mix_length(r));
    total += len;
    longest = std::max(longest, len);
  }
  Laws out = Laws::allocate(Backend::cpu, a.size(), total, longest, who);
  PmfBatch& b = out.host();
  std::size_t at = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const detail::MixRange& r = ranges[i];
    const auto len = static_cast<std::size_t>(detail::mix_length(r));
    const double* w = a.weights.data() + a.offset[i];
    const auto m = static_cast<std::int64_t>(a.length(i));
    double top = 0.0;
    if (!r.dead)
      for (std::size_t j = 0; j < len; ++j)
        top = std::max(top, b.weights[at + j] = detail::mix_entry(all.at(static_cast<std::int64_t>(i)), sign_x, sign_y,
                                                                  w, m, a.lo[i], r.lo + static_cast<std::int64_t>(j)));
    const bool dead = !(top > 0.0);
    for (std::size_t j = 0; j < len; ++j) b.weights[at + j] = dead ? 0.0 : b.weights[at + j] / top;
    at += len;
    b.offset[i + 1] = static_cast<std::int64_t>(at);
    b.lo[i] = r.lo;
    b.log_scale[i] = dead ? neg_inf : a.log_scale[i] + std::log(top);
  }
  return out;
}

Laws condition_on_mix(const Laws& x, const ChildKernel& child, int sign_x, int sign_y, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_mix";
  check_signs(sign_x, sign_y, who);
  same_shape(x, z, who);
  same_shape(x, log_likelihood, who);
  check_child(child, x.where(), x.size(), who);
  if (on_device(x.where())) return population_cuda::condition_on_mix(x, child, sign_x, sign_y, z, log_likelihood);
  const PmfBatch& a = x.host();
  const detail::ChildView all = detail::child_view(child, child.table.values.host().data(), host_q(child));
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::int64_t lo = a.lo[i], hi = lo + static_cast<std::int64_t>(a.length(i)) - 1;
    const detail::ChildView ch = all.at(static_cast<std::int64_t>(i));
    const detail::MixStatus s = detail::live_parent_status(ch, a.weights.data() + a.offset[i],
                                                           static_cast<std::int64_t>(a.length(i)), lo, a.log_scale[i]);
    if (s != detail::MixStatus::ok)
      detail::fail_mix(who, i, {0, 0, s, false}, lo, hi, static_cast<std::size_t>(ch.rows), 0);
  }
  const std::vector<std::int64_t>& observed = z.host();
  return detail::condition_by(
      x,
      [&](std::size_t i, std::int64_t k) {
        return detail::mix_log_lik(all.at(static_cast<std::int64_t>(i)), sign_x, sign_y, observed[i], k);
      },
      log_likelihood, who);
}

}  // namespace tally::gpu
