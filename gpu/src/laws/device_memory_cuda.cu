// Device memory for populations: stream-ordered allocations from the device's pool, with a clear error when full.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_check.cuh"
#include "deferred_checks.cuh"
#include "population_cuda.hpp"
#include "tally/gpu/deferred_checks.hpp"
#include "tally/gpu/population_arrays.hpp"

namespace tally::gpu {

namespace detail {

namespace {
/// The default pool keeps what is freed (release threshold: all), so that a population's many short-lived arrays
/// are recycled without cudaMalloc, cudaFree or their synchronizations.
void keep_pool_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    int device = 0;
    cudaMemPool_t pool;
    if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
      std::uint64_t keep = UINT64_MAX;
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
    cudaGetLastError();
  });
}

/// A host-side cache of freed blocks in front of the pool. Every population array is allocated and freed in the
/// order of the one stream all population work runs on (the legacy default stream), so a freed block may serve the
/// next allocation of its size at once, as cudaFreeAsync then cudaMallocAsync on that stream would let the pool do;
/// the cache saves those two driver calls (about 40 to 100 a filter step, most of the same few sizes: P values,
/// P log-weights). Sizes are rounded up to a size class and matched exactly: a multiple of `granule` bytes up to 4
/// KiB, then 8 classes per power of two (at most 12.5 % more than asked, so that laws whose sizes vary a little
/// from step to step find each other's blocks) up to `exact_above`, past which blocks are rounded to `granule` only
/// (a large state's arrays waste nothing). At most `per_size` blocks of a class and `capacity` bytes in all are
/// kept, the rest go back to the pool. Knob: TALLY_BLOCK_CACHE=0 turns it off (a measurement knob: every
/// allocation asks the pool, for its size).
class BlockCache {
 public:
  static constexpr std::size_t granule = 512, per_size = 16, capacity = std::size_t{256} << 20,
                               exact_above = std::size_t{64} << 20;

  /// The size class of `bytes`: for 4 KiB < b <= exact_above, with 2^k <= b < 2^{k+1}, the next multiple of 2^{k-3}.
  static std::size_t rounded(std::size_t bytes) {
    const std::size_t fine = (bytes + granule - 1) / granule * granule;
    if (fine <= 4096 || fine > exact_above) return fine;
    std::size_t top = 4096;
    while (top * 2 <= fine) top *= 2;
    const std::size_t step = top / 8;
    return (fine + step - 1) / step * step;
  }

  /// A cached block of `bytes` (rounded), or null.
  void* take(std::size_t bytes) {
    if (!on()) return nullptr;
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    sizes_[p] = bytes;
    return p;
  }
  /// Records a block the pool gave for `bytes` (rounded), so that its free comes back here.
  void track(void* p, std::size_t bytes) {
    if (!on()) return;
    const std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
  }
  /// Keeps p for reuse; false when the cache is full or p is not one of its blocks (the caller frees it).
  bool keep(void* p) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return false;
    const std::size_t bytes = it->second;
    sizes_.erase(it);
    auto& list = free_[bytes];
    if (list.size() >= per_size || cached_ + bytes > capacity) return false;
    list.push_back(p);
    cached_ += bytes;
    return true;
  }
  /// Gives every cached block back to the pool (stream-ordered).
  void release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, list] : free_)
      for (void* p : list) cudaFreeAsync(p, nullptr);
    free_.clear();
    cached_ = 0;
    cudaGetLastError();
  }
  std::size_t cached_bytes() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return cached_;
  }
  static bool on() {
    static const bool enabled = [] {
      const char* off = std::getenv("TALLY_BLOCK_CACHE");
      return off == nullptr || std::string(off) != "0";
    }();
    return enabled;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;          // blocks handed out: their rounded sizes
  std::unordered_map<std::size_t, std::vector<void*>> free_;  // blocks kept, by rounded size
  std::size_t cached_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: frees may come from static destructors
  return *cache;
}

/// Bytes the pool holds but no allocation uses (reusable without asking the driver), the block cache's included.
std::size_t pool_unused_bytes() {
  int device = 0;
  cudaMemPool_t pool;
  std::uint64_t reserved = 0, used = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (reserved > used ? static_cast<std::size_t>(reserved - used) : 0) + block_cache().cached_bytes();
}

/// Gives the pool's unused memory back to the driver (after the work that freed it is done).
void trim_pool() {
  int device = 0;
  cudaMemPool_t pool;
  block_cache().release();
  cudaDeviceSynchronize();
  if (cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  cudaGetLastError();
}

/// The device_memory_error of an allocation of `bytes` that did not fit (the CUDA error cleared), with what is free:
/// the device's free memory and the pool's unused bytes.
[[noreturn]] void refuse(std::size_t bytes, const char* who) {
  cudaGetLastError();
  std::size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  free += pool_unused_bytes();
  throw device_memory_error(tally::detail::message(who, ": ", bytes, " bytes of device memory do not fit (", free,
                                                   " bytes free of ", total, ")"),
                            bytes, free);
}
}  // namespace

void* device_allocate(std::size_t bytes, const char* who) {
  require_device(who);
  count_device_allocation(bytes, who);
  keep_pool_memory();
  const std::size_t size = BlockCache::on() ? BlockCache::rounded(bytes) : bytes;
  if (void* p = block_cache().take(size)) return p;
  void* p = nullptr;
  cudaError_t status = cudaMallocAsync(&p, size, nullptr);
  if (status == cudaErrorMemoryAllocation) {  // cached blocks, the pool's fragments: give them back, retry
    cudaGetLastError();
    trim_pool();
    status = cudaMallocAsync(&p, size, nullptr);
  }
  if (status == cudaErrorMemoryAllocation) {
    refuse(bytes, who);
  }
  cuda_check(status, "cudaMallocAsync", __FILE__, __LINE__);
  block_cache().track(p, size);
  return p;
}

void* device_malloc(std::size_t bytes, const char* who) {
  count_device_allocation(bytes, who);
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    refuse(bytes, who);
  }
  cuda_check(status, "cudaMalloc", __FILE__, __LINE__);
  return p;
}

std::size_t device_bytes_in_use() {
  if (!cuda_available()) return 0;
  block_cache().release();  // cached blocks are not in use: back to the pool, so that its count is the live arrays'
  TALLY_CUDA_CHECK(cudaDeviceSynchronize());
  int device = 0;
  cudaMemPool_t pool;
  std::uint64_t used = 0;
  TALLY_CUDA_CHECK(cudaGetDevice(&device));
  TALLY_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  TALLY_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return static_cast<std::size_t>(used);
}

void device_free(void* p) noexcept {
  if (p != nullptr && !block_cache().keep(p)) cudaFreeAsync(p, nullptr);
}

namespace {
/// Pinned staging for small host-to-device copies: a ring of slots, each with the event of the copy that last used
/// it. A copy from pageable memory waits for the device (cudaMemcpy synchronizes the stream first); through a slot it
/// is a memcpy on the host and a cudaMemcpyAsync in stream order, and the host goes on at once. A slot is reused
/// after its event (slots copies ago: long done, as a rule). It lives as long as the process, or until
/// release_cached_memory() frees it (the next copy makes it again).
class Staging {
 public:
  static constexpr std::size_t slot_bytes = std::size_t{1} << 16, slots = 64;

  /// Stages and enqueues the copy; false (nothing done) when it is too large or no pinned memory could be had.
  bool copy(void* dst, const void* src, std::size_t bytes) {
    if (bytes > slot_bytes) return false;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!ready()) return false;
    detail::require_same_device(device_, "pinned staging buffers of host-to-device copies");
    const std::size_t k = next_++ % slots;
    TALLY_CUDA_CHECK(cudaEventSynchronize(done_[k]));
    char* slot = base_ + k * slot_bytes;
    std::memcpy(slot, src, bytes);
    TALLY_CUDA_CHECK(cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, nullptr));
    TALLY_CUDA_CHECK(cudaEventRecord(done_[k], nullptr));
    return true;
  }

  /// Frees the pinned slots and their events (after the copies from them are done); the next copy makes them again.
  void release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (base_ != nullptr) {
      for (cudaEvent_t e : done_) cudaEventSynchronize(e);
      cudaFreeHost(base_);
    }
    for (cudaEvent_t& e : done_)
      if (e != nullptr) cudaEventDestroy(e);
    cudaGetLastError();
    base_ = nullptr;
    for (cudaEvent_t& e : done_) e = nullptr;
    tried_ = false;
  }

 private:
  bool ready() {
    if (tried_) return base_ != nullptr;
    tried_ = true;
    if (const char* off = std::getenv("TALLY_STAGED_COPIES"); off != nullptr && std::string(off) == "0")
      return false;  // a measurement knob: every host-to-device copy waits, as cudaMemcpy does
    void* p = nullptr;
    if (cudaHostAlloc(&p, slot_bytes * slots, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    for (cudaEvent_t& e : done_) {
      if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        cudaGetLastError();
        return false;  // base_ stays null: every copy takes the synchronous path
      }
    }
    base_ = static_cast<char*>(p);
    TALLY_CUDA_CHECK(cudaGetDevice(&device_));
    return true;
  }
  std::mutex mutex_;
  bool tried_ = false;
  char* base_ = nullptr;
  cudaEvent_t done_[slots] = {};
  std::size_t next_ = 0;
  int device_ = 0;
};

Staging& staging() {
  static Staging s;  // trivially destroyed: the pinned memory and events go with the process
  return s;
}
}  // namespace

void device_copy(void* dst, const void* src, std::size_t bytes, int direction) {
  if (direction == 0 && staging().copy(dst, src, bytes)) return;
  if (direction == 2) {  // stream-ordered; the host does not wait
    TALLY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr));
    return;
  }
  const cudaMemcpyKind kind = direction == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  TALLY_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
  if (direction == 1) raise_checked_after_wait();  // the host waited for the device: its deferred errors are known
}

}  // namespace detail

bool release_cached_memory() {
  if (!cuda_available()) return true;
  cudaDeviceSynchronize();  // whatever uses the kept memory is done
  cudaGetLastError();
  detail::staging().release();
  population_cuda::release_pinned_guard();
  const bool slots = population_cuda::release_later_max_slots();
  const bool checks = detail::release_deferred_check_slots();
  detail::trim_pool();  // the cached blocks back to the pool, the pool's unused memory back to the driver
  return slots && checks;
}

std::size_t device_free_bytes() {
  if (!cuda_available()) return 0;
  std::size_t free = 0, total = 0;
  TALLY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free + detail::pool_unused_bytes();
}

}  // namespace tally::gpu
