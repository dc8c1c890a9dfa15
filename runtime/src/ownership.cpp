// Node lifetime: the live-node counter and iterative destruction (a chain of 10^7 nodes frees without recursion).
#include <atomic>

#include "node.hpp"
#include "tally/gpu/population_ops.hpp"

namespace tally::runtime::detail {
namespace {
std::atomic<std::int64_t> live_nodes{0};
// While a node is being destroyed, the nodes it owned wait here instead of being destroyed inside its destructor.
thread_local std::vector<std::shared_ptr<Node>>* graveyard = nullptr;
}  // namespace

Context::Context(std::size_t n, std::uint64_t program_seed, gpu::Backend backend, Truncation t)
    : Place{n, backend, t, program_seed, 0, 0},
      group_size(n),
      shard{0, n, 0, n},
      log_weight_(gpu::filled(0.0, n, backend)) {}

Node::Node(std::shared_ptr<Context> c, Kind k, State s)
    : context(std::move(c)), kind(std::move(k)), state(s) {
  id = context->made;
  name = std::to_string(context->made++);
  name.insert(name.begin(), '#');
  if (truncates(*this)) ++context->truncating;
  next_live = context->first_live;
  if (next_live) next_live->prev_live = this;
  context->first_live = this;
  ++live_nodes;
}

std::int64_t Node::live() { return live_nodes.load(); }

Node::~Node() {
  // raw back-pointers into this node must not outlive it
  if (mchild)
    for (auto& m : mchild->mparents)
      if (m == this) m = nullptr;
  if (tied && tied->tied_to == this) {  // the partner keeps X's laws, to map them when asked (nothing computed here)
    tied->tied_to = nullptr;
    tied->tie_base = std::move(marginal);
    tied->marginal.clear();  // a mapping of X's laws cached by law() before X was conditioned again: stale
  }
  // Owned nodes are released by the outermost destructor, one at a time: dropping the last handle to a chain of
  // any length uses constant stack.
  std::vector<std::shared_ptr<Node>> pending;
  const bool outermost = graveyard == nullptr;
  if (outermost) graveyard = &pending;
  for (auto* owned : {&parents[0], &parents[1], &mchild, &tied})
    if (*owned) graveyard->push_back(std::move(*owned));
  for (auto& owned : more_parents)
    if (owned) graveyard->push_back(std::move(owned));
  if (continuous)
    for (auto* owned : {&continuous->mixture_count, &continuous->mixture_observed})
      if (*owned) graveyard->push_back(std::move(*owned));
  if (outermost) {
    while (!pending.empty()) {
      std::shared_ptr<Node> next = std::move(pending.back());
      pending.pop_back();
      next.reset();  // may run ~Node, which appends to `pending`
    }
    graveyard = nullptr;
  }
  (prev_live ? prev_live->next_live : context->first_live) = next_live;
  if (next_live) next_live->prev_live = prev_live;
  --live_nodes;
}

}  // namespace tally::runtime::detail
