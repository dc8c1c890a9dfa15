// Observation and its exactness report: lazy host copies of a device column, and the report's words.
#include "tally/runtime/observation.hpp"

#include <sstream>

namespace tally::runtime {

const char* to_string(Fallback f) {
  switch (f) {
    case Fallback::shared_ancestor: return "shared ancestor of a sum's operands";
    case Fallback::pruned: return "pruned: its parent took another child";
    case Fallback::parent_realized: return "a parameter that had to be realized";
    case Fallback::joint_limit: return "beyond the joint laws' limit, Truncation::max_joint_bytes";
    case Fallback::mixture_resolved: return "a count drawn so that a Beta's posterior is one Beta again";
  }
  return "?";
}

std::string Exactness::describe() const {
  std::string s = sampled.empty() ? "exact" : "sampled ";
  for (std::size_t i = 0; i < sampled.size(); ++i) {
    if (i > 0) s += ", ";
    s += sampled[i].variable + " (" + to_string(sampled[i].reason) + ")";
  }
  if (!truncated.empty()) {
    s += "; truncated ";
    for (std::size_t i = 0; i < truncated.size(); ++i) s += (i > 0 ? ", " : "") + truncated[i];
    std::ostringstream bound;
    bound << " (relative error <= " << truncation_error << ")";
    s += bound.str();
  }
  return s;
}

const Exactness& Observation::exactness() const {
  if (pending_error_) {
    const auto read = std::move(pending_error_);
    pending_error_ = nullptr;
    exactness_.truncation_error = read();
    if (exactness_.truncation_error == 0.0) exactness_.truncated.clear();
  }
  return exactness_;
}

const std::vector<double>& Observation::log_likelihoods() const& {
  if (!host_) {
    if (!column_) {
      host_ = std::make_shared<const std::vector<double>>();
    } else if (column_->where() == gpu::Backend::cpu) {
      return column_->host();
    } else {
      host_ = std::make_shared<const std::vector<double>>(column_->to_host());
    }
  }
  return *host_;
}

}  // namespace tally::runtime
