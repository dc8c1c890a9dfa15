// Markov steps and Poisson emissions of population laws: the CPU reference and the dispatch to the CUDA forms.
#include "tally/gpu/population_chain.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "population_cuda.hpp"
#include "population_math.hpp"
#include "population_reference.hpp"
#include "infinities.hpp"

namespace tally::gpu {

namespace {

using detail::on_device;
using detail::same_shape;

void same_place(const Table& t, Backend where, const char* who) {
  if (t.where() != where)
    tally::detail::fail<shape_error>(who, ": the table and the particles are in different memories (host and device)");
}

/// domain_error unless every law's positive weights lie in 0 .. K - 1 (host laws; zero weights at a window's ends,
/// as conditioning leaves them, do not count).
void check_states(const PmfBatch& x, std::size_t k, const char* who) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double* w = x.weights.data() + x.offset[i];
    const auto m = static_cast<std::int64_t>(x.length(i));
    if (!detail::within_states(w, x.lo[i], m, static_cast<std::int64_t>(k))) {
      const detail::Span s = detail::positive_span(w, x.lo[i], m);
      detail::fail_states(who, i, s.first, s.last, k);
    }
  }
}

/// The entries k of law i (window [lo, lo + m)) that are states 0 .. rows - 1: [first, end); the others have weight
/// 0 (check_states), so sums over the window may skip them.
std::pair<std::int64_t, std::int64_t> state_entries(std::int64_t lo, std::int64_t m, std::int64_t rows) {
  return {std::max<std::int64_t>(0, -lo), std::min<std::int64_t>(m, rows - lo)};
}

/// Host laws of length C each (lo 0), from an unnormalized row r_i(j) >= 0 per particle: max 1, log_scale_i plus
/// the log of the maximum; no mass (or a dead log_scale) stays no mass.
template <class Row>
Laws rows_to_laws(std::size_t count, std::size_t c, Row row, const char* who) {
  Laws out = Laws::allocate(Backend::cpu, count, count * c, c, who);
  PmfBatch& b = out.host();
  std::vector<double> r(c);
  for (std::size_t i = 0; i < count; ++i) {
    const double scale = row(i, r);
    const double top = *std::max_element(r.begin(), r.end());
    b.offset[i + 1] = static_cast<std::int64_t>((i + 1) * c);
    b.lo[i] = 0;
    const bool dead = !(top > 0.0) || scale == neg_inf;
    for (std::size_t j = 0; j < c; ++j) b.weights[i * c + j] = dead ? 0.0 : r[j] / top;
    b.log_scale[i] = dead ? neg_inf : scale + std::log(top);
  }
  return out;
}

/// The rows of each set's table where a table of `rows` rows stacks one per set of `per` of `count` particles (per 0:
/// one table, all its rows); shape_error where the sets do not divide the particles or the rows.
std::size_t set_rows(std::size_t count, std::size_t rows, std::size_t per, const char* who) {
  if (per == 0 || count == 0) return rows;
  const std::size_t sets = count / per;
  if (count % per != 0 || sets == 0 || rows % sets != 0)
    tally::detail::fail<shape_error>(who, ": a table per set of ", per, " of ", count, " particles cannot stack ", rows,
                                     " rows");
  return rows / sets;
}

}  // namespace

Table Table::from_host(std::span<const double> row_major, std::size_t rows, std::size_t cols, Backend where) {
  if (rows == 0 || cols == 0 || row_major.size() != rows * cols)
    tally::detail::fail<shape_error>("tally::gpu::Table::from_host: ", row_major.size(), " values for a ", rows, " x ",
                                     cols, " table");
  Table t{Column<double>::from_host(std::vector<double>(row_major.begin(), row_major.end()), where), rows, cols, {}};
  if (where != Backend::cpu) t.host_copy.assign(row_major.begin(), row_major.end());
  return t;
}

Laws markov_step(const Laws& x, const Table& t) {
  constexpr const char* who = "tally::gpu::markov_step";
  same_place(t, x.where(), who);
  if (on_device(x.where())) return population_cuda::markov_step(x, t);
  const PmfBatch& a = x.host();
  check_states(a, t.rows, who);
  const std::vector<double>& tv = t.values.host();
  return rows_to_laws(
      a.size(), t.cols,
      [&](std::size_t i, std::vector<double>& r) {
        const auto begin = a.offset[i], lo = a.lo[i];
        const auto [first, end] =
            state_entries(lo, static_cast<std::int64_t>(a.length(i)), static_cast<std::int64_t>(t.rows));
        for (std::size_t j = 0; j < t.cols; ++j) {
          double s = 0.0;  // \sum_k w_k T_{lo + k, j}, in increasing k (as the device sums)
          for (std::int64_t k = first; k < end; ++k)
            s += a.weights[static_cast<std::size_t>(begin + k)] * tv[static_cast<std::size_t>(lo + k) * t.cols + j];
          r[j] = s;
        }
        return a.log_scale[i];
      },
      who);
}

Laws markov_rows(const Column<std::int64_t>& x, const Table& t) { return markov_rows(x, t, 0); }

Laws markov_rows(const Column<std::int64_t>& x, const Table& t, std::size_t per) {
  constexpr const char* who = "tally::gpu::markov_rows";
  same_place(t, x.where(), who);
  const std::size_t k = set_rows(x.size(), t.rows, per, who);
  if (on_device(x.where())) return population_cuda::markov_rows(x, t, per, k);
  const std::vector<std::int64_t>& s = x.host();
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] < 0 || s[i] >= static_cast<std::int64_t>(k)) detail::fail_state(who, i, s[i], k);
  const std::vector<double>& tv = t.values.host();
  return rows_to_laws(
      s.size(), t.cols,
      [&](std::size_t i, std::vector<double>& r) {
        const std::size_t row = (per > 0 ? i / per * k : 0) + static_cast<std::size_t>(s[i]);
        std::copy_n(tv.begin() + static_cast<std::ptrdiff_t>(row * t.cols), t.cols, r.begin());
        return 0.0;
      },
      who);
}

Laws condition_on_markov(const Laws& x, const Table& t, const Column<std::int64_t>& y, Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_markov";
  same_shape(x, y, who);
  same_shape(x, log_likelihood, who);
  same_place(t, x.where(), who);
  if (on_device(x.where())) return population_cuda::condition_on_markov(x, t, y, log_likelihood);
  check_states(x.host(), t.rows, who);
  const double* tv = t.values.host().data();
  const auto rows = static_cast<std::int64_t>(t.rows), cols = static_cast<std::int64_t>(t.cols);
  const std::vector<std::int64_t>& observed = y.host();
  return detail::condition_by(
      x, [&](std::size_t i, std::int64_t k) { return detail::table_log_entry(tv, rows, cols, k, observed[i]); },
      log_likelihood, who);
}

Laws condition_on_poisson(const Laws& x, const Table& rates, const Column<std::int64_t>& v,
                          Column<double>& log_likelihood) {
  constexpr const char* who = "tally::gpu::condition_on_poisson";
  same_shape(x, v, who);
  same_shape(x, log_likelihood, who);
  same_place(rates, x.where(), who);
  if (rates.cols != 1) tally::detail::fail<shape_error>(who, ": rates must be a K x 1 table, not ", rates.rows, " x ", rates.cols);
  if (on_device(x.where())) return population_cuda::condition_on_poisson(x, rates, v, log_likelihood);
  check_states(x.host(), rates.rows, who);
  const std::vector<double>& r = rates.values.host();
  const std::vector<std::int64_t>& observed = v.host();
  return detail::condition_by(
      x, [&](std::size_t i, std::int64_t k) { return detail::poisson_log_mass(observed[i], r[std::size_t(k)]); },
      log_likelihood, who);
}

Table markov_state_log_likelihoods(const Table& t, std::int64_t y, Backend where) {
  const std::vector<double> tv = t.host_values();
  const auto rows = static_cast<std::int64_t>(t.rows), cols = static_cast<std::int64_t>(t.cols);
  std::vector<double> l(t.rows);
  for (std::int64_t k = 0; k < rows; ++k) l[std::size_t(k)] = detail::table_log_entry(tv.data(), rows, cols, k, y);
  return Table::from_host(l, t.rows, 1, where);
}

Table poisson_state_log_likelihoods(const Table& rates, std::int64_t v, Backend where) {
  const std::vector<double> r = rates.host_values();
  std::vector<double> l(r.size());
  for (std::size_t k = 0; k < r.size(); ++k) l[k] = detail::poisson_log_mass(v, r[k]);
  return Table::from_host(l, r.size(), 1, where);
}

Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood) {
  return condition_on_states(x, log_lik, log_likelihood, 0);
}

Laws condition_on_states(const Laws& x, const Table& log_lik, Column<double>& log_likelihood, std::size_t per) {
  constexpr const char* who = "tally::gpu::condition_on_states";
  same_shape(x, log_likelihood, who);
  same_place(log_lik, x.where(), who);
  if (log_lik.cols != 1)
    tally::detail::fail<shape_error>(who, ": the log-likelihoods must be a K x 1 table, not ", log_lik.rows, " x ", log_lik.cols);
  const std::size_t states = set_rows(x.size(), log_lik.rows, per, who);
  if (on_device(x.where())) return population_cuda::condition_on_states(x, log_lik, log_likelihood, per, states);
  check_states(x.host(), states, who);
  const std::vector<double>& l = log_lik.values.host();
  return detail::condition_by(
      x, [&](std::size_t i, std::int64_t k) { return l[(per > 0 ? i / per * states : 0) + std::size_t(k)]; },
      log_likelihood, who);
}

}  // namespace tally::gpu
