// Structural supports: in_support against the dense marginals, and observe's -inf at once outside the support.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"

namespace test_support {

using namespace tally;
using namespace tally::runtime;

namespace {
constexpr double ninf = -std::numeric_limits<double>::infinity();
const std::vector<double> probs{0.3, 0.5, 0.7};

/// w_0 B_0 + w_1 B_1 + ... in g, with B_i ~ Bernoulli(p_i) (p cycles through probs).
Variable weighted_sum(Graph& g, const std::vector<std::int64_t>& w) {
  Variable total;
  for (std::size_t i = 0; i < w.size(); ++i) {
    auto term = g.affine(g.assume(Bernoulli(probs[i % probs.size()])), w[i], 0);
    total = i == 0 ? term : g.add(total, term);
  }
  return total;
}

/// Every subset sum of w.
std::set<std::int64_t> subset_sums(const std::vector<std::int64_t>& w) {
  std::set<std::int64_t> sums{0};
  for (auto x : w) {
    auto next = sums;
    for (auto s : sums) next.insert(s + x);
    sums = std::move(next);
  }
  return sums;
}

/// The exact P(sum = v) for the weights 1, 3, 5 (all subset sums are distinct).
double exact_135(std::int64_t v) {
  double p = 0;
  for (int m = 0; m < 8; ++m) {
    std::int64_t s = 0;
    double q = 1;
    for (int i = 0; i < 3; ++i) {
      const bool on = (m >> i) & 1;
      s += on ? std::int64_t{1} + 2 * i : 0;
      q *= on ? probs[i] : 1 - probs[i];
    }
    if (s == v) p += q;
  }
  return p;
}
}  // namespace

TEST_CASE("Structural support: 10^6 B1 + 3 10^6 B2 + 5 10^6 B3 = 2 10^6 is -inf at once, with no dense pmf",
          "[runtime][support]") {
  const auto live = Graph::live_nodes();
  {
    const Truncation small{1e-15, std::int64_t{1} << 20};  // the dense range, 9 10^6 + 1, does not fit
    const std::vector<std::int64_t> w{1000000, 3000000, 5000000};
    {
      Graph dense(1, 1, small);
      REQUIRE_THROWS_AS(dense.marginal(weighted_sum(dense, w)), overflow_error);  // what observe used to do
    }
    Graph g(1, 1, small);
    auto s = weighted_sum(g, w);
    for (std::int64_t v = -1; v <= 9000001; v += 500000) REQUIRE(g.in_support(s, v) == subset_sums(w).count(v) > 0);
    REQUIRE_FALSE(g.in_support(s, 2000000));
    REQUIRE(g.in_support(s, 4000000));
    REQUIRE(g.observe(s, 2000000)[0] == ninf);
    REQUIRE(g.log_weights()[0] == ninf);
    REQUIRE(g.value(s)[0] == 2000000);  // realized at the observed value, as observe does
    REQUIRE_THROWS_AS(g.observe(s, 4000000), usage_error);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Structural support: B1 + 3 B2 + 5 B3, every observation agrees with the dense path", "[runtime][support]") {
  for (std::int64_t v = -2; v <= 11; ++v) {
    INFO("observed " << v);
    Graph dense(1, 7), g(1, 7);
    const Pmf m = dense.marginal(weighted_sum(dense, {1, 3, 5}))[0];
    auto s = weighted_sum(g, {1, 3, 5});
    REQUIRE(g.in_support(s, v) == (log_pdf(m, v) > ninf));
    const double ll = g.observe(s, v)[0];
    REQUIRE(ll == Approx(log_pdf(m, v)).epsilon(1e-14));  // -inf == -inf included
    if (exact_135(v) > 0)
      REQUIRE(ll == Approx(std::log(exact_135(v))).epsilon(1e-14));
    else
      REQUIRE(ll == ninf);
    REQUIRE(g.log_weights()[0] == ll);
    REQUIRE(g.value(s)[0] == v);
  }
}

TEST_CASE("Structural support: per-particle observations, -inf at once only when every value is outside",
          "[runtime][support]") {
  const Truncation small{1e-15, std::int64_t{1} << 20};
  const std::vector<std::int64_t> big_w{1000000, 3000000, 5000000};
  {
    Graph g(3, 2, small);
    auto s = weighted_sum(g, big_w);
    const auto ll = g.observe(s, std::vector<std::int64_t>{2000000, 7000000, -1});
    REQUIRE(ll.log_likelihoods() == std::vector<double>(3, ninf));
    REQUIRE(g.log_weights() == std::vector<double>(3, ninf));
    REQUIRE(g.value(s) == std::vector<std::int64_t>{2000000, 7000000, -1});
  }
  {
    // one possible value: the usual (dense) path runs for all particles, and here it does not fit
    Graph g(3, 2, small);
    auto s = weighted_sum(g, big_w);
    REQUIRE_THROWS_AS(g.observe(s, std::vector<std::int64_t>{2000000, 4000000, -1}), overflow_error);
  }
  {
    Graph g(4, 2);
    auto s = weighted_sum(g, {1, 3, 5});
    const auto ll = g.observe(s, std::vector<std::int64_t>{2, 4, 9, 7});
    for (std::size_t i = 0; i < 4; ++i) {
      const std::int64_t v = std::vector<std::int64_t>{2, 4, 9, 7}[i];
      INFO("particle " << i);
      if (exact_135(v) > 0)
        REQUIRE(ll[i] == Approx(std::log(exact_135(v))).epsilon(1e-14));
      else
        REQUIRE(ll[i] == ninf);
    }
    REQUIRE(ll[0] == ninf);
    REQUIRE(std::isfinite(ll[1]));
  }
}

TEST_CASE("Structural support: differences, affine maps, realized and marginalized operands against the dense marginal",
          "[runtime][support]") {
  for (int form = 0; form < 5; ++form) {
    INFO("form " << form);
    auto build = [form](Graph& g) {
      auto x = g.assume(Binomial(3, 0.4));
      auto y = g.assume(Categorical(Eigen::Vector4d(0.5, 0.0, 0.2, 0.3)));  // 1 is impossible
      if (form == 2) g.value(x);                                           // a realized operand
      if (form == 3) g.marginal(y);                                        // a marginalized operand
      auto a = g.affine(x, form == 1 ? -4 : 2, 1), b = g.affine(y, 3, -2);
      if (form == 4) return g.add(g.subtract(b, a), g.affine(y, -1, 0));  // y twice: dependent operands
      return form == 1 ? g.subtract(b, a) : g.subtract(a, b);
    };
    Graph dense(1, 3), g(1, 3);
    const Pmf m = dense.marginal(build(dense))[0];
    auto z = build(g);
    int outside = 0;
    for (std::int64_t v = m.lo() - 3; v <= m.hi() + 3; ++v) {
      const bool possible = log_pdf(m, v) > ninf;
      outside += !g.in_support(z, v);
      if (form < 3) REQUIRE(g.in_support(z, v) == possible);  // exact: each operand's support is
      if (!g.in_support(z, v)) REQUIRE_FALSE(possible);        // a superset always
    }
    if (form < 4) REQUIRE(outside >= 6);  // at least the 3 values on each side of the range
  }
}

TEST_CASE("Structural support: bit rows up to 2^30 totals, pairwise sums beyond, against brute force",
          "[runtime][support]") {
  std::mt19937_64 gen(5);
  for (const std::int64_t scale : {std::int64_t{100000}, std::int64_t{1} << 40}) {
    INFO("weights up to " << scale);
    std::vector<std::int64_t> w(11);
    for (auto& x : w) x = 1 + static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(scale));
    const auto sums = subset_sums(w);
    Graph g;
    auto s = weighted_sum(g, w);
    for (auto v : sums)  // each call finds the support anew: check one subset sum in 8
      if (gen() % 8 == 0) REQUIRE(g.in_support(s, v));
    int impossible = 0;
    for (int k = 0; k < 300; ++k) {
      const auto v = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(11 * scale));
      REQUIRE(g.in_support(s, v) == (sums.count(v) > 0));
      impossible += sums.count(v) == 0;
    }
    REQUIRE(impossible > 150);
    const std::int64_t gap = *sums.rbegin() - 1;  // 1 is not a subset sum unless some weight is 1
    if (!sums.count(gap)) REQUIRE(g.observe(s, gap)[0] == ninf);
  }
}

TEST_CASE("Structural support: an interval operand is added by doubling shifts", "[runtime][support]") {
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    auto build = [form](Graph& g) {
      auto x = g.assume(UniformInt(0, 49 + 7 * form));  // fewer shifts than the 16 points of y
      auto y = weighted_sum(g, {100, 210, 430, 870});
      return form == 1 ? g.subtract(y, x) : g.add(x, y);
    };
    Graph dense, g;
    const Pmf m = dense.marginal(build(dense))[0];
    auto z = build(g);
    int outside = 0;
    for (std::int64_t v = m.lo() - 2; v <= m.hi() + 2; ++v) {
      REQUIRE(g.in_support(z, v) == (log_pdf(m, v) > ninf));
      outside += log_pdf(m, v) == ninf;
    }
    REQUIRE(outside > 300);
  }
}

TEST_CASE("Structural support: unknown supports answer true, and the usual path still gives -inf",
          "[runtime][support]") {
  Graph g;
  auto x = g.assume(Binomial(5, 0.5));
  auto y = g.assume(x, Thinning(0.5));
  auto z = g.add(g.affine(x, 10, 0), y);
  REQUIRE(g.in_support(y, -5));  // thinning: unknown
  REQUIRE(g.in_support(z, 7));   // so is a sum with it
  REQUIRE_FALSE(g.in_support(x, 6));
  REQUIRE_THROWS_AS(g.in_support(Variable(), 0), usage_error);
  REQUIRE(g.observe(z, 1000)[0] == ninf);
  REQUIRE(g.log_weights()[0] == ninf);
}

TEST_CASE("Structural support: after -inf at once the graph stays usable and frees everything", "[runtime][support]") {
  const auto live = Graph::live_nodes();
  {
    Graph g(2, 9);
    auto b = g.assume(Bernoulli(0.25));
    auto c = g.assume(Bernoulli(0.5));
    auto s = g.add(g.affine(b, 4, 0), g.affine(c, 6, 0));
    auto t = g.add(s, g.assume(Bernoulli(0.5)));  // a child of s: reads its value once realized
    REQUIRE(g.observe(s, 5)[0] == ninf);
    g.reset_log_weights();
    REQUIRE(g.value(s) == std::vector<std::int64_t>{5, 5});
    const auto vt = g.value(t);
    for (auto v : vt) REQUIRE((v == 5 || v == 6));
    const auto vb = g.value(b);  // its law is untouched: still Bernoulli(0.25)
    for (auto v : vb) REQUIRE((v == 0 || v == 1));
    REQUIRE(std::isfinite(g.observe(c, 1)[0]));
    REQUIRE(g.log_weights()[0] == Approx(std::log(0.5)));
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("Structural support: a chain of 3000 sums is handled without recursion", "[runtime][support]") {
  Graph g;
  auto s = weighted_sum(g, std::vector<std::int64_t>(3000, 2));
  REQUIRE(g.in_support(s, 6000));
  REQUIRE_FALSE(g.in_support(s, 5999));
  REQUIRE_FALSE(g.in_support(s, 6002));
  REQUIRE(g.observe(s, 2999)[0] == ninf);
}

}  // namespace test_support
