// The population operations of categorical counts of a Dirichlet parameter: the CPU reference (loops on one core,
// parameters checked) and the dispatch to CUDA by where the vectors live.
#include "tally/gpu/population_dirichlet.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "dirichlet_math.hpp"
#include "population_cuda.hpp"
#include "population_reference.hpp"

namespace tally::gpu {

namespace {

using detail::on_device;
using detail::same_shape;
namespace dirichlet_math = detail::dirichlet;

const double* row(const Vectors& x, std::size_t i) { return x.entries.host().data() + i * x.dimension; }

void check_rows(const Vectors& x, bool alpha, const char* who) {
  for (std::size_t i = 0; i < x.size(); ++i)
    if (alpha ? !dirichlet_math::valid_alpha(row(x, i), x.dimension)
              : !dirichlet_math::valid_weights(row(x, i), x.dimension))
      tally::detail::fail<domain_error>(who, ": particle ", i, "'s ", alpha ? "Dirichlet parameters" : "probabilities",
                                        alpha ? " must all be finite and > 0" : " must be finite, >= 0 and not all 0");
}

void add_log_mass(const Vectors& x, bool alpha, const Column<std::int64_t>& k, Column<double>& log_likelihood,
                  const char* who) {
  same_shape(x, k, who);
  same_shape(x, log_likelihood, who);
  if (on_device(x.where())) return population_cuda::add_categorical_log_mass(x, alpha, k, log_likelihood);
  check_rows(x, alpha, who);
  for (std::size_t i = 0; i < x.size(); ++i)
    log_likelihood.host()[i] += dirichlet_math::categorical_log_mass(row(x, i), x.dimension, k.host()[i]);
}

}  // namespace

Vectors Vectors::filled(std::span<const double> r, std::size_t count, Backend where) {
  if (r.empty()) tally::detail::fail<shape_error>("tally::gpu::Vectors::filled: a row of no entries");
  Vectors v;
  v.dimension = r.size();
  v.uniform = true;
  if (on_device(where)) {
    v.entries = population_cuda::tiled(r, count);
    return v;
  }
  std::vector<double> flat;
  flat.reserve(count * r.size());
  for (std::size_t i = 0; i < count; ++i) flat.insert(flat.end(), r.begin(), r.end());
  v.entries = Column<double>::host_values(std::move(flat));
  return v;
}

Vectors Vectors::from_rows(const std::vector<double>& rows, std::size_t dimension, Backend where) {
  if (dimension == 0 || rows.size() % dimension != 0)
    tally::detail::fail<shape_error>("tally::gpu::Vectors::from_rows: ", rows.size(), " entries are not rows of ",
                                     dimension);
  Vectors v;
  v.dimension = dimension;
  v.entries = Column<double>::from_host(rows, where);
  return v;
}

void add_dirichlet_categorical_log_mass(const Vectors& alpha, const Column<std::int64_t>& k,
                                        Column<double>& log_likelihood) {
  add_log_mass(alpha, true, k, log_likelihood, "tally::gpu::add_dirichlet_categorical_log_mass");
}

void add_categorical_log_mass(const Vectors& pi, const Column<std::int64_t>& k, Column<double>& log_likelihood) {
  add_log_mass(pi, false, k, log_likelihood, "tally::gpu::add_categorical_log_mass");
}

void dirichlet_update(Vectors& alpha, const Column<std::int64_t>& k) {
  same_shape(alpha, k, "tally::gpu::dirichlet_update");
  alpha.uniform = false;
  if (on_device(alpha.where())) return population_cuda::dirichlet_update(alpha, k);
  const std::size_t K = alpha.dimension;
  for (std::size_t i = 0; i < alpha.size(); ++i) {
    const std::int64_t c = k.host()[i];
    if (c >= 0 && static_cast<std::size_t>(c) < K) alpha.entries.host()[i * K + static_cast<std::size_t>(c)] += 1.0;
  }
}

Laws categorical_laws(const Vectors& rows) {
  constexpr const char* who = "tally::gpu::categorical_laws";
  if (on_device(rows.where())) return population_cuda::categorical_laws(rows);
  check_rows(rows, false, who);
  const std::size_t P = rows.size(), K = rows.dimension;
  Laws out = Laws::allocate(Backend::cpu, P, P * K, K, who);
  PmfBatch& b = out.host();
  for (std::size_t i = 0; i < P; ++i) {
    const double* r = row(rows, i);
    const double top = *std::max_element(r, r + K);
    for (std::size_t j = 0; j < K; ++j) b.weights[i * K + j] = r[j] / top;
    b.offset[i + 1] = static_cast<std::int64_t>((i + 1) * K);
    b.lo[i] = 0;
    b.log_scale[i] = std::log(top / dirichlet_math::row_sum(r, K));
  }
  if (P > 0) b.offset[0] = 0;
  return out;
}

Vectors sample_dirichlet(const Vectors& alpha, std::uint64_t seed, std::uint64_t counter, std::uint64_t first_stream) {
  if (on_device(alpha.where())) return population_cuda::sample_dirichlet(alpha, seed, counter, first_stream);
  check_rows(alpha, true, "tally::gpu::sample_dirichlet");
  const std::size_t P = alpha.size(), K = alpha.dimension;
  std::vector<double> out(P * K);
  for (std::size_t i = 0; i < P; ++i)
    dirichlet_math::dirichlet_draw(row(alpha, i), K, seed, first_stream + i, counter, &out[i * K]);
  Vectors v;
  v.dimension = K;
  v.entries = Column<double>::host_values(std::move(out));
  return v;
}

Vectors gather(const Vectors& x, const Column<std::size_t>& ancestors) {
  if (x.where() != ancestors.where())
    tally::detail::fail<shape_error>("tally::gpu::gather: vectors and ancestors in different memories");
  Vectors v;
  v.dimension = x.dimension;
  v.uniform = x.uniform;
  if (on_device(x.where())) {
    v.entries = population_cuda::gather_rows(x, ancestors);
    return v;
  }
  const std::size_t K = x.dimension;
  std::vector<double> out;
  out.reserve(ancestors.size() * K);
  for (std::size_t i = 0; i < ancestors.size(); ++i) {
    const std::size_t a = ancestors.host()[i];
    if (a >= x.size())
      tally::detail::fail<shape_error>("tally::gpu::gather: ancestor ", a, " of particle ", i, " is not one of the ",
                                       x.size(), " vectors");
    out.insert(out.end(), row(x, a), row(x, a) + K);
  }
  v.entries = Column<double>::host_values(std::move(out));
  return v;
}

}  // namespace tally::gpu
