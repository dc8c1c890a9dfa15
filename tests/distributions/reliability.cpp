// Defects found by hostile inputs, each kept as a test: foreign exceptions and apparent hangs.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "distributions/src/families/family_helpers.hpp"
#include "reference.hpp"
#include "tally/distributions/beta_binomial.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/distributions/binomial.hpp"
#include "tally/distributions/child_laws.hpp"
#include "tally/distributions/closed_forms.hpp"
#include "tally/distributions/geometric.hpp"
#include "tally/distributions/hypergeometric.hpp"
#include "tally/distributions/log_pmf.hpp"
#include "tally/distributions/negative_binomial.hpp"
#include "tally/distributions/poisson.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/sparse_pmf.hpp"
#include "tally/distributions/uniform_int.hpp"
#include "tally/error.hpp"

namespace test_reliability {

using namespace tally;

namespace {

/// Runs f; passes when it returns or throws one of tally's error types whose message names `family`; fails on
/// any other exception type (Boost's, the standard library's), reporting its message.
template <class F>
void only_tally_errors(F f, const std::string& family) {
  try {
    f();
  } catch (const tally::domain_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(family) != std::string::npos);
  } catch (const tally::overflow_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(family) != std::string::npos);
  } catch (const tally::shape_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(family) != std::string::npos);
  } catch (const std::exception& e) {
    FAIL("a foreign exception left tally: " << e.what());
  }
}

/// log sum_x w_x Poisson(y; a x) for every y in [lo, hi], by brute force over every (x, y) in long double.
std::vector<long double> brute_scaled_poisson(const Pmf& x, double a, std::int64_t lo, std::int64_t hi) {
  std::vector<long double> out;
  for (std::int64_t y = lo; y <= hi; ++y) {
    long double top = -std::numeric_limits<long double>::infinity();
    std::vector<long double> terms;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      if (x.weights()[i] == 0.0) continue;
      const long double t = std::log(static_cast<long double>(x.weights()[i])) +
                            log_poisson_pmf(y, a * static_cast<double>(x.lo() + i));
      terms.push_back(t);
      top = std::max(top, t);
    }
    long double s = 0.0L;
    for (long double t : terms) s += std::exp(t - top);
    out.push_back(top + std::log(s) + x.log_scale());
  }
  return out;
}

}  // namespace

TEST_CASE("NegativeBinomial with extreme parameters throws only tally's errors, naming the family",
          "[reliability][negative_binomial]") {
  const std::vector<double> rs = {1e-17, 1e-8, 0.5, 10.0, 1e5, 1e10};
  const std::vector<double> ps = {1e-300, 1e-100, 1e-20, 1e-8, 0.5, 1.0 - 1e-12};
  for (double r : rs)
    for (double p : ps) {
      INFO("r = " << r << ", p = " << p);
      const NegativeBinomial d(r, p);
      only_tally_errors([&] { (void)to_pmf(d); }, "NegativeBinomial");
      only_tally_errors([&] { (void)quantile(d, 0.5); }, "NegativeBinomial");
      only_tally_errors([&] { (void)quantile(d, 1e-300); }, "NegativeBinomial");
      for (std::int64_t k : {std::int64_t{0}, std::int64_t{1000000}, std::int64_t{1} << 62}) {
        only_tally_errors(
            [&] {
              const double c = cdf(d, k);
              REQUIRE(c >= 0.0);
              REQUIRE(c <= 1.0);
            },
            "NegativeBinomial");
        const double lp = log_pdf(d, k);
        REQUIRE(!std::isnan(lp));
        REQUIRE(lp <= 0.0);
      }
    }
  // the reported case: a mean of 1e301 cannot be tabulated, and the error says so with the family's name
  try {
    (void)to_pmf(NegativeBinomial(10, 1e-300));
    FAIL("to_pmf(NegativeBinomial(10, 1e-300)) returned");
  } catch (const tally::overflow_error& e) {
    REQUIRE(std::string(e.what()).find("NegativeBinomial") != std::string::npos);
  }
}

TEST_CASE("thinning a NegativeBinomial is a NegativeBinomial, and the generic path agrees",
          "[reliability][thinning][closed_form]") {
  const NegativeBinomial x(7.5, 0.3);
  for (double q : {0.0, 0.25, 0.9, 1.0}) {
    INFO("q = " << q);
    const NegativeBinomial closed = marginal(x, Thinning(q));
    const Pmf generic = marginal(to_pmf(x), Thinning(q));
    // the generic marginal thins the truncated X (at most 1e-15 dropped): entries far above that agree to
    // rounding, and the whole law agrees within the carried bound
    double l1 = 0.0;
    const std::int64_t top = std::max<std::int64_t>(generic.hi(), 400);
    for (std::int64_t k = 0; k <= top; ++k) {
      const double want = pdf(closed, k);
      l1 += std::abs(pdf(generic, k) - want);
      if (want < 1e-3) continue;
      INFO("k = " << k);
      REQUIRE(std::abs(std::expm1(log_pdf(generic, k) - log_pdf(closed, k))) <= 1e-12);
    }
    REQUIRE(l1 <= generic.error_bound() + 1e-14);
  }
}

TEST_CASE("thinning a count near 3.5e9 is refused at once with the sizes, not an apparent hang",
          "[reliability][thinning]") {
  const Pmf x = to_pmf(NegativeBinomial(1e10, 0.74));
  REQUIRE(x.size() > 100000);
  try {
    (void)marginal(x, Thinning(0.5));
    FAIL("the thinning returned");
  } catch (const tally::overflow_error& e) {
    const std::string what = e.what();
    REQUIRE(what.find("max_work") != std::string::npos);
    REQUIRE(what.find(std::to_string(x.size())) != std::string::npos);
  }
  // the closed form answers instead
  const NegativeBinomial y = marginal(NegativeBinomial(1e10, 0.74), Thinning(0.5));
  REQUIRE(std::abs(mean(y) - 0.5 * mean(NegativeBinomial(1e10, 0.74))) <= 1e-12 * mean(y));
}

TEST_CASE("a sum of two wide pmfs on the CPU is refused at once with the sizes, not an apparent hang (found by "
          "fuzz_algebra: two 2.7M-entry operands ran for hours)",
          "[reliability][sum]") {
  if (tally::gpu::cuda_available()) {
    WARN("a device takes such sums: the CPU refusal is not reached here");
    return;
  }
  const Pmf x(0, Eigen::VectorXd::Constant(300000, 1.0)), y(-5, Eigen::VectorXd::Constant(250000, 0.5));
  try {
    (void)sum(x, y);
    FAIL("the sum returned");
  } catch (const tally::overflow_error& e) {
    const std::string what = e.what();
    REQUIRE(what.find("300000") != std::string::npos);
    REQUIRE(what.find("250000") != std::string::npos);
  }
  REQUIRE_THROWS_AS(difference(x, y), tally::overflow_error);
  // below the limit the sum is computed (65536 x 1024 = 2^26 multiply-adds), and its middle is flat
  const Pmf s = sum(Pmf(0, Eigen::VectorXd::Constant(65536, 1.0)), Pmf(0, Eigen::VectorXd::Constant(1024, 1.0)));
  REQUIRE(s.size() == 65536 + 1024 - 1);
  REQUIRE(pdf(s, 30000) == Approx(pdf(s, 40000)).epsilon(1e-12));
}

TEST_CASE("a scaled Poisson of a wide prior sums each term over its own range, exactly",
          "[reliability][scaled_poisson]") {
  // per-term ranges (78 sqrt(a x)) are far narrower than the result here, so the cuts are exercised
  const Pmf x = to_pmf(UniformInt(0, 3000));
  const double a = 0.5;
  const Pmf y = marginal(x, ScaledPoisson(a));
  REQUIRE(y.lo() == 0);
  REQUIRE(y.hi() > 1600);
  const auto brute = brute_scaled_poisson(x, a, y.lo(), y.hi());
  const long double top = *std::max_element(brute.begin(), brute.end());
  int checked = 0;
  for (std::int64_t k = y.lo(); k <= y.hi(); ++k) {
    const long double want = brute[static_cast<std::size_t>(k - y.lo())];
    if (want < top + std::log(static_cast<long double>(flush_fraction))) continue;
    INFO("k = " << k);
    REQUIRE(std::abs(std::expm1(static_cast<long double>(log_pdf(y, k)) - want)) <= 1e-13L);
    ++checked;
  }
  REQUIRE(checked > 1500);
  // mass: 1 less what the truncation dropped, which the bound covers
  REQUIRE(std::abs(std::exp(y.log_mass()) - 1.0) <= y.error_bound() + 1e-13);
  REQUIRE(y.error_bound() <= 2e-15);
}

TEST_CASE("marginal(Geometric(5e-4), ScaledPoisson(1)) answers: the reported apparent hang",
          "[reliability][scaled_poisson]") {
  const Geometric g(5e-4);
  const Pmf x = to_pmf(g);
  REQUIRE(x.size() > 60000);
  const Pmf y = marginal(x, ScaledPoisson(1.0));
  REQUIRE(std::abs(std::exp(y.log_mass()) - 1.0) <= y.error_bound() + 1e-12);
  // E[Y] = a E[X], Var[Y] = a E[X] + a^2 Var[X] (of the truncated X: its mass is within 1e-15 of 1)
  REQUIRE(std::abs(mean(y) - mean(x)) <= 1e-9 * mean(x));
  REQUIRE(std::abs(variance(y) - (mean(x) + variance(x))) <= 1e-9 * variance(x));
  // and a far larger result is refused at once with its size
  try {
    (void)marginal(x, ScaledPoisson(1e4));
    FAIL("the scaled Poisson returned");
  } catch (const tally::overflow_error& e) {
    REQUIRE(std::string(e.what()).find("max_size") != std::string::npos);
  }
}

TEST_CASE("every family with extreme parameters throws only tally's errors (found by fuzz_algebra)",
          "[reliability][families]") {
  const std::int64_t huge = std::int64_t{1} << 62;
  const std::vector<Truncation> truncations = {Truncation{}, Truncation{0.5}, Truncation{1e-300}};
  // Poisson rates where Boost's incomplete gamma gives up ("series evaluation exceeded 1000000 iterations")
  for (double rate : {1e15, 1e16, 1e17, 1e18, 4e18, 4.6e18}) {
    INFO("rate = " << rate);
    const Poisson d(rate);
    for (const Truncation& t : truncations) only_tally_errors([&] { (void)to_pmf(d, t); }, "Poisson");
    only_tally_errors([&] { (void)quantile(d, 0.5); }, "Poisson");
    only_tally_errors([&] { REQUIRE(cdf(d, huge) >= 0.0); }, "Poisson");
  }
  for (double p : {1e-300, 1e-20, 1e-17}) {
    INFO("p = " << p);
    const Geometric d(p);
    for (const Truncation& t : truncations) only_tally_errors([&] { (void)to_pmf(d, t); }, "Geometric");
    only_tally_errors([&] { (void)quantile(d, 0.5); }, "Geometric");
  }
  // cdfs summed term by term over a spread of ~1e18 (an apparent hang) are refused with the family's name
  const BetaBinomial bb(huge, 0.5, 0.7);
  only_tally_errors([&] { (void)cdf(bb, huge / 3); }, "BetaBinomial");
  only_tally_errors([&] { (void)quantile(bb, 0.3); }, "BetaBinomial");
  const Hypergeometric hg(huge, huge / 2, huge / 2);
  only_tally_errors([&] { (void)cdf(hg, huge / 4 - 1000); }, "Hypergeometric");
  only_tally_errors([&] { (void)quantile(hg, 0.3); }, "Hypergeometric");
}

TEST_CASE("a bad weight of a pmf near the end of int64 is a domain_error, not an overflow in the message",
          "[reliability][pmf]") {
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  Eigen::VectorXd w(3);
  w << 1.0, -1.0, 1.0;
  REQUIRE_THROWS_AS(Pmf(top - 1, w), tally::domain_error);
  Eigen::VectorXd lw(3);
  lw << 0.0, std::numeric_limits<double>::quiet_NaN(), 0.0;
  REQUIRE_THROWS_AS(Pmf::from_log(top - 1, lw), tally::domain_error);
}

TEST_CASE("Binomial pmf near k = n for n near 2^63 is a probability, not +inf (found by fuzz_algebra)",
          "[reliability][binomial]") {
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t n : {top, top - 100, std::int64_t{1} << 62, std::int64_t{1} << 53}) {
    for (double p : {1e-300, 0.5, 0.999}) {
      for (std::int64_t k : {n - 13, n - 1, n / 2}) {
        INFO("n = " << n << ", p = " << p << ", k = " << k);
        const double l = log_pdf(Binomial(n, p), k);
        REQUIRE(!std::isnan(l));
        REQUIRE(l <= 0.0);
        REQUIRE(pdf(Binomial(n, p), k) <= 1.0);
      }
    }
  }
  // where both forms are accurate they agree: k / n just past 1/2
  const std::int64_t n = 1000000;
  const double log_a = log_pdf(Binomial(n, 0.5), 500001);
  const double log_b = log_pdf(Binomial(n, 0.5), 499999);  // the mirror image: k / n below 1/2
  REQUIRE(std::abs(log_a - log_b) <= 1e-13 * std::abs(log_a));
}

TEST_CASE("tabulating a flat law over nearly all of int64 is refused without overflowing the search (found by "
          "fuzz_algebra)",
          "[reliability][tabulate]") {
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  // BetaBinomial(n, 1, 1) is uniform on [0, n]: the search for its significant range doubles its step up to 2^62
  REQUIRE_THROWS_AS(to_pmf(BetaBinomial(top, 1.0, 1.0)), tally::overflow_error);
  REQUIRE_THROWS_AS(to_pmf(BetaBinomial(top - 7, 1.5, 1.0)), tally::overflow_error);
  REQUIRE_THROWS_AS(to_pmf(Hypergeometric(top, top / 2, top / 2)), tally::overflow_error);
}

TEST_CASE("the mode of a BetaBinomial with n near 2^63 is found by bisection, not by stepping (found by "
          "fuzz_algebra)",
          "[reliability][beta_binomial]") {
  // with n near 2^63 the ratio of successive terms rounds to 1 over a range of k as wide as ~1e18: the old mode
  // search stepped across it one k at a time
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t n : {top, top / 2, std::int64_t{1} << 40})
    for (double a : {1.0 + 1e-9, 1.5, 2.0, 1e6, 1e300})
      for (double b : {1.0 + 1e-9, 3.0, 1e6, 1e300}) {
        INFO("n = " << n << ", alpha = " << a << ", beta = " << b);
        const BetaBinomial d(n, a, b);
        only_tally_errors([&] { (void)to_pmf(d, Truncation{1e-15, 1 << 12}); }, "BetaBinomial");
        const double m = mean(d);
        REQUIRE(m >= 0.0);
        REQUIRE(m <= static_cast<double>(n));
      }
  // and where it can be checked, the mode is the largest entry of the pmf
  const Pmf small = to_pmf(BetaBinomial(60, 2.5, 4.0));
  Eigen::Index arg = 0;
  small.weights().maxCoeff(&arg);
  REQUIRE(small.lo() + arg == 20);  // ratio(k) > 1 exactly while k (2 - a - b) + n (a - 1) + 1 - b > 0: k < 20.3
}

TEST_CASE("truncating a law whose tails lie near 1e17 searches by bisection, not by stepping (found by "
          "fuzz_algebra)",
          "[reliability][truncation]") {
  // the kept range's ends were found by stepping one k at a time from Boost's guesses; near 1e17 a guess off by
  // thousands meant thousands of incomplete-beta evaluations. Each of these is too large for max_size anyway: the
  // answer is the overflow_error naming the range, at once.
  for (double p : {1e-17, 3e-18, 1e-16}) {
    for (double r : {0.5, 1.0, 10.0}) {
      INFO("r = " << r << ", p = " << p);
      REQUIRE_THROWS_AS(to_pmf(NegativeBinomial(r, p)), tally::overflow_error);
    }
    REQUIRE_THROWS_AS(to_pmf(Geometric(p)), tally::overflow_error);
  }
  for (double rate : {1e16, 1e17, 1e18}) REQUIRE_THROWS_AS(to_pmf(Poisson(rate)), tally::overflow_error);
  // and where the range fits, it is the one the tails say: P(X < lo) and P(X > hi) each within tol/2
  const NegativeBinomial d(3.5, 1e-4);
  const Truncation t{1e-10};
  const Pmf x = to_pmf(d, t);
  REQUIRE(cdf(d, x.lo() - 1) <= t.tolerance / 2);
  REQUIRE(cdf(d, x.lo()) > t.tolerance / 2);
  REQUIRE(1.0 - cdf(d, x.hi()) <= t.tolerance / 2 * (1 + 1e-6));
  REQUIRE(1.0 - cdf(d, x.hi() - 1) > t.tolerance / 2 * (1 - 1e-6));
}

TEST_CASE("to_pmf(Binomial(n, p)) with n near 2^63 is refused by size, with no float-to-int overflow finding its "
          "mode (found by fuzz_algebra under UBSan)",
          "[reliability][binomial]") {
  const std::int64_t top = std::numeric_limits<std::int64_t>::max();
  for (std::int64_t n : {top, top - 1, top - 511})
    for (double p : {0.999999, 0.5}) {
      INFO("n = " << n << ", p = " << p);
      REQUIRE_THROWS_AS(to_pmf(Binomial(n, p)), tally::overflow_error);
    }
  // p = 1 - 1e-16: the mode rounds to n (2^63 as a double), and the law is narrow (about 922 failures, sd 30)
  const Pmf near_n = to_pmf(Binomial(top, 1.0 - 1e-16));
  REQUIRE(near_n.hi() < top);
  REQUIRE(near_n.lo() > top - 3000);
  REQUIRE(std::abs(std::exp(near_n.log_mass()) - 1.0) <= 1e-12);
  REQUIRE(to_pmf(Binomial(top, 1.0)).lo() == top);  // the point mass at n
}

TEST_CASE("a sparse sum of two large supports is refused at once, not a 12 GB allocation (found by fuzz_algebra)",
          "[reliability][sparse]") {
  const std::int64_t n = 20000;  // 4e8 pairs, more than max_size
  const SparsePmf x = affine(to_pmf(UniformInt(0, n - 1)), 3, 0), y = affine(to_pmf(UniformInt(0, n - 1)), 5, 1);
  try {
    (void)sum(x, y);
    FAIL("the sparse sum returned");
  } catch (const tally::overflow_error& e) {
    REQUIRE(std::string(e.what()).find("max_size") != std::string::npos);
  }
  // small ones still work, exactly
  const SparsePmf a = affine(to_pmf(UniformInt(0, 3)), 3, 0), b = affine(to_pmf(UniformInt(0, 2)), 5, 0);
  const SparsePmf s = sum(a, b);
  REQUIRE(s.size() == 12);  // 3i + 5j for i < 4, j < 3 are all distinct
  REQUIRE(std::abs(pdf(s, 3 * 2 + 5 * 1) - 1.0 / 12.0) <= 1e-15);
}

TEST_CASE("BetaBinomial and Hypergeometric quantiles walk from the mode and agree with the cdf's definition",
          "[reliability][families]") {
  // fuzz_algebra spent 80 % of its time bisecting these quantiles with an O(n) cdf at each step; the walk must
  // keep the contract: the smallest k with cdf(k) >= p
  const auto check = [](const auto& d, std::int64_t lo, std::int64_t hi) {
    for (double p : {0.0, 1e-300, 1e-12, 1e-4, 2e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.998, 1.0 - 1e-9, 1.0}) {
      INFO("p = " << p);
      const std::int64_t k = quantile(d, p);
      REQUIRE(k >= lo);
      REQUIRE(k <= hi);
      REQUIRE(cdf(d, k) >= p);
      if (k > lo) REQUIRE(cdf(d, k - 1) < p);
    }
  };
  for (double a : {0.3, 1.0, 2.5, 40.0})
    for (double b : {0.4, 1.0, 3.0, 25.0})
      for (std::int64_t n : {0, 1, 7, 300, 5000}) {
        INFO("BetaBinomial(" << n << ", " << a << ", " << b << ")");
        check(BetaBinomial(n, a, b), 0, n);
      }
  for (std::int64_t N : {1, 50, 4000})
    for (std::int64_t K : {std::int64_t{0}, N / 3, N})
      for (std::int64_t n : {std::int64_t{0}, N / 2, N}) {
        INFO("Hypergeometric(N = " << N << ", K = " << K << ", n = " << n << ")");
        const Hypergeometric d(N, K, n);
        check(d, support(d).first, support(d).second);
      }
}

TEST_CASE("a sparse sum of more pairs than the truncation's max_size is refused at once", "[reliability]") {
  // fuzz_algebra (CI, 2026-11-25): two sparse laws of thousands of points each, 2^26 pairs sorted for over a minute
  // while the fuzzer's truncation allowed 2^13; the sum now honours a given Truncation's max_size
  std::vector<std::int64_t> points(3000);
  for (std::size_t i = 0; i < points.size(); ++i) points[i] = static_cast<std::int64_t>(7 * i);
  const SparsePmf x(Eigen::Map<const IntVector>(points.data(), Eigen::Index(points.size())),
                    Eigen::VectorXd::Constant(Eigen::Index(points.size()), 0.5));
  Truncation small;
  small.max_size = 1 << 13;
  REQUIRE_THROWS_AS(sum(x, x, small), overflow_error);
  const SparsePmf few(IntVector::LinSpaced(50, 0, 49), Eigen::VectorXd::Constant(50, 1.0));
  const SparsePmf s = sum(few, few, small);  // 2500 pairs: within the bound, and the same as without it
  REQUIRE(s.size() == sum(few, few).size());
  REQUIRE(s.size() == 99);
}

namespace {
/// The tests of the refusals run with this bound on the terms, not max_sum_terms (2^23): the same code, quick.
constexpr std::int64_t few_terms = 4096;

/// detail::sum_pmf as it was before its refusals at once (the loop alone): the sum, or nullopt where it threw.
template <class LogPmf, class Ratio>
std::optional<double> summed_term_by_term(std::int64_t from, std::int64_t to, bool may_stop, LogPmf log_pmf, Ratio ratio) {
  const std::int64_t step = from <= to ? 1 : -1;
  long double term = std::exp(static_cast<long double>(log_pmf(from)));
  long double sum = 0.0L;
  for (std::int64_t j = from, count = 1;; ++count) {
    sum += term;
    if (j == to) break;
    if (count == few_terms) return std::nullopt;
    const long double factor = step > 0 ? static_cast<long double>(ratio(j)) : 1.0L / static_cast<long double>(ratio(j - 1));
    j += step;
    term = count % detail::anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(j))) : term * factor;
    const auto left = static_cast<long double>(step > 0 ? to - j + 1 : j - to + 1);
    if (may_stop && factor < 1.0L && term * left <= 1e-20L * sum) break;
  }
  return static_cast<double>(sum);
}

/// detail::walk_quantile's walk as it was before its refusal at once (for 1e-3 <= prob <= 1 - 1e-3): the quantile,
/// or nullopt where it threw.
template <class Cdf, class LogPmf, class Ratio>
std::optional<std::int64_t> walked_term_by_term(double prob, std::int64_t lo, std::int64_t hi, std::int64_t k, Cdf cdf,
                                                LogPmf log_pmf, Ratio ratio) {
  long double c = cdf(k);
  long double term = std::exp(static_cast<long double>(log_pmf(k)));
  if (c >= prob) {
    for (std::int64_t count = 1; k > lo && c - term >= prob; ++count) {
      if (count >= few_terms) return std::nullopt;
      c -= term;
      --k;
      term = count % detail::anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(k)))
                                               : term / static_cast<long double>(ratio(k));
    }
  } else {
    for (std::int64_t count = 1; k < hi && c < prob; ++count) {
      if (count >= few_terms) return std::nullopt;
      term = count % detail::anchor_every == 0 ? std::exp(static_cast<long double>(log_pmf(k + 1)))
                                               : term * static_cast<long double>(ratio(k));
      ++k;
      c += term;
    }
  }
  while (k < hi && cdf(k) < prob) ++k;
  while (k > lo && cdf(k - 1) >= prob) --k;
  return k;
}

bool names_the_bound(const overflow_error& e) {
  return std::string(e.what()).find("needs more than " + std::to_string(few_terms) + " terms") != std::string::npos;
}
}  // namespace

TEST_CASE("a cdf's sum that cannot end within its bound on terms is refused at once: the outcome of summing",
          "[reliability][families]") {
  // fuzz_algebra's long runs spent most of their time in BetaBinomial cdfs with n near 2^63, summing 2^23 terms
  // before the overflow_error; sum_pmf now refuses at once where that error is certain. The outcome (the sum to the
  // bit, or the refusal) must be the loop's, here with a bound of 4096 terms: geometric tails (1 - r) r^j from 0
  // toward 2^40, whose stopping point crosses 4096 terms between 1 - r = 0.0168 and 0.017 (refused at once for
  // 0.005 and 0.0165; 0.01675 lies in the margin, refused by the loop; 0.017 and 0.02 answer), the same scaled by
  // e^-600 (a law's far tail: the stopping rule is relative to the sum, and so is the refusal at once), and sums
  // without stopping of 4096 and 4097 terms
  for (double scale : {0.0, -600.0})
  for (double x : {0.005, 0.0165, 0.01675, 0.017, 0.02}) {
    INFO("1 - r = " << x << ", log scale " << scale);
    const double r = 1.0 - x;
    const auto log_pmf = [&](std::int64_t j) { return scale + std::log1p(-r) + static_cast<double>(j) * std::log(r); };
    const auto ratio = [&](std::int64_t) { return r; };
    const std::optional<double> want = summed_term_by_term(0, std::int64_t{1} << 40, true, log_pmf, ratio);
    std::optional<double> got;
    try {
      got = detail::sum_pmf(0, std::int64_t{1} << 40, true, log_pmf, ratio, "test", few_terms);
    } catch (const overflow_error& e) {
      REQUIRE(names_the_bound(e));
    }
    REQUIRE(got.has_value() == want.has_value());
    REQUIRE(want.has_value() == (x >= 0.017));
    if (want) REQUIRE(*got == *want);
  }
  const auto flat = [](std::int64_t) { return -std::log(double(few_terms)); };
  const auto one = [](std::int64_t) { return 1.0; };
  REQUIRE(detail::sum_pmf(5, 5 + few_terms - 1, false, flat, one, "test", few_terms) ==
          *summed_term_by_term(5, 5 + few_terms - 1, false, flat, one));
  REQUIRE_THROWS_AS(detail::sum_pmf(5 + few_terms, 5, false, flat, one, "test", few_terms), overflow_error);
  REQUIRE_FALSE(summed_term_by_term(5 + few_terms, 5, false, flat, one).has_value());
  // and the laws of the long runs (the real bound, 2^23): refused, as before
  REQUIRE_THROWS_AS(cdf(BetaBinomial(9223372036854775787, 1.0, 30.6656), 3), overflow_error);
  REQUIRE_THROWS_AS(cdf(BetaBinomial(9223372036854775709, 0.47, 0.45), std::int64_t{1} << 40), overflow_error);
  REQUIRE_THROWS_AS(cdf(Hypergeometric(std::int64_t{1} << 62, std::int64_t{1} << 61, std::int64_t{1} << 61), std::int64_t{1} << 60),
                    overflow_error);
}

TEST_CASE("a quantile's walk that cannot end within its bound on terms is refused at once: the outcome of walking",
          "[reliability][families]") {
  // walk_quantile from the mode of a geometric law (1 - r) r^j on [0, 2^40] up to its median, and from the mode of
  // its mirror image (1 - r) r^(2^40 - j) down to it: about 0.69 / (1 - r) steps, more than 4096 below
  // 1 - r = 1.69e-4; refused at once below 1 - r = 1.65e-4 (block_bound is within ~4 % of the walk's sum here); at
  // 1.66e-4, by the walk itself; 1.7e-4 and 3e-4 answer
  const std::int64_t top = std::int64_t{1} << 40;
  for (bool mirrored : {false, true})
    for (double x : {5e-5, 1.66e-4, 1.7e-4, 3e-4}) {
      INFO("1 - r = " << x << (mirrored ? ", walking down" : ", walking up"));
      const long double r = 1.0L - x;
      const auto steps = [&](std::int64_t j) { return static_cast<long double>(mirrored ? top - j : j); };
      const auto log_pmf = [&](std::int64_t j) { return static_cast<double>(std::log1p(-r) + steps(j) * std::log(r)); };
      const auto ratio = [&](std::int64_t) { return static_cast<double>(mirrored ? 1.0L / r : r); };
      const auto cdf = [&](std::int64_t k) {  // the tail of the geometric series beyond 2^40 is below 1e-300
        return static_cast<double>(mirrored ? std::pow(r, static_cast<long double>(top - k)) : 1.0L - std::pow(r, steps(k) + 1));
      };
      const std::int64_t mode = mirrored ? top : 0;
      const std::optional<std::int64_t> want = walked_term_by_term(0.5, 0, top, mode, cdf, log_pmf, ratio);
      std::optional<std::int64_t> got;
      try {
        got = detail::walk_quantile(0.5, 0, top, mode, cdf, log_pmf, ratio, "test", few_terms);
      } catch (const overflow_error& e) {
        REQUIRE(names_the_bound(e));
      }
      REQUIRE(got.has_value() == want.has_value());
      REQUIRE(want.has_value() == (x >= 1.7e-4));
      if (want) REQUIRE(*got == *want);
    }
  // the long runs' laws (the real bound, 2^23): refused, as before
  REQUIRE_THROWS_AS(quantile(BetaBinomial(9223372036854775787, 1.0, 30.6656), 0.46), overflow_error);
  REQUIRE_THROWS_AS(quantile(BetaBinomial(9223372036854775782, 2.63124, 0.968149), 0.3805), overflow_error);
  REQUIRE_THROWS_AS(quantile(BetaBinomial(9223372036854775709, 0.470587, 0.0396217), 0.450644), overflow_error);
  REQUIRE_THROWS_AS(quantile(BetaBinomial(9223372036854775777, 0.0681639, 1.0), 0.192161), overflow_error);
  REQUIRE_THROWS_AS(quantile(BetaBinomial(9223372036854775782, 2.73438, 1e-274), 0.735969), overflow_error);
}

TEST_CASE("a quantile's walk through terms below the cdf's rounding costs a few cdfs, not one per term",
          "[reliability][families]") {
  // fuzz_algebra (fuzz/corpus/algebra/regress-slow-betabinomial-quantile-4a2bcd9df6): quantile(BetaBinomial(n ~
  // 2^63, 0.47, 0.998), 1 - 1.07e-14) took 16 s instrumented. Walking down from cdf(n) = 1, each term (5e-20) was
  // subtracted from a running cdf near 1, where long double's spacing is 5.4e-20: the walk stopped 1e5 terms off
  // and the correction then paid a cdf (itself 2e5 terms) per step. The walk now sums the passed terms apart. Here
  // a uniform law on [0, 2^62] (terms 2.2e-19) walked down from its top to 1 - 1e-14 and 1 - 3e-13 (45,000 and
  // 1.3 million terms), and up from the middle to 0.5 + 1e-14: the answer is bisection's, in a few dozen cdfs.
  const std::int64_t top = std::int64_t{1} << 62;
  const long double width = static_cast<long double>(top) + 1.0L;
  std::int64_t cdfs = 0;
  const auto uniform_cdf = [&](std::int64_t k) {
    ++cdfs;
    return static_cast<double>((static_cast<long double>(k) + 1.0L) / width);
  };
  const auto log_pmf = [&](std::int64_t) { return static_cast<double>(-std::log(width)); };
  const auto ratio = [](std::int64_t) { return 1.0; };
  for (const auto& [prob, start] : {std::pair{1.0 - 1e-14, top}, std::pair{1.0 - 3e-13, top}, std::pair{0.5 + 1e-14, top / 2}}) {
    INFO("prob " << prob << " from " << start);
    const std::int64_t want = detail::bisect_quantile(prob, 0, top, uniform_cdf);
    cdfs = 0;
    REQUIRE(detail::walk_quantile(prob, 0, top, start, uniform_cdf, log_pmf, ratio, "test") == want);
    REQUIRE(cdfs <= 40);  // 20 here (the cdf's double rounding leaves ~500 flat steps: a gallop); 259 before
  }
  // the fuzzer's law itself: the contract of a quantile
  const BetaBinomial d(9223372036854775709, 0.4705869777528171, 0.99842834472656006);
  const double prob = 0.99999999999998934;
  const std::int64_t q = quantile(d, prob);
  REQUIRE(cdf(d, q) >= prob);
  REQUIRE(cdf(d, q - 1) < prob);
  REQUIRE(d.trials() - q > 150000);  // about 2e5 terms of 5.4e-20 from the top
}

}  // namespace test_reliability
