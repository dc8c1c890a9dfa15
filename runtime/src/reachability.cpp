// Dependence by reachability: the uninstantiated ancestors of a node, and whether two nodes share one (CPU path).
#include <unordered_set>

#include "node.hpp"

namespace tally::runtime::detail {

// Depth-first over the edges that carry dependence: owning parents (initialized nodes), raw mparents (marginalized
// nodes) and tied_to (a node fixed by an observed sum). Realized nodes are constants: the search stops at them.
std::vector<Node*> uninstantiated_ancestors(Node& n) {
  std::vector<Node*> found, stack{&n};
  std::unordered_set<Node*> seen{&n};
  while (!stack.empty()) {
    Node* v = stack.back();
    stack.pop_back();
    if (v->state == State::realized) continue;
    found.push_back(v);
    for_each_dependence_edge(*v, [&](Node* u) {
      if (seen.insert(u).second) stack.push_back(u);
    });
  }
  return found;
}

Node* shared_ancestor(Node& x, Node& y) {
  const auto ax = uninstantiated_ancestors(x);
  const std::unordered_set<Node*> in_x(ax.begin(), ax.end());
  for (Node* v : uninstantiated_ancestors(y))
    if (in_x.count(v)) return v;
  return nullptr;
}

}  // namespace tally::runtime::detail
