// The generic pmf algebra agrees with every closed form: sums, thinning, and conditioning on sums.
#include <catch2/catch.hpp>

#include "reference.hpp"
#include "tally/distributions/algebra.hpp"
#include "tally/distributions/closed_forms.hpp"
#include "tally/distributions/condition.hpp"
#include "tally/error.hpp"

namespace test_closed_forms {

using namespace tally;

namespace {
const Truncation fine{1e-300};

/// Every entry of `generic` that is >= 1e-250 matches log_pdf(closed, k) to `rel`; no such entry is missing.
template <class Law>
void require_agree(const Pmf& generic, const Law& closed, double rel = 1e-12) {
  const Pmf exact = to_pmf(closed, fine);
  int checked = 0;
  for (std::int64_t k = exact.lo(); k <= exact.hi(); ++k) {
    const double want = log_pdf(closed, k);
    if (want < std::log(1e-250)) continue;
    INFO("k = " << k << ": generic " << log_pdf(generic, k) << ", closed form " << want);
    REQUIRE(std::abs(std::expm1(log_pdf(generic, k) - want)) <= rel);
    ++checked;
  }
  REQUIRE(checked > 0);
  REQUIRE(std::abs(generic.log_mass()) <= 1e-12 + generic.error_bound());
}
}  // namespace

TEST_CASE("Poisson + Poisson = Poisson, rates up to 1000", "[closed][sum]") {
  for (auto [a, b] : {std::pair{0.5, 2.0}, {3.0, 3.0}, {40.0, 7.5}, {1000.0, 999.0}, {0.001, 1000.0}}) {
    INFO("rates " << a << ", " << b);
    require_agree(sum(to_pmf(Poisson(a), fine), to_pmf(Poisson(b), fine)), sum(Poisson(a), Poisson(b)));
  }
}

TEST_CASE("Binomial + Binomial with equal p = Binomial, n up to 10^4", "[closed][sum]") {
  for (auto [n, m, p] : {std::tuple{3, 5, 0.5}, {100, 250, 0.3}, {5000, 5000, 0.5}, {10000, 37, 0.02}, {9000, 1000, 0.9}}) {
    INFO("n = " << n << ", m = " << m << ", p = " << p);
    require_agree(sum(to_pmf(Binomial(n, p)), to_pmf(Binomial(m, p))), sum(Binomial(n, p), Binomial(m, p)));
  }
  REQUIRE_THROWS_WITH(sum(Binomial(3, 0.5), Binomial(3, 0.4)), Catch::Contains("equal p"));
}

TEST_CASE("NegativeBinomial + NegativeBinomial with equal p = NegativeBinomial", "[closed][sum]") {
  for (auto [r, s, p] : {std::tuple{1.0, 2.0, 0.5}, {2.5, 7.25, 0.3}, {40.0, 60.0, 0.8}}) {
    INFO("r = " << r << ", s = " << s << ", p = " << p);
    require_agree(sum(to_pmf(NegativeBinomial(r, p), fine), to_pmf(NegativeBinomial(s, p), fine)),
                  sum(NegativeBinomial(r, p), NegativeBinomial(s, p)));
  }
  REQUIRE_THROWS_AS(sum(NegativeBinomial(1, 0.5), NegativeBinomial(1, 0.4)), domain_error);
}

TEST_CASE("thinning a Binomial or a Poisson is closed", "[closed][thinning]") {
  for (auto [n, p, q] : {std::tuple{10, 0.5, 0.5}, {1000, 0.3, 0.2}, {10000, 0.5, 0.7}}) {
    INFO("n = " << n << ", p = " << p << ", q = " << q);
    require_agree(marginal(to_pmf(Binomial(n, p)), Thinning(q)), marginal(Binomial(n, p), Thinning(q)));
  }
  for (auto [rate, q] : {std::pair{2.0, 0.5}, {50.0, 0.2}, {1000.0, 0.9}}) {
    INFO("rate = " << rate << ", q = " << q);
    require_agree(marginal(to_pmf(Poisson(rate), fine), Thinning(q)), marginal(Poisson(rate), Thinning(q)));
  }
}

TEST_CASE("Poissons given their sum: X | X + Y = z ~ Binomial(z, a / (a + b))", "[closed][condition]") {
  for (auto [a, b, z] : {std::tuple{2.0, 3.0, 4}, {40.0, 7.5, 60}, {1000.0, 250.0, 1180}, {1.0, 1.0, 30}}) {
    INFO("rates " << a << ", " << b << ", z = " << z);
    const auto closed = condition_on_sum(Poisson(a), Poisson(b), z);
    const Conditioned generic = condition_on_sum(to_pmf(Poisson(a), fine), to_pmf(Poisson(b), fine), z);
    REQUIRE(closed.posterior.has_value());
    REQUIRE(generic.posterior.has_value());
    require_agree(*generic.posterior, *closed.posterior);
    REQUIRE(std::abs(generic.log_likelihood - closed.log_likelihood) <= 1e-12 * std::abs(closed.log_likelihood) + 1e-13);
  }
  REQUIRE_FALSE(condition_on_sum(Poisson(1.0), Poisson(2.0), -1).posterior.has_value());
}

TEST_CASE("Binomials with equal p given their sum: Hypergeometric", "[closed][condition]") {
  for (auto [n, m, p, z] : {std::tuple{5, 7, 0.5, 6}, {100, 40, 0.3, 50}, {2000, 3000, 0.5, 2600}, {10000, 10, 0.1, 1000}}) {
    INFO("n = " << n << ", m = " << m << ", p = " << p << ", z = " << z);
    const auto closed = condition_on_sum(Binomial(n, p), Binomial(m, p), z);
    const Conditioned generic = condition_on_sum(to_pmf(Binomial(n, p)), to_pmf(Binomial(m, p)), z);
    REQUIRE(closed.posterior.has_value());
    require_agree(*generic.posterior, *closed.posterior);
    REQUIRE(std::abs(generic.log_likelihood - closed.log_likelihood) <= 1e-12 * std::abs(closed.log_likelihood) + 1e-13);
  }
  REQUIRE_FALSE(condition_on_sum(Binomial(3, 0.5), Binomial(4, 0.5), 8).posterior.has_value());
}

}  // namespace test_closed_forms
