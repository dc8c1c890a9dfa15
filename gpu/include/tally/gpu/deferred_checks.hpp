// Deferred device checks: errors a population operation finds on the device, raised where the host waits anyway.
#pragma once

namespace tally::gpu {

/// While one is alive on this thread, a device operation that checks its particles (a parameter out of its domain, an
/// integer overflow, a state outside a table) does not wait for the device to learn the verdict: its kernel flags the
/// first bad particle and what the error message needs, and the error — the same type and message, naming the same
/// particle and operation — is raised at the next point where the host waits for the device anyway (values, laws or
/// weights copied back, a summary, a resampling decision; raise_deferred_checks()). Checks are raised in the order the
/// operations ran; the first failed one is thrown and the others are dropped. Outside every scope (the default),
/// each check waits and throws at once, as before. The runtime's Graph opens one around each of its operations, so
/// that a filter step has no host round trip but its summaries and resampling. Nests; not copyable.
class DeferChecks {
 public:
  DeferChecks() noexcept;
  ~DeferChecks();
  DeferChecks(const DeferChecks&) = delete;
  DeferChecks& operator=(const DeferChecks&) = delete;
};

/// True inside a DeferChecks scope on this thread.
bool checks_deferred() noexcept;

/// Waits for the device (its default stream) and throws the first error that a deferred check found, if any (no-op
/// without CUDA, or when nothing is pending).
void raise_deferred_checks();

namespace detail {
/// raise_deferred_checks() for a caller that has just waited for the device's default stream (a copy back): the
/// pending checks are read without another wait.
void raise_checked_after_wait();
}  // namespace detail

}  // namespace tally::gpu
