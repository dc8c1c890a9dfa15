// The device probe: what a program can ask about the device, since the library prints nothing about it.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "tally/gpu/backend.hpp"

namespace test_backend {

using namespace tally;

TEST_CASE("device_fallback says why a build with CUDA kernels runs on the CPU, and only then", "[gpu][backend]") {
  const std::string why = gpu::device_fallback(), description = gpu::device_description();
  const char* env = std::getenv("TALLY_DEVICE");
  const bool cpu_asked = env != nullptr && std::string(env) == "cpu";
  INFO("device: " << description);
  if (!gpu::cuda_compiled() || gpu::cuda_available() || cpu_asked) {
    CHECK(why.empty());  // nothing fell back: no kernels, a device in use, or the CPU asked for
  } else {
    CHECK(why == description);  // kernels built, no device: the probe's reason
    CHECK(!why.empty());
  }
  CHECK(!description.empty());
}

}  // namespace test_backend
