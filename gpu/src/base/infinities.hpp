// Private: the infinities of log-masses and bounds (-inf: log 0, an impossible value), one definition for the library.
//
// Defined once here rather than in each source file: the library is compiled in batches of sources (a unity
// build, cmake/TallyUnity.cmake), where two file-local definitions of one name in one namespace would collide.
#pragma once

#include <limits>

namespace tally {

inline constexpr double inf = std::numeric_limits<double>::infinity();  ///< +inf
inline constexpr double neg_inf = -inf;                                 ///< -inf: log 0

}  // namespace tally
