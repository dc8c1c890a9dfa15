// The runtime's error bounds that wait on the device: evaluated once, when read; floors known at once; bounded depth.
#include <catch2/catch.hpp>

#include <cmath>

#include "runtime/src/bound.hpp"

namespace test_bound {

using tally::runtime::detail::Bound;
using tally::runtime::detail::larger;

TEST_CASE("a pending bound is evaluated once, when first read, and reads as its number", "[runtime][bound]") {
  int calls = 0;
  const Bound b = Bound::later(0.25, [&] { return ++calls, 0.5; });
  CHECK(b.pending());
  CHECK_FALSE(b.zero());  // not known to be 0: an operation that skips work for exact laws must not skip it
  CHECK(b.floor() == 0.25);
  CHECK(calls == 0);
  const Bound copy = b;  // shares the formula
  CHECK(double(b) == 0.5);
  CHECK(copy.value() == 0.5);
  CHECK(calls == 1);
  CHECK_FALSE(copy.pending());
  CHECK(copy.floor() == 0.5);
}

TEST_CASE("known bounds combine at once; a pending operand keeps the result pending with the combined floor",
          "[runtime][bound]") {
  const Bound a = 1e-12, zero;
  CHECK(zero.zero());
  CHECK_FALSE(a.zero());
  const Bound sum = Bound::combine(a, a, [](double x, double y) { return x + y + x * y; });
  CHECK_FALSE(sum.pending());
  CHECK(sum.value() == Approx(2e-12 + 1e-24).epsilon(1e-12));

  int calls = 0;
  const Bound p = Bound::later(1e-9, [&] { return ++calls, 3e-9; });
  const Bound m = larger(a, p);
  CHECK(m.pending());
  CHECK(m.floor() == 1e-9);
  CHECK(calls == 0);
  CHECK(m.value() == 3e-9);
  CHECK(calls == 1);
  CHECK(larger(m, a).value() == 3e-9);  // p is known now: no new formula
  CHECK_FALSE(larger(m, a).pending());
}

TEST_CASE("formulas nested past the depth cap are evaluated at once (a long chain never recurses deeply)",
          "[runtime][bound]") {
  int calls = 0;
  Bound b = Bound::later(0.0, [&] { return ++calls, 1e-15; });
  for (int step = 0; step < 1000; ++step) b = Bound::combine(b, 1e-15, [](double x, double y) { return x + y; });
  CHECK(calls == 1);       // the cap read the chain once ...
  CHECK(b.depth() <= 65);  // ... and what is left is short
  CHECK(b.value() == Approx(1001e-15).epsilon(1e-12));
}

}  // namespace test_bound
