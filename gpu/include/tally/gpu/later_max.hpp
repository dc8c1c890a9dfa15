// An upper bound on a column of integers known on the host without waiting for the device: the column's largest value,
// computed by a kernel now and read once the device has passed it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// An upper bound on the values of a column of integers, for the host to size what the device will write without
/// reading the device: a number known now, or \f$\max_i v_i\f$ of a device column, computed by one pass launched
/// earlier (largest_later) whose last block writes it into pinned host memory. value() never waits: it polls the
/// pass's event and is std::nullopt until the device has passed it (a caller then does what it would do without a
/// bound: read the device). So a maximum computed before the host next waits anyway (a summary, a resampling) costs
/// no wait of its own. Empty (default): no bound. Copies share the pending number; value() is const but not
/// thread-safe (as a population is not). An empty column's maximum is INT64_MIN.
class LaterMax {
 public:
  /// Where a pending maximum comes from (the device pass; private to its implementation).
  struct Source {
    virtual ~Source() = default;
    /// Maximum k of the pass, if the device has finished the pass (no wait).
    virtual std::optional<std::int64_t> poll(std::size_t k) = 0;
  };

  LaterMax() = default;
  /// A bound known now.
  explicit LaterMax(std::int64_t known) : known_(known) {}
  /// Maximum k of a pending pass.
  LaterMax(std::shared_ptr<Source> source, std::size_t k) : source_(std::move(source)), index_(k) {}

  /// The bound, if known or computed by now; std::nullopt otherwise. Never waits for the device.
  std::optional<std::int64_t> value() const {
    if (known_ || !source_) return known_;
    known_ = source_->poll(index_);
    if (known_) source_.reset();  // the pass's pinned cells and event go back to their pool with the last reader
    return known_;
  }
  /// Neither a number nor a pending pass.
  bool empty() const { return !known_ && !source_; }

 private:
  mutable std::optional<std::int64_t> known_;
  mutable std::shared_ptr<Source> source_;
  std::size_t index_ = 0;
};

/// The largest value of each column, as LaterMax: host columns' at once (known), device columns' by one pass over all
/// of them launched now on the default stream (a kernel and an event; no wait, no copy). Columns of one place; at
/// most 1024 device maxima pending at once (past that, a column's LaterMax is empty: no bound).
std::vector<LaterMax> largest_later(std::span<const Column<std::int64_t>* const> columns);

}  // namespace tally::gpu
