// The FP64 tensor-core (DMMA) convolution: the convolution as a sum of block-Toeplitz matrix products.
#include <algorithm>

#include "convolve_tensor.cuh"
#include "cuda_check.cuh"

namespace tally::gpu::cuda::kernels {
namespace {

// ---- the formulation --------------------------------------------------------------------------------------------
// Group outputs and terms in blocks of 32: k = 32P + q, j = 32J + t with q, t in [0, 32). With d = P - J,
//   r_{32P+q} = sum_d sum_{t<32} X_d[q][t] y_{32(P-d)+t},      X_d[q][t] = x_{32d+q-t}  (x_i = 0 outside [0, l)),
// a sum over d of the 32 x 32 Toeplitz block X_d times the matrix of columns y_{32(P-d)+[0,32)}: a GEMM per d.
// Each product x_i y_j with i + j = k appears once (j fixes J and t, then d = P - J and i = k - j). X_d is zero
// unless 32d - 31 <= l - 1, so d runs over [0, Dn), Dn = floor((l + 30) / 32) + 1, and P - d over [0, S32),
// S32 = ceil(s / 32).
//
// ---- the warp tile ----------------------------------------------------------------------------------------------
// A warp owns the 16 output blocks P0 .. P0+15 (512 outputs) as 4 m-tiles (rows q = 8r + q') x 2 n-tiles (columns
// P = P0 + 8nt + p') of the 8 x 8 x 4 DMMA, and contracts t in 8 k-steps (t = 4s + t'). Fragments, by lane
// (g = lane / 4, c = lane % 4): A[q'][t'] with q' = g, t' = c; B[t'][p'] with t' = c, p' = g; D[q'][p'] with
// q' = g, p' = 2c + {0, 1}. The A fragment of (r, s) is X_d[8r + g][4s + c] = x_{32d + 4(2r - s) + g - c}: it depends
// on r and s only through i = 2r - s + 7 in [0, 14), so one d-step loads 14 A and 16 B fragments for 64 DMMAs.
// The warp visits only the d with P - d in [0, S32) for one of its P: d in [P0 - S32 + 1, P0 + 15].
//
// ---- the block and its shared-memory stages -------------------------------------------------------------------
// A block of NW warps owns 16 NW output blocks from Pb, and walks d in stages of DC. Stage D0 holds
//   xs[u] = x_{32 D0 - 32 + u},  u in [0, 32 (DC + 2))   (the x indices 32d + [-31, 31] of its d's), and
//   y blocks J in [J_base, J_base + 16 NW + DC - 1), J_base = Pb - D0 - DC + 1   (all P - d of the stage),
// stored k-step-major, ys[s][4 (J - J_base) + t'] = y_{32J + 4s + t'}, so a B fragment is 32 consecutive doubles
// (conflict-free); the row stride is 4 (mod 16) doubles so that the transposing stores are conflict-free too.
//
// ---- accuracy ---------------------------------------------------------------------------------------------------
// Each d-step adds 32 terms per output; after 8 d-steps (256 terms) the accumulators are added to the totals and
// restarted: the same blocking of the sum as the CPU reference, so the same error bound (256 + s/256 roundings).

// ---- tuning knobs, in one place --------------------------------------------------------------------------------
constexpr int flush_steps = 8;  // d-steps per partial sum (8 x 32 = 256 terms)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
constexpr bool paired_mma = true;  // Hopper: m16n8k4 (two m-tiles per instruction)
#else
constexpr bool paired_mma = false;  // Ampere: m8n8k4
#endif

template <int NW, int DC>
struct Stage {
  static constexpr int x_entries = 32 * (DC + 2);
  static constexpr int y_blocks = 16 * NW + DC - 1;
  static constexpr int y_stride = 4 * y_blocks + ((4 - 4 * y_blocks) % 16 + 16) % 16;  // = 4 (mod 16)
  static_assert(y_stride % 16 == 4 && y_stride >= 4 * y_blocks);
};

__device__ __forceinline__ void dmma(double& d0, double& d1, double a, double b) {
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};\n"
      : "+d"(d0), "+d"(d1)
      : "d"(a), "d"(b));
}

/// Two m-tiles (rows g and g + 8 of a 16 x 8 tile) against one B fragment.
__device__ __forceinline__ void dmma2(double& d0, double& d1, double& d2, double& d3, double a0, double a1, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
      : "d"(a0), "d"(a1), "d"(b));
#else
  dmma(d0, d1, a0, b);
  dmma(d2, d3, a1, b);
#endif
}

/// One d-step: the 8 k-steps of the 2 n-tiles against the 14 A fragments (32 m16n8k4 or 64 m8n8k4 DMMAs).
/// (Skipping an n-tile whose 8 columns are all out of range saves at most 7 of 16 + S32 column-steps per warp; on
/// an H200 the predicated form was slower at m = 256 and 1024 than doing the zero work, so it is not done.)
template <int YS>
__device__ __forceinline__ void contract(double (&acc)[4][2][2], const double (&a)[14], const double* yb) {
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const double b0 = yb[s * YS], b1 = yb[s * YS + 32];
#pragma unroll
    for (int r = 0; r < 4; r += 2) {
      if constexpr (paired_mma) {
        dmma2(acc[r][0][0], acc[r][0][1], acc[r + 1][0][0], acc[r + 1][0][1], a[2 * r - s + 7], a[2 * r - s + 9], b0);
        dmma2(acc[r][1][0], acc[r][1][1], acc[r + 1][1][0], acc[r + 1][1][1], a[2 * r - s + 7], a[2 * r - s + 9], b1);
      } else {
        dmma(acc[r][0][0], acc[r][0][1], a[2 * r - s + 7], b0);
        dmma(acc[r][1][0], acc[r][1][1], a[2 * r - s + 7], b1);
        dmma(acc[r + 1][0][0], acc[r + 1][0][1], a[2 * r - s + 9], b0);
        dmma(acc[r + 1][1][0], acc[r + 1][1][1], a[2 * r - s + 9], b1);
      }
    }
  }
}

/// Calls f(r, nt, e, k) for each accumulator (r, nt, e) of a lane (g, c) of the warp whose first output block is
/// P0, with k its output: D[q'][p'] of tile (r, nt) is output 32 (P0 + 8 nt + 2c + e) + 8r + g.
template <class F>
__device__ __forceinline__ void for_each_accumulator(long long P0, int g, int c, F f) {
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) f(r, nt, e, 32 * (P0 + 8 * nt + 2 * c + e) + 8 * r + g);
}

/// The pair with x the operand whose Toeplitz blocks the kernel forms. A warp's tile of 16 output blocks visits
/// min(Dn, S32 + 15) d-steps (Dn = floor((l + 30) / 32) + 1 of x's blocks, S32 = ceil(s / 32) of y's), of which an
/// output block uses min(Dn, S32): with x the longer law (l >= s) that is min(Dn, S32 + 15) against S32 useful, with
/// x the shorter (Dn about S32 of the other order) every visited d-step but the edges' is useful. For a law of 900
/// entries and one of 335, say, the tiles of 512 outputs do 48 d-steps with x the longer and 32 with x the shorter.
/// So the narrow layout (batches, one warp a tile) takes the shorter as x; the wide layout (one large convolution,
/// whose contraction is split over blocks along d) keeps the longer.
template <bool ShorterAsToeplitz>
__device__ __forceinline__ Pair<double> toeplitz_operands(Pair<double> p) {
  if constexpr (ShorterAsToeplitz)
    if (p.s < p.l) swap_operands(p);
  return p;
}

/// Grid (pairs, tiles, splits). Block (i, y, z) computes, for pair i, the tiles y, y + gridDim.y, ... of 16 NW
/// output blocks, its split z of the contraction. With rescale (NW = 1, gridDim.y = gridDim.z = 1: the warp sees
/// its whole pair) it then divides the pair's outputs by their maximum, re-reading only what each lane wrote.
template <int NW, int DC, bool Fused>
__global__ void __launch_bounds__(32 * NW) tensor_kernel(Pairs<double> pairs, int splits, double* partial,
                                                         long long partial_stride, Rescale rescale) {
  using S = Stage<NW, DC>;
  __shared__ double xs[S::x_entries];
  __shared__ double ys[8 * S::y_stride];
  const Pair<double> p = toeplitz_operands<NW == 1>(pair_at(pairs, blockIdx.x));
  const long long S32 = (p.s + 31) / 32, Dn = (p.l + 30) / 32 + 1;
  double* dst = (splits > 1 ? partial + blockIdx.z * partial_stride : pairs.out) + p.out;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
  double running_max = 0.0;

  for (long long Pb = static_cast<long long>(blockIdx.y) * 16 * NW; 32 * Pb < p.outputs;
       Pb += static_cast<long long>(gridDim.y) * 16 * NW) {
    // the block's d: P - d in [0, S32) for some P in [Pb, Pb + 16 NW), split evenly across blockIdx.z
    const long long lo = max(0LL, Pb - S32 + 1), hi = min(Dn, Pb + 16 * NW);
    const long long span = max(0LL, hi - lo), per = (span + splits - 1) / splits;
    const long long d_begin = lo + min(span, per * blockIdx.z), d_end = lo + min(span, per * (blockIdx.z + 1));
    const long long P0 = Pb + 16 * warp;
    const long long warp_lo = max(d_begin, P0 - S32 + 1), warp_hi = min(d_end, P0 + 16);
    double total[4][2][2], acc[4][2][2];
    for_each_accumulator(P0, g, c, [&](int r, int nt, int e, long long) { total[r][nt][e] = acc[r][nt][e] = 0.0; });
    int steps = 0;

    for (long long D0 = d_begin; D0 < d_end; D0 += DC) {
      const long long J_base = Pb - D0 - DC + 1;
      __syncthreads();  // the previous stage's reads are done
      for (int u = threadIdx.x; u < S::x_entries; u += 32 * NW) {
        const long long i = 32 * D0 - 32 + u;
        xs[u] = (i >= 0 && i < p.l) ? p.x[i] : 0.0;
      }
      for (int u = threadIdx.x; u < 32 * S::y_blocks; u += 32 * NW) {
        const int jr = u >> 5, t = u & 31;
        const long long j = 32 * (J_base + jr) + t;
        ys[(t >> 2) * S::y_stride + 4 * jr + (t & 3)] = (j >= 0 && j < p.s) ? p.y[j] : 0.0;
      }
      __syncthreads();
      const long long d0 = max(D0, warp_lo), d1 = min(D0 + DC, warp_hi);
      for (long long d = d0; d < d1; ++d) {
        // A fragment i is xs[32 (d - D0) + 32 + 4 (i - 7) + g - c]: from 1 up to 32 DC + 31, inside the window
        const double* xa = xs + 32 * (d - D0) + 4 + g - c;
        double a[14];
#pragma unroll
        for (int i = 0; i < 14; ++i) a[i] = xa[4 * i];
        // B fragment of (s, nt): ys[s][4 (P0 + 8 nt + g - d - J_base) + c]
        const double* yb = ys + 4 * (P0 + g - d - J_base) + c;
        contract<S::y_stride>(acc, a, yb);
        if (++steps == flush_steps) {
          steps = 0;
          for_each_accumulator(P0, g, c, [&](int r, int nt, int e, long long) {
            total[r][nt][e] += acc[r][nt][e];
            acc[r][nt][e] = 0.0;
          });
        }
      }
    }
    for_each_accumulator(P0, g, c, [&](int r, int nt, int e, long long k) {
      const double v = total[r][nt][e] + acc[r][nt][e];
      if (k < p.outputs) {
        dst[k] = v;
        if constexpr (Fused) running_max = fmax(running_max, v);
      }
    });
  }
  if constexpr (!Fused) return;
  // rescale after (NW = 1, one block per pair): every lane rewrites the outputs it wrote, divided by the maximum
  const double mx = warp_max(running_max);
  for (long long P0 = 0; 32 * P0 < p.outputs; P0 += 16)
    for_each_accumulator(P0, g, c, [&](int, int, int, long long k) {
      if (k < p.outputs) dst[k] = mx > 0.0 ? dst[k] / mx : 0.0;
    });
  if (lane == 0) write_rescaled_pair(rescale, blockIdx.x, p, mx);
}

/// out[k] = sum over the splits of partial[split][k], in split order (deterministic).
__global__ void add_partials(const double* __restrict__ partial, long long stride, int splits, double* __restrict__ out) {
  for (long long k = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; k < stride;
       k += static_cast<long long>(gridDim.x) * blockDim.x) {
    double sum = 0.0;
    for (int s = 0; s < splits; ++s) sum += partial[s * stride + k];
    out[k] = sum;
  }
}

template <int NW, int DC, bool Fused>
void launch(const Pairs<double>& pairs, long long max_outputs, long long total_outputs, int splits, double* partial,
            const Rescale& rescale, cudaStream_t stream) {
  const long long block_outputs = 32LL * 16 * NW;
  const long long tiles = Fused ? 1 : (max_outputs + block_outputs - 1) / block_outputs;
  if (pairs.count > 0x7fffffffLL || tiles > 65535 || splits > 65535)
    throw cuda_error("tally::gpu::cuda: convolution batch too large for one launch");
  const dim3 grid(static_cast<unsigned>(pairs.count), static_cast<unsigned>(tiles), static_cast<unsigned>(splits));
  tensor_kernel<NW, DC, Fused><<<grid, 32 * NW, 0, stream>>>(pairs, splits, partial, total_outputs, rescale);
  TALLY_CUDA_CHECK(cudaGetLastError());
  if (splits > 1) {
    const int blocks = static_cast<int>(std::min<long long>((total_outputs + 255) / 256, 4LL * multiprocessors()));
    add_partials<<<blocks, 256, 0, stream>>>(partial, total_outputs, splits, pairs.out);
    TALLY_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace

TensorPlan tensor_plan(long long m, long long n) {
  const long long outputs = m + n - 1, s32 = (std::min(m, n) + 31) / 32;
  const TensorLayout layout = outputs < 16384 ? TensorLayout::narrow : TensorLayout::wide;
  const long long block_outputs = layout == TensorLayout::wide ? 2048 : 512;
  const long long min_steps = layout == TensorLayout::wide ? 32 : flush_steps;
  const long long tiles = (outputs + block_outputs - 1) / block_outputs;
  const long long warps_per_block = layout == TensorLayout::wide ? 4 : 1;
  const long long wanted = (16LL * multiprocessors() / warps_per_block + tiles - 1) / tiles;
  return {layout, static_cast<int>(std::clamp(std::min(wanted, s32 / min_steps), 1LL, 64LL))};
}

void tensor_convolve(const Pairs<double>& pairs, long long max_outputs, long long total_outputs, TensorLayout layout,
                     int splits, double* partial, cudaStream_t stream) {
  if (layout == TensorLayout::wide)
    launch<4, 32, false>(pairs, max_outputs, total_outputs, splits, partial, Rescale{}, stream);
  else
    launch<1, 16, false>(pairs, max_outputs, total_outputs, splits, partial, Rescale{}, stream);
}

void tensor_convolve_rescaled(const Pairs<double>& pairs, const Rescale& rescale, cudaStream_t stream) {
  launch<1, 16, true>(pairs, 0, 0, 1, nullptr, rescale, stream);
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, sms = 0;
    TALLY_CUDA_CHECK(cudaGetDevice(&device));
    TALLY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  }();
  return count;
}

}  // namespace tally::gpu::cuda::kernels
