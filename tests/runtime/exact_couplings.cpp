// Couplings of marginalized variables kept exact in strict mode: several children of one count that go on, a sum
// of a variable and its own descendants, marginals after observations, whatever handles are alive; each program
// against a 50-digit enumeration of its joint law.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/enumerate.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/graph.hpp"

namespace test_exact_couplings {

using namespace tally;
using namespace tally::runtime;
using namespace tally::test;

namespace {

constexpr std::int64_t poisson_top = 80;  // Poisson(10)'s mass above 80 is below 1e-40

Kernel poisson_kernel(double rate) {
  return [rate](const Assignment&) { return poisson_law(rate, poisson_top); };
}
Kernel thinning_kernel(std::size_t parent, double q) {
  return [parent, q](const Assignment& a) { return binomial_law(a[parent], q); };
}
Kernel observed_thinning(std::size_t parent, double q, std::int64_t y) {
  return [parent, q, y](const Assignment& a) {
    const Law l = binomial_law(a[parent], q);
    return l.count(y) ? Law{{y, l.at(y)}} : Law{};
  };
}
const Event all = [](const Assignment&) { return true; };

}  // namespace

TEST_CASE("Two thinned children of one count that both go on are exact in strict mode", "[runtime][exact]") {
  const auto live = Graph::live_nodes();
  {
    // x ~ Poisson(10); a, b ~ Binomial(x, .5); observe Binomial(a, .5) = 2, then Binomial(b, .5) = 2
    const Joint joint = enumerate({poisson_kernel(10), thinning_kernel(0, .5), thinning_kernel(0, .5),
                                   observed_thinning(1, .5, 2), observed_thinning(2, .5, 2)});
    for (const std::size_t particles : {std::size_t{1}, std::size_t{5}}) {
      Graph g(particles, 3, Device::cpu);
      g.strict(true);
      const Variable x = g.assume(Poisson(10.0));
      const Variable a = g.assume(x, Thinning(.5));
      const Variable b = g.assume(x, Thinning(.5));
      const Observation first = g.observe(g.assume(a, Thinning(.5)), 2);
      const Observation second = g.observe(g.assume(b, Thinning(.5)), 2);
      CHECK(first.exact());
      CHECK(second.exact());
      for (std::size_t i = 0; i < particles; ++i)
        require_log_prob(first[i] + second[i], probability(joint, all), 1e-9);
      require_law_close(g.marginal(x)[particles - 1], posterior(joint, 0, all), 1e-9, 1e-8);
      require_law_close(g.marginal(a)[0], posterior(joint, 1, all), 1e-9, 1e-8);
      require_law_close(g.marginal(b)[0], posterior(joint, 2, all), 1e-9, 1e-8);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A sum of a variable and its own difference is exact: (x - T) + T observed", "[runtime][exact]") {
  // x ~ Poisson(10); T ~ Binomial(x, .5); observe (x - T) + T = 7
  const Joint joint = enumerate({poisson_kernel(10), thinning_kernel(0, .5)});
  const Event seven = [](const Assignment& v) { return v[0] == 7; };
  for (const bool keep_handles : {true, false}) {
    Graph g(1, 1, Device::cpu);
    g.strict(true);
    Variable x = g.assume(Poisson(10.0));
    Variable t = g.assume(x, Thinning(.5));
    Variable d = g.subtract(x, t);
    const Variable s = g.add(d, t);
    if (!keep_handles) x = d = Variable{};
    const Observation o = g.observe(s, 7);
    CHECK(o.exact());
    require_log_prob(o[0], probability(joint, seven), 1e-9);
    require_law_close(g.marginal(t)[0], posterior(joint, 1, seven), 1e-9);
  }
}

TEST_CASE("Binomial(x, .5) + Binomial(Binomial(x, .5), .5) is exact whichever handles are alive", "[runtime][exact]") {
  // x ~ Poisson(10); u, v ~ Binomial(x, .5); w ~ Binomial(v, .5); observe u + w = 6
  const Joint joint = enumerate({poisson_kernel(10), thinning_kernel(0, .5), thinning_kernel(0, .5), thinning_kernel(2, .5)});
  const Event six = [](const Assignment& v) { return v[1] + v[3] == 6; };
  for (int form = 0; form < 3; ++form) {
    INFO("form " << form);
    Graph g(1, 1, Device::cpu);
    g.strict(true);
    const Variable x = g.assume(Poisson(10.0));
    Variable v, s;
    if (form == 0) {  // as one expression
      s = g.add(g.assume(x, Thinning(.5)), g.assume(g.assume(x, Thinning(.5)), Thinning(.5)));
    } else {  // the inner node held (form 1), or also observed later (form 2)
      v = g.assume(x, Thinning(.5));
      s = g.add(g.assume(x, Thinning(.5)), g.assume(v, Thinning(.5)));
    }
    const Observation o = g.observe(s, 6);
    CHECK(o.exact());
    require_log_prob(o[0], probability(joint, six), 1e-9);
    require_law_close(g.marginal(x)[0], posterior(joint, 0, six), 1e-9, 1e-13);
    if (form > 0) require_law_close(g.marginal(v)[0], posterior(joint, 2, six), 1e-9, 1e-13);
    if (form == 2) {
      const Event both = [](const Assignment& a) { return a[1] + a[3] == 6 && a[2] == 4; };
      const Observation o2 = g.observe(v, 4);
      CHECK(o2.exact());
      require_log_prob(o[0] + o2[0], probability(joint, both), 1e-9);
      require_law_close(g.marginal(x)[0], posterior(joint, 0, both), 1e-9, 1e-13);
    }
  }
}

TEST_CASE("marginal() after an observed function of a sum reads the exact posterior", "[runtime][exact]") {
  // a, b ~ Bernoulli(.5); c = [a + b == 2] observed 0: P(a = 1 | c = 0) = 1/3
  Eigen::MatrixXd indicator(3, 2);
  indicator << 1, 0, 1, 0, 0, 1;
  for (const std::size_t particles : {std::size_t{1}, std::size_t{3}}) {
    Graph g(particles, 1, Device::cpu);
    g.strict(true);
    const Variable a = g.assume(Bernoulli(.5));
    const Variable b = g.assume(Bernoulli(.5));
    const Observation o = g.observe(g.assume(g.add(a, b), MarkovStep(indicator)), 0);
    CHECK(o.exact());
    CHECK(o[0] == Approx(std::log(0.75)).epsilon(1e-14));
    const std::vector<Pmf> ma = g.marginal(a);
    for (const Pmf& m : ma) CHECK(pdf(m, 1) == Approx(1.0 / 3.0).epsilon(1e-14));
    // and b's, with a's handle still alive
    CHECK(pdf(g.marginal(b)[0], 1) == Approx(1.0 / 3.0).epsilon(1e-14));
    // a draw of a then conditions b: P(b = 1 | a = 1, c = 0) = 0
    const std::vector<std::int64_t> va = g.value(a);
    for (std::size_t i = 0; i < particles; ++i)
      CHECK(pdf(g.marginal(b)[i], 1) == Approx(va[i] == 1 ? 0.0 : 0.5).margin(1e-15));
  }
}

TEST_CASE("A chain's variable given a second child after its first absorbed observations: exact", "[runtime][exact]") {
  // x ~ Binomial(12, .4); y ~ Binomial(x, .7); observe Binomial(y, .5) = 3; z ~ Binomial(y, .3) observe 2; then x = 6
  const Joint joint = enumerate({[](const Assignment&) { return binomial_law(12, .4); }, thinning_kernel(0, .7),
                                 observed_thinning(1, .5, 3), observed_thinning(1, .3, 2)});
  Graph g(2, 5, Device::cpu);
  g.strict(true);
  const Variable x = g.assume(Binomial(12, .4));
  const Variable y = g.assume(x, Thinning(.7));
  const Observation o1 = g.observe(g.assume(y, Thinning(.5)), 3);
  const Observation o2 = g.observe(g.assume(y, Thinning(.3)), 2);
  CHECK(o1.exact());
  CHECK(o2.exact());
  require_log_prob(o1[1] + o2[1], probability(joint, all), 1e-12);
  require_law_close(g.marginal(x)[1], posterior(joint, 0, all), 1e-12);
  const Observation o3 = g.observe(x, 6);
  const Event six = [](const Assignment& v) { return v[0] == 6; };
  require_log_prob(o1[0] + o2[0] + o3[0], probability(joint, six), 1e-12);
  require_law_close(g.marginal(y)[0], posterior(joint, 1, six), 1e-12);
}

TEST_CASE("Log-likelihoods bound to a const reference outlive the temporary observation", "[runtime][exact]") {
  Graph g(3, 1, Device::cpu);
  const Variable x = g.assume(Binomial(4, .5));
  const std::vector<double>& ll = g.observe(x, 1);  // a vector of its own, not a reference into the temporary
  const std::vector<double> again = g.observe(g.assume(Binomial(4, .5)), 2).log_likelihoods();
  REQUIRE(ll.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(ll[i] == Approx(std::log(4.0 / 16.0)).epsilon(1e-14));
    CHECK(again[i] == Approx(std::log(6.0 / 16.0)).epsilon(1e-14));
  }
}

TEST_CASE("Observing a chain's variable that absorbed observations of its own child weighs them", "[runtime][exact]") {
  // x ~ Binomial(5, .6); y ~ Binomial(x, .5); observe Binomial(y, .2) = 0; then observe y = 0
  const Joint joint = enumerate({[](const Assignment&) { return binomial_law(5, .6); }, thinning_kernel(0, .5),
                                 observed_thinning(1, .2, 0)});
  const Event y0 = [](const Assignment& v) { return v[1] == 0; };
  Graph g(1, 1, Device::cpu);
  g.strict(true);
  const Variable x = g.assume(Binomial(5, .6));
  const Variable y = g.assume(x, Thinning(.5));
  const Observation o1 = g.observe(g.assume(y, Thinning(.2)), 0);
  const Observation o2 = g.observe(y, 0);
  require_log_prob(o1[0] + o2[0], probability(joint, y0), 1e-12);
  require_law_close(g.marginal(x)[0], posterior(joint, 0, y0), 1e-12);
}


TEST_CASE("A sum of a variable's child and the variable, realized while the sum is grafted, conditions the child",
          "[runtime][exact]") {
  // found by the differential tester: x = a + b with a, b observed (x initialized, its operands realized);
  // y ~ Binomial(x, .365); observe y - x = -1 must make y = 0 certain
  Graph g(3, 1, Device::cpu);
  g.strict(true);
  const Variable a = g.assume(Bernoulli(0.51)), b = g.assume(Bernoulli(0.70));
  const Variable x = g.add(a, b);
  g.observe(b, 1);
  g.observe(a, 0);
  const Variable y = g.assume(x, Thinning(0.365));
  const Observation o = g.observe(g.subtract(y, x), -1);
  CHECK(o[0] == Approx(std::log(1 - 0.365)).epsilon(1e-14));
  for (const Pmf& m : g.marginal(y)) CHECK(pdf(m, 0) == Approx(1.0).epsilon(1e-14));
  CHECK(g.observe(g.subtract(y, g.constant(0)), 0)[1] == Approx(0.0).margin(1e-14));
}

TEST_CASE("A variable tied by an observed sum follows its partner's later observations after the partner dies",
          "[runtime][exact]") {
  // found by the differential tester: y = x + c tied by observing x + c = 1, c's law read, x conditioned by its
  // child 2x + 1 = 1 (x = 0) and dropped: c = 1 is then certain
  Graph g(1, 1, Device::cpu);
  g.strict(true);
  Variable x = g.assume(UniformInt(-1, 2));
  const Variable c = g.assume(Categorical(Eigen::Vector3d(.2, .5, .3)));
  const Variable child = g.affine(x, 2, 1);
  g.observe(g.add(x, c), 1);
  g.marginal(c);
  x = Variable{};
  g.observe(child, 1);
  CHECK(g.observe(c, 1)[0] == Approx(0.0).margin(1e-14));
}

TEST_CASE("A far-tail observation of a Poisson prior gets its exact log-likelihood, directly and through a thinning",
          "[runtime][exact]") {
  Graph g(2, 1, Device::cpu);
  g.strict(true);
  const Observation direct = g.observe(g.assume(Poisson(10.0)), 200);  // log P = -412.7
  require_log_prob(direct[1], exp_big(log_poisson(200, big(10.0))), 1e-12);
  CHECK(direct.exactness().truncation_error < 1e-12);
  const Observation thinned = g.observe(g.assume(g.assume(Poisson(10.0)), Thinning(.5)), 200);  // Poisson(5) at 200
  require_log_prob(thinned[0], exp_big(log_poisson(200, big(5.0))), 1e-10);
  CHECK(thinned.exactness().truncation_error < 1e-6);
}

TEST_CASE("A tied joint sum with a live child operand keeps its tie and its child apart when its chain is absorbed",
          "[runtime][exact]") {
  // found by the differential tester: t = c - b with c ~ Binomial(b, .78) alive (a joint sum), b ~ Binomial(x, .6);
  // s = y - t observed, which ties t to y (t keeps its own parent b); a sum y + y makes y a joint law first. Absorbing
  // x's chain read the tie's constant as the realized value of c: x's posterior was wrong
  const auto live = Graph::live_nodes();
  {
    const Joint joint = enumerate({[](const Assignment&) { return binomial_law(5, .55); },
                                   [](const Assignment&) { return binomial_law(2, .14); }, thinning_kernel(0, .6),
                                   thinning_kernel(2, .78),
                                   [](const Assignment& a) { return point_law(a[1] - (a[3] - a[2])); }});
    const Event observed = [](const Assignment& a) { return a[4] == 0; };
    for (const std::size_t particles : {std::size_t{1}, std::size_t{3}}) {
      Graph g(particles, 5, Device::cpu);
      g.strict(true);
      const Variable x = g.assume(Binomial(5, .55)), y = g.assume(Binomial(2, .14));
      const Variable b = g.assume(x, Thinning(.6));
      const Variable c = g.assume(b, Thinning(.78));
      const Variable t = g.subtract(c, b);
      const Variable twice = g.add(y, y);
      const Observation o = g.observe(g.subtract(y, t), 0);
      CHECK(o.exact());
      require_log_prob(o[particles - 1], probability(joint, observed), 1e-9);
      require_law_close(g.marginal(x)[0], posterior(joint, 0, observed), 1e-9, 1e-8);
      require_law_close(g.marginal(c)[particles - 1], posterior(joint, 3, observed), 1e-9, 1e-8);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A sum tied by an observation keeps what it said after its partner dies, when its parent's chain is absorbed",
          "[runtime][exact]") {
  // found by the differential tester: s = x + b, x observed; d = m - s observed 0 ties s to m; m dies, so s holds m's
  // law (s = m, hence b = 0 here); a new child of b then took b's component over without that law: b kept its prior
  for (const bool read_before : {false, true}) {
    Graph g(2, 7, Device::cpu);
    g.strict(true);
    const Variable x = g.assume(Binomial(5, .13));
    const Variable b = g.assume(x, Thinning(.48));
    g.marginal(b);
    const Variable s = g.add(x, b);
    g.observe(x, 2);
    Eigen::MatrixXd t(6, 3);
    t << .2, .3, .5, .1, .6, .3, .3, .3, .4, .5, .2, .3, .25, .25, .5, .1, .1, .8;
    Variable m = g.assume(x, MarkovStep(t));
    const Observation o = g.observe(g.subtract(m, s), 0);  // m = s = 2 + b with m <= 2: b = 0 and m = 2
    CHECK(o[1] == Approx(std::log(.4 * std::pow(1 - .48, 2))).epsilon(1e-12));
    if (read_before) CHECK(pdf(g.marginal(b)[0], 0) == Approx(1.0).epsilon(1e-14));
    m = Variable{};
    const Observation child = g.observe(g.assume(b, Thinning(.38)), 0);
    CHECK(child[0] == Approx(0.0).margin(1e-14));
    CHECK(child.exact());
    CHECK(pdf(g.marginal(b)[1], 0) == Approx(1.0).epsilon(1e-14));
  }
}

namespace {
/// log P(X + sign_d D = y) for X ~ Poisson(rate), D | X ~ Binomial(X, q), summed in long double.
double log_sum_with_thinned(double rate, double q, std::int64_t y, std::int64_t top) {
  long double p = 0;
  for (std::int64_t x = 0; x <= top; ++x) {
    const std::int64_t d = y - x;
    if (d < 0 || d > x) continue;
    p += std::exp(static_cast<long double>(log_pdf(Poisson(rate), x) + log_pdf(Binomial(x, q), d)));
  }
  return static_cast<double>(std::log(p));
}
}  // namespace

TEST_CASE("A variable plus its descendant through a chain of unheld thinnings is exact at any depth",
          "[runtime][exact]") {
  // X ~ Poisson(20); D = X thinned k times (no handle on the steps between); observe X + D = 30. The chain's
  // steps are summed out as the joint law is built (their only owners are the chain's links), so the table never
  // holds more than X, the step being added and D: it was refused past depth 3 (the product of every step's
  // extent exceeded the budget).
  const auto live = Graph::live_nodes();
  for (const int depth : {1, 2, 5, 12, 40}) {
    INFO("depth " << depth);
    Graph g(2, 1, Device::cpu);
    g.strict(true);
    const Variable x = g.assume(Poisson(20.0));
    Variable d = x;
    for (int k = 0; k < depth; ++k) d = g.assume(d, Thinning(0.9));
    const Observation o = g.observe(g.add(x, d), 30);
    CHECK(o.exact());
    const double q = std::pow(0.9, depth);
    for (std::size_t i = 0; i < 2; ++i) CHECK(o[i] == Approx(log_sum_with_thinned(20.0, q, 30, 30)).epsilon(1e-11));
    // X's posterior: P(X = x | X + D = 30) proportional to Poisson(x; 20) Binomial(30 - x; x, q) (a joint law
    // cuts its axes' outer values below the tolerance, 1e-15: the margin)
    const Pmf mx = g.marginal(x)[1];
    for (std::int64_t v = 15; v <= 30; ++v) {
      const double want = std::exp(log_pdf(Poisson(20.0), v) + log_pdf(Binomial(v, q), 30 - v) - o[0]);
      CHECK(pdf(mx, v) == Approx(want).epsilon(1e-9).margin(1e-15));
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A deep diamond: two chains of unheld thinnings from one count, their sum observed, exact",
          "[runtime][exact]") {
  // X ~ Poisson(12); A = X thinned 6 times, B = X thinned 9 times (by 0.85); observe A + B = 7. Given X = x,
  // A ~ Binomial(x, a), B ~ Binomial(x, b) independently: P = sum_x Poisson(x) sum_u Bin(u; x, a) Bin(7 - u; x, b).
  const double a = std::pow(0.85, 6), b = std::pow(0.85, 9);
  long double p = 0;
  for (std::int64_t x = 0; x <= 90; ++x)
    for (std::int64_t u = 0; u <= std::min<std::int64_t>(x, 7); ++u)
      if (7 - u <= x)
        p += std::exp(static_cast<long double>(log_pdf(Poisson(12.0), x) + log_pdf(Binomial(x, a), u) +
                                               log_pdf(Binomial(x, b), 7 - u)));
  for (const bool hold_x : {true, false}) {
    INFO("x held " << hold_x);
    Graph g(1, 1, Device::cpu);
    g.strict(true);
    Variable x = g.assume(Poisson(12.0));
    Variable ca = x, cb = x;
    for (int k = 0; k < 6; ++k) ca = g.assume(ca, Thinning(0.85));
    for (int k = 0; k < 9; ++k) cb = g.assume(cb, Thinning(0.85));
    if (!hold_x) x = Variable{};
    const Observation o = g.observe(g.add(ca, cb), 7);
    CHECK(o.exact());
    CHECK(o[0] == Approx(static_cast<double>(std::log(p))).epsilon(1e-11));
  }
}

TEST_CASE("Live sums of sums of coupled variables are read from one small table (linear members)",
          "[runtime][exact]") {
  // x ~ Poisson(10); a = Binomial(x, .5); s1 = x + a; s2 = s1 + a; s3 = s2 - x (= 2a); s4 = s3 + s1 (= x + 3a),
  // every handle alive. The sums are linear forms of x and a, kept out of the table: under a budget of 64 KiB
  // (a table over x and a takes about 20 KiB; one more axis for each live sum would need megabytes) the program
  // is exact, observations and marginals alike.
  const Joint joint = enumerate({poisson_kernel(10), thinning_kernel(0, .5)});
  const Event first = [](const Assignment& v) { return v[0] + 3 * v[1] == 14; };
  const Event both = [](const Assignment& v) { return v[0] + 3 * v[1] == 14 && v[0] + v[1] == 8; };
  const auto live = Graph::live_nodes();
  for (const std::size_t particles : {std::size_t{1}, std::size_t{3}}) {
    Truncation t;
    t.max_joint_bytes = 64 << 10;
    Graph g(particles, 1, Device::cpu, t);
    g.strict(true);
    const Variable x = g.assume(Poisson(10.0));
    const Variable a = g.assume(x, Thinning(.5));
    const Variable s1 = g.add(x, a);
    const Variable s2 = g.add(s1, a);
    const Variable s3 = g.subtract(s2, x);
    const Variable s4 = g.add(s3, s1);
    const Observation o = g.observe(s4, 14);
    CHECK(o.exact());
    for (std::size_t i = 0; i < particles; ++i) require_log_prob(o[i], probability(joint, first), 1e-9);
    require_law_close(g.marginal(x)[0], posterior(joint, 0, first), 1e-9, 1e-13);
    require_law_close(g.marginal(s1)[particles - 1],
                      posterior(joint, [](const Assignment& v) { return v[0] + v[1]; }, first), 1e-9, 1e-13);
    require_law_close(g.marginal(s3)[0], posterior(joint, [](const Assignment& v) { return 2 * v[1]; }, first), 1e-9,
                      1e-13);
    // s1 = 8 then fixes both: a = 3, x = 5
    const Observation o2 = g.observe(s1, 8);
    CHECK(o2.exact());
    require_log_prob(o[0] + o2[0], probability(joint, both), 1e-9);
    CHECK(g.value(x)[0] == 5);
    CHECK(g.value(s2)[0] == 11);
  }
  REQUIRE(Graph::live_nodes() == live);
}

TEST_CASE("A count inside a sum of many counts, the total observed: its marginal is exact whatever the sum's shape",
          "[runtime][exact]") {
  // N_d ~ Poisson(lambda_d), each seen through B_d ~ Binomial(N_d, q), d = 1..K; then the total T = N_1 + ... + N_K
  // observed, the sum built as a random tree of binary sums (a chain in day order among them). Given the B_d the
  // N_d - B_d are independent Poisson(mu_d), mu_d = lambda_d (1 - q); given T too, N_d - B_d ~ Binomial(R, mu_d /
  // sum mu) with R = T - sum B. Asking for one count's marginal makes the runtime take over the sum's component:
  // built in a good order, each sum takes the place of an operand nobody needs any more, so the table never holds
  // more than the kept counts, the partial sum and one operand (left to right in day order it used to hold a sum
  // with both its operands and a few other counts, and was refused past the joint laws' budget).
  const double q = 0.3;
  const std::vector<std::int64_t> observed{7, 4, 6, 9, 5, 8, 3};
  std::mt19937_64 rng(20261202);
  const auto live = Graph::live_nodes();
  for (int round = 0; round < 24; ++round) {
    const std::size_t K = 3 + static_cast<std::size_t>(round) % 5;  // 3 .. 7 counts
    std::vector<double> lambda(K);
    for (double& l : lambda) l = std::uniform_real_distribution<double>(12.0, 28.0)(rng);
    const std::size_t queried = std::uniform_int_distribution<std::size_t>(0, K - 1)(rng);
    const bool chain = round % 3 == 0;  // ((N_1 + N_2) + N_3) + ...
    const bool hold_other = round % 4 == 1;  // a second count keeps its handle (then it is a coordinate too)
    const std::size_t other = (queried + 1) % K;
    INFO("round " << round << ", " << K << " counts, N_" << queried + 1 << " queried, "
                  << (chain ? "a chain" : "a random tree") << (hold_other ? ", another count held" : ""));
    Graph g(1, 1, Device::cpu);
    g.strict(true);
    std::vector<Variable> terms, counts(K);
    double rest_rate = 0;
    std::int64_t seen = 0;
    for (std::size_t d = 0; d < K; ++d) {
      counts[d] = g.assume(Poisson(lambda[d]));
      const Observation o = g.observe(g.assume(counts[d], Thinning(q)), observed[d]);
      REQUIRE(o.exact());
      CHECK(o[0] == Approx(log_pdf(Poisson(lambda[d] * q), observed[d])).epsilon(1e-11));
      seen += observed[d];
      rest_rate += lambda[d] * (1 - q);
      terms.push_back(counts[d]);
    }
    while (terms.size() > 1) {
      const std::size_t a = chain ? 0 : std::uniform_int_distribution<std::size_t>(0, terms.size() - 1)(rng);
      std::size_t b = chain ? 1 : std::uniform_int_distribution<std::size_t>(0, terms.size() - 2)(rng);
      if (!chain && b >= a) ++b;
      const Variable s = g.add(terms[a], terms[b]);
      terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::max(a, b)));
      terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(std::min(a, b)));
      terms.insert(terms.begin(), s);
    }
    const std::int64_t total = seen + 60;
    const Observation o = g.observe(terms[0], total);
    REQUIRE(o.exact());
    CHECK(o[0] == Approx(log_pdf(Poisson(rest_rate), total - seen)).epsilon(1e-11));
    const Variable n = counts[queried], kept = hold_other ? counts[other] : Variable{};
    terms.clear();
    counts.clear();
    INFO("the total observed: its marginal asked for");
    if (!hold_other) {
      const Pmf m = g.marginal(n)[0];
      const Binomial share(total - seen, lambda[queried] * (1 - q) / rest_rate);
      for (std::int64_t k = 0; k <= total - seen; ++k)
        CHECK(pdf(m, observed[queried] + k) == Approx(pdf(share, k)).epsilon(1e-9).margin(1e-15));
    } else {
      const Pmf m = g.marginal(kept)[0];
      const Binomial share(total - seen, lambda[other] * (1 - q) / rest_rate);
      for (std::int64_t k = 0; k <= total - seen; ++k)
        CHECK(pdf(m, observed[other] + k) == Approx(pdf(share, k)).epsilon(1e-9).margin(1e-15));
      // the two held counts, drawn one after the other, stay within what the data allow
      const std::int64_t a = g.value(n)[0], b = g.value(kept)[0];
      CHECK(a >= observed[queried]);
      CHECK(b >= observed[other]);
      CHECK(a - observed[queried] + b - observed[other] <= total - seen);
    }
  }
  REQUIRE(Graph::live_nodes() == live);
}

}  // namespace test_exact_couplings
