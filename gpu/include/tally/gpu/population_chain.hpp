// Markov steps and indexed Poisson emissions of a population's laws on K states: a hidden Markov model's algebra.
#pragma once

#include <cstdint>
#include <span>

#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

/// A rows x cols matrix of doubles, row-major, where a population lives: a K x C transition matrix, or K rates as
/// a K x 1 table. Immutable once made; particles share it (resampling never copies it).
struct Table {
  /// The rows x cols values, row-major, where the population lives.
  Column<double> values;
  /// The table's shape.
  ///@{
  std::size_t rows = 0, cols = 0;
  ///@}
  /// The same values on the host, where the table was made from host values (from_host): what checks of the table
  /// read, so that they need no copy back from the device. Empty otherwise.
  std::vector<double> host_copy;
  /// The values on the host: host_copy, or (without one) a copy back.
  std::vector<double> host_values() const { return host_copy.empty() ? values.to_host() : host_copy; }
  /// A copy of rows * cols row-major host values (tally::shape_error for another count or an empty table).
  static Table from_host(std::span<const double> row_major, std::size_t rows, std::size_t cols, Backend where);
  /// Where the values are.
  Backend where() const { return values.where(); }
};

// Like population_ops.hpp, every function runs where its operands live (the table must live there too:
// tally::shape_error otherwise). Each law's support [lo_i, lo_i + m_i) must lie within the table's K = rows
// states: tally::domain_error naming the first particle otherwise (device: a flag checked at once, or where the host next waits inside gpu::DeferChecks).
// The caller validates the numbers (MarkovStep: rows stochastic; IndexedPoisson: rates >= 0 and finite).

/// One Markov step of each law: \f$ \mu'_i(j) = \sum_k \mu_i(k)\, T_{kj} \f$ on j = 0 .. C-1 (lo 0, length C,
/// rescaled to maximum 1 with log_scale_i + log of the maximum; no mass stays no mass). Sums in increasing k.
Laws markov_step(const Laws& x, const Table& t);
/// The laws of a step from realized states: \f$ \mu'_i = T_{x_i, \cdot} \f$ (0 <= x_i < K, else domain_error).
Laws markov_rows(const Column<std::int64_t>& x, const Table& t);
/// The same with a table per set of `per` particles (per >= 1; a group's own transition matrix): t stacks the
/// sets' K x C tables, set s's rows s K .. s K + K - 1 (t.rows = sets K, sets = x.size() / per), and particle i reads
/// set i / per's: \f$ \mu'_i = T^{(\lfloor i / \mathrm{per} \rfloor)}_{x_i, \cdot} \f$. shape_error where per does not
/// divide x.size() or sets does not divide t.rows.
Laws markov_rows(const Column<std::int64_t>& x, const Table& t, std::size_t per);
/// X_i given Y_i = y_i where \f$ Y \mid X = k \sim \mathrm{Categorical}(T_{k, \cdot}) \f$:
/// \f$ w'_{i,k} \propto w_{i,k} T_{k, y_i} \f$, and \f$ \log \sum_k \mu_i(k) T_{k, y_i} \f$ added to
/// log_likelihood (-inf for y_i outside 0 .. C-1).
Laws condition_on_markov(const Laws& x, const Table& t, const Column<std::int64_t>& y, Column<double>& log_likelihood);
/// X_i given V_i = v_i where \f$ V \mid X = k \sim \mathrm{Poisson}(r_k) \f$ (rates: K x 1):
/// \f$ w'_{i,k} \propto w_{i,k}\, e^{-r_k} r_k^{v_i} / v_i! \f$, in logarithms (so tails far below the smallest
/// double stay exact), and \f$ \log \sum_k \mu_i(k) \mathrm{Pois}(v_i; r_k) \f$ added to log_likelihood.
Laws condition_on_poisson(const Laws& x, const Table& rates, const Column<std::int64_t>& v,
                          Column<double>& log_likelihood);
/// X_i given an observation whose log-likelihood given X_i = k is the same l_k in every particle (log_lik: K x 1;
/// -inf allowed): what condition_on_markov and condition_on_poisson compute for one observed value, y_i = y, with
/// l_k = log T_{k,y} or log Pois(y; r_k) tabulated once instead of per entry: \f$ w'_{i,k} \propto w_{i,k}\, e^{l_k}
/// \f$, and \f$ \log \sum_k \mu_i(k)\, e^{l_k} \f$ added to log_likelihood.
Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood);
/// The same with each set of `per` laws its own l (per >= 1; a group's own child): log_lik stacks the sets' K x 1
/// tables (sets = x.size() / per, log_lik.rows = sets K) and law i reads set i / per's. shape_error as markov_rows'.
Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood, std::size_t per);
/// condition_on_states's l_k for an observed Y = y of Markov step's table t (l_k = log T_{k,y}, -inf where y is not
/// one of its C values or T_{k,y} = 0), and for an observed V = v of indexed Poisson rates (l_k = log Pois(v; r_k)),
/// by the formulas of condition_on_markov and condition_on_poisson, placed where `where` says (the tables are read
/// on the host: made there, they cost no copy).
///@{
Table markov_state_log_likelihoods(const Table& t, std::int64_t y, Backend where);
Table poisson_state_log_likelihoods(const Table& rates, std::int64_t v, Backend where);
///@}

}  // namespace tally::gpu
