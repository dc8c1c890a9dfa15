// Reproducible sampling by inverse cdf from counter-based (Philox) uniforms that the GPU can reproduce.
#pragma once

#include <cstdint>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/sparse_pmf.hpp"

namespace tally {

/// A stream of uniforms in (0, 1): draw number i of stream `stream` under `seed` is
/// tally::gpu::philox_uniform(seed, stream, i), so a kernel given (seed, stream, i) draws the same number.
/// Cheap to copy; independent streams for particles are (seed, particle index).
class RandomStream {
 public:
  /// Stream `stream` under `seed`, at its first draw.
  explicit RandomStream(std::uint64_t seed, std::uint64_t stream = 0) : seed_(seed), stream_(stream) {}
  /// The next uniform in (0, 1).
  double uniform();
  /// The seed.
  std::uint64_t seed() const { return seed_; }
  /// The stream's index (a particle's, say).
  std::uint64_t stream() const { return stream_; }
  /// How many uniforms have been drawn.
  std::uint64_t counter() const { return counter_; }

 private:
  std::uint64_t seed_, stream_, counter_ = 0;
};

/// The smallest k with \f$\sum_{j \le k} w_j \ge u \sum_j w_j\f$: the inverse cdf of the normalized measure at
/// u in (0, 1) (domain_error otherwise). Never returns a point of zero mass.
///@{
std::int64_t inverse_cdf(const Pmf& d, double u);
std::int64_t inverse_cdf(const SparsePmf& d, double u);
///@}

/// One draw by inverse cdf with the next uniform of `rng`.
///@{
std::int64_t sample(const Pmf& d, RandomStream& rng);
std::int64_t sample(const SparsePmf& d, RandomStream& rng);
///@}

/// `count` draws (the cdf is built once, each draw is a binary search).
IntVector sample(const Pmf& d, RandomStream& rng, Eigen::Index count);

}  // namespace tally
