// Batched joint laws: their layout, the CPU reference of their operations (loops on one core), the dispatch to CUDA.
#include "tally/gpu/joint_laws.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "joint_batch.hpp"
#include "joint_cuda.hpp"
#include "joint_likelihood.hpp"
#include "joint_math.hpp"
#include "population_math.hpp"

namespace tally::gpu {

using detail::allocate_like;
using detail::box;
using detail::check_axis;
using detail::check_counts;
using detail::check_states;
using detail::exponentiate;
using detail::minus_inf;

// ---- the layout ------------------------------------------------------------------------------------------------
JointLaws JointLaws::allocate(Backend where, int rank, std::vector<std::int64_t> lo, std::vector<std::int64_t> shape,
                              const char* who) {
  if (rank < 1 || rank > max_joint_rank)
    tally::detail::fail<shape_error>(who, ": rank ", rank, " is not in 1 .. ", max_joint_rank);
  const auto k = static_cast<std::size_t>(rank);
  if (lo.size() != shape.size() || lo.size() % k != 0)
    tally::detail::fail<shape_error>(who, ": ", lo.size(), " lower bounds and ", shape.size(), " extents for rank ",
                                     rank);
  JointLaws out;
  out.rank_ = rank;
  out.where_ = where;
  out.count_ = lo.size() / k;
  out.host_offset_.assign(1, 0);
  for (std::size_t i = 0; i < out.count_; ++i) {
    std::int64_t size = 1;
    for (std::size_t a = 0; a < k; ++a) {
      const std::int64_t m = shape[i * k + a];
      if (m < 1) tally::detail::fail<shape_error>(who, ": law ", i, " has an extent ", m, " < 1");
      tally::detail::checked_add(lo[i * k + a], m - 1, who);  // hi fits in int64
      size = tally::detail::checked_mul(size, m, who);
    }
    out.host_offset_.push_back(tally::detail::checked_add(out.host_offset_.back(), size, who));
  }
  out.host_lo_ = std::move(lo);
  out.host_shape_ = std::move(shape);
  out.weights_ = Column<double>::allocate(where, out.total(), who);
  out.log_scale_ = Column<double>::allocate(where, out.count_, who);
  out.offset_ = Column<std::int64_t>::from_host(out.host_offset_, where);
  out.lo_ = Column<std::int64_t>::from_host(out.host_lo_, where);
  out.shape_ = Column<std::int64_t>::from_host(out.host_shape_, where);
  return out;
}

JointLaws JointLaws::from_host(int rank, const std::vector<Law>& laws, Backend where) {
  constexpr const char* who = "tally::gpu::JointLaws::from_host";
  std::vector<std::int64_t> lo, shape;
  std::vector<double> weights, log_scale;
  for (std::size_t i = 0; i < laws.size(); ++i) {
    const Law& law = laws[i];
    if (law.lo.size() != static_cast<std::size_t>(rank) || law.shape.size() != law.lo.size())
      tally::detail::fail<shape_error>(who, ": law ", i, " is not of rank ", rank);
    lo.insert(lo.end(), law.lo.begin(), law.lo.end());
    shape.insert(shape.end(), law.shape.begin(), law.shape.end());
    std::int64_t size = 1;
    for (const std::int64_t m : law.shape) size = m < 1 ? 0 : size * m;
    if (size < 1 || static_cast<std::size_t>(size) != law.weights.size())
      tally::detail::fail<shape_error>(who, ": law ", i, " has ", law.weights.size(),
                                       " weights for its box (extents must be >= 1)");
    double top = 0.0;
    for (const double w : law.weights) {
      if (!(w >= 0.0 && std::isfinite(w))) tally::detail::fail<domain_error>(who, ": law ", i, " has a weight ", w);
      top = std::max(top, w);
    }
    if (std::isnan(law.log_scale)) tally::detail::fail<domain_error>(who, ": law ", i, " has a NaN log scale");
    for (const double w : law.weights) weights.push_back(top > 0.0 ? w / top : 0.0);
    log_scale.push_back(top > 0.0 ? law.log_scale + std::log(top) : minus_inf);
  }
  JointLaws out = allocate(where, rank, std::move(lo), std::move(shape), who);
  out.weights_ = Column<double>::from_host(weights, where);
  out.log_scale_ = Column<double>::from_host(log_scale, where);
  return out;
}

JointLaws JointLaws::from_flat(int rank, std::vector<std::int64_t> lo, std::vector<std::int64_t> shape,
                               std::vector<double> weights, std::vector<double> log_scale, Backend where) {
  constexpr const char* who = "tally::gpu::JointLaws::from_flat";
  JointLaws out = allocate(where, rank, std::move(lo), std::move(shape), who);
  if (weights.size() != out.total() || log_scale.size() != out.count_)
    tally::detail::fail<shape_error>(who, ": ", weights.size(), " weights and ", log_scale.size(), " log scales for ",
                                     out.count_, " laws of ", out.total(), " entries");
  if (where == Backend::cpu) {
    out.weights_ = Column<double>::host_values(std::move(weights));
    out.log_scale_ = Column<double>::host_values(std::move(log_scale));
  } else {  // into the room allocate() made: one copy each
    if (!weights.empty()) detail::device_copy(out.weights_.data(), weights.data(), weights.size() * sizeof(double), 0);
    if (!log_scale.empty())
      detail::device_copy(out.log_scale_.data(), log_scale.data(), log_scale.size() * sizeof(double), 0);
  }
  return out;
}

std::vector<JointLaws::Law> JointLaws::to_host() const {
  const std::vector<double> w = weights_.to_host(), s = log_scale_.to_host();
  const auto k = static_cast<std::size_t>(rank_);
  std::vector<Law> out(count_);
  for (std::size_t i = 0; i < count_; ++i) {
    out[i].lo.assign(host_lo_.begin() + static_cast<std::ptrdiff_t>(i * k),
                     host_lo_.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
    out[i].shape.assign(host_shape_.begin() + static_cast<std::ptrdiff_t>(i * k),
                        host_shape_.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
    out[i].weights.assign(w.begin() + host_offset_[i], w.begin() + host_offset_[i + 1]);
    out[i].log_scale = s[i];
  }
  return out;
}

// ---- the operations ----------------------------------------------------------------------------------------------
JointLaws joint_split(const JointLaws& x, int axis, double q) {
  tally::detail::check_probability(q, "tally::gpu::joint_split", "q");
  return joint_split(x, axis, ChildKernel::binomial(q));
}

JointLaws joint_split(const JointLaws& x, int axis, const ChildKernel& thinning) {
  constexpr const char* who = "tally::gpu::joint_split";
  check_axis(x, axis, who);
  if (x.rank() + 1 > max_joint_rank)
    tally::detail::fail<shape_error>(who, ": a split of rank ", x.rank(), " would pass rank ", max_joint_rank);
  if (thinning.kind != ChildKernel::Kind::binomial)
    tally::detail::fail<shape_error>(who, ": a split is by a thinning (a binomial child)");
  detail::check_child_sets(x, thinning, who);
  check_counts(x, axis, who);
  JointLaws out = allocate_like(x, x.rank() + 1, [&](const detail::JointBox& b) { return detail::split_box(b, axis); },
                                who);
  const detail::ChildView view = detail::joint_child_view(thinning);
  if (x.where() == Backend::cuda) {
    joint_cuda::split(x, axis, view, out);
    return out;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const detail::JointBox in = box(x, i), to = detail::split_box(in, axis);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.weights().host().data() + out.offset()[i];
    const double q = view.at(static_cast<std::int64_t>(i)).q;
    for (std::int64_t e = 0; e < to.size; ++e) {
      std::int64_t n = 0, y = 0;
      const std::int64_t at = detail::split_source(in, to, axis, e, n, y);
      o[e] = at >= 0 && w[at] > 0.0 ? std::log(w[at]) + detail::binomial_log_mass(n, y, q) : minus_inf;
    }
    const double top = exponentiate(o, to.size);
    out.log_scale().host()[i] = top == minus_inf ? minus_inf : x.log_scale().host()[i] + top;
  }
  return out;
}

namespace detail {

void add_into(const JointLaws& x, const JointLikelihood& l, JointLaws& out) {
  if (x.where() == Backend::cuda) {
    joint_cuda::add(x, l, out);
    return;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    JointLikelihood li = l;  // law i's own child where there is one per set
    li.child = l.child.at(static_cast<std::int64_t>(i));
    const JointBox in = box(x, i), to = box(out, i);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.weights().host().data() + out.offset()[i];
    for (std::int64_t e = 0; e < to.size; ++e) {
      const std::int64_t at = appended_source(in, to, e), y = joint_coordinate(to, e, in.rank);
      o[e] = w[at] > 0.0 ? std::log(w[at]) + joint_log_likelihood(li, in, at, y) : minus_inf;
    }
    const double top = exponentiate(o, to.size);
    out.log_scale().host()[i] = top == minus_inf ? minus_inf : x.log_scale().host()[i] + top;
  }
}

}  // namespace detail

namespace {

/// out (allocated on the boxes with Y appended) from x: log w + log p(y | x_axis), each law's own child.
void add_child_into(const JointLaws& x, int axis, const ChildKernel& child, JointLaws& out) {
  detail::JointLikelihood l;
  l.kind = detail::JointLikelihood::Kind::child;
  l.axis = axis;
  l.child = detail::joint_child_view(child);
  detail::add_into(x, l, out);
}

}  // namespace

JointLaws joint_add_child(const JointLaws& x, int axis, const ChildKernel& child) {
  constexpr const char* who = "tally::gpu::joint_add_child";
  check_axis(x, axis, who);
  std::int64_t categories = 0;  // Y's extent for a categorical child (a binomial's is each law's hi_axis + 1)
  const std::int64_t states = detail::check_child_sets(x, child, who);
  switch (child.kind) {
    case ChildKernel::Kind::binomial:
      tally::detail::check_probability(child.q, who, "q");
      check_counts(x, axis, who);
      for (std::size_t i = 0; i < x.size(); ++i) {  // Y on 0 .. hi_axis: hi_axis + 1 values must fit in int64
        const detail::JointBox b = box(x, i);
        tally::detail::checked_add(b.lo[axis] + b.shape[axis] - 1, 1, who);
      }
      break;
    case ChildKernel::Kind::categorical:
      if (child.table.cols == 0) tally::detail::fail<shape_error>(who, ": the child's table has no column");
      detail::check_table_child(x, axis, child, states, who);
      categories = static_cast<std::int64_t>(child.table.cols);
      break;
    case ChildKernel::Kind::scaled_poisson:
    case ChildKernel::Kind::indexed_poisson:
      tally::detail::fail<domain_error>(who,
                                        ": a Poisson child is unbounded, and a batched joint law has a box and no "
                                        "truncation error to carry (add it to a tally::JointPmf with a Truncation, or "
                                        "condition on its observed value: joint_condition_on_child)");
    case ChildKernel::Kind::affine:
      tally::detail::fail<shape_error>(who, ": an affine child is a linear combination (joint_linear_combination)");
  }
  detail::check_appended_rank(x, who);
  JointLaws out = allocate_like(
      x, x.rank() + 1,
      [&](const detail::JointBox& b) {
        return detail::append_axis_box(b, 0, categories > 0 ? categories : b.lo[axis] + b.shape[axis]);
      },
      who);
  add_child_into(x, axis, child, out);
  return out;
}

JointLaws joint_add_child(const JointLaws& x, int axis, const ChildKernel& child, const std::vector<std::int64_t>& y_lo,
                          const std::vector<std::int64_t>& y_hi) {
  constexpr const char* who = "tally::gpu::joint_add_child";
  check_axis(x, axis, who);
  const std::int64_t states = detail::check_child_sets(x, child, who);
  switch (child.kind) {
    case ChildKernel::Kind::scaled_poisson: check_counts(x, axis, who); break;
    case ChildKernel::Kind::indexed_poisson: detail::check_table_child(x, axis, child, states, who); break;
    default: tally::detail::fail<shape_error>(who, ": a window of Y is for a Poisson child (the others are bounded)");
  }
  JointLaws out = detail::appended_on_windows(x, y_lo, y_hi, who);
  add_child_into(x, axis, child, out);
  return out;
}

JointLaws joint_condition_on_thinning(const JointLaws& x, int axis, double q, const Column<std::int64_t>& v,
                                      Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::joint_condition_on_thinning";
  check_axis(x, axis, who);
  tally::detail::check_probability(q, who, "q");
  check_counts(x, axis, who);
  detail::JointLikelihood l;  // the binomial child: the same conditioning as every other observed child
  l.kind = detail::JointLikelihood::Kind::child;
  l.axis = axis;
  l.child = detail::child_view(ChildKernel::binomial(q), nullptr);
  return detail::condition_joint(x, l, v, log_likelihood, who);
}

JointLaws joint_sum_out(const JointLaws& x, int axis) {
  constexpr const char* who = "tally::gpu::joint_sum_out";
  check_axis(x, axis, who);
  if (x.rank() < 2) tally::detail::fail<shape_error>(who, ": a law of rank 1 has no other coordinates");
  JointLaws out = allocate_like(x, x.rank() - 1,
                                [&](const detail::JointBox& b) { return detail::sum_out_box(b, axis); }, who);
  if (x.where() == Backend::cuda) {
    joint_cuda::sum_out(x, axis, out);
    return out;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const detail::JointBox in = box(x, i), to = detail::sum_out_box(in, axis);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.weights().host().data() + out.offset()[i];
    double top = 0.0;
    for (std::int64_t e = 0; e < to.size; ++e) {
      const std::int64_t first = detail::sum_out_first(in, to, axis, e);
      double sum = 0.0;
      for (std::int64_t t = 0; t < in.shape[axis]; ++t) sum += w[first + t * in.stride[axis]];
      top = std::max(top, o[e] = sum);
    }
    for (std::int64_t e = 0; e < to.size; ++e) o[e] = top > 0.0 ? o[e] / top : 0.0;
    out.log_scale().host()[i] = top > 0.0 ? x.log_scale().host()[i] + std::log(top) : minus_inf;
  }
  return out;
}

Laws joint_marginal(const JointLaws& x, int axis) {
  constexpr const char* who = "tally::gpu::joint_marginal";
  check_axis(x, axis, who);
  // the other axes summed out from the last down, so that `axis` keeps its place until it is the only one left
  std::optional<JointLaws> summed;
  for (int a = x.rank() - 1; a >= 0; --a)
    if (a != axis) summed = joint_sum_out(summed ? *summed : x, a);
  const JointLaws& m = summed ? *summed : x;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < m.size(); ++i)
    longest = std::max(longest, static_cast<std::size_t>(m.offset()[i + 1] - m.offset()[i]));
  Laws out = Laws::allocate(m.where(), m.size(), m.total(), longest, who);
  if (m.where() == Backend::cpu) {
    PmfBatch& b = out.host();
    b.weights = m.weights().host();
    b.offset = m.offset();
    b.lo = m.lo();  // rank 1: one lower end a law
    b.log_scale = m.log_scale().host();
    return out;
  }
  const MutablePmfBatchView v = out.mutable_view();
  if (m.total() > 0) detail::device_copy(v.weights, m.weights().data(), m.total() * sizeof(double), 2);
  if (m.size() > 0) {
    detail::device_copy(v.log_scale, m.log_scale().data(), m.size() * sizeof(double), 2);
    detail::device_copy(v.lo, m.lo().data(), m.size() * sizeof(std::int64_t), 0);
  }
  detail::device_copy(v.offset, m.offset().data(), m.offset().size() * sizeof(std::int64_t), 0);
  return out;
}

}  // namespace tally::gpu
