// Shards and G shards in one process: the cooperative threads of InProcessGroup and their collectives.
#include "tally/runtime/communicator.hpp"

#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "tally/error.hpp"
#include "tally/gpu/population_arrays.hpp"

namespace tally::runtime {

Shard Shard::even(std::size_t total, std::size_t shards, std::size_t index) {
  if (shards == 0 || total < shards || index >= shards)
    tally::detail::fail<domain_error>("tally::runtime::Shard::even: shard ", index, " of ", shards, " for ", total,
                                      " particles (every shard needs one)");
  const std::size_t base = total / shards, extra = total % shards;
  return {index, base + (index < extra ? 1 : 0), index * base + std::min(index, extra), total};
}

namespace {

/// What a rank brings to a collective.
struct Deposit {
  enum Op { all_gather, all_to_all } op = all_gather;
  const void* in = nullptr;
  void* out = nullptr;
  std::size_t bytes = 0;  // all_gather
  std::span<const std::size_t> send_bytes, recv_bytes;  // all_to_all
  gpu::Backend where = gpu::Backend::cpu;
};

void copy(void* dst, const void* src, std::size_t bytes, gpu::Backend where) {
  if (bytes == 0) return;
  if (where == gpu::Backend::cpu)
    std::memcpy(dst, src, bytes);
  else
    gpu::detail::device_copy(dst, src, bytes, 2);
}

/// The baton and the collective in progress, shared by the ranks of one run().
class Group {
 public:
  explicit Group(std::size_t ranks) : ranks_(ranks), done_(ranks, false), deposits_(ranks) {}

  /// Blocks until rank r holds the baton (the start of its program).
  void start(std::size_t r) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return turn_ == r; });
  }
  /// Rank r's program ended (error: it threw); the baton goes on.
  void finish(std::size_t r, std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    done_[r] = true;
    if (error) {
      if (!first_error_) first_error_ = error;
      failed_ = true;
    } else if (arrived_ > 0) {
      failed_ = true;  // others wait in a collective this rank will never enter
      if (!first_error_)
        first_error_ = std::make_exception_ptr(communicator_error(tally::detail::message(
            "tally::runtime::InProcessGroup: shard ", r, " returned while others were in a collective (the program "
            "must call the same collectives on every shard)")));
    }
    pass(r);
  }
  /// Rank r (holding the baton) enters a collective.
  void collective(std::size_t r, const Deposit& d) {
    std::unique_lock lock(mutex_);
    fail_if_broken(r);
    for (std::size_t q = 0; q < ranks_; ++q)
      if (done_[q]) {
        failed_ = true;
        fail_if_broken(r);
      }
    deposits_[r] = d;
    if (++arrived_ == ranks_) {  // the last to arrive performs it, and keeps the baton
      arrived_ = 0;
      ++generation_;
      try {
        perform();
      } catch (...) {
        failed_ = true;
        throw;
      }
      return;
    }
    const std::uint64_t generation = generation_;
    pass(r);
    wake_.wait(lock, [&] { return turn_ == r; });
    if (generation_ == generation) failed_ = true;
    fail_if_broken(r);
  }
  std::exception_ptr first_error() const { return first_error_; }

 private:
  void fail_if_broken(std::size_t r) const {
    if (failed_)
      throw communicator_error(tally::detail::message("tally::runtime::InProcessGroup: shard ", r, " of ", ranks_,
                                                      ": another shard failed or left, the collective cannot complete"));
  }
  /// The baton to the next rank after r that has not ended (none: every rank has ended).
  void pass(std::size_t r) {
    turn_ = ranks_;
    for (std::size_t k = 1; k <= ranks_; ++k)
      if (const std::size_t q = (r + k) % ranks_; !done_[q]) {
        turn_ = q;
        break;
      }
    wake_.notify_all();
  }
  void perform() {
    const Deposit& d0 = deposits_[0];
    for (const Deposit& d : deposits_)
      if (d.op != d0.op || d.where != d0.where || (d.op == Deposit::all_gather && d.bytes != d0.bytes) ||
          (d.op == Deposit::all_to_all && (d.send_bytes.size() != ranks_ || d.recv_bytes.size() != ranks_)))
        throw communicator_error("tally::runtime::InProcessGroup: the shards entered different collectives");
    if (d0.op == Deposit::all_gather) {
      for (const Deposit& to : deposits_)
        for (std::size_t r = 0; r < ranks_; ++r)
          copy(static_cast<std::byte*>(to.out) + r * d0.bytes, deposits_[r].in, d0.bytes, d0.where);
      return;
    }
    for (std::size_t q = 0; q < ranks_; ++q)
      for (std::size_t r = 0; r < ranks_; ++r)
        if (deposits_[r].send_bytes[q] != deposits_[q].recv_bytes[r])
          throw communicator_error(tally::detail::message("tally::runtime::InProcessGroup: shard ", r, " sends ",
                                                          deposits_[r].send_bytes[q], " bytes to shard ", q,
                                                          ", which expects ", deposits_[q].recv_bytes[r]));
    for (std::size_t r = 0; r < ranks_; ++r) {
      std::size_t send_at = 0;
      for (std::size_t q = 0; q < ranks_; ++q) {
        std::size_t recv_at = 0;
        for (std::size_t s = 0; s < r; ++s) recv_at += deposits_[q].recv_bytes[s];
        copy(static_cast<std::byte*>(deposits_[q].out) + recv_at, static_cast<const std::byte*>(deposits_[r].in) + send_at,
             deposits_[r].send_bytes[q], d0.where);
        send_at += deposits_[r].send_bytes[q];
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  const std::size_t ranks_;
  std::size_t turn_ = 0, arrived_ = 0;
  std::uint64_t generation_ = 0;
  bool failed_ = false;
  std::vector<bool> done_;
  std::vector<Deposit> deposits_;
  std::exception_ptr first_error_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(Group& group, std::size_t rank, std::size_t size) : group_(group), rank_(rank), size_(size) {}
  std::size_t rank() const override { return rank_; }
  std::size_t size() const override { return size_; }
  void all_gather(const void* in, void* out, std::size_t bytes, gpu::Backend where) override {
    Deposit d;
    d.op = Deposit::all_gather;
    d.in = in;
    d.out = out;
    d.bytes = bytes;
    d.where = where;
    group_.collective(rank_, d);
    count(where, static_cast<std::uint64_t>(bytes) * (size_ - 1));
  }
  void all_to_all(const void* send, std::span<const std::size_t> send_bytes, void* recv,
                  std::span<const std::size_t> recv_bytes, gpu::Backend where) override {
    Deposit d;
    d.op = Deposit::all_to_all;
    d.in = send;
    d.out = recv;
    d.send_bytes = send_bytes;
    d.recv_bytes = recv_bytes;
    d.where = where;
    group_.collective(rank_, d);
    if (!grouping_) count(where, to_others(send_bytes, rank_));
  }
  /// One exchange per buffer, counted as one collective, as NCCL's group counts it (the traffic estimates hosts').
  void all_to_all_many(std::span<const void* const> sends, std::span<const std::size_t> send_bytes,
                       std::span<void* const> recvs, std::span<const std::size_t> recv_bytes,
                       gpu::Backend where) override {
    grouping_ = true;
    try {
      Communicator::all_to_all_many(sends, send_bytes, recvs, recv_bytes, where);
    } catch (...) {
      grouping_ = false;
      throw;
    }
    grouping_ = false;
    if (!sends.empty()) count(where, to_others(send_bytes, rank_) * sends.size());
  }
  std::string description() const override {
    return tally::detail::message("in-process shard ", rank_, " of ", size_);
  }

 private:
  Group& group_;
  std::size_t rank_, size_;
  bool grouping_ = false;  // inside all_to_all_many: its exchanges are counted together
};

}  // namespace

void Communicator::all_to_all_many(std::span<const void* const> sends, std::span<const std::size_t> send_bytes,
                                   std::span<void* const> recvs, std::span<const std::size_t> recv_bytes,
                                   gpu::Backend where) {
  if (sends.size() != recvs.size())
    tally::detail::fail<shape_error>("tally::runtime::Communicator::all_to_all_many: ", sends.size(), " sends and ",
                                     recvs.size(), " receives");
  for (std::size_t k = 0; k < sends.size(); ++k) all_to_all(sends[k], send_bytes, recvs[k], recv_bytes, where);
}

void InProcessGroup::run(std::size_t ranks, const std::function<void(std::shared_ptr<Communicator>)>& program) {
  if (ranks == 0) tally::detail::fail<domain_error>("tally::runtime::InProcessGroup::run: no ranks");
  Group group(ranks);
  std::vector<std::thread> threads;
  threads.reserve(ranks);
  for (std::size_t r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      group.start(r);
      std::exception_ptr error;
      try {
        program(std::make_shared<InProcessCommunicator>(group, r, ranks));
      } catch (...) {
        error = std::current_exception();
      }
      group.finish(r, error);
    });
  for (auto& t : threads) t.join();
  if (auto e = group.first_error()) std::rethrow_exception(e);
}

}  // namespace tally::runtime
