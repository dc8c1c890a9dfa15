// Children of population laws (mix, condition_on_mix): the CPU reference against the one-law algebra (marginal,
// affine, condition of child_laws / algebra / condition.hpp) and brute-force enumeration, errors, and the device
// against the host.
#include <boost/math/distributions/poisson.hpp>
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/device.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/sparse_pmf.hpp"
#include "tally/error.hpp"
#include "tally/gpu/population_children.hpp"
#include "tally/gpu/population_ops.hpp"

namespace test_population_children {

using namespace tally;
using gpu::Backend;
using Kind = gpu::ChildKernel::Kind;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr std::size_t K = 4, C = 5;
constexpr double tolerance = 1e-12;
constexpr std::int64_t max_size = 1 << 20;
const std::vector<std::pair<int, int>> all_signs{{0, 1}, {0, -1}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

/// The parameters of the children under test, in host form (for the brute force and the one-law algebra).
struct Child {
  Kind kind;
  double q = 0;
  std::int64_t a = 1, c = 0;
  Eigen::VectorXd rates;
  Eigen::MatrixXd t;
};

std::vector<double> row_major(const Eigen::MatrixXd& t) {
  std::vector<double> v;
  for (Eigen::Index r = 0; r < t.rows(); ++r)
    for (Eigen::Index c = 0; c < t.cols(); ++c) v.push_back(t(r, c));
  return v;
}

/// A random row-stochastic K x C matrix, some entries exactly 0.
Eigen::MatrixXd random_transition(std::mt19937_64& gen) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd t(K, C);
  for (std::size_t r = 0; r < K; ++r) {
    for (std::size_t c = 0; c < C; ++c) t(r, c) = u(gen) < 0.2 ? 0.0 : u(gen);
    t(r, std::size_t(gen() % C)) += 0.5;
    t.row(r) /= t.row(r).sum();
  }
  return t;
}

/// The five children: Binomial(k, 0.35), Poisson(2.5 k), Poisson(rates_k), Categorical(T_k), y = -3 k + 4.
std::vector<Child> children(std::mt19937_64& gen) {
  std::vector<Child> out(5);
  out[0].kind = Kind::binomial;
  out[0].q = 0.35;
  out[1].kind = Kind::scaled_poisson;
  out[1].q = 2.5;
  out[2].kind = Kind::indexed_poisson;
  out[2].rates = (Eigen::VectorXd(K) << 0.0, 1.5, 40.0, 300.0).finished();  // a point mass at 0 too
  out[3].kind = Kind::categorical;
  out[3].t = random_transition(gen);
  out[4].kind = Kind::affine;
  out[4].a = -3;
  out[4].c = 4;
  return out;
}

gpu::ChildKernel kernel(const Child& ch, Backend where) {
  switch (ch.kind) {
    case Kind::binomial: return gpu::ChildKernel::binomial(ch.q);
    case Kind::scaled_poisson: return gpu::ChildKernel::scaled_poisson(ch.q);
    case Kind::indexed_poisson:
      return gpu::ChildKernel::indexed_poisson(gpu::Table::from_host(
          std::vector<double>(ch.rates.data(), ch.rates.data() + ch.rates.size()), std::size_t(ch.rates.size()), 1, where));
    case Kind::categorical: return gpu::ChildKernel::categorical(gpu::Table::from_host(row_major(ch.t), K, C, where));
    case Kind::affine: break;
  }
  return gpu::ChildKernel::affine(ch.a, ch.c);
}

/// log p(y | k) by the one-law algebra's functions (Loader's log-pmfs).
double child_log_p(const Child& ch, std::int64_t k, std::int64_t y) {
  switch (ch.kind) {
    case Kind::binomial: return log_binomial_pmf(k, y, ch.q);
    case Kind::scaled_poisson: return log_poisson_pmf(y, ch.q * double(k));
    case Kind::indexed_poisson: return log_poisson_pmf(y, ch.rates[Eigen::Index(k)]);
    case Kind::categorical:
      return y >= 0 && y < std::int64_t(C) && ch.t(k, y) > 0 ? std::log(ch.t(k, y)) : -inf;
    case Kind::affine: break;
  }
  return ch.a * k + ch.c == y ? 0.0 : -inf;
}

bool poisson(const Child& ch) { return ch.kind == Kind::scaled_poisson || ch.kind == Kind::indexed_poisson; }

/// P random laws: counts on lo in [0, 12] (binomial, scaled Poisson), states in 0 .. K - 1 (indexed Poisson,
/// categorical) or signed values in [-6, 6] (affine); lengths up to 10, weights with zeros, log-scales in [-5, 5];
/// every 7th particle dead (no mass).
gpu::PmfBatch random_laws(std::mt19937_64& gen, std::size_t p, Kind kind) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  gpu::PmfBatch b;
  for (std::size_t i = 0; i < p; ++i) {
    std::int64_t lo;
    std::size_t m;
    if (kind == Kind::indexed_poisson || kind == Kind::categorical) {
      lo = std::int64_t(gen() % K);
      m = 1 + gen() % (K - std::size_t(lo));
    } else {
      lo = kind == Kind::affine ? std::int64_t(gen() % 13) - 6 : std::int64_t(gen() % 13);
      m = 1 + gen() % 10;
    }
    std::vector<double> w(m);
    for (double& x : w) x = u(gen) < 0.25 ? 0.0 : u(gen);
    w[gen() % m] = 1.0;
    b.push_back(w, lo, i % 7 == 3 ? -inf : 10.0 * u(gen) - 5.0);
  }
  return b;
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

/// log of the mass of law i (its weights' sum and log-scale).
double log_mass(const gpu::PmfBatch& b, std::size_t i) {
  double s = 0;
  for (double w : b[i]) s += w;
  return b.log_scale[i] + std::log(s);
}

bool close(double a, double b, double tol) {
  if (a == b) return true;  // both -inf included
  return std::isfinite(a) && std::isfinite(b) && std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

/// Law i of a mixture at z, divided by the mass m (a log): a probability when m is the parent's log-mass.
double normalized_at(const gpu::PmfBatch& b, std::size_t i, std::int64_t z, double m) {
  const double l = log_at(b, i, z);
  return l == -inf ? 0.0 : std::exp(l - m);
}

bool dead(const gpu::PmfBatch& b, std::size_t i) { return b.log_scale[i] == -inf; }

void check_dead(const gpu::PmfBatch& y, std::size_t i) {
  CHECK(y.log_scale[i] == -inf);
  CHECK(y.length(i) == 1);
  CHECK(y.weights[std::size_t(y.offset[i])] == 0.0);
}

}  // namespace

TEST_CASE("population child mixtures match the one-law algebra", "[population][children]") {
  std::random_device seed_source;  // fresh inputs each run; the seed is printed on failure
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const std::size_t P = 120;
  const Truncation t{tolerance, max_size};

  for (const Child& ch : children(gen)) {
    INFO("child kind " << int(ch.kind));
    const gpu::PmfBatch x = random_laws(gen, P, ch.kind);
    const gpu::Laws laws = gpu::Laws::from_host(x, Backend::cpu);
    const gpu::ChildKernel child = kernel(ch, Backend::cpu);

    DYNAMIC_SECTION("the marginal of child kind " << int(ch.kind) << " (s_x = 0, s_y = 1)") {
      const gpu::PmfBatch y = gpu::mix(laws, child, 0, 1, tolerance, max_size).to_host();
      REQUIRE(y.size() == P);
      for (std::size_t i = 0; i < P; ++i) {
        INFO("particle " << i);
        if (dead(x, i)) {
          check_dead(y, i);
          continue;
        }
        const Pmf xi = law(x, i);
        // the ranges follow the support of positive weight, as tally::Pmf trims it
        std::int64_t first = 0, last = std::int64_t(x.length(i)) - 1;
        while (x.weights[std::size_t(x.offset[i] + first)] == 0.0) ++first;
        while (x.weights[std::size_t(x.offset[i] + last)] == 0.0) --last;
        const std::int64_t lo = x.lo[i] + first, hi = x.lo[i] + last;
        const double m = xi.log_mass();
        std::optional<Pmf> want;
        switch (ch.kind) {
          case Kind::binomial:
            want = marginal(xi, Thinning(ch.q));
            CHECK(y.lo[i] == 0);  // [0, hi]
            CHECK(std::int64_t(y.length(i)) == hi + 1);
            break;
          case Kind::scaled_poisson: want = marginal(xi, ScaledPoisson(ch.q), t); break;
          case Kind::indexed_poisson: want = marginal(xi, IndexedPoisson(ch.rates), t); break;
          case Kind::categorical:
            want = marginal(xi, MarkovStep(ch.t));
            CHECK(y.lo[i] == 0);  // [0, C - 1]
            CHECK(y.length(i) == C);
            break;
          case Kind::affine:
            want = to_dense(affine(xi, ch.a, ch.c));
            CHECK(y.lo[i] == std::min(ch.a * lo, ch.a * hi) + ch.c);  // a [lo, hi] + c
            CHECK(std::int64_t(y.length(i)) == std::abs(ch.a) * (hi - lo) + 1);
            break;
        }
        const std::int64_t y_hi = y.lo[i] + std::int64_t(y.length(i)) - 1;
        double inside = 0, host_outside = 0;
        for (std::int64_t z = std::min(y.lo[i], want->lo()); z <= std::max(y_hi, want->hi()); ++z) {
          const double g = normalized_at(y, i, z, m), w = std::exp(log_pdf(*want, z) - m);
          INFO("value " << z << ": " << g << " against " << w);
          if (z < y.lo[i] || z > y_hi) {
            host_outside += w;
            continue;
          }
          inside += g;
          if (z < want->lo() || z > want->hi()) {  // past the host's cuts: a Poisson tail, or an exact zero
            if (!poisson(ch)) REQUIRE(g == 0.0);
            continue;
          }
          REQUIRE(std::abs(g - w) <= 1e-12);
        }
        CHECK(host_outside <= (poisson(ch) ? tolerance : 0.0));
        CHECK(inside <= 1.0 + 1e-12);
        CHECK(inside >= 1.0 - (poisson(ch) ? tolerance : 0.0) - 1e-12);
      }
    }

    DYNAMIC_SECTION("joint sums with child kind " << int(ch.kind) << " against brute-force enumeration") {
      for (const auto& [sx, sy] : all_signs) {
        INFO("signs " << sx << ", " << sy);
        const gpu::PmfBatch y = gpu::mix(laws, child, sx, sy, tolerance, max_size).to_host();
        for (std::size_t i = 0; i < P; ++i) {
          INFO("particle " << i);
          if (dead(x, i)) {
            check_dead(y, i);
            continue;
          }
          const std::int64_t y_hi = y.lo[i] + std::int64_t(y.length(i)) - 1;
          const double m = log_mass(x, i);
          double inside = 0;
          for (std::int64_t z = y.lo[i] - 1; z <= y_hi + 1; ++z) {
            double want = 0;  // \sum_k mu(k) p(s_y (z - s_x k) | k) / mass
            for (std::int64_t k = x.lo[i]; k < x.lo[i] + std::int64_t(x.length(i)); ++k) {
              const double lk = log_at(x, i, k);
              if (lk > -inf) want += std::exp(lk - m + child_log_p(ch, k, sy * (z - sx * k)));
            }
            const double g = normalized_at(y, i, z, m);
            INFO("value " << z << ": " << g << " against " << want);
            if (z < y.lo[i] || z > y_hi) {  // off the range: nothing for the exact kinds
              if (!poisson(ch)) REQUIRE(want == 0.0);
              continue;
            }
            REQUIRE(std::abs(g - want) <= 1e-12);
            inside += want;
          }
          CHECK(inside <= 1.0 + 1e-12);
          CHECK(inside >= 1.0 - (poisson(ch) ? tolerance : 0.0) - 1e-12);
        }
      }
    }

    DYNAMIC_SECTION("conditioned on s_x X + s_y Y = z, child kind " << int(ch.kind)) {
      std::uniform_real_distribution<double> u(0.0, 1.0);
      for (const auto& [sx, sy] : all_signs) {
        INFO("signs " << sx << ", " << sy);
        std::vector<std::int64_t> z(P);
        for (std::size_t i = 0; i < P; ++i) {
          const std::int64_t lo = x.lo[i], m = std::int64_t(x.length(i));
          if (i % 11 == 5) {  // impossible: y < 0 for every k (an affine child: y far from every a k + c)
            std::int64_t low = INT64_MAX, high = INT64_MIN;
            for (std::int64_t k = lo; k < lo + m; ++k) {
              low = std::min(low, sx * k);
              high = std::max(high, sx * k);
            }
            z[i] = ch.kind == Kind::affine ? 1000000 : sy == 1 ? low - 1 : high + 1;
            continue;
          }
          const std::int64_t k = lo + std::int64_t(gen() % std::uint64_t(m));  // a plausible child of some k
          std::int64_t v = 0;
          switch (ch.kind) {
            case Kind::binomial: v = std::int64_t(gen() % std::uint64_t(k + 1)); break;
            case Kind::scaled_poisson: v = std::int64_t(std::llround(ch.q * double(k) * (0.7 + 0.6 * u(gen)))); break;
            case Kind::indexed_poisson: v = std::int64_t(std::llround(ch.rates[k] * (0.7 + 0.6 * u(gen)))); break;
            case Kind::categorical: v = std::int64_t(gen() % C); break;
            case Kind::affine: v = ch.a * k + ch.c; break;
          }
          z[i] = sx * k + sy * v;
        }
        auto ll = gpu::filled(0.25, P, Backend::cpu);
        const gpu::PmfBatch post =
            gpu::condition_on_mix(laws, child, sx, sy, gpu::Column<std::int64_t>::host_values(z), ll).to_host();
        REQUIRE(post.offset == x.offset);
        REQUIRE(post.lo == x.lo);
        for (std::size_t i = 0; i < P; ++i) {
          INFO("particle " << i << ", z " << z[i]);
          if (dead(x, i)) {
            CHECK(ll.host()[i] == -inf);
            CHECK(post.log_scale[i] == -inf);
            continue;
          }
          // the posterior in long double logarithms
          std::vector<long double> lp(x.length(i), -HUGE_VALL);
          long double top = -HUGE_VALL, sum = 0;
          for (std::size_t j = 0; j < x.length(i); ++j) {
            const std::int64_t k = x.lo[i] + std::int64_t(j);
            const double lk = log_at(x, i, k);
            if (lk == -inf) continue;
            const double lc = child_log_p(ch, k, sy * (z[i] - sx * k));
            if (lc == -inf) continue;
            lp[j] = (long double)lk + lc;
            top = std::max(top, lp[j]);
          }
          if (i % 11 == 5) CHECK(top == -HUGE_VALL);
          if (top == -HUGE_VALL) {  // impossible: -inf, and the law stays as it was (a dead one dead)
            CHECK(ll.host()[i] == -inf);
            CHECK(post.log_scale[i] == x.log_scale[i]);
            continue;
          }
          for (long double l : lp) sum += std::exp(l - top);
          const double want_ll = double(0.25L + top + std::log(sum));
          INFO("log-likelihood " << ll.host()[i] << " against " << want_ll);
          REQUIRE(close(ll.host()[i], want_ll, 1e-12));
          for (std::size_t j = 0; j < x.length(i); ++j) {
            const std::int64_t k = x.lo[i] + std::int64_t(j);
            const double want = lp[j] == -HUGE_VALL ? -inf : double(lp[j] - top - std::log(sum));
            INFO("value " << k << ": " << log_at(post, i, k) << " against " << want);
            if (want < -700.0 && want > -inf) {  // subnormal or flushed relative to the largest
              REQUIRE(log_at(post, i, k) < -690.0);
              continue;
            }
            REQUIRE(close(log_at(post, i, k), want, 1e-12));
          }
          if (sx != 0 || sy != 1) continue;
          // an observed child: the one-law conditioning's log-likelihood
          const Pmf xi = law(x, i);
          Conditioned c{std::nullopt, 0.0, 0.0};
          switch (ch.kind) {
            case Kind::binomial: c = condition(xi, Thinning(ch.q), z[i]); break;
            case Kind::scaled_poisson: c = condition(xi, ScaledPoisson(ch.q), z[i]); break;
            case Kind::indexed_poisson: c = condition(xi, IndexedPoisson(ch.rates), z[i]); break;
            case Kind::categorical: c = condition(xi, MarkovStep(ch.t), z[i]); break;
            case Kind::affine: c = condition_affine(xi, ch.a, ch.c, z[i]); break;
          }
          REQUIRE(close(ll.host()[i], 0.25 + c.log_likelihood, 1e-12));
          REQUIRE(c.posterior);
          for (std::int64_t k = c.posterior->lo(); k <= c.posterior->hi(); ++k)
            if (log_pdf(*c.posterior, k) > -700.0) REQUIRE(close(log_at(post, i, k), log_pdf(*c.posterior, k), 1e-12));
        }
      }
    }
  }
}

TEST_CASE("population child mixtures: Poisson cuts, rate 0 and errors", "[population][children]") {
  std::mt19937_64 gen(20261122);
  const std::size_t P = 40;
  const std::vector<Child> chs = children(gen);

  SECTION("the Poisson cuts keep at most tol / 2 per tail, and a rate 0 is the point 0") {
    for (const double rate : {1e-9, 0.3, 7.0, 123.4, 5000.0, 1e6}) {
      for (const double tol : {1e-3, 1e-9, 1e-15}) {
        INFO("rate " << rate << ", tolerance " << tol);
        const gpu::Laws one = gpu::broadcast(std::vector<double>{1.0}, 1, 0.0, 1, Backend::cpu);  // X = 1
        const gpu::PmfBatch y = gpu::mix(one, gpu::ChildKernel::scaled_poisson(rate), 0, 1, tol, max_size).to_host();
        const std::int64_t lo = y.lo[0], hi = lo + std::int64_t(y.length(0)) - 1;
        // the exact tails beyond the cuts (boost), and the one-law algebra's cuts (the exact quantiles): ours are
        // outside them, by a few values at most (the geometric bounds of the tails are within a small factor)
        const boost::math::poisson_distribution<double> d(rate);
        const double below = lo > 0 ? boost::math::cdf(d, double(lo - 1)) : 0.0;
        const double above = boost::math::cdf(boost::math::complement(d, double(hi)));
        CHECK(below <= tol / 2 * (1 + 1e-9));
        CHECK(above <= tol / 2 * (1 + 1e-9));
        const Pmf cut = to_pmf(Poisson(rate), Truncation{tol, max_size});
        const auto slack = 2 + std::int64_t(0.02 * std::sqrt(rate));
        CHECK(lo <= cut.lo());
        CHECK(lo >= cut.lo() - slack);
        CHECK(hi >= cut.hi());
        CHECK(hi <= cut.hi() + slack);
      }
    }
    const gpu::Laws zero = gpu::broadcast(std::vector<double>{1.0, 0.5}, 0, -1.0, 3, Backend::cpu);  // X in {0, 1}
    const gpu::PmfBatch y = gpu::mix(zero, gpu::ChildKernel::scaled_poisson(0.0), 0, 1, 1e-12, max_size).to_host();
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(y.lo[i] == 0);
      CHECK(y.length(i) == 1);
      CHECK(y.weights[i] == 1.0);
      CHECK(close(y.log_scale[i], -1.0 + std::log(1.5), 1e-15));
    }
  }

  SECTION("errors name the particle, the states and the size") {
    auto ll = gpu::filled(0.0, P, Backend::cpu);
    const auto zeros = gpu::Column<std::int64_t>::host_values(std::vector<std::int64_t>(P, 0));
    for (const Child& ch : chs) {
      INFO("child kind " << int(ch.kind));
      gpu::PmfBatch x = random_laws(gen, P, ch.kind);
      const gpu::ChildKernel child = kernel(ch, Backend::cpu);
      CHECK_THROWS_AS(gpu::mix(gpu::Laws::from_host(x, Backend::cpu), child, 2, 1, tolerance, max_size), tally::domain_error);
      CHECK_THROWS_AS(gpu::mix(gpu::Laws::from_host(x, Backend::cpu), child, 0, 0, tolerance, max_size), tally::domain_error);
      CHECK_THROWS_AS(gpu::condition_on_mix(gpu::Laws::from_host(x, Backend::cpu), child, -2, 1, zeros, ll), tally::domain_error);
      CHECK_THROWS_AS(gpu::condition_on_mix(gpu::Laws::from_host(x, Backend::cpu), child, 1, 1,
                                            gpu::Column<std::int64_t>::host_values(std::vector<std::int64_t>(P - 1, 0)), ll),
                      tally::shape_error);
      if (ch.kind == Kind::affine) continue;  // any support will do
      if (ch.kind == Kind::indexed_poisson || ch.kind == Kind::categorical) {
        x.lo[5] = std::int64_t(K) - 1;  // law 5 reaches past state K - 1 or starts below 0
        if (x.length(5) == 1) x.lo[5] = -1;
      } else {
        x.lo[5] = -1;  // not a count
      }
      const gpu::Laws bad = gpu::Laws::from_host(x, Backend::cpu);
      const auto what = ch.kind == Kind::indexed_poisson || ch.kind == Kind::categorical ? "states" : "not a count";
      CHECK_THROWS_WITH(gpu::mix(bad, child, 1, -1, tolerance, max_size), Catch::Contains("particle 5") && Catch::Contains(what));
      CHECK_THROWS_AS(gpu::mix(bad, child, 1, -1, tolerance, max_size), tally::domain_error);
      CHECK_THROWS_WITH(gpu::condition_on_mix(bad, child, 0, 1, zeros, ll), Catch::Contains("particle 5") && Catch::Contains(what));
      CHECK_THROWS_AS(gpu::condition_on_mix(bad, child, 0, 1, zeros, ll), tally::domain_error);
    }
    // max_size: the categorical child's 5 values do not fit in 4; a large Poisson rate needs thousands
    const gpu::Laws states = gpu::Laws::from_host(random_laws(gen, P, Kind::categorical), Backend::cpu);
    CHECK_THROWS_WITH(gpu::mix(states, kernel(chs[3], Backend::cpu), 0, 1, tolerance, 4),
                      Catch::Contains("particle 0") && Catch::Contains("needs 5 entries") && Catch::Contains("max_size = 4"));
    CHECK_THROWS_AS(gpu::mix(states, kernel(chs[3], Backend::cpu), 0, 1, tolerance, 4), tally::overflow_error);
    CHECK_NOTHROW(gpu::mix(states, kernel(chs[3], Backend::cpu), 0, 1, tolerance, 5));
    const gpu::Laws big = gpu::broadcast(std::vector<double>{1.0}, 1000000, 0.0, 3, Backend::cpu);
    CHECK_THROWS_AS(gpu::mix(big, gpu::ChildKernel::scaled_poisson(1.0), 0, 1, tolerance, 1000), tally::overflow_error);
    CHECK_THROWS_AS(gpu::mix(big, gpu::ChildKernel::scaled_poisson(1.0), 0, 1, 0.0, max_size), tally::domain_error);
    CHECK_THROWS_AS(gpu::mix(big, gpu::ChildKernel::scaled_poisson(1.0), 0, 1, tolerance, 0), tally::domain_error);
    // a range leaving int64
    const gpu::Laws huge = gpu::broadcast(std::vector<double>{1.0, 1.0}, std::int64_t(1) << 61, 0.0, 2, Backend::cpu);
    CHECK_THROWS_AS(gpu::mix(huge, gpu::ChildKernel::affine(8, 0), 0, 1, tolerance, max_size), tally::overflow_error);
    // the named constructors validate
    CHECK_THROWS_AS(gpu::ChildKernel::binomial(1.5), tally::domain_error);
    CHECK_THROWS_AS(gpu::ChildKernel::scaled_poisson(-1.0), tally::domain_error);
    CHECK_THROWS_AS(gpu::ChildKernel::affine(0, 3), tally::domain_error);
    CHECK_THROWS_AS(gpu::ChildKernel::indexed_poisson(gpu::Table::from_host(std::vector<double>{1.0, -2.0}, 2, 1, Backend::cpu)),
                    tally::domain_error);
    CHECK_THROWS_AS(gpu::ChildKernel::indexed_poisson(gpu::Table::from_host(std::vector<double>{1.0, 2.0}, 1, 2, Backend::cpu)),
                    tally::shape_error);
    CHECK_THROWS_AS(gpu::ChildKernel::categorical(gpu::Table::from_host(std::vector<double>{0.5, 0.6}, 1, 2, Backend::cpu)),
                    tally::domain_error);
    gpu::ChildKernel manual;  // made by hand: the operation checks the scalars and the table's shape
    manual.kind = Kind::categorical;
    CHECK_THROWS_AS(gpu::mix(states, manual, 0, 1, tolerance, max_size), tally::shape_error);
    manual.kind = Kind::binomial;
    manual.q = -0.5;
    CHECK_THROWS_AS(gpu::mix(states, manual, 0, 1, tolerance, max_size), tally::domain_error);
  }
}

TEST_CASE("population child mixtures on the device match the host", "[population][children][device]") {
  if (tally::test::skip_without_device()) return;
  std::random_device seed_source;  // fresh inputs each run; the seed is printed on failure
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const std::size_t P = 3000;
  for (const Child& ch : children(gen)) {
    INFO("child kind " << int(ch.kind));
    const gpu::PmfBatch x = random_laws(gen, P, ch.kind);
    std::vector<std::int64_t> z(P);
    for (auto& v : z) v = std::int64_t(gen() % 60) - 20;
    auto run = [&](Backend where) {
      const gpu::Laws laws = gpu::Laws::from_host(x, where);
      const gpu::ChildKernel child = kernel(ch, where);
      std::vector<gpu::PmfBatch> out;
      std::vector<std::vector<double>> lls;
      for (const auto& [sx, sy] : all_signs) {
        out.push_back(gpu::mix(laws, child, sx, sy, tolerance, max_size).to_host());
        auto ll = gpu::filled(-0.5, P, where);
        out.push_back(gpu::condition_on_mix(laws, child, sx, sy, gpu::Column<std::int64_t>::from_host(z, where), ll).to_host());
        lls.push_back(ll.to_host());
      }
      return std::make_pair(out, lls);
    };
    const auto [host, host_ll] = run(Backend::cpu);
    const auto [device, device_ll] = run(Backend::cuda);
    for (std::size_t op = 0; op < host.size(); ++op) {
      INFO("operation " << op);
      REQUIRE(host[op].offset == device[op].offset);
      REQUIRE(host[op].lo == device[op].lo);
      for (std::size_t k = 0; k < host[op].weights.size(); ++k)
        REQUIRE(std::abs(host[op].weights[k] - device[op].weights[k]) <= 1e-12);
      for (std::size_t i = 0; i < P; ++i) REQUIRE(close(host[op].log_scale[i], device[op].log_scale[i], 1e-12));
    }
    for (std::size_t s = 0; s < host_ll.size(); ++s)
      for (std::size_t i = 0; i < P; ++i) {
        INFO("signs " << s << ", particle " << i);
        REQUIRE(close(host_ll[s][i], device_ll[s][i], 1e-12));
      }

    // the same errors, word for word
    auto message = [&](const gpu::PmfBatch& b, Backend where, int op, std::int64_t size) {
      try {
        const gpu::Laws laws = gpu::Laws::from_host(b, where);
        const gpu::ChildKernel child = kernel(ch, where);
        auto ll = gpu::filled(0.0, P, where);
        if (op == 0) gpu::mix(laws, child, 1, 1, tolerance, size);
        else gpu::condition_on_mix(laws, child, 1, 1, gpu::Column<std::int64_t>::from_host(z, where), ll);
      } catch (const std::exception& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const std::int64_t small = 3;  // the first live particle's range is longer (1 value for a dead one)
    CHECK(message(x, Backend::cpu, 0, small) == message(x, Backend::cuda, 0, small));
    CHECK(message(x, Backend::cpu, 0, small).find("max_size = 3") != std::string::npos);
    if (ch.kind == Kind::affine) continue;
    gpu::PmfBatch bad = x;
    bad.lo[1717] = -1;  // live, with positive weight at -1: not a count, not a state
    bad.weights[std::size_t(bad.offset[1717])] = 1.0;
    bad.log_scale[1717] = 0.0;
    for (int op = 0; op < 2; ++op) {
      const std::string h = message(bad, Backend::cpu, op, max_size);
      CHECK(h.find("particle 1717") != std::string::npos);
      CHECK(h == message(bad, Backend::cuda, op, max_size));
    }
  }
  const gpu::Laws laws = gpu::Laws::from_host(random_laws(gen, P, Kind::categorical), Backend::cuda);
  CHECK_THROWS_AS(gpu::mix(laws, kernel(children(gen)[3], Backend::cpu), 0, 1, tolerance, max_size), tally::shape_error);
}

namespace {

/// Laws first .. first + count - 1 of a batch, as a batch of their own.
gpu::PmfBatch slice(const gpu::PmfBatch& b, std::size_t first, std::size_t count) {
  gpu::PmfBatch out;
  for (std::size_t i = first; i < first + count; ++i) {
    const auto w = b[i];
    out.push_back(std::vector<double>(w.begin(), w.end()), b.lo[i], b.log_scale[i]);
  }
  return out;
}

/// A child of the kind with random parameters of its own.
Child random_child(std::mt19937_64& gen, Kind kind) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Child ch;
  ch.kind = kind;
  ch.q = kind == Kind::binomial ? u(gen) : 4.0 * u(gen);
  ch.rates = Eigen::VectorXd(K);
  for (std::size_t k = 0; k < K; ++k) ch.rates[Eigen::Index(k)] = u(gen) < 0.2 ? 0.0 : 30.0 * u(gen);
  ch.t = random_transition(gen);
  return ch;
}

}  // namespace

TEST_CASE("a child per set of laws: law i takes its set's child, on the host and the device",
          "[population][children]") {
  std::random_device seed_source;  // fresh inputs each run; the seed is printed on failure
  const std::uint64_t seed = (std::uint64_t(seed_source()) << 32) | seed_source();
  INFO("seed " << seed);
  std::mt19937_64 gen(seed);
  const bool device = gpu::cuda_available();
  for (const Kind kind : {Kind::binomial, Kind::scaled_poisson, Kind::indexed_poisson, Kind::categorical})
    for (int trial = 0; trial < 3; ++trial) {
      const std::size_t sets = 1 + gen() % 6, per = 1 + gen() % 50, P = sets * per;
      INFO("kind " << int(kind) << ", " << sets << " sets of " << per << " laws");
      std::vector<Child> each;
      for (std::size_t s = 0; s < sets; ++s) each.push_back(random_child(gen, kind));
      const gpu::PmfBatch x = random_laws(gen, P, kind);
      std::vector<std::int64_t> z(P);
      for (auto& v : z) v = std::int64_t(gen() % 40) - 10;
      const auto per_set = [&](Backend where) {
        std::vector<gpu::ChildKernel> ks;
        for (const Child& ch : each) ks.push_back(kernel(ch, Backend::cpu));
        return gpu::ChildKernel::per_set(ks, per, where);
      };
      for (const auto& [sx, sy] : all_signs) {
        INFO("signs " << sx << ", " << sy);
        const gpu::Laws hx = gpu::Laws::from_host(x, Backend::cpu);
        const gpu::PmfBatch mixed = gpu::mix(hx, per_set(Backend::cpu), sx, sy, tolerance, max_size).to_host();
        auto ll = gpu::filled(-0.5, P, Backend::cpu);
        const gpu::PmfBatch conditioned =
            gpu::condition_on_mix(hx, per_set(Backend::cpu), sx, sy, gpu::Column<std::int64_t>::host_values(z), ll)
                .to_host();
        const std::vector<double> lls = ll.to_host();
        // each set's laws by its own child alone: the same functions in the same order, the same bits
        for (std::size_t s = 0; s < sets; ++s) {
          const gpu::Laws own = gpu::Laws::from_host(slice(x, s * per, per), Backend::cpu);
          const gpu::PmfBatch m1 = gpu::mix(own, kernel(each[s], Backend::cpu), sx, sy, tolerance, max_size).to_host();
          auto ll1 = gpu::filled(-0.5, per, Backend::cpu);
          const std::vector<std::int64_t> z1(z.begin() + std::ptrdiff_t(s * per), z.begin() + std::ptrdiff_t(s * per + per));
          const gpu::PmfBatch c1 = gpu::condition_on_mix(own, kernel(each[s], Backend::cpu), sx, sy,
                                                         gpu::Column<std::int64_t>::host_values(z1), ll1)
                                       .to_host();
          const std::vector<double> l1 = ll1.to_host();
          for (std::size_t j = 0; j < per; ++j) {
            const std::size_t i = s * per + j;
            INFO("law " << i);
            for (const auto& [got, want] : {std::pair{&mixed, &m1}, std::pair{&conditioned, &c1}}) {
              REQUIRE(got->lo[i] == want->lo[j]);
              REQUIRE(got->log_scale[i] == want->log_scale[j]);
              const auto g = (*got)[i], w = (*want)[j];
              REQUIRE(std::vector<double>(g.begin(), g.end()) == std::vector<double>(w.begin(), w.end()));
            }
            REQUIRE(lls[i] == l1[j]);
          }
        }
        if (!device) continue;
        const gpu::Laws dx = gpu::Laws::from_host(x, Backend::cuda);
        const gpu::PmfBatch dm = gpu::mix(dx, per_set(Backend::cuda), sx, sy, tolerance, max_size).to_host();
        auto dll = gpu::filled(-0.5, P, Backend::cuda);
        const gpu::PmfBatch dc = gpu::condition_on_mix(dx, per_set(Backend::cuda), sx, sy,
                                                       gpu::Column<std::int64_t>::from_host(z, Backend::cuda), dll)
                                     .to_host();
        const std::vector<double> dl = dll.to_host();
        for (const auto& [got, want] : {std::pair{&dm, &mixed}, std::pair{&dc, &conditioned}}) {
          REQUIRE(got->offset == want->offset);
          REQUIRE(got->lo == want->lo);
          for (std::size_t k = 0; k < want->weights.size(); ++k)
            REQUIRE(std::abs(got->weights[k] - want->weights[k]) <= 1e-12);
          for (std::size_t i = 0; i < P; ++i) REQUIRE(close(got->log_scale[i], want->log_scale[i], 1e-12));
        }
        for (std::size_t i = 0; i < P; ++i) REQUIRE(close(dl[i], lls[i], 1e-12));
      }
    }
  // sizes and forms that do not fit
  std::vector<gpu::ChildKernel> two;
  two.push_back(gpu::ChildKernel::scaled_poisson(1.0));
  two.push_back(gpu::ChildKernel::scaled_poisson(2.0));
  const gpu::ChildKernel k = gpu::ChildKernel::per_set(two, 3, Backend::cpu);
  REQUIRE(k.laws() == 6);
  const gpu::Laws five = gpu::Laws::from_host(random_laws(gen, 5, Kind::scaled_poisson), Backend::cpu);
  CHECK_THROWS_AS(gpu::mix(five, k, 0, 1, tolerance, max_size), shape_error);
  std::vector<gpu::ChildKernel> none, affine, mixed_kinds, shapes;
  CHECK_THROWS_AS(gpu::ChildKernel::per_set(none, 1, Backend::cpu), domain_error);
  CHECK_THROWS_AS(gpu::ChildKernel::per_set(two, 0, Backend::cpu), domain_error);
  affine.push_back(gpu::ChildKernel::affine(2, 1));
  CHECK_THROWS_AS(gpu::ChildKernel::per_set(affine, 1, Backend::cpu), domain_error);
  mixed_kinds.push_back(gpu::ChildKernel::scaled_poisson(1.0));
  mixed_kinds.push_back(gpu::ChildKernel::binomial(0.5));
  CHECK_THROWS_AS(gpu::ChildKernel::per_set(mixed_kinds, 1, Backend::cpu), domain_error);
  shapes.push_back(kernel(random_child(gen, Kind::categorical), Backend::cpu));
  shapes.push_back(gpu::ChildKernel::categorical(gpu::Table::from_host(std::vector<double>{0.5, 0.5}, 1, 2, Backend::cpu)));
  CHECK_THROWS_AS(gpu::ChildKernel::per_set(shapes, 1, Backend::cpu), shape_error);
}

}  // namespace test_population_children
