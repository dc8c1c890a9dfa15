// Collectives between GPUs through NCCL (one process per GPU), and the bootstraps for NCCL's unique id (MPI, file).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "tally/runtime/communicator.hpp"

namespace tally::runtime {

/// A Communicator over NCCL, one process (rank) per GPU: rank r of `size` drives device `device`, and the shards of
/// a population are the ranks' graphs (Graph(Shard, communicator, ...)). Built when tally is configured with
/// TALLY_NCCL (AUTO: on when CUDA and NCCL are found; NCCL ships with the CUDA toolkit), which defines
/// TALLY_HAVE_NCCL. Every rank makes one with the same unique id (rank 0 draws it with unique_id() and shares it: by
/// MPI, MpiBootstrap below, or any other way), so the same code runs on one host or across hosts.
/// NVLink multicast (NVLS) is left off: the constructor sets NCCL_NVLS_ENABLE=0 in the environment before
/// ncclCommInitRank unless the user set it, and tally never calls cuMulticastCreate.
/// The collectives on device buffers (Backend::cuda) run on a blocking stream of the rank's device, so in the default
/// stream's order both ways (the graph's work): a collective starts after the work enqueued before it, the work
/// enqueued after it waits for it, and the call returns without waiting (the host that reads its output waits, as
/// for any device result). Those on host buffers (Backend::cpu) run on a second communicator (ncclCommSplit of the
/// first) and a non-blocking stream, through pinned and device memory kept for that: the call returns once the
/// output is written, having waited for the other ranks but not for the device work queued before it. (Every rank
/// issues the same collectives in the same order, so neither communicator's operations can wait on the other's.)
/// NCCL cannot hold two ranks on one device: simulated shards on one GPU use InProcessGroup instead.
/// Errors: communicator_error with NCCL's message. A failed collective leaves the communicator unusable (NCCL's
/// own rule); the ranks should then stop.
class NcclCommunicator final : public Communicator {
 public:
  /// NCCL's ncclUniqueId, as bytes.
  using Id = std::array<char, 128>;
  /// A fresh unique id (ncclGetUniqueId), drawn by one rank and given to all.
  static Id unique_id();
  /// Joins the communicator of `size` ranks as `rank`, on CUDA device `device` (made current on this thread). Make
  /// it before any other GPU work of the process: tally uses one device per process (docs/gpu.md, "Several GPUs").
  NcclCommunicator(const Id& id, std::size_t rank, std::size_t size, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  std::size_t rank() const override { return rank_; }
  std::size_t size() const override { return size_; }
  /// The CUDA device this rank drives.
  int device() const { return device_; }
  void all_gather(const void* in, void* out, std::size_t bytes, gpu::Backend where) override;
  void all_to_all(const void* send, std::span<const std::size_t> send_bytes, void* recv,
                  std::span<const std::size_t> recv_bytes, gpu::Backend where) override;
  /// On device buffers: every send and receive in one NCCL group (one launch).
  void all_to_all_many(std::span<const void* const> sends, std::span<const std::size_t> send_bytes,
                       std::span<void* const> recvs, std::span<const std::size_t> recv_bytes,
                       gpu::Backend where) override;
  std::string description() const override;

 private:
  /// One rank's sends and receives of a pairwise exchange, enqueued (inside the caller's NCCL group).
  /// host: on the host collectives' communicator and stream.
  void enqueue_pairs(const char* from, std::span<const std::size_t> send_bytes, char* to,
                     std::span<const std::size_t> recv_bytes, bool host);
  struct State;
  std::unique_ptr<State> state_;
  std::size_t rank_, size_;
  int device_;
};

namespace detail {
/// The CUDA device of a rank that is the local_rank-th of its host: local_rank modulo the visible devices
/// (communicator_error naming `who` when there is none).
int device_of_local_rank(std::size_t local_rank, const char* who);
}  // namespace detail

/// The launcher bootstrap, without MPI: a launcher (scripts/launch-local G program args..., one host) starts the
/// ranks with TALLY_RANK, TALLY_WORLD_SIZE, TALLY_LOCAL_RANK (default: TALLY_RANK) and TALLY_NCCL_ID_FILE set. Rank 0
/// draws NCCL's unique id and publishes it in that file (publish_rendezvous, communicator.hpp: written aside, then
/// renamed); the other ranks wait for it (await_rendezvous). The file must not exist before the launch (the launcher
/// makes a fresh folder) and must be on a filesystem every rank sees (one host, or hosts sharing one). Each rank
/// joins on the device of its local rank modulo the visible devices.
class LauncherBootstrap {
 public:
  /// Whether this process was started by such a launcher (TALLY_NCCL_ID_FILE is set).
  static bool launched();
  /// Reads the variables; tally::usage_error naming the variable when one is missing or not a number, or the rank
  /// is not below the world size.
  LauncherBootstrap();
  /// This process's rank (TALLY_RANK).
  std::size_t rank() const { return rank_; }
  /// The number of ranks (TALLY_WORLD_SIZE).
  std::size_t size() const { return size_; }
  /// This rank among the ranks of its host (TALLY_LOCAL_RANK).
  std::size_t local_rank() const { return local_rank_; }
  /// The NCCL communicator of all the launched ranks (collective: every rank calls it). device < 0: local_rank()
  /// modulo the number of visible devices. communicator_error when rank 0's id does not come within `timeout`.
  std::shared_ptr<NcclCommunicator> nccl(int device = -1,
                                         std::chrono::milliseconds timeout = std::chrono::seconds(120)) const;

 private:
  std::size_t rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string id_file_;
};

#if defined(TALLY_HAVE_MPI)
/// The MPI bootstrap (TALLY_MPI: AUTO, on when NCCL and MPI are found; defines TALLY_HAVE_MPI): under
/// `mpirun -np G program`, rank 0 of MPI_COMM_WORLD draws the NCCL unique id and broadcasts it (MPI_Bcast), and
/// every rank joins the NCCL communicator on the device of its rank among the ranks of its host (its local rank,
/// modulo the host's devices). MPI is used for this alone; the collectives go through NCCL.
class MpiBootstrap {
 public:
  /// Whether this process looks started by an MPI launcher (mpirun, mpiexec, srun: one of OMPI_COMM_WORLD_SIZE,
  /// PMIX_RANK, PMI_RANK, PMI_SIZE, SLURM_PROCID is set). A hint for programs that run with or without one.
  static bool launched();
  /// MPI_Init unless MPI is already initialized (then MPI_Finalize is left to whoever initialized it).
  MpiBootstrap(int* argc, char*** argv);
  ~MpiBootstrap();
  MpiBootstrap(const MpiBootstrap&) = delete;
  MpiBootstrap& operator=(const MpiBootstrap&) = delete;
  /// This process's rank (in MPI_COMM_WORLD).
  std::size_t rank() const { return rank_; }
  /// The number of ranks (of MPI_COMM_WORLD).
  std::size_t size() const { return size_; }
  /// This rank among the ranks of its host (MPI_COMM_TYPE_SHARED).
  std::size_t local_rank() const { return local_rank_; }
  /// The NCCL communicator of all MPI ranks (collective over MPI_COMM_WORLD). device < 0: local_rank() modulo the
  /// number of visible devices.
  std::shared_ptr<NcclCommunicator> nccl(int device = -1) const;

 private:
  std::size_t rank_ = 0, size_ = 1, local_rank_ = 0;
  bool finalize_ = false;
};
#endif

}  // namespace tally::runtime
