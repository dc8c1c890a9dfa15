// The CUDA form of conditioning laws on an observed thinning: one warp per law, the likelihood walked by its exact
// ratios where that is safe, else the per-entry formula.
#include <cmath>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_math.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// log Binomial(v_i; k, q): the likelihood of an observed thinning v_i for the parent value k.
struct ThinningLogLik {
  const std::int64_t* v;
  double q;
  __device__ double operator()(long long i, std::int64_t k) const { return detail::thinning_log_mass(k, v[i], q); }
};

/// The fast path's longest run of a law's values (up to 32 a lane), held in shared memory with one pad every 16
/// values (fewer bank conflicts between lanes reading their own stretches); 4 warps a block to fit it.
inline constexpr int fast_length = 1024;
inline constexpr int thinning_warps = 4;
__device__ inline int slot(int p) { return p + p / 16; }

/// One warp per law i: the posterior of X_i given the thinning v_i ~ Binomial(X_i, q) and log L_i, as condition_law
/// (population_kernels.cuh) computes them, by a faster path where it is safe.
///
/// Fast path (0 < q < 1, the values n = lo_i + k >= v_i number at most fast_length): the likelihood
/// L(n) = C(n, v) q^v (1 - q)^(n - v) is formed once by the lgamma formula at n0 = max(lo_i, v_i) (its three lgamma
/// terms one per lane), and from there by its exact ratios L(n + 1) / L(n) = (n + 1)(1 - q) / (n + 1 - v): lane l
/// walks its stretch of ceil(len / 32) values (u_j relative to the stretch's first n), the logs of the stretches'
/// products are scanned over the warp to give each stretch's first log L. Each posterior weight is w_j u_j scaled
/// by e^{start - ref}, ref the largest product's logarithm (products below 1e-290 taken from logarithms); below
/// e^-650, or where the stretch's products are that small, a weight is formed from logarithms instead. The result is the per-entry formula's up to the roundings the
/// walks and the scan add (about 1e-12 relative at most). Ratio products that leave [1e-280, 1e280], a largest
/// weight below 1e-200 after scaling, and particles without mass take the per-entry formula.
__global__ void __launch_bounds__(32 * thinning_warps) thinning_kernel(PmfBatchView x, const std::int64_t* v, double q,
                                                                       MutablePmfBatchView out, double* log_likelihood) {
  __shared__ double tile[thinning_warps][fast_length + fast_length / 16];
  const long long i = warp_index();
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (i >= static_cast<long long>(x.count)) return;  // the whole warp
  const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin, lo = x.lo[i], vi = v[i];
  const std::int64_t n0 = lo > vi ? lo : vi, first = n0 - lo, len = m - first;
  if (q > 0.0 && q < 1.0 && vi >= 0 && lo >= 0 && len > 0 && len <= fast_length && x.log_scale[i] != -INFINITY) {
    double* buf = tile[threadIdx.x >> 5];
    const double* w = x.weights + begin + first;
    for (int p = lane; p < len; p += 32) buf[slot(p)] = w[p];
    // log L(n0): lgamma(n0 + 1) - lgamma(v + 1) - lgamma(n0 - v + 1), one term a lane, + v log q + (n0 - v) log(1 - q)
    const double n0d = static_cast<double>(n0), vd = static_cast<double>(vi);
    const double arg = lane == 0 ? n0d + 1.0 : lane == 1 ? vd + 1.0 : n0d - vd + 1.0;
    const double term = lane < 3 ? (lane == 0 ? 1.0 : -1.0) * lgamma(arg) : 0.0;
    const double l0 = warp_sum(term) + vd * log(q) + (n0d - vd) * log1p(-q);
    __syncwarp();
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
          if (lane == 0) {
            if (i == 0) out.offset[0] = 0;
            out.offset[i + 1] = x.offset[i + 1];
            out.lo[i] = lo;
            out.log_scale[i] = log(top) - log(sum);  // normalized
            log_likelihood[i] += x.log_scale[i] + ref + log(sum);
          }
          return;
        }
      }
    }
    __syncwarp();
  }
  condition_law(x, ThinningLogLik{v, q}, out, log_likelihood, i, lane);
}

}  // namespace

Laws condition_on_thinning(const Laws& x, const Column<std::int64_t>& v, double q, Column<double>& log_likelihood) {
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), "tally::gpu::condition_on_thinning");
  if (x.size() > 0) {
    const std::size_t blocks = (x.size() + thinning_warps - 1) / thinning_warps;
    thinning_kernel<<<static_cast<unsigned>(blocks), 32 * thinning_warps>>>(x.view(), v.data(), q, out.mutable_view(),
                                                                             log_likelihood.data());
  }
  launched();
  return out;
}

}  // namespace tally::gpu::population_cuda
