// The deferred checks' slots and their pending list (tally/gpu/deferred_checks.hpp, deferred_checks.cuh): device
// flags, records in mapped pinned memory, and the checks waiting for the host's next wait, in the order they ran.
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "deferred_checks.cuh"

namespace tally::gpu {
namespace detail {
namespace {

class Checks {
 public:
  static constexpr std::size_t slots = 1024;

  CheckSlot take() {
    for (;;) {
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        init();
        require_same_device(device_, "deferred checks' records");
        if (!free_.empty()) {
          const std::size_t k = free_.back();
          free_.pop_back();
          return {flags_ + k, device_records_ + k, host_records_ + k, k, flags_ + slots + k};
        }
      }
      // every slot holds a pending check (many operations and no wait): wait now and raise them, which frees them
      TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
      raise_after_wait();
    }
  }

  void drop(const CheckSlot& s) noexcept {
    cudaMemsetAsync(s.flag, 0xff, sizeof(unsigned long long), nullptr);  // a kernel may have flagged it
    cudaMemsetAsync(s.finished, 0, sizeof(unsigned long long), nullptr);  // or counted some of its blocks
    cudaGetLastError();
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s.index);
  }

  void pend(const CheckSlot& s, std::size_t count, CheckFailure fail) {
    const std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({s.index, count, std::move(fail)});
  }

  bool any_pending() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return !pending_.empty();
  }

  /// Frees the slots' device and pinned memory where no check holds one (the device idle); false otherwise. The
  /// next take() makes them again.
  bool release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (flags_ == nullptr) return true;
    if (!pending_.empty() || free_.size() != slots) return false;
    cudaFree(flags_);
    cudaFreeHost(host_records_);
    cudaGetLastError();
    flags_ = nullptr;
    host_records_ = device_records_ = nullptr;
    free_.clear();
    return true;
  }

  /// After the host waited for the default stream: every pending record is written. Frees their slots, then throws
  /// the first failed check's error.
  void raise_after_wait() {
    std::vector<Pending> pending;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      pending.swap(pending_);
    }
    if (pending.empty()) return;
    const Pending* failed = nullptr;
    CheckRecord r{};
    for (const Pending& p : pending) {
      const volatile CheckRecord& h = host_records_[p.slot];
      const unsigned long long first = h.first;
      if (failed == nullptr && first < p.count) {
        failed = &p;
        r = {first, h.a, h.b};
      }
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      for (const Pending& p : pending) free_.push_back(p.slot);
    }
    if (failed != nullptr) failed->fail(static_cast<std::size_t>(r.first), r.a, r.b);
  }

 private:
  struct Pending {
    std::size_t slot;
    std::size_t count;
    CheckFailure fail;
  };

  void init() {  // under the mutex; once (the memory lives as long as the process)
    if (flags_ != nullptr) return;
    unsigned long long* f = nullptr;
    void* h = nullptr;
    void* d = nullptr;
    // the flags (ULLONG_MAX: clean), then the finished-block counters of fused checks (0)
    TALLY_CUDA_CHECK(cudaMalloc(&f, 2 * slots * sizeof(unsigned long long)));
    TALLY_CUDA_CHECK(cudaMemset(f, 0xff, slots * sizeof(unsigned long long)));
    TALLY_CUDA_CHECK(cudaMemset(f + slots, 0, slots * sizeof(unsigned long long)));
    const cudaError_t status = cudaHostAlloc(&h, slots * sizeof(CheckRecord), cudaHostAllocMapped);
    if (status != cudaSuccess) {
      cudaFree(f);
      cuda_check(status, "cudaHostAlloc", __FILE__, __LINE__);
    }
    TALLY_CUDA_CHECK(cudaHostGetDevicePointer(&d, h, 0));
    host_records_ = static_cast<CheckRecord*>(h);
    device_records_ = static_cast<CheckRecord*>(d);
    free_.reserve(slots);
    for (std::size_t k = slots; k-- > 0;) free_.push_back(k);
    flags_ = f;
    TALLY_CUDA_CHECK(cudaGetDevice(&device_));
  }

  std::mutex mutex_;
  unsigned long long* flags_ = nullptr;
  CheckRecord* device_records_ = nullptr;
  CheckRecord* host_records_ = nullptr;
  std::vector<std::size_t> free_;
  std::vector<Pending> pending_;
  int device_ = 0;
};

Checks& checks() {
  static Checks c;  // never torn down: its memory goes with the process, or with release_deferred_check_slots()
  return c;
}

}  // namespace

bool release_deferred_check_slots() { return checks().release(); }

CheckSlot take_check_slot() { return checks().take(); }

void drop_check_slot(const CheckSlot& slot) noexcept { checks().drop(slot); }

void settle_check_slot(const CheckSlot& slot, std::size_t count, CheckFailure fail, bool wait) {
  checks().pend(slot, count, std::move(fail));
  if (checks_deferred() && !wait) return;
  TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  checks().raise_after_wait();  // the pending ones first, in order, then this one
}

void raise_checked_after_wait() { checks().raise_after_wait(); }

}  // namespace detail

void raise_deferred_checks() {
  if (!detail::checks().any_pending()) return;
  TALLY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  detail::checks().raise_after_wait();
}

}  // namespace tally::gpu
