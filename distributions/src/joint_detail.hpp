// Private: index arithmetic shared by the joint-law sources (strides, row-major walks, axis and size checks).
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "tally/distributions/joint_pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/error.hpp"

namespace tally::detail {

/// Row-major strides of a shape: stride_a = prod_{b > a} shape_b.
inline std::vector<std::int64_t> strides_of(const Coordinates& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t a = shape.size(); a-- > 1;) s[a - 1] = s[a] * shape[a];
  return s;
}

/// Calls f(index, flat) for every index of the box [0, shape) in row-major order (flat = 0, 1, ...).
template <class F>
void for_each_index(const Coordinates& shape, F&& f) {
  std::int64_t total = 1;
  for (std::int64_t e : shape) total *= e;
  Coordinates idx(shape.size(), 0);
  for (std::int64_t flat = 0; flat < total; ++flat) {
    f(static_cast<const Coordinates&>(idx), static_cast<Eigen::Index>(flat));
    for (std::size_t a = shape.size(); a-- > 0;) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
}

/// The weights w of a table of this shape (row-major) summed over every axis but a, for every axis a at once: the
/// last axis's sums and the table with that axis summed out in one pass, then the same on that smaller table.
inline std::vector<Eigen::VectorXd> all_axis_sums(const Eigen::VectorXd& w, const Coordinates& shape) {
  std::vector<Eigen::VectorXd> out(shape.size());
  Eigen::VectorXd rest;  // the table with the later axes summed out
  const double* cur = w.data();
  Eigen::Index n = w.size();
  for (std::size_t a = shape.size(); a-- > 0;) {
    const Eigen::Index extent = shape[a], rows = n / extent;
    Eigen::VectorXd along = Eigen::VectorXd::Zero(extent), next(rows);
    for (Eigen::Index r = 0; r < rows; ++r) {
      const Eigen::Map<const Eigen::VectorXd> row(cur + r * extent, extent);
      along += row;
      next[r] = row.sum();
    }
    out[a] = std::move(along);
    rest = std::move(next);
    cur = rest.data();
    n = rows;
  }
  return out;
}

/// The same for one axis.
inline Eigen::VectorXd axis_sums(const Eigen::VectorXd& w, const Coordinates& shape, int axis) {
  return all_axis_sums(w, shape)[static_cast<std::size_t>(axis)];
}

/// Requires 0 <= axis < rank (shape_error naming `who`).
inline void check_axis(const JointPmf& d, int axis, const char* who) {
  if (axis < 0 || axis >= d.rank()) fail<shape_error>(who, ": axis ", axis, " is not in [0, ", d.rank(), ")");
}

/// The number of entries of a table with these extents (each >= 1), or overflow_error naming it when it is more
/// than t.max_size.
inline std::int64_t checked_table_size(const Coordinates& shape, const Truncation& t, const char* who) {
  int128 total = 1;
  for (std::int64_t e : shape) {
    total *= e;
    if (total > t.max_size) {
      int128 all = 1;
      for (std::int64_t f : shape) all = all * f > (int128{1} << 100) ? (int128{1} << 100) : all * f;
      fail<overflow_error>(who, ": the joint table needs ", static_cast<double>(all), " entries, more than max_size = ",
                           t.max_size);
    }
  }
  return static_cast<std::int64_t>(total);
}

/// r (the result of an operation on d) carrying d's dropped measure through the same operation, op(x) for the
/// dropped measure x (std::nullopt: nothing of it is left). Where op cannot be applied to it (a table past the size
/// limit), its mass (times `growth`, what the operation may multiply a mass by) joins r's spread bound instead.
template <class Op>
JointPmf carry_dropped(const JointPmf& d, const JointPmf& r, Op op, double growth = 1.0) {
  const JointPmf* x = d.dropped();
  if (x == nullptr) return r;
  try {
    return r.with_dropped(op(*x));
  } catch (const overflow_error&) {
    return r.with_spread_error_bound(r.spread_error_bound() + growth * (1.0 + x->error_bound()) *
                                                                  std::exp(x->log_mass() - r.log_mass()));
  }
}

}  // namespace tally::detail
