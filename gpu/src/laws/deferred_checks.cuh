// Private: the device side of deferred checks (tally/gpu/deferred_checks.hpp): slots of flags and records, and
// FirstBad, the check a population kernel flags its first bad particle in.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <functional>

#include "cuda_check.cuh"
#include "tally/gpu/deferred_checks.hpp"

namespace tally::gpu::detail {

/// What a check reads back: the first flagged particle (ULLONG_MAX or >= count: none) and two 64-bit numbers about
/// it that the error message names (a double travels as its bits).
struct CheckRecord {
  unsigned long long first;
  long long a, b;
};
/// A check's two numbers about particle i, computed on the device.
struct CheckPayload {
  long long a = 0, b = 0;
};

/// One of a fixed set of checks: a device flag (ULLONG_MAX when clean) and a record in pinned host memory that the
/// device writes and the host reads after it waited.
struct CheckSlot {
  unsigned long long* flag = nullptr;
  CheckRecord* record = nullptr;  // a device pointer to pinned host memory
  const volatile CheckRecord* host_record = nullptr;
  std::size_t index = 0;
  unsigned long long* finished = nullptr;  // blocks of a fused check's kernel done so far (0 between checks)
};

/// Raises the error of a failed check: first, a, b as recorded (throws; returns only if it does not).
using CheckFailure = std::function<void(std::size_t first, long long a, long long b)>;

/// A free slot (when all are pending: waits for the device and raises the pending checks first).
CheckSlot take_check_slot();
/// A slot given back unused (an exception before its check): its flag is cleaned in stream order.
void drop_check_slot(const CheckSlot& slot) noexcept;
/// The slot's check is done being recorded: inside DeferChecks (and unless `wait`) it is pended (raised later, in
/// order); else the host waits now and raises it (after any pending one).
void settle_check_slot(const CheckSlot& slot, std::size_t count, CheckFailure fail, bool wait = false);
/// Frees the slots' memory (kept for the process) where none is taken or pending; false otherwise (nothing freed).
bool release_deferred_check_slots();

/// A payload of nothing (a check whose error names only the particle, or one read back by FirstBad::read).
struct NoPayload {
  __device__ CheckPayload operator()(long long) const { return {}; }
};

/// Writes the record of a check (the first flagged particle, its payload) and cleans the flag for the next one.
template <class Payload>
__device__ void record_check(unsigned long long* flag, std::size_t count, const Payload& payload, CheckRecord* record) {
  const unsigned long long first = *static_cast<volatile unsigned long long*>(flag);  // other blocks' atomics: no L1
  CheckRecord r{first, 0, 0};
  if (first < count) {
    const CheckPayload p = payload(static_cast<long long>(first));
    r.a = p.a;
    r.b = p.b;
  }
  *record = r;
  *flag = ULLONG_MAX;  // clean for the slot's next check
}

template <class Payload>
__global__ void record_check_kernel(unsigned long long* flag, std::size_t count, Payload payload, CheckRecord* record) {
  record_check(flag, count, payload, record);
}

/// f(i) for i < count, one thread each (f flags a bad particle with atomicMin(flag, i)), and the check's record in
/// the same launch: each block, done, counts itself in `finished` (after a fence, so that its flags are seen), and
/// the last one records the first flagged particle (the threadFenceReduction pattern of the CUDA samples).
template <class F, class Payload>
__global__ void each_checked_kernel(std::size_t count, F f, unsigned long long* flag, unsigned long long* finished,
                                    Payload payload, CheckRecord* record) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<long long>(count)) f(i);
  __threadfence();  // this thread's flag, if any, before the block counts itself done
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (atomicAdd(finished, 1ull) + 1 != gridDim.x) return;
  __threadfence();  // the last block: every other block's flags are in
  record_check(flag, count, payload, record);
  *finished = 0;  // clean for the slot's next check
}

/// The first particle a kernel flags with atomicMin(data(), i), and the error it raises: check(payload, fail) records
/// the first flagged particle and payload(i) on the device (one small launch), then raises fail(i, a, b) at once
/// (one synchronization) or, inside DeferChecks, at the next point where the host waits.
class FirstBad {
 public:
  explicit FirstBad(std::size_t count) : count_(count), slot_(take_check_slot()) {}
  ~FirstBad() {
    if (!settled_) drop_check_slot(slot_);
  }
  FirstBad(const FirstBad&) = delete;
  FirstBad& operator=(const FirstBad&) = delete;
  unsigned long long* data() { return slot_.flag; }
  /// payload: a device functor long long -> CheckPayload; fail: as CheckFailure.
  template <class Payload>
  void check(Payload payload, CheckFailure fail) {
    record_check_kernel<<<1, 1>>>(slot_.flag, count_, payload, slot_.record);
    TALLY_CUDA_CHECK(cudaGetLastError());
    settled_ = true;
    settle_check_slot(slot_, count_, std::move(fail));
  }
  /// f(i) for i < count (f flags with atomicMin(data(), i)) and check(payload, fail), in one launch of `block`
  /// threads a block (a kernel and its check's record: each_checked_kernel).
  template <int block, class F, class Payload>
  void each(std::size_t count, F f, Payload payload, CheckFailure fail) {
    const auto blocks = static_cast<unsigned>(std::max<std::size_t>(1, (count + block - 1) / block));
    each_checked_kernel<<<blocks, block>>>(count, f, slot_.flag, slot_.finished, payload, slot_.record);
    TALLY_CUDA_CHECK(cudaGetLastError());
    settled_ = true;
    settle_check_slot(slot_, count_, std::move(fail));
  }
  /// The first flagged particle (count: none), read back now, whether or not checks are deferred (one
  /// synchronization; any earlier pending check raises first): for errors whose message needs more than two numbers.
  std::size_t read() {
    std::size_t first = count_;
    record_check_kernel<<<1, 1>>>(slot_.flag, count_, NoPayload{}, slot_.record);
    TALLY_CUDA_CHECK(cudaGetLastError());
    settled_ = true;
    settle_check_slot(slot_, count_, [&first](std::size_t i, long long, long long) { first = i; }, true);
    return first;
  }

 private:
  std::size_t count_;
  CheckSlot slot_;
  bool settled_ = false;
};

}  // namespace tally::gpu::detail
