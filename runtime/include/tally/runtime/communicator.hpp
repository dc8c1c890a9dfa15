// Collectives between the shards of a sharded population: the interface, and G shards in one process.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tally/gpu/backend.hpp"

namespace tally::runtime {

/// One shard of a population of `total` particles: its particles are the population's particles first ..
/// first + count - 1, and `index` is its rank among the shards (Communicator::rank()). The shards of one population
/// cover 0 .. total - 1 in rank order, each with at least one particle (Graph's sharded constructor checks it on
/// its first collective).
struct Shard {
  /// This shard's rank among the shards.
  std::size_t index = 0;
  /// The number of particles it holds (>= 1).
  std::size_t count = 1;
  /// The population's index of its first particle.
  std::size_t first = 0;
  /// The population's particles, over all shards.
  std::size_t total = 1;
  /// The even split of `total` particles over `shards`: shard `index` gets floor(total / shards) particles, one
  /// more for the first total % shards (tally::domain_error when total < shards or index >= shards).
  static Shard even(std::size_t total, std::size_t shards, std::size_t index);
};

/// A collective failed: a shard broke off (threw, or returned without taking part), the shards called different
/// collectives, or the transport (NCCL, MPI) reported an error.
struct communicator_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The collectives a sharded population needs, between size() ranks, each holding one shard. Every rank calls the
/// same collectives in the same order (the program is the same on every shard). `where` says where both buffers
/// live: host memory (Backend::cpu), and the call returns with this rank's output written; or device memory
/// (Backend::cuda, on the rank's device), and the output is written in the order of the device's default stream:
/// the work enqueued there after the call sees it, and the input may be freed (device_free is stream-ordered) or
/// rewritten by such work after the call returns; a host reading it waits for the device first, as for any device
/// result. Implementations: InProcessGroup (G shards in one process, for the
/// tests and for simulated shards) and, when tally is built with NCCL, NcclCommunicator (nccl_communicator.hpp).
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This rank, in 0 .. size() - 1.
  virtual std::size_t rank() const = 0;
  /// The number of ranks (shards).
  virtual std::size_t size() const = 0;
  /// Every rank gives `bytes` bytes at `in`; out (size() * bytes) receives rank r's at out + r * bytes.
  virtual void all_gather(const void* in, void* out, std::size_t bytes, gpu::Backend where) = 0;
  /// Pairwise exchange: this rank sends send_bytes[q] bytes to rank q, taken from `send` one rank after the other
  /// (rank q's from send + send_bytes[0] + ... + send_bytes[q - 1]), and receives recv_bytes[q] bytes from rank q,
  /// laid out the same way in `recv`. send_bytes[q] of rank r must equal recv_bytes[r] of rank q (exchange the
  /// counts first, with a host exchange of one size_t per rank). Both spans have size() entries.
  virtual void all_to_all(const void* send, std::span<const std::size_t> send_bytes, void* recv,
                          std::span<const std::size_t> recv_bytes, gpu::Backend where) = 0;
  /// Several pairwise exchanges with the same counts: buffer k sends from sends[k] and receives into recvs[k], each
  /// as all_to_all(sends[k], send_bytes, recvs[k], recv_bytes, where). Moving particles sends every column of
  /// their state so; NCCL groups them into one launch. This default calls all_to_all for each.
  virtual void all_to_all_many(std::span<const void* const> sends, std::span<const std::size_t> send_bytes,
                               std::span<void* const> recvs, std::span<const std::size_t> recv_bytes,
                               gpu::Backend where);
  /// What it is, for messages ("in-process shard 2 of 4", "NCCL rank 1 of 8 on device 1").
  virtual std::string description() const = 0;

  /// What this rank has sent to the other ranks so far, by where the buffers lived (Backend::cuda: device memory,
  /// Backend::cpu: host memory): bytes (an all_gather of b bytes sends b to each other rank, (size() - 1) b; an
  /// all_to_all its send_bytes[q] for q != rank(): what a network between hosts would carry) and collectives called.
  /// For tuning and for estimating a step's cost across hosts (the examples' RESULT lines).
  struct Traffic {
    /// Bytes sent to the other ranks from device and from host buffers, and the collectives called on each.
    ///@{
    std::uint64_t device_bytes = 0, host_bytes = 0, device_collectives = 0, host_collectives = 0;
    ///@}
  };
  /// What this rank has sent so far (Traffic above).
  Traffic traffic() const { return traffic_; }

 protected:
  /// Counts one collective (the implementations call it).
  void count(gpu::Backend where, std::uint64_t bytes_to_others) {
    const bool device = where == gpu::Backend::cuda;
    (device ? traffic_.device_bytes : traffic_.host_bytes) += bytes_to_others;
    ++(device ? traffic_.device_collectives : traffic_.host_collectives);
  }
  /// The bytes an all_to_all sends to ranks other than `me`.
  static std::uint64_t to_others(std::span<const std::size_t> send_bytes, std::size_t me) {
    std::uint64_t sum = 0;
    for (std::size_t q = 0; q < send_bytes.size(); ++q)
      if (q != me) sum += send_bytes[q];
    return sum;
  }

 private:
  Traffic traffic_;
};

/// G shards in one process, for tests and for simulated shards on one device: run(G, program) calls
/// program(communicator) for the ranks 0 .. G-1, each on its own thread, one at a time: a rank runs until it
/// enters a collective or returns, then the next rank in turn runs (cooperatively, a baton passed under a mutex).
/// So the ranks never run library code at the same moment (the library needs no locks: tally's Graph is not
/// thread-safe, and need not be), the run is deterministic, and a device's work is issued from one thread at a time.
/// The last rank to enter a collective performs it (host copies, or device-to-device copies on the one device) and
/// every rank then returns from it with its output written.
/// If a rank throws, the ranks waiting in or later entering a collective get communicator_error, and run() rethrows
/// the first rank's exception once every thread has ended. A rank that returns while others still enter
/// collectives makes them throw communicator_error too (a program that is not the same on every shard).
/// \class tally::runtime::InProcessGroup
class InProcessGroup;

/// Rendezvous through a file, for launchers without MPI (LauncherBootstrap, nccl_communicator.hpp): one rank
/// publishes a few bytes (a unique id) at `path`, written to a neighbouring temporary file and renamed, so a reader
/// never sees part of them; communicator_error when the file cannot be written or already exists (a stale id from an
/// earlier launch would join the wrong ranks).
void publish_rendezvous(const std::string& path, std::span<const char> bytes);
/// Waits until `path` exists and returns its bytes (exactly `bytes` of them), polling every few milliseconds;
/// communicator_error naming the path when it does not appear within `timeout` or holds another number of bytes.
std::vector<char> await_rendezvous(const std::string& path, std::size_t bytes, std::chrono::milliseconds timeout);

class InProcessGroup {
 public:
  /// ranks >= 1 (tally::domain_error otherwise).
  static void run(std::size_t ranks, const std::function<void(std::shared_ptr<Communicator>)>& program);
};

}  // namespace tally::runtime
