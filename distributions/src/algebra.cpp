// Sums by direct convolution (through the gpu dispatch point), negation, shifts and affine maps.
#include "tally/distributions/algebra.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "tally/distributions/truncation.hpp"
#include "tally/error.hpp"
#include "tally/gpu/convolve.hpp"

namespace tally {

namespace {
double combined_error(double ex, double ey) { return ex + ey + ex * ey; }
}  // namespace

Pmf sum(const Pmf& x, const Pmf& y) {
  const std::int64_t lo = detail::checked_add(x.lo(), y.lo(), "tally::sum (lower end of support)");
  detail::checked_add(x.hi(), y.hi(), "tally::sum (upper end of support)");
  Eigen::VectorXd r(x.size() + y.size() - 1);
  gpu::convolve(std::span<const double>(x.weights().data(), x.size()),
                std::span<const double>(y.weights().data(), y.size()), std::span<double>(r.data(), r.size()));
  return Pmf(lo, std::move(r), x.log_scale() + y.log_scale(), combined_error(x.error_bound(), y.error_bound()));
}

Pmf negate(const Pmf& x) {
  const std::int64_t lo = detail::checked_mul(x.hi(), -1, "tally::negate");
  return Pmf(lo, x.weights().reverse(), x.log_scale(), x.error_bound());
}

Pmf difference(const Pmf& x, const Pmf& y) { return sum(x, negate(y)); }

Pmf shift(const Pmf& x, std::int64_t c) {
  detail::checked_add(x.hi(), c, "tally::shift");
  return Pmf(detail::checked_add(x.lo(), c, "tally::shift"), x.weights(), x.log_scale(), x.error_bound());
}

SparsePmf affine(const SparsePmf& x, std::int64_t a, std::int64_t c) {
  if (a == 0) return SparsePmf(IntVector::Constant(1, c), Eigen::VectorXd::Ones(1), x.log_mass(), x.error_bound());
  const Eigen::Index n = x.size();
  IntVector points(n);
  Eigen::VectorXd weights(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Eigen::Index j = a > 0 ? i : n - 1 - i;  // a < 0 reverses the order
    points[i] = detail::checked_add(detail::checked_mul(a, x.points()[j], "tally::affine"), c, "tally::affine");
    weights[i] = x.weights()[j];
  }
  return SparsePmf(std::move(points), std::move(weights), x.log_scale(), x.error_bound());
}

SparsePmf affine(const Pmf& x, std::int64_t a, std::int64_t c) { return affine(to_sparse(x), a, c); }

SparsePmf sum(const SparsePmf& x, const SparsePmf& y) { return sum(x, y, Truncation{}); }

SparsePmf sum(const SparsePmf& x, const SparsePmf& y, const Truncation& t) {
  struct Term {
    std::int64_t point;
    double weight;
  };
  // every pair is a term: refuse at once past t.max_size pairs (the default 2^27: 2 GiB of terms), as a dense
  // result past max_size is refused (fuzz_algebra found 27000 x 27000 points asking for 12 GB, and later 2^26
  // pairs sorted for over a minute under the fuzzer's own max_size of 2^13)
  const double pairs = static_cast<double>(x.size()) * static_cast<double>(y.size());
  if (pairs > static_cast<double>(t.max_size))
    detail::fail<overflow_error>("tally::sum(SparsePmf, SparsePmf): ", x.size(), " x ", y.size(), " points make ",
                                 pairs, " pairs, more than max_size = ", t.max_size, " (sum the dense pmfs instead)");
  std::vector<Term> terms;
  terms.reserve(static_cast<std::size_t>(x.size() * y.size()));
  for (Eigen::Index i = 0; i < x.size(); ++i)
    for (Eigen::Index j = 0; j < y.size(); ++j)
      terms.push_back({detail::checked_add(x.points()[i], y.points()[j], "tally::sum(SparsePmf)"),
                       x.weights()[i] * y.weights()[j]});
  std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) {
    return a.point < b.point || (a.point == b.point && a.weight < b.weight);  // small terms first: less rounding
  });
  IntVector points(static_cast<Eigen::Index>(terms.size()));
  Eigen::VectorXd weights(points.size());
  Eigen::Index n = 0;
  for (const Term& term : terms) {
    if (n > 0 && points[n - 1] == term.point) {
      weights[n - 1] += term.weight;
    } else {
      points[n] = term.point;
      weights[n++] = term.weight;
    }
  }
  return SparsePmf(points.head(n), weights.head(n), x.log_scale() + y.log_scale(),
                   combined_error(x.error_bound(), y.error_bound()));
}

}  // namespace tally
