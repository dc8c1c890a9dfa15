// The CUDA form of conditioning laws on an observed thinning: one warp per 32 laws (fewer where the laws are too
// few to fill the device), the likelihood tabulated once a block where the laws share the observation, else walked
// by its exact ratios where that is safe, else the per-entry formula.
#include <climits>
#include <cmath>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_math.hpp"

namespace tally::gpu::cuda::kernels {
int multiprocessors();  // (convolve_tensor.cu: the device's count, queried once)
}  // namespace tally::gpu::cuda::kernels

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// log Binomial(v_i; k, q): the likelihood of an observed thinning v_i for the parent value k.
struct ThinningLogLik {
  const std::int64_t* v;
  double q;
  __device__ double operator()(long long i, std::int64_t k) const { return detail::thinning_log_mass(k, v[i], q); }
};
/// The same with law i's own probability q[i].
struct ThinningLogLikEach {
  const std::int64_t* v;
  const double* q;
  __device__ double operator()(long long i, std::int64_t k) const { return detail::thinning_log_mass(k, v[i], q[i]); }
};

/// The fast path's longest run of a law's values (up to 32 a lane), held in shared memory with one pad every 16
/// values (fewer bank conflicts between lanes reading their own stretches); 4 warps a block. A warp's work on a law
/// is a chain of dependent steps (loads, walks, scans, logarithms), so resident warps decide the speed: registers
/// are capped at 64 a thread (8 blocks, 32 warps a multiprocessor; uncapped, 110 registers left 16 warps and the
/// kernel took 2.96 against 2.3 ms at P = 2^20 on an H100, a few spilled values included), and batches whose laws
/// are all short get a quarter of the tile (8.7 KB a block, where the long tile's 35 KB lets only 6 blocks in).
inline constexpr int long_fast_length = 1024;
inline constexpr int short_fast_length = 256;
inline constexpr int thinning_warps = 4;
inline constexpr int thinning_min_blocks = 8;
/// A warp takes 32 consecutive laws one after another, or 16 or 8 where warps of 32 would number fewer than twice
/// what the device holds at once (thinning_min_blocks blocks a multiprocessor): at P = 2^16 on 132 multiprocessors,
/// 2048 warps of 32 laws left three quarters of the warp slots empty, and the kernel, a chain of dependent steps a
/// law, waited on latency (0.076 ms, against 3.1 ms / 64 at P = 2^22). Fewer than 8 lose again: 4 laws a warp took
/// 0.074 ms against 8's 0.065 ms at 2^16 (H100, 2026-11-26: each block's table and each warp's fixed work are paid
/// for half as many laws).
inline constexpr int fewest_laws_per_warp = 8;
__device__ inline int slot(int p) { return p + p / 16; }

/// One warp per 32 consecutive laws, taken one after another: the posterior of X_i given the thinning
/// v_i ~ Binomial(X_i, q) and log L_i, as condition_law (population_kernels.cuh) computes them, by a faster path
/// where it is safe. What is per law and not per value (the three lgamma terms of log L(n0), the logarithms of the
/// posterior's total and largest weight, the law's offsets) is computed before or after the loop, lane l for law
/// first + l: one pass of the warp for 32 laws instead of one pass a law with a single useful lane.
///
/// Fast path (0 < q < 1, the values n = lo_i + k >= v_i number at most fast_length): the likelihood
/// L(n) = C(n, v) q^v (1 - q)^(n - v) is formed once by the lgamma formula at n0 = max(lo_i, v_i), and from there
/// by its exact ratios L(n + 1) / L(n) = (n + 1)(1 - q) / (n + 1 - v): lane l walks its stretch of
/// ceil(len / 32) values (u_j relative to the stretch's first n), the logs of the stretches' products are scanned
/// over the warp to give each stretch's first log L. Each posterior weight is w_j u_j scaled by e^{start - ref},
/// ref the largest product's logarithm (products below 1e-290 taken from logarithms); below e^-650, or where the
/// stretch's products are that small, a weight is formed from logarithms instead. The result is the per-entry
/// formula's up to the roundings the walks and the scan add (about 1e-12 relative at most). Ratio products that
/// leave [1e-280, 1e280], a largest weight below 1e-200 after scaling, and particles without mass take the
/// per-entry formula (the whole warp on that law).
template <int fast_length, int laws_per_warp>
__device__ void walk_laws(double* buf, PmfBatchView x, const std::int64_t* v, double q, double log_q, double log_keep,
                          MutablePmfBatchView out, double* log_likelihood, double* prior_log_mass) {
  const long long first_law = warp_index() * laws_per_warp;
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (first_law >= static_cast<long long>(x.count)) return;  // the whole warp
  const int laws =
      static_cast<int>(min(static_cast<long long>(laws_per_warp), static_cast<long long>(x.count) - first_law));
  // lane l: law first_law + l, its bounds and log L(n0) where the fast path may take it
  const long long own = first_law + lane;
  std::int64_t own_begin = 0, own_end = 0, own_lo = 0, own_v = 0;
  double own_l0 = 0.0, own_scale = -INFINITY;
  bool own_eligible = false;
  if (lane < laws) {
    own_begin = x.offset[own];
    own_end = x.offset[own + 1];
    own_lo = x.lo[own];
    own_v = v[own];
    own_scale = x.log_scale[own];
    const std::int64_t n0 = own_lo > own_v ? own_lo : own_v, len = own_end - own_begin - (n0 - own_lo);
    own_eligible = q > 0.0 && q < 1.0 && own_v >= 0 && own_lo >= 0 && len > 0 && len <= fast_length &&
                   own_scale != -INFINITY;
    if (own_eligible) {
      const double n0d = static_cast<double>(n0), vd = static_cast<double>(own_v);
      own_l0 = lgamma(n0d + 1.0) - lgamma(vd + 1.0) - lgamma(n0d - vd + 1.0) + vd * log_q + (n0d - vd) * log_keep;
    }
  }
  // lane l after the loop: law first_law + l's largest and total posterior weight and reference, if fast
  double own_top = 0.0, own_sum = 0.0, own_ref = 0.0, own_mass = 0.0;
  bool own_fast = false;
  for (int law = 0; law < laws; ++law) {
    const long long i = first_law + law;
    const std::int64_t begin = __shfl_sync(full_warp, own_begin, law), m = __shfl_sync(full_warp, own_end, law) - begin;
    const std::int64_t lo = __shfl_sync(full_warp, own_lo, law), vi = __shfl_sync(full_warp, own_v, law);
    const double l0 = __shfl_sync(full_warp, own_l0, law);
    const std::int64_t n0 = lo > vi ? lo : vi, first = n0 - lo, len = m - first;
    bool done = false;
    double mass = 0.0;  // sum_k w_k, when prior_log_mass is wanted
    if (__shfl_sync(full_warp, own_eligible, law)) {
      const double* w = x.weights + begin + first;
      for (int p = lane; p < len; p += 32) mass += (buf[slot(p)] = w[p]);
      if (prior_log_mass) {
        for (std::int64_t p = lane; p < first; p += 32) mass += x.weights[begin + p];
        mass = warp_sum(mass);
      }
      __syncwarp();
      const double n0d = static_cast<double>(n0), vd = static_cast<double>(vi);
      const int stretch = static_cast<int>((len + 31) / 32), k0 = lane * stretch;
      const int mine = k0 < len ? static_cast<int>(len - k0 < stretch ? len - k0 : stretch) : 0;
      const double keep = 1.0 - q;
      // the stretch's largest product w_j u_j (from logarithms where a product falls below 1e-290), so that the
      // scaling below puts the largest weight at 1 and no weight the per-entry formula keeps normal turns subnormal
      double u = 1.0, pmax = 0.0, lpmax = -INFINITY, wmax = 0.0, step = 0.0, nd = n0d + k0;
      bool ok = true;
      for (int j = 0; j < mine; ++j) {
        if (j > 0) {
          u *= (nd + 1.0) * keep / (nd + 1.0 - vd);
          nd += 1.0;
        }
        ok = ok && u >= 1e-280 && u <= 1e280;
        const double wj = buf[slot(k0 + j)], pw = wj * u;
        wmax = fmax(wmax, wj);
        pmax = fmax(pmax, pw);
        if (wj > 0.0 && pw < 1e-290) lpmax = fmax(lpmax, log(wj) + log(u));
      }
      if (mine > 0 && k0 + mine < len) {
        const double next = u * (nd + 1.0) * keep / (nd + 1.0 - vd);
        ok = ok && next >= 1e-280 && next <= 1e280;
        step = log(next);
      }
      if (__all_sync(full_warp, ok)) {
        double scan = step;  // inclusive scan of the stretches' steps
        for (int o = 1; o < 32; o *= 2) {
          const double t = __shfl_up_sync(full_warp, scan, o);
          if (lane >= o) scan += t;
        }
        const double start = l0 + (scan - step);  // log L at this stretch's first n
        const double ref = warp_max(wmax > 0.0 ? start + fmax(log(pmax), lpmax) : -INFINITY);
        if (ref != -INFINITY) {
          const double shift = start - ref;
          const bool deep = shift < detail::walk_deep;
          const double scale = exp(shift);
          double top = 0.0, sum = 0.0;
          u = 1.0;
          nd = n0d + k0;
          for (int j = 0; j < mine; ++j) {
            if (j > 0) {
              u *= (nd + 1.0) * keep / (nd + 1.0 - vd);
              nd += 1.0;
            }
            double& b = buf[slot(k0 + j)];
            const double pw = b * u;  // <= the largest product: pw * scale <= 1
            b = b > 0.0 ? (deep || pw < 1e-290 ? exp(shift + log(u) + log(b)) : pw * scale) : 0.0;
            top = fmax(top, b);
            sum += b;
          }
          top = warp_max(top);
          sum = warp_sum(sum);
          if (top >= 1e-200) {
            __syncwarp();
            double* o = out.weights + begin;
            for (std::int64_t p = lane; p < m; p += 32)
              o[p] = p < first ? 0.0 : buf[slot(static_cast<int>(p - first))] / top;
            if (lane == law) {
              own_fast = true;
              own_top = top;
              own_sum = sum;
              own_ref = ref;
            }
            done = true;
          }
        }
      }
      __syncwarp();  // buf is read again by the next law
    }
    if (!done && prior_log_mass) {  // the per-entry path: the mass read on its own
      mass = 0.0;
      for (std::int64_t p = lane; p < m; p += 32) mass += x.weights[begin + p];
      mass = warp_sum(mass);
    }
    if (lane == law) own_mass = mass;
    if (!done) condition_law(x, ThinningLogLik{v, q}, out, log_likelihood, i, lane);
  }
  if (prior_log_mass && lane < laws) prior_log_mass[own] = own_scale + log(own_mass);
  if (own_fast) {
    if (own == 0) out.offset[0] = 0;
    out.offset[own + 1] = own_end;
    out.lo[own] = own_lo;
    out.log_scale[own] = log(own_top) - log(own_sum);  // normalized
    log_likelihood[own] += own_scale + own_ref + log(own_sum);
  }
}

/// The tile a block's walks use (thinning_warps stretches of fast_length values, one pad every 16), and the
/// likelihood table's capacity in it (two arrays of doubles).
template <int fast_length>
inline constexpr int tile_doubles = thinning_warps * (fast_length + fast_length / 16);
template <int fast_length>
inline constexpr int table_capacity = tile_doubles<fast_length> / 2;

/// The table path: a block's laws all observe the same v (the usual case: one observed number for every
/// particle), so the likelihood \f$ L(n) = \binom{n}{v} q^v (1-q)^{n-v} \f$ is the same function of n for all of
/// them. The block tabulates it once over \f$ [n_{lo}, n_{hi}] \f$ (n_lo the least max(lo_i, v), n_hi the largest
/// value of the block's laws), by the per-entry formula the CPU reference uses (detail::thinning_log_mass), as
/// \f$ \ell_j = \log L(n_{lo} + j) - M \f$ and \f$ e^{\ell_j} \f$, M the table's largest log L. A warp then
/// conditions each of its laws in two coalesced passes over the weights (memory-bound, no per-value logarithm):
/// p_k = w_k e^{\ell} and its largest p*, then the posterior weights p_k / p* (times the rounded 1 / p*, at most 1;
/// formed as
/// \f$ \exp(\log w_k + \ell - \log p^*) \f$ where p_k < 1e-290 would lose digits to subnormals) with
/// \f$ \log L_i = s_i + M + \log p^* + \log \sum_k p_k / p^* \f$. A law with p* < 1e-200 (the observation in
/// its far tail), without mass, or with no value >= v takes the per-entry formula (condition_law) after the others.
/// Each half of a warp takes one law at a time (16 lanes a law: two laws share what is per law and not per
/// value, the reductions and logarithms).
template <int laws_per_warp>
__device__ void table_laws(const double* lin, const double* logl, std::int64_t n_lo, double log_top, std::int64_t vb,
                           PmfBatchView x, const std::int64_t* v, MutablePmfBatchView out, double* log_likelihood,
                           double* prior_log_mass, double q) {
  constexpr int G = 16;  // lanes a law: each half of the warp takes one of the warp's laws at a time
  const long long first_law = warp_index() * laws_per_warp;
  const int lane32 = static_cast<int>(threadIdx.x & 31), half = lane32 / G, lane = lane32 % G;
  if (first_law >= static_cast<long long>(x.count)) return;
  const int laws =
      static_cast<int>(min(static_cast<long long>(laws_per_warp), static_cast<long long>(x.count) - first_law));
  const long long own = first_law + lane32;
  double own_scale = -INFINITY, own_mass = 0.0, own_sum = 0.0, own_ref = 0.0;
  std::int64_t own_begin = 0, own_end = 0, own_lo = 0;
  bool own_fast = false, own_fallback = false;
  if (lane32 < laws) {
    own_begin = x.offset[own];
    own_end = x.offset[own + 1];
    own_lo = x.lo[own];
    own_scale = x.log_scale[own];
  }
  // round r: half h conditions law 2r + h; afterwards lane 2r + h (the law's own lane) keeps what the half found
  for (int round = 0; 2 * round < laws; ++round) {
    const int law = 2 * round + half;
    const bool valid = law < laws;
    const int from = valid ? law : 0;
    const std::int64_t begin = __shfl_sync(full_warp, own_begin, from);
    const std::int64_t lo = __shfl_sync(full_warp, own_lo, from);
    const double scale = __shfl_sync(full_warp, own_scale, from);
    const std::int64_t m64 = __shfl_sync(full_warp, own_end, from) - begin;
    // every law with mass observes vb (the block checked); one without, or with no value >= vb, is impossible here
    const bool usable = valid && lo >= 0 && scale != -INFINITY && lo + m64 - 1 >= vb && m64 <= INT_MAX;
    const int m = valid && m64 <= INT_MAX ? static_cast<int>(m64) : 0;
    // values n = lo + p >= vb are p >= skip; their table entry is p + shift
    const int skip = usable ? static_cast<int>(vb > lo ? vb - lo : 0) : m, shift = usable ? static_cast<int>(lo - n_lo) : 0;
    const double* w = x.weights + begin;
    double mass = 0.0, top = 0.0;
    for (int p = lane; p < m; p += G) {
      const double wj = w[p];
      mass += wj;
      if (p >= skip) top = fmax(top, wj * lin[p + shift]);
    }
    for (int d = G / 2; d >= 1; d /= 2) {
      mass += __shfl_xor_sync(full_warp, mass, d);
      top = fmax(top, __shfl_xor_sync(full_warp, top, d));
    }
    const bool fallback = valid && (!usable || top < 1e-200);
    const double log_p = log(top), inverse = 1.0 / top;  // one division a law, not one a weight
    double sum = 0.0;
    if (usable && !fallback) {
      double* o = out.weights + begin;
      for (int p = lane; p < m; p += G) {
        const double wj = w[p];
        double b = 0.0;
        if (p >= skip && wj > 0.0) {
          const double pw = wj * lin[p + shift];
          b = pw >= 1e-290 ? fmin(pw * inverse, 1.0) : exp(log(wj) + logl[p + shift] - log_p);
        }
        o[p] = b;
        sum += b;
      }
    }
    for (int d = G / 2; d >= 1; d /= 2) sum += __shfl_xor_sync(full_warp, sum, d);
    // to the law's own lane: lane 2r takes half 0's lane 0, lane 2r + 1 half 1's
    const int src = (lane32 & 1) * G;
    const double got_mass = __shfl_sync(full_warp, mass, src), got_sum = __shfl_sync(full_warp, sum, src);
    const double got_ref = __shfl_sync(full_warp, log_p, src);
    const bool got_fallback = __shfl_sync(full_warp, fallback, src), got_usable = __shfl_sync(full_warp, usable, src);
    if (lane32 / 2 == round && lane32 < laws) {
      own_mass = got_mass;
      own_fallback = got_fallback;
      own_fast = got_usable && !got_fallback;
      own_sum = got_sum;
      own_ref = log_top + got_ref;
    }
  }
  if (prior_log_mass && lane32 < laws) prior_log_mass[own] = own_scale + log(own_mass);
  if (own_fast) {
    if (own == 0) out.offset[0] = 0;
    out.offset[own + 1] = own_end;
    out.lo[own] = own_lo;
    out.log_scale[own] = -log(own_sum);  // normalized
    log_likelihood[own] += own_scale + own_ref + log(own_sum);
  }
  // the laws the table could not take: the per-entry formula, the whole warp on each
  for (unsigned left = __ballot_sync(full_warp, own_fallback); left != 0; left &= left - 1)
    condition_law(x, ThinningLogLik{v, q}, out, log_likelihood, first_law + (__ffs(left) - 1), lane32);
}

/// One block of thinning_warps warps for laws_per_warp x thinning_warps consecutive laws: the table path
/// (table_laws) when they all observe one v, 0 < q < 1, and their values n >= v span at most table_capacity; else
/// each warp walks its laws (walk_laws). The choice is the block's (one shared tile, either use).
template <int fast_length, int laws_per_warp>
__global__ void __launch_bounds__(32 * thinning_warps, thinning_min_blocks)
    thinning_kernel(PmfBatchView x, const std::int64_t* v, double q, double log_q, double log_keep,
                    MutablePmfBatchView out, double* log_likelihood, double* prior_log_mass) {
  __shared__ double tile[tile_doubles<fast_length>];
  __shared__ long long v_min, v_max, n_lo, n_hi, longest;
  __shared__ double warp_top[thinning_warps];
  const int t = static_cast<int>(threadIdx.x), lane = t & 31, warp = t >> 5;
  if (t == 0) {
    v_min = n_lo = LLONG_MAX;
    v_max = n_hi = LLONG_MIN;
    longest = 0;
  }
  __syncthreads();
  const long long law = static_cast<long long>(blockIdx.x) * (laws_per_warp * thinning_warps) + t;
  if (t < laws_per_warp * thinning_warps && law < static_cast<long long>(x.count) && x.log_scale[law] != -INFINITY) {
    const std::int64_t lo = x.lo[law], hi = lo + (x.offset[law + 1] - x.offset[law]) - 1, vi = v[law];
    atomicMin(&v_min, static_cast<long long>(vi));
    atomicMax(&v_max, static_cast<long long>(vi));
    atomicMax(&longest, static_cast<long long>(hi - lo + 1));
    if (hi >= vi && lo >= 0) {
      atomicMin(&n_lo, static_cast<long long>(lo > vi ? lo : vi));
      atomicMax(&n_hi, static_cast<long long>(hi));
    }
  }
  __syncthreads();
  const bool table = q > 0.0 && q < 1.0 && v_min == v_max && v_min >= 0 && n_lo <= n_hi &&
                     n_hi - n_lo < table_capacity<fast_length> && longest <= INT_MAX;  // int offsets a law
  if (!table) {
    walk_laws<fast_length, laws_per_warp>(tile + warp * (fast_length + fast_length / 16), x, v, q, log_q, log_keep,
                                          out, log_likelihood, prior_log_mass);
    return;
  }
  double* lin = tile;
  double* logl = tile + table_capacity<fast_length>;
  const int range = static_cast<int>(n_hi - n_lo + 1);
  double top = -INFINITY;
  for (int j = t; j < range; j += blockDim.x) top = fmax(top, logl[j] = detail::thinning_log_mass(n_lo + j, v_min, q));
  top = warp_max(top);
  if (lane == 0) warp_top[warp] = top;
  __syncthreads();
  top = warp_top[0];
  for (int k = 1; k < thinning_warps; ++k) top = fmax(top, warp_top[k]);
  for (int j = t; j < range; j += blockDim.x) lin[j] = exp(logl[j] -= top);
  __syncthreads();
  table_laws<laws_per_warp>(lin, logl, n_lo, top, v_min, x, v, out, log_likelihood, prior_log_mass, q);
}

int forced_laws_per_warp = 0;  // detail::set_thinning_laws_per_warp

template <int laws_per_warp>
void launch_thinning(const Laws& x, const Column<std::int64_t>& v, double q, MutablePmfBatchView out,
                     double* log_likelihood, double* mass) {
  const std::size_t per_block = laws_per_warp * thinning_warps, blocks = (x.size() + per_block - 1) / per_block;
  const double log_q = std::log(q), log_keep = std::log1p(-q);  // used only where 0 < q < 1
  if (x.max_length() <= static_cast<std::size_t>(short_fast_length))
    thinning_kernel<short_fast_length, laws_per_warp><<<static_cast<unsigned>(blocks), 32 * thinning_warps>>>(
        x.view(), v.data(), q, log_q, log_keep, out, log_likelihood, mass);
  else
    thinning_kernel<long_fast_length, laws_per_warp><<<static_cast<unsigned>(blocks), 32 * thinning_warps>>>(
        x.view(), v.data(), q, log_q, log_keep, out, log_likelihood, mass);
}

}  // namespace

Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, double q, Column<double>& log_likelihood,
                           Column<double>* prior_log_mass) {
  double* const mass = prior_log_mass ? prior_log_mass->data() : nullptr;
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), "tally::gpu::condition_on_thinning");
  if (x.size() > 0) {
    // laws a warp: 32, halved (down to fewest_laws_per_warp) while the warps would number fewer than twice the
    // device's resident warps
    const std::size_t resident = std::size_t(cuda::kernels::multiprocessors()) * thinning_min_blocks * thinning_warps;
    int laws_per_warp = forced_laws_per_warp != 0 ? forced_laws_per_warp : 32;
    while (forced_laws_per_warp == 0 && laws_per_warp > fewest_laws_per_warp &&
           (x.size() + std::size_t(laws_per_warp) - 1) / std::size_t(laws_per_warp) < 2 * resident)
      laws_per_warp /= 2;
    if (laws_per_warp == 32) launch_thinning<32>(x, v, q, out.mutable_view(), log_likelihood.data(), mass);
    else if (laws_per_warp == 16) launch_thinning<16>(x, v, q, out.mutable_view(), log_likelihood.data(), mass);
    else launch_thinning<8>(x, v, q, out.mutable_view(), log_likelihood.data(), mass);
  }
  launched();
  return out;
}

Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, const Column<double>& q,
                           Column<double>& log_likelihood) {
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), "tally::gpu::condition_on_thinning");
  condition_laws(x, ThinningLogLikEach{v.data(), q.data()}, out, log_likelihood);
  return out;
}

}  // namespace tally::gpu::population_cuda

namespace tally::gpu::detail {
void set_thinning_laws_per_warp(int laws) {
  if (laws != 0 && laws != 8 && laws != 16 && laws != 32)
    tally::detail::fail<domain_error>("tally::gpu::detail::set_thinning_laws_per_warp: ", laws,
                                      " is not 0, 8, 16 or 32");
  population_cuda::forced_laws_per_warp = laws;
}
}  // namespace tally::gpu::detail
