// The Catch2 main shared by every test executable: the tests, then the library's kept device memory freed, so that a
// leak checker (compute-sanitizer --leak-check full) reports only leaks.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tally/gpu/population_arrays.hpp"

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  tally::gpu::release_cached_memory();
  return result;
}
