// The CUDA form of conditioning the sum of two count laws given by their parameters: lengths, their scan and total
// (read back), then one warp per particle walking its diagonal.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <optional>

#include "cuda_check.cuh"
#include "diagonal_math.hpp"
#include "population_cuda.hpp"
#include "length_scan.cuh"
#include "population_kernels.cuh"
#include "tally/gpu/parameter_laws.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// lengths[i] = the diagonal's length (1 where it is empty), 0 for i = count (so the scan ends with the total); bad
/// parameters (and a diagonal longer than `limit`, the room per particle a caller's bound gave) flagged in
/// r->first_bad, or in `flag` where the check is deferred (then r is not written).
template <class PX, class PY>
__global__ void diagonal_lengths_kernel(PX px, PY py, int sign, const std::int64_t* z, std::size_t count,
                                        std::int64_t* lengths, LengthReport* r, std::int64_t limit,
                                        unsigned long long* flag) {
  const long long i = thread_index();
  unsigned long long length = 0;
  if (i == static_cast<long long>(count)) {
    lengths[i] = 0;
  } else if (i < static_cast<long long>(count)) {
    const std::int64_t m = px.bad(i) || py.bad(i) ? -1 : detail::diagonal_of(px.n[i], py.n[i], sign, z[i]).length();
    if (m < 0 || m > limit) {
      atomicMin(flag != nullptr ? flag : &r->first_bad, static_cast<unsigned long long>(i));
      lengths[i] = 1;
    } else {
      lengths[i] = m > 0 ? m : 1;
    }
    length = static_cast<unsigned long long>(lengths[i]);
  }
  if (flag == nullptr) warp_fold_max(length, &r->longest);
}

inline constexpr int warps_per_block = block / 32;
/// A warp's round: 32 chunks, one per lane (law_chunk weights each, 32 law_chunk in all).
inline constexpr int round_length = 32 * chunk;

/// One warp per particle i, in two launches. Fast = true: the fast path below for every particle it serves
/// (slow[i] = 0), else slow[i] = 1 and nothing more. Fast = false, for the particles with slow[i] = 1: the diagonal in
/// rounds of 32 chunks, lane l walking chunk 32 r + l of round r (walk_law, raw weights relative to the largest log
/// mass at the chunks' first k) into shared memory, then the warp reading the round back in order for its maximum
/// and sum and writing it out coalesced; a diagonal of one round is written once, divided by the maximum, a longer
/// one raw, then divided in a second pass; a particle whose raw weights overflow is walked again with a higher
/// base. (Two kernels, so that the fast one keeps few registers.)
template <bool Fast, class PX, class PY>
__global__ void __launch_bounds__(block) diagonal_kernel(PX px, PY py, int sign, const std::int64_t* z,
                                                         const std::int64_t* offsets, std::size_t count,
                                                         MutablePmfBatchView out, double* log_likelihood,
                                                         unsigned char* slow) {
  __shared__ double tile[warps_per_block][32 * (chunk + 1)];  // lane l's chunk at l (chunk + 1): no bank conflicts
  const long long i = warp_index();
  const int lane = static_cast<int>(threadIdx.x & 31);
  if (i >= static_cast<long long>(count)) return;  // the whole warp
  if (!Fast && slow[i] == 0) return;
  double* buf = tile[threadIdx.x >> 5];
  const std::int64_t nx = px.n[i];
  const detail::Diagonal d = detail::diagonal_of(nx, py.n[i], sign, z[i]);
  double* w = out.weights + offsets[i];
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = offsets[i + 1];
  }
  // a particle flagged bad (deferred check) has room for one weight only: written as an impossible one, and the
  // check raises before anyone reads it
  if (d.empty() || offsets[i + 1] - offsets[i] != d.length()) {
    if (lane == 0) {
      w[0] = 0.0;
      out.lo[i] = detail::impossible_lo(d, nx);
      out.log_scale[i] = -INFINITY;
      log_likelihood[i] += -INFINITY;
    }
    if (Fast && lane == 0) slow[i] = 0;
    return;
  }
  const std::int64_t chunks = detail::diagonal_chunks(d), m = d.length();
  const std::int64_t rounds = (chunks + 31) / 32;
  if constexpr (Fast) {
    if (rounds > 1 || px.point(i) || py.point(i)) {
      if (lane == 0) slow[i] = 1;
      return;
    }
    // the laws' constants and the log masses at the diagonal's first k as signed lgamma terms, one lane each (the
    // lgamma formula is evaluated once per particle, its terms side by side, through one call)
    const std::int64_t y0 = sign > 0 ? z[i] - d.first : d.first - z[i];
    constexpr int ex = PX::constant_terms, ey = PY::constant_terms, tx = PX::mass_terms, ty = PY::mass_terms;
    double arg = 1.0, term_sign = 0.0;
    int group = -1;  // 0: X's constant, 1: Y's, 2: log p_X(first) less X's constant, 3: log p_Y(y0) less Y's
    if (lane < ex) group = 0, arg = px.constant_arg(i, lane, term_sign);
    else if (lane < ex + ey) group = 1, arg = py.constant_arg(i, lane - ex, term_sign);
    else if (lane < ex + ey + tx) group = 2, arg = px.mass_arg(i, d.first, lane - ex - ey, term_sign);
    else if (lane < ex + ey + tx + ty) group = 3, arg = py.mass_arg(i, y0, lane - ex - ey - tx, term_sign);
    const double term = group >= 0 ? term_sign * lgamma(arg) : 0.0;
    const double cx = warp_sum(group == 0 ? term : 0.0), cy = warp_sum(group == 1 ? term : 0.0);
    const double anchor0 =
        cx + cy + warp_sum(group >= 2 ? term : 0.0) + px.mass_rest(i, d.first) + py.mass_rest(i, y0);
    const detail::DiagonalTerms terms(px.terms(i, cx), py.terms(i, cy), z[i], sign);
    // The fast path: the diagonal's m <= 512 values split evenly over the lanes (span = ceil(m / 32) <= 16 each);
    // lane l walks its span by the ratios alone (v_j relative to its first k, one division a step), and the log of
    // its product to the next lane's first k; an exclusive scan of those logs over the lanes gives each span's
    // first log mass from anchor0 (no lgamma but the one formula). Products that leave [1e-280, 1e280] take the
    // general path below.
    const int span = static_cast<int>((m + 31) / 32);
    const std::int64_t k0 = static_cast<std::int64_t>(lane) * span;
    const int len = k0 < m ? static_cast<int>(m - k0 < span ? m - k0 : span) : 0;
    double v = 1.0, vmax = 0.0, step = 0.0;
    bool ok = true;
    double kd = static_cast<double>(d.first + k0);
    for (int j = 0; j < len; ++j) {
      if (j > 0) {
        v *= terms.ratio_one_division(kd);
        kd += 1.0;
      }
      ok = ok && v >= 1e-280 && v <= 1e280;
      buf[lane * (chunk + 1) + j] = v;
      vmax = fmax(vmax, v);
    }
    if (len > 0 && k0 + len < m) {
      const double next = v * terms.ratio_one_division(kd);
      ok = ok && next >= 1e-280 && next <= 1e280;
      step = log(next);
    }
    if (__all_sync(full_warp, ok)) {
      double scan = step;  // inclusive scan of the steps over the lanes
      for (int o = 1; o < 32; o *= 2) {
        const double t = __shfl_up_sync(full_warp, scan, o);
        if (lane >= o) scan += t;
      }
      const double start = anchor0 + (scan - step);  // log p at this lane's first k
      const double base = warp_max(len > 0 ? start + log(vmax) : -INFINITY);
      const double shift = start - base;
      const double scale = exp(shift);
      double top = 0.0, sum = 0.0;
      for (int j = 0; j < len; ++j) {
        double& b = buf[lane * (chunk + 1) + j];
        b = shift > detail::walk_deep ? scale * b : exp(shift + log(b));
        top = fmax(top, b);
        sum += b;
      }
      top = warp_max(top);
      sum = warp_sum(sum);
      __syncwarp();
      for (int p = lane; p < m; p += 32) {
        const int owner = p / span;
        w[p] = buf[owner * (chunk + 1) + (p - owner * span)] / top;
      }
      if (lane == 0) {
        out.lo[i] = d.first;
        out.log_scale[i] = log(top) - log(sum);  // normalized
        log_likelihood[i] += base + log(sum);
        slow[i] = 0;
      }
      return;
    }
    if (lane == 0) slow[i] = 1;
    return;
  } else {
    // the laws' constants once per particle (lane 0 for X, lane 1 for Y), not once per lane
    double cx = 0.0, cy = 0.0;
    if (lane == 0) cx = px.constant(i);
    if (lane == 1) cy = py.constant(i);
    cx = __shfl_sync(full_warp, cx, 0);
    cy = __shfl_sync(full_warp, cy, 1);
    const detail::DiagonalTerms terms(px.terms(i, cx), py.terms(i, cy), z[i], sign);
  // the log masses at this lane's chunks' first k in the first `cached` rounds are kept for the walks
  constexpr int cached = 4;
  double anchor[cached];
  double base = -INFINITY;
  for (std::int64_t r = 0; r < rounds; ++r) {
    const std::int64_t c = 32 * r + lane;
    const double l = c < chunks ? terms.log_mass(d.first + c * chunk) : -INFINITY;
    if (r < cached) anchor[r] = l;
    base = fmax(base, l);
  }
  base = warp_max(base);
  if (base == -INFINITY) {  // no chunk starts where both masses are positive (point masses): the largest of every k
    for (std::int64_t k = d.first + lane; k <= d.last; k += 32) base = fmax(base, terms.log_mass(k));
    base = warp_max(base);
  }
  if (base == -INFINITY) base = 0.0;  // impossible: every weight 0
  const bool single = rounds == 1;
  double mx = 0.0, sum = 0.0;
  for (;;) {
    mx = 0.0;
    sum = 0.0;
    for (std::int64_t r = 0; r < rounds; ++r) {
      const std::int64_t c = 32 * r + lane, k0 = c * chunk;
      if (c < chunks) {
        const int len = static_cast<int>(m - k0 < chunk ? m - k0 : chunk);
        const detail::AnchoredTerms<decltype(terms)> anchored{
            terms, r < cached ? d.first + k0 : std::int64_t{-1}, r < cached ? anchor[r] : 0.0};
        detail::walk_law(
            anchored, base, d.first + k0, len, [&](int j, double v) { buf[lane * (chunk + 1) + j] = v; }, INFINITY);
      }
      __syncwarp();
      const std::int64_t start = r * round_length;
      const int span = static_cast<int>(m - start < round_length ? m - start : round_length);
      for (int p = lane; p < span; p += 32) {
        const double v = buf[p + p / chunk];
        mx = fmax(mx, v);
        sum += v;
        if (!single) w[start + p] = v;
      }
      __syncwarp();
    }
    mx = warp_max(mx);  // the same in every lane: the loop ends together
    if (isfinite(mx)) break;
    base += detail::diagonal_base_step;
  }
  sum = warp_sum(sum);
  if (single) {
    for (int p = lane; p < m; p += 32) {
      const double v = buf[p + p / chunk];
      w[p] = mx > 0.0 ? v / mx : v;
    }
  } else if (mx > 0.0) {
    for (std::int64_t k = lane; k < m; k += 32) w[k] /= mx;
  }
  if (lane == 0) {
    out.lo[i] = d.first;
    const bool possible = mx > 0.0;
    out.log_scale[i] = possible ? log(mx) - log(sum) : -INFINITY;  // normalized
    log_likelihood[i] += possible ? base + log(sum) : -INFINITY;
  }
  }
}

template <class PX, class PY>
Laws condition_diagonals(PX px, PY py, int sign, const Column<std::int64_t>& z, Column<double>& log_likelihood,
                         std::optional<std::int64_t> n_max, const char* who, const char* law_x, const char* law_y) {
  const std::size_t count = z.size();
  auto lengths = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto offsets = Column<std::int64_t>::allocate(Backend::cuda, count + 1, who);
  auto report = Column<LengthReport>::allocate(Backend::cuda, 1, who);
  auto fail = [=](std::size_t i, std::int64_t nx, std::int64_t ny) {
    tally::detail::fail<domain_error>(who, ": particle ", i, " has ", law_x, " with n = ", nx, " and ", law_y,
                                      " with n = ", ny,
                                      ": n must be in 0 .. 2^32 - 1 (and within the bound its caller gave) and the "
                                      "parameters in their domain");
  };
  std::optional<detail::FirstBad> bad;
  if (n_max) bad.emplace(count);
  else init_report<<<1, 1>>>(report.data(), count);
  // a diagonal is at most min(n_x, n_y) + 1 long (diagonal_of: last - first <= n_x and <= n_y)
  const std::int64_t limit = n_max ? *n_max + 1 : INT64_MAX;
  diagonal_lengths_kernel<<<thread_blocks(count + 1), block>>>(px, py, sign, z.data(), count, lengths.data(),
                                                              report.data(), limit, bad ? bad->data() : nullptr);
  launched();
  std::size_t total = 0, longest = 0;
  if (n_max) {
    scan_lengths_on_device(lengths.data(), offsets.data(), count);
    total = count * static_cast<std::size_t>(limit);
    longest = static_cast<std::size_t>(limit);
    const std::int64_t *nx = px.n, *ny = py.n;
    bad->check([=] __device__(long long i) { return detail::CheckPayload{nx[i], ny[i]}; },
               [=](std::size_t i, long long a, long long b) { fail(i, a, b); });
  } else {
    const LengthReport r = scan_lengths(lengths.data(), offsets.data(), count, report.data());
    if (r.first_bad < count) {
      const auto i = static_cast<std::size_t>(r.first_bad);
      // which operand is bad, and its n, read back for the message (an error path: a synchronization is fine)
      std::int64_t nx = 0, ny = 0;
      TALLY_CUDA_CHECK(cudaMemcpy(&nx, px.n + i, sizeof nx, cudaMemcpyDeviceToHost));
      TALLY_CUDA_CHECK(cudaMemcpy(&ny, py.n + i, sizeof ny, cudaMemcpyDeviceToHost));
      fail(i, nx, ny);
    }
    total = static_cast<std::size_t>(r.total);
    longest = r.longest;
  }
  Laws out = Laws::allocate(Backend::cuda, count, total, std::max<std::size_t>(longest, 1), who);
  if (count == 0) return out;
  auto slow = Column<unsigned char>::allocate(Backend::cuda, count, who);
  diagonal_kernel<true><<<warp_blocks(count), block>>>(px, py, sign, z.data(), offsets.data(), count,
                                                       out.mutable_view(), log_likelihood.data(), slow.data());
  launched();
  diagonal_kernel<false><<<warp_blocks(count), block>>>(px, py, sign, z.data(), offsets.data(), count,
                                                        out.mutable_view(), log_likelihood.data(), slow.data());
  launched();
  return out;
}

}  // namespace

Laws condition_on_sum(const ParameterLaws& x, const ParameterLaws& y, int sign, const Column<std::int64_t>& z,
                      Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_sum (parameter laws)";
  const auto binomial = [](const ParameterLaws& p) { return detail::BinomialParameters{p.n.data(), p.a.data()}; };
  const auto beta_binomial = [](const ParameterLaws& p) {
    return detail::BetaBinomialParameters{p.n.data(), p.a.data(), p.b.data()};
  };
  const bool bx = x.family == ParameterFamily::binomial, by = y.family == ParameterFamily::binomial;
  constexpr const char* bin = "Binomial(n, q)";
  constexpr const char* bb = "BetaBinomial(n, a, b)";
  // the diagonals' room from the callers' bounds on n, where either is known and fits a dense law
  std::optional<std::int64_t> n_max;
  for (const auto& m : {x.n_max, y.n_max})
    if (m && *m >= 0 && *m < (std::int64_t{1} << 32)) n_max = n_max ? std::min(*n_max, *m) : *m;
  if (bx && by) return condition_diagonals(binomial(x), binomial(y), sign, z, log_likelihood, n_max, who, bin, bin);
  if (bx) return condition_diagonals(binomial(x), beta_binomial(y), sign, z, log_likelihood, n_max, who, bin, bb);
  if (by) return condition_diagonals(beta_binomial(x), binomial(y), sign, z, log_likelihood, n_max, who, bb, bin);
  return condition_diagonals(beta_binomial(x), beta_binomial(y), sign, z, log_likelihood, n_max, who, bb, bb);
}

}  // namespace tally::gpu::population_cuda
