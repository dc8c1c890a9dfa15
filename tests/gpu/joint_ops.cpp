// Batched joint laws beyond the split: convolution along an axis, outer products, linear combinations, Markov steps,
// conditioning on children, selected emissions and linear combinations, sampling. The CPU loops against the
// distributions' JointPmf operations, and the device against the CPU loops (draws equal bit for bit), on fresh random
// laws.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_ops {

using namespace tally;
using gpu::Backend;
using gpu::ChildKernel;
using gpu::Column;
using gpu::JointLaws;
using gpu::Table;
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
using test::each_point;
using test::to_joint;

namespace {

constexpr std::int64_t states = 30;  // random_laws' values lie in 0 .. 20 + max_extent - 1 < 30
constexpr std::int64_t categories = 4;

Pmf to_pmf_law(const JointLaws::Law& law) {
  return Pmf(law.lo[0], Eigen::Map<const Eigen::VectorXd>(law.weights.data(), Eigen::Index(law.weights.size())),
             law.log_scale);
}

}  // namespace

TEST_CASE("batched joint laws: convolution, linear combinations and Markov steps are the distributions'",
          "[gpu][joint]") {
  std::mt19937_64 gen(20261127);
  std::uniform_int_distribution<std::int64_t> coefficient(-2, 2);
  const std::size_t P = 60;
  const Eigen::MatrixXd t = random_transition(gen, states, categories);
  const Table table = Table::from_host(row_major(t), states, categories, Backend::cpu);
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 5 : 9);
    const auto added = random_laws(gen, P, 1, 12);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    const JointLaws y = JointLaws::from_host(1, added, Backend::cpu);
    std::vector<std::int64_t> kappa(static_cast<std::size_t>(rank));
    for (auto& k : kappa) k = coefficient(gen);
    kappa[0] = 1;
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const auto sum = gpu::joint_add_independent(x, axis, y).to_host();
      const auto step = gpu::joint_markov_step(x, axis, table).to_host();
      const auto replaced = gpu::joint_linear_combination(x, kappa, 3, axis).to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf d = to_joint(laws[i]);
        require_same_measure(sum[i], add_independent(d, axis, to_pmf_law(added[i])));
        require_same_measure(step[i], markov_step(d, axis, MarkovStep(t)));
        require_same_measure(replaced[i], linear_combination(d, kappa, 3, axis));
      }
    }
    const auto appended = gpu::joint_linear_combination(x, kappa, -4).to_host();
    for (std::size_t i = 0; i < P; ++i) require_same_measure(appended[i], linear_combination(to_joint(laws[i]), kappa, -4));
  }
}

TEST_CASE("batched joint laws: an outer product is the laws' product, point by point", "[gpu][joint]") {
  std::mt19937_64 gen(20261207);
  const std::size_t P = 40;
  for (int rx = 1; rx < gpu::max_joint_rank; ++rx)
    for (int ry = 1; rx + ry <= gpu::max_joint_rank; ++ry) {
      INFO("ranks " << rx << " and " << ry);
      const bool wide = rx + ry > 4;  // up to 8 axes: two values each keep the boxes small
      const auto a = random_laws(gen, P, rx, wide ? 2 : 6), b = random_laws(gen, P, ry, wide ? 2 : 7);
      const JointLaws ja = JointLaws::from_host(rx, a, Backend::cpu), jb = JointLaws::from_host(ry, b, Backend::cpu);
      const auto got = gpu::joint_outer(ja, jb).to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf da = to_joint(a[i]), db = to_joint(b[i]);
        Coordinates lo = a[i].lo, shape = a[i].shape;  // x's axes, then y's
        lo.insert(lo.end(), b[i].lo.begin(), b[i].lo.end());
        shape.insert(shape.end(), b[i].shape.begin(), b[i].shape.end());
        REQUIRE(got[i].lo == lo);
        REQUIRE(got[i].shape == shape);
        double top = 0.0;
        for (const double w : got[i].weights) top = std::max(top, w);
        REQUIRE(top == 1.0);  // rescaled to largest 1
        each_point(got[i], [&](const Coordinates& x, double l) {
          const Coordinates xa(x.begin(), x.begin() + rx), xb(x.begin() + rx, x.end());
          const double w = log_pdf(da, xa) + log_pdf(db, xb);
          if (w == -inf) {
            REQUIRE(l == -inf);
            return;
          }
          REQUIRE(std::abs(l - w) <= 1e-12 * std::max(1.0, std::abs(w)));
        });
      }
    }
  const JointLaws x = JointLaws::from_host(2, random_laws(gen, 4, 2, 4), Backend::cpu);
  const int past = gpu::max_joint_rank - 1;  // 2 + past axes: one too many
  REQUIRE_THROWS_AS(gpu::joint_outer(x, JointLaws::from_host(past, random_laws(gen, 4, past, 2), Backend::cpu)),
                    shape_error);
  REQUIRE_THROWS_AS(gpu::joint_outer(x, JointLaws::from_host(1, random_laws(gen, 5, 1, 2), Backend::cpu)), shape_error);
}

TEST_CASE("batched joint laws: conditioning on children, selected emissions and sums is the distributions'",
          "[gpu][joint]") {
  std::mt19937_64 gen(20261128);
  const std::size_t P = 60;
  const Eigen::MatrixXd t = random_transition(gen, states, categories);
  Eigen::VectorXd rates(states);
  for (Eigen::Index s = 0; s < states; ++s) rates[s] = 0.3 * double(s) + 0.1;
  const ChildKernel poisson = ChildKernel::scaled_poisson(0.7);
  const ChildKernel indexed =
      ChildKernel::indexed_poisson(Table::from_host(std::vector<double>(rates.data(), rates.data() + states), states, 1,
                                                    Backend::cpu));
  const ChildKernel categorical = ChildKernel::categorical(Table::from_host(row_major(t), states, categories, Backend::cpu));
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 5 : 9);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const auto v = observations(gen, P, 30, 200);
      const auto c = observations(gen, P, categories - 1, categories);
      auto l1 = Column<double>::host_values(std::vector<double>(P, 0.5)), l2 = l1.clone(), l3 = l1.clone();
      const auto p1 = gpu::joint_condition_on_child(x, axis, poisson, Column<std::int64_t>::host_values(v), l1).to_host();
      const auto p2 = gpu::joint_condition_on_child(x, axis, indexed, Column<std::int64_t>::host_values(v), l2).to_host();
      const auto p3 =
          gpu::joint_condition_on_child(x, axis, categorical, Column<std::int64_t>::host_values(c), l3).to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf d = to_joint(laws[i]);
        require_same_conditioning(p1, l1.host(), i, condition(d, axis, ScaledPoisson(0.7), v[i]));
        require_same_conditioning(p2, l2.host(), i, condition(d, axis, IndexedPoisson(rates), v[i]));
        require_same_conditioning(p3, l3.host(), i, condition(d, axis, MarkovStep(t), c[i]));
      }
    }
    // a sum of coordinates with a constant: c + kappa . x = v
    std::vector<std::int64_t> kappa(static_cast<std::size_t>(rank), 1);
    kappa.back() = rank > 1 ? -1 : 2;
    const auto v = observations(gen, P, 40, 500);
    auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
    const auto post = gpu::joint_condition_on_linear(x, kappa, 2, Column<std::int64_t>::host_values(v), ll).to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("law " << i);
      require_same_conditioning(post, ll.host(), i, condition_on_linear(to_joint(laws[i]), kappa, v[i] - 2));
    }
  }
  for (int rank = 2; rank <= 3; ++rank) {  // Poisson(a R_s): the state on axis 0 selects a rate axis
    INFO("selected, rank " << rank);
    const auto laws = state_laws(gen, P, rank, 7);
    const std::vector<int> rate_axes = rank == 2 ? std::vector<int>{1, 1} : std::vector<int>{2, 1};
    const auto v = observations(gen, P, 20, 300);
    auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
    const auto post = gpu::joint_condition_on_selected_poisson(JointLaws::from_host(rank, laws, Backend::cpu), 0,
                                                               rate_axes, 0.8, Column<std::int64_t>::host_values(v), ll)
                          .to_host();
    for (std::size_t i = 0; i < P; ++i) {
      INFO("law " << i);
      require_same_conditioning(post, ll.host(), i,
                                condition(to_joint(laws[i]), SelectedScaledPoisson(0, rate_axes, 0.8), v[i]));
    }
  }
}

TEST_CASE("batched joint laws: sampling inverts the row-major cdf at a positive entry", "[gpu][joint]") {
  std::mt19937_64 gen(20261129);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 200;
  for (int rank = 1; rank <= 3; ++rank) {
    auto laws = random_laws(gen, P, rank, rank == 1 ? 700 : 20);  // rank 1: longer than 256 chunks of one entry
    std::vector<double> uniforms(P);
    for (auto& e : uniforms) e = u(gen);
    uniforms[0] = 0.0;
    uniforms[1] = std::nextafter(1.0, 0.0);
    const auto x = gpu::joint_sample(JointLaws::from_host(rank, laws, Backend::cpu), Column<double>::host_values(uniforms));
    REQUIRE(x.size() == P * static_cast<std::size_t>(rank));
    for (std::size_t i = 0; i < P; ++i) {
      INFO("rank " << rank << ", law " << i << ", u " << uniforms[i]);
      require_inverse_cdf(laws[i], uniforms[i], x.host().data() + i * static_cast<std::size_t>(rank));
    }
  }
}

TEST_CASE("batched joint laws: bad arguments of the operations are named errors", "[gpu][joint]") {
  std::mt19937_64 gen(11);
  const auto laws = random_laws(gen, 4, 2, 4);
  const JointLaws x = JointLaws::from_host(2, laws, Backend::cpu);
  auto ll = Column<double>::host_values(std::vector<double>(4, 0.0));
  const auto v = Column<std::int64_t>::host_values(std::vector<std::int64_t>(4, 1));
  REQUIRE_THROWS_AS(gpu::joint_add_independent(x, 0, x), shape_error);  // rank 2 added
  REQUIRE_THROWS_AS(gpu::joint_linear_combination(x, {1}, 0), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_linear_combination(x, {1, 1}, 0, 2), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_linear_combination(x, {INT64_MAX / 2, 3}, 0), overflow_error);
  REQUIRE_THROWS_AS(gpu::joint_markov_step(x, 0, Table::from_host(std::vector<double>{1.0}, 1, 1, Backend::cpu)),
                    domain_error);  // values past the one state
  REQUIRE_THROWS_AS(gpu::joint_condition_on_child(x, 0, ChildKernel::affine(1, 0), v, ll), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_selected_poisson(x, 0, {1}, 0.5, v, ll), domain_error);  // states > 0
  REQUIRE_THROWS_AS(gpu::joint_sample(x, Column<double>::host_values({0.5})), shape_error);
  REQUIRE(gpu::joint_linear_combination(x, {1, 1}, 0).rank() == 3);  // still usable
}

TEST_CASE("batched joint laws: the device's new operations compute what the CPU loops do", "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261130);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 1001;
  const Eigen::MatrixXd t = random_transition(gen, 320, categories);
  const std::vector<double> tr = row_major(t);
  std::vector<double> rates(320);
  for (std::size_t s = 0; s < rates.size(); ++s) rates[s] = 0.05 * double(s);
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 1 ? 300 : rank == 2 ? 40 : 12);
    const auto added = random_laws(gen, P, 1, 50);
    const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu), d = JointLaws::from_host(rank, laws, Backend::cuda);
    const JointLaws hy = JointLaws::from_host(1, added, Backend::cpu), dy = JointLaws::from_host(1, added, Backend::cuda);
    std::vector<std::int64_t> kappa(static_cast<std::size_t>(rank), 1);
    kappa.back() = -2;
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      INFO("add_independent");
      require_same_batch(gpu::joint_add_independent(d, axis, dy), gpu::joint_add_independent(h, axis, hy));
      INFO("markov_step");
      require_same_batch(gpu::joint_markov_step(d, axis, Table::from_host(tr, 320, categories, Backend::cuda)),
                         gpu::joint_markov_step(h, axis, Table::from_host(tr, 320, categories, Backend::cpu)));
      INFO("linear_combination in place");
      require_same_batch(gpu::joint_linear_combination(d, kappa, 1, axis), gpu::joint_linear_combination(h, kappa, 1, axis));
      INFO("condition_on_child");
      const ChildKernel kernels[2][2] = {
          {ChildKernel::scaled_poisson(0.3), ChildKernel::scaled_poisson(0.3)},
          {ChildKernel::indexed_poisson(Table::from_host(rates, 320, 1, Backend::cpu)),
           ChildKernel::indexed_poisson(Table::from_host(rates, 320, 1, Backend::cuda))}};
      for (const auto& k : kernels) {
        const auto v = observations(gen, P, 40, 1000);
        auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
        auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
        // Poisson log-masses of counts up to 1000: terms up to lgamma(1001) ~ 5900, whose ulps differ between the
        // device's lgamma and glibc's: 1e-11 of slack in the logarithms (1e-11 relative in the weights)
        require_same_batch(
            gpu::joint_condition_on_child(d, axis, k[1], Column<std::int64_t>::from_host(v, Backend::cuda), dl),
            gpu::joint_condition_on_child(h, axis, k[0], Column<std::int64_t>::host_values(v), hl), 1e-11);
        const std::vector<double> got = dl.to_host();
        for (std::size_t i = 0; i < P; ++i) {
          if (hl.host()[i] == -inf) {
            REQUIRE(got[i] == -inf);
            continue;
          }
          REQUIRE(std::abs(got[i] - hl.host()[i]) <= 1e-12 * std::max(1.0, std::abs(hl.host()[i])) + 1e-11);
        }
      }
    }
    INFO("outer");
    const auto other = random_laws(gen, P, 4 - rank, rank == 1 ? 4 : rank == 2 ? 5 : 8);
    require_same_batch(gpu::joint_outer(d, JointLaws::from_host(4 - rank, other, Backend::cuda)),
                       gpu::joint_outer(h, JointLaws::from_host(4 - rank, other, Backend::cpu)));
    INFO("linear_combination appended, condition_on_linear, sample");
    if (rank < 3) require_same_batch(gpu::joint_linear_combination(d, kappa, 0), gpu::joint_linear_combination(h, kappa, 0));
    const auto v = observations(gen, P, 40, 5000);
    auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
    auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
    require_same_batch(gpu::joint_condition_on_linear(d, kappa, 0, Column<std::int64_t>::from_host(v, Backend::cuda), dl),
                       gpu::joint_condition_on_linear(h, kappa, 0, Column<std::int64_t>::host_values(v), hl));
    std::vector<double> uniforms(P);
    for (auto& e : uniforms) e = u(gen);
    const auto hs = gpu::joint_sample(h, Column<double>::host_values(uniforms));
    const auto ds = gpu::joint_sample(d, Column<double>::from_host(uniforms, Backend::cuda)).to_host();
    REQUIRE(ds == hs.host());  // the same rule, the same sums: the same draws
  }
  const auto laws = state_laws(gen, P, 3, 12);
  const auto v = observations(gen, P, 30, 400);
  auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
  auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
  require_same_batch(gpu::joint_condition_on_selected_poisson(JointLaws::from_host(3, laws, Backend::cuda), 0, {1, 2},
                                                              0.6, Column<std::int64_t>::from_host(v, Backend::cuda), dl),
                     gpu::joint_condition_on_selected_poisson(JointLaws::from_host(3, laws, Backend::cpu), 0, {1, 2}, 0.6,
                                                              Column<std::int64_t>::host_values(v), hl),
                     1e-11);
}

}  // namespace test_joint_ops
