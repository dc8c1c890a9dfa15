// weighted_bernoulli_sum against 50-digit enumeration of all subsets, for every grouping, and its bad input.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/weighted_bernoulli_sum.hpp"
#include "tally/error.hpp"

namespace test_weighted_bernoulli_sum {

using namespace tally;
using test::big;
using test::Law;

namespace {
/// The exact law of sum w_i B_i by enumerating all 2^n subsets in 50 digits.
Law enumerate_law(const std::vector<std::int64_t>& w, const std::vector<double>& p) {
  Law law;
  for (std::uint64_t m = 0; m < (std::uint64_t{1} << w.size()); ++m) {
    std::int64_t s = 0;
    big q = 1;
    for (std::size_t i = 0; i < w.size(); ++i) {
      const bool on = (m >> i) & 1;
      s += on ? w[i] : 0;
      q *= on ? big(p[i]) : 1 - big(p[i]);
    }
    if (q > 0) law[s] += q;
  }
  return law;
}
}  // namespace

TEST_CASE("weighted_bernoulli_sum equals enumeration, for every group size", "[weighted_bernoulli_sum]") {
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    const std::size_t n = 1 + gen() % 12;
    const std::int64_t scale = trial % 3 == 0 ? 5 : trial % 3 == 1 ? 1000 : std::int64_t{1} << 50;
    std::vector<std::int64_t> w(n);
    std::vector<double> p(n);
    for (std::size_t i = 0; i < n; ++i) {
      w[i] = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(scale));
      const double r = u(gen);
      p[i] = r < 0.1 ? 0.0 : r < 0.2 ? 1.0 : r < 0.3 ? 1e-9 : u(gen);  // p = 0 and p = 1 are constants
    }
    const Law want = enumerate_law(w, p);
    for (int group : {1, 2, 5, 24}) {
      INFO("trial " << trial << ", n = " << n << ", group " << group);
      const SparsePmf got = weighted_bernoulli_sum(w, p, group);
      test::require_law(got, want, 1e-12);
      REQUIRE(got.error_bound() <= 1e-250);  // nothing truncated: at most the underflow bound
    }
  }
}

TEST_CASE("weighted_bernoulli_sum of equal weights is Binomial, merged exactly", "[weighted_bernoulli_sum]") {
  const std::vector<std::int64_t> w(30, 7);
  const std::vector<double> p(30, 0.35);
  const SparsePmf got = weighted_bernoulli_sum(w, p, 8);  // 4 groups, folded
  REQUIRE(got.size() == 31);
  const Pmf binomial = to_pmf(Binomial(30, 0.35));
  for (std::int64_t k = 0; k <= 30; ++k) REQUIRE(pdf(got, 7 * k) == Approx(pdf(binomial, k)).epsilon(1e-12));
  REQUIRE(mean(got) == Approx(7 * 30 * 0.35).epsilon(1e-13));
}

TEST_CASE("weighted_bernoulli_sum: constants only, and bad input", "[weighted_bernoulli_sum][errors]") {
  const std::vector<std::int64_t> w{3, 4, 5};
  const SparsePmf fixed = weighted_bernoulli_sum(w, std::vector<double>{1.0, 0.0, 1.0});
  REQUIRE(fixed.size() == 1);
  REQUIRE(fixed.points()[0] == 8);
  REQUIRE(pdf(fixed, 8) == 1.0);
  REQUIRE(weighted_bernoulli_sum({}, {}).points()[0] == 0);
  const std::vector<double> p{0.5, 0.5, 0.5};
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(w, std::vector<double>{0.5, 0.5}), shape_error);
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(std::vector<std::int64_t>{3, -1, 5}, p), domain_error);
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(w, std::vector<double>{0.5, 1.5, 0.5}), domain_error);
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(w, std::vector<double>{0.5, std::nan(""), 0.5}), domain_error);
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(w, p, 0), domain_error);
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(w, p, 37), domain_error);
  const std::int64_t big_w = std::numeric_limits<std::int64_t>::max() / 2 + 1;
  REQUIRE_THROWS_AS(weighted_bernoulli_sum(std::vector<std::int64_t>{big_w, big_w}, std::vector<double>{0.5, 0.5}),
                    overflow_error);
  try {
    weighted_bernoulli_sum(w, std::vector<double>{0.5, 1.5, 0.5});
  } catch (const domain_error& e) {
    REQUIRE(std::string(e.what()).find("p[1]") != std::string::npos);
  }
}

}  // namespace test_weighted_bernoulli_sum
