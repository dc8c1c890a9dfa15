// What an observation returns: each particle's log-likelihood, and whether it is exact given the past.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tally/gpu/population_arrays.hpp"

namespace tally::runtime {

/// Why the runtime had to sample (realize) a variable instead of keeping it marginalized.
enum class Fallback {
  /// The operands of a sum x + y share a marginalized ancestor (found by reachability): x + y is not a convolution
  /// of independent laws, so the ancestor was drawn from its exact posterior first.
  shared_ancestor,
  /// A marginalized variable with a marginalized child was given another child (Murray et al.'s prune): the old
  /// child was drawn, so that the variable keeps one marginalized child.
  pruned,
  /// A family needed the value of its parameter: the count n of Binomial(n, rho) with rho a Beta variable, the n
  /// of Binomial(n, p) with per-particle p, or a variable tied by an observed sum that took a new child.
  parent_realized,
  /// A joint law of coupled variables would exceed Truncation::max_joint_bytes, or a variable to be coupled sits
  /// inside a marginalized chain (it has a marginalized parent) that a joint law does not take over: the variable
  /// was drawn from its exact posterior so that the others go on without it.
  joint_limit,
  /// A Beta variable rho whose posterior is a mixture over a count X (after an observed y ~ Binomial(X, rho):
  /// rho | X = x ~ Beta(a + y, b + x - y)) was needed (its value, its parameters, a new child): X was drawn from its
  /// exact posterior, so that rho's posterior is the Beta of that draw.
  mixture_resolved,
};

/// The name of a fallback, as in the messages ("shared ancestor", ...).
const char* to_string(Fallback f);

/// One variable the runtime sampled to go on.
struct Sampled {
  std::string variable;  ///< its name (Graph::name), or "#k" (the k-th variable of the graph)
  /// Why it was sampled.
  Fallback reason;
};

/// Whether an observation's log-likelihood is exact given the past (everything observed and drawn before it).
struct Exactness {
  /// The variables sampled while this observation was computed, in the order they were drawn; empty when the
  /// log-likelihood is exact (up to the truncation below).
  std::vector<Sampled> sampled;
  /// A bound on the relative error of the likelihood from truncated tails of unbounded laws (the largest over
  /// the particles): 0 where every law involved is bounded. These bounds are those of tally::Pmf; joint laws (and
  /// the priors that enter them) weigh the mass they cut by its own likelihood (tally::JointPmf::dropped), so
  /// there the bound stays near the true error (Truncation::track_dropped).
  double truncation_error = 0.0;
  /// The variables with truncated laws (unbounded priors, Poisson children, heavy-tailed counts of conjugate
  /// parents) found from the observed variable along the graph's dependence edges at the time of the
  /// observation, in the order found; "..." ends a list cut after 256 variables searched. Variables whose laws were
  /// folded into a marginal earlier (the operands of a sum marginalized before) are accounted for by
  /// truncation_error but may not be named. Empty when truncation_error is 0.
  std::vector<std::string> truncated;
  /// Whether nothing was sampled (truncation, bounded by truncation_error, does not count: its bound is known).
  bool exact() const { return sampled.empty(); }
  /// One line: "exact" or "sampled x (shared ancestor), y (pruned)", then "; truncated x, z (relative error <=
  /// 1e-15)" when some law was truncated.
  std::string describe() const;
};

/// Thrown in strict mode (Graph::strict) instead of sampling: which variable would have been sampled and why.
/// The graph is unchanged by the refused step and stays usable.
struct inexact_error : std::runtime_error {
  /// The message, and the variables that would have been sampled.
  inexact_error(const std::string& what, std::vector<Sampled> would_sample)
      : std::runtime_error(what), sampled(std::move(would_sample)) {}
  /// The variables that would have been sampled, and why.
  std::vector<Sampled> sampled;
};

/// The result of Graph::observe: log P(x = v | everything before) for each particle (already added to the
/// log-weights), kept where the graph's backend keeps it (device memory for a CUDA graph: nothing is copied back
/// until a value is read), and the exactness report.
class Observation {
 public:
  Observation() = default;
  /// The log-likelihoods where they live, and the report (made by Graph::observe).
  Observation(gpu::Column<double> log_likelihood, Exactness exactness)
      : column_(std::make_shared<gpu::Column<double>>(std::move(log_likelihood))),
        exactness_(std::move(exactness)) {}
  /// The same with a truncation bound the device has yet to copy back: `truncation_error` is called when exactness()
  /// is first read (so an engine that never reads it never waits for it), and a bound of 0 then clears `truncated`,
  /// as a known 0 does.
  Observation(gpu::Column<double> log_likelihood, Exactness exactness, std::function<double()> truncation_error)
      : Observation(std::move(log_likelihood), std::move(exactness)) {
    pending_error_ = std::move(truncation_error);
  }
  /// P, the number of log-likelihoods (0 for a default-made Observation).
  std::size_t size() const { return column_ ? column_->size() : 0; }
  /// Particle i's log-likelihood (the first read of a device column copies it to the host once).
  double operator[](std::size_t i) const { return log_likelihoods().at(i); }
  /// The log-likelihoods as a host vector, valid while this Observation lives.
  const std::vector<double>& log_likelihoods() const&;
  /// The same of a temporary Observation (`g.observe(x, v).log_likelihoods()`): a copy, so that no reference into
  /// the temporary outlives it.
  std::vector<double> log_likelihoods() const&& { return log_likelihoods(); }
  /// The log-likelihoods as a host vector: `std::vector<double> ll = g.observe(x, v);`. A copy, not a reference, so
  /// that `const std::vector<double>& ll = g.observe(x, v);` binds to a vector that lives as long as ll (a reference
  /// into the temporary Observation would dangle).
  operator std::vector<double>() const { return log_likelihoods(); }
  /// The column where it lives (for engines that keep working on the device).
  const gpu::Column<double>& column() const { return *column_; }
  /// The exactness report. Its truncation_error may still be pending: on a CUDA graph the first call copies it back
  /// (a wait for the device, which, as every wait, raises a deferred error of an earlier operation first); on a CPU
  /// graph it computes the truncated tails the bound weighs (once: later reads, and later observations' bounds,
  /// reuse them). The value does not depend on when it is read. Not thread-safe.
  const Exactness& exactness() const;
  /// Whether nothing was sampled (reads nothing from the device).
  bool exact() const { return exactness_.exact(); }

 private:
  std::shared_ptr<gpu::Column<double>> column_;
  mutable std::shared_ptr<const std::vector<double>> host_;
  mutable Exactness exactness_;
  mutable std::function<double()> pending_error_;
};

}  // namespace tally::runtime
