// The dropped measure of joint laws (their error bound): random programs of joint operations with truncation
// between them, against the same programs in 50 digits without truncation: sound and within 1e3 of the true error.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "joint_brute_force.hpp"
#include "tally/distributions.hpp"

namespace test_joint_dropped {

using namespace tally;
using test::big;
using test::JointLaw;

namespace {

/// Poisson(rate) on [0, 60] in 50 digits (the tail beyond is below 1e-30 for the rates used here).
std::vector<big> poisson_table(double rate) {
  std::vector<big> p(61);
  for (std::int64_t k = 0; k <= 60; ++k) p[static_cast<std::size_t>(k)] = test::poisson_big(k, rate);
  return p;
}

/// Bin(m; v, q) for v, m <= n in 50 digits, by the recurrence over v (no lgamma per entry).
std::vector<std::vector<big>> binomial_table(double q, std::int64_t n) {
  std::vector<std::vector<big>> t(static_cast<std::size_t>(n + 1));
  const big bq(q), bp = 1 - big(q);
  t[0] = {big(1)};
  for (std::size_t v = 1; v < t.size(); ++v) {
    t[v].assign(v + 1, big(0));
    for (std::size_t m = 0; m < v; ++m) {
      t[v][m] += t[v - 1][m] * bp;
      t[v][m + 1] += t[v - 1][m] * bq;
    }
  }
  return t;
}

/// The tails a coarse Poisson pmf dropped (to_pmf under a 2^-40 finer tolerance, outside its range) and the rest.
std::pair<Pmf, double> tails_of(const Pmf& coarse, double rate, const Truncation& t) {
  Truncation fine = t;
  fine.tolerance = t.tolerance * 0x1p-40;
  const Pmf f = to_pmf(Poisson(rate), fine);
  Eigen::VectorXd w = f.weights();
  for (std::int64_t k = coarse.lo(); k <= coarse.hi(); ++k) w[k - f.lo()] = 0.0;
  const double rest = f.error_bound() * std::exp(f.log_mass() - coarse.log_mass());
  return {Pmf(f.lo(), w, f.log_scale()), rest};
}

/// Drops entries below 1e-45 of the total (keeps the 50-digit maps small; far below every bound checked).
void prune(JointLaw& law) {
  big total = 0;
  for (const auto& [x, p] : law) total += p;
  for (auto it = law.begin(); it != law.end();) it = it->second < total * big(1e-45) ? law.erase(it) : std::next(it);
}

/// The checks after every operation: ||exact - mu||_1 <= error_bound M (sound, rounding aside), the dropped
/// measure below exact - mu entry by entry (it is mass truncation cut), and error_bound M <= 1e3 ||exact - mu||_1.
void require_bound(const JointPmf& d, const JointLaw& exact, const char* step, bool tight = true) {
  const JointLaw mu = test::joint_law_of(d);
  const JointLaw dropped = d.dropped() ? test::joint_law_of(*d.dropped()) : JointLaw{};
  big l1 = 0, mass = 0, below = 0;
  for (const auto& [x, p] : mu) mass += p;
  std::map<Coordinates, big> diff;
  for (const auto& [x, p] : exact) diff[x] += p;
  for (const auto& [x, p] : mu) diff[x] -= p;
  for (const auto& [x, v] : diff) l1 += abs(v);
  for (const auto& [x, p] : dropped) {
    const auto it = diff.find(x);
    const big room = it == diff.end() ? big(0) : it->second;
    if (p > room) below += p - room;  // dropped mass the exact law does not have there
  }
  const double rel = static_cast<double>(l1 / mass), bound = d.error_bound();
  INFO(step << ": true relative L1 error " << rel << ", bound " << bound << " (spread " << d.spread_error_bound()
            << "), dropped mass beyond the true error " << static_cast<double>(below / mass));
  REQUIRE(rel <= bound * (1 + 1e-9) + 1e-13);
  REQUIRE(static_cast<double>(below / mass) <= 1e-13);
  if (tight) REQUIRE(bound <= 1e3 * rel + 1e-13);
}

}  // namespace

TEST_CASE("joint laws: the dropped measure follows truncated mass through random programs (50 digits)",
          "[distributions][joint][bound]") {
  std::mt19937_64 gen(1717);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int program = 0; program < 8; ++program) {
    CAPTURE(program);
    Truncation t;
    t.tolerance = std::pow(10.0, -2.0 - 6.0 * u(gen));
    const double r0 = 1 + 3 * u(gen), r1 = 1 + 3 * u(gen);
    // X0 ~ Poisson(r0), X1 ~ Poisson(r1): each coarse pmf with its tails as the dropped measure
    const Pmf p0 = to_pmf(Poisson(r0), t), p1 = to_pmf(Poisson(r1), t);
    const auto [tail0, rest0] = tails_of(p0, r0, t);
    const auto [tail1, rest1] = tails_of(p1, r1, t);
    // odd programs: X0's tails only as a number (spread, of unknown place): still sound, not tight
    const bool spread = program % 2 == 1;
    JointPmf d = spread ? joint(p0) : joint(p0).with_error_bound(rest0).with_dropped(joint(tail0));
    d = add_independent(linear_combination(d, {0}, 0, -1, t), 1, p1, tail1, rest1, t);
    JointLaw exact;
    {
      const auto e0 = poisson_table(r0), e1 = poisson_table(r1);
      for (std::int64_t a = 0; a <= 60; ++a)
        for (std::int64_t b = 0; b <= 60; ++b) exact[{a, b}] = e0[std::size_t(a)] * e1[std::size_t(b)];
      prune(exact);
    }
    require_bound(d, exact, "start", !spread);
    for (int step = 0; step < 7; ++step) {
      const int k = d.rank();
      const int a = static_cast<int>(u(gen) * k) % k;
      const int op = static_cast<int>(u(gen) * 7);
      if (op == 0 && k < 3) {  // a binomial split (X_a - M, M)
        const double q = 0.2 + 0.6 * u(gen);
        d = split(d, a, q, t);
        const auto bin = binomial_table(q, 130);
        JointLaw next;
        for (const auto& [x, p] : exact)
          for (std::int64_t m = 0; m <= x[std::size_t(a)]; ++m) {
            Coordinates z = x;
            z[std::size_t(a)] -= m;
            z.push_back(m);
            next[z] += p * bin[std::size_t(x[std::size_t(a)])][std::size_t(m)];
          }
        exact = std::move(next);
        prune(exact);
        require_bound(d, exact, "split", !spread);
      } else if (op == 1 && k >= 2) {  // sum out a coordinate
        d = marginalize_out(d, a);
        JointLaw next;
        for (const auto& [x, p] : exact) {
          Coordinates z = x;
          z.erase(z.begin() + a);
          next[z] += p;
        }
        exact = std::move(next);
        require_bound(d, exact, "marginalize_out", !spread);
      } else if (op == 2) {  // immigrants: X_a + Poisson(r), its tails as dropped measure
        const double r = 0.5 + 2 * u(gen);
        const Pmf y = to_pmf(Poisson(r), t);
        const auto [tail, rest] = tails_of(y, r, t);
        d = add_independent(d, a, y, tail, rest, t);
        const auto e = poisson_table(r);
        JointLaw next;
        for (const auto& [x, p] : exact)
          for (std::int64_t j = 0; j <= 60; ++j) {
            Coordinates z = x;
            z[std::size_t(a)] += j;
            next[z] += p * e[std::size_t(j)];
          }
        exact = std::move(next);
        prune(exact);
        require_bound(d, exact, "add_independent", !spread);
      } else if (op == 3) {  // an observed count Binomial(X_a, p) = y, the exact law taken with the same constant
        const double p = 0.3 + 0.6 * u(gen);
        const Pmf m = marginal(d, a);
        const auto y = static_cast<std::int64_t>(std::floor(p * mean(m) * (0.5 + u(gen))));
        const JointConditioned c = condition(d, a, Thinning(p), y);
        REQUIRE(c.posterior);
        const auto bin = binomial_table(p, 130);
        big l = 0;
        JointLaw next;
        for (const auto& [x, w] : exact) {
          const std::int64_t v = x[std::size_t(a)];
          if (y > v) continue;
          const big lw = w * bin[std::size_t(v)][std::size_t(y)];
          l += lw;
          next[x] = lw;
        }
        const double log_error = std::abs(static_cast<double>(log(l)) - c.log_likelihood);
        INFO("observation: true log-likelihood error " << log_error << ", bound " << c.log_likelihood_error);
        REQUIRE(log_error <= c.log_likelihood_error * (1 + 1e-9) + 1e-13);
        const big scale = exp(big(c.log_likelihood));
        for (auto& [x, w] : next) w /= scale;
        exact = std::move(next);
        d = *c.posterior;
        // the posterior's spread bound holds the normalizing constant's error (see JointConditioned): against the
        // normalized exact posterior, the sound direction only
        const JointLaw mu = test::joint_law_of(d);
        big l1 = 0, mass = 0, exact_mass = 0;
        for (const auto& [x, w] : exact) exact_mass += w;
        std::map<Coordinates, big> diff;
        for (const auto& [x, w] : mu) diff[x] -= w, mass += w;
        for (const auto& [x, w] : exact) diff[x] += w * mass / exact_mass;
        for (const auto& [x, v] : diff) l1 += abs(v);
        REQUIRE(static_cast<double>(l1 / mass) <= d.error_bound() * (1 + 1e-9) + 1e-13);
        d = d.with_spread_error_bound(c.spread_error);  // as the runtime keeps it: the exact law up to a constant
        require_bound(d, exact, "condition", !spread);
      } else if (op == 4 && k >= 2) {  // X_a + X_b in place of X_a
        const int b = (a + 1) % k;
        d = sum_of_coordinates(d, a, b, a, t);
        JointLaw next;
        for (const auto& [x, p] : exact) {
          Coordinates z = x;
          z[std::size_t(a)] += x[std::size_t(b)];
          next[z] += p;
        }
        exact = std::move(next);
        require_bound(d, exact, "sum_of_coordinates", !spread);
      } else if (op == 5 && k >= 2) {  // X_a drawn (its likeliest value): the others' law at it, normalized
        const Pmf m = marginal(d, a);
        Eigen::Index top = 0;
        m.weights().maxCoeff(&top);
        const std::int64_t v = m.lo() + top;
        const JointPmf s = slice(d, a, v), n = s.normalized();
        const big scale = exp(big(n.log_scale()) - big(s.log_scale()));
        JointLaw next;
        for (const auto& [x, p] : exact) {
          if (x[std::size_t(a)] != v) continue;
          Coordinates z = x;
          z.erase(z.begin() + a);
          next[z] = p * scale;
        }
        exact = std::move(next);
        d = n;
        require_bound(d, exact, "slice", !spread);
      } else {  // truncation between operations, as the runtime does after each: the cut mass is dropped measure
        Truncation cut = t;
        cut.tolerance = std::pow(10.0, -1.0 - 5.0 * u(gen));
        d = truncate(d, cut);
        require_bound(d, exact, "truncate", !spread);
      }
    }
  }
}

}  // namespace test_joint_dropped
