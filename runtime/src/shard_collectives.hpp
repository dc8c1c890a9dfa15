// Private: the host-side collectives the sharded steps share (counts, gathers, repartitions) over a Communicator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "node.hpp"
#include "tally/runtime/communicator.hpp"

namespace tally::runtime::detail {

inline Communicator& comm_of(Context& ctx) { return *ctx.comm; }

/// items[q] * size for each rank q (counts of items as bytes).
inline std::vector<std::size_t> times(const std::vector<std::size_t>& items, std::size_t size) {
  std::vector<std::size_t> out(items.size());
  for (std::size_t q = 0; q < items.size(); ++q) out[q] = items[q] * size;
  return out;
}

/// One value from every rank, in rank order (host).
template <class T>
std::vector<T> gather_all(Communicator& c, const T& mine) {
  std::vector<T> out(c.size());
  c.all_gather(&mine, out.data(), sizeof(T), gpu::Backend::cpu);
  return out;
}

/// How many items each rank sends this one, given how many this one sends each rank (one host exchange).
inline std::vector<std::size_t> exchange_counts(Communicator& c, const std::vector<std::size_t>& send) {
  std::vector<std::size_t> recv(c.size());
  const std::vector<std::size_t> eight(c.size(), sizeof(std::size_t));
  c.all_to_all(send.data(), eight, recv.data(), eight, gpu::Backend::cpu);
  return recv;
}

/// The byte counts of a repartition of items of `size` bytes: this rank holds the items [from[me], from[me + 1]) of
/// a global array cut at `from`, and gets those of [to[me], to[me + 1]) (the cuts are rank-ordered, from 0 to the
/// same end): send[q] and recv[q] are the overlaps with rank q's.
struct RepartitionCounts {
  std::vector<std::size_t> send, recv;
};
inline RepartitionCounts repartition_counts(const std::vector<std::size_t>& from, const std::vector<std::size_t>& to,
                                            std::size_t me, std::size_t size) {
  const std::size_t g = from.size() - 1;
  RepartitionCounts out{std::vector<std::size_t>(g), std::vector<std::size_t>(g)};
  const auto overlap = [](std::size_t a0, std::size_t a1, std::size_t b0, std::size_t b1) {
    const std::size_t lo = std::max(a0, b0), hi = std::min(a1, b1);
    return hi > lo ? hi - lo : 0;
  };
  for (std::size_t q = 0; q < g; ++q) {
    out.send[q] = overlap(from[me], from[me + 1], to[q], to[q + 1]) * size;
    out.recv[q] = overlap(from[q], from[q + 1], to[me], to[me + 1]) * size;
  }
  return out;
}

/// Host items of such a repartition.
template <class T>
std::vector<T> repartition(Communicator& c, const std::vector<T>& mine, const std::vector<std::size_t>& from,
                           const std::vector<std::size_t>& to) {
  const std::size_t me = c.rank();
  const RepartitionCounts counts = repartition_counts(from, to, me, sizeof(T));
  std::vector<T> out(to[me + 1] - to[me]);
  c.all_to_all(mine.data(), counts.send, out.data(), counts.recv, gpu::Backend::cpu);
  return out;
}


/// This shard's log-weights on the host, checked on every shard (domain_error naming the population's particle
/// whose log-weight is NaN or +inf, on every shard). Collective.
std::vector<double> checked_log_weights(Context& ctx, const char* who);

}  // namespace tally::runtime::detail
