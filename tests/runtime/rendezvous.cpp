// Rendezvous through a file (the launcher bootstrap of several GPUs): publish, await, stale ids, time-outs.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tally/runtime/communicator.hpp"

namespace test_rendezvous {

using namespace tally::runtime;
using namespace std::chrono_literals;

namespace {
/// A fresh folder, removed with its files at the end of the test.
struct Folder {
  Folder() {
    std::random_device seed;
    path = std::filesystem::temp_directory_path() / ("tally-rendezvous-" + std::to_string(seed()));
    std::filesystem::create_directories(path);
  }
  ~Folder() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
};
}  // namespace

TEST_CASE("A rank awaiting the rendezvous file gets the bytes published later by another", "[runtime][rendezvous]") {
  Folder folder;
  const std::string file = (folder.path / "id").string();
  std::vector<char> id(128);
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>(i * 37 + 11);
  std::vector<std::vector<char>> seen(3);
  std::vector<std::thread> waiting;
  for (auto& s : seen) waiting.emplace_back([&s, &file, &id] { s = await_rendezvous(file, id.size(), 10s); });
  std::this_thread::sleep_for(30ms);  // the others wait first, as ranks started before rank 0 would
  publish_rendezvous(file, id);
  for (auto& t : waiting) t.join();
  for (const auto& s : seen) REQUIRE(s == id);
  // no temporary file is left beside it
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder.path)) files += entry.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("Rendezvous errors: a stale file, a missing publisher, a file of another size, an unwritable place",
          "[runtime][rendezvous]") {
  Folder folder;
  const std::string file = (folder.path / "id").string();
  const std::vector<char> id(16, 'x');
  REQUIRE_THROWS_AS(await_rendezvous(file, id.size(), 20ms), communicator_error);  // nobody published
  publish_rendezvous(file, id);
  REQUIRE_THROWS_AS(publish_rendezvous(file, id), communicator_error);  // an id is there already: refused
  REQUIRE(await_rendezvous(file, id.size(), 20ms) == id);                // and the first one is kept
  REQUIRE_THROWS_WITH(await_rendezvous(file, 128, 20ms), Catch::Contains("holds 16 bytes, not 128"));
  REQUIRE_THROWS_AS(publish_rendezvous((folder.path / "no-such-folder" / "id").string(), id), communicator_error);
}

}  // namespace test_rendezvous
