// Device memory for populations: stream-ordered allocations from the device's pool, with a clear error when full.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "cuda_check.cuh"
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

/// Bytes the pool holds but no allocation uses (reusable without asking the driver).
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
  return reserved > used ? static_cast<std::size_t>(reserved - used) : 0;
}

/// Gives the pool's unused memory back to the driver (after the work that freed it is done).
void trim_pool() {
  int device = 0;
  cudaMemPool_t pool;
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
  void* p = nullptr;
  cudaError_t status = cudaMallocAsync(&p, bytes, nullptr);
  if (status == cudaErrorMemoryAllocation) {  // the pool's fragments may be what is missing: give them back, retry
    cudaGetLastError();
    trim_pool();
    status = cudaMallocAsync(&p, bytes, nullptr);
  }
  if (status == cudaErrorMemoryAllocation) {
    refuse(bytes, who);
  }
  cuda_check(status, "cudaMallocAsync", __FILE__, __LINE__);
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
  if (p != nullptr) cudaFreeAsync(p, nullptr);
}

void device_copy(void* dst, const void* src, std::size_t bytes, int direction) {
  const cudaMemcpyKind kind = direction == 0   ? cudaMemcpyHostToDevice
                              : direction == 1 ? cudaMemcpyDeviceToHost
                                               : cudaMemcpyDeviceToDevice;
  TALLY_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

}  // namespace detail

std::size_t device_free_bytes() {
  if (!cuda_available()) return 0;
  std::size_t free = 0, total = 0;
  TALLY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free + detail::pool_unused_bytes();
}

}  // namespace tally::gpu
