// The CUDA forms of population_chain: one group of lanes per law, sized to the laws (its C entries, or its K terms,
// across the lanes; population_kernels.cuh's lanes_for).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "population_math.hpp"
#include "population_reference.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;

namespace {

/// Flags (atomicMin) the first particle whose law's positive weights leave the states 0 .. K - 1 (zero weights at
/// its window's ends, as conditioning leaves them, do not count).
__global__ void states_kernel(PmfBatchView x, std::int64_t k, unsigned long long* first_bad) {
  const long long i = thread_index();
  if (i >= static_cast<long long>(x.count)) return;
  const std::int64_t begin = x.offset[i];
  if (!detail::within_states(x.weights + begin, x.lo[i], x.offset[i + 1] - begin, k))
    atomicMin(first_bad, static_cast<unsigned long long>(i));
}

void check_states(const Laws& x, std::size_t k, const char* who) {
  FirstBad bad(x.size());
  if (x.size() > 0) states_kernel<<<thread_blocks(x.size()), block>>>(x.view(), static_cast<std::int64_t>(k), bad.data());
  launched();
  const PmfBatchView v = x.view();
  bad.check(
      [=] __device__(long long i) {
        const detail::Span s = detail::positive_span(v.weights + v.offset[i], v.lo[i], v.offset[i + 1] - v.offset[i]);
        return CheckPayload{s.first, s.last};
      },
      [who, k](std::size_t i, long long lo, long long hi) { detail::fail_states(who, i, lo, hi, k); });
}

/// Writes law i's C entries r_j (lane-strided over G lanes, in `o`) rescaled to maximum 1, with log_scale `scale` +
/// log max; a group past the last law (here false) takes part in the shuffle and writes nothing.
template <int G>
__device__ inline void finish_row(long long i, bool here, int lane, std::int64_t c, double top_local, double scale,
                                  MutablePmfBatchView out) {
  const double top = group_max<G>(top_local);
  if (!here) return;
  const bool dead = !(top > 0.0) || scale == -INFINITY;
  double* o = out.weights + i * c;
  for (std::int64_t j = lane; j < c; j += G) o[j] = dead ? 0.0 : o[j] / top;
  if (lane == 0) {
    if (i == 0) out.offset[0] = 0;
    out.offset[i + 1] = (i + 1) * c;
    out.lo[i] = 0;
    out.log_scale[i] = dead ? -INFINITY : scale + log(top);
  }
}

/// One group of G lanes per law: lane j computes \sum_k w_k T_{lo + k, j} for its columns j (the CPU loop's order in
/// k), over the entries that are states 0 .. rows - 1 (the others have weight 0: check_states).
template <int G>
__global__ void markov_step_kernel(PmfBatchView x, const double* t, std::int64_t rows, std::int64_t c,
                                   MutablePmfBatchView out) {
  const long long i = thread_index() / G;
  const int lane = static_cast<int>(threadIdx.x % G);
  const bool here = i < static_cast<long long>(x.count);
  if (G == 32 && !here) return;  // whole warps leave together
  double top = 0.0;
  if (here) {
    const std::int64_t begin = x.offset[i], m = x.offset[i + 1] - begin, lo = x.lo[i];
    const std::int64_t first = lo < 0 ? -lo : 0, end = m < rows - lo ? m : rows - lo;
    for (std::int64_t j = lane; j < c; j += G) {
      double s = 0.0;
      for (std::int64_t k = first; k < end; ++k) s += x.weights[begin + k] * t[(lo + k) * c + j];
      top = fmax(top, out.weights[i * c + j] = s);
    }
  }
  finish_row<G>(i, here, lane, c, top, here ? x.log_scale[i] : 0.0, out);
}

/// One group of G lanes per particle: row T_{x_i, .}, or a flag when x_i is not a state.
template <int G>
__global__ void markov_rows_kernel(const std::int64_t* x, std::size_t count, const double* t, std::int64_t rows,
                                   std::int64_t c, std::int64_t per, MutablePmfBatchView out,
                                   unsigned long long* first_bad) {
  const long long i = thread_index() / G;
  const int lane = static_cast<int>(threadIdx.x % G);
  const bool here = i < static_cast<long long>(count);
  if (G == 32 && !here) return;
  double top = 0.0;
  if (here) {
    const std::int64_t s = x[i];
    const bool bad = s < 0 || s >= rows;
    if (bad && lane == 0) atomicMin(first_bad, static_cast<unsigned long long>(i));
    const double* own = per > 0 ? t + i / per * rows * c : t;  // (per > 0: the set's table of `rows` rows)
    for (std::int64_t j = lane; j < c; j += G) top = fmax(top, out.weights[i * c + j] = bad ? 0.0 : own[s * c + j]);
  }
  finish_row<G>(i, here, lane, c, top, 0.0, out);
}

struct MarkovLogLik {
  const double* t;
  std::int64_t rows, cols;
  const std::int64_t* y;
  __device__ double operator()(long long i, std::int64_t k) const {
    return detail::table_log_entry(t, rows, cols, k, y[i]);
  }
};
struct PoissonLogLik {
  const double* rates;
  const std::int64_t* v;
  __device__ double operator()(long long i, std::int64_t k) const { return detail::poisson_log_mass(v[i], rates[k]); }
};

/// l_k, tabulated once for every particle (states outside 0 .. K - 1 have weight 0: check_states).
struct StateLogLik {
  const double* l;
  std::int64_t states;
  std::int64_t per = 0;  // > 0: a table of `states` entries per set of per laws, stacked
  __device__ double operator()(long long i, std::int64_t k) const {
    return k >= 0 && k < states ? l[(per > 0 ? i / per * states : 0) + k] : -INFINITY;
  }
};

template <class LogLik>
Laws condition(const Laws& x, LogLik log_lik, Column<double>& log_likelihood, const char* who) {
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.total(), x.max_length(), who);
  condition_laws(x, log_lik, out, log_likelihood);
  return out;
}

}  // namespace

Laws markov_step(const Laws& x, const Table& t) {
  constexpr const char* who = "tally::gpu::markov_step";
  check_states(x, t.rows, who);
  const auto c = static_cast<std::int64_t>(t.cols);
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.size() * t.cols, t.cols, who);
  if (x.size() > 0)
    with_lanes(t.cols, [&](auto lanes) {
      constexpr int G = decltype(lanes)::value;
      markov_step_kernel<G><<<group_blocks(x.size(), G), block>>>(x.view(), t.values.data(),
                                                                  static_cast<std::int64_t>(t.rows), c, out.mutable_view());
    });
  launched();
  return out;
}

Laws markov_rows(const Column<std::int64_t>& x, const Table& t, std::size_t per, std::size_t states) {
  constexpr const char* who = "tally::gpu::markov_rows";
  FirstBad bad(x.size());
  Laws out = Laws::allocate(Backend::cuda, x.size(), x.size() * t.cols, t.cols, who);
  if (x.size() > 0)
    with_lanes(t.cols, [&](auto lanes) {
      constexpr int G = decltype(lanes)::value;
      markov_rows_kernel<G><<<group_blocks(x.size(), G), block>>>(
          x.data(), x.size(), t.values.data(), static_cast<std::int64_t>(states), static_cast<std::int64_t>(t.cols),
          static_cast<std::int64_t>(per), out.mutable_view(), bad.data());
    });
  launched();
  const std::int64_t* xp = x.data();
  const std::size_t rows = states;
  bad.check([=] __device__(long long i) { return CheckPayload{xp[i], 0}; },
            [who, rows](std::size_t i, long long s, long long) { detail::fail_state(who, i, s, rows); });
  return out;
}

Laws condition_on_markov(const Laws& x, const Table& t, const Column<std::int64_t>& y, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_markov";
  check_states(x, t.rows, who);
  const MarkovLogLik lik{t.values.data(), static_cast<std::int64_t>(t.rows), static_cast<std::int64_t>(t.cols), y.data()};
  return condition(x, lik, log_likelihood, who);
}

Laws condition_on_poisson(const Laws& x, const Table& rates, const Column<std::int64_t>& v,
                          Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_poisson";
  check_states(x, rates.rows, who);
  return condition(x, PoissonLogLik{rates.values.data(), v.data()}, log_likelihood, who);
}

Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood, std::size_t per,
                         std::size_t states) {
  constexpr const char* who = "tally::gpu::condition_on_states";
  check_states(x, states, who);
  return condition(
      x, StateLogLik{log_lik.values.data(), static_cast<std::int64_t>(states), static_cast<std::int64_t>(per)},
      log_likelihood, who);
}

}  // namespace tally::gpu::population_cuda
