// Batched joint laws kept in a batch between operations: gathering laws, shifting a coordinate, trimming tails (the
// CPU reference and the dispatch to CUDA).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "joint_batch.hpp"
#include "joint_cuda.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace tally::gpu {

using detail::box;
using detail::JointBox;
using detail::minus_inf;

void JointLaws::shift(int axis, const std::vector<std::int64_t>& by) {
  constexpr const char* who = "tally::gpu::JointLaws::shift";
  detail::check_axis(*this, axis, who);
  if (by.size() != count_)
    tally::detail::fail<shape_error>(who, ": ", by.size(), " shifts for ", count_, " laws");
  const auto k = static_cast<std::size_t>(rank_), a = static_cast<std::size_t>(axis);
  std::vector<std::int64_t> lo = host_lo_;
  for (std::size_t i = 0; i < count_; ++i) {
    std::int64_t& at = lo[i * k + a];
    at = tally::detail::checked_add(at, by[i], who);
    tally::detail::checked_add(at, host_shape_[i * k + a] - 1, who);  // hi fits in int64
  }
  lo_ = Column<std::int64_t>::from_host(lo, where_);
  host_lo_ = std::move(lo);
}

JointLaws joint_gather(const JointLaws& x, const std::vector<std::size_t>& index) {
  constexpr const char* who = "tally::gpu::joint_gather";
  const auto k = static_cast<std::size_t>(x.rank());
  std::vector<std::int64_t> lo, shape, source;
  lo.reserve(index.size() * k);
  shape.reserve(index.size() * k);
  for (const std::size_t i : index) {
    if (i >= x.size()) tally::detail::fail<shape_error>(who, ": law ", i, " of ", x.size());
    lo.insert(lo.end(), x.lo().begin() + static_cast<std::ptrdiff_t>(i * k),
              x.lo().begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
    shape.insert(shape.end(), x.shape().begin() + static_cast<std::ptrdiff_t>(i * k),
                 x.shape().begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
    source.push_back(x.offset()[i]);
  }
  JointLaws out = JointLaws::allocate(x.where(), x.rank(), std::move(lo), std::move(shape), who);
  if (x.where() == Backend::cuda) {
    const std::vector<std::int64_t> law(index.begin(), index.end());
    joint_cuda::gather(x, Column<std::int64_t>::from_host(source, x.where()),
                       Column<std::int64_t>::from_host(law, x.where()), out);
    return out;
  }
  for (std::size_t j = 0; j < index.size(); ++j) {
    const double* w = x.weights().host().data() + source[j];
    std::copy(w, w + (out.offset()[j + 1] - out.offset()[j]), out.weights().host().data() + out.offset()[j]);
    out.log_scale().host()[j] = x.log_scale().host()[index[j]];
  }
  return out;
}

namespace {

/// Law i's marginal m_a(v) in joint_trim's order: trim_lanes strided sequential sums, then combined as a warp's
/// butterfly (partial l + partial l ^ d, d = 16, 8, .., 1), lane 0's result.
double trim_marginal(const JointBox& b, const double* w, int axis, std::int64_t v) {
  double p[detail::trim_lanes] = {};
  const std::int64_t n = b.size / b.shape[axis];
  for (std::int64_t j = 0; j < n; ++j) p[j % detail::trim_lanes] += w[detail::slab_entry(b, axis, v, j)];
  for (int d = detail::trim_lanes / 2; d >= 1; d /= 2) {
    double q[detail::trim_lanes];
    for (int l = 0; l < detail::trim_lanes; ++l) q[l] = p[l] + p[l ^ d];
    std::copy(q, q + detail::trim_lanes, p);
  }
  return p[0];
}

}  // namespace

JointTrimmed joint_trim(const JointLaws& x, double tolerance) {
  constexpr const char* who = "tally::gpu::joint_trim";
  if (!(tolerance >= 0.0 && tolerance < 1.0))
    tally::detail::fail<domain_error>(who, ": tolerance ", tolerance, " must be in [0, 1)");
  const auto k = static_cast<std::size_t>(x.rank());
  std::vector<std::int64_t> kept_lo(x.size() * k), kept_shape(x.size() * k);
  std::vector<double> sums(3 * x.size());  // M_i, C_i, the largest kept weight
  if (x.where() == Backend::cuda) {
    std::vector<std::int64_t> marginal_offset{0};
    for (std::size_t i = 0; i < x.size(); ++i) {
      std::int64_t n = 0;
      for (std::size_t a = 0; a < k; ++a) n += x.shape()[i * k + a];
      marginal_offset.push_back(marginal_offset.back() + n);
    }
    auto marginals = Column<double>::allocate(x.where(), static_cast<std::size_t>(marginal_offset.back()), who);
    auto lo_column = Column<std::int64_t>::allocate(x.where(), kept_lo.size(), who);
    auto shape_column = Column<std::int64_t>::allocate(x.where(), kept_shape.size(), who);
    auto sums_column = Column<double>::allocate(x.where(), sums.size(), who);
    joint_cuda::trim_cuts(x, tolerance, Column<std::int64_t>::from_host(marginal_offset, x.where()), marginals,
                          lo_column, shape_column, sums_column);
    kept_lo = lo_column.to_host();
    kept_shape = shape_column.to_host();
    sums = sums_column.to_host();
    JointTrimmed out{JointLaws::allocate(x.where(), x.rank(), std::move(kept_lo), std::move(kept_shape), who), {}, {}};
    joint_cuda::trim_copy(x, sums_column, out.laws);
    for (std::size_t i = 0; i < x.size(); ++i) {
      out.total.push_back(sums[3 * i]);
      out.cut.push_back(sums[3 * i + 1]);
    }
    return out;
  }
  std::vector<double> m;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox b = box(x, i);
    const double* w = x.weights().host().data() + x.offset()[i];
    std::int64_t first[max_joint_rank], last[max_joint_rank];
    double total = 0.0;
    for (int a = 0; a < b.rank; ++a) {
      m.resize(static_cast<std::size_t>(b.shape[a]));
      for (std::int64_t v = 0; v < b.shape[a]; ++v) m[static_cast<std::size_t>(v)] = trim_marginal(b, w, a, v);
      if (a == 0)
        for (const double mv : m) total += mv;
      detail::trim_cut_points(m.data(), b.shape[a], tolerance * total / (2.0 * b.rank), first[a], last[a]);
    }
    for (int a = 0; a < b.rank; ++a) {
      kept_lo[i * k + static_cast<std::size_t>(a)] = b.lo[a] + first[a];
      kept_shape[i * k + static_cast<std::size_t>(a)] = last[a] - first[a] + 1;
    }
    const JointBox to = detail::joint_box(b.rank, kept_lo.data() + i * k, kept_shape.data() + i * k);
    double cut = 0.0, top = 0.0;
    for (std::int64_t e = 0; e < b.size; ++e) {
      if (detail::inside_box(b, to, e))
        top = std::max(top, w[e]);
      else
        cut += w[e];
    }
    sums[3 * i] = total;
    sums[3 * i + 1] = cut;
    sums[3 * i + 2] = top;
  }
  JointTrimmed out{JointLaws::allocate(x.where(), x.rank(), std::move(kept_lo), std::move(kept_shape), who), {}, {}};
  for (std::size_t i = 0; i < x.size(); ++i) {
    const JointBox b = box(x, i), to = box(out.laws, i);
    const double* w = x.weights().host().data() + x.offset()[i];
    double* o = out.laws.weights().host().data() + out.laws.offset()[i];
    const double top = sums[3 * i + 2];
    for (std::int64_t e = 0; e < to.size; ++e) o[e] = top > 0.0 ? w[detail::trimmed_source(b, to, e)] / top : 0.0;
    const double s = x.log_scale().host()[i];
    out.laws.log_scale().host()[i] = top > 0.0 && s > minus_inf ? s + std::log(top) : minus_inf;
    out.total.push_back(sums[3 * i]);
    out.cut.push_back(sums[3 * i + 1]);
  }
  return out;
}

}  // namespace tally::gpu
