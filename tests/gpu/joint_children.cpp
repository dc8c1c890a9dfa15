// Batched joint laws: adding a child as a new axis (bounded, or a Poisson child on a window; one child for all laws
// or one per set, observed too), conditioning on a thinning selected by a state, drawing one coordinate. The CPU
// loops against the distributions' JointPmf operations (add_child, condition with a SelectedThinning,
// sample_coordinate with the same uniforms) and a brute-force marginal, and the device against the CPU loops (draws
// equal), on fresh random laws.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/distributions/sample.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_children {

using namespace tally;
using gpu::Backend;
using gpu::ChildKernel;
using gpu::Column;
using gpu::JointLaws;
using gpu::Table;
using test::each_point;
using test::inf;
using test::observations;
using test::random_laws;
using test::random_transition;
using test::require_inverse_cdf;
using test::require_same_batch;
using test::require_same_conditioning;
using test::require_same_measure;
using test::row_major;
using test::state_laws;
using test::to_joint;

namespace {

constexpr std::int64_t states = 30;  // random_laws' values lie in 0 .. 20 + max_extent - 1 < 30
constexpr std::int64_t categories = 4;

/// K keep probabilities in [0, 1), the first 0 and (for K > 2) the last 1.
std::vector<double> random_keep(std::mt19937_64& gen, std::size_t K) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> keep(K);
  for (auto& q : keep) q = u(gen);
  keep[0] = 0.0;
  if (K > 2) keep[K - 1] = 1.0;
  return keep;
}

/// The marginal of `axis` by enumerating the law's box (long double sums), as a rank-1 law.
JointLaws::Law brute_marginal(const JointLaws::Law& law, int axis) {
  const auto a = static_cast<std::size_t>(axis);
  std::vector<long double> sums(static_cast<std::size_t>(law.shape[a]), 0.0L);
  std::size_t e = 0;
  each_point(law, [&](const Coordinates& x, double) {
    sums[static_cast<std::size_t>(x[a] - law.lo[a])] += law.weights[e++];
  });
  JointLaws::Law m;
  m.lo = {law.lo[a]};
  m.shape = {law.shape[a]};
  for (const long double s : sums) m.weights.push_back(static_cast<double>(s));
  return m;
}

}  // namespace

TEST_CASE("batched joint laws: adding a bounded child is the distributions' add_child", "[gpu][joint]") {
  std::mt19937_64 gen(20261201);
  const std::size_t P = 40;
  const Eigen::MatrixXd t = random_transition(gen, states, categories);
  const ChildKernel categorical = ChildKernel::categorical(Table::from_host(row_major(t), states, categories, Backend::cpu));
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 5 : 9);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const double q = axis == 0 ? 0.35 : axis == 1 ? 1.0 : 1e-3;
      const JointLaws thinned = gpu::joint_add_child(x, axis, ChildKernel::binomial(q));
      const JointLaws stepped = gpu::joint_add_child(x, axis, categorical);
      REQUIRE(thinned.rank() == rank + 1);
      REQUIRE(stepped.rank() == rank + 1);
      const auto a = thinned.to_host(), b = stepped.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf d = to_joint(laws[i]);
        require_same_measure(a[i], add_child(d, axis, Thinning(q)));
        require_same_measure(b[i], add_child(d, axis, MarkovStep(t)));
      }
    }
  }
}

namespace {

/// A child of each kind per set of `per` laws (sets of them, on `where`), and the single children they are made of.
struct SetChildren {
  std::vector<ChildKernel> thinning, step, poisson;  // single children, one a set
  ChildKernel thinnings, steps, poissons;            // the same per set
};
SetChildren set_children(std::mt19937_64& gen, std::size_t sets, std::size_t per, std::int64_t K, Backend where) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  SetChildren c;
  for (std::size_t s = 0; s < sets; ++s) {
    c.thinning.push_back(ChildKernel::binomial(u(gen)));
    c.step.push_back(ChildKernel::categorical(
        Table::from_host(row_major(random_transition(gen, K, categories)), std::size_t(K), categories, where)));
    c.poisson.push_back(ChildKernel::scaled_poisson(0.2 + u(gen)));
  }
  c.thinnings = ChildKernel::per_set(c.thinning, per, where);
  c.steps = ChildKernel::per_set(c.step, per, where);
  c.poissons = ChildKernel::per_set(c.poisson, per, where);
  return c;
}

}  // namespace

TEST_CASE("batched joint laws: a child per set gives each law its set's child, added or observed", "[gpu][joint]") {
  std::mt19937_64 gen(20261208);
  const std::size_t per = 4, sets = 6, P = per * sets;
  const SetChildren c = set_children(gen, sets, per, states, Backend::cpu);
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const JointLaws x = JointLaws::from_host(rank, random_laws(gen, P, rank, rank == 3 ? 5 : 9), Backend::cpu);
    const auto v = observations(gen, P, 20, 30);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const auto added = [&](const ChildKernel& k) { return gpu::joint_add_child(x, axis, k).to_host(); };
      const auto observed = [&](const ChildKernel& k, std::vector<double>& ll) {
        auto l = Column<double>::host_values(std::vector<double>(P, 0.25));
        const auto out = gpu::joint_condition_on_child(x, axis, k, Column<std::int64_t>::host_values(v), l).to_host();
        ll = l.host();
        return out;
      };
      const auto thinned = added(c.thinnings), stepped = added(c.steps);
      std::vector<double> ll_t, ll_p;
      const auto given_t = observed(c.thinnings, ll_t), given_p = observed(c.poissons, ll_p);
      for (std::size_t s = 0; s < sets; ++s) {
        const auto one_t = added(c.thinning[s]), one_s = added(c.step[s]);
        std::vector<double> l1_t, l1_p;
        const auto g1_t = observed(c.thinning[s], l1_t), g1_p = observed(c.poisson[s], l1_p);
        for (std::size_t i = s * per; i < (s + 1) * per; ++i) {  // set s's laws: the same formulas, the same bits
          INFO("law " << i << " of set " << s);
          REQUIRE(thinned[i].weights == one_t[i].weights);
          REQUIRE(thinned[i].log_scale == one_t[i].log_scale);
          REQUIRE(stepped[i].weights == one_s[i].weights);
          REQUIRE(given_t[i].weights == g1_t[i].weights);
          REQUIRE(given_p[i].weights == g1_p[i].weights);
          REQUIRE(ll_t[i] == l1_t[i]);
          REQUIRE(ll_p[i] == l1_p[i]);
        }
      }
    }
  }
  const JointLaws wrong = JointLaws::from_host(1, random_laws(gen, P + 1, 1, 4), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_child(wrong, 0, c.thinnings), shape_error);  // 25 laws for 6 sets of 4
  auto ll = Column<double>::host_values(std::vector<double>(P + 1, 0.0));
  const auto ones = Column<std::int64_t>::host_values(std::vector<std::int64_t>(P + 1, 1));
  REQUIRE_THROWS_AS(gpu::joint_condition_on_child(wrong, 0, c.poissons, ones, ll), shape_error);
}

TEST_CASE("batched joint laws: a Poisson child on a window is the distributions' add_child on it", "[gpu][joint]") {
  std::mt19937_64 gen(20261210);
  const std::size_t P = 40;
  Eigen::VectorXd rates(states);
  for (Eigen::Index s = 0; s < rates.size(); ++s) rates[s] = 0.3 * double(s % 7);
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 4 : 7);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      for (const bool indexed : {false, true}) {
        INFO((indexed ? "indexed" : "scaled"));
        // tally::add_child's own windows, then the batch on them: the same measure
        std::vector<JointPmf> want;
        std::vector<std::int64_t> y_lo, y_hi;
        for (const auto& law : laws) {
          const JointPmf d = to_joint(law);
          want.push_back(indexed ? add_child(d, axis, IndexedPoisson(rates)) : add_child(d, axis, ScaledPoisson(0.7)));
          y_lo.push_back(want.back().lo().back());
          y_hi.push_back(want.back().lo().back() + want.back().shape().back() - 1);
        }
        const ChildKernel k = indexed ? ChildKernel::indexed_poisson(Table::from_host(
                                            std::vector<double>(rates.data(), rates.data() + rates.size()),
                                            std::size_t(states), 1, Backend::cpu))
                                      : ChildKernel::scaled_poisson(0.7);
        const auto got = gpu::joint_add_child(x, axis, k, y_lo, y_hi).to_host();
        for (std::size_t i = 0; i < P; ++i) {
          INFO("law " << i);
          require_same_measure(got[i], want[i]);
        }
      }
    }
  }
  const JointLaws x = JointLaws::from_host(1, random_laws(gen, 3, 1, 4), Backend::cpu);
  const std::vector<std::int64_t> lo{0, 0, 0}, hi{5, 5, 5};
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 0, ChildKernel::binomial(0.5), lo, hi), shape_error);  // bounded
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 0, ChildKernel::scaled_poisson(0.5), lo, {5, 5}), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 0, ChildKernel::scaled_poisson(0.5), {0, 3, 0}, {5, 2, 5}), domain_error);
  REQUIRE(gpu::joint_add_child(x, 0, ChildKernel::scaled_poisson(0.5), lo, hi).rank() == 2);  // still usable
}

TEST_CASE("batched joint laws: conditioning on a selected thinning is the distributions'", "[gpu][joint]") {
  std::mt19937_64 gen(20261202);
  const std::size_t P = 60;
  {  // rank 1: the count selects its own keep probability, Binomial(X, q_X)
    const auto laws = random_laws(gen, P, 1, 9);
    const auto keep = random_keep(gen, states);
    const auto v = observations(gen, P, 25, 29);
    auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
    const auto post = gpu::joint_condition_on_selected_thinning(JointLaws::from_host(1, laws, Backend::cpu), 0, 0, keep,
                                                                Column<std::int64_t>::host_values(v), ll)
                          .to_host();
    const SelectedThinning k(0, 0, Eigen::Map<const Eigen::VectorXd>(keep.data(), Eigen::Index(keep.size())));
    for (std::size_t i = 0; i < P; ++i) {
      INFO("rank 1, law " << i);
      require_same_conditioning(post, ll.host(), i, condition(to_joint(laws[i]), k, v[i]));
    }
  }
  for (int rank = 2; rank <= 3; ++rank) {  // the state on axis 0, the count on each other axis
    const auto laws = state_laws(gen, P, rank, 7);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    const auto keep = random_keep(gen, 2);
    const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(keep.data(), 2);
    for (int count = 1; count < rank; ++count) {
      INFO("rank " << rank << ", count axis " << count);
      const auto v = observations(gen, P, 15, 40);
      auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
      const auto post =
          gpu::joint_condition_on_selected_thinning(x, 0, count, keep, Column<std::int64_t>::host_values(v), ll).to_host();
      const SelectedThinning k(count, 0, q);
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        require_same_conditioning(post, ll.host(), i, condition(to_joint(laws[i]), k, v[i]));
      }
    }
  }
}

TEST_CASE("batched joint laws: drawing a coordinate is the distributions' sample_coordinate", "[gpu][joint]") {
  std::mt19937_64 gen(20261203);
  const std::size_t P = 100;
  const std::uint64_t seed = 20261204;
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 1 ? 600 : rank == 2 ? 12 : 6);  // rank 1: past 256 chunks
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    std::vector<double> uniforms(P);
    for (std::size_t i = 0; i < P; ++i) uniforms[i] = RandomStream(seed, i).uniform();  // sample_coordinate's
    uniforms[0] = 0.0;
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const gpu::JointCoordinateDraw draw = gpu::joint_sample_coordinate(x, axis, Column<double>::host_values(uniforms));
      REQUIRE(draw.value.size() == P);
      REQUIRE(draw.rest.has_value() == (rank > 1));
      const auto rest = draw.rest ? draw.rest->to_host() : std::vector<JointLaws::Law>{};
      if (draw.rest) REQUIRE(draw.rest->rank() == rank - 1);
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i << ", u " << uniforms[i] << ", drawn " << draw.value.host()[i]);
        require_inverse_cdf(brute_marginal(laws[i], axis), uniforms[i], draw.value.host().data() + i);
        if (i == 0) continue;  // u = 0 is outside RandomStream's (0, 1)
        RandomStream rng(seed, i);
        const CoordinateDraw want = sample_coordinate(to_joint(laws[i]), axis, rng);
        // the same uniform, the same value (the two cdfs round differently: a u * total within rounding of a cdf step
        // could draw a neighbour; none of these does)
        REQUIRE(draw.value.host()[i] == want.value);
        if (draw.rest) require_same_measure(rest[i], *want.rest);
      }
    }
  }
}

TEST_CASE("batched joint laws: bad arguments of children and draws are named errors", "[gpu][joint]") {
  std::mt19937_64 gen(13);
  auto laws = random_laws(gen, 4, 2, 4);
  laws[2].weights.assign(laws[2].weights.size(), 0.0);  // a law without mass
  const JointLaws x = JointLaws::from_host(2, laws, Backend::cpu);
  auto ll = Column<double>::host_values(std::vector<double>(4, 0.0));
  const auto v = Column<std::int64_t>::host_values(std::vector<std::int64_t>(4, 1));
  const std::vector<double> keep(states, 0.5);
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 0, ChildKernel::scaled_poisson(0.5)), domain_error);  // unbounded
  REQUIRE_THROWS_WITH(gpu::joint_add_child(x, 0, ChildKernel::scaled_poisson(0.5)), Catch::Contains("unbounded"));
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 0, ChildKernel::affine(2, 1)), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 2, ChildKernel::binomial(0.5)), shape_error);
  const JointLaws widest =
      JointLaws::from_host(gpu::max_joint_rank, random_laws(gen, 2, gpu::max_joint_rank, 2), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_child(widest, 0, ChildKernel::binomial(0.5)), shape_error);  // past the rank
  REQUIRE_THROWS_AS(gpu::joint_add_child(x, 1, ChildKernel::categorical(Table::from_host(
                                                   std::vector<double>{0.5, 0.5}, 1, 2, Backend::cpu))),
                    domain_error);  // values past the one state
  auto negative = laws;
  negative[1].lo[0] = -2;
  const JointLaws neg = JointLaws::from_host(2, negative, Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_child(neg, 0, ChildKernel::binomial(0.5)), domain_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_thinning(neg, 1, 0, keep, v, ll), domain_error);  // count < 0
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_thinning(x, 0, 1, {0.5, 0.5}, v, ll), domain_error);  // states
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_thinning(x, 0, 1, std::vector<double>(states, 1.5), v, ll),
                    domain_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_thinning(x, 0, 1, {}, v, ll), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_thinning(x, 0, 2, keep, v, ll), shape_error);
  REQUIRE_THROWS_AS(
      gpu::joint_condition_on_selected_thinning(x, 0, 1, keep, Column<std::int64_t>::host_values({1}), ll), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_sample_coordinate(x, -1, Column<double>::host_values(std::vector<double>(4, 0.5))),
                    shape_error);
  REQUIRE_THROWS_AS(gpu::joint_sample_coordinate(x, 0, Column<double>::host_values({0.5})), shape_error);
  // still usable; a law without mass keeps none: its child, and the rest of its draw (at lo_axis), have scale -inf
  REQUIRE(gpu::joint_add_child(x, 1, ChildKernel::binomial(0.5)).to_host()[2].log_scale == -inf);
  const auto draw = gpu::joint_sample_coordinate(x, 1, Column<double>::host_values(std::vector<double>(4, 0.5)));
  REQUIRE(draw.value.host()[2] == laws[2].lo[1]);
  REQUIRE(draw.rest->to_host()[2].log_scale == -inf);
  REQUIRE(draw.rest->to_host()[3].log_scale > -inf);
}

TEST_CASE("batched joint laws: the device's children and coordinate draws compute what the CPU loops do",
          "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261205);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 1001;
  const std::int64_t K = 320;  // random_laws' values lie below 20 + 300
  const std::vector<double> tr = row_major(random_transition(gen, K, categories));
  const ChildKernel host_step = ChildKernel::categorical(Table::from_host(tr, K, categories, Backend::cpu));
  const ChildKernel device_step = ChildKernel::categorical(Table::from_host(tr, K, categories, Backend::cuda));
  const auto keep = random_keep(gen, K);
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 1 ? 300 : rank == 2 ? 40 : 12);
    const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu), d = JointLaws::from_host(rank, laws, Backend::cuda);
    std::vector<double> uniforms(P);
    for (auto& e : uniforms) e = u(gen);
    uniforms[0] = 0.0;
    uniforms[1] = std::nextafter(1.0, 0.0);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      INFO("add_child");
      const auto small = random_laws(gen, P, rank, rank == 1 ? 60 : rank == 2 ? 12 : 6);  // binomial Y: hi + 1 values
      const JointLaws hs = JointLaws::from_host(rank, small, Backend::cpu), ds = JointLaws::from_host(rank, small, Backend::cuda);
      require_same_batch(gpu::joint_add_child(ds, axis, ChildKernel::binomial(0.3)),
                         gpu::joint_add_child(hs, axis, ChildKernel::binomial(0.3)));
      require_same_batch(gpu::joint_add_child(d, axis, device_step), gpu::joint_add_child(h, axis, host_step));
      INFO("condition_on_selected_thinning (the axis its own state)");
      const auto v = observations(gen, P, 40, 1000);
      auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
      auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
      require_same_batch(gpu::joint_condition_on_selected_thinning(d, axis, axis, keep,
                                                                   Column<std::int64_t>::from_host(v, Backend::cuda), dl),
                         gpu::joint_condition_on_selected_thinning(h, axis, axis, keep,
                                                                   Column<std::int64_t>::host_values(v), hl),
                         1e-11);  // binomial log-masses of counts up to 320: lgamma's ulps differ (see joint_ops.cpp)
      const std::vector<double> got = dl.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        if (hl.host()[i] == -inf) {
          REQUIRE(got[i] == -inf);
          continue;
        }
        REQUIRE(std::abs(got[i] - hl.host()[i]) <= 1e-12 * std::max(1.0, std::abs(hl.host()[i])) + 1e-11);
      }
      INFO("sample_coordinate");
      const auto hd = gpu::joint_sample_coordinate(h, axis, Column<double>::host_values(uniforms));
      const auto dd = gpu::joint_sample_coordinate(d, axis, Column<double>::from_host(uniforms, Backend::cuda));
      REQUIRE(dd.value.to_host() == hd.value.host());  // the same rule, the same sums: the same draws
      REQUIRE(dd.rest.has_value() == hd.rest.has_value());
      if (hd.rest) require_same_batch(*dd.rest, *hd.rest);
    }
  }
  {
    INFO("a Poisson child on a window");
    const auto laws = random_laws(gen, P, 2, 12);
    const JointLaws h = JointLaws::from_host(2, laws, Backend::cpu), d = JointLaws::from_host(2, laws, Backend::cuda);
    std::vector<std::int64_t> y_lo(P), y_hi(P);
    for (std::size_t i = 0; i < P; ++i) {
      y_lo[i] = std::int64_t(i % 5);
      y_hi[i] = y_lo[i] + 20 + std::int64_t(i % 30);
    }
    for (int axis = 0; axis < 2; ++axis)
      require_same_batch(gpu::joint_add_child(d, axis, ChildKernel::scaled_poisson(0.9), y_lo, y_hi),
                         gpu::joint_add_child(h, axis, ChildKernel::scaled_poisson(0.9), y_lo, y_hi), 1e-11);
  }
  {
    INFO("a child per set: 143 sets of 7 laws");
    std::mt19937_64 g2(20261209);
    const SetChildren hc = set_children(g2, 143, 7, 30, Backend::cpu);
    std::mt19937_64 g3(20261209);  // the same children on the device
    const SetChildren dc = set_children(g3, 143, 7, 30, Backend::cuda);
    const auto laws = random_laws(gen, P, 2, 9);
    const JointLaws h = JointLaws::from_host(2, laws, Backend::cpu), d = JointLaws::from_host(2, laws, Backend::cuda);
    for (int axis = 0; axis < 2; ++axis) {
      require_same_batch(gpu::joint_add_child(d, axis, dc.thinnings), gpu::joint_add_child(h, axis, hc.thinnings));
      require_same_batch(gpu::joint_add_child(d, axis, dc.steps), gpu::joint_add_child(h, axis, hc.steps));
      const auto v = observations(gen, P, 20, 60);
      auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
      auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
      require_same_batch(
          gpu::joint_condition_on_child(d, axis, dc.poissons, Column<std::int64_t>::from_host(v, Backend::cuda), dl),
          gpu::joint_condition_on_child(h, axis, hc.poissons, Column<std::int64_t>::host_values(v), hl), 1e-11);
      const std::vector<double> got = dl.to_host();
      for (std::size_t i = 0; i < P; ++i)
        REQUIRE(std::abs(got[i] - hl.host()[i]) <= 1e-12 * std::max(1.0, std::abs(hl.host()[i])) + 1e-11);
    }
  }
  const auto laws = state_laws(gen, P, 3, 12);  // a state on axis 0 selecting the keep of the count on axis 2
  const auto v = observations(gen, P, 20, 400);
  auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
  auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
  require_same_batch(gpu::joint_condition_on_selected_thinning(JointLaws::from_host(3, laws, Backend::cuda), 0, 2,
                                                               {0.2, 0.7}, Column<std::int64_t>::from_host(v, Backend::cuda),
                                                               dl),
                     gpu::joint_condition_on_selected_thinning(JointLaws::from_host(3, laws, Backend::cpu), 0, 2,
                                                               {0.2, 0.7}, Column<std::int64_t>::host_values(v), hl),
                     1e-11);
}

}  // namespace test_joint_children
