// What the binding's translation units share: pybind11 headers, NumPy conversions and the handle wrappers.
#pragma once

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <type_traits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tally/runtime/graph.hpp"

namespace tally::python {

namespace py = pybind11;

/// x with 17 significant digits (the __repr__ of parameters: read back, the same double).
inline std::string number(double x) {
  std::ostringstream out;
  out.precision(17);
  out << x;
  return out.str();
}

/// A C-contiguous 1-D NumPy array of T (forcecast: ints become doubles and so on), or TypeError.
template <class T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

/// The elements of a 1-D array as a vector (one memcpy); ValueError naming `what` when it is not 1-D.
template <class T>
std::vector<T> to_vector(const Array<T>& a, const char* what) {
  if (a.ndim() != 1)
    throw py::value_error(std::string(what) + ": expected a 1-D array, got " + std::to_string(a.ndim()) +
                          " dimensions");
  return std::vector<T>(a.data(), a.data() + a.shape(0));
}

/// 2^63: an int64 holds the integers in [-2^63, 2^63).
inline constexpr double int64_end = 0x1p63;
/// Whether a double is an integer an int64 holds (what a count given as a float must be).
inline bool integral_int64(double x) { return std::isfinite(x) && x == std::floor(x) && x >= -int64_end && x < int64_end; }

/// Counts, one per particle, from a 1-D array of integers (any integer dtype) or of floats that are all integers;
/// TypeError naming the first value that is not an integer (no silent cast: 2.5 is not 2), ValueError for another
/// number of dimensions.
inline std::vector<std::int64_t> integer_values(const py::array& a, const char* what) {
  const char kind = a.dtype().kind();
  if ((kind == 'f' || kind == 'i' || kind == 'u' || kind == 'b') && a.ndim() != 1)
    throw py::value_error(std::string(what) + ": expected one integer per particle (a 1-D array) or one integer, got an "
                          "array of " + std::to_string(a.ndim()) + " dimensions");
  if (kind == 'f') {
    const auto d = Array<double>::ensure(a);
    for (py::ssize_t i = 0; i < d.shape(0); ++i)
      if (!integral_int64(d.data()[i]))
        throw py::type_error(std::string(what) + ": value[" + std::to_string(i) + "] = " + number(d.data()[i]) +
                             " is not an integer (counts are integers)");
  } else if (kind != 'i' && kind != 'u' && kind != 'b') {
    throw py::type_error(std::string(what) + ": expected integers, got an array of dtype " +
                         py::str(a.dtype()).cast<std::string>());
  }
  const auto v = Array<std::int64_t>::ensure(a);
  if (!v) throw py::error_already_set();
  return std::vector<std::int64_t>(v.data(), v.data() + v.shape(0));
}

/// A NumPy array that owns a copy of v (moved into a capsule, no second copy).
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  py::capsule free(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(owned->size())}, {static_cast<py::ssize_t>(sizeof(T))},
                        owned->data(), free);
}

/// A Python handle to a discrete variable: the C++ handle and the graph it belongs to (so that `x + y`, `2 * x`
/// and `x.graph` work; the graph lives while a handle does).
struct PyVariable {
  runtime::Variable v;
  std::shared_ptr<runtime::Graph> graph;
};

/// A Python handle to a conjugate continuous variable (Beta, Gamma, Dirichlet).
struct PyContinuous {
  runtime::Continuous v;
  std::shared_ptr<runtime::Graph> graph;
};

/// A read-only view of one gpu::Column (host or device memory) that keeps its owner alive: the column is the
/// owner's own (a variable's values, a graph's log-weights, an observation's log-likelihoods, ancestors).
/// Exposed to Python as tally.Column with the NumPy array interface (host), __cuda_array_interface__ (device)
/// and DLPack (both).
struct ColumnView {
  py::object owner;        ///< what keeps the memory alive
  const void* data = nullptr;
  std::size_t size = 0;
  char kind = 'f';         ///< NumPy kind: 'f' (double), 'i' (int64), 'u' (uint64 / size_t)
  bool device = false;     ///< device memory (CUDA) or host memory
  std::function<py::object()> to_host;  ///< a NumPy copy
  /// The typed column (one of them set), for bindings that take a column back (Graph.binomial, constant).
  const gpu::Column<double>* f64 = nullptr;
  const gpu::Column<std::int64_t>* i64 = nullptr;
};

template <class T>
ColumnView view_of(const gpu::Column<T>& c, py::object owner) {
  ColumnView v;
  v.owner = std::move(owner);
  v.data = c.data();
  v.size = c.size();
  v.kind = std::is_floating_point_v<T> ? 'f' : (std::is_signed_v<T> ? 'i' : 'u');
  v.device = c.where() == gpu::Backend::cuda;
  const gpu::Column<T>* col = &c;
  py::object keep = v.owner;
  v.to_host = [col, keep]() -> py::object { return to_numpy(col->to_host()); };
  if constexpr (std::is_same_v<T, double>) v.f64 = col;
  if constexpr (std::is_same_v<T, std::int64_t>) v.i64 = col;
  return v;
}

/// A view of n elements at p (host or device memory) that `owner` keeps alive: the arrays of a law batch.
template <class T>
ColumnView raw_view(const T* p, std::size_t n, bool device, py::object owner) {
  ColumnView v;
  v.owner = std::move(owner);
  v.data = p;
  v.size = n;
  v.kind = std::is_floating_point_v<T> ? 'f' : (std::is_signed_v<T> ? 'i' : 'u');
  v.device = device;
  py::object keep = v.owner;
  v.to_host = [p, n, device, keep]() -> py::object {
    std::vector<T> out(n);
    if (device && n > 0)
      gpu::detail::device_copy(out.data(), p, n * sizeof(T), 1);
    else if (n > 0)
      std::copy(p, p + n, out.begin());
    return to_numpy(std::move(out));
  };
  return v;
}

/// A column the view owns (moved into a shared holder), e.g. the ancestors of a resampling.
template <class T>
ColumnView owned_view(gpu::Column<T>&& c) {
  auto holder = std::make_shared<gpu::Column<T>>(std::move(c));
  py::capsule keep(new std::shared_ptr<gpu::Column<T>>(holder),
                   [](void* p) { delete static_cast<std::shared_ptr<gpu::Column<T>>*>(p); });
  return view_of(*holder, keep);
}

void bind_errors(py::module_& m);
void bind_families(py::module_& m);
void bind_algebra(py::module_& m);
void bind_arrays(py::module_& m);
void bind_graph(py::module_& m);

}  // namespace tally::python
