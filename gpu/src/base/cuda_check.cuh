// Private: every CUDA runtime call goes through TALLY_CUDA_CHECK, which turns a failure into tally::cuda_error.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"

namespace tally::gpu::detail {

inline void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that later calls can proceed
  throw cuda_error(std::string("tally: CUDA call ") + call + " failed at " + file + ":" + std::to_string(line) +
                   ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

/// Throws cuda_error naming `who` when no device can be used (built with CUDA, but none present or allowed).
inline void require_device(const char* who) {
  if (!cuda_available()) throw cuda_error(std::string(who) + ": no CUDA device (" + device_description() + ")");
}

/// tally keeps a few per-process device resources (pinned staging and its events, the deferred checks' records) on
/// the device that was current when it first needed them: one CUDA device per process (several GPUs: one process
/// each, README "Several GPUs"). Throws cuda_error naming `what` when another device is current now, instead of the
/// CUDA runtime's invalid-handle errors further on.
inline void require_same_device(int first, const char* what) {
  int now = 0;
  if (cudaGetDevice(&now) != cudaSuccess) {
    cudaGetLastError();
    return;  // the next CUDA call reports it
  }
  if (now != first)
    throw cuda_error(std::string("tally: one CUDA device per process: the ") + what + " belong to device " +
                     std::to_string(first) + ", but device " + std::to_string(now) +
                     " is current (run one process per GPU: scripts/launch-local or mpirun)");
}

/// cudaMalloc through the fault-injection hook (count_device_allocation), with cudaErrorMemoryAllocation turned
/// into tally::device_memory_error naming `who` (device_memory_cuda.cu).
void* device_malloc(std::size_t bytes, const char* who);

/// Device memory owned by a value: freed in the destructor, never leaked on an exception.
template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t n) : size_(n) {
    if (n > 0) data_ = static_cast<T*>(device_malloc(n * sizeof(T), "tally::gpu (a kernel's device buffer)"));
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), size_(other.size_) { other.data_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    return *this;
  }
  T* data() { return data_; }
  std::size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_;
};

/// Throws tally::overflow_error naming `who` when `what` needs `bytes` of device memory and that is more than 90 %
/// of what is free: a clear refusal before anything is allocated, rather than a failed cudaMalloc half-way.
inline void require_device_memory(double bytes, const char* who, const char* what) {
  std::size_t free = 0, total = 0;
  cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo", __FILE__, __LINE__);
  if (bytes > 0.9 * static_cast<double>(free))
    tally::detail::fail<overflow_error>(who, ": ", what, " needs ", bytes, " bytes of device memory; ", free,
                                        " bytes are free (", total, " in all)");
}

/// A copy of a host vector in device memory (one element at least, so that an empty vector still has a pointer).
template <class T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
  DeviceBuffer<T> out(host.empty() ? 1 : host.size());
  if (!host.empty()) cuda_check(cudaMemcpy(out.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
                                "cudaMemcpy", __FILE__, __LINE__);
  return out;
}

}  // namespace tally::gpu::detail

#define TALLY_CUDA_CHECK(call) ::tally::gpu::detail::cuda_check((call), #call, __FILE__, __LINE__)
