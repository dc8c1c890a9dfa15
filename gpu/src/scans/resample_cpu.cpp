// The CPU reference of resampling: systematic in the tiles and order of the fused kernels, the same uniforms.
#include <algorithm>
#include <cmath>
#include <limits>

#include "resample_check.hpp"
#include "resample_order.hpp"
#include "tally/gpu/philox.hpp"
#include "tally/gpu/resample.hpp"

namespace tally::gpu::cpu {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::size_t tile = detail::resample_tile;
constexpr std::size_t threads = detail::resample_threads;
constexpr std::size_t items = detail::resample_items;
constexpr std::size_t combine_threads = detail::combine_threads;
constexpr std::size_t warp = detail::warp_lanes;

/// Passes 1 and 2 of resample_order.hpp, as the kernels run them: x_i, m_t, f_t, O_t (t <= n), M, W, Q.
struct Tiles {
  std::vector<double> x;  // e^{l_i - m_t}, P of them
  std::vector<double> m, f, o;
  double big_m = 0, w = 0, q = 0, g = 0;  // g = P / W
};

/// The block order of thread j's sums over its items (thread_sum(j)), B threads: the bases (in place) and total.
template <class F>
double block_sums(std::vector<double>& a, F thread_sum) {
  for (std::size_t j = 0; j < a.size(); ++j) a[j] = thread_sum(j);
  return detail::block_order_scan(a);
}

Tiles tile_passes(std::span<const double> l) {
  const std::size_t p = l.size(), n = (p + tile - 1) / tile;
  Tiles tiles;
  tiles.x.resize(p);
  tiles.m.resize(n);
  tiles.f.resize(n);
  tiles.o.resize(n + 1);
  std::vector<double> s(n), q(n), a(threads);
  // pass 1's item r of thread j = 32 w + l: the particle T t + 512 w + 32 r + l (warp-striped; 0 past P)
  const auto x_at = [&](std::size_t t, std::size_t j, std::size_t r) {
    const std::size_t i = t * tile + j / warp * (warp * items) + warp * r + j % warp;
    return i < p ? tiles.x[i] : 0.0;
  };
  for (std::size_t t = 0; t < n; ++t) {  // pass 1
    const std::size_t first = t * tile, end = std::min(p, first + tile);
    double mx = -inf;
    for (std::size_t i = first; i < end; ++i) mx = std::max(mx, l[i]);
    tiles.m[t] = mx;
    for (std::size_t i = first; i < end; ++i) tiles.x[i] = l[i] == -inf ? 0.0 : std::exp(l[i] - mx);
    s[t] = block_sums(a, [&](std::size_t j) {
      double sum = x_at(t, j, 0);
      for (std::size_t r = 1; r < items; ++r) sum = sum + x_at(t, j, r);
      return sum;
    });
    q[t] = block_sums(a, [&](std::size_t j) {
      double sum = x_at(t, j, 0) * x_at(t, j, 0);
      for (std::size_t r = 1; r < items; ++r) sum = sum + x_at(t, j, r) * x_at(t, j, r);
      return sum;
    });
  }
  // pass 2: thread j of combine_threads (512) takes the tiles [c j, c (j + 1)), clipped to n
  tiles.big_m = *std::max_element(tiles.m.begin(), tiles.m.end());
  std::vector<double> big_s(n);
  for (std::size_t t = 0; t < n; ++t) {
    tiles.f[t] = std::exp(tiles.m[t] - tiles.big_m);
    big_s[t] = s[t] * tiles.f[t];
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
  tiles.q = block_sums(unused, [&](std::size_t j) {
    double sum = 0.0;
    for (std::size_t t = chunk(j); t < chunk(j + 1); ++t) sum = sum + q[t] * (tiles.f[t] * tiles.f[t]);
    return sum;
  });
  // R_t by each thread's walk, masked after a tile with S = 0, then the prefix maximum O_t
  double o = 0.0;
  for (std::size_t j = 0; j < combine_threads; ++j) {
    double r = base[j];
    for (std::size_t t = chunk(j); t < chunk(j + 1); ++t) {
      o = std::max(o, t == 0 || big_s[t - 1] > 0.0 ? r : 0.0);
      tiles.o[t] = o;
      r = r + big_s[t];
    }
  }
  tiles.o[n] = tiles.w = std::max(o, big_s[n - 1] > 0.0 ? total : 0.0);
  tiles.g = static_cast<double>(p) / tiles.w;
  return tiles;
}

/// Pass 3: tile t's particles get their runs [k(C_{i-1}), k(C_i)) of out.
void write_tile(const Tiles& tiles, std::size_t t, double u, std::vector<std::size_t>& out) {
  const std::size_t p = tiles.x.size(), first = t * tile;
  const auto pd = static_cast<double>(p);
  const double o_lo = tiles.o[t], o_hi = tiles.o[t + 1];
  const std::size_t k_lo = detail::systematic_position(o_lo, tiles.w, tiles.g, p, pd, u);
  const std::size_t k_hi = detail::systematic_position(o_hi, tiles.w, tiles.g, p, pd, u);
  if (k_lo == k_hi) return;
  const auto x_at = [&](std::size_t i) { return first + i < p ? tiles.x[first + i] : 0.0; };  // i < T
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
            : detail::systematic_position(std::min(o_hi, o_lo + tiles.f[t] * run[i]), tiles.w, tiles.g, p, pd,
                                           u);
    for (; k < end; ++k) out[k] = first + i;
  }
}

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
    const Tiles tiles = tile_passes(log_w);
    if (summary != nullptr) *summary = {tiles.big_m, tiles.big_m + std::log(tiles.w), tiles.w * tiles.w / tiles.q};
    if (kind == Resampler::systematic) {
      const double u = philox_uniform(seed, 0, counter);
      for (std::size_t t = 0; t < tiles.m.size(); ++t) write_tile(tiles, t, u, out);
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
