// The device pass of largest_later (tally/gpu/later_max.hpp): one kernel over several columns whose last block
// writes each column's maximum into mapped pinned memory, an event after it, and the slots they use.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cuda_check.cuh"
#include "population_cuda.hpp"
#include "population_kernels.cuh"

namespace tally::gpu::population_cuda {

namespace {

inline constexpr int max_columns = 32;  // a launch's columns (its parameters: 32 x 20 bytes)

/// One launch: the columns, their slots, and the per-slot device cells and pinned records.
struct Pass {
  const std::int64_t* data[max_columns];
  unsigned long long size[max_columns];
  unsigned slot[max_columns];
  int columns;
  unsigned long long* cells;     // per slot: the running maximum, encoded (0 between passes)
  unsigned long long* finished;  // the pass's count of finished blocks (0 between passes)
  std::int64_t* records;         // per slot, in mapped pinned memory
};

/// int64 order as unsigned order: encode(INT64_MIN) = 0, so a cell of 0 holds "no value yet".
__device__ inline unsigned long long encode(std::int64_t v) {
  return static_cast<unsigned long long>(v) ^ (1ull << 63);
}

/// Block (x, y) reduces its stride of column y into the column's cell (one atomic a block); the last block to finish
/// (threadFenceReduction, as deferred_checks.cuh) writes every column's maximum to its record and cleans the cells.
__global__ void __launch_bounds__(kernels::block) largest_kernel(Pass p) {
  const int k = static_cast<int>(blockIdx.y);
  const std::int64_t* v = p.data[k];
  const auto n = static_cast<long long>(p.size[k]);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  unsigned long long m = 0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    m = max(m, encode(v[i]));
  for (int d = 16; d >= 1; d /= 2) m = max(m, __shfl_xor_sync(kernels::full_warp, m, d));
  __shared__ unsigned long long warp_largest[kernels::block / 32];
  if ((threadIdx.x & 31) == 0) warp_largest[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 0; w < kernels::block / 32; ++w) m = max(m, warp_largest[w]);
  if (m > 0) atomicMax(p.cells + p.slot[k], m);
  __threadfence();  // this block's maximum before it counts itself done
  if (atomicAdd(p.finished, 1ull) + 1 != static_cast<unsigned long long>(gridDim.x) * gridDim.y) return;
  __threadfence();  // the last block: every block's maximum is in
  for (int j = 0; j < p.columns; ++j) {
    unsigned long long* cell = p.cells + p.slot[j];
    const unsigned long long e = *static_cast<volatile unsigned long long*>(cell);
    p.records[p.slot[j]] = static_cast<std::int64_t>(e ^ (1ull << 63));
    *cell = 0;
  }
  *p.finished = 0;
  __threadfence_system();  // the records, for the host, before the event after this kernel completes
}

/// The process's slots (device cells, finished counters, pinned records) and events, taken and given back.
class Slots {
 public:
  static constexpr std::size_t count = 1024;

  /// Up to n free slots (fewer when the rest are pending), and an event; under the lock.
  std::vector<unsigned> take(std::size_t n, cudaEvent_t& event) {
    const std::lock_guard<std::mutex> lock(mutex_);
    init();
    detail::require_same_device(device_, "largest_later's records");
    std::vector<unsigned> out;
    while (out.size() < n && !free_.empty()) {
      out.push_back(free_.back());
      free_.pop_back();
    }
    if (out.empty()) return out;
    if (events_.empty()) {
      const cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (status != cudaSuccess) {
        free_.insert(free_.end(), out.begin(), out.end());
        detail::cuda_check(status, "cudaEventCreateWithFlags", __FILE__, __LINE__);
      }
    } else {
      event = events_.back();
      events_.pop_back();
    }
    return out;
  }
  /// Slots and their event back: a later pass on them runs after this one in stream order, and nobody reads these
  /// records any more.
  void give(const std::vector<unsigned>& slots, cudaEvent_t event) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    free_.insert(free_.end(), slots.begin(), slots.end());
    events_.push_back(event);
  }
  /// Frees the slots' memory and events where every slot is back (the device idle); false otherwise. The next
  /// take() makes them again.
  bool release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (cells_ == nullptr) return true;
    if (free_.size() != count) return false;
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    events_.clear();
    cudaFree(cells_);
    cudaFreeHost(host_records_);
    cudaGetLastError();
    cells_ = nullptr;
    host_records_ = device_records_ = nullptr;
    free_.clear();
    return true;
  }
  unsigned long long* cells() const { return cells_; }
  std::int64_t* device_records() const { return device_records_; }
  const volatile std::int64_t* host_records() const { return host_records_; }

 private:
  void init() {  // under the lock; once (the memory lives as long as the process)
    if (cells_ != nullptr) return;
    unsigned long long* c = nullptr;
    void* h = nullptr;
    void* d = nullptr;
    TALLY_CUDA_CHECK(cudaMalloc(&c, 2 * count * sizeof(unsigned long long)));  // cells, then finished counters
    TALLY_CUDA_CHECK(cudaMemset(c, 0, 2 * count * sizeof(unsigned long long)));
    const cudaError_t status = cudaHostAlloc(&h, count * sizeof(std::int64_t), cudaHostAllocMapped);
    if (status != cudaSuccess) {
      cudaFree(c);
      detail::cuda_check(status, "cudaHostAlloc", __FILE__, __LINE__);
    }
    TALLY_CUDA_CHECK(cudaHostGetDevicePointer(&d, h, 0));
    host_records_ = static_cast<std::int64_t*>(h);
    device_records_ = static_cast<std::int64_t*>(d);
    free_.reserve(count);
    for (std::size_t k = count; k-- > 0;) free_.push_back(static_cast<unsigned>(k));
    cells_ = c;
    TALLY_CUDA_CHECK(cudaGetDevice(&device_));
  }

  std::mutex mutex_;
  unsigned long long* cells_ = nullptr;
  std::int64_t* device_records_ = nullptr;
  std::int64_t* host_records_ = nullptr;
  std::vector<unsigned> free_;
  std::vector<cudaEvent_t> events_;
  int device_ = 0;
};

Slots& slots() {
  static Slots s;  // never torn down: its memory goes with the process, or with release_later_max_slots()
  return s;
}

/// One launch's maxima: pending until its event has completed, then read from the pinned records once.
class PassSource final : public LaterMax::Source {
 public:
  PassSource(std::vector<unsigned> slots, cudaEvent_t event) : slots_(std::move(slots)), event_(event) {}
  ~PassSource() override {
    if (!read_) slots().give(slots_, event_);
  }
  PassSource(const PassSource&) = delete;
  PassSource& operator=(const PassSource&) = delete;

  std::optional<std::int64_t> poll(std::size_t k) override {
    if (!read_) {
      const cudaError_t status = cudaEventQuery(event_);
      if (status == cudaErrorNotReady) return std::nullopt;
      TALLY_CUDA_CHECK(status);
      values_.resize(slots_.size());
      for (std::size_t j = 0; j < slots_.size(); ++j) values_[j] = slots().host_records()[slots_[j]];
      read_ = true;
      slots().give(slots_, event_);
    }
    return values_.at(k);
  }

 private:
  std::vector<unsigned> slots_;
  cudaEvent_t event_;
  bool read_ = false;
  std::vector<std::int64_t> values_;
};

}  // namespace

bool release_later_max_slots() { return slots().release(); }

std::vector<LaterMax> largest_later(std::span<const Column<std::int64_t>* const> columns) {
  std::vector<LaterMax> out(columns.size());
  for (std::size_t first = 0; first < columns.size(); first += max_columns) {
    const std::size_t n = std::min<std::size_t>(max_columns, columns.size() - first);
    cudaEvent_t event = nullptr;
    std::vector<unsigned> taken = slots().take(n, event);
    if (taken.empty()) return out;  // every slot pending: the rest get no bound
    Pass p{};
    p.columns = static_cast<int>(taken.size());
    std::size_t longest = 0;
    for (int j = 0; j < p.columns; ++j) {
      const Column<std::int64_t>& c = *columns[first + static_cast<std::size_t>(j)];
      p.data[j] = c.data();
      p.size[j] = c.size();
      p.slot[j] = taken[static_cast<std::size_t>(j)];
      longest = std::max(longest, c.size());
    }
    p.cells = slots().cells();
    p.finished = slots().cells() + Slots::count + taken.front();
    p.records = slots().device_records();
    // blocks of 256 threads taking 8 values each at the least, at most 4 a multiprocessor's worth (528 on an H100)
    const std::size_t per_block = 8 * static_cast<std::size_t>(kernels::block);
    const auto blocks = static_cast<unsigned>(std::clamp<std::size_t>((longest + per_block - 1) / per_block, 1, 528));
    auto source = std::make_shared<PassSource>(taken, event);  // gives the slots back if the launch fails
    largest_kernel<<<dim3(blocks, static_cast<unsigned>(p.columns)), kernels::block>>>(p);
    kernels::launched();
    TALLY_CUDA_CHECK(cudaEventRecord(event, nullptr));
    for (int j = 0; j < p.columns; ++j)
      out[first + static_cast<std::size_t>(j)] = LaterMax(source, static_cast<std::size_t>(j));
  }
  return out;
}

}  // namespace tally::gpu::population_cuda
