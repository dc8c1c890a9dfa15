// Markov steps and Poisson emissions of population laws: the CPU reference against the one-law algebra
// (marginal and condition of child_laws / condition.hpp), errors, and the device against the host.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_chain.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_population_chain {

using namespace tally;
using gpu::Backend;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::size_t K = 4, C = 5;  // a K x C transition (C > K: y on more values than x; fine for one step)

/// A random row-stochastic K x C matrix, some entries exactly 0.
Eigen::MatrixXd random_transition(std::mt19937_64& gen, std::size_t rows, std::size_t cols) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd t(rows, cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t(r, c) = u(gen) < 0.2 ? 0.0 : u(gen);
    t(r, std::size_t(gen() % cols)) += 0.5;  // no zero row
    t.row(r) /= t.row(r).sum();
  }
  return t;
}

std::vector<double> row_major(const Eigen::MatrixXd& t) {
  std::vector<double> v;
  for (Eigen::Index r = 0; r < t.rows(); ++r)
    for (Eigen::Index c = 0; c < t.cols(); ++c) v.push_back(t(r, c));
  return v;
}

/// P random laws inside 0 .. K - 1: random lo and length, weights with zeros, log-scales in [-5, 5]; every 7th
/// particle dead (no mass); every 5th with zero weights past the states at its window's ends (as conditioning leaves
/// them on the device: positive weights only count).
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t p) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < p; ++i) {
    auto lo = static_cast<std::int64_t>(gen() % K);
    const std::size_t m = 1 + gen() % (K - std::size_t(lo));
    std::vector<double> w(m);
    for (double& x : w) x = u(gen) < 0.25 ? 0.0 : u(gen);
    w[gen() % m] = 1.0;
    if (i % 5 == 1) {
      const std::size_t before = 1 + gen() % 3, after = gen() % 3;
      w.insert(w.begin(), before, 0.0);
      w.insert(w.end(), after, 0.0);
      lo -= static_cast<std::int64_t>(before);
    }
    b.push_back(w, lo, i % 7 == 3 ? -inf : 10.0 * u(gen) - 5.0);
  }
  return b;
}

/// Law i of b made positive on its whole window (so that moving the window moves its support).
void fill_positive(gpu::PmfBatch& b, std::size_t i) {
  for (std::size_t k = 0; k < b.length(i); ++k) b.weights[std::size_t(b.offset[i]) + k] = 1.0;
}

Pmf law(const gpu::PmfBatch& b, std::size_t i) {
  const auto w = b[i];
  return Pmf(b.lo[i], Eigen::Map<const Eigen::VectorXd>(w.data(), Eigen::Index(w.size())), b.log_scale[i]);
}

/// log mu_i(k) of a batch law (-inf off its support or at weight 0).
double log_at(const gpu::PmfBatch& b, std::size_t i, std::int64_t k) {
  const std::int64_t j = k - b.lo[i];
  if (j < 0 || j >= std::int64_t(b.length(i))) return -inf;
  const double w = b.weights[std::size_t(b.offset[i] + j)];
  return w > 0.0 ? std::log(w) + b.log_scale[i] : -inf;
}

bool close(double a, double b, double tol) {
  if (a == b) return true;  // both -inf included
  return std::isfinite(a) && std::isfinite(b) && std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

/// The laws and the two columns of log-likelihoods (Markov, Poisson) one backend's operations gave.
using ChainRun = std::tuple<std::vector<gpu::PmfBatch>, std::vector<double>, std::vector<double>>;

/// The device's run against the host's: the same shapes, weights within 1e-13, log-scales and log-likelihoods
/// within 1e-12 relative.
void require_same_runs(const ChainRun& host_run, const ChainRun& device_run) {
  const auto& [host, host_m, host_p] = host_run;
  const auto& [device, device_m, device_p] = device_run;
  const std::size_t P = host_m.size();
  REQUIRE(host.size() == device.size());
  for (std::size_t op = 0; op < host.size(); ++op) {
    INFO("operation " << op);
    REQUIRE(host[op].offset == device[op].offset);
    REQUIRE(host[op].lo == device[op].lo);
    for (std::size_t k = 0; k < host[op].weights.size(); ++k) REQUIRE(std::abs(host[op].weights[k] - device[op].weights[k]) <= 1e-13);
    for (std::size_t i = 0; i < host[op].size(); ++i) REQUIRE(close(host[op].log_scale[i], device[op].log_scale[i], 1e-12));
  }
  for (std::size_t i = 0; i < P; ++i) {
    INFO("particle " << i);
    REQUIRE(close(host_m[i], device_m[i], 1e-12));
    REQUIRE(close(host_p[i], device_p[i], 1e-12));
  }
}

/// The chain's operations on the laws x where `where` says: a Markov step (table t), rows of realized states s,
/// conditionings on Markov children y and Poisson children v (rates), and with `tabulated` the same for one observed
/// value for all (y_0, v_0) by the likelihood of each state.
ChainRun run_chain(const gpu::PmfBatch& x, const Eigen::MatrixXd& t, const std::vector<double>& rates,
                   const std::vector<std::int64_t>& s, const std::vector<std::int64_t>& y,
                   const std::vector<std::int64_t>& v, Backend where, bool tabulated) {
  const std::size_t P = x.size(), rows = static_cast<std::size_t>(t.rows()), cols = static_cast<std::size_t>(t.cols());
  const gpu::Laws laws = gpu::Laws::from_host(x, where);
  const gpu::Table table = gpu::Table::from_host(row_major(t), rows, cols, where);
  const gpu::Table rate_table = gpu::Table::from_host(rates, rates.size(), 1, where);
  auto ll_m = gpu::filled(0.0, P, where), ll_p = gpu::filled(-1.0, P, where);
  std::vector<gpu::PmfBatch> out;
  out.push_back(gpu::markov_step(laws, table).to_host());
  out.push_back(gpu::markov_rows(gpu::Column<std::int64_t>::from_host(s, where), table).to_host());
  out.push_back(gpu::condition_on_markov(laws, table, gpu::Column<std::int64_t>::from_host(y, where), ll_m).to_host());
  out.push_back(gpu::condition_on_poisson(laws, rate_table, gpu::Column<std::int64_t>::from_host(v, where), ll_p).to_host());
  if (tabulated) {
    const gpu::Table host_table = gpu::Table::from_host(row_major(t), rows, cols, Backend::cpu);
    const gpu::Table host_rates = gpu::Table::from_host(rates, rates.size(), 1, Backend::cpu);
    out.push_back(gpu::condition_on_states(laws, gpu::markov_state_log_likelihoods(host_table, y[0], where), ll_m).to_host());
    out.push_back(gpu::condition_on_states(laws, gpu::poisson_state_log_likelihoods(host_rates, v[0], where), ll_p).to_host());
  }
  return ChainRun(out, ll_m.to_host(), ll_p.to_host());
}

/// Law i of `got` equals `want` (log masses within tol, the same support of positive mass).
void check_law(const gpu::PmfBatch& got, std::size_t i, const Pmf& want, std::int64_t lo, std::int64_t hi, double tol) {
  for (std::int64_t k = lo; k <= hi; ++k) {
    const double g = log_at(got, i, k), w = log_pdf(want, k);
    INFO("value " << k << ": " << g << " against " << w);
    REQUIRE(close(g, w, tol));
  }
}

}  // namespace

TEST_CASE("population Markov steps and emissions match the one-law algebra", "[population]") {
  std::mt19937_64 gen(20261121);
  const std::size_t P = 200;
  const gpu::PmfBatch x = random_laws(gen, P);
  const Eigen::MatrixXd t = random_transition(gen, K, C);
  const Eigen::VectorXd rates = (Eigen::VectorXd(K) << 0.0, 1.5, 40.0, 900.0).finished();  // a point mass at 0 too
  const gpu::Laws laws = gpu::Laws::from_host(x, Backend::cpu);
  const gpu::Table table = gpu::Table::from_host(row_major(t), K, C, Backend::cpu);
  const gpu::Table rate_table = gpu::Table::from_host(std::vector<double>(rates.data(), rates.data() + K), K, 1, Backend::cpu);

  SECTION("one step: mu^T T") {
    const gpu::PmfBatch y = gpu::markov_step(laws, table).to_host();
    REQUIRE(y.size() == P);
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i);
      if (x.log_scale[i] == -inf) {
        CHECK(y.log_scale[i] == -inf);
        continue;
      }
      check_law(y, i, marginal(law(x, i), MarkovStep(t)), -1, std::int64_t(C), 1e-13);
    }
  }
  SECTION("rows of realized states") {
    std::vector<std::int64_t> s(P);
    for (auto& v : s) v = std::int64_t(gen() % K);
    const gpu::PmfBatch y = gpu::markov_rows(gpu::Column<std::int64_t>::host_values(s), table).to_host();
    for (std::size_t i = 0; i < P; ++i)
      for (std::size_t j = 0; j < C; ++j) {
        INFO("particle " << i << ", column " << j);
        REQUIRE(close(log_at(y, i, std::int64_t(j)), t(s[i], Eigen::Index(j)) > 0 ? std::log(t(s[i], Eigen::Index(j))) : -inf, 1e-14));
      }
  }
  SECTION("conditioned on a Markov child and on a Poisson emission") {
    std::vector<std::int64_t> y(P), v(P);
    for (std::size_t i = 0; i < P; ++i) {
      y[i] = std::int64_t(gen() % (C + 1)) - (i % 11 == 0 ? 1 : 0);  // some off the table: impossible
      v[i] = std::int64_t(gen() % 60) + (i % 13 == 0 ? 800 : 0);      // far tails
    }
    auto ll_markov = gpu::filled(0.25, P, Backend::cpu), ll_poisson = gpu::filled(0.0, P, Backend::cpu);
    const gpu::PmfBatch a =
        gpu::condition_on_markov(laws, table, gpu::Column<std::int64_t>::host_values(y), ll_markov).to_host();
    const gpu::PmfBatch b =
        gpu::condition_on_poisson(laws, rate_table, gpu::Column<std::int64_t>::host_values(v), ll_poisson).to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i << ", y " << y[i] << ", v " << v[i]);
      if (x.log_scale[i] == -inf) {  // a dead particle stays dead
        CHECK(ll_markov.host()[i] == -inf);
        CHECK(ll_poisson.host()[i] == -inf);
        CHECK(a.log_scale[i] == -inf);
        CHECK(b.log_scale[i] == -inf);
        continue;
      }
      const Conditioned cm = condition(law(x, i), MarkovStep(t), y[i]);
      const Conditioned cp = condition(law(x, i), IndexedPoisson(rates), v[i]);
      REQUIRE(close(ll_markov.host()[i], cm.log_likelihood == -inf ? -inf : 0.25 + cm.log_likelihood, 1e-12));
      REQUIRE(close(ll_poisson.host()[i], cp.log_likelihood, 1e-12));
      if (cm.posterior) check_law(a, i, *cm.posterior, -1, std::int64_t(K), 1e-12);
      else CHECK(a.log_scale[i] == x.log_scale[i]);  // impossible: the law stays as it was
      // the Poisson posterior in long double logarithms (the one-law posterior flushes masses below about
      // 1e-300 relative to its largest to zero; the population keeps them)
      std::vector<long double> post(K, -HUGE_VALL);
      long double top = -HUGE_VALL, sum = 0;
      for (std::size_t k = 0; k < K; ++k) {
        const double lk = log_at(x, i, std::int64_t(k));
        if (lk == -inf) continue;
        const long double r = rates[Eigen::Index(k)], vv = v[i];
        post[k] = lk + (r == 0 ? (v[i] == 0 ? 0.0L : -HUGE_VALL) : vv * std::log(r) - r - std::lgamma(vv + 1));
        top = std::max(top, post[k]);
      }
      if (top == -HUGE_VALL) {  // impossible: -inf, and the law stays as it was
        CHECK(ll_poisson.host()[i] == -inf);
        CHECK(b.log_scale[i] == x.log_scale[i]);
        continue;
      }
      for (std::size_t k = 0; k < K; ++k) sum += std::exp(post[k] - top);
      for (std::size_t k = 0; k < K; ++k) {
        const double want = post[k] == -HUGE_VALL ? -inf : double(post[k] - top - std::log(sum));
        INFO("state " << k << ": " << log_at(b, i, std::int64_t(k)) << " against " << want);
        if (want < -708.0) {  // below the normal doubles relative to the largest: subnormal or zero weights
          REQUIRE(log_at(b, i, std::int64_t(k)) < -700.0);
          continue;
        }
        REQUIRE(close(log_at(b, i, std::int64_t(k)), want, 1e-12));
      }
      INFO("log-likelihood " << ll_poisson.host()[i] << " against " << double(top + std::log(sum)));
      REQUIRE(close(ll_poisson.host()[i], double(top + std::log(sum)), 1e-12));
    }
  }
  SECTION("errors name the particle and the states") {
    gpu::PmfBatch wide = x;
    fill_positive(wide, 5);
    wide.lo[5] = std::int64_t(K) - 1;  // law 5 now reaches past state K - 1 (its length is >= 1)
    if (wide.length(5) == 1) wide.lo[5] = -1;
    const gpu::Laws bad = gpu::Laws::from_host(wide, Backend::cpu);
    CHECK_THROWS_WITH(gpu::markov_step(bad, table), Catch::Contains("particle 5") && Catch::Contains("states"));
    auto ll = gpu::filled(0.0, P, Backend::cpu);
    const auto zeros = gpu::filled(std::int64_t{0}, P, Backend::cpu);
    CHECK_THROWS_AS(gpu::condition_on_markov(bad, table, zeros, ll), tally::domain_error);
    CHECK_THROWS_AS(gpu::condition_on_poisson(bad, rate_table, zeros, ll), tally::domain_error);
    std::vector<std::int64_t> s(P, 1);
    s[9] = std::int64_t(K);
    CHECK_THROWS_WITH(gpu::markov_rows(gpu::Column<std::int64_t>::host_values(s), table),
                      Catch::Contains("particle 9") && Catch::Contains("state 4"));
    CHECK_THROWS_AS(gpu::condition_on_poisson(laws, table, zeros, ll), tally::shape_error);  // rates not K x 1
    CHECK_THROWS_AS(gpu::Table::from_host(std::vector<double>(3, 0.5), 2, 2, Backend::cpu), tally::shape_error);
    CHECK_THROWS_AS(gpu::condition_on_markov(laws, table, gpu::filled(std::int64_t{0}, P - 1, Backend::cpu), ll),
                    tally::shape_error);
  }
}

TEST_CASE("population Markov steps and emissions on the device match the host", "[population][device]") {
  if (tally::test::skip_without_device()) return;
  std::random_device seed_source;  // fresh inputs each run; the seed is printed on failure
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const std::size_t P = 5000;
  const gpu::PmfBatch x = random_laws(gen, P);
  const Eigen::MatrixXd t = random_transition(gen, K, C);
  const std::vector<double> rates{0.0, 3.0, 25.0, 400.0};
  std::vector<std::int64_t> s(P), y(P), v(P);
  for (std::size_t i = 0; i < P; ++i) {
    s[i] = std::int64_t(gen() % K);
    y[i] = std::int64_t(gen() % (C + 1)) - 1;
    v[i] = std::int64_t(gen() % 500);
  }
  require_same_runs(run_chain(x, t, rates, s, y, v, Backend::cpu, false), run_chain(x, t, rates, s, y, v, Backend::cuda, false));
  gpu::PmfBatch wide = x;  // the device's errors: the same as the host's
  fill_positive(wide, 17);
  wide.lo[17] = -1;
  CHECK_THROWS_WITH(gpu::markov_step(gpu::Laws::from_host(wide, Backend::cuda), gpu::Table::from_host(row_major(t), K, C, Backend::cuda)),
                    Catch::Contains("particle 17"));
  s[123] = -2;
  CHECK_THROWS_WITH(gpu::markov_rows(gpu::Column<std::int64_t>::from_host(s, Backend::cuda),
                                     gpu::Table::from_host(row_major(t), K, C, Backend::cuda)),
                    Catch::Contains("particle 123"));
  CHECK_THROWS_AS(gpu::markov_step(gpu::Laws::from_host(x, Backend::cuda), gpu::Table::from_host(row_major(t), K, C, Backend::cpu)),
                  tally::shape_error);
}

TEST_CASE("population laws of a few entries (a group of lanes each on the device) match the host", "[population][device]") {
  if (tally::test::skip_without_device()) return;
  std::random_device seed_source;
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  constexpr std::size_t states = 40, P = 3001;  // an odd count: the last warp's groups past the last law
  // laws of 1 .. L entries and transitions of C columns: 1 to 32 lanes per law, and a warp per law past 32
  for (const auto& shape : {std::pair<std::size_t, std::size_t>{1, 1}, {2, 2}, {3, 3}, {4, 5}, {8, 9}, {16, 17},
                             {32, 33}}) {
    const std::size_t L = shape.first, C2 = shape.second;
    INFO("laws of at most " << L << " entries, " << C2 << " columns");
    gpu::PmfBatch x;
    std::vector<std::int64_t> s(P), y(P), v(P);
    for (std::size_t i = 0; i < P; ++i) {
      const std::size_t m = 1 + gen() % L;
      const auto lo = static_cast<std::int64_t>(gen() % (states - m + 1));
      std::vector<double> w(m);
      for (double& e : w) e = u(gen) < 0.25 ? 0.0 : u(gen);
      w[gen() % m] = 1.0;
      x.push_back(w, lo, i % 7 == 3 ? -inf : 10.0 * u(gen) - 5.0);
      s[i] = std::int64_t(gen() % states);
      y[i] = std::int64_t(gen() % C2);
      v[i] = std::int64_t(gen() % 60);
    }
    const Eigen::MatrixXd t = random_transition(gen, states, C2);
    std::vector<double> rates(states);
    for (double& r : rates) r = 40.0 * u(gen);
    require_same_runs(run_chain(x, t, rates, s, y, v, Backend::cpu, true), run_chain(x, t, rates, s, y, v, Backend::cuda, true));
  }
}

TEST_CASE("population laws given one observed value for all: the tabulated likelihoods of each state", "[population]") {
  std::random_device seed_source;
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const std::size_t P = 400;
  const gpu::PmfBatch x = random_laws(gen, P);
  const gpu::Laws laws = gpu::Laws::from_host(x, Backend::cpu);
  const gpu::Table table = gpu::Table::from_host(row_major(random_transition(gen, K, C)), K, C, Backend::cpu);
  const gpu::Table rates = gpu::Table::from_host(std::vector<double>{0.0, 3.0, 25.0, 400.0}, K, 1, Backend::cpu);
  for (const std::int64_t y : {-1, 0, 2, 4, 5, 31}) {  // off the table's columns too (an impossible observation)
    INFO("y = " << y);
    const std::vector<std::int64_t> ys(P, y);
    auto ll_each = gpu::filled(0.5, P, Backend::cpu), ll_one = gpu::filled(0.5, P, Backend::cpu);
    const gpu::PmfBatch each = gpu::condition_on_markov(laws, table, gpu::Column<std::int64_t>::host_values(ys), ll_each).to_host();
    const gpu::PmfBatch one =
        gpu::condition_on_states(laws, gpu::markov_state_log_likelihoods(table, y, Backend::cpu), ll_one).to_host();
    CHECK(each.weights == one.weights);  // the same formula, the same order
    CHECK(each.log_scale == one.log_scale);
    CHECK(ll_each.to_host() == ll_one.to_host());
    auto pl_each = gpu::filled(0.0, P, Backend::cpu), pl_one = gpu::filled(0.0, P, Backend::cpu);
    const gpu::PmfBatch p_each =
        gpu::condition_on_poisson(laws, rates, gpu::Column<std::int64_t>::host_values(ys), pl_each).to_host();
    const gpu::PmfBatch p_one =
        gpu::condition_on_states(laws, gpu::poisson_state_log_likelihoods(rates, y, Backend::cpu), pl_one).to_host();
    CHECK(p_each.weights == p_one.weights);
    CHECK(pl_each.to_host() == pl_one.to_host());
  }
  // the table's errors: not K x 1, or states outside it
  auto ll = gpu::filled(0.0, P, Backend::cpu);
  CHECK_THROWS_AS(gpu::condition_on_states(laws, table, ll), tally::shape_error);
  const gpu::Table two = gpu::Table::from_host(std::vector<double>{0.0, -1.0}, 2, 1, Backend::cpu);
  CHECK_THROWS_AS(gpu::condition_on_states(laws, two, ll), tally::domain_error);
}

TEST_CASE("Markov rows and tabulated likelihoods with a table per set of particles: each set's own, on the host and "
          "the device",
          "[population]") {
  std::random_device seed_source;
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const bool device = gpu::cuda_available();
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t sets = 1 + gen() % 7, per = 1 + gen() % 60, P = sets * per;
    INFO(sets << " sets of " << per);
    std::vector<gpu::Table> tables, logliks;
    std::vector<double> stacked_t, stacked_l;
    const std::int64_t y = std::int64_t(gen() % (C + 1));  // C: off the columns, an impossible observation
    for (std::size_t s = 0; s < sets; ++s) {
      const std::vector<double> t = row_major(random_transition(gen, K, C));
      stacked_t.insert(stacked_t.end(), t.begin(), t.end());
      tables.push_back(gpu::Table::from_host(t, K, C, Backend::cpu));
      logliks.push_back(gpu::markov_state_log_likelihoods(tables.back(), y, Backend::cpu));
      const std::vector<double>& l = logliks.back().values.host();
      stacked_l.insert(stacked_l.end(), l.begin(), l.end());
    }
    std::vector<std::int64_t> states(P);
    for (auto& v : states) v = std::int64_t(gen() % K);
    const gpu::PmfBatch x = random_laws(gen, P);
    const auto run = [&](Backend where) {
      const gpu::Table t = gpu::Table::from_host(stacked_t, sets * K, C, where);
      const gpu::Table l = gpu::Table::from_host(stacked_l, sets * K, 1, where);
      auto ll = gpu::filled(0.5, P, where);
      const gpu::PmfBatch rows = gpu::markov_rows(gpu::Column<std::int64_t>::from_host(states, where), t, per).to_host();
      const gpu::PmfBatch posterior = gpu::condition_on_states(gpu::Laws::from_host(x, where), l, ll, per).to_host();
      return std::make_tuple(rows, posterior, ll.to_host());
    };
    const auto [rows, posterior, ll] = run(Backend::cpu);
    for (std::size_t s = 0; s < sets; ++s) {  // each set by its own table alone: the same bits
      const std::vector<std::int64_t> own(states.begin() + std::ptrdiff_t(s * per), states.begin() + std::ptrdiff_t(s * per + per));
      const gpu::PmfBatch r1 = gpu::markov_rows(gpu::Column<std::int64_t>::host_values(own), tables[s]).to_host();
      gpu::PmfBatch xs;
      for (std::size_t i = s * per; i < s * per + per; ++i) {
        const auto w = x[i];
        xs.push_back(std::vector<double>(w.begin(), w.end()), x.lo[i], x.log_scale[i]);
      }
      auto l1 = gpu::filled(0.5, per, Backend::cpu);
      const gpu::PmfBatch c1 = gpu::condition_on_states(gpu::Laws::from_host(xs, Backend::cpu), logliks[s], l1).to_host();
      for (std::size_t j = 0; j < per; ++j) {
        const std::size_t i = s * per + j;
        INFO("particle " << i);
        for (const auto& [got, want] : {std::pair{&rows, &r1}, std::pair{&posterior, &c1}}) {
          REQUIRE(got->lo[i] == want->lo[j]);
          REQUIRE(got->log_scale[i] == want->log_scale[j]);
          const auto g = (*got)[i], w = (*want)[j];
          REQUIRE(std::vector<double>(g.begin(), g.end()) == std::vector<double>(w.begin(), w.end()));
        }
        REQUIRE(ll[i] == l1.to_host()[j]);
      }
    }
    if (!device) continue;
    const auto [d_rows, d_posterior, d_ll] = run(Backend::cuda);
    CHECK(d_rows.weights == rows.weights);  // copies of table rows divided by their maximum: exact
    for (std::size_t i = 0; i < P; ++i)    // (the log of the maximum: the device's log, to rounding)
      REQUIRE((d_rows.log_scale[i] == rows.log_scale[i] ||
               std::abs(d_rows.log_scale[i] - rows.log_scale[i]) <= 1e-12 * std::max(1.0, std::abs(rows.log_scale[i]))));
    REQUIRE(d_posterior.offset == posterior.offset);
    for (std::size_t k = 0; k < posterior.weights.size(); ++k)
      REQUIRE(std::abs(d_posterior.weights[k] - posterior.weights[k]) <= 1e-12);
    for (std::size_t i = 0; i < P; ++i) {
      INFO("particle " << i);
      REQUIRE((d_ll[i] == ll[i] || std::abs(d_ll[i] - ll[i]) <= 1e-12 * std::max(1.0, std::abs(ll[i]))));
    }
  }
  // a table that does not stack one per set
  const gpu::Table five = gpu::Table::from_host(std::vector<double>(5 * C, 1.0 / C), 5, C, Backend::cpu);
  CHECK_THROWS_AS(gpu::markov_rows(gpu::Column<std::int64_t>::host_values(std::vector<std::int64_t>(6, 0)), five, 3),
                  tally::shape_error);
  CHECK_THROWS_AS(gpu::markov_rows(gpu::Column<std::int64_t>::host_values(std::vector<std::int64_t>(7, 0)), five, 3),
                  tally::shape_error);
}

}  // namespace test_population_chain
