// CPU references of the batched convolution and conditioning on sums.
#include <algorithm>
#include <cmath>
#include <limits>

#include "batch_math.hpp"
#include "batch_shapes.hpp"
#include "tally/error.hpp"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/convolve_batched.hpp"

namespace tally::gpu::cpu {

namespace {

/// Pair i: x's law i and y's law i / per (x and y checked by the caller, y.size() per == x.size()).
PmfBatch convolve_pairs(const PmfBatch& x, const PmfBatch& y, std::size_t per, const char* who) {
  PmfBatch r;
  // law i has m_i + n_b - 1 weights: x's, and n_b - 1 more for each of the per particles of each law b of y
  r.weights.resize(x.weights.size() + per * (y.weights.size() - y.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t b = i / per, m = x.length(i), n = y.length(b);
    std::span<double> out(r.weights.data() + r.offset.back(), m + n - 1);
    cpu::convolve(x[i], y[b], out);
    // rescale after: the maximum to 1 (0 only when an operand is all zeros)
    const double max = *std::max_element(out.begin(), out.end());
    for (double& v : out) v = max > 0.0 ? v / max : 0.0;
    r.offset.push_back(r.offset.back() + static_cast<std::int64_t>(m + n - 1));
    r.lo.push_back(tally::detail::checked_add(x.lo[i], y.lo[b], who));
    r.log_scale.push_back(max > 0.0 ? x.log_scale[i] + y.log_scale[b] + std::log(max)
                                    : -std::numeric_limits<double>::infinity());
  }
  return r;
}

}  // namespace

PmfBatch convolve_batched(const PmfBatch& x, const PmfBatch& y) {
  constexpr const char* who = "tally::gpu::cpu::convolve_batched";
  detail::check_pair_batches(x, y, who);
  return convolve_pairs(x, y, 1, who);
}

PmfBatch convolve_shared_batched(const PmfBatch& x, const PmfBatch& y, std::size_t per) {
  constexpr const char* who = "tally::gpu::cpu::convolve_shared_batched";
  check(x, who);
  check(y, who);
  if (per == 0 || y.size() * per != x.size())
    tally::detail::fail<shape_error>(who, ": ", x.size(), " pmfs against ", y.size(), " shared by ", per, " each");
  return convolve_pairs(x, y, per, who);
}

SumConditioning condition_on_sum_batched(const PmfBatch& x, const PmfBatch& y, std::span<const std::int64_t> z) {
  constexpr const char* who = "tally::gpu::cpu::condition_on_sum_batched";
  detail::check_pair_batches(x, y, who);
  detail::check_observations(x, y, z, who);
  SumConditioning result{x, std::vector<double>(x.size())};
  PmfBatch& post = result.posterior;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto m = static_cast<std::int64_t>(x.length(i)), n = static_cast<std::int64_t>(y.length(i));
    const std::int64_t c = z[i] - x.lo[i] - y.lo[i];
    const auto range = detail::diagonal(c, m, n);
    const double* xi = x.weights.data() + x.offset[i];
    const double* yi = y.weights.data() + y.offset[i];
    double* w = post.weights.data() + post.offset[i];
    int shift = detail::no_exponent;
    for (std::int64_t a = range.first; a <= range.last; ++a)
      if (xi[a] > 0.0 && yi[c - a] > 0.0) shift = std::max(shift, detail::product_exponent(xi[a], yi[c - a]));
    double sum = 0.0, max = 0.0;
    std::fill(w, w + m, 0.0);
    if (shift != detail::no_exponent)
      for (std::int64_t a = range.first; a <= range.last; ++a) {
        w[a] = detail::scaled_product(xi[a], yi[c - a], shift);
        sum += w[a];
        max = std::max(max, w[a]);
      }
    if (max > 0.0)
      for (std::int64_t a = range.first; a <= range.last; ++a) w[a] /= max;
    const auto res = detail::conditioning_result(sum, max, shift, x.log_scale[i], y.log_scale[i]);
    result.log_likelihood[i] = res.log_likelihood;
    post.log_scale[i] = res.posterior_log_scale;
  }
  return result;
}

}  // namespace tally::gpu::cpu
