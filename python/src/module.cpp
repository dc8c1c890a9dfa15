// The `tally._tally` extension module: its entry point, and tally's C++ exceptions as Python exceptions.
#include <Python.h>

#include "common.hpp"
#include "tally/error.hpp"
#include "tally/gpu/backend.hpp"

namespace tally::python {

namespace {

/// A new exception class tally.<name> deriving from every class in `bases`, with a docstring.
py::object make_exception(py::module_& m, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("tally.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  py::object c = py::reinterpret_steal<py::object>(cls);
  m.attr(name) = c;
  return c;
}

}  // namespace

void bind_errors(py::module_& m) {
  py::object builtins = py::module_::import("builtins");
  py::object base = make_exception(m, "Error", py::make_tuple(builtins.attr("Exception")),
                                   "Base class of every exception tally raises.");
  // Each class also derives from the built-in exception a Python user would catch: ValueError, OverflowError, ...
  // Leaked on purpose: the classes live as long as the interpreter, and no destructor runs after it ends.
  static py::object& domain = *new py::object();
  static py::object& shape = *new py::object();
  static py::object& overflow = *new py::object();
  static py::object& cuda = *new py::object();
  static py::object& memory = *new py::object();
  static py::object& usage = *new py::object();
  static py::object& inexact = *new py::object();
  domain = make_exception(m, "DomainError", py::make_tuple(base, builtins.attr("ValueError")),
                          "A parameter outside its domain (tally::domain_error): p outside [0, 1], a negative rate, "
                          "NaN, ...");
  shape = make_exception(m, "ShapeError", py::make_tuple(base, builtins.attr("ValueError")),
                         "Operands whose shapes or supports do not fit together (tally::shape_error).");
  overflow = make_exception(m, "OverflowError", py::make_tuple(base, builtins.attr("OverflowError")),
                            "A support leaving int64, or a dense pmf larger than Truncation.max_size "
                            "(tally::overflow_error).");
  cuda = make_exception(m, "CudaError", py::make_tuple(base, builtins.attr("RuntimeError")),
                        "A CUDA call that failed: no device, a failed launch (tally::cuda_error).");
  memory = make_exception(m, "DeviceMemoryError", py::make_tuple(cuda, builtins.attr("MemoryError")),
                          "Device memory exhausted (tally::device_memory_error); attributes requested and free "
                          "(bytes).");
  usage = make_exception(m, "UsageError", py::make_tuple(base, builtins.attr("RuntimeError")),
                         "Misuse of the engine (tally::runtime::usage_error): an empty handle, observing a realized "
                         "variable, mixing graphs, ...");
  inexact = make_exception(m, "InexactError", py::make_tuple(base, builtins.attr("RuntimeError")),
                           "A fallback refused in strict mode (tally::runtime::inexact_error); attribute sampled: "
                           "the (variable, reason) pairs it would have sampled.");

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    // the same message; most derived classes first
    try {
      std::rethrow_exception(p);
    } catch (const tally::device_memory_error& e) {
      py::object err = memory(e.what());
      err.attr("requested") = e.requested;
      err.attr("free") = e.free;
      PyErr_SetObject(memory.ptr(), err.ptr());
    } catch (const tally::cuda_error& e) {
      PyErr_SetString(cuda.ptr(), e.what());
    } catch (const tally::domain_error& e) {
      PyErr_SetString(domain.ptr(), e.what());
    } catch (const tally::shape_error& e) {
      PyErr_SetString(shape.ptr(), e.what());
    } catch (const tally::overflow_error& e) {
      PyErr_SetString(overflow.ptr(), e.what());
    } catch (const runtime::usage_error& e) {
      PyErr_SetString(usage.ptr(), e.what());
    } catch (const runtime::inexact_error& e) {
      py::list sampled;
      for (const auto& s : e.sampled) sampled.append(py::cast(s));  // tally.Sampled, as Exactness.sampled
      py::object err = inexact(e.what());
      err.attr("sampled") = sampled;
      PyErr_SetObject(inexact.ptr(), err.ptr());
    }
  });
}

PYBIND11_MODULE(_tally, m) {
  m.doc() = "tally: exact delayed-sampling algebra of discrete random variables (C++/CUDA), from Python.";
  bind_errors(m);
  bind_families(m);
  bind_algebra(m);
  bind_arrays(m);
  bind_graph(m);
  m.def("cuda_compiled", &gpu::cuda_compiled, "Whether this build has the CUDA kernels.");
  m.def("cuda_available", &gpu::cuda_available, "Whether the CUDA kernels are built and a device is present.");
  m.def("device_description", &gpu::device_description, "The device tally would use, in words.");
  m.def("device_fallback", &gpu::device_fallback,
        "Why a build with CUDA kernels runs on the CPU (no device, a driver too old, ...), in words; empty where a "
        "device is used, where the kernels are not built, or where TALLY_DEVICE=cpu asked for the CPU. tally itself "
        "prints nothing about it.");
  m.def("release_cached_memory", &gpu::release_cached_memory,
        "Frees the device and pinned memory tally keeps for the process (caches, staging, check slots); call it when no "
        "Graph is alive, before a leak check. False where some slots were still in use. Made again when next used.");
}

}  // namespace tally::python
