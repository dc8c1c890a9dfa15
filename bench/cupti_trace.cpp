// A CUPTI activity tracer loaded by the CUDA driver (CUDA_INJECTION64_PATH): every kernel, copy, set, runtime call
// and synchronization between cudaProfilerStart and cudaProfilerStop, one CSV line each, for scripts/trace-summary.
//
// Usage (a developer's tool; the device machine has no Nsight Systems):
//   CUDA_INJECTION64_PATH=build/bench/libtally_cupti_trace.so TALLY_TRACE_OUT=trace.csv <program>
// Lines: kind,name,start_ns,end_ns,bytes. Kinds: kernel, copy (name HtoD, DtoH, DtoD, ...), set, api (runtime calls;
// name is the call), sync (stream, event or context synchronizations), mark (cudaProfilerStart / Stop).
#include <cupti.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr std::size_t buffer_bytes = 8u << 20;

std::mutex lines_mutex;
std::vector<std::string> lines;

void add(const char* kind, const char* name, std::uint64_t start, std::uint64_t end, std::uint64_t bytes) {
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%llu,%llu,%llu", kind, name, (unsigned long long)start,
                (unsigned long long)end, (unsigned long long)bytes);
  const std::lock_guard<std::mutex> lock(lines_mutex);
  lines.emplace_back(line);
}

const char* copy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    default: return "other";
  }
}

void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  *size = buffer_bytes;
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        std::string name = k->name ? k->name : "?";
        for (char& c : name)
          if (c == ',') c = ';';
        add("kernel", name.c_str(), k->start, k->end, 0);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        add("copy", copy_kind(m->copyKind), m->start, m->end, m->bytes);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        add("set", "memset", m->start, m->end, m->bytes);
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        const char* name = "?";
        cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
        const std::string call = name ? name : "?";
        const bool mark = call.rfind("cudaProfilerStart", 0) == 0 || call.rfind("cudaProfilerStop", 0) == 0;
        add(mark ? "mark" : "api", call.c_str(), a->start, a->end, 0);
        break;
      }
      case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
        const char* type = s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE ? "stream"
                           : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ? "event"
                           : s->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT ? "wait_event"
                                                                                               : "context";
        add("sync", type, s->start, s->end, 0);
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}

void write_out() {
  cuptiActivityFlushAll(1);
  const char* path = std::getenv("TALLY_TRACE_OUT");
  std::FILE* out = std::fopen(path ? path : "trace.csv", "w");
  if (!out) return;
  const std::lock_guard<std::mutex> lock(lines_mutex);
  for (const auto& line : lines) std::fprintf(out, "%s\n", line.c_str());
  std::fclose(out);
}

}  // namespace

extern "C" int InitializeInjection() {
  cuptiActivityRegisterCallbacks(requested, completed);
  for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                    CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION})
    cuptiActivityEnable(kind);
  std::atexit(write_out);
  return 1;
}
