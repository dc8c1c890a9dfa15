// joint_marginal: each law's marginal along one axis as a batch of pmfs, the CPU loops against tally::marginal of the
// same JointPmf and the device against the CPU loops, on fresh random laws.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/distributions/joint.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_marginal {

using namespace tally;
using gpu::Backend;
using gpu::JointLaws;

using test::random_laws;
using test::to_joint;

TEST_CASE("joint_marginal gives each law's marginal along an axis, as tally::marginal of its JointPmf",
          "[gpu][joint]") {
  std::mt19937_64 gen(20261208);
  for (int rank = 1; rank <= 4; ++rank)
    for (int axis = 0; axis < rank; ++axis) {
      INFO("rank " << rank << ", axis " << axis);
      const auto laws = random_laws(gen, 60, rank, rank <= 2 ? 12 : 5);
      const JointLaws x = JointLaws::from_host(rank, laws, Backend::cpu);
      const gpu::PmfBatch m = gpu::joint_marginal(x, axis).to_host();
      REQUIRE(m.size() == laws.size());
      for (std::size_t i = 0; i < laws.size(); ++i) {
        const Pmf want = marginal(to_joint(laws[i]), axis);
        const auto w = m[i];
        REQUIRE(m.lo[i] == laws[i].lo[static_cast<std::size_t>(axis)]);
        REQUIRE(static_cast<std::int64_t>(w.size()) == laws[i].shape[static_cast<std::size_t>(axis)]);
        double largest = 0.0;
        for (std::size_t j = 0; j < w.size(); ++j) {
          largest = std::max(largest, w[j]);
          const std::int64_t v = m.lo[i] + static_cast<std::int64_t>(j);
          const double got = w[j] > 0.0 ? std::log(w[j]) + m.log_scale[i] : -test::inf;
          const double exact = log_pdf(want, v);
          if (exact == -test::inf)
            CHECK(got == -test::inf);
          else
            CHECK(got == Approx(exact).margin(1e-12));
        }
        CHECK(largest == 1.0);
      }
    }
  CHECK_THROWS_AS(gpu::joint_marginal(JointLaws::from_host(2, random_laws(gen, 3, 2, 4), Backend::cpu), 2),
                  shape_error);
}

TEST_CASE("joint_marginal on the device equals the CPU loops", "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(std::random_device{}());
  for (int rank = 1; rank <= 4; ++rank) {
    const auto laws = random_laws(gen, 300, rank, rank <= 2 ? 40 : 7);
    const JointLaws host = JointLaws::from_host(rank, laws, Backend::cpu);
    const JointLaws device = JointLaws::from_host(rank, laws, Backend::cuda);
    for (int axis = 0; axis < rank; ++axis) {
      INFO("rank " << rank << ", axis " << axis);
      const gpu::PmfBatch want = gpu::joint_marginal(host, axis).to_host();
      const gpu::PmfBatch got = gpu::joint_marginal(device, axis).to_host();
      REQUIRE(got.offset == want.offset);
      REQUIRE(got.lo == want.lo);
      for (std::size_t e = 0; e < want.weights.size(); ++e)
        CHECK(got.weights[e] == Approx(want.weights[e]).margin(1e-14));
      for (std::size_t i = 0; i < want.size(); ++i) CHECK(got.log_scale[i] == Approx(want.log_scale[i]).margin(1e-12));
    }
  }
}

}  // namespace test_joint_marginal
