// Batched joint laws, the operations beyond the split: convolution along an axis, linear combinations, Markov steps,
// conditioning on children, selected emissions and thinnings (observed or appended) and linear combinations,
// sampling the tuple or one coordinate (CPU reference and dispatch).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "joint_batch.hpp"
#include "joint_cuda.hpp"
#include "joint_likelihood.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu {

namespace {

using detail::int128;
using detail::JointBox;
using detail::check_states;
using detail::minus_inf;

void check_place(const JointLaws& x, Backend where, std::size_t n, const char* who, const char* what) {
  if (n != x.size() || where != x.where())
    tally::detail::fail<shape_error>(who, ": ", x.size(), " laws and ", n, " ", what, ", not in one place");
}

/// The coefficients as a JointLinear, after checking that c + kappa . x fits in int64 over every law's box.
detail::JointLinear linear_of(const JointLaws& x, const std::vector<std::int64_t>& coefficients, std::int64_t constant,
                              int replace, const char* who) {
  if (coefficients.size() != static_cast<std::size_t>(x.rank()))
    tally::detail::fail<shape_error>(who, ": ", coefficients.size(), " coefficients for rank ", x.rank());
  if (replace < -1 || replace >= x.rank())
    tally::detail::fail<shape_error>(who, ": replace = ", replace, " is not -1 or an axis of rank ", x.rank());
  detail::JointLinear f{};
  for (int a = 0; a < x.rank(); ++a) f.coefficient[a] = coefficients[static_cast<std::size_t>(a)];
  f.constant = constant;
  f.replace = replace;
  for (std::size_t i = 0; i < x.size(); ++i) {  // the largest |c| + sum |kappa_a| max(|lo_a|, |hi_a|), in 128 bits
    const JointBox b = detail::box(x, i);
    int128 bound = constant < 0 ? -int128{constant} : int128{constant};
    for (int a = 0; a < b.rank; ++a) {
      const int128 lo = b.lo[a], hi = int128{b.lo[a]} + b.shape[a] - 1;
      const int128 m = std::max(lo < 0 ? -lo : lo, hi < 0 ? -hi : hi), k = f.coefficient[a];
      bound += (k < 0 ? -k : k) * m;
    }
    if (bound > INT64_MAX)
      tally::detail::fail<overflow_error>(who, ": law ", i, "'s linear combination leaves int64");
  }
  return f;
}

/// Law i of `out` from entry(i, in, to, w, e) (sums of weights), rescaled to largest 1, log scale s_i + extra_i +
/// log of the largest (-inf without mass).
template <class Entry, class Extra>
void rescaled_loop(const JointLaws& x, JointLaws& out, Entry entry, Extra extra) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox in = detail::box(x, i), to = detail::box(out, i);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.weights().host().data() + out.offset()[i];
    double top = 0.0;
    for (std::int64_t e = 0; e < to.size; ++e) top = std::max(top, o[e] = entry(i, in, to, w, e));
    for (std::int64_t e = 0; e < to.size; ++e) o[e] = top > 0.0 ? o[e] / top : 0.0;
    const double s = x.log_scale().host()[i] + extra(i);
    out.log_scale().host()[i] = top > 0.0 && s > minus_inf ? s + std::log(top) : minus_inf;
  }
}

/// joint_math.hpp's sample rule over the n weights w with the uniform u: the drawn entry (the last positive weight
/// when the target u * total is not passed, 0 when no weight is positive).
std::int64_t sample_entry(const double* w, std::int64_t n, double u) {
  constexpr int chunks = detail::joint_block;
  const std::int64_t chunk = detail::sample_chunk(n);
  std::array<double, chunks + 1> start{};  // B_t: sequential sums of the chunks' sequential sums
  for (int t = 0; t < chunks; ++t) {
    double sum = 0.0;
    for (std::int64_t e = t * chunk; e < std::min(n, (t + 1) * chunk); ++e) sum += w[e];
    start[static_cast<std::size_t>(t) + 1] = start[static_cast<std::size_t>(t)] + sum;
  }
  const double target = u * start[chunks];
  for (int t = 0; t < chunks; ++t) {
    double run = 0.0;
    for (std::int64_t e = t * chunk; e < std::min(n, (t + 1) * chunk); ++e) {
      run += w[e];
      if (start[static_cast<std::size_t>(t)] + run > target) return e;
    }
  }
  std::int64_t last_positive = 0;
  for (std::int64_t e = 0; e < n; ++e)
    if (w[e] > 0.0) last_positive = e;
  return last_positive;
}

}  // namespace

namespace detail {

/// The shared conditioning (joint_batch.hpp): o = log w + l(e) exponentiated, normalized; log L_i added (the law
/// kept, -inf, when impossible).
JointLaws condition_joint(const JointLaws& x, const detail::JointLikelihood& l, const Column<std::int64_t>& v,
                         Column<double>& log_likelihood, const char* who) {
  check_place(x, v.where(), v.size(), who, "observations");
  check_place(x, log_likelihood.where(), log_likelihood.size(), who, "log-likelihoods");
  JointLaws out = allocate_like(x, x.rank(), [](const JointBox& b) { return b; }, who);
  if (x.where() == Backend::cuda) {
    joint_cuda::condition(x, l, v, log_likelihood, out);
    return out;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox b = box(x, i);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.weights().host().data() + out.offset()[i];
    const double s = x.log_scale().host()[i];
    JointLikelihood li = l;  // law i's own child where there is one per set
    li.child = l.child.at(static_cast<std::int64_t>(i));
    for (std::int64_t e = 0; e < b.size; ++e)
      o[e] = w[e] > 0.0 ? std::log(w[e]) + joint_log_likelihood(li, b, e, v.host()[i]) : minus_inf;
    const double top = exponentiate(o, b.size);
    if (top == minus_inf || s == minus_inf) {
      std::copy(w, w + b.size, o);
      out.log_scale().host()[i] = s;
      log_likelihood.host()[i] = minus_inf;
      continue;
    }
    double sum = 0.0;
    for (std::int64_t e = 0; e < b.size; ++e) sum += o[e];
    out.log_scale().host()[i] = -std::log(sum);
    log_likelihood.host()[i] += s + top + std::log(sum);
  }
  return out;
}

}  // namespace detail

JointLaws joint_add_independent(const JointLaws& x, int axis, const JointLaws& y) {
  constexpr const char* who = "tally::gpu::joint_add_independent";
  detail::check_axis(x, axis, who);
  if (y.rank() != 1) tally::detail::fail<shape_error>(who, ": the added laws have rank ", y.rank(), ", not 1");
  check_place(x, y.where(), y.size(), who, "added laws");
  // the boxes: axis spans [lo + lo_y, hi + hi_y]
  std::vector<std::int64_t> lo = x.lo(), shape = x.shape();
  const auto k = static_cast<std::size_t>(x.rank()), a = static_cast<std::size_t>(axis);
  for (std::size_t i = 0; i < x.size(); ++i) {
    lo[i * k + a] = tally::detail::checked_add(lo[i * k + a], y.lo()[i], who);
    shape[i * k + a] = tally::detail::checked_add(shape[i * k + a], y.shape()[i] - 1, who);
  }
  JointLaws out = JointLaws::allocate(x.where(), x.rank(), std::move(lo), std::move(shape), who);
  if (x.where() == Backend::cuda) {
    joint_cuda::add_independent(x, axis, y, out);
    return out;
  }
  rescaled_loop(
      x, out,
      [&](std::size_t i, const JointBox& in, const JointBox& to, const double* w, std::int64_t e) {
        return detail::add_entry(in, to, axis, w, y.weights().host().data() + y.offset()[i], y.lo()[i], y.shape()[i], e);
      },
      [&](std::size_t i) { return y.log_scale().host()[i]; });
  return out;
}

JointLaws joint_outer(const JointLaws& x, const JointLaws& y) {
  constexpr const char* who = "tally::gpu::joint_outer";
  check_place(x, y.where(), y.size(), who, "laws to multiply");
  const int rank = x.rank() + y.rank();
  if (rank > max_joint_rank)
    tally::detail::fail<shape_error>(who, ": ranks ", x.rank(), " and ", y.rank(), " pass rank ", max_joint_rank);
  // the boxes: x's axes, then y's
  const auto kx = static_cast<std::size_t>(x.rank()), ky = static_cast<std::size_t>(y.rank());
  std::vector<std::int64_t> lo, shape;
  lo.reserve(x.size() * (kx + ky));
  shape.reserve(x.size() * (kx + ky));
  for (std::size_t i = 0; i < x.size(); ++i) {
    lo.insert(lo.end(), x.lo().begin() + i * kx, x.lo().begin() + (i + 1) * kx);
    lo.insert(lo.end(), y.lo().begin() + i * ky, y.lo().begin() + (i + 1) * ky);
    shape.insert(shape.end(), x.shape().begin() + i * kx, x.shape().begin() + (i + 1) * kx);
    shape.insert(shape.end(), y.shape().begin() + i * ky, y.shape().begin() + (i + 1) * ky);
  }
  JointLaws out = JointLaws::allocate(x.where(), rank, std::move(lo), std::move(shape), who);
  if (x.where() == Backend::cuda) {
    joint_cuda::outer(x, y, out);
    return out;
  }
  rescaled_loop(
      x, out,
      [&](std::size_t i, const JointBox&, const JointBox&, const double* w, std::int64_t e) {
        const std::int64_t first = y.offset()[i], n = y.offset()[i + 1] - first;
        return detail::outer_entry(w, y.weights().host().data() + first, n, e);
      },
      [&](std::size_t i) { return y.log_scale().host()[i]; });
  return out;
}

JointLaws joint_linear_combination(const JointLaws& x, const std::vector<std::int64_t>& coefficients,
                                   std::int64_t constant, int replace) {
  constexpr const char* who = "tally::gpu::joint_linear_combination";
  const detail::JointLinear f = linear_of(x, coefficients, constant, replace, who);
  const int rank = replace >= 0 ? x.rank() : x.rank() + 1;
  if (rank > max_joint_rank)
    tally::detail::fail<shape_error>(who, ": appending a coordinate to rank ", x.rank(), " passes rank ", max_joint_rank);
  JointLaws out = detail::allocate_like(x, rank, [&](const JointBox& b) { return detail::linear_box(f, b); }, who);
  if (x.where() == Backend::cuda) {
    joint_cuda::linear_combination(x, f, out);
    return out;
  }
  rescaled_loop(
      x, out,
      [&](std::size_t, const JointBox& in, const JointBox& to, const double* w, std::int64_t e) {
        return detail::linear_entry(f, in, to, w, e);
      },
      [](std::size_t) { return 0.0; });
  return out;
}

JointLaws joint_markov_step(const JointLaws& x, int axis, const Table& transition) {
  constexpr const char* who = "tally::gpu::joint_markov_step";
  detail::check_axis(x, axis, who);
  if (transition.where() != x.where() || transition.rows == 0 || transition.cols == 0)
    tally::detail::fail<shape_error>(who, ": the transition table is empty or not where the laws are");
  check_states(x, axis, static_cast<std::int64_t>(transition.rows), who);
  const auto cols = static_cast<std::int64_t>(transition.cols);
  JointLaws out = detail::allocate_like(
      x, x.rank(), [&](const JointBox& b) { return detail::replace_axis_box(b, axis, 0, cols); }, who);
  if (x.where() == Backend::cuda) {
    joint_cuda::markov_step(x, axis, transition, out);
    return out;
  }
  const double* t = transition.values.host().data();
  rescaled_loop(
      x, out,
      [&](std::size_t, const JointBox& in, const JointBox& to, const double* w, std::int64_t e) {
        return detail::markov_entry(in, to, axis, w, t, cols, e);
      },
      [](std::size_t) { return 0.0; });
  return out;
}

JointLaws joint_condition_on_child(const JointLaws& x, int axis, const ChildKernel& child, const Column<std::int64_t>& v,
                                   Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::joint_condition_on_child";
  detail::check_axis(x, axis, who);
  const std::int64_t states = detail::check_child_sets(x, child, who);
  detail::JointLikelihood l;
  l.kind = detail::JointLikelihood::Kind::child;
  l.axis = axis;
  switch (child.kind) {
    case ChildKernel::Kind::binomial:
      tally::detail::check_probability(child.q, who, "q");
      detail::check_counts(x, axis, who);
      break;
    case ChildKernel::Kind::scaled_poisson:
      if (!(child.q >= 0.0 && std::isfinite(child.q)))
        tally::detail::fail<domain_error>(who, ": the Poisson scale ", child.q, " is not finite and >= 0");
      detail::check_counts(x, axis, who);
      break;
    case ChildKernel::Kind::indexed_poisson:
    case ChildKernel::Kind::categorical: detail::check_table_child(x, axis, child, states, who); break;
    case ChildKernel::Kind::affine:
      tally::detail::fail<shape_error>(who, ": an affine child is a linear combination (joint_condition_on_linear)");
  }
  l.child = detail::joint_child_view(child);
  return detail::condition_joint(x, l, v, log_likelihood, who);
}

namespace {

/// The selected Poisson emission's likelihood, its arguments checked against x.
detail::JointLikelihood selected_poisson(const JointLaws& x, int state_axis, const std::vector<int>& rate_axes,
                                         double scale, const char* who) {
  detail::check_axis(x, state_axis, who);
  if (rate_axes.empty() || rate_axes.size() > static_cast<std::size_t>(max_joint_rank))
    tally::detail::fail<shape_error>(who, ": ", rate_axes.size(), " rate axes (1 .. ", max_joint_rank, ")");
  if (!(scale >= 0.0 && std::isfinite(scale)))
    tally::detail::fail<domain_error>(who, ": the Poisson scale ", scale, " is not finite and >= 0");
  detail::JointLikelihood l;
  l.kind = detail::JointLikelihood::Kind::selected_poisson;
  l.selected.state_axis = state_axis;
  l.selected.rates = static_cast<int>(rate_axes.size());
  l.selected.scale = scale;
  for (std::size_t r = 0; r < rate_axes.size(); ++r) {
    detail::check_axis(x, rate_axes[r], who);
    detail::check_counts(x, rate_axes[r], who);
    l.selected.rate_axes[r] = rate_axes[r];
  }
  check_states(x, state_axis, static_cast<std::int64_t>(rate_axes.size()), who);
  return l;
}

/// The selected thinning's likelihood, its arguments checked against x; its keep probabilities copied where the
/// laws are, into q (which must outlive the likelihood's use: it is freed after the kernel, stream-ordered).
detail::JointLikelihood selected_thinning(const JointLaws& x, int state_axis, int count_axis,
                                          const std::vector<double>& keep, Column<double>& q, const char* who) {
  detail::check_axis(x, state_axis, who);
  detail::check_axis(x, count_axis, who);
  if (keep.empty()) tally::detail::fail<shape_error>(who, ": no keep probabilities");
  for (const double p : keep) tally::detail::check_probability(p, who, "a keep probability q_s");
  detail::check_counts(x, count_axis, who);
  check_states(x, state_axis, static_cast<std::int64_t>(keep.size()), who);
  q = Column<double>::from_host(keep, x.where());
  detail::JointLikelihood l;
  l.kind = detail::JointLikelihood::Kind::selected_thinning;
  l.thinning = {state_axis, count_axis, q.data(), static_cast<std::int64_t>(keep.size())};
  return l;
}

}  // namespace

JointLaws joint_condition_on_selected_poisson(const JointLaws& x, int state_axis, const std::vector<int>& rate_axes,
                                              double scale, const Column<std::int64_t>& v,
                                              Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::joint_condition_on_selected_poisson";
  const detail::JointLikelihood l = selected_poisson(x, state_axis, rate_axes, scale, who);
  return detail::condition_joint(x, l, v, log_likelihood, who);
}

JointLaws joint_condition_on_selected_thinning(const JointLaws& x, int state_axis, int count_axis,
                                               const std::vector<double>& keep, const Column<std::int64_t>& v,
                                               Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::joint_condition_on_selected_thinning";
  Column<double> q;
  const detail::JointLikelihood l = selected_thinning(x, state_axis, count_axis, keep, q, who);
  return detail::condition_joint(x, l, v, log_likelihood, who);
}

JointLaws joint_add_selected_poisson(const JointLaws& x, int state_axis, const std::vector<int>& rate_axes,
                                     double scale, const std::vector<std::int64_t>& y_lo,
                                     const std::vector<std::int64_t>& y_hi) {
  constexpr const char* who = "tally::gpu::joint_add_selected_poisson";
  const detail::JointLikelihood l = selected_poisson(x, state_axis, rate_axes, scale, who);
  JointLaws out = detail::appended_on_windows(x, y_lo, y_hi, who);
  detail::add_into(x, l, out);
  return out;
}

JointLaws joint_add_selected_thinning(const JointLaws& x, int state_axis, int count_axis,
                                      const std::vector<double>& keep) {
  constexpr const char* who = "tally::gpu::joint_add_selected_thinning";
  Column<double> q;
  const detail::JointLikelihood l = selected_thinning(x, state_axis, count_axis, keep, q, who);
  detail::check_appended_rank(x, who);
  for (std::size_t i = 0; i < x.size(); ++i) {  // Y on 0 .. hi_c: hi_c + 1 values must fit in int64
    const JointBox b = detail::box(x, i);
    tally::detail::checked_add(b.lo[count_axis] + b.shape[count_axis] - 1, 1, who);
  }
  JointLaws out = detail::allocate_like(
      x, x.rank() + 1,
      [&](const JointBox& b) { return detail::append_axis_box(b, 0, b.lo[count_axis] + b.shape[count_axis]); }, who);
  detail::add_into(x, l, out);
  return out;
}

JointLaws joint_condition_on_linear(const JointLaws& x, const std::vector<std::int64_t>& coefficients,
                                    std::int64_t constant, const Column<std::int64_t>& v,
                                    Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::joint_condition_on_linear";
  detail::JointLikelihood l;
  l.kind = detail::JointLikelihood::Kind::linear;
  l.linear = linear_of(x, coefficients, constant, -1, who);
  return detail::condition_joint(x, l, v, log_likelihood, who);
}

Column<std::int64_t> joint_sample(const JointLaws& x, const Column<double>& uniforms) {
  constexpr const char* who = "tally::gpu::joint_sample";
  check_place(x, uniforms.where(), uniforms.size(), who, "uniforms");
  auto out = Column<std::int64_t>::allocate(x.where(), x.size() * static_cast<std::size_t>(x.rank()), who);
  if (x.where() == Backend::cuda) {
    joint_cuda::sample(x, uniforms, out);
    return out;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox b = detail::box(x, i);
    const std::int64_t pick = sample_entry(x.weights().host().data() + x.offset()[i], b.size, uniforms.host()[i]);
    detail::joint_coordinates(b, pick, out.host().data() + i * static_cast<std::size_t>(x.rank()));
  }
  return out;
}

JointCoordinateDraw joint_sample_coordinate(const JointLaws& x, int axis, const Column<double>& uniforms) {
  constexpr const char* who = "tally::gpu::joint_sample_coordinate";
  detail::check_axis(x, axis, who);
  check_place(x, uniforms.where(), uniforms.size(), who, "uniforms");
  JointCoordinateDraw out{Column<std::int64_t>::allocate(x.where(), x.size(), who), std::nullopt};
  if (x.rank() > 1)
    out.rest = detail::allocate_like(
        x, x.rank() - 1, [&](const JointBox& b) { return detail::sum_out_box(b, axis); }, who);
  if (x.where() == Backend::cuda) {
    joint_cuda::sample_coordinate(x, axis, uniforms, out.value, out.rest ? &*out.rest : nullptr);
    return out;
  }
  std::vector<double> marginal;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox in = detail::box(x, i);
    const JointBox to = out.rest ? detail::box(*out.rest, i) : detail::joint_box(0, nullptr, nullptr);  // rank 0: 1
    const double* w = x.weights().host().data() + x.offset()[i];
    marginal.resize(static_cast<std::size_t>(in.shape[axis]));
    for (std::int64_t j = 0; j < in.shape[axis]; ++j)
      marginal[static_cast<std::size_t>(j)] = detail::marginal_entry(in, to, axis, w, j);
    const std::int64_t j = sample_entry(marginal.data(), in.shape[axis], uniforms.host()[i]);
    out.value.host()[i] = in.lo[axis] + j;
    if (!out.rest) continue;
    double* o = out.rest->weights().host().data() + out.rest->offset()[i];  // the slice x_axis = lo_axis + j
    double top = 0.0, sum = 0.0;
    for (std::int64_t e = 0; e < to.size; ++e)
      top = std::max(top, o[e] = w[detail::sum_out_first(in, to, axis, e) + j * in.stride[axis]]);
    for (std::int64_t e = 0; e < to.size; ++e) sum += o[e] = top > 0.0 ? o[e] / top : 0.0;
    out.rest->log_scale().host()[i] = top > 0.0 && x.log_scale().host()[i] > minus_inf ? -std::log(sum) : minus_inf;
  }
  return out;
}

}  // namespace tally::gpu
