// Batched joint laws kept between operations: joint_gather, JointLaws::shift and joint_trim, the CPU loops against a
// direct reading of their contracts and the device against the CPU loops, on fresh random laws.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "gpu/device.hpp"
#include "gpu/joint_test_laws.hpp"
#include "tally/gpu/joint_laws.hpp"

namespace test_joint_trim {

using namespace tally;
using gpu::Backend;
using gpu::JointLaws;

using test::inf;
using test::random_laws;

/// Law i's kept box by the contract: each axis's marginal (plain sums), then tally::truncate's cut from each end.
void kept_box(const JointLaws::Law& law, double tolerance, std::vector<std::int64_t>& lo,
              std::vector<std::int64_t>& shape, double& cut) {
  const std::size_t k = law.lo.size();
  std::vector<std::vector<double>> m(k);
  for (std::size_t a = 0; a < k; ++a) m[a].assign(static_cast<std::size_t>(law.shape[a]), 0.0);
  double total = 0.0;
  for (std::size_t e = 0; e < law.weights.size(); ++e) {
    std::size_t rest = e;
    for (std::size_t a = k; a-- > 0;) {
      m[a][rest % static_cast<std::size_t>(law.shape[a])] += law.weights[e];
      rest /= static_cast<std::size_t>(law.shape[a]);
    }
    total += law.weights[e];
  }
  const double budget = tolerance * total / (2.0 * static_cast<double>(k));
  lo.clear();
  shape.clear();
  for (std::size_t a = 0; a < k; ++a) {
    std::size_t first = 0, last = m[a].size() - 1;
    double acc = 0.0;
    while (first < last && acc + m[a][first] <= budget) acc += m[a][first++];
    acc = 0.0;
    while (last > first && acc + m[a][last] <= budget) acc += m[a][last--];
    lo.push_back(law.lo[a] + static_cast<std::int64_t>(first));
    shape.push_back(static_cast<std::int64_t>(last - first + 1));
  }
  cut = 0.0;
  for (std::size_t e = 0; e < law.weights.size(); ++e) {
    std::size_t rest = e;
    bool inside = true;
    for (std::size_t a = k; a-- > 0;) {
      const auto x = law.lo[a] + static_cast<std::int64_t>(rest % static_cast<std::size_t>(law.shape[a]));
      inside = inside && x >= lo[a] && x < lo[a] + shape[a];
      rest /= static_cast<std::size_t>(law.shape[a]);
    }
    if (!inside) cut += law.weights[e];
  }
}

/// Entry at x (the coordinates) of a host law, or -1 outside its box.
double weight_at(const JointLaws::Law& law, const std::vector<std::int64_t>& x) {
  std::size_t at = 0;
  for (std::size_t a = 0; a < x.size(); ++a) {
    if (x[a] < law.lo[a] || x[a] >= law.lo[a] + law.shape[a]) return -1.0;
    at = at * static_cast<std::size_t>(law.shape[a]) + static_cast<std::size_t>(x[a] - law.lo[a]);
  }
  return law.weights[at];
}

TEST_CASE("joint_trim cuts each law's tails as tally::truncate's rule says, and keeps the rest's measure",
          "[gpu][joint]") {
  std::mt19937_64 gen(20261207);
  for (int rank = 1; rank <= 4; ++rank)
    for (const double tolerance : {0.0, 1e-6, 1e-2, 0.3}) {
      INFO("rank " << rank << ", tolerance " << tolerance);
      const JointLaws x = JointLaws::from_host(rank, random_laws(gen, 80, rank, rank <= 2 ? 12 : 5), Backend::cpu);
      const auto laws = x.to_host();  // as the batch holds them (largest 1)
      const gpu::JointTrimmed t = gpu::joint_trim(x, tolerance);
      const auto got = t.laws.to_host();
      REQUIRE(got.size() == laws.size());
      for (std::size_t i = 0; i < laws.size(); ++i) {
        INFO("law " << i);
        std::vector<std::int64_t> lo, shape;
        double cut = 0.0;
        kept_box(laws[i], tolerance, lo, shape, cut);
        REQUIRE(got[i].lo == lo);
        REQUIRE(got[i].shape == shape);
        double total = 0.0;
        for (const double w : laws[i].weights) total += w;
        CHECK(t.total[i] == Approx(total).epsilon(1e-13));
        CHECK(t.cut[i] == Approx(cut).epsilon(1e-12).margin(1e-300));
        CHECK(t.cut[i] <= tolerance * total * (1 + 1e-12));
        if (tolerance == 0.0) CHECK(t.cut[i] == 0.0);
        // the kept entries are the law's own, over the largest kept one (largest 1)
        double top = 0.0;
        for (const double w : got[i].weights) top = std::max(top, w);
        CHECK(top == 1.0);
        test::each_point(got[i], [&](const Coordinates& c, double l) {
          const double w = weight_at(laws[i], std::vector<std::int64_t>(c.begin(), c.end()));
          REQUIRE(w >= 0.0);
          const double want = w > 0.0 ? std::log(w) + laws[i].log_scale : -inf;
          if (want == -inf)
            REQUIRE(l == -inf);
          else
            REQUIRE(l == Approx(want).epsilon(1e-14).margin(1e-12));
        });
      }
    }
  REQUIRE_THROWS_AS(gpu::joint_trim(JointLaws::from_host(1, random_laws(gen, 2, 1, 3), Backend::cpu), 1.0),
                    domain_error);
}

TEST_CASE("joint_gather takes laws by index, and shift moves one coordinate's boxes", "[gpu][joint]") {
  std::mt19937_64 gen(17);
  const auto laws = random_laws(gen, 9, 2, 6);
  const JointLaws x = JointLaws::from_host(2, laws, Backend::cpu);
  const std::vector<std::size_t> index{4, 4, 0, 8, 1};
  const auto got = gpu::joint_gather(x, index).to_host(), all = x.to_host();
  REQUIRE(got.size() == index.size());
  for (std::size_t j = 0; j < index.size(); ++j) {
    CHECK(got[j].lo == all[index[j]].lo);
    CHECK(got[j].shape == all[index[j]].shape);
    CHECK(got[j].weights == all[index[j]].weights);
    CHECK(got[j].log_scale == all[index[j]].log_scale);
  }
  CHECK(gpu::joint_gather(x, {}).size() == 0);
  REQUIRE_THROWS_AS(gpu::joint_gather(x, {9}), shape_error);
  JointLaws y = gpu::joint_gather(x, index);
  std::vector<std::int64_t> by{3, -2, 0, 7, -40};
  y.shift(1, by);
  const auto moved = y.to_host();
  for (std::size_t j = 0; j < index.size(); ++j) {
    CHECK(moved[j].lo[0] == got[j].lo[0]);
    CHECK(moved[j].lo[1] == got[j].lo[1] + by[j]);
    CHECK(moved[j].weights == got[j].weights);
  }
  CHECK(y.lo_column().to_host() == y.lo());
  REQUIRE_THROWS_AS(y.shift(2, by), shape_error);
  REQUIRE_THROWS_AS(y.shift(0, {1}), shape_error);
  const std::vector<std::int64_t> lo_before = y.lo();
  REQUIRE_THROWS_AS(y.shift(0, std::vector<std::int64_t>(5, INT64_MAX)), overflow_error);
  CHECK(y.lo() == lo_before);  // nothing changed
}

TEST_CASE("joint_trim and joint_gather on the device give the CPU loops' laws", "[gpu][joint][device]") {
  if (test::skip_without_device()) return;
  std::mt19937_64 gen(20261208);
  for (int rank = 1; rank <= 4; ++rank)
    for (const double tolerance : {0.0, 1e-9, 1e-3, 0.2}) {
      INFO("rank " << rank << ", tolerance " << tolerance);
      const auto laws = random_laws(gen, 1500, rank, rank == 1 ? 3000 : rank == 2 ? 60 : rank == 3 ? 14 : 7);
      const JointLaws h = JointLaws::from_host(rank, laws, Backend::cpu);
      const JointLaws d = JointLaws::from_host(rank, laws, Backend::cuda);
      const gpu::JointTrimmed th = gpu::joint_trim(h, tolerance), td = gpu::joint_trim(d, tolerance);
      REQUIRE(td.laws.where() == Backend::cuda);
      REQUIRE(td.laws.lo() == th.laws.lo());  // the marginals are summed in one order: the same cut points
      REQUIRE(td.laws.shape() == th.laws.shape());
      CHECK(td.laws.weights().to_host() == th.laws.weights().to_host());
      CHECK(td.laws.log_scale().to_host() == th.laws.log_scale().to_host());
      for (std::size_t i = 0; i < laws.size(); ++i) {
        INFO("law " << i);
        CHECK(td.total[i] == th.total[i]);
        CHECK(td.cut[i] == Approx(th.cut[i]).epsilon(1e-12).margin(1e-300));
      }
      std::vector<std::size_t> index;
      std::uniform_int_distribution<std::size_t> pick(0, laws.size() - 1);
      for (int j = 0; j < 2000; ++j) index.push_back(pick(gen));
      const JointLaws gd = gpu::joint_gather(d, index), gh = gpu::joint_gather(h, index);
      REQUIRE(gd.lo() == gh.lo());
      CHECK(gd.weights().to_host() == gh.weights().to_host());
      CHECK(gd.log_scale().to_host() == gh.log_scale().to_host());
    }
}

}  // namespace test_joint_trim
