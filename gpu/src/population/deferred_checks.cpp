// The DeferChecks scope of deferred_checks.hpp (a counter per thread), compiled into every build.
#include "tally/gpu/deferred_checks.hpp"

namespace tally::gpu {

namespace {
thread_local int defer_depth = 0;
}  // namespace

DeferChecks::DeferChecks() noexcept { ++defer_depth; }
DeferChecks::~DeferChecks() { --defer_depth; }
bool checks_deferred() noexcept { return defer_depth > 0; }

}  // namespace tally::gpu
