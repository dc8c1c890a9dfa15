// Owning arrays of a population's state, in host memory (the CPU reference) or in device memory: columns and laws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"
#include "tally/gpu/pmf_batch.hpp"

namespace tally {

/// A device allocation that does not fit: what was asked for and what was free when it was refused. The message
/// says it; a population rethrows it with the number of particles that would fit.
struct device_memory_error : cuda_error {
  /// The message, and the bytes asked for and free.
  device_memory_error(const std::string& what, std::size_t requested_bytes, std::size_t free_bytes)
      : cuda_error(what), requested(requested_bytes), free(free_bytes) {}
  /// The bytes asked for, and the bytes free on the device when it was refused.
  ///@{
  std::size_t requested, free;
  ///@}
};

namespace gpu {

namespace detail {
/// Device memory, or device_memory_error naming `who` when `bytes` is more than is free (checked before the call,
/// and cudaErrorMemoryAllocation is turned into the same error). tally::cuda_error without a device.
void* device_allocate(std::size_t bytes, const char* who);
void device_free(void* p) noexcept;
/// Fault injection, for tests: the k-th device allocation from now (k = 1: the next one) throws device_memory_error
/// as if the device were full (0 bytes free), before asking CUDA; then the hook is off again. k = 0 turns it off.
/// Returns the count it replaces (what was left of an earlier k: a test pauses the hook with k = 0 and resumes).
/// Every device allocation of tally goes through it (device_allocate, the kernels' temporary buffers); when off it
/// costs an atomic increment. Not thread-safe against allocations on other threads (a test arms it, then runs).
std::size_t fail_device_allocation_after(std::size_t k) noexcept;
/// The number of device allocations asked for since the program started (the range a test walks k over).
std::size_t device_allocation_count() noexcept;
/// Counts one allocation of `bytes` for `who`, and throws the injected device_memory_error when it is the one.
void count_device_allocation(std::size_t bytes, const char* who);
/// The bytes of device memory that tally's allocations hold now (the memory pool's used bytes, after the device
/// finished its work): for leak checks. 0 without CUDA.
std::size_t device_bytes_in_use();
/// Copies between host and device memory (direction: 0 host to device, 1 device to host, 2 device to device), in
/// the default stream's order. Device to host waits for the device (then raises any deferred check's error:
/// tally/gpu/deferred_checks.hpp); host to device goes through pinned staging where it is small (64 KiB at most)
/// and does not wait, and device to device never waits.
void device_copy(void* dst, const void* src, std::size_t bytes, int direction);
struct DeviceFree {
  void operator()(void* p) const noexcept { device_free(p); }
};
}  // namespace detail

/// n values of T in host memory (Backend::cpu: a std::vector) or in device memory (Backend::cuda), owned: a
/// move-only value, freed with it. The state of one node of a population: one value per particle.
template <class T>
class Column {
 public:
  Column() = default;
  /// Room for n values (host: zeros; device: uninitialized).
  static Column allocate(Backend where, std::size_t n, const char* who) {
    Column c;
    c.where_ = where;
    c.size_ = n;
    if (where == Backend::cpu)
      c.host_.assign(n, T{});
    else if (n > 0)
      c.device_.reset(detail::device_allocate(n * sizeof(T), who));
    return c;
  }
  /// Host values taken over (Backend::cpu, no copy).
  static Column host_values(std::vector<T> values) {
    Column c;
    c.size_ = values.size();
    c.host_ = std::move(values);
    return c;
  }
  /// A copy of host values, placed `where`.
  static Column from_host(const std::vector<T>& values, Backend where) {
    Column c = allocate(where, values.size(), "tally::gpu::Column::from_host");
    if (where == Backend::cpu)
      c.host_ = values;
    else if (!values.empty())
      detail::device_copy(c.data(), values.data(), values.size() * sizeof(T), 0);
    return c;
  }
  /// A copy, in the same place.
  Column clone() const {
    Column c = allocate(where_, size_, "tally::gpu::Column::clone");
    if (where_ == Backend::cpu)
      c.host_ = host_;
    else if (size_ > 0)
      detail::device_copy(c.data(), data(), bytes(), 2);
    return c;
  }
  /// The values in host memory (a copy from the device, which waits for it).
  std::vector<T> to_host() const {
    if (where_ == Backend::cpu) return host_;
    std::vector<T> out(size_);
    if (size_ > 0) detail::device_copy(out.data(), data(), bytes(), 1);
    return out;
  }

  /// Where the values are.
  Backend where() const { return where_; }
  /// n, the number of values.
  std::size_t size() const { return size_; }
  /// Whether n is 0.
  bool empty() const { return size_ == 0; }
  /// n sizeof(T).
  std::size_t bytes() const { return size_ * sizeof(T); }
  /// The first value, in host or device memory as where() says.
  ///@{
  T* data() { return where_ == Backend::cpu ? host_.data() : static_cast<T*>(device_.get()); }
  const T* data() const { return where_ == Backend::cpu ? host_.data() : static_cast<const T*>(device_.get()); }
  ///@}
  /// The host values (Backend::cpu only; the CPU reference reads and writes them in place).
  ///@{
  std::vector<T>& host() { return host_; }
  const std::vector<T>& host() const { return host_; }
  ///@}

 private:
  Backend where_ = Backend::cpu;
  std::size_t size_ = 0;
  std::vector<T> host_;
  std::unique_ptr<void, detail::DeviceFree> device_;
};

/// One number that a device computation leaves in device memory (element 0 of a column), copied back only when first
/// read: that read waits for the device where it has not finished yet, so a number nobody reads before the host next
/// waits anyway costs no wait of its own. A host number is known at once. Copies share the number; value() is const
/// but not thread-safe (as a population is not).
class DeviceScalar {
 public:
  /// A number known on the host.
  DeviceScalar(double known = 0.0) : known_(known) {}
  /// The first element of `cell`, read when asked (a host column's at once).
  explicit DeviceScalar(Column<double> cell) {
    if (cell.where() == Backend::cpu)
      known_ = cell.host().at(0);
    else
      pending_ = std::make_shared<Pending>(Pending{std::move(cell), 0.0, false});
  }
  /// The number (read back from the device, and then kept, on the first call).
  double value() const {
    if (!pending_) return known_;
    if (!pending_->read) {
      pending_->value = pending_->cell.to_host().at(0);
      pending_->cell = Column<double>();
      pending_->read = true;
    }
    return pending_->value;
  }
  /// Whether value() needs no copy back.
  bool known() const { return !pending_ || pending_->read; }

 private:
  struct Pending {
    Column<double> cell;
    double value;
    bool read;
  };
  double known_ = 0.0;
  std::shared_ptr<Pending> pending_;
};

/// P laws (pmfs), one per particle, in the PmfBatch layout: on the host a PmfBatch, on the device the same four
/// arrays. Immutable once made (operations make new laws), so several nodes may share one by shared_ptr.
class Laws {
 public:
  Laws() = default;
  /// Host laws (Backend::cpu) from a batch, or their copy in device memory (Backend::cuda).
  static Laws from_host(PmfBatch batch, Backend where);
  /// Room for `count` laws with `total` weights in all, none longer than max_length (device: uninitialized).
  static Laws allocate(Backend where, std::size_t count, std::size_t total, std::size_t max_length, const char* who);

  /// Where the laws are.
  Backend where() const { return where_; }
  /// P, the number of laws.
  std::size_t size() const { return count_; }
  /// The number of weights of all laws together, and a bound on each law's length (exact where made from
  /// parameters; an upper bound after conditioning).
  ///@{
  std::size_t total() const { return total_; }
  std::size_t max_length() const { return max_length_; }
  ///@}
  /// Bytes held: 8 per weight and 24 per law (offset, lower bound, log-scale).
  std::size_t bytes() const { return 8 * total_ + 24 * count_ + 8; }
  /// The laws in host memory (a copy from the device).
  PmfBatch to_host() const;

  /// Backend::cpu: the batch itself.
  ///@{
  const PmfBatch& host() const { return host_; }
  PmfBatch& host() { return host_; }
  ///@}
  /// Backend::cuda: device views.
  ///@{
  PmfBatchView view() const;
  MutablePmfBatchView mutable_view();
  ///@}

 private:
  Backend where_ = Backend::cpu;
  std::size_t count_ = 0, total_ = 0, max_length_ = 0;
  PmfBatch host_;
  Column<double> weights_, log_scale_;
  Column<std::int64_t> offset_, lo_;
};

/// Free device memory in bytes (0 without a device), for memory reports.
std::size_t device_free_bytes();

/// Frees what the library keeps for the life of the process to make device work cheap: device blocks cached for
/// reuse and the memory pool's unused blocks, the pinned staging of host-to-device copies, the slots of deferred
/// checks and of largest_later, and the calling thread's pinned guard of the resampler. Waits for the device first.
/// Call it when no graph, column or batch of laws is alive (at the end of a program, before a leak checker looks:
/// `compute-sanitizer --leak-check full` then reports nothing); the library makes them again when next used.
/// Returns false where some slots were still in use (a live graph's pending checks or bounds): those stay.
/// Without a device (or a build without CUDA) it does nothing and returns true.
bool release_cached_memory();

}  // namespace gpu
}  // namespace tally
