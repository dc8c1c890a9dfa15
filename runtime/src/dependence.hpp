// Private: batch dependence queries (Graph::touches) by depth-first search or by the transitive closure.
#pragma once

#include <cstddef>
#include <vector>

#include "node.hpp"
#include "tally/runtime/graph.hpp"

namespace tally::runtime::detail {

/// Graph::touches on nodes (none null, all of one context): result[i] lists, ascending, the j with
/// anc*(observations[i]) and anc*(variables[j]) sharing a node; anc* as in uninstantiated_ancestors (empty for a
/// realized node). A directed cycle among the dependence edges would be a bug: `closure` lets the closure's
/// tally::shape_error through.
std::vector<std::vector<std::size_t>> touches(const std::vector<Node*>& observations,
                                              const std::vector<Node*>& variables, DependenceMethod method);

}  // namespace tally::runtime::detail
