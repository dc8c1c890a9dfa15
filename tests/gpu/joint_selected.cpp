// Batched joint laws: a child of several coordinates appended (a Poisson emission whose rate a state selects, on a
// window; a thinning whose keep probability a state selects) and a split by a thinning per set. The CPU loops against
// the distributions' JointPmf add_child and against the single-q split bit for bit, and the device against the CPU
// loops, on fresh random laws.
#include <catch2/catch.hpp>
#include <Eigen/Core>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_selected {

using namespace tally;
using gpu::Backend;
using gpu::ChildKernel;
using gpu::JointLaws;
using test::random_laws;
using test::require_same_batch;
using test::require_same_measure;
using test::state_laws;
using test::to_joint;

namespace {

/// The windows of Y that the JointPmfs want hold on their last axis.
void windows_of(const std::vector<JointPmf>& want, std::vector<std::int64_t>& y_lo, std::vector<std::int64_t>& y_hi) {
  y_lo.clear();
  y_hi.clear();
  for (const JointPmf& d : want) {
    y_lo.push_back(d.lo().back());
    y_hi.push_back(d.lo().back() + d.shape().back() - 1);
  }
}

/// Laws with a state on axis 0 (values 0, 1) and counts on the other axes; `rates` rate axes follow the state.
std::vector<JointLaws::Law> emission_laws(std::mt19937_64& gen, std::size_t P, int rank) {
  return state_laws(gen, P, rank, rank > 3 ? 2 : 7);
}

}  // namespace

TEST_CASE("batched joint laws: a selected Poisson emission appended on a window is the distributions' add_child",
          "[gpu][joint]") {
  std::mt19937_64 gen(20261301);
  const std::size_t P = 50;
  for (int rank = 2; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = emission_laws(gen, P, rank);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    // the state on axis 0 selects among the other axes (rank 2: both states the one rate axis; rank 3: its own)
    const std::vector<int> rates = rank == 2 ? std::vector<int>{1, 1} : std::vector<int>{2, 1};
    for (const double scale : {0.0, 0.45, 2.5}) {
      INFO("scale " << scale);
      std::vector<JointPmf> want;
      for (const auto& law : laws) want.push_back(add_child(to_joint(law), SelectedScaledPoisson(0, rates, scale)));
      std::vector<std::int64_t> y_lo, y_hi;
      windows_of(want, y_lo, y_hi);
      const JointLaws got = gpu::joint_add_selected_poisson(x, 0, rates, scale, y_lo, y_hi);
      REQUIRE(got.rank() == rank + 1);
      const auto g = got.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        require_same_measure(g[i], want[i]);
      }
    }
  }
  const JointLaws x = JointLaws::from_host(2, emission_laws(gen, 3, 2), Backend::cpu);
  const std::vector<std::int64_t> lo{0, 0, 0}, hi{9, 9, 9};
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(x, 0, {1, 1}, 0.5, lo, {9, 9}), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(x, 0, {1, 1}, 0.5, {0, 4, 0}, {9, 3, 9}), domain_error);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(x, 0, {1}, 0.5, lo, hi), domain_error);  // state 1 has no rate
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(x, 0, {1, 2}, 0.5, lo, hi), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(x, 0, {1, 1}, -1.0, lo, hi), domain_error);
  const JointLaws widest =
      JointLaws::from_host(gpu::max_joint_rank, emission_laws(gen, 3, gpu::max_joint_rank), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_poisson(widest, 0, {1, 2}, 0.5, lo, hi), shape_error);  // past the rank
  REQUIRE(gpu::joint_add_selected_poisson(x, 0, {1, 1}, 0.5, lo, hi).rank() == 3);  // still usable
}

TEST_CASE("batched joint laws: a selected thinning appended is the distributions' add_child", "[gpu][joint]") {
  std::mt19937_64 gen(20261302);
  const std::size_t P = 50;
  for (int rank = 2; rank <= 3; ++rank) {
    const auto laws = emission_laws(gen, P, rank);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (const std::vector<double>& keep : {std::vector<double>{0.3, 0.8}, std::vector<double>{0.0, 1.0}}) {
      const Eigen::VectorXd q = Eigen::Map<const Eigen::VectorXd>(keep.data(), 2);
      for (int count = 0; count < rank; ++count) {  // count 0: the state thins itself (Binomial(S, q_S))
        INFO("rank " << rank << ", count axis " << count << ", keep " << keep[0] << ", " << keep[1]);
        const auto got = gpu::joint_add_selected_thinning(x, 0, count, keep).to_host();
        for (std::size_t i = 0; i < P; ++i) {
          INFO("law " << i);
          REQUIRE(got[i].lo.back() == 0);  // Y on 0 .. hi_count
          REQUIRE(got[i].shape.back() == laws[i].lo[std::size_t(count)] + laws[i].shape[std::size_t(count)]);
          require_same_measure(got[i], add_child(to_joint(laws[i]), SelectedThinning(count, 0, q)));
        }
      }
    }
  }
  auto laws = emission_laws(gen, 3, 2);
  laws[1].lo[1] = -1;  // a negative count
  const JointLaws negative = JointLaws::from_host(2, laws, Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_thinning(negative, 0, 1, {0.5, 0.5}), domain_error);
  const JointLaws x = JointLaws::from_host(2, emission_laws(gen, 3, 2), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_thinning(x, 0, 1, {0.5}), domain_error);  // state 1 has no q
  REQUIRE_THROWS_AS(gpu::joint_add_selected_thinning(x, 0, 1, {0.5, 1.5}), domain_error);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_thinning(x, 0, 2, {0.5, 0.5}), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_add_selected_thinning(x, 0, 1, {}), shape_error);
  REQUIRE(gpu::joint_add_selected_thinning(x, 0, 1, {0.5, 0.5}).rank() == 3);
}

TEST_CASE("batched joint laws: a split by a thinning per set splits each law by its set's q", "[gpu][joint]") {
  std::mt19937_64 gen(20261303);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t per = 3, sets = 7, P = per * sets;
  std::vector<ChildKernel> each;
  std::vector<double> q;
  for (std::size_t s = 0; s < sets; ++s) {
    q.push_back(s == 0 ? 0.0 : s == 1 ? 1.0 : u(gen));
    each.push_back(ChildKernel::binomial(q.back()));
  }
  const ChildKernel thinnings = ChildKernel::per_set(each, per, Backend::cpu);
  for (int rank = 1; rank <= 3; ++rank) {
    const JointLaws x = JointLaws::from_host(rank, random_laws(gen, P, rank, rank == 3 ? 5 : 9), Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("rank " << rank << ", axis " << axis);
      const auto got = gpu::joint_split(x, axis, thinnings).to_host();
      for (std::size_t s = 0; s < sets; ++s) {
        const auto one = gpu::joint_split(x, axis, q[s]).to_host();
        const auto kernel = gpu::joint_split(x, axis, ChildKernel::binomial(q[s])).to_host();
        for (std::size_t i = s * per; i < (s + 1) * per; ++i) {  // the same formulas, the same bits
          INFO("law " << i << " of set " << s);
          REQUIRE(got[i].lo == one[i].lo);
          REQUIRE(got[i].shape == one[i].shape);
          REQUIRE(got[i].weights == one[i].weights);
          REQUIRE(got[i].log_scale == one[i].log_scale);
          REQUIRE(kernel[i].weights == one[i].weights);
        }
      }
    }
  }
  const JointLaws x = JointLaws::from_host(1, random_laws(gen, P, 1, 5), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_split(x, 0, ChildKernel::scaled_poisson(0.5)), shape_error);
  const JointLaws more = JointLaws::from_host(1, random_laws(gen, P + 1, 1, 5), Backend::cpu);
  REQUIRE_THROWS_AS(gpu::joint_split(more, 0, thinnings), shape_error);  // 22 laws for 7 sets of 3
  REQUIRE_THROWS_AS(gpu::joint_split(x, 0, 1.5), domain_error);
  REQUIRE(gpu::joint_split(x, 0, thinnings).rank() == 2);
}

TEST_CASE("batched joint laws: the device's selected children and splits per set compute what the CPU loops do",
          "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261304);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 1001;
  for (int rank = 2; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = state_laws(gen, P, rank, rank == 2 ? 40 : 12);
    const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu);
    const JointLaws d = JointLaws::from_host(rank, laws, Backend::cuda);
    const std::vector<int> rates = rank == 2 ? std::vector<int>{1, 1} : std::vector<int>{1, 2};
    std::vector<std::int64_t> y_lo(P), y_hi(P);
    for (std::size_t i = 0; i < P; ++i) {
      y_lo[i] = std::int64_t(i % 4);
      y_hi[i] = y_lo[i] + 10 + std::int64_t(i % 25);
    }
    require_same_batch(gpu::joint_add_selected_poisson(d, 0, rates, 0.8, y_lo, y_hi),
                       gpu::joint_add_selected_poisson(h, 0, rates, 0.8, y_lo, y_hi), 1e-11);
    for (int count = 0; count < rank; ++count)
      require_same_batch(gpu::joint_add_selected_thinning(d, 0, count, {0.25, 0.9}),
                         gpu::joint_add_selected_thinning(h, 0, count, {0.25, 0.9}), 1e-11);
  }
  std::vector<ChildKernel> each;
  for (std::size_t s = 0; s < 143; ++s) each.push_back(ChildKernel::binomial(u(gen)));
  const auto laws = random_laws(gen, P, 2, 15);
  const JointLaws h = JointLaws::from_host(2, laws, Backend::cpu), d = JointLaws::from_host(2, laws, Backend::cuda);
  for (int axis = 0; axis < 2; ++axis)
    require_same_batch(gpu::joint_split(d, axis, ChildKernel::per_set(each, 7, Backend::cuda)),
                       gpu::joint_split(h, axis, ChildKernel::per_set(each, 7, Backend::cpu)), 1e-11);
}

}  // namespace test_joint_selected
