// An error bound known now, or computed from numbers the device has yet to copy back (read only when asked).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <utility>

namespace tally::runtime::detail {

/// A relative error bound of truncated laws or of a likelihood. Where a CUDA graph computes it on the device
/// (gpu::max_mass_ratio_later), the number stays there and the bound is a formula of it, evaluated once, when first
/// read: an observation then waits for the device only if someone reads its bound before the host waits anyway (a
/// summary, a resampling, a value). Reading converts to double (implicitly, so that the bound reads as the number it
/// was); copying, max() and later() keep it pending. A pending bound is known to be > 0 only where its maker says so
/// (zero() is true only of a known 0, so that an operation that skips work for exact laws never skips wrongly).
class Bound {
 public:
  Bound(double known = 0.0) : known_(known) {}  // NOLINT: a bound reads and writes as its number
  /// f() when first read, at least `floor` (known now). Formulas nested more than `max_depth` deep are evaluated
  /// at once instead (a long marginalized chain would otherwise recurse once per step when read).
  static Bound later(double floor, std::function<double()> f, std::size_t depth = 1) {
    if (depth > max_depth) return Bound(f());
    Bound b(floor);
    b.pending_ = std::make_shared<Pending>(Pending{std::move(f), 0.0, false, depth});
    return b;
  }
  double value() const {
    if (!pending_) return known_;
    if (!pending_->done) {
      pending_->value = pending_->f();
      pending_->f = nullptr;  // what it held (device numbers, other bounds) goes now
      pending_->done = true;
    }
    return pending_->value;
  }
  operator double() const { return value(); }  // NOLINT
  bool pending() const { return pending_ && !pending_->done; }
  /// Known to be 0 (without reading anything).
  bool zero() const { return !pending_ && known_ == 0.0; }
  /// A lower bound known now (the number itself where it is known).
  double floor() const { return pending() ? known_ : value(); }
  std::size_t depth() const { return pending() ? pending_->depth : 0; }

  /// f(a, b) of two bounds, pending while either is (f must be monotone for the floor: f(floor a, floor b)).
  template <class F>
  static Bound combine(const Bound& a, const Bound& b, F f) {
    if (!a.pending() && !b.pending()) return Bound(f(a.value(), b.value()));
    return later(f(a.floor(), b.floor()), [a, b, f] { return f(a.value(), b.value()); },
                 std::max(a.depth(), b.depth()) + 1);
  }

 private:
  static constexpr std::size_t max_depth = 64;
  struct Pending {
    std::function<double()> f;
    double value;
    bool done;
    std::size_t depth;
  };
  double known_ = 0.0;
  std::shared_ptr<Pending> pending_;
};

/// The larger of two bounds (pending while either is).
inline Bound larger(const Bound& a, const Bound& b) {
  return Bound::combine(a, b, [](double x, double y) { return std::max(x, y); });
}

}  // namespace tally::runtime::detail
