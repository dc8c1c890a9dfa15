// The dense joint law: validation, rescaling, flushing and trimming to the box of positive mass; marginals, slices.
#include "tally/distributions/joint_pmf.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "joint_detail.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally {

namespace {
}

JointPmf::JointPmf(Coordinates lo, Coordinates shape, Eigen::VectorXd weights, double log_scale, double error_bound)
    : lo_(std::move(lo)), shape_(std::move(shape)), weights_(std::move(weights)), log_scale_(log_scale),
      error_bound_(error_bound) {
  const char* who = "tally::JointPmf";
  if (lo_.empty()) detail::fail<shape_error>(who, ": rank 0 (a joint law needs at least one axis)");
  if (lo_.size() != shape_.size())
    detail::fail<shape_error>(who, ": ", lo_.size(), " lower bounds for ", shape_.size(), " extents");
  detail::int128 total = 1;
  for (std::size_t a = 0; a < shape_.size(); ++a) {
    if (shape_[a] < 1) detail::fail<shape_error>(who, ": extent ", shape_[a], " of axis ", a, " is not >= 1");
    detail::checked_add(lo_[a], shape_[a] - 1, "tally::JointPmf (upper end of an axis)");
    total *= shape_[a];
    if (total > std::numeric_limits<Eigen::Index>::max())
      detail::fail<overflow_error>(who, ": the product of the extents overflows the index range");
  }
  if (total != weights_.size())
    detail::fail<shape_error>(who, ": ", weights_.size(), " weights for a box of ", static_cast<double>(total), " entries");
  if (!std::isfinite(log_scale_)) detail::fail<domain_error>(who, ": log scale ", log_scale_, " is not finite");
  if (!(error_bound_ >= 0.0)) detail::fail<domain_error>(who, ": error bound ", error_bound_, " must be >= 0");
  for (Eigen::Index i = 0; i < weights_.size(); ++i) {
    const double w = weights_[i];
    if (!(w >= 0.0) || !std::isfinite(w))
      detail::fail<domain_error>(who, ": weight ", w, " at flat index ", i, " is not finite and >= 0");
  }
  canonicalize();
}

// Rescale to a largest weight of 1, flush weights below flush_fraction (their mass goes to the error bound), and
// trim the box to the smallest one holding every positive weight.
void JointPmf::canonicalize() {
  const double top = weights_.maxCoeff();
  if (!(top > 0.0)) detail::fail<shape_error>("tally::JointPmf: all weights are zero (a measure with no mass)");
  if (top != 1.0) {
    weights_ /= top;
    log_scale_ += std::log(top);
  }
  const std::size_t k = shape_.size();
  // the common case first: nothing to flush and every axis's end slabs holding mass, so the box stays (a few slab
  // sums instead of a pass over every entry's index)
  double flushed = 0.0;
  if (((weights_.array() < flush_fraction) && (weights_.array() > 0.0)).any()) {
    const auto small = weights_.array() < flush_fraction;
    flushed = small.select(weights_.array(), 0.0).sum();
    weights_ = small.select(0.0, weights_.array()).matrix();
  } else if (ends_hold_mass()) {
    return;
  }
  // each axis's first and last values with mass, from the weights summed over the other axes
  Coordinates first(k), last(k);
  const std::vector<Eigen::VectorXd> sums = detail::all_axis_sums(weights_, shape_);
  for (std::size_t a = 0; a < k; ++a) {
    const Eigen::VectorXd& m = sums[a];
    Eigen::Index f = 0, l = m.size() - 1;
    while (m[f] == 0.0) ++f;
    while (m[l] == 0.0) --l;
    first[a] = f;
    last[a] = l;
  }
  bool trim = false;
  Coordinates kept_shape(k);
  for (std::size_t a = 0; a < k; ++a) {
    kept_shape[a] = last[a] - first[a] + 1;
    trim = trim || kept_shape[a] != shape_[a];
  }
  if (trim) {
    const auto stride = detail::strides_of(shape_);
    std::int64_t total = 1;
    for (std::int64_t e : kept_shape) total *= e;
    Eigen::VectorXd kept(total);
    // row by row along the last axis (contiguous)
    const std::int64_t row = kept_shape[k - 1];
    Coordinates rows_shape(kept_shape.begin(), kept_shape.end() - 1);
    if (rows_shape.empty()) rows_shape.push_back(1);
    detail::for_each_index(rows_shape, [&](const Coordinates& idx, Eigen::Index r) {
      std::int64_t from = first[k - 1];
      for (std::size_t a = 0; a + 1 < k; ++a) from += (idx[a] + first[a]) * stride[a];
      kept.segment(r * row, row) = weights_.segment(from, row);
    });
    weights_ = std::move(kept);
    for (std::size_t a = 0; a < k; ++a) lo_[a] += first[a];
    shape_ = std::move(kept_shape);
  }
  if (flushed > 0.0) error_bound_ += flushed / weights_.sum();
}

bool JointPmf::ends_hold_mass() const {
  const auto stride = detail::strides_of(shape_);
  const Eigen::Index n = weights_.size();
  for (std::size_t a = 0; a < shape_.size(); ++a) {
    if (shape_[a] == 1) continue;
    // the slab at index e of axis a: blocks of stride[a] entries, one every stride[a] * shape[a]
    for (const std::int64_t e : {std::int64_t{0}, shape_[a] - 1}) {
      bool any = false;
      for (Eigen::Index block = e * stride[a]; block < n && !any; block += stride[a] * shape_[a])
        any = (weights_.segment(block, stride[a]).array() > 0.0).any();
      if (!any) return false;
    }
  }
  return true;
}

JointPmf JointPmf::from_log(Coordinates lo, Coordinates shape, const Eigen::VectorXd& log_weights, double error_bound) {
  double top = neg_inf;
  for (Eigen::Index i = 0; i < log_weights.size(); ++i) {
    const double lw = log_weights[i];
    if (std::isnan(lw) || lw == std::numeric_limits<double>::infinity())
      detail::fail<domain_error>("tally::JointPmf::from_log: log weight ", lw, " at flat index ", i, " is NaN or +inf");
    top = std::max(top, lw);
  }
  if (top == neg_inf && log_weights.size() > 0)
    detail::fail<shape_error>("tally::JointPmf::from_log: all log weights are -inf (a measure with no mass)");
  Eigen::VectorXd w = (log_weights.array() - top).exp();
  return JointPmf(std::move(lo), std::move(shape), std::move(w), log_weights.size() > 0 ? top : 0.0, error_bound);
}

std::int64_t JointPmf::stride(int axis) const {
  std::int64_t s = 1;
  for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < shape_.size(); ++a) s *= shape_[a];
  return s;
}

double JointPmf::log_mass() const { return log_scale_ + std::log(weights_.sum()); }

JointPmf JointPmf::normalized() const {
  JointPmf out = *this;
  out.log_scale_ = -std::log(weights_.sum());
  if (dropped_) {  // the dropped measure is in this law's units: it is scaled with it
    JointPmf x = *dropped_;
    x.log_scale_ += out.log_scale_ - log_scale_;
    out.dropped_ = std::make_shared<const JointPmf>(std::move(x));
  }
  return out;
}

JointPmf JointPmf::with_error_bound(double bound) const {
  if (!(bound >= 0.0)) detail::fail<domain_error>("tally::JointPmf::with_error_bound: bound ", bound, " must be >= 0");
  JointPmf out = *this;
  out.error_bound_ = bound;
  out.dropped_.reset();
  out.dropped_ratio_ = 0.0;
  return out;
}

JointPmf JointPmf::with_spread_error_bound(double bound) const {
  if (!(bound >= 0.0))
    detail::fail<domain_error>("tally::JointPmf::with_spread_error_bound: bound ", bound, " must be >= 0");
  JointPmf out = *this;
  out.error_bound_ = bound;
  return out;
}

JointPmf JointPmf::with_dropped(const std::optional<JointPmf>& dropped) const {
  JointPmf out = *this;
  out.dropped_.reset();
  out.dropped_ratio_ = 0.0;
  if (!dropped) return out;
  if (dropped->rank() != rank())
    detail::fail<shape_error>("tally::JointPmf::with_dropped: a dropped measure of rank ", dropped->rank(),
                              " for a joint law of rank ", rank());
  JointPmf x = dropped->dropped_ ? add_measures(dropped->with_dropped(std::nullopt), *dropped->dropped_) : *dropped;
  const double ratio = std::exp(x.log_mass() - log_mass());
  out.error_bound_ += x.error_bound_ * ratio;  // its own bound, relative to its mass, becomes spread
  x.error_bound_ = 0.0;
  out.dropped_ratio_ = ratio;
  out.dropped_ = std::make_shared<const JointPmf>(std::move(x));
  return out;
}

JointPmf add_measures(const JointPmf& a, const JointPmf& b) {
  const char* who = "tally::add_measures";
  if (a.rank() != b.rank()) detail::fail<shape_error>(who, ": ranks ", a.rank(), " and ", b.rank());
  const std::size_t k = static_cast<std::size_t>(a.rank());
  Coordinates lo(k), shape(k);
  for (int ax = 0; ax < a.rank(); ++ax) {
    const auto i = static_cast<std::size_t>(ax);
    lo[i] = std::min(a.lo(ax), b.lo(ax));
    shape[i] = std::max(a.hi(ax), b.hi(ax)) - lo[i] + 1;
  }
  const std::int64_t total = detail::checked_table_size(shape, Truncation{}, who);
  const auto stride = detail::strides_of(shape);
  const double s = std::max(a.log_scale(), b.log_scale());
  Eigen::VectorXd w = Eigen::VectorXd::Zero(total);
  double lost = 0.0;  // a term too small to show beside the other (below e^-700 of it): counted in the bound
  for (const JointPmf* m : {&a, &b}) {
    const double f = std::exp(m->log_scale() - s);
    if (m->log_scale() - s < -700.0) {
      lost += m->weights().sum() * std::exp(m->log_scale() - s + 700.0);
      continue;
    }
    // row by row along the last axis (contiguous in both tables)
    const std::int64_t row = m->extent(m->rank() - 1);
    Coordinates rows_shape(m->shape().begin(), m->shape().end() - 1);
    if (rows_shape.empty()) rows_shape.push_back(1);
    const std::int64_t offset_last = m->lo(m->rank() - 1) - lo[k - 1];
    detail::for_each_index(rows_shape, [&](const Coordinates& idx, Eigen::Index r) {
      std::int64_t to = offset_last;
      for (std::size_t i = 0; i + 1 < k; ++i) to += (idx[i] + m->lo()[i] - lo[i]) * stride[i];
      w.segment(to, row) += f * m->weights().segment(r * row, row);
    });
  }
  const double sum = w.sum();
  // bounds relative to the sum's mass (the masses as stored, so the bounds' absolute sizes add), in logs
  const double la = a.log_mass(), lb = b.log_mass(), top = std::max(la, lb);
  const double ra = std::exp(la - top), rb = std::exp(lb - top);
  const double e = (a.error_bound() * ra + b.error_bound() * rb) / (ra + rb) + lost * std::exp(-700.0) / sum;
  return JointPmf(std::move(lo), std::move(shape), std::move(w), s, e);
}

JointPmf joint(const Pmf& x) {
  return JointPmf({x.lo()}, {static_cast<std::int64_t>(x.size())}, x.weights(), x.log_scale(), x.error_bound());
}

JointPmf independent(const std::vector<Pmf>& marginals, const Truncation& t) {
  const char* who = "tally::independent";
  if (marginals.empty()) detail::fail<shape_error>(who, ": no marginals");
  Coordinates lo, shape;
  double log_scale = 0.0, growth = 1.0;
  for (const Pmf& m : marginals) {
    lo.push_back(m.lo());
    shape.push_back(static_cast<std::int64_t>(m.size()));
    log_scale += m.log_scale();
    growth *= 1.0 + m.error_bound();
  }
  const std::int64_t total = detail::checked_table_size(shape, t, who);
  Eigen::VectorXd w(total);
  detail::for_each_index(shape, [&](const Coordinates& idx, Eigen::Index flat) {
    double p = 1.0;
    for (std::size_t a = 0; a < idx.size(); ++a) p *= marginals[a].weights()[idx[a]];
    w[flat] = p;
  });
  // a product may underflow only below 2^-1074 relative to the largest product (1): far below flush_fraction,
  // at most size 2^-1074 of the mass in all, which is rounding and not counted
  return JointPmf(std::move(lo), std::move(shape), std::move(w), log_scale, growth - 1.0);
}

namespace {
/// Flat index of x in d, or -1 outside the box.
Eigen::Index flat_index(const JointPmf& d, std::span<const std::int64_t> x, const char* who) {
  if (static_cast<int>(x.size()) != d.rank())
    detail::fail<shape_error>(who, ": ", x.size(), " coordinates for a joint law of rank ", d.rank());
  Eigen::Index flat = 0;
  for (int a = 0; a < d.rank(); ++a) {
    const std::int64_t v = x[static_cast<std::size_t>(a)];
    if (v < d.lo(a) || v > d.hi(a)) return -1;
    flat += (v - d.lo(a)) * d.stride(a);
  }
  return flat;
}
}  // namespace

double log_pdf(const JointPmf& d, std::span<const std::int64_t> x) {
  const Eigen::Index i = flat_index(d, x, "tally::log_pdf(JointPmf)");
  if (i < 0) return neg_inf;
  return std::log(d.weights()[i]) + d.log_scale();
}

double pdf(const JointPmf& d, std::span<const std::int64_t> x) {
  const Eigen::Index i = flat_index(d, x, "tally::pdf(JointPmf)");
  if (i < 0) return 0.0;
  return d.weights()[i] * std::exp(d.log_scale());
}

namespace {
/// The stored weights summed over every axis but `axis`.
Eigen::VectorXd axis_sums(const JointPmf& d, int axis) { return detail::axis_sums(d.weights(), d.shape(), axis); }
}  // namespace

Pmf marginal(const JointPmf& d, int axis) {
  detail::check_axis(d, axis, "tally::marginal(JointPmf)");
  return Pmf(d.lo(axis), axis_sums(d, axis), d.log_scale(), d.error_bound());
}

JointPmf marginalize_out(const JointPmf& d, int axis) {
  const char* who = "tally::marginalize_out";
  detail::check_axis(d, axis, who);
  if (d.rank() < 2) detail::fail<shape_error>(who, ": a joint law of rank 1 has no other axis (use marginal())");
  Coordinates lo = d.lo(), shape = d.shape();
  lo.erase(lo.begin() + axis);
  shape.erase(shape.begin() + axis);
  const auto stride = detail::strides_of(shape);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(d.size() / d.extent(axis));
  const auto skip = static_cast<std::size_t>(axis);
  detail::for_each_index(d.shape(), [&](const Coordinates& idx, Eigen::Index flat) {
    std::int64_t to = 0;
    for (std::size_t a = 0, b = 0; a < idx.size(); ++a)
      if (a != skip) to += idx[a] * stride[b++];
    w[to] += d.weights()[flat];
  });
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), d.log_scale(), d.spread_error_bound());
  return detail::carry_dropped(d, r, [&](const JointPmf& x) { return std::optional(marginalize_out(x, axis)); });
}

JointPmf slice(const JointPmf& d, int axis, std::int64_t v) {
  const char* who = "tally::slice";
  detail::check_axis(d, axis, who);
  if (d.rank() < 2) detail::fail<shape_error>(who, ": a joint law of rank 1 has no other axis");
  if (v < d.lo(axis) || v > d.hi(axis))
    detail::fail<shape_error>(who, ": X_", axis, " = ", v, " is outside [", d.lo(axis), ", ", d.hi(axis), "] (no mass)");
  Coordinates lo = d.lo(), shape = d.shape();
  lo.erase(lo.begin() + axis);
  shape.erase(shape.begin() + axis);
  const std::int64_t n = d.size() / d.extent(axis);
  Eigen::VectorXd w(n);
  const auto sa = static_cast<std::size_t>(axis);
  const std::int64_t offset = (v - d.lo(axis)) * d.stride(axis);
  detail::for_each_index(shape, [&](const Coordinates& idx, Eigen::Index flat) {
    std::int64_t from = offset;
    for (std::size_t b = 0, a = 0; b < idx.size(); ++b, ++a) {
      if (a == sa) ++a;
      from += idx[b] * d.stride(static_cast<int>(a));
    }
    w[flat] = d.weights()[from];
  });
  const double slice_sum = w.sum();
  if (!(slice_sum > 0.0)) detail::fail<shape_error>(who, ": X_", axis, " = ", v, " has no mass");
  const double s = d.spread_error_bound();
  const double e = s == 0.0 ? 0.0 : s * (d.weights().sum() / slice_sum);
  const JointPmf r(std::move(lo), std::move(shape), std::move(w), d.log_scale(), e);
  return detail::carry_dropped(d, r, [&](const JointPmf& x) -> std::optional<JointPmf> {
    if (v < x.lo(axis) || v > x.hi(axis)) return std::nullopt;  // no dropped mass on this slice
    try {
      return slice(x, axis, v);
    } catch (const shape_error&) {
      return std::nullopt;
    }
  });
}

namespace {
/// Which entries truncate() keeps: along each axis, the outer values whose marginal mass (their sum, the weights
/// as stored) is at most `budget` from each end are cut. Returns the kept weights and the cut ones, each over d's box
/// (the cut ones empty, no entries, where nothing is cut).
std::pair<Eigen::VectorXd, Eigen::VectorXd> cut_tails(const JointPmf& d, double budget) {
  const int k = d.rank();
  Coordinates first(static_cast<std::size_t>(k)), last(static_cast<std::size_t>(k));
  bool any = false;
  const std::vector<Eigen::VectorXd> sums = detail::all_axis_sums(d.weights(), d.shape());
  for (int a = 0; a < k; ++a) {
    const Eigen::VectorXd& m = sums[static_cast<std::size_t>(a)];
    Eigen::Index lo = 0, hi = m.size() - 1;
    double acc = 0.0;
    while (lo < hi && acc + m[lo] <= budget) acc += m[lo++];
    acc = 0.0;
    while (hi > lo && acc + m[hi] <= budget) acc += m[hi--];
    first[static_cast<std::size_t>(a)] = lo;
    last[static_cast<std::size_t>(a)] = hi;
    any = any || lo > 0 || hi < m.size() - 1;
  }
  if (!any) return {d.weights(), Eigen::VectorXd()};  // nothing cut (an empty second vector)
  // row by row along the last axis: a row outside the kept box on an earlier axis is cut whole, else its ends
  Eigen::VectorXd kept = Eigen::VectorXd::Zero(d.size()), cut = d.weights();
  const auto last_axis = static_cast<std::size_t>(k - 1);
  const std::int64_t row = d.extent(k - 1), from = first[last_axis], count = last[last_axis] - first[last_axis] + 1;
  Coordinates rows_shape(d.shape().begin(), d.shape().end() - 1);
  if (rows_shape.empty()) rows_shape.push_back(1);
  detail::for_each_index(rows_shape, [&](const Coordinates& idx, Eigen::Index r) {
    for (std::size_t a = 0; a + 1 < static_cast<std::size_t>(k); ++a)
      if (idx[a] < first[a] || idx[a] > last[a]) return;
    kept.segment(r * row + from, count) = d.weights().segment(r * row + from, count);
    cut.segment(r * row + from, count).setZero();
  });
  return {std::move(kept), std::move(cut)};
}

/// The dropped measure's own far tails go to its spread bound, so that it does not grow without end along a long
/// program: at most 2^-64 of its own mass, or, where more, 2^-40 of the tolerance relative to the law's mass
/// (`law_mass`, in the dropped measure's units), far below what the law itself may drop at each truncation.
JointPmf trim_dropped(const JointPmf& x, double tolerance, double law_mass) {
  const int k = x.rank();
  const double budget = std::max(0x1p-64 * x.weights().sum(), 0x1p-40 * tolerance * law_mass);
  auto [kept, cut] = cut_tails(x, budget / (2.0 * k));
  const double c = cut.size() == 0 ? 0.0 : cut.sum();
  if (c == 0.0) return x;
  const double kept_sum = kept.sum();
  // the box left holds none of it (its mass lay on the box's far sides, around zeros): kept whole
  if (!(kept_sum > 0.0)) return x;
  return JointPmf(x.lo(), x.shape(), std::move(kept), x.log_scale(), (x.error_bound() * (kept_sum + c) + c) / kept_sum);
}
}  // namespace

JointPmf truncate(const JointPmf& d, const Truncation& t) {
  if (!(t.tolerance >= 0.0 && t.tolerance < 1.0))
    detail::fail<domain_error>("tally::truncate(JointPmf): tolerance ", t.tolerance, " must be in [0, 1)");
  const double total = d.weights().sum();
  auto [w, cut] = cut_tails(d, t.tolerance * total / (2.0 * d.rank()));
  const double dropped = cut.size() == 0 ? 0.0 : cut.sum();
  if (dropped == 0.0) return d;
  const double kept = total - dropped;
  // the cut entries join the dropped measure where they were (in d's units); the spread bound is rescaled to the
  // kept mass
  const JointPmf r(d.lo(), d.shape(), std::move(w), d.log_scale(), d.spread_error_bound() * total / kept);
  if (!t.track_dropped) {  // the cut mass as spread; a dropped measure d had is kept (in the kept mass's terms)
    const JointPmf s = r.with_spread_error_bound(r.spread_error_bound() + dropped / kept);
    return d.dropped() ? s.with_dropped(*d.dropped()) : s;
  }
  std::optional<JointPmf> x;
  try {
    const JointPmf cut_law(d.lo(), d.shape(), std::move(cut), d.log_scale());
    const JointPmf merged = d.dropped() ? add_measures(*d.dropped(), cut_law) : cut_law;
    x = trim_dropped(merged, t.tolerance, kept * std::exp(d.log_scale() - merged.log_scale()));
  } catch (const overflow_error&) {  // a dropped measure past the size limit: its mass becomes spread
    return r.with_spread_error_bound(r.spread_error_bound() + (d.dropped() ? d.error_bound() - d.spread_error_bound() : 0.0) * total / kept + dropped / kept);
  }
  return r.with_dropped(x);
}

}  // namespace tally
