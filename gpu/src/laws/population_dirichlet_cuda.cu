// The CUDA forms of population_dirichlet: one thread per particle walking its row (K entries), the formulas of
// dirichlet_math.hpp; nothing is read back (a particle with bad parameters gets NaN where the CPU reference throws).
#include <cstdint>
#include <span>

#include "dirichlet_math.hpp"
#include "population_cuda.hpp"
#include "population_kernels.cuh"
#include "tally/gpu/population_dirichlet.hpp"

namespace tally::gpu::population_cuda {

using namespace kernels;
namespace dirichlet_math = detail::dirichlet;

Column<double> tiled(std::span<const double> row, std::size_t count) {
  const std::size_t K = row.size();
  const auto one = Column<double>::from_host(std::vector<double>(row.begin(), row.end()), Backend::cuda);
  auto out = Column<double>::allocate(Backend::cuda, count * K, "tally::gpu::Vectors::filled");
  const double* r = one.data();
  double* o = out.data();
  each(count * K, [=] __device__(long long t) { o[t] = r[static_cast<std::size_t>(t) % K]; });
  return out;
}

void add_categorical_log_mass(const Vectors& x, bool alpha, const Column<std::int64_t>& k,
                              Column<double>& log_likelihood) {
  const std::size_t K = x.dimension;
  const double* r = x.entries.data();
  const std::int64_t* kp = k.data();
  double* l = log_likelihood.data();
  each(x.size(), [=] __device__(long long i) {
    const double* ri = r + static_cast<std::size_t>(i) * K;
    const bool ok = alpha ? dirichlet_math::valid_alpha(ri, K) : dirichlet_math::valid_weights(ri, K);
    l[i] += ok ? dirichlet_math::categorical_log_mass(ri, K, kp[i]) : NAN;
  });
}

void dirichlet_update(Vectors& alpha, const Column<std::int64_t>& k) {
  const std::size_t K = alpha.dimension;
  double* r = alpha.entries.data();
  const std::int64_t* kp = k.data();
  each(alpha.size(), [=] __device__(long long i) {
    const std::int64_t c = kp[i];
    if (c >= 0 && static_cast<std::uint64_t>(c) < K) r[static_cast<std::size_t>(i) * K + static_cast<std::size_t>(c)] += 1.0;
  });
}

Laws categorical_laws(const Vectors& rows) {
  const std::size_t P = rows.size(), K = rows.dimension;
  Laws out = Laws::allocate(Backend::cuda, P, P * K, K, "tally::gpu::categorical_laws");
  MutablePmfBatchView o = out.mutable_view();
  const double* r = rows.entries.data();
  each(P, [=] __device__(long long i) {
    const double* ri = r + static_cast<std::size_t>(i) * K;
    double* w = o.weights + static_cast<std::size_t>(i) * K;
    const bool ok = dirichlet_math::valid_weights(ri, K);
    double top = 0.0;
    for (std::size_t j = 0; j < K; ++j) top = fmax(top, ri[j]);
    for (std::size_t j = 0; j < K; ++j) w[j] = ok ? ri[j] / top : NAN;
    if (i == 0) o.offset[0] = 0;
    o.offset[i + 1] = static_cast<std::int64_t>((static_cast<std::size_t>(i) + 1) * K);
    o.lo[i] = 0;
    o.log_scale[i] = ok ? log(top / dirichlet_math::row_sum(ri, K)) : NAN;
  });
  return out;
}

Vectors sample_dirichlet(const Vectors& alpha, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream) {
  const std::size_t P = alpha.size(), K = alpha.dimension;
  Vectors v;
  v.dimension = K;
  v.entries = Column<double>::allocate(Backend::cuda, P * K, "tally::gpu::sample_dirichlet");
  const double* a = alpha.entries.data();
  double* o = v.entries.data();
  each(P, [=] __device__(long long i) {
    const double* ai = a + static_cast<std::size_t>(i) * K;
    double* oi = o + static_cast<std::size_t>(i) * K;
    if (!dirichlet_math::valid_alpha(ai, K)) {
      for (std::size_t j = 0; j < K; ++j) oi[j] = NAN;
      return;
    }
    dirichlet_math::dirichlet_draw(ai, K, seed, first_stream + static_cast<std::uint64_t>(i), counter, oi);
  });
  return v;
}

Column<double> gather_rows(const Vectors& x, const Column<std::size_t>& ancestors) {
  const std::size_t K = x.dimension;
  auto out = Column<double>::allocate(Backend::cuda, ancestors.size() * K, "tally::gpu::gather");
  const double* r = x.entries.data();
  const std::size_t* ap = ancestors.data();
  double* o = out.data();
  each(ancestors.size() * K, [=] __device__(long long t) {
    const std::size_t i = static_cast<std::size_t>(t) / K, j = static_cast<std::size_t>(t) % K;
    o[t] = r[ap[i] * K + j];
  });
  return out;
}

}  // namespace tally::gpu::population_cuda
