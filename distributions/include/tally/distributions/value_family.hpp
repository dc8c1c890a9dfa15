// The trait saying a distribution family is a plain value: its truncated law depends on its parameters' bytes alone.
#pragma once

namespace tally {

/// true for a family whose to_pmf(d, t) depends only on the bytes of d (its parameters held by value: no pointer, no
/// heap memory, no padding) and on t. tally::runtime::Graph::assume keeps the law it made for such a family and
/// gives it again for a family of equal bytes (a filter that assumes Poisson(10) at every step computes that pmf
/// once). Each family's header says so for itself; a family that does not is made anew at every assume.
template <class Family>
inline constexpr bool value_family = false;

}  // namespace tally
