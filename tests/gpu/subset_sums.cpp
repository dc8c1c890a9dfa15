// Subset sums on the CPU: the enumerated law against 50 digits, sampled supports, the bit-packed programme, bad input.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "reference.hpp"
#include "tally/error.hpp"
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"

namespace test_subset_sums {

using namespace tally::gpu;
using tally::test::big;

namespace {

/// P(S = v) for every v in 50 digits, S = sum w_i B_i with integer weights: the polynomial prod_i (q_i + p_i x^w_i).
std::vector<big> reference_law(const std::vector<std::int64_t>& w, const std::vector<double>& p) {
  std::int64_t span = 0;
  for (const auto x : w) span += x;
  std::vector<big> law(static_cast<std::size_t>(span) + 1, big(0));
  law[0] = 1;
  std::int64_t reach = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const big pi(p[i]), qi = 1 - pi;
    reach += w[i];
    for (std::int64_t t = reach; t >= 0; --t) {
      big v = law[t] * qi;
      if (t >= w[i]) v += law[t - w[i]] * pi;
      law[t] = v;
    }
  }
  return law;
}

/// The same for double weights: sums kept exact in 50 digits (the keys are their correctly rounded doubles).
std::map<double, big> reference_law(const std::vector<double>& w, const std::vector<double>& p) {
  std::map<big, big> law{{big(0), big(1)}};
  for (std::size_t i = 0; i < w.size(); ++i) {
    std::map<big, big> next;
    for (const auto& [s, m] : law) {
      next[s] += m * (1 - big(p[i]));
      next[s + big(w[i])] += m * big(p[i]);
    }
    law.swap(next);
  }
  std::map<double, big> out;
  for (const auto& [s, m] : law) out[static_cast<double>(s)] += m;
  return out;
}

/// The worst relative error of law's probabilities (weights e^log_scale) against a 50-digit probability per value.
template <class W, class Lookup>
double worst_error(const SubsetSumLaw<W>& law, Lookup&& reference) {
  using boost::multiprecision::exp;
  double worst = 0;
  for (std::size_t j = 0; j < law.values.size(); ++j)
    worst = std::max(worst, tally::test::relative_error_log(std::log(law.weights[j]) + law.log_scale,
                                                            boost::multiprecision::log(reference(law.values[j]))));
  return worst;
}

std::vector<double> random_probabilities(std::mt19937_64& gen, std::size_t n) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> p(n);
  for (auto& x : p) {
    const double r = u(gen);
    x = r < 0.15 ? std::pow(10.0, -30.0 * u(gen)) : r > 0.85 ? 1.0 - std::pow(10.0, -1.0 - 14.0 * u(gen)) : u(gen);
  }
  return p;
}

}  // namespace

TEST_CASE("the enumerated law of integer weights matches 50 digits, far tails included", "[gpu][subsets]") {
  std::mt19937_64 gen(501);
  for (const int n : {1, 5, 12, 20}) {
    std::uniform_int_distribution<std::int64_t> weight(0, n < 20 ? 40 : 25);
    std::vector<std::int64_t> w(n);
    for (auto& x : w) x = weight(gen);
    const auto p = random_probabilities(gen, n);
    const auto law = cpu::subset_sum_law(w, p);
    const auto ref = reference_law(w, p);
    INFO("n = " << n);
    // every value of positive 50-digit probability is listed, and nothing else
    std::vector<std::int64_t> support;
    for (std::size_t t = 0; t < ref.size(); ++t)
      if (ref[t] > 0) support.push_back(static_cast<std::int64_t>(t));
    REQUIRE(law.values == support);
    CHECK(worst_error(law, [&](std::int64_t v) { return ref[static_cast<std::size_t>(v)]; }) < 1e-13);
  }
}

TEST_CASE("the enumerated law of double weights merges equal sums exactly and matches 50 digits", "[gpu][subsets]") {
  std::mt19937_64 gen(502);
  std::uniform_int_distribution<int> tenths(0, 30);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (const bool decimal : {true, false}) {
    const int n = 14;
    std::vector<double> w(n);
    for (auto& x : w) x = decimal ? tenths(gen) * 0.1 : u(gen);  // 0.1-multiples: many equal sums
    const auto p = random_probabilities(gen, n);
    const auto law = cpu::subset_sum_law(w, p);
    const auto ref = reference_law(w, p);
    INFO("decimal weights: " << decimal);
    REQUIRE(law.values.size() == ref.size());
    std::size_t j = 0;
    for (const auto& [v, m] : ref) REQUIRE(law.values[j++] == v);
    CHECK(worst_error(law, [&](double v) { return ref.at(v); }) < 1e-13);
  }
}

TEST_CASE("a small law by hand; p of 0 or 1 and zero weights", "[gpu][subsets]") {
  const std::vector<std::int64_t> w{1, 2, 3, 100, 7, 0};
  const std::vector<double> p{0.5, 0.5, 0.5, 1.0, 0.0, 0.25};
  const auto law = cpu::subset_sum_law(w, p);
  REQUIRE(law.values == std::vector<std::int64_t>{100, 101, 102, 103, 104, 105, 106});
  const std::vector<double> eighths{1, 1, 1, 2, 1, 1, 1};
  for (std::size_t j = 0; j < eighths.size(); ++j)
    CHECK(law.weights[j] * std::exp(law.log_scale) == Approx(eighths[j] / 8).epsilon(1e-15));
  // nothing uncertain: one value, weight 1
  const auto point = cpu::subset_sum_law(std::vector<std::int64_t>{4, 5}, std::vector<double>{1.0, 0.0});
  REQUIRE(point.values == std::vector<std::int64_t>{4});
  CHECK(point.weights[0] * std::exp(point.log_scale) == 1.0);
}

TEST_CASE("bad input to the enumeration gets named errors", "[gpu][subsets]") {
  const std::vector<std::int64_t> w{1, 2};
  CHECK_THROWS_AS(cpu::subset_sum_law(w, std::vector<double>{0.5}), tally::shape_error);
  CHECK_THROWS_AS(cpu::subset_sum_law(std::vector<std::int64_t>{1, -2}, std::vector<double>{0.5, 0.5}),
                  tally::domain_error);
  CHECK_THROWS_AS(cpu::subset_sum_law(std::vector<double>{1, NAN}, std::vector<double>{0.5, 0.5}), tally::domain_error);
  CHECK_THROWS_AS(cpu::subset_sum_law(std::vector<double>{1, INFINITY}, std::vector<double>{0.5, 0.5}),
                  tally::domain_error);
  CHECK_THROWS_AS(cpu::subset_sum_law(w, std::vector<double>{0.5, 1.5}), tally::domain_error);
  CHECK_THROWS_AS(cpu::subset_sum_law(w, std::vector<double>{NAN, 0.5}), tally::domain_error);
  const std::vector<std::int64_t> many(max_enumerated_weights + 1, 1);
  const std::vector<double> half(many.size(), 0.5);
  CHECK_THROWS_AS(cpu::subset_sum_law(many, half), tally::overflow_error);
  CHECK_THROWS_AS(subset_sum_law(many, half), tally::overflow_error);  // the dispatch point too
  CHECK_THROWS_AS(cpu::subset_sum_law(std::vector<std::int64_t>{std::int64_t{1} << 61, std::int64_t{1} << 61},
                                      std::vector<double>{0.5, 0.5}),
                  tally::overflow_error);
  // 30 double weights would sort 2^30 sums on the CPU: refused with the bytes it needs
  std::vector<double> dw(30);
  for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = 1.0 + 0.01 * double(i);
  CHECK_THROWS_WITH(cpu::subset_sum_law(dw, std::vector<double>(30, 0.5)), Catch::Contains("bytes"));
}

TEST_CASE("sampled supports reproduce seed 000's worked example", "[gpu][subsets]") {
  const std::vector<std::vector<std::int64_t>> ints{{1, 2, 3}, {4, 5}};
  const auto got = sampled_subset_sums(ints, 8, 0);
  REQUIRE(got == std::vector<std::vector<std::int64_t>>{{0, 1, 2, 3, 4, 5, 6}, {0, 4, 5, 9}});
  const std::vector<std::vector<double>> reals{{1.0, 2.0, 3.0}, {4.0, 5.0}};
  REQUIRE(cpu::sampled_subset_sums(reals, 8, 7) == std::vector<std::vector<double>>{{0, 1, 2, 3, 4, 5, 6}, {0, 4, 5, 9}});
}

TEST_CASE("sampled supports draw distinct subsets, reproducibly, and only subset sums", "[gpu][subsets]") {
  // powers of two: every subset has its own sum, so k distinct sums means k distinct subsets
  std::vector<std::int64_t> powers(40);
  for (std::size_t j = 0; j < powers.size(); ++j) powers[j] = std::int64_t{1} << j;
  const std::vector<std::vector<std::int64_t>> vectors{powers, {}, {5}, {3, 3, 3}};
  const auto a = cpu::sampled_subset_sums(vectors, 5000, 11);
  REQUIRE(a[0].size() == 5000);
  REQUIRE(a[1] == std::vector<std::int64_t>{0});
  REQUIRE(a[2] == std::vector<std::int64_t>{0, 5});
  REQUIRE(a[3] == std::vector<std::int64_t>{0, 3, 6, 9});
  REQUIRE(cpu::sampled_subset_sums(vectors, 5000, 11) == a);
  REQUIRE(cpu::sampled_subset_sums(vectors, 5000, 12)[0] != a[0]);
  // the samples of a vector with 2^12 subsets and k = 1000 are subset sums
  std::mt19937_64 gen(503);
  std::uniform_int_distribution<std::int64_t> weight(0, 1000);
  std::vector<std::int64_t> w(12);
  for (auto& x : w) x = weight(gen);
  std::set<std::int64_t> all;
  for (std::uint64_t m = 0; m < (1u << 12); ++m) {
    std::int64_t s = 0;
    for (int j = 0; j < 12; ++j)
      if ((m >> j) & 1u) s += w[j];
    all.insert(s);
  }
  const auto sample = cpu::sampled_subset_sums(std::vector<std::vector<std::int64_t>>{w}, 1000, 3)[0];
  REQUIRE(std::is_sorted(sample.begin(), sample.end()));
  REQUIRE(sample.size() <= 1000);
  REQUIRE(sample.size() > 500);
  for (const auto s : sample) REQUIRE(all.count(s) == 1);
}

TEST_CASE("bad input to sampled supports gets named errors", "[gpu][subsets]") {
  CHECK_THROWS_AS(cpu::sampled_subset_sums(std::vector<std::vector<std::int64_t>>{{1}}, 0, 1), tally::domain_error);
  CHECK_THROWS_AS(cpu::sampled_subset_sums(std::vector<std::vector<std::int64_t>>{{1, -1}}, 4, 1), tally::domain_error);
  CHECK_THROWS_AS(cpu::sampled_subset_sums(std::vector<std::vector<double>>{{1, NAN}}, 4, 1), tally::domain_error);
  CHECK_THROWS_AS(cpu::sampled_subset_sums(std::vector<std::vector<std::int64_t>>{std::vector<std::int64_t>(64, 1)}, 4, 1),
                  tally::shape_error);
}

TEST_CASE("the bit-packed programme solves seed 002's toy instance", "[gpu][subsets]") {
  const std::vector<std::int64_t> w{3, 5, 8, 10};
  const auto answer = subset_sum(w, 12);
  CHECK_FALSE(answer.reachable);
  CHECK(answer.best == 11);
  CHECK(cpu::subset_sum(w, 13).reachable);  // 3 + 10, 5 + 8
  const auto sums = cpu::reachable_sums(w, 12);
  CHECK(sums.totals() == std::vector<std::int64_t>{0, 3, 5, 8, 10, 11});
  CHECK(sums.count() == 6);
  CHECK(sums.largest_at_most(9) == 8);
  CHECK_FALSE(sums.contains(13));
  CHECK_FALSE(sums.contains(-1));
}

TEST_CASE("the bit-packed programme matches brute force across word boundaries", "[gpu][subsets]") {
  std::mt19937_64 gen(504);
  for (const std::int64_t c : {0, 1, 63, 64, 65, 127, 128, 200, 1000}) {
    std::uniform_int_distribution<std::int64_t> weight(0, std::max<std::int64_t>(c, 1) + 20);
    std::vector<std::int64_t> w(12);
    for (auto& x : w) x = weight(gen);
    std::set<std::int64_t> want;
    for (std::uint64_t m = 0; m < (1u << 12); ++m) {
      std::int64_t s = 0;
      for (int j = 0; j < 12; ++j)
        if ((m >> j) & 1u) s += w[j];
      if (s <= c) want.insert(s);
    }
    INFO("c = " << c);
    const auto sums = cpu::reachable_sums(w, c);
    REQUIRE(sums.totals() == std::vector<std::int64_t>(want.begin(), want.end()));
    const auto answer = cpu::subset_sum(w, c);
    CHECK(answer.reachable == (want.count(c) == 1));
    CHECK(answer.best == *want.rbegin());
  }
}

TEST_CASE("shift_or shifts packed rows, in place or not", "[gpu][subsets]") {
  std::vector<std::uint64_t> row{0b1011, 0, 1ull << 63};
  std::vector<std::uint64_t> out(3, 0);
  cpu::shift_or(row, 62, out);  // bits 0, 1, 3 -> 62, 63, 65; bit 191 -> dropped
  CHECK(out == std::vector<std::uint64_t>{3ull << 62, 0b10, 0});
  cpu::shift_or(row, 0, row);
  CHECK(row == std::vector<std::uint64_t>{0b1011, 0, 1ull << 63});
  cpu::shift_or(row, 1, row);  // in place: bits 0,1,3,191 | 1,2,4
  CHECK(row == std::vector<std::uint64_t>{0b11111, 0, 1ull << 63});
  CHECK_THROWS_AS(cpu::shift_or(row, -1, row), tally::domain_error);
  CHECK_THROWS_AS(cpu::shift_or(row, 1, out = std::vector<std::uint64_t>(2)), tally::shape_error);
}

TEST_CASE("bad input to the programme gets named errors", "[gpu][subsets]") {
  CHECK_THROWS_AS(cpu::reachable_sums(std::vector<std::int64_t>{1}, -1), tally::domain_error);
  CHECK_THROWS_AS(cpu::reachable_sums(std::vector<std::int64_t>{1, -3}, 10), tally::domain_error);
  CHECK_THROWS_AS(reachable_sums(std::vector<std::int64_t>{1}, max_capacity + 1), tally::overflow_error);
  CHECK_THROWS_AS(ReachableSums(10, std::vector<std::uint64_t>{1, 0}), tally::shape_error);
  CHECK_THROWS_AS(ReachableSums(10, std::vector<std::uint64_t>{1ull << 11}), tally::shape_error);
  CHECK_THROWS_AS(cpu::reachable_sums(std::vector<std::int64_t>{1}, 10).largest_at_most(-1), tally::domain_error);
}

}  // namespace test_subset_sums
