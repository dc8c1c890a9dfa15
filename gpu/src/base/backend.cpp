// The dispatch decision and the one-time device probe (the probe itself is in device_cuda.cu or device_none.cpp).
#include "tally/gpu/backend.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace tally::gpu {
namespace detail {
// Implemented by device_cuda.cu (CUDA builds) or device_none.cpp: fills `why` and returns whether a device works.
bool probe_device(std::string& why);
}  // namespace detail

namespace {

enum class Preference { automatic, cpu, gpu };

Preference preference() {
  const char* v = std::getenv("TALLY_DEVICE");
  if (v == nullptr || std::strcmp(v, "auto") == 0 || *v == '\0') return Preference::automatic;
  if (std::strcmp(v, "cpu") == 0) return Preference::cpu;
  return Preference::gpu;
}

struct Probe {
  bool available = false;
  std::string description;
};

const Probe& probe() {
  static Probe result;
  static std::once_flag once;
  std::call_once(once, [] {
    if (preference() == Preference::cpu) {
      result.description = "CPU (TALLY_DEVICE=cpu)";
      return;
    }
    std::string why;
    result.available = detail::probe_device(why);
    result.description = why;  // the library prints nothing: device_fallback() says why a CUDA build runs on the CPU
  });
  return result;
}

}  // namespace

bool cuda_available() { return probe().available; }

std::string device_description() { return probe().description; }

std::string device_fallback() {
  if (!cuda_compiled() || preference() == Preference::cpu) return {};
  const Probe& p = probe();
  return p.available ? std::string() : p.description;
}

Backend select(bool has_cuda_kernel, double work, double min_work) {
  if (!cuda_compiled()) return Backend::cpu;
  const bool device = cuda_available();  // probes (and reports) once, whatever the operation
  if (!has_cuda_kernel || !device) return Backend::cpu;
  if (preference() == Preference::gpu) return Backend::cuda;
  return work >= min_work ? Backend::cuda : Backend::cpu;
}

}  // namespace tally::gpu
