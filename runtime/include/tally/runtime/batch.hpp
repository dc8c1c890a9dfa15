// Batch<T>: a node's per-particle state, P values in one place; P = 1 is stored inline, with no allocation.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace tally::runtime {

/// P values of T, one per particle. With P = 1 the value lives inline (an optional, no heap block), so a
/// single-graph program pays nothing for populations; with P > 1 the values are contiguous, ready to be
/// copied to a device as one array (the population issue). Every delayed-sampling operation loops over a batch,
/// so that one call acts on all particles.
template <class T>
class Batch {
 public:
  Batch() = default;
  /// P values, the i-th made by make(i).
  template <class Make>
  static Batch make(std::size_t particles, Make make) {
    Batch b;
    if (particles == 1) {
      b.single_.emplace(make(std::size_t{0}));
    } else {
      b.many_.reserve(particles);
      for (std::size_t i = 0; i < particles; ++i) b.many_.push_back(make(i));
    }
    return b;
  }
  /// P copies of value.
  static Batch filled(std::size_t particles, const T& value) {
    return make(particles, [&](std::size_t) { return value; });
  }

  bool empty() const { return !single_ && many_.empty(); }
  std::size_t size() const { return single_ ? 1 : many_.size(); }
  T& operator[](std::size_t i) { return single_ ? *single_ : many_[i]; }
  const T& operator[](std::size_t i) const { return single_ ? *single_ : many_[i]; }
  void clear() {
    single_.reset();
    many_.clear();
    many_.shrink_to_fit();
  }
  /// Replace the values by those of the given particles (resampling): new value i = old value ancestors[i].
  void select(const std::vector<std::size_t>& ancestors) {
    if (empty() || single_) return;
    std::vector<T> picked;
    picked.reserve(ancestors.size());
    for (std::size_t a : ancestors) picked.push_back(many_[a]);
    many_ = std::move(picked);
  }

 private:
  std::optional<T> single_;
  std::vector<T> many_;
};

}  // namespace tally::runtime
