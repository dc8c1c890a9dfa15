// Deferred device checks (tally/gpu/deferred_checks.hpp): inside DeferChecks a device operation's error is raised
// where the host next waits, with the message it would have had at once; the first of several wins; then all is clean.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include "gpu/device.hpp"
#include "tally/error.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/runtime/graph.hpp"

namespace test_deferred_checks {

using namespace tally;
using gpu::Backend;
using gpu::Column;

namespace {
std::vector<std::int64_t> with_huge(std::size_t n, std::size_t at) {
  std::vector<std::int64_t> x(n, 3);
  x[at] = std::numeric_limits<std::int64_t>::max() / 2 + 1;  // 2 x overflows
  return x;
}
}  // namespace

TEST_CASE("deferred checks: raised at the next wait, first one wins, then clean", "[gpu][deferred][cuda]") {
  if (test::skip_without_device()) return;
  const std::size_t n = 1000;
  const auto ones = gpu::filled(std::int64_t{1}, n, Backend::cuda);
  const auto a = Column<std::int64_t>::from_host(with_huge(n, 417), Backend::cuda);
  const auto b = Column<std::int64_t>::from_host(with_huge(n, 12), Backend::cuda);
  std::string at_once;
  try {
    (void)gpu::linear(a, 2, ones, 0, 0);
  } catch (const overflow_error& e) {
    at_once = e.what();
  }
  REQUIRE_THAT(at_once, Catch::Contains("particle 417") && Catch::Contains("overflows"));
  {
    const gpu::DeferChecks defer;
    CHECK(gpu::checks_deferred());
    // neither call waits nor throws; the first one's error, word for word, comes with the next copy back
    const auto r = gpu::linear(a, 2, ones, 0, 0);
    const auto s = gpu::linear(b, 2, ones, 0, 0);
    Column<double> q = gpu::filled(1.5, n, Backend::cuda);
    const auto draws = gpu::sample_binomial(ones, q, 1, 0);  // a third bad one, not raised
    try {
      (void)r.to_host();
      FAIL("the deferred overflow was not raised");
    } catch (const overflow_error& e) {
      CHECK(std::string(e.what()) == at_once);
    }
    // raised once: the next waits find nothing pending
    CHECK(s.size() == n);
    CHECK(gpu::linear(ones, 2, ones, -1, 5).to_host() == std::vector<std::int64_t>(n, 6));
    CHECK_NOTHROW(gpu::raise_deferred_checks());
    // a sample_binomial error: its particle, n and q as the immediate check names them
    q = gpu::filled(0.5, n, Backend::cuda);
    std::vector<double> hq(n, 0.5);
    hq[77] = -0.25;
    (void)gpu::sample_binomial(ones, Column<double>::from_host(hq, Backend::cuda), 1, 0);
    CHECK_THROWS_WITH(gpu::raise_deferred_checks(),
                      Catch::Contains("particle 77") && Catch::Contains("q = -0.25") && Catch::Contains("n = 1"));
    CHECK_NOTHROW(gpu::raise_deferred_checks());
  }
  CHECK_FALSE(gpu::checks_deferred());
  // more checks than slots before a wait: the oldest are raised on the way, nothing is lost or misattributed
  {
    const gpu::DeferChecks defer;
    for (int k = 0; k < 1500; ++k) (void)gpu::linear(ones, 2, ones, 0, 0);
    CHECK_NOTHROW(gpu::raise_deferred_checks());
    for (int k = 0; k < 1500; ++k) (void)gpu::linear(k == 1400 ? a : ones, 2, ones, 0, 0);
    CHECK_THROWS_WITH(gpu::raise_deferred_checks(), Catch::Contains("particle 417"));
  }
}

TEST_CASE("a device graph raises an overflow of its values where the host next reads them", "[gpu][deferred][cuda]") {
  if (test::skip_without_device()) return;
  runtime::Graph pop(1000, 3, runtime::Device::cuda);
  const auto x = pop.constant(with_huge(1000, 417));
  const auto y = pop.add(x, x);  // deferred: no wait inside the step
  CHECK_THROWS_WITH(pop.value(y), Catch::Contains("particle 417") && Catch::Contains("overflows"));
  const auto z = pop.add(pop.constant(2), pop.constant(3));
  CHECK(pop.value(z) == std::vector<std::int64_t>(1000, 5));
}

}  // namespace test_deferred_checks
