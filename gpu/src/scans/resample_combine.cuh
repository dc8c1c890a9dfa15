// Private: pass 2 of fused systematic resampling: one block combines the tile totals into offsets and positions.
#pragma once

#include <cub/block/block_scan.cuh>

#include "resample_kernels.cuh"

namespace tally::gpu::cuda::fused {

/// Pass 2 (one block of 512) for n <= 512 * combine_items tiles: M, O_t, K_t (t <= n), W, Q and the heavy tiles
/// (resample_kernels.cuh), in the order of resample_order.hpp. Thread j takes the tiles [begin, end), c =
/// ceil(n / 512) <= combine_items of them (none for j c >= n), and keeps their m, s, q, O and K in registers:
/// one read of the tile arrays, then block-wide steps through shared memory only, then one write. The thread with
/// end = n also writes O_n and K_n. What a thread needs of its neighbours (S_{begin-1} > 0 from thread j - 1,
/// O_end from thread j + 1) comes through shared memory: a thread with tiles has a predecessor with tiles.
__global__ void __launch_bounds__(combine_threads) combine_tiles(Plan plan) {
  if (!guard_passes(plan)) return;
  constexpr int kc = combine_items;
  using Scan = cub::BlockScan<unsigned long long, combine_threads>;
  __shared__ typename Scan::TempStorage scan_storage[2];
  __shared__ double shared[4][32];
  __shared__ double first_o[combine_threads + 1];  // O at thread j's first tile; O_n after the last
  __shared__ bool last_positive[combine_threads];  // S > 0 at thread j's last tile
  const std::size_t n = plan.n, c = (n + combine_threads - 1) / combine_threads;
  const std::size_t j = threadIdx.x, begin = j * c < n ? j * c : n, end = n - begin > c ? begin + c : n;
  const int count = static_cast<int>(end - begin);  // <= c <= kc
  const bool last = count > 0 && end == n;
  double m[kc], s[kc], q[kc];
#pragma unroll
  for (int r = 0; r < kc; ++r) {
    m[r] = r < count ? plan.m[begin + r] : -INFINITY;
    s[r] = r < count ? plan.s[begin + r] : 0.0;
    q[r] = r < count ? plan.q[begin + r] : 0.0;
  }
  double mx = m[0];
#pragma unroll
  for (int r = 1; r < kc; ++r) mx = fmax(mx, m[r]);
  const double big_m = block_max<combine_threads>(mx, shared[0]);
  // S_t = s_t f_t and Q_t = q_t (f_t f_t) in place of s and q; a_j, b_j their sums in order
  double a = 0.0, b = 0.0;
  bool positive = false;
#pragma unroll
  for (int r = 0; r < kc; ++r)
    if (r < count) {
      const double f = exp(m[r] - big_m);
      s[r] = mul(s[r], f);
      q[r] = mul(q[r], mul(f, f));
      a = add(a, s[r]);
      b = add(b, q[r]);
      positive = s[r] > 0.0;
    }
  last_positive[j] = positive;
  double total_s = 0, total_q = 0;
  const double base = block_order_scan<combine_threads>(a, shared[1], total_s);  // its barrier publishes last_positive
  block_order_scan<combine_threads>(b, shared[2], total_q);
  // R_t by the walk, masked to 0 after a tile with S = 0, then the prefix maximum O_t
  bool previous_positive = j == 0 || (count > 0 && last_positive[j - 1]);
  double r_t = base, run = 0.0, o[kc];
#pragma unroll
  for (int r = 0; r < kc; ++r) {
    o[r] = 0.0;
    if (r < count) {
      o[r] = previous_positive ? r_t : 0.0;
      run = fmax(run, o[r]);
      r_t = add(r_t, s[r]);
      previous_positive = s[r] > 0.0;
    }
  }
  double o_n = 0.0;  // R'_n: R_n is the block-order total
  if (last) run = fmax(run, o_n = previous_positive ? total_s : 0.0);
  double before = block_exclusive_max<combine_threads>(run, shared[3]);  // the largest R' before `begin`
#pragma unroll
  for (int r = 0; r < kc; ++r)
    if (r < count) o[r] = before = fmax(before, o[r]);
  if (last) first_o[j + 1] = o_n = fmax(before, o_n);
  if (count > 0) first_o[j] = o[0];
  __syncthreads();
  const double w = first_o[(n - 1) / c + 1];  // O_n, written by the last thread, (n - 1) / c
  const double g = static_cast<double>(plan.p) / w;
  // K_t = k(O_t); K_end = k(O at the next thread's first tile, or O_n); heavy: K_{t+1} - K_t > spread_min
  unsigned long long k[kc];
  bool heavy[kc];
  unsigned long long k_next = count > 0 ? position(first_o[j + 1], plan, w, g) : 0, count_heavy = 0, size_heavy = 0;
#pragma unroll
  for (int r = kc - 1; r >= 0; --r) {
    k[r] = 0;
    heavy[r] = false;
    if (r < count) {
      k[r] = position(o[r], plan, w, g);
      heavy[r] = k_next - k[r] > spread_min;
      count_heavy += heavy[r] ? 1 : 0;
      size_heavy += heavy[r] ? k_next - k[r] : 0;
      k_next = k[r];
    }
  }
  unsigned long long slot = 0, heavy_total = 0, start = 0, heavy_positions = 0;
  Scan(scan_storage[0]).ExclusiveSum(count_heavy, slot, heavy_total);
  Scan(scan_storage[1]).ExclusiveSum(size_heavy, start, heavy_positions);
#pragma unroll
  for (int r = 0; r < kc; ++r)
    if (r < count) {
      const std::size_t t = begin + r;
      plan.o[t] = o[r];
      plan.k[t] = k[r];
      plan.slot[t] = heavy[r] ? static_cast<int>(slot) : -1;
      if (heavy[r]) {
        const unsigned long long k_hi =
            r + 1 < count ? k[r + 1 < kc ? r + 1 : r] : position(first_o[j + 1], plan, w, g);
        plan.heavy_tile[slot] = t;
        plan.heavy_start[slot] = start;
        ++slot;
        start += k_hi - k[r];
      }
    }
  if (last) {
    plan.o[n] = o_n;
    plan.k[n] = plan.p;  // k(O_n) = k(W) = P
  }
  if (threadIdx.x == 0) {
    *plan.totals = Totals{big_m, w, total_q, g, heavy_total, heavy_positions};
    plan.heavy_start[heavy_total] = heavy_positions;
  }
}

/// Pass 2, any n: the same steps as combine_tiles, each reading its values from device memory again (a chain of
/// dependent reads: tens of microseconds, against milliseconds for passes 1 and 3 at these sizes).
__global__ void __launch_bounds__(combine_threads) combine_tiles_generic(Plan plan) {
  if (!guard_passes(plan)) return;
  using Scan = cub::BlockScan<unsigned long long, combine_threads>;
  __shared__ typename Scan::TempStorage scan_storage[2];
  __shared__ double shared[4][32];
  __shared__ double shared_w;
  const std::size_t n = plan.n, c = (n + combine_threads - 1) / combine_threads;
  const std::size_t j = threadIdx.x, begin = j * c < n ? j * c : n, end = n - begin > c ? begin + c : n;
  const bool last = begin < end && end == n;
  double mx = -INFINITY;
  for (std::size_t t = begin; t < end; ++t) mx = fmax(mx, plan.m[t]);
  const double big_m = block_max<combine_threads>(mx, shared[0]);
  // S_t = s_t f_t (0 for an empty tile: m_t = -inf gives f_t = 0 and s_t = 0)
  const auto tile_total = [&](std::size_t t) { return mul(plan.s[t], exp(plan.m[t] - big_m)); };
  double a = 0.0, b = 0.0;
  for (std::size_t t = begin; t < end; ++t) {
    const double f = exp(plan.m[t] - big_m);
    a = add(a, mul(plan.s[t], f));
    b = add(b, mul(plan.q[t], mul(f, f)));
  }
  double total_s = 0, total_q = 0;
  const double base = block_order_scan<combine_threads>(a, shared[1], total_s);
  block_order_scan<combine_threads>(b, shared[2], total_q);
  // the raw starts R_t, masked to 0 after a tile with S = 0; o[] holds R'_t until the prefix maximum below
  double r = base, run = 0.0;
  bool previous_positive = begin == 0 || (begin < end && tile_total(begin - 1) > 0.0);
  for (std::size_t t = begin; t < end; ++t) {
    const double masked = previous_positive ? r : 0.0;
    plan.o[t] = masked;
    run = fmax(run, masked);
    const double st = tile_total(t);
    r = add(r, st);
    previous_positive = st > 0.0;
  }
  if (last) {
    const double masked = previous_positive ? total_s : 0.0;  // R'_n: R_n is the block-order total
    plan.o[n] = masked;
    run = fmax(run, masked);
  }
  double o = block_exclusive_max<combine_threads>(run, shared[3]);  // max of R' over the tiles before `begin`
  for (std::size_t t = begin; t < end; ++t) plan.o[t] = o = fmax(o, plan.o[t]);
  if (last) plan.o[n] = shared_w = fmax(o, plan.o[n]);
  __syncthreads();  // O and W visible to the whole block
  const double w = shared_w, g = static_cast<double>(plan.p) / w;
  unsigned long long count = 0, size = 0;
  for (std::size_t t = begin; t < end; ++t) {
    const unsigned long long k_lo = position(plan.o[t], plan, w, g), k_hi = position(plan.o[t + 1], plan, w, g);
    plan.k[t] = k_lo;
    if (k_hi - k_lo > spread_min) {
      ++count;
      size += k_hi - k_lo;
    }
  }
  if (last) plan.k[n] = plan.p;  // k(O_n) = k(W) = P
  unsigned long long slot = 0, count_total = 0, start = 0, size_total = 0;
  Scan(scan_storage[0]).ExclusiveSum(count, slot, count_total);
  Scan(scan_storage[1]).ExclusiveSum(size, start, size_total);
  for (std::size_t t = begin; t < end; ++t) {
    const unsigned long long k_lo = position(plan.o[t], plan, w, g), k_hi = position(plan.o[t + 1], plan, w, g);
    if (k_hi - k_lo > spread_min) {
      plan.slot[t] = static_cast<int>(slot);
      plan.heavy_tile[slot] = t;
      plan.heavy_start[slot] = start;
      ++slot;
      start += k_hi - k_lo;
    } else {
      plan.slot[t] = -1;
    }
  }
  if (threadIdx.x == 0) {
    *plan.totals = Totals{big_m, w, total_q, g, count_total, size_total};
    plan.heavy_start[count_total] = size_total;
  }
}

}  // namespace tally::gpu::cuda::fused
