// Batch<T>: a node's per-particle state, P values in one place; P = 1 is stored inline, with no allocation.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace tally::runtime {

/// P values of T, one per particle: either one value that every particle holds (uniform: stored once, inline, with
/// no heap block; P = 1 is always uniform, so a single-graph program pays nothing for populations), or P values,
/// contiguous. Every delayed-sampling operation acts on a whole batch; one whose inputs are all uniform computes
/// once and gives a uniform result, so that a population whose particles hold the same laws costs one particle's
/// work. Values are read by operator[] and written by set(), which makes a uniform batch one value per particle first.
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
      b.count_ = 1;
    } else {
      b.many_.reserve(particles);
      for (std::size_t i = 0; i < particles; ++i) b.many_.push_back(make(i));
    }
    return b;
  }
  /// P copies of value, one per particle.
  static Batch filled(std::size_t particles, const T& value) {
    return make(particles, [&](std::size_t) { return value; });
  }
  /// value in every one of P particles, stored once.
  static Batch uniform(std::size_t particles, T value) {
    Batch b;
    b.single_.emplace(std::move(value));
    b.count_ = particles;
    return b;
  }

  /// Whether the batch holds no value (made by the default constructor, or cleared).
  bool empty() const { return !single_ && many_.empty(); }
  /// P, the particles it has a value for.
  std::size_t size() const { return single_ ? count_ : many_.size(); }
  /// Whether every particle holds one stored value (P = 1 included).
  bool uniform() const { return single_.has_value(); }
  /// Particle i's value.
  const T& operator[](std::size_t i) const { return single_ ? *single_ : many_[i]; }
  /// Particle i's value becomes v (a uniform batch of several particles becomes one value per particle first).
  void set(std::size_t i, T v) {
    if (single_ && count_ > 1) spread();
    (single_ ? *single_ : many_[i]) = std::move(v);
  }
  /// Drops every value (then empty()).
  void clear() {
    single_.reset();
    count_ = 1;
    many_.clear();
    many_.shrink_to_fit();
  }
  /// Replace the values by those of the given particles (resampling): new value i = old value ancestors[i].
  void select(const std::vector<std::size_t>& ancestors) {
    if (empty()) return;
    if (single_) {
      count_ = ancestors.size();
      return;
    }
    std::vector<T> picked;
    picked.reserve(ancestors.size());
    for (std::size_t a : ancestors) picked.push_back(many_[a]);
    many_ = std::move(picked);
  }

 private:
  /// A uniform batch of several particles becomes one value per particle.
  void spread() {
    many_.assign(count_, *single_);
    single_.reset();
    count_ = 1;
  }
  std::optional<T> single_;
  std::size_t count_ = 1;  // the particles of a uniform batch
  std::vector<T> many_;
};

}  // namespace tally::runtime
