// Private: host particles whose inputs to an operation are identical share one computation of it.
//
// A population's host laws are often copies of a few: a child of a realized parent drawn from a few dozen values, a
// broadcast prior, their sums and posteriors. Every host operation of state.cpp is a deterministic function of a
// particle's inputs (the laws bit for bit, the observed value, the graph's truncation), so computing it once per
// distinct input and copying the result gives bit-identical laws, log-likelihoods and error bounds, and the same
// exception (the distinct inputs are computed in increasing order of their first particle, so the first particle
// that fails is the one a loop over all particles would fail at).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tally/distributions/pmf.hpp"
#include "tally/runtime/batch.hpp"

namespace tally::runtime::detail {

/// A 64-bit mix of h and one more word (splitmix64's finalizer).
inline std::uint64_t mix(std::uint64_t h, std::uint64_t word) {
  std::uint64_t z = h ^ (word + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A hash of a host law's bits: lower bound, size, log scale, error bound and up to 9 weights, evenly spaced, each
/// word times its own odd constant, summed (independent products, no chain) and mixed once. Equal hashes are compared
/// in full by same_law: a cheap hash, not a complete one.
inline std::uint64_t law_hash(const Pmf& p) {
  std::uint64_t h = static_cast<std::uint64_t>(p.lo()) * 0x9e3779b97f4a7c15ull +
                    static_cast<std::uint64_t>(p.size()) * 0xc2b2ae3d27d4eb4full +
                    std::bit_cast<std::uint64_t>(p.log_scale()) * 0x165667b19e3779f9ull +
                    std::bit_cast<std::uint64_t>(p.error_bound()) * 0x27d4eb2f165667c5ull;
  const double* w = p.weights().data();
  const Eigen::Index step = std::max<Eigen::Index>(1, p.size() / 8);
  std::uint64_t odd = 0xff51afd7ed558ccdull;
  for (Eigen::Index j = 0; j < p.size(); j += step, odd += 0x5851f42d4c957f2eull)
    h += std::bit_cast<std::uint64_t>(w[j]) * odd;
  return mix(h, std::bit_cast<std::uint64_t>(w[p.size() - 1]));
}

/// Two host laws identical bit for bit.
inline bool same_law(const Pmf& a, const Pmf& b) {
  return a.lo() == b.lo() && a.size() == b.size() &&
         std::bit_cast<std::uint64_t>(a.log_scale()) == std::bit_cast<std::uint64_t>(b.log_scale()) &&
         std::bit_cast<std::uint64_t>(a.error_bound()) == std::bit_cast<std::uint64_t>(b.error_bound()) &&
         (a.shares_weights(b) || std::memcmp(a.weights().data(), b.weights().data(),
                                             static_cast<std::size_t>(a.size()) * sizeof(double)) == 0);
}

/// For each particle i, the first particle j <= i whose input equals i's: hash(i) the input's hash, same(i, j)
/// whether two inputs are identical (asked of equal hashes, and of neighbours: a particle whose input equals the one
/// before it, as in a run of copies of one law or a group's particles, takes that one's first without a hash, so
/// that a population of one law costs a comparison a particle).
template <class Hash, class Same>
std::vector<std::size_t> first_copies(std::size_t particles, Hash hash, Same same) {
  std::vector<std::size_t> first(particles);
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> seen;  // hash -> the distinct particles with it
  for (std::size_t i = 0; i < particles; ++i) {
    if (i > 0 && same(i, i - 1)) {  // equality is transitive: i - 1's first is i's
      first[i] = first[i - 1];
      continue;
    }
    std::vector<std::size_t>& bucket = seen[hash(i)];
    first[i] = i;
    for (std::size_t j : bucket)
      if (same(i, j)) {
        first[i] = j;
        break;
      }
    if (first[i] == i) bucket.push_back(i);
  }
  return first;
}

/// f(i) for each particle, computed once per distinct input (first[i] == i), in increasing order of particles:
/// result i is `distinct[slot[i]]`; take(i), called for i = 0, 1, ... in order, hands it over, moved at its last
/// particle (so that particles with inputs of their own cost no copy).
template <class R>
struct Shared {
  std::vector<R> distinct;
  std::vector<std::size_t> slot;
  std::vector<std::size_t> last;  // the last particle of each distinct result
  const R& operator[](std::size_t i) const { return distinct[slot[i]]; }
  R take(std::size_t i) { return i == last[slot[i]] ? std::move(distinct[slot[i]]) : distinct[slot[i]]; }
};
template <class F>
auto compute_once(const std::vector<std::size_t>& first, F f) {
  Shared<decltype(f(std::size_t{0}))> out;
  out.slot.resize(first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (first[i] != i) {
      out.slot[i] = out.slot[first[i]];
      out.last[out.slot[i]] = i;
      continue;
    }
    out.slot[i] = out.distinct.size();
    out.distinct.push_back(f(i));
    out.last.push_back(i);
  }
  return out;
}

/// The results of compute_once as one value per particle: one value for all (a uniform batch) where every particle
/// had the same input, else each particle's (handed over by take).
template <class R>
Batch<R> to_batch(Shared<R>&& results, std::size_t particles) {
  if (results.distinct.size() == 1) return Batch<R>::uniform(particles, std::move(results.distinct[0]));
  return Batch<R>::make(particles, [&](std::size_t i) { return results.take(i); });
}

}  // namespace tally::runtime::detail
