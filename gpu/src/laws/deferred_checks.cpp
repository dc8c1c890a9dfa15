// The DeferChecks scope of deferred_checks.hpp (a counter per thread), compiled into every build.
#include "tally/gpu/deferred_checks.hpp"

#include <cstdlib>
#include <string>

namespace tally::gpu {

namespace {
thread_local int defer_depth = 0;
}  // namespace

DeferChecks::DeferChecks() noexcept { ++defer_depth; }
DeferChecks::~DeferChecks() { --defer_depth; }
bool checks_deferred() noexcept {
  // TALLY_DEFER_CHECKS=0: a measurement knob, every check waits and throws at once as outside any scope
  static const bool enabled = [] {
    const char* v = std::getenv("TALLY_DEFER_CHECKS");
    return v == nullptr || std::string(v) != "0";
  }();
  return enabled && defer_depth > 0;
}

}  // namespace tally::gpu
