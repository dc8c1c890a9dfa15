// Rendezvous through a file: one rank publishes a unique id, the others wait for it (launchers without MPI).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tally/error.hpp"
#include "tally/runtime/communicator.hpp"

namespace tally::runtime {

void publish_rendezvous(const std::string& path, std::span<const char> bytes) {
  auto fail = [&](const char* what) {
    throw communicator_error(tally::detail::message("tally::runtime::publish_rendezvous: ", what, " '", path,
                                                    "': ", std::strerror(errno)));
  };
  if (std::filesystem::exists(path)) {
    errno = EEXIST;
    fail("an id is already published (a stale file of an earlier launch?) at");
  }
  // written aside and renamed: rename is atomic within a filesystem, so a reader sees all the bytes or none
  const std::string aside = path + ".part." + std::to_string(::getpid());
  const int fd = ::open(aside.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) fail("cannot create");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(aside.c_str());
      errno = e;
      fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(aside.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(aside.c_str());
    errno = e;
    fail("cannot publish");
  }
}

std::vector<char> await_rendezvous(const std::string& path, std::size_t bytes, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::vector<char> out(bytes + 1);
      in.read(out.data(), static_cast<std::streamsize>(out.size()));
      if (static_cast<std::size_t>(in.gcount()) != bytes)
        throw communicator_error(tally::detail::message("tally::runtime::await_rendezvous: '", path, "' holds ",
                                                        in.gcount(), " bytes, not ", bytes));
      out.resize(bytes);
      return out;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw communicator_error(tally::detail::message("tally::runtime::await_rendezvous: no id at '", path,
                                                      "' after ", timeout.count(), " ms (did rank 0 start?)"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace tally::runtime
