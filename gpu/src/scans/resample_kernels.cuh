// Private: the kernels of fused systematic resampling: three passes over tiles of 4096 particles, and a spread pass.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "resample_order.hpp"

namespace tally::gpu::cuda::fused {

// ---- tuning, in one place -------------------------------------------------------------------------------------------
// The first four fix the order of additions and are shared with the CPU reference (resample_order.hpp).
constexpr int threads = detail::resample_threads;                      // 256 threads per tile: 8 warps
constexpr int items = detail::resample_items;                          // 16 consecutive particles per thread
constexpr unsigned tile = static_cast<unsigned>(detail::resample_tile);  // T = 4096 particles per tile
constexpr int combine_threads = detail::combine_threads;               // pass 2: one block of 512
constexpr int warps = threads / 32;
// A tile owning more than spread_min positions is written by the spread pass (all blocks) instead of its own block.
constexpr unsigned long long spread_min = 4ull * tile;
constexpr int spread_threads = 256;
constexpr int spread_items = 8;  // positions per thread and window: lane + 32 j, j < 8 (coalesced stores per j)
constexpr int spread_blocks_per_sm = 4;
constexpr int combine_items = 8;  // pass 2 keeps up to 8 tiles a thread in registers (P <= 2^24); more: generic
// One tile a block in passes 1 and 3 (persistent blocks that load the next tile meanwhile measured slower: the
// loads in flight cost 32 registers a thread). Their register budgets, 65536 / (256 x blocks per SM) a thread:
constexpr int totals_blocks_per_sm = 5;     // 51
constexpr int ancestors_blocks_per_sm = 4;  // 64
// Pass 3 writes a normal tile's positions from its particles' side (each thread its own runs, into shared memory,
// then coalesced copies) when no thread owns more than scatter_max positions, else by binary searches.
constexpr unsigned scatter_max = 64;
constexpr int search_batch = 4;  // independent binary searches in flight per thread
static_assert(threads % 32 == 0 && combine_threads % 32 == 0 && combine_threads <= 1024 && (tile & (tile - 1)) == 0);
static_assert(tile <= 65536, "particles of a tile are 16-bit in the scatter buffer");
static_assert(spread_min < (1ull << 32), "positions inside a block-written tile are 32-bit");

// ---- the scheme -----------------------------------------------------------------------------------------------------
// Pass 1 (tile_totals, one block per tile, reads l once): m_t, s_t, q_t in the order of resample_order.hpp (the
//   loads warp-striped: each of a warp's 16 loads reads 32 consecutive doubles).
// Pass 2 (combine_tiles, one block of 512): M, the starts O_t (t <= n) and their positions K_t = k(O_t), W, Q, g,
//   and the list of heavy tiles, those owning more than spread_min positions (K_{t+1} - K_t > 4 T): heavy_tile[s],
//   heavy_start[s] (the heavy tiles' positions laid end to end: heavy_start[s] = sum of K_{t+1} - K_t over the
//   heavy tiles before slot s), slot[t] (-1 for the others). At most floor(P / (4 T + 1)) tiles are heavy, since
//   the tiles' positions add up to P. Up to 512 x 8 tiles (P <= 2^24) each thread keeps its tiles in registers;
//   beyond, combine_tiles_generic takes the same steps through device memory.
// Pass 3 (write_ancestors, one block per tile, reads l again): a tile with K_t = K_{t+1} owns no position and
//   returns at once. Otherwise the block recomputes x (warp-striped loads, then to 16 consecutive particles a thread
//   through padded shared memory), the block-order bases and walks, the prefix maximum V and L, then k(C_i) for its
//   T particles: nondecreasing, in [K_t, K_{t+1}], and K_{t+1} from L on. A normal tile (at most 4 T positions) is
//   written block-cooperatively, its stores coalesced (a warp's store covers 32 consecutive positions), one of two
//   ways, decided by a block-wide vote:
//   - scatter, when no thread owns more than scatter_max = 64 positions (thread j owns [k(C_{16j-1}), k(C_{16j+15})),
//     the first from thread j - 1): each thread writes the tile-relative index 16 j + r of its particles at their
//     positions into a 16-bit shared array (at most 4 T entries), then the block copies it out in position order;
//   - search, otherwise: the block keeps k(C_i) - K_t (< 4 T) in shared memory and its threads loop over the tile's
//     positions K_t + pos, pos = thread, thread + 256, ...: the owner of pos is the first i with k(C_i) - K_t > pos
//     (particle i owns [k(C_{i-1}), k(C_i))), found by a 12-step binary search over the 4096 sorted entries (the
//     last, at i >= L, is K_{t+1} - K_t > pos, so one exists), 4 searches interleaved per thread.
//   A heavy tile writes its k(C_i) to scratch[slot * T + i] instead and leaves its positions to
// the spread pass (spread_heavy, a grid of 4 blocks per SM): its warps take windows of 256 consecutive heavy
//   positions h (lane + 32 j, j < 8), find the slot by a binary search of heavy_start and the particle by one of
//   the slot's k array, and store. Where the first and last position of a thread's window have the same owner (one
//   particle holding many positions: the degenerate case), the positions between have it too (owners are
//   nondecreasing in h) and are stored without searching. So when one particle holds all the weight, pass 3 reads
//   one tile and every block of the spread pass streams stores: no thread writes more than 8 positions a window.
// Bytes: l read twice (8 P each), the ancestors written once (8 P), plus O(P / T) for the tile arrays. Measured on
// an H100 at P = 2^24 (bench/scans_gpu.cu): pass 1 50 us (the speed of a plain read of l), pass 2 20 us (one
// block: latency), pass 3 129 us (exp, the scans and k for each particle, then the stores), spread 4 us when idle.

/// The per-tile arrays and results, all in the caller's temporary storage (resample_cuda.cu lays them out).
struct Totals {
  double max_log_weight;  // M
  double total;           // W = O_n
  double squares;         // Q
  double scale;           // g = P / W
  unsigned long long heavy_count;
  unsigned long long heavy_positions;  // heavy_start[heavy_count]
};
struct Plan {
  std::size_t p = 0;  // particles
  std::size_t n = 0;  // tiles: ceil(P / T)
  double u = 0;       // the uniform of systematic resampling
  double* m = nullptr;
  double* s = nullptr;
  double* q = nullptr;               // n each
  double* o = nullptr;               // n + 1: O_t
  unsigned long long* k = nullptr;   // n + 1: K_t = k(O_t)
  int* slot = nullptr;               // n
  unsigned long long* heavy_tile = nullptr;   // max_heavy
  unsigned long long* heavy_start = nullptr;  // max_heavy + 1
  unsigned long long* scratch = nullptr;      // max_heavy * T: the heavy tiles' k(C_i)
  Totals* totals = nullptr;
  const double* guard = nullptr;  // where set: the kernels run only if *guard is finite (the caller's weight check)
  double ess_limit = INFINITY;    // finite: the ancestors are written only where ESS = W^2 / Q < ess_limit
  // A shard's part (resample_shards): passes 1 and 3 and the spread pass cover the tiles [first_tile, end_tile),
  // block b taking tile first_tile + b, whose log-weights start at l[b T] (l holds the tiles from first_tile on);
  // pass 1 writes that tile's totals at m[b], s[b], q[b] (so m, s, q are this part's own); pass 3 reads the whole
  // plan (m[t] of every tile t), and the array it writes, out, begins at position first_position. The whole
  // population: first_tile = 0, end_tile = n, first_position = 0 (carve_plan's).
  std::size_t first_tile = 0;
  std::size_t end_tile = 0;
  unsigned long long first_position = 0;
};

/// False where the plan's guard says the weights must not be read (the block returns at once, as one).
__device__ inline bool guard_passes(const Plan& plan) { return plan.guard == nullptr || isfinite(*plan.guard); }
/// Whether the caller resamples: ESS < ess_limit, with the host's roundings (W * W / Q, no fma), read from the totals.
__device__ inline bool resampling(const Plan& plan) {
  if (isinf(plan.ess_limit)) return true;
  const Totals& t = *plan.totals;
  return __ddiv_rn(__dmul_rn(t.total, t.total), t.squares) < plan.ess_limit;
}

constexpr unsigned full_mask = 0xffffffffu;

// IEEE sums and products, never contracted into an fma: the CPU reference makes the same roundings.
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }

/// k(c) of resample_order.hpp: P for c >= W, else min(P, floor(fma(c, g, u))).
__device__ inline unsigned long long position(double c, const Plan& plan, double w, double g) {
  if (c >= w) return plan.p;
  const double k = floor(__fma_rn(c, g, plan.u));
  return k >= static_cast<double>(plan.p) ? plan.p : static_cast<unsigned long long>(k);
}

// The block-wide helpers below each synchronize the block once. Each call takes its own `shared` array (32
// doubles), written before that barrier and read after it, so no call may share one with another.

/// The largest v of the block (exact).
template <int Threads>
__device__ double block_max(double v, double* shared) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = fmax(v, __shfl_xor_sync(full_mask, v, d));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  double r = shared[0];
  for (int w = 1; w < Threads / 32; ++w) r = fmax(r, shared[w]);
  return r;
}

/// The largest v of the threads before this one (0 for thread 0; every v >= 0): exact, so order-free.
template <int Threads>
__device__ double block_exclusive_max(double v, double* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const double y = __shfl_up_sync(full_mask, v, d);
    if (lane >= d) v = fmax(v, y);
  }
  double before = __shfl_up_sync(full_mask, v, 1);
  if (lane == 0) before = 0.0;
  if (lane == 31) shared[warp] = v;
  __syncthreads();
  for (int w = 0; w < warp; ++w) before = fmax(before, shared[w]);
  return before;
}

/// The block order of resample_order.hpp: this thread's base E_w + S_{l-1} (E_w for lane 0); `total` = F_31.
/// Every warp scans the warp totals itself (Kogge-Stone, zero-padded to 32: the same additions in every warp).
template <int Threads>
__device__ double block_order_scan(double a, double* shared, double& total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double s = a;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {  // Kogge-Stone: x_l = x_l + x_{l-d}, as warp_order_scan adds them
    const double y = __shfl_up_sync(full_mask, s, d);
    if (lane >= d) s = add(s, y);
  }
  const double before = __shfl_up_sync(full_mask, s, 1);  // S_{l-1}
  if (lane == 31) shared[warp] = s;                        // W_w
  __syncthreads();
  double f = lane < Threads / 32 ? shared[lane] : 0.0;  // F_lane, the inclusive scan of the warp totals
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const double y = __shfl_up_sync(full_mask, f, d);
    if (lane >= d) f = add(f, y);
  }
  const double f_before = __shfl_sync(full_mask, f, warp > 0 ? warp - 1 : 0);
  const double e = warp > 0 ? f_before : 0.0;  // E_w = F_{w-1}
  total = __shfl_sync(full_mask, f, 31);
  return lane == 0 ? e : add(e, before);
}

/// Thread j's log-weights of tile t in the warp-striped arrangement: lane l of warp w gets item r =
/// l_{T t + 512 w + 32 r + l} (-inf past P): each load of a warp reads 32 consecutive doubles. l holds the
/// log-weights from tile plan.first_tile on (all of them for the whole population).
__device__ inline void fetch_striped(const double* l, const Plan& plan, std::size_t t, double (&raw)[items]) {
  const std::size_t base = t * tile, first = (threadIdx.x / 32) * (32 * items) + threadIdx.x % 32;
  const double* at = l + (t - plan.first_tile) * tile;
  if (base + tile <= plan.p) {  // a whole tile: no bounds
#pragma unroll
    for (int r = 0; r < items; ++r) raw[r] = __ldg(at + first + 32 * r);
  } else {
#pragma unroll
    for (int r = 0; r < items; ++r) raw[r] = base + first + 32 * r < plan.p ? __ldg(at + first + 32 * r) : -INFINITY;
  }
}

/// The warp-striped items of fetch_striped to the blocked ones of pass 3 (lane l's item r: particle 16 l + r of
/// the warp's 512), through `buffer` (exchange_words doubles of this warp): index i = 32 r + l is written, index
/// 16 l + r read, each at i + i / 16. That padding keeps both conflict-free: within a half-warp, writes land on
/// double-word banks (2 r + l) mod 16 and reads on (l + r) mod 16, all distinct.
constexpr int exchange_words = 32 * items + 32 * items / 16;
__device__ inline void striped_to_blocked(double (&x)[items], double* buffer) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < items; ++r) {
    const int i = 32 * r + lane;
    buffer[i + i / 16] = x[r];
  }
  __syncwarp();
#pragma unroll
  for (int r = 0; r < items; ++r) {
    const int i = items * lane + r;
    x[r] = buffer[i + i / 16];
  }
}

/// x = e^{l - m} in place (0 where l = -inf; l > -inf implies m > -inf, so no -inf - -inf).
__device__ inline void relative_weights(double (&x)[items], double m) {
#pragma unroll
  for (int r = 0; r < items; ++r) x[r] = x[r] == -INFINITY ? 0.0 : exp(x[r] - m);
}

/// Pass 1: m_t, s_t, q_t of tile blockIdx.x, in the warp-striped arrangement of fetch_striped (resample_order.hpp:
/// thread j's items r = 0 .. 15 are the particles 512 w + 32 r + l of the tile).
__global__ void __launch_bounds__(threads, totals_blocks_per_sm) tile_totals(const double* l, Plan plan) {
  if (!guard_passes(plan)) return;
  __shared__ double shared[3][32];
  const std::size_t t = plan.first_tile + blockIdx.x;
  double x[items];
  fetch_striped(l, plan, t, x);
  double mx = x[0];
#pragma unroll
  for (int r = 1; r < items; ++r) mx = fmax(mx, x[r]);
  mx = block_max<threads>(mx, shared[0]);
  relative_weights(x, mx);
  double a = x[0], b = mul(x[0], x[0]);
#pragma unroll
  for (int r = 1; r < items; ++r) {
    a = add(a, x[r]);
    b = add(b, mul(x[r], x[r]));
  }
  double s_t = 0, q_t = 0;
  block_order_scan<threads>(a, shared[1], s_t);
  block_order_scan<threads>(b, shared[2], q_t);
  if (threadIdx.x == 0) {
    plan.m[blockIdx.x] = mx;
    plan.s[blockIdx.x] = s_t;
    plan.q[blockIdx.x] = q_t;
  }
}

/// Pass 3: the ancestors of tile blockIdx.x's positions (a normal tile), or its k(C_i) (a heavy one). A normal tile
/// is written from its particles' side when each thread owns at most scatter_max positions: thread j stores the
/// tile-relative particle 16 j + r at each of its positions in shared memory, then the block copies them out in
/// order. Otherwise by binary searches over the tile's k(C_i) (see the scheme).
__global__ void __launch_bounds__(threads, ancestors_blocks_per_sm)
    write_ancestors(const double* l, Plan plan, unsigned long long* out) {
  if (!guard_passes(plan) || !resampling(plan)) return;
  __shared__ union {
    double exchange[warps][exchange_words];
    unsigned rel[tile];                // search: k(C_i) - K_t
    unsigned short owner[spread_min];  // scatter: the particle at position K_t + pos, less T t
  } storage;  // rel and owner are written after block_order_scan's barrier, so after every exchange
  __shared__ double shared[3][32];
  __shared__ unsigned warp_last[warps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::size_t t = plan.first_tile + blockIdx.x;
  const unsigned long long k_lo = plan.k[t], k_hi = plan.k[t + 1];
  if (k_lo == k_hi) return;  // no positions: the whole block leaves (else S_t > 0, so L >= 0)
  out -= plan.first_position;  // (out[k] for the positions k this launch writes, k >= first_position)
  double x[items];
  fetch_striped(l, plan, t, x);
  striped_to_blocked(x, storage.exchange[warp]);  // item r: particle 16 j + r
  const double m_t = plan.m[t], f = exp(m_t - plan.totals->max_log_weight);
  relative_weights(x, m_t);
  double a = x[0];
#pragma unroll
  for (int r = 1; r < items; ++r) a = add(a, x[r]);
  double unused = 0;
  double v = block_order_scan<threads>(a, shared[0], unused);
  // the walk v; x[r] becomes the largest v at a positive weight so far in this thread (0 if none)
  double run = 0.0;
  int last_live = -1;
#pragma unroll
  for (int r = 0; r < items; ++r) {
    v = add(v, x[r]);
    if (x[r] > 0.0) {
      run = v;  // the walk is nondecreasing: v is the largest so far
      last_live = items * static_cast<int>(threadIdx.x) + r;
    }
    x[r] = run;
  }
  const double before = block_exclusive_max<threads>(run, shared[1]);
  const int big_l = static_cast<int>(block_max<threads>(static_cast<double>(last_live), shared[2]));
  const double o_lo = plan.o[t], o_hi = plan.o[t + 1], w = plan.totals->total, g = plan.totals->scale;
  const int slot = plan.slot[t];
  const unsigned long long first = static_cast<unsigned long long>(t) * tile;
  unsigned kr[items];  // k(C_i) - K_t, at most K_{t+1} - K_t
#pragma unroll
  for (int r = 0; r < items; ++r) {
    const int i = items * static_cast<int>(threadIdx.x) + r;
    const unsigned long long k =
        i >= big_l ? k_hi : position(fmin(o_hi, add(o_lo, mul(f, fmax(before, x[r])))), plan, w, g);
    if (slot >= 0) plan.scratch[static_cast<std::size_t>(slot) * tile + i] = k;
    kr[r] = static_cast<unsigned>(k - k_lo);  // for a normal tile <= 4 T
  }
  if (slot < 0) {  // block-uniform
    const auto n_pos = static_cast<unsigned>(k_hi - k_lo);
    // thread j's positions: [k(C_{16 j - 1}), k(C_{16 j + 15})), the first from the thread before (0 for j = 0)
    unsigned k_before = __shfl_up_sync(full_mask, kr[items - 1], 1);
    if (lane == 31) warp_last[warp] = kr[items - 1];
    __syncthreads();
    if (lane == 0) k_before = warp == 0 ? 0u : warp_last[warp - 1];
    if (__syncthreads_and(kr[items - 1] - k_before <= scatter_max)) {
      unsigned k = k_before;
#pragma unroll
      for (int r = 0; r < items; ++r)
        for (; k < kr[r]; ++k) storage.owner[k] = static_cast<unsigned short>(items * threadIdx.x + r);
      __syncthreads();
      for (unsigned pos = threadIdx.x; pos < n_pos; pos += threads) out[k_lo + pos] = first + storage.owner[pos];
    } else {
#pragma unroll
      for (int r = 0; r < items; ++r) storage.rel[items * threadIdx.x + r] = kr[r];
      __syncthreads();
      // search_batch positions pos0 + b * threads at once: independent searches, their loads interleaved
      for (unsigned pos0 = threadIdx.x; pos0 < n_pos; pos0 += search_batch * threads) {
        unsigned i[search_batch] = {};  // the number of entries <= pos: the first i with rel[i] > pos
#pragma unroll
        for (unsigned step = tile / 2; step > 0; step /= 2)
#pragma unroll
          for (int b = 0; b < search_batch; ++b)
            if (storage.rel[i[b] + step - 1] <= pos0 + b * threads) i[b] += step;
#pragma unroll
        for (int b = 0; b < search_batch; ++b)  // rel[T - 1] = n_pos > pos for the positions stored
          if (pos0 + b * threads < n_pos) out[k_lo + pos0 + b * threads] = first + i[b];
      }
    }
  }
}

struct Owner {
  unsigned long long ancestor, position;
};

/// The owner of heavy position h, heavy_start[first] <= h < heavy_start[end]: slot s = the last with
/// heavy_start[s] <= h, then the first particle of that tile with k(C_i) > its position.
__device__ inline Owner heavy_owner(const Plan& plan, unsigned long long first, unsigned long long end,
                                    unsigned long long h) {
  unsigned long long lo = first, hi = end;  // heavy_start[lo] <= h < heavy_start[hi]
  while (hi - lo > 1) {
    const unsigned long long mid = lo + (hi - lo) / 2;
    if (plan.heavy_start[mid] <= h) lo = mid; else hi = mid;
  }
  const unsigned long long t = plan.heavy_tile[lo];
  const unsigned long long pos = plan.k[t] + (h - plan.heavy_start[lo]);
  const unsigned long long* ks = plan.scratch + lo * tile;
  unsigned i = 0;  // as in write_ancestors: ks[T - 1] = K_{t+1} > pos
#pragma unroll
  for (unsigned step = tile / 2; step > 0; step /= 2)
    if (__ldg(ks + i + step - 1) <= pos) i += step;
  return {t * tile + i, pos};
}

/// The first heavy slot whose tile is t or later (the heavy tiles are listed in increasing order).
__device__ inline unsigned long long first_heavy_slot(const Plan& plan, unsigned long long count, std::size_t t) {
  unsigned long long lo = 0, hi = count;
  while (lo < hi) {
    const unsigned long long mid = lo + (hi - lo) / 2;
    if (plan.heavy_tile[mid] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/// The spread pass: the heavy tiles' positions (those of the tiles [first_tile, end_tile)), laid end to end, in
/// windows of 256 per warp (grid-stride).
__global__ void __launch_bounds__(spread_threads) spread_heavy(Plan plan, unsigned long long* out) {
  if (!guard_passes(plan) || !resampling(plan)) return;
  const unsigned long long all = plan.totals->heavy_count;
  if (all == 0) return;
  out -= plan.first_position;
  const unsigned long long first_slot = first_heavy_slot(plan, all, plan.first_tile);
  const unsigned long long end_slot = first_heavy_slot(plan, all, plan.end_tile);
  if (first_slot == end_slot) return;
  const unsigned long long h_begin = plan.heavy_start[first_slot];
  const unsigned long long total = plan.heavy_start[end_slot] - h_begin;
  constexpr unsigned long long window = 32ull * spread_items;
  const unsigned long long lane = threadIdx.x % 32;
  const unsigned long long warp = (static_cast<unsigned long long>(blockIdx.x) * spread_threads + threadIdx.x) / 32;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * (spread_threads / 32) * window;
  for (unsigned long long h0 = warp * window + lane; h0 < total; h0 += stride) {
    // this thread's positions h0 + 32 j, j <= j_last: the ones below total (h0 + 32 j_last <= total - 1)
    const unsigned long long below = (total - 1 - h0) / 32;
    const unsigned long long j_last = below < spread_items - 1 ? below : spread_items - 1;
    const auto owner = [&](unsigned long long h) { return heavy_owner(plan, first_slot, end_slot, h_begin + h); };
    const Owner first = owner(h0), final = owner(h0 + 32 * j_last);
    if (first.ancestor == final.ancestor) {  // one particle, so one tile: positions follow h one to one
      for (unsigned long long j = 0; j <= j_last; ++j) out[first.position + 32 * j] = first.ancestor;
    } else {
      out[first.position] = first.ancestor;
      for (unsigned long long j = 1; j < j_last; ++j) {
        const Owner o = owner(h0 + 32 * j);
        out[o.position] = o.ancestor;
      }
      out[final.position] = final.ancestor;
    }
  }
}

}  // namespace tally::gpu::cuda::fused
