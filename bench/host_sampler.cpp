// A sampling profiler of a program's host code, preloaded (LD_PRELOAD), for scripts/sample-summary: where the host's
// own time goes in a small-P filter step, which the CUPTI trace shows only as gaps between runtime calls.
//
// Usage (a developer's tool; the device machine has no perf):
//   TALLY_SAMPLE_OUT=samples.txt LD_PRELOAD=build/bench/libtally_host_sampler.so <program>
//   scripts/sample-summary samples.txt <the program's unstripped binary>
// At each tick of the process's CPU time (ITIMER_PROF asks for 97 us; the kernel's accounting delivers it at its own
// tick where that is coarser, about 4 ms on the device machine: run for tens of seconds) the interrupted thread's
// stack is recorded (backtrace, up to `depth` frames). At exit the file gets /proc/self/maps, then one line of
// hexadecimal return addresses per sample.
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int depth = 40;
constexpr std::size_t capacity = 400000;

struct Sample {
  int frames;
  std::array<void*, depth> pc;
};

std::vector<Sample>* samples = nullptr;  // sized once before the timer starts: the handler never allocates
std::atomic<std::size_t> taken{0};

void on_tick(int) {
  const std::size_t k = taken.fetch_add(1, std::memory_order_relaxed);
  if (k >= capacity) return;
  Sample& s = (*samples)[k];
  s.frames = backtrace(s.pc.data(), depth);
}

struct Sampler {
  const char* path = std::getenv("TALLY_SAMPLE_OUT");
  Sampler() {
    if (!path) return;
    samples = new std::vector<Sample>(capacity);
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder now, not inside the first signal
    struct sigaction sa {};
    sa.sa_handler = on_tick;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, nullptr);
    const itimerval every{{0, 97}, {0, 97}};
    setitimer(ITIMER_PROF, &every, nullptr);
  }
  ~Sampler() {
    if (!path) return;
    const itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
    FILE* out = std::fopen(path, "w");
    if (!out) return;
    if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
      char line[4096];
      while (std::fgets(line, sizeof line, maps)) std::fprintf(out, "map %s", line);
      std::fclose(maps);
    }
    const std::size_t n = std::min(taken.load(), capacity);
    for (std::size_t k = 0; k < n; ++k) {
      std::fprintf(out, "sample");
      for (int f = 0; f < (*samples)[k].frames; ++f) std::fprintf(out, " %p", (*samples)[k].pc[f]);
      std::fprintf(out, "\n");
    }
    std::fclose(out);
  }
} sampler;

}  // namespace
