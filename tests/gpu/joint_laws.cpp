// Batched joint laws (tally::gpu::JointLaws): the CPU loops against the distributions' JointPmf operations (split,
// conditioning on a thinning child, summing out), and the device against the CPU loops, on fresh random laws.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_laws {

using namespace tally;
using gpu::Backend;
using gpu::Column;
using gpu::JointLaws;

using test::inf;
using test::random_laws;
using test::require_same_batch;
using test::require_same_measure;
using test::to_joint;

TEST_CASE("batched joint laws: the CPU loops are the distributions' joint operations", "[gpu][joint]") {
  std::mt19937_64 gen(20261125);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 120;
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 3 ? 5 : 9);
    const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const double q = axis == 1 ? 1e-3 : 0.35;
      const auto split = gpu::joint_split(x, axis, q).to_host();
      std::vector<std::int64_t> v(P);
      for (std::size_t i = 0; i < P; ++i)  // mostly possible counts, sometimes one above every value (impossible)
        v[i] = u(gen) < 0.9 ? static_cast<std::int64_t>(q * double(laws[i].lo[std::size_t(axis)] + 5))
                            : laws[i].lo[std::size_t(axis)] + laws[i].shape[std::size_t(axis)];
      auto ll = Column<double>::host_values(std::vector<double>(P, 0.5));
      const auto posterior = gpu::joint_condition_on_thinning(x, axis, q, Column<std::int64_t>::host_values(v), ll)
                                 .to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        const JointPmf d = to_joint(laws[i]);
        require_same_measure(split[i], tally::split(d, axis, q));
        const JointConditioned c = condition(d, axis, Thinning(q), v[i]);
        if (!c.posterior) {
          REQUIRE(ll.host()[i] == -inf);
          continue;
        }
        REQUIRE(ll.host()[i] - 0.5 == Approx(c.log_likelihood).epsilon(1e-11));
        require_same_measure(posterior[i], *c.posterior);
      }
      if (rank >= 2) {
        const auto summed = gpu::joint_sum_out(x, axis).to_host();
        for (std::size_t i = 0; i < P; ++i) require_same_measure(summed[i], marginalize_out(to_joint(laws[i]), axis));
      }
    }
  }
}

TEST_CASE("batched joint laws: bad arguments are named errors", "[gpu][joint]") {
  std::mt19937_64 gen(7);
  const auto laws = random_laws(gen, 4, 2, 4);
  const JointLaws x = JointLaws::from_host(2, laws, Backend::cpu);
  auto ll = Column<double>::host_values(std::vector<double>(4, 0.0));
  const auto v = Column<std::int64_t>::host_values(std::vector<std::int64_t>(4, 1));
  REQUIRE_THROWS_AS(gpu::joint_split(x, 2, 0.5), shape_error);
  REQUIRE_THROWS_AS(gpu::joint_split(x, 0, 1.5), domain_error);
  REQUIRE_THROWS_AS(gpu::joint_sum_out(JointLaws::from_host(1, random_laws(gen, 2, 1, 3), Backend::cpu), 0),
                    shape_error);
  REQUIRE_THROWS_AS(gpu::joint_condition_on_thinning(x, 0, 0.5, Column<std::int64_t>::host_values({1}), ll),
                    shape_error);
  auto negative = laws;
  negative[1].lo[0] = -3;
  REQUIRE_THROWS_AS(gpu::joint_split(JointLaws::from_host(2, negative, Backend::cpu), 0, 0.5), domain_error);
  REQUIRE_THROWS_AS(JointLaws::from_host(3, laws, Backend::cpu), shape_error);
  auto nan = laws;
  nan[0].weights[0] = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_THROWS_AS(JointLaws::from_host(2, nan, Backend::cpu), domain_error);
  REQUIRE(gpu::joint_split(x, 0, 0.5).rank() == 3);  // the batch is still usable
}

TEST_CASE("batched joint laws: laws in the batch's flat form are the laws from_host makes of them", "[gpu][joint]") {
  std::mt19937_64 gen(std::random_device{}());
  const std::size_t n = 1 + gen() % 6;
  const JointLaws want = JointLaws::from_host(2, random_laws(gen, n, 2, 5), Backend::cpu);
  const std::vector<Backend> places = gpu::cuda_available() ? std::vector{Backend::cpu, Backend::cuda}
                                                             : std::vector{Backend::cpu};
  for (const Backend where : places) {
    const JointLaws got = JointLaws::from_flat(2, want.lo(), want.shape(), want.weights().to_host(),
                                               want.log_scale().to_host(), where);
    REQUIRE(got.where() == where);
    REQUIRE(got.size() == want.size());
    REQUIRE(got.offset() == want.offset());
    CHECK(got.weights().to_host() == want.weights().to_host());
    CHECK(got.log_scale().to_host() == want.log_scale().to_host());
    CHECK(got.lo_column().to_host() == want.lo());
    CHECK(got.offset_column().to_host() == want.offset());
  }
  // sizes that disagree are named, as a bad box is
  std::vector<double> short_weights = want.weights().to_host();
  short_weights.pop_back();
  CHECK_THROWS_AS(JointLaws::from_flat(2, want.lo(), want.shape(), short_weights, want.log_scale().to_host(),
                                       Backend::cpu),
                  shape_error);
  CHECK_THROWS_AS(JointLaws::from_flat(2, want.lo(), want.shape(), want.weights().to_host(), {}, Backend::cpu),
                  shape_error);
  std::vector<std::int64_t> bad_shape = want.shape();
  bad_shape[0] = 0;
  CHECK_THROWS_AS(JointLaws::from_flat(2, want.lo(), bad_shape, want.weights().to_host(), want.log_scale().to_host(),
                                       Backend::cpu),
                  shape_error);
}

TEST_CASE("batched joint laws: the device computes what the CPU loops do", "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261126);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const std::size_t P = 3001;
  for (int rank = 1; rank <= 3; ++rank) {
    INFO("rank " << rank);
    const auto laws = random_laws(gen, P, rank, rank == 1 ? 300 : rank == 2 ? 40 : 12);
    const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu), d = JointLaws::from_host(rank, laws, Backend::cuda);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("axis " << axis);
      const double q = axis == 0 ? 0.6 : 0.02;
      require_same_batch(gpu::joint_split(d, axis, q), gpu::joint_split(h, axis, q));
      std::vector<std::int64_t> v(P);
      for (std::size_t i = 0; i < P; ++i)
        v[i] = u(gen) < 0.9 ? static_cast<std::int64_t>(q * double(laws[i].lo[std::size_t(axis)] + 5))
                            : laws[i].lo[std::size_t(axis)] + laws[i].shape[std::size_t(axis)];
      auto hl = Column<double>::host_values(std::vector<double>(P, 0.5));
      auto dl = Column<double>::from_host(std::vector<double>(P, 0.5), Backend::cuda);
      const JointLaws hp = gpu::joint_condition_on_thinning(h, axis, q, Column<std::int64_t>::host_values(v), hl);
      const JointLaws dp =
          gpu::joint_condition_on_thinning(d, axis, q, Column<std::int64_t>::from_host(v, Backend::cuda), dl);
      require_same_batch(dp, hp);
      const std::vector<double> got = dl.to_host();
      for (std::size_t i = 0; i < P; ++i) {
        INFO("law " << i);
        if (hl.host()[i] == -inf) {
          REQUIRE(got[i] == -inf);
          continue;
        }
        REQUIRE(std::abs(got[i] - hl.host()[i]) <= 1e-12 * std::max(1.0, std::abs(hl.host()[i])));
      }
      if (rank >= 2) require_same_batch(gpu::joint_sum_out(d, axis), gpu::joint_sum_out(h, axis));
    }
  }
}

}  // namespace test_joint_laws
