// Sums, negation, differences and affine maps against brute-force enumeration, and their errors on bad input.
#include <catch2/catch.hpp>
#include <limits>

#include "brute_force.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/error.hpp"

namespace test_algebra {

using namespace tally;
using test::big;
using test::Law;

TEST_CASE("sum of independent pmfs equals enumeration of all pairs", "[algebra][sum]") {
  std::mt19937_64 gen(1);
  for (int trial = 0; trial < 40; ++trial) {
    const auto m = 1 + static_cast<Eigen::Index>(gen() % 90), n = 1 + static_cast<Eigen::Index>(gen() % 70);
    const Pmf x = test::random_pmf(gen, static_cast<std::int64_t>(gen() % 21) - 10, m, 8.0);
    const Pmf y = test::random_pmf(gen, static_cast<std::int64_t>(gen() % 21) - 10, n, 8.0);
    Law want;
    for (const auto& [i, p] : test::law_of(x))
      for (const auto& [j, q] : test::law_of(y)) want[i + j] += p * q;
    test::require_law(sum(x, y), want);
    Law diff;
    for (const auto& [i, p] : test::law_of(x))
      for (const auto& [j, q] : test::law_of(y)) diff[i - j] += p * q;
    test::require_law(difference(x, y), diff);
  }
}

TEST_CASE("sum keeps relative accuracy when every entry is far below 1e-300", "[algebra][sum][tails]") {
  Eigen::VectorXd lw(3);
  lw << -800.0, -801.0, -805.0;
  const Pmf x = Pmf::from_log(0, lw), y = Pmf::from_log(2, lw);
  const Pmf s = sum(x, y);
  // mu(2) = e^-1600 exactly, mu(3) = 2 e^-1601
  REQUIRE(log_pdf(s, 2) == Approx(-1600.0).epsilon(1e-15));
  REQUIRE(log_pdf(s, 3) == Approx(std::log(2.0) - 1601.0).epsilon(1e-15));
}

TEST_CASE("negate, shift and affine maps move the support exactly", "[algebra][affine]") {
  std::mt19937_64 gen(2);
  const Pmf x = test::random_pmf(gen, -4, 12);
  const Law lx = test::law_of(x);
  Law neg, shifted;
  for (const auto& [k, p] : lx) {
    neg[-k] = p;
    shifted[k + 7] = p;
  }
  test::require_law(negate(x), neg);
  test::require_law(shift(x, 7), shifted);
  for (std::int64_t a : {3, -2, 1, -1}) {
    Law want;
    for (const auto& [k, p] : lx) want[a * k + 5] = p;
    const SparsePmf ax = affine(x, a, 5);
    test::require_law(ax, want);
    REQUIRE(mean(ax) == Approx(static_cast<double>(a) * mean(x) + 5));
    REQUIRE(variance(ax) == Approx(static_cast<double>(a * a) * variance(x)));
  }
  const SparsePmf zero = affine(x, 0, 9);
  REQUIRE(zero.size() == 1);
  REQUIRE(pdf(zero, 9) == Approx(1.0));
}

TEST_CASE("sparse sums merge equal totals and agree with dense sums", "[algebra][sparse]") {
  std::mt19937_64 gen(3);
  const Pmf x = test::random_pmf(gen, 0, 9), y = test::random_pmf(gen, 1, 6);
  const SparsePmf ax = affine(x, 10, 0), by = affine(y, 3, -1);
  Law want;
  for (const auto& [i, p] : test::law_of(ax))
    for (const auto& [j, q] : test::law_of(by)) want[i + j] += p * q;
  const SparsePmf s = sum(ax, by);
  test::require_law(s, want);
  test::require_law(to_dense(s), want);
  test::require_law(sum(to_sparse(x), to_sparse(y)), test::law_of(sum(x, y)));
  REQUIRE_THROWS_AS(to_dense(affine(x, 1000000, 0), {1e-15, 1000}), overflow_error);
}

TEST_CASE("integer overflow of a support is a clear error", "[algebra][errors]") {
  const auto big_k = std::numeric_limits<std::int64_t>::max() - 1;
  const Pmf far = Pmf(big_k, Eigen::VectorXd::Ones(2));
  REQUIRE_THROWS_AS(sum(far, far), overflow_error);
  REQUIRE_THROWS_WITH(shift(far, 5), Catch::Contains("overflows"));
  REQUIRE_THROWS_AS(affine(Pmf::point(1LL << 40), 1LL << 30, 0), overflow_error);
  REQUIRE_THROWS_AS(negate(Pmf::point(std::numeric_limits<std::int64_t>::min())), overflow_error);
  REQUIRE_THROWS_AS(SparsePmf(IntVector::Constant(2, 3), Eigen::VectorXd::Ones(2)), shape_error);
  REQUIRE_THROWS_AS(SparsePmf(IntVector::Constant(1, 3), Eigen::VectorXd::Ones(2)), shape_error);
}

TEST_CASE("error bounds add under sums", "[algebra][truncation]") {
  const Pmf x = Pmf(0, Eigen::VectorXd::Ones(3), 0.0, 1e-6), y = Pmf(0, Eigen::VectorXd::Ones(2), 0.0, 2e-6);
  REQUIRE(sum(x, y).error_bound() == Approx(3e-6 + 2e-12));
  REQUIRE(negate(x).error_bound() == x.error_bound());
}

}  // namespace test_algebra
