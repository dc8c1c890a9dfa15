// Private: one node of a Population (its state, its laws or values, its links) and the population's shared state.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "tally/distributions/truncation.hpp"
#include "tally/gpu/population_arrays.hpp"
#include "tally/gpu/population_chain.hpp"

namespace tally::runtime::detail {

/// Live population nodes in this process.
inline std::atomic<std::int64_t> live_population_nodes{0};

/// A node. Ownership (see Population): strong links only from an initialized node up to its parent
/// (`initialized_parent`) and from a marginalized node down to its marginalized child (`child`); everything else is
/// weak (`parent`) or plain data (laws are immutable and shared by shared_ptr, never pointing back to nodes).
struct PopulationNode {
  enum class State { initialized, marginalized, realized };
  /// How a marginalized node hangs from its marginalized parent(s): conditions them when it is realized.
  enum class Relation { none, thinning, beta, sum, markov, emission };

  State state = State::marginalized;
  bool is_probability = false;  ///< a Beta probability (a, b while marginalized; rho once realized)
  std::string name;
  const void* owner = nullptr;  ///< the PopulationState, to refuse another population's handles

  // realized
  gpu::Column<std::int64_t> values;  ///< a count's values
  gpu::Column<double> rho;           ///< a probability's values
  // marginalized
  std::shared_ptr<const gpu::Laws> laws;  ///< a count's laws; null for a sum not yet convolved
  gpu::Column<double> a, b;               ///< a probability's Beta(a_i, b_i)
  std::shared_ptr<PopulationNode> child;  ///< the marginalized child (the M-path), held
  // the link to marginalized parents
  Relation relation = Relation::none;
  std::shared_ptr<PopulationNode> initialized_parent;  ///< an initialized thinning's parent, held
  std::weak_ptr<PopulationNode> parent[2];             ///< thinning or Beta parent in [0]; a sum's two operands
  std::shared_ptr<const gpu::Laws> operand_laws[2];    ///< a sum's operands' laws (the second negated: a difference)
  int sign = 1;                                        ///< +1: x + y, -1: x - y
  double q = 0;                                        ///< a thinning's probability
  gpu::Column<std::int64_t> trials;                    ///< a Beta child's n
  std::shared_ptr<const gpu::Table> table;             ///< a Markov step's T, an emission's rates (immutable)

  PopulationNode() { ++live_population_nodes; }
  /// A long M-path held from its top is released iteratively, not by a deep recursion.
  ~PopulationNode() {
    std::shared_ptr<PopulationNode> next = std::move(child);
    while (next && next.use_count() == 1) {
      std::shared_ptr<PopulationNode> after = std::move(next->child);
      next.reset();
      next = std::move(after);
    }
    --live_population_nodes;
  }
  PopulationNode(const PopulationNode&) = delete;
  PopulationNode& operator=(const PopulationNode&) = delete;
};

/// What a Population owns besides its nodes' handles.
struct PopulationState {
  std::size_t particles = 1;
  std::uint64_t seed = 1;
  gpu::Backend where = gpu::Backend::cpu;
  Truncation truncation;
  std::uint64_t draws = 0;        ///< sampling operations so far (the counter of particle i's uniforms)
  std::uint64_t resamplings = 0;  ///< resampling calls so far
  std::uint64_t made = 0;         ///< nodes made (numbers their names)
  gpu::Column<double> log_w;
  std::vector<std::weak_ptr<PopulationNode>> registry;  ///< every node made, pruned of dead ones as it grows
};

}  // namespace tally::runtime::detail
