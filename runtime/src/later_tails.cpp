// Tails computed when first read (dropped_tails.hpp): a node's dropped measures, pending until a bound needs them.
#include <exception>

#include "dropped_tails.hpp"
#include "joint/steps.hpp"

namespace tally::runtime::detail {

using joint_steps::equal;

std::shared_ptr<const DroppedTails> spread_tails(const Batch<Pmf>& laws) {
  auto out = std::make_shared<DroppedTails>();
  out->of.resize(laws.uniform() ? 1 : laws.size());  // one entry where every particle holds one law
  for (std::size_t i = 0; i < out->of.size(); ++i)
    out->of[i] = i > 0 && equal(laws[i], laws[i - 1])
                     ? out->of[i - 1]
                     : std::make_shared<const DroppedTails::Entry>(
                           DroppedTails::Entry{laws[i], std::nullopt, laws[i].error_bound()});
  return out;
}

Tails LaterTails::later(Batch<Pmf> laws, std::size_t depth, Compute f) {
  std::shared_ptr<LaterTails> t(new LaterTails(std::move(laws), depth, std::move(f)));
  if (depth > max_depth || depth * t->laws_.size() > max_pending) t->read();  // what the chain holds goes now
  return t;
}

Tails LaterTails::known(Batch<Pmf> laws, Result r) {
  std::shared_ptr<LaterTails> t(new LaterTails(std::move(laws), 0, nullptr));
  t->result_ = std::move(r);
  t->done_ = true;
  return t;
}

namespace {
template <class Pmfs>
bool equal_laws(const Batch<Pmf>& a, const Pmfs& b) {
  if (a.size() != b.size()) return false;
  const bool once = a.uniform() && joint_steps::uniform(b);  // one law each: compared once
  for (std::size_t i = 0; i < (once ? 1 : a.size()); ++i)
    if (!equal(a[i], b[i])) return false;
  return true;
}
}  // namespace

bool LaterTails::belong_to(const Batch<Pmf>& laws) const { return equal_laws(laws_, laws); }
bool LaterTails::belong_to(const std::vector<Pmf>& laws) const { return equal_laws(laws_, laws); }

const LaterTails::Result& LaterTails::read() const {
  if (!done_) {
    const Compute f = std::move(f_);
    f_ = nullptr;  // what it held (the inputs' tails, the laws of each step) goes with it
    done_ = true;  // also while computing: a failure below is final
    try {
      result_ = f(laws_);
    } catch (const std::exception&) {  // they cannot follow (a law too wide, ...): the bound stays the ordinary one
      result_ = Result{};
    }
    if (result_.tails && !result_.tails->fits(laws_)) result_ = Result{};
  }
  return result_;
}

std::shared_ptr<const DroppedTails> LaterTails::tails_or_spread() const {
  if (auto t = read().tails) return t;
  return spread_tails(laws_);
}

}  // namespace tally::runtime::detail
