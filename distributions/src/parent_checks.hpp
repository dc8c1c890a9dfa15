// Private: the checks a child law makes of its parent's support (a count, or a state index), shared by marginals
// and conditionings.
#pragma once

#include <cstdint>

#include "tally/distributions/pmf.hpp"
#include "tally/distributions/truncation.hpp"
#include "tally/error.hpp"

namespace tally::detail {

/// The parent of a thinning or a scaled Poisson must be a count: support within [0, inf).
inline void require_count(const Pmf& x, const char* who) {
  if (x.lo() < 0) fail<domain_error>(who, ": the parent must be a count >= 0, but its support starts at ", x.lo());
}

/// The parent of a Markov step or an indexed emission must index one of `states` states: support within
/// [0, states). `what` names the states in the message ("states", "states (rows) of T").
inline void require_states(const Pmf& x, std::int64_t states, const char* who, const char* what = "states") {
  if (x.lo() < 0 || x.hi() >= states)
    fail<domain_error>(who, ": the parent's support [", x.lo(), ", ", x.hi(), "] is not within the ", states, " ", what);
}

/// Throws overflow_error, at once, when an operation would take more than t.max_work multiply-adds (`work`, an
/// estimate from the sizes alone), naming the parent's size and the result's.
inline void check_work(double work, const Truncation& t, const char* who, std::int64_t parent_size,
                       double result_size) {
  if (work > static_cast<double>(t.max_work))
    fail<overflow_error>(who, ": a parent of ", parent_size, " entries and a result of about ", result_size,
                         " entries need about ", work, " multiply-adds, more than max_work = ", t.max_work,
                         " (raise Truncation::max_work, or use a closed form where one exists)");
}

}  // namespace tally::detail
