// The NCCL communicator: all-gather and pairwise exchange between GPUs, one process per GPU, NVLS off.
#include "tally/runtime/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "tally/error.hpp"

namespace tally::runtime {

namespace {
void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw communicator_error(tally::detail::message("tally::runtime::NcclCommunicator: ", what, ": ", ncclGetErrorString(r)));
}
void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess)
    throw communicator_error(tally::detail::message("tally::runtime::NcclCommunicator: ", what, ": ", cudaGetErrorString(r)));
}
/// Memory for staging host buffers, kept and grown as needed: device memory, or page-locked host memory (copies to
/// and from it can be asynchronous). Allocating and freeing wait for the whole device: a host collective a step
/// would pay that each time.
class Staging {
 public:
  enum Kind { device, pinned };
  explicit Staging(Kind kind) : kind_(kind) {}
  ~Staging() { release(); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  char* at_least(std::size_t size) {
    if (size > bytes_) {
      release();
      void* q = nullptr;
      if (kind_ == device) check(cudaMalloc(&q, size), "cudaMalloc (staging)");
      else check(cudaMallocHost(&q, size), "cudaMallocHost (staging)");
      p_ = q;
      bytes_ = size;
    }
    return static_cast<char*>(p_);
  }

 private:
  void release() {
    if (p_ != nullptr) kind_ == device ? cudaFree(p_) : cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
  }
  Kind kind_;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};
}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // blocking: ordered with the default stream both ways
  // host collectives: a communicator of their own (split from comm) on a non-blocking stream, through pinned memory,
  // so that a host collective waits for the other ranks only, not for the graph's device work queued before it
  ncclComm_t host_comm = nullptr;
  cudaStream_t host_stream = nullptr;
  Staging staging{Staging::device};  // what is sent, then what is received
  Staging pinned{Staging::pinned};   // the same on the host, page-locked
  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {  // (also where the constructor throws part way: whatever was made)
    if (host_comm != nullptr) ncclCommDestroy(host_comm);
    if (comm != nullptr) ncclCommDestroy(comm);
    if (host_stream != nullptr) cudaStreamDestroy(host_stream);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

int detail::device_of_local_rank(std::size_t local_rank, const char* who) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw communicator_error(tally::detail::message(who, ": no CUDA device for this rank"));
  }
  return static_cast<int>(local_rank % static_cast<std::size_t>(devices));
}

NcclCommunicator::Id NcclCommunicator::unique_id() {
  static_assert(sizeof(ncclUniqueId) == sizeof(Id));
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  Id out;
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

NcclCommunicator::NcclCommunicator(const Id& id, std::size_t rank, std::size_t size, int device)
    : state_(std::make_unique<State>()), rank_(rank), size_(size), device_(device) {
  if (size == 0 || rank >= size)
    tally::detail::fail<domain_error>("tally::runtime::NcclCommunicator: rank ", rank, " of ", size);
  // NVLink multicast (NVLS) off unless the user chose otherwise; tally never calls cuMulticastCreate
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaStreamCreate(&state_->stream), "cudaStreamCreate");
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof(nid));
  check(ncclCommInitRank(&state_->comm, static_cast<int>(size), nid, static_cast<int>(rank)), "ncclCommInitRank");
  check(cudaStreamCreateWithFlags(&state_->host_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(ncclCommSplit(state_->comm, 0, static_cast<int>(rank), &state_->host_comm, nullptr), "ncclCommSplit");
}

NcclCommunicator::~NcclCommunicator() = default;

std::string NcclCommunicator::description() const {
  return tally::detail::message("NCCL rank ", rank_, " of ", size_, " on device ", device_);
}

void NcclCommunicator::all_gather(const void* in, void* out, std::size_t bytes, gpu::Backend where) {
  check(cudaSetDevice(device_), "cudaSetDevice");
  if (bytes == 0) return;
  count(where, static_cast<std::uint64_t>(bytes) * (size_ - 1));
  if (where == gpu::Backend::cpu) {
    // on the host communicator's stream, through pinned memory: no wait for the device's other work
    const std::size_t all = bytes * (size_ + 1);
    char* pinned = state_->pinned.at_least(all);
    char* staged = state_->staging.at_least(all);
    std::memcpy(pinned, in, bytes);
    cudaStream_t s = state_->host_stream;
    check(cudaMemcpyAsync(staged, pinned, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    check(ncclAllGather(staged, staged + bytes, bytes, ncclChar, state_->host_comm, s), "ncclAllGather");
    check(cudaMemcpyAsync(pinned + bytes, staged + bytes, bytes * size_, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    std::memcpy(out, pinned + bytes, bytes * size_);
    return;
  }
  // in the default stream's order: after the work that wrote `in`, before the work that reads `out`
  check(ncclAllGather(in, out, bytes, ncclChar, state_->comm, state_->stream), "ncclAllGather");
}

namespace {
/// Whether a rank's counts are bytes for every rank; shape_error naming `who` otherwise.
void check_counts(std::span<const std::size_t> send_bytes, std::span<const std::size_t> recv_bytes, std::size_t ranks,
                  const char* who) {
  if (send_bytes.size() != ranks || recv_bytes.size() != ranks)
    tally::detail::fail<shape_error>("tally::runtime::NcclCommunicator::", who, ": counts for ", send_bytes.size(),
                                     " and ", recv_bytes.size(), " ranks, not ", ranks);
}
}  // namespace

void NcclCommunicator::enqueue_pairs(const char* from, std::span<const std::size_t> send_bytes, char* to,
                                     std::span<const std::size_t> recv_bytes, bool host) {
  ncclComm_t comm = host ? state_->host_comm : state_->comm;
  cudaStream_t stream = host ? state_->host_stream : state_->stream;
  std::size_t at_send = 0, at_recv = 0;
  for (std::size_t q = 0; q < size_; ++q) {
    if (send_bytes[q] > 0)
      check(ncclSend(from + at_send, send_bytes[q], ncclChar, static_cast<int>(q), comm, stream), "ncclSend");
    if (recv_bytes[q] > 0)
      check(ncclRecv(to + at_recv, recv_bytes[q], ncclChar, static_cast<int>(q), comm, stream), "ncclRecv");
    at_send += send_bytes[q];
    at_recv += recv_bytes[q];
  }
}

void NcclCommunicator::all_to_all(const void* send, std::span<const std::size_t> send_bytes, void* recv,
                                  std::span<const std::size_t> recv_bytes, gpu::Backend where) {
  check_counts(send_bytes, recv_bytes, size_, "all_to_all");
  check(cudaSetDevice(device_), "cudaSetDevice");
  const std::size_t sent = std::accumulate(send_bytes.begin(), send_bytes.end(), std::size_t{0});
  const std::size_t received = std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::size_t{0});
  if (sent == 0 && received == 0) return;  // (nothing to enqueue: one rank, or a shard that keeps its particles)
  count(where, to_others(send_bytes, rank_));
  if (where == gpu::Backend::cpu) {
    // as all_gather's host form: the host communicator, pinned memory, no wait for the device's other work
    char* pinned = state_->pinned.at_least(sent + received);
    char* staged = state_->staging.at_least(sent + received);
    cudaStream_t s = state_->host_stream;
    if (sent > 0) {
      std::memcpy(pinned, send, sent);
      check(cudaMemcpyAsync(staged, pinned, sent, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    }
    check(ncclGroupStart(), "ncclGroupStart");
    enqueue_pairs(staged, send_bytes, staged + sent, recv_bytes, true);
    check(ncclGroupEnd(), "ncclGroupEnd");
    if (received > 0)
      check(cudaMemcpyAsync(pinned + sent, staged + sent, received, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    if (received > 0) std::memcpy(recv, pinned + sent, received);
    return;
  }
  // in the default stream's order, as all_gather
  check(ncclGroupStart(), "ncclGroupStart");
  enqueue_pairs(static_cast<const char*>(send), send_bytes, static_cast<char*>(recv), recv_bytes, false);
  check(ncclGroupEnd(), "ncclGroupEnd");
}

void NcclCommunicator::all_to_all_many(std::span<const void* const> sends, std::span<const std::size_t> send_bytes,
                                       std::span<void* const> recvs, std::span<const std::size_t> recv_bytes,
                                       gpu::Backend where) {
  if (where == gpu::Backend::cpu) {
    Communicator::all_to_all_many(sends, send_bytes, recvs, recv_bytes, where);
    return;
  }
  check_counts(send_bytes, recv_bytes, size_, "all_to_all_many");
  if (sends.size() != recvs.size())
    tally::detail::fail<shape_error>("tally::runtime::NcclCommunicator::all_to_all_many: ", sends.size(),
                                     " sends and ", recvs.size(), " receives");
  check(cudaSetDevice(device_), "cudaSetDevice");
  const std::size_t sent = std::accumulate(send_bytes.begin(), send_bytes.end(), std::size_t{0});
  const std::size_t received = std::accumulate(recv_bytes.begin(), recv_bytes.end(), std::size_t{0});
  if (sends.empty() || (sent == 0 && received == 0)) return;
  count(where, to_others(send_bytes, rank_) * sends.size());
  check(ncclGroupStart(), "ncclGroupStart");  // every buffer's sends and receives: one launch
  for (std::size_t k = 0; k < sends.size(); ++k)
    enqueue_pairs(static_cast<const char*>(sends[k]), send_bytes, static_cast<char*>(recvs[k]), recv_bytes, false);
  check(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace tally::runtime
