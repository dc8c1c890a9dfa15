// The launcher bootstrap of the NCCL communicator: rank 0's unique id shared through a file, one GPU per local rank.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "tally/error.hpp"
#include "tally/runtime/graph.hpp"
#include "tally/runtime/nccl_communicator.hpp"

namespace tally::runtime {

namespace {
/// The variable's value as a count; usage_error when it is missing or not a number.
std::size_t count_from(const char* name, const char* fallback = nullptr) {
  const char* text = std::getenv(name);
  if (text == nullptr) text = fallback == nullptr ? nullptr : std::getenv(fallback);
  if (text == nullptr)
    tally::detail::fail<usage_error>("tally::runtime::LauncherBootstrap: ", name,
                                     " is not set (start the ranks with scripts/launch-local G program ...)");
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (*text == '\0' || *end != '\0' || errno != 0 || *text == '-')
    tally::detail::fail<usage_error>("tally::runtime::LauncherBootstrap: ", name, "='", text, "' is not a count");
  return static_cast<std::size_t>(v);
}
}  // namespace

bool LauncherBootstrap::launched() { return std::getenv("TALLY_NCCL_ID_FILE") != nullptr; }

LauncherBootstrap::LauncherBootstrap() {
  const char* file = std::getenv("TALLY_NCCL_ID_FILE");
  if (file == nullptr || *file == '\0')
    tally::detail::fail<usage_error>("tally::runtime::LauncherBootstrap: TALLY_NCCL_ID_FILE is not set (start the "
                                     "ranks with scripts/launch-local G program ...)");
  id_file_ = file;
  rank_ = count_from("TALLY_RANK");
  size_ = count_from("TALLY_WORLD_SIZE");
  local_rank_ = count_from("TALLY_LOCAL_RANK", "TALLY_RANK");
  if (size_ == 0 || rank_ >= size_)
    tally::detail::fail<usage_error>("tally::runtime::LauncherBootstrap: TALLY_RANK=", rank_,
                                     " is not below TALLY_WORLD_SIZE=", size_);
}

std::shared_ptr<NcclCommunicator> LauncherBootstrap::nccl(int device, std::chrono::milliseconds timeout) const {
  NcclCommunicator::Id id{};
  if (rank_ == 0) {
    id = NcclCommunicator::unique_id();
    publish_rendezvous(id_file_, id);
  } else {
    const std::vector<char> bytes = await_rendezvous(id_file_, id.size(), timeout);
    std::copy(bytes.begin(), bytes.end(), id.begin());
  }
  if (device < 0) device = detail::device_of_local_rank(local_rank_, "tally::runtime::LauncherBootstrap");
  return std::make_shared<NcclCommunicator>(id, rank_, size_, device);
}

}  // namespace tally::runtime
