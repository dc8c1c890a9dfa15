// The population operations of categorical counts of a Dirichlet parameter: one probability vector or Dirichlet
// parameter vector per particle, its closed-form log masses, conjugate updates, laws and draws, on the host or the
// device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// P vectors of K >= 1 entries each, where the graph keeps its state: particle i's entries at i K .. i K + K - 1 of
/// one column (row-major), a Dirichlet's parameters \f$\alpha_i\f$ or a realized probability vector \f$\pi_i\f$.
/// uniform says that every row is known to be the same (made by filled(); kept by gather(), cleared by an update):
/// then one law serves every particle. Move-only, as Column (clone() copies).
struct Vectors {
  Column<double> entries;      ///< P K entries
  std::size_t dimension = 0;   ///< K (0: no vectors)
  bool uniform = false;        ///< every row known to be the same
  /// P, the number of vectors.
  std::size_t size() const { return dimension == 0 ? 0 : entries.size() / dimension; }
  /// Whether there are none.
  bool empty() const { return entries.empty(); }
  /// Where the entries are.
  Backend where() const { return entries.where(); }
  /// count copies of row (K = row.size() >= 1: shape_error otherwise), uniform.
  static Vectors filled(std::span<const double> row, std::size_t count, Backend where);
  /// The rows of a host array of P K entries, K = dimension >= 1 (shape_error where K does not divide its size).
  static Vectors from_rows(const std::vector<double>& rows, std::size_t dimension, Backend where);
  /// A copy (Vectors are move-only, as their Column).
  Vectors clone() const { return {entries.clone(), dimension, uniform}; }
  /// The entries on the host, row-major.
  std::vector<double> to_host() const { return entries.to_host(); }
};

// Every function below runs where its operands are (Backend::cpu: loops on one core; Backend::cuda: one elementwise
// kernel on the default stream, asynchronous) and throws tally::shape_error when the operands have different
// particle counts or places. On the host, parameters are checked (tally::domain_error naming the first bad
// particle); the device reads nothing back, and a particle with bad parameters gets NaN instead. Sums over a row
// run in index order on both, so that the host and the device agree to the last bits of log and pow.

/// Categorical(pi) with pi ~ Dirichlet(alpha_i) integrated out: \f$\log P(k) = \log(\alpha_{i,k} / \sum_j
/// \alpha_{i,j})\f$ added to log_likelihood_i, -inf for k_i outside 0 .. K - 1 (alpha_{i,j} > 0 and finite).
void add_dirichlet_categorical_log_mass(const Vectors& alpha, const Column<std::int64_t>& k,
                                        Column<double>& log_likelihood);
/// Categorical(pi_i) with a known probability vector (entries >= 0, sum > 0): \f$\log(\pi_{i,k} / \sum_j
/// \pi_{i,j})\f$ added, -inf off 0 .. K - 1 or where pi_{i,k} = 0.
void add_categorical_log_mass(const Vectors& pi, const Column<std::int64_t>& k, Column<double>& log_likelihood);
/// The conjugate update of Dirichlet(alpha_i) by an observed category k_i: alpha_{i,k} += 1 in place; nothing where
/// k_i is outside 0 .. K - 1 (an impossible category, whose particle has weight 0). Clears uniform.
void dirichlet_update(Vectors& alpha, const Column<std::int64_t>& k);
/// Particle i's law on 0 .. K - 1 proportional to its row (entries >= 0, sum > 0): weights w_j = r_j / max_j r_j,
/// log_scale = log(max_j r_j / sum_j r_j). A Dirichlet's rows give the categorical's marginal law, a probability
/// vector its own.
Laws categorical_laws(const Vectors& rows);
/// One Dirichlet(alpha_i) draw per particle: \f$\pi_{i,j} = g_j / \sum_l g_l\f$ with g_j ~ Gamma(alpha_{i,j}, 1)
/// drawn by gamma_variate(alpha_{i,j}, seed ^ (0x9E3779B97F4A7C15 (j + 1)), first_stream + i, counter) (component j
/// on its own key, so that the components are independent), on the host and the device alike.
Vectors sample_dirichlet(const Vectors& alpha, std::uint64_t seed, std::uint64_t counter,
                         std::uint64_t first_stream = 0);
/// Row ancestors_i of x in row i (a resampling), each ancestor < x.size() (checked on the host); uniform kept.
Vectors gather(const Vectors& x, const Column<std::size_t>& ancestors);

}  // namespace tally::gpu
