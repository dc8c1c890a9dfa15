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

bool truncates(const Node& n) {
  const auto poisson = [](const ChildLaw& law) {
    return std::holds_alternative<ScaledPoisson>(law) || std::holds_alternative<IndexedPoisson>(law);
  };
  if (const auto* r = std::get_if<DiscreteRoot>(&n.kind)) return r->prior.error_bound() > 0.0;
  if (const auto* c = std::get_if<DiscreteChild>(&n.kind)) return poisson(c->law);
  if (const auto* j = std::get_if<JointSum>(&n.kind)) return poisson(j->law);
  if (const auto* c = std::get_if<CountChild>(&n.kind))
    return c->family == CountChild::negative_binomial || c->family == CountChild::poisson;
  return false;
}

std::vector<std::string> truncated_ancestors(Node& n, std::size_t limit) {
  std::vector<std::string> names;
  std::vector<Node*> stack{&n};
  std::unordered_set<Node*> seen{&n};
  while (!stack.empty()) {
    if (seen.size() > limit) {
      names.emplace_back("...");
      break;
    }
    Node* v = stack.back();
    stack.pop_back();
    if (v->state == State::realized) continue;
    if (truncates(*v)) names.push_back(v->name);
    for_each_dependence_edge(*v, [&](Node* u) {
      if (seen.insert(u).second) stack.push_back(u);
    });
  }
  return names;
}

namespace {
/// Whether n is not realized and is its own only uninstantiated ancestor (a prior, say).
bool alone(const Node& n) {
  bool alone = n.state != State::realized;
  for_each_dependence_edge(n, [&](const Node* u) { alone = alone && u->state == State::realized; });
  return alone;
}
}  // namespace

Node* shared_ancestor(Node& x, Node& y) {
  // Fast answers where one node, a, is its own only ancestor (a prior added to a running sum: a sum of n terms then
  // grafts in O(n), not O(n^2)); the other, b, is then an ancestor of a's only if a is one of b's ancestors. Edges
  // into an initialized node come only from initialized nodes (parents, more_parents: older than their children):
  // marginalized nodes reach only marginalized ones (mparents, ties, a group's members, a Beta's awaited count).
  //  - a initialized and newer than b: a path from b to a would run through initialized nodes only, each older than
  //    the one before it, and end at a; impossible.
  //  - a marginalized, b not initialized: b's ancestors are marginalized, and reach a only through an edge a knows
  //    of (its M-path child, a node tied to it, its group) or a Beta awaiting it.
  for (const auto& [a, b] : {std::pair<Node*, Node*>{&x, &y}, std::pair<Node*, Node*>{&y, &x}}) {
    if (a == b || !alone(*a)) continue;
    if (a->state == State::initialized && a->id > b->id) return nullptr;
    if (a->state == State::marginalized && b->state != State::initialized && !a->mchild && !a->tied && !a->group &&
        !a->awaited_by_beta)
      return nullptr;
  }
  const auto ax = uninstantiated_ancestors(x);
  const std::unordered_set<Node*> in_x(ax.begin(), ax.end());
  for (Node* v : uninstantiated_ancestors(y))
    if (in_x.count(v)) return v;
  return nullptr;
}

}  // namespace tally::runtime::detail
