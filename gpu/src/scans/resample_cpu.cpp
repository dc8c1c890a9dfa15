// The CPU reference of resampling: systematic in the tiles and order of the fused kernels, the same uniforms.
#include <algorithm>
#include <cmath>
#include <limits>

#include "resample_check.hpp"
#include "resample_order.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/resample_tiles.hpp"
#include "tally/error.hpp"
#include "infinities.hpp"

namespace tally::gpu::cpu {
namespace {

constexpr std::size_t tile = detail::resample_tile;

/// The block order of thread j's sums over its items (thread_sum(j)), B threads: the bases (in place) and total.
template <class F>
double block_sums(std::vector<double>& a, F thread_sum) {
  for (std::size_t j = 0; j < a.size(); ++j) a[j] = thread_sum(j);
  return detail::block_order_scan(a);
}

/// x_i = e^{l_i - m} (0 where l_i = -inf) of one tile, and m = the tile's largest log-weight.
double tile_weights(std::span<const double> l, std::vector<double>& x) {
  double mx = -inf;
  for (const double v : l) mx = std::max(mx, v);
  x.resize(l.size());
  for (std::size_t i = 0; i < l.size(); ++i) x[i] = l[i] == -inf ? 0.0 : std::exp(l[i] - mx);
  return mx;
}

}  // namespace
}  // namespace tally::gpu::cpu

namespace tally::gpu::tiles {

using cpu::block_sums;

TileTotals tile_totals(std::span<const double> l) {
  constexpr std::size_t tile = detail::resample_tile, threads = detail::resample_threads;
  constexpr std::size_t items = detail::resample_items, warp = detail::warp_lanes;
  std::vector<double> x, a(threads);
  const double mx = cpu::tile_weights(l, x);
  // pass 1's item r of thread j = 32 w + l: the tile's particle 512 w + 32 r + l (warp-striped; 0 past the tile)
  const auto x_at = [&](std::size_t j, std::size_t r) {
    const std::size_t i = j / warp * (warp * items) + warp * r + j % warp;
    return i < x.size() ? x[i] : 0.0;
  };
  static_assert(tile == threads * items);
  TileTotals out{mx, 0.0, 0.0};
  out.sum = block_sums(a, [&](std::size_t j) {
    double sum = x_at(j, 0);
    for (std::size_t r = 1; r < items; ++r) sum = sum + x_at(j, r);
    return sum;
  });
  out.sum_squares = block_sums(a, [&](std::size_t j) {
    double sum = x_at(j, 0) * x_at(j, 0);
    for (std::size_t r = 1; r < items; ++r) sum = sum + x_at(j, r) * x_at(j, r);
    return sum;
  });
  return out;
}

TilePlan combine_tiles(std::span<const TileTotals> totals, std::size_t particles) {
  constexpr std::size_t combine_threads = detail::combine_threads;
  const std::size_t n = totals.size();
  if (n == 0 || n != (particles + tile_size - 1) / tile_size)
    tally::detail::fail<shape_error>("tally::gpu::tiles::combine_tiles: ", n, " tiles for ", particles, " particles");
  TilePlan plan;
  plan.particles = particles;
  plan.factor.resize(n);
  plan.start.resize(n + 1);
  // pass 2: thread j of combine_threads (512) takes the tiles [c j, c (j + 1)), clipped to n
  plan.max_log_weight = -inf;
  for (const TileTotals& t : totals) plan.max_log_weight = std::max(plan.max_log_weight, t.max_log_weight);
  if (plan.max_log_weight == -inf)
    tally::detail::fail<domain_error>("tally::gpu::tiles::combine_tiles: every log-weight is -inf (no particle has weight)");
  std::vector<double> big_s(n);
  for (std::size_t t = 0; t < n; ++t) {
    plan.factor[t] = std::exp(totals[t].max_log_weight - plan.max_log_weight);
    big_s[t] = totals[t].sum * plan.factor[t];
  }
  const std::size_t c = (n + combine_threads - 1) / combine_threads;
  const auto chunk = [&](std::size_t j) { return std::min(n, j * c); };
  std::vector<double> base(combine_threads);
  const double total = block_sums(base, [&](std::size_t j) {
    double sum = 0.0;
    for (std::size_t t = chunk(j); t < chunk(j + 1); ++t) sum = sum + big_s[t];
    return sum;
  });
  std::vector<double> unused(combine_threads);
  plan.squares = block_sums(unused, [&](std::size_t j) {
    double sum = 0.0;
    for (std::size_t t = chunk(j); t < chunk(j + 1); ++t)
      sum = sum + totals[t].sum_squares * (plan.factor[t] * plan.factor[t]);
    return sum;
  });
  // R_t by each thread's walk, masked after a tile with S = 0, then the prefix maximum O_t
  double o = 0.0;
  for (std::size_t j = 0; j < combine_threads; ++j) {
    double r = base[j];
    for (std::size_t t = chunk(j); t < chunk(j + 1); ++t) {
      o = std::max(o, t == 0 || big_s[t - 1] > 0.0 ? r : 0.0);
      plan.start[t] = o;
      r = r + big_s[t];
    }
  }
  plan.start[n] = plan.total = std::max(o, big_s[n - 1] > 0.0 ? total : 0.0);
  plan.scale = static_cast<double>(particles) / plan.total;
  return plan;
}

std::size_t TilePlan::begin(std::size_t t, double u) const {
  return detail::systematic_position(start[t], total, scale, particles, static_cast<double>(particles), u);
}

WeightSummary TilePlan::summary() const {
  return {max_log_weight, max_log_weight + std::log(total), total * total / squares};
}

void tile_ancestors(const TilePlan& plan, std::size_t t, std::span<const double> l, double u,
                    std::span<std::size_t> out) {
  constexpr std::size_t tile = detail::resample_tile, threads = detail::resample_threads;
  constexpr std::size_t items = detail::resample_items;
  const std::size_t p = plan.particles, first = t * tile;
  const auto pd = static_cast<double>(p);
  const double o_lo = plan.start[t], o_hi = plan.start[t + 1];
  const std::size_t k_lo = detail::systematic_position(o_lo, plan.total, plan.scale, p, pd, u);
  const std::size_t k_hi = detail::systematic_position(o_hi, plan.total, plan.scale, p, pd, u);
  if (out.size() != k_hi - k_lo)
    tally::detail::fail<shape_error>("tally::gpu::tiles::tile_ancestors: room for ", out.size(), " positions, tile ",
                                     t, " has ", k_hi - k_lo);
  if (k_lo == k_hi) return;
  std::vector<double> x;
  cpu::tile_weights(l, x);
  const auto x_at = [&](std::size_t i) { return i < x.size() ? x[i] : 0.0; };  // i < T
  std::vector<double> v(threads), run(tile);  // v: the threads' bases, as in pass 1
  block_sums(v, [&](std::size_t j) {
    double sum = x_at(j * items);
    for (std::size_t r = 1; r < items; ++r) sum = sum + x_at(j * items + r);
    return sum;
  });
  // the walks; run[i] = the largest v at a positive weight so far (prefix maximum over threads), L the last such i
  std::ptrdiff_t big_l = -1;
  double before = 0.0;
  for (std::size_t j = 0; j < threads; ++j) {
    double walk = v[j], last = 0.0;
    for (std::size_t r = 0; r < items; ++r) {
      const std::size_t i = j * items + r;
      walk = walk + x_at(i);
      if (x_at(i) > 0.0) {
        last = walk;
        big_l = static_cast<std::ptrdiff_t>(i);
      }
      run[i] = std::max(before, last);
    }
    before = std::max(before, last);
  }
  std::size_t k = k_lo;
  for (std::size_t i = 0; i < tile && first + i < p; ++i) {
    const std::size_t end =
        static_cast<std::ptrdiff_t>(i) >= big_l
            ? k_hi
            : detail::systematic_position(std::min(o_hi, o_lo + plan.factor[t] * run[i]), plan.total, plan.scale,
                                           p, pd, u);
    for (; k < end; ++k) out[k - k_lo] = first + i;
  }
}

}  // namespace tally::gpu::tiles

namespace tally::gpu::cpu {
namespace {
}  // namespace

WeightSummary summarize_log_weights(std::span<const double> log_w) {
  detail::check_log_weights(log_w, "tally::gpu::cpu::summarize_log_weights");
  const double m = *std::max_element(log_w.begin(), log_w.end());
  double s = 0.0, s2 = 0.0;
  for (const double l : log_w) {
    const double w = std::exp(l - m);
    s += w;
    s2 += w * w;
  }
  return {m, m + std::log(s), s * s / s2};
}

std::vector<std::size_t> resample(std::span<const double> log_w, Resampler kind, std::uint64_t seed,
                                  std::uint64_t counter, WeightSummary* summary) {
  detail::check_log_weights(log_w, "tally::gpu::cpu::resample");
  const std::size_t p = log_w.size();
  std::vector<std::size_t> out(p);
  if (kind == Resampler::systematic || summary != nullptr) {
    const std::size_t n = (p + tile - 1) / tile;
    const auto tile_of = [&](std::size_t t) { return log_w.subspan(t * tile, std::min(tile, p - t * tile)); };
    std::vector<tiles::TileTotals> totals(n);
    for (std::size_t t = 0; t < n; ++t) totals[t] = tiles::tile_totals(tile_of(t));
    const tiles::TilePlan plan = tiles::combine_tiles(totals, p);
    if (summary != nullptr) *summary = plan.summary();
    if (kind == Resampler::systematic) {
      const double u = philox_uniform(seed, 0, counter);
      for (std::size_t t = 0; t < n; ++t) {
        const std::size_t k_lo = plan.begin(t, u), k_hi = plan.begin(t + 1, u);
        tiles::tile_ancestors(plan, t, tile_of(t), u, std::span<std::size_t>(out).subspan(k_lo, k_hi - k_lo));
      }
      return out;
    }
  }
  const double m = *std::max_element(log_w.begin(), log_w.end());
  std::vector<double> c(p);
  double sum = 0.0;
  for (std::size_t i = 0; i < p; ++i) c[i] = sum = sum + std::exp(log_w[i] - m);
  const double total = c[p - 1];
  for (std::size_t j = 0; j < p; ++j) {
    const double target = philox_uniform(seed, j, counter) * total;
    // the first prefix sum above the target; when rounding leaves none (u total rounded up to total), the first
    // that reaches the total: either way a particle of positive weight
    auto it = std::upper_bound(c.begin(), c.end(), target);
    if (it == c.end()) it = std::lower_bound(c.begin(), c.end(), total);
    out[j] = static_cast<std::size_t>(it - c.begin());
  }
  return out;
}

}  // namespace tally::gpu::cpu
