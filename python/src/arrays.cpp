// Bindings of tally's arrays and array algorithms: zero-copy columns and law batches (NumPy, CUDA array interface,
// DLPack), subset sums, reachable sums, bit matrices and transitive closure, resampling, convolution.
#include <cstring>
#include <span>

#include "common.hpp"
#include "tally/gpu/bit_matrix.hpp"
#include "tally/gpu/convolve.hpp"
#include "tally/gpu/population_ops.hpp"
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/resample.hpp"
#include "tally/gpu/sampled_subset_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"
#include "tally/gpu/transitive_closure.hpp"
#ifdef TALLY_PYTHON_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tally::python {

namespace {

// ---- DLPack (v0.8 ABI, https://dmlc.github.io/dlpack/latest/c_api.html), declared here: no header needed ----
struct DLDevice {
  std::int32_t device_type;  // 1: CPU, 2: CUDA
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // 0: int, 1: uint, 2: float
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
/// What a DLManagedTensor owns: its shape and a reference to the column's owner.
struct DLContext {
  std::int64_t shape[1];
  PyObject* owner;
};

int current_device() {
#ifdef TALLY_PYTHON_CUDA
  int d = 0;
  if (cudaGetDevice(&d) == cudaSuccess) return d;
#endif
  return 0;
}

const char* typestr(const ColumnView& c) { return c.kind == 'f' ? "<f8" : (c.kind == 'i' ? "<i8" : "<u8"); }

py::dict array_interface(const ColumnView& c, int version) {
  py::dict d;
  d["shape"] = py::make_tuple(c.size);
  d["typestr"] = typestr(c);
  d["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(c.data), true);  // read-only
  d["version"] = version;
  d["strides"] = py::none();
  return d;
}

py::capsule dlpack(const ColumnView& c) {
  auto* ctx = new DLContext{{static_cast<std::int64_t>(c.size)}, c.owner.ptr()};
  Py_INCREF(ctx->owner);
  auto* t = new DLManagedTensor{};
  t->dl_tensor.data = const_cast<void*>(c.data);
  t->dl_tensor.device = {c.device ? 2 : 1, c.device ? current_device() : 0};
  t->dl_tensor.ndim = 1;
  t->dl_tensor.dtype = {static_cast<std::uint8_t>(c.kind == 'f' ? 2 : (c.kind == 'i' ? 0 : 1)), 64, 1};
  t->dl_tensor.shape = ctx->shape;
  t->dl_tensor.strides = nullptr;
  t->dl_tensor.byte_offset = 0;
  t->manager_ctx = ctx;
  t->deleter = [](DLManagedTensor* self) {
    auto* owned = static_cast<DLContext*>(self->manager_ctx);
    PyGILState_STATE gil = PyGILState_Ensure();  // consumers may call the deleter without the GIL
    Py_DECREF(owned->owner);
    PyGILState_Release(gil);
    delete owned;
    delete self;
  };
  // A capsule not consumed (still named "dltensor") frees the tensor; a consumer renames it "used_dltensor".
  PyObject* cap = PyCapsule_New(t, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      m->deleter(m);
    }
  });
  if (cap == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::capsule>(cap);
}

template <class T>
std::span<const T> span_of(const Array<T>& a, const char* what) {
  if (a.ndim() != 1) throw py::value_error(std::string(what) + ": expected a 1-D array");
  return {a.data(), static_cast<std::size_t>(a.shape(0))};
}

template <class T>
py::dict subset_sum_law_dict(gpu::SubsetSumLaw<T>&& law) {
  py::dict d;
  d["values"] = to_numpy(std::move(law.values));
  d["weights"] = to_numpy(std::move(law.weights));
  d["log_scale"] = law.log_scale;
  d["error_bound"] = law.error_bound;
  return d;
}

/// A host Column from a NumPy array, or the Column a view stands for (kept where it lives).
template <class T>
const gpu::Column<T>& column_arg(const py::object& x, gpu::Column<T>& storage, const char* what) {
  if (py::isinstance<ColumnView>(x)) {
    const ColumnView& v = x.cast<const ColumnView&>();
    const gpu::Column<T>* c = nullptr;
    if constexpr (std::is_same_v<T, double>) c = v.f64;
    if constexpr (std::is_same_v<T, std::int64_t>) c = v.i64;
    if (c == nullptr) throw py::type_error(std::string(what) + ": a Column of the wrong type");
    return *c;
  }
  storage = gpu::Column<T>::host_values(to_vector(x.cast<Array<T>>(), what));
  return storage;
}

void bind_laws(py::module_& m) {
  py::class_<gpu::Laws, std::shared_ptr<gpu::Laws>>(
      m, "Laws",
      "One law per particle in one batch where it was computed (host or device memory): law i is weights[offset[i] "
      ".. offset[i+1]) * exp(log_scale[i]) on lo[i], lo[i] + 1, ... Its arrays are zero-copy Columns.")
      .def_property_readonly("device", [](const gpu::Laws& l) { return l.where() == gpu::Backend::cuda ? "cuda" : "cpu"; })
      .def("__len__", &gpu::Laws::size)
      .def_property_readonly("weights", [](py::object self) {
        const auto& l = self.cast<const gpu::Laws&>();
        // host laws keep their arrays in host(), device laws in the columns view() points to
        if (l.where() == gpu::Backend::cpu) return raw_view(l.host().weights.data(), l.total(), false, self);
        return raw_view(l.view().weights, l.total(), true, self);
      })
      .def_property_readonly("offset", [](py::object self) {
        const auto& l = self.cast<const gpu::Laws&>();
        // host laws keep their arrays in host(), device laws in the columns view() points to
        if (l.where() == gpu::Backend::cpu) return raw_view(l.host().offset.data(), l.size() + 1, false, self);
        return raw_view(l.view().offset, l.size() + 1, true, self);
      })
      .def_property_readonly("lo", [](py::object self) {
        const auto& l = self.cast<const gpu::Laws&>();
        // host laws keep their arrays in host(), device laws in the columns view() points to
        if (l.where() == gpu::Backend::cpu) return raw_view(l.host().lo.data(), l.size(), false, self);
        return raw_view(l.view().lo, l.size(), true, self);
      })
      .def_property_readonly("log_scale", [](py::object self) {
        const auto& l = self.cast<const gpu::Laws&>();
        // host laws keep their arrays in host(), device laws in the columns view() points to
        if (l.where() == gpu::Backend::cpu) return raw_view(l.host().log_scale.data(), l.size(), false, self);
        return raw_view(l.view().log_scale, l.size(), true, self);
      })
      .def("to_pmfs", [](const gpu::Laws& l) {
        const gpu::PmfBatch b = l.to_host();
        std::vector<Pmf> out;
        out.reserve(b.size());
        for (std::size_t i = 0; i < b.size(); ++i) {
          const auto w = b[i];
          out.emplace_back(b.lo[i], Eigen::Map<const Eigen::VectorXd>(w.data(), Eigen::Index(w.size())),
                           b.log_scale[i]);
        }
        return out;
      }, "The laws as a list of Pmf (copied to the host).")
      .def("__repr__", [](const gpu::Laws& l) {
        return "Laws(" + std::to_string(l.size()) + " laws, " + std::to_string(l.total()) + " weights, " +
               (l.where() == gpu::Backend::cuda ? "cuda" : "cpu") + ")";
      });
  m.def("binomial_laws",
        [](const py::object& n, const py::object& q) {
          gpu::Column<std::int64_t> ns;
          gpu::Column<double> qs;
          return std::make_shared<gpu::Laws>(
              gpu::binomial_laws(column_arg(n, ns, "binomial_laws: n"), column_arg(q, qs, "binomial_laws: q")));
        },
        py::arg("n"), py::arg("q"),
        "Binomial(n_i, q_i) for each i, where the Columns live (NumPy arrays: on the host).");
  m.def("beta_binomial_laws",
        [](const py::object& n, const py::object& a, const py::object& b) {
          gpu::Column<std::int64_t> ns;
          gpu::Column<double> as, bs;
          return std::make_shared<gpu::Laws>(gpu::beta_binomial_laws(column_arg(n, ns, "beta_binomial_laws: n"),
                                                                     column_arg(a, as, "beta_binomial_laws: a"),
                                                                     column_arg(b, bs, "beta_binomial_laws: b")));
        },
        py::arg("n"), py::arg("a"), py::arg("b"), "BetaBinomial(n_i, a_i, b_i) for each i, where the Columns live.");
}

}  // namespace

void bind_arrays(py::module_& m) {
  py::class_<ColumnView>(m, "Column",
                         "A read-only, zero-copy view of one value per particle where the graph keeps it: host "
                         "memory (NumPy reads it through __array_interface__ / numpy.asarray) or device memory "
                         "(CuPy, PyTorch, JAX read it through __cuda_array_interface__ or DLPack). It keeps its owner "
                         "alive; numpy() copies it to the host.")
      .def_property_readonly("device", [](const ColumnView& c) { return c.device ? "cuda" : "cpu"; })
      .def_property_readonly("dtype", [](const ColumnView& c) { return py::dtype(std::string(typestr(c))); })
      .def_property_readonly("shape", [](const ColumnView& c) { return py::make_tuple(c.size); })
      .def_property_readonly("ptr", [](const ColumnView& c) { return reinterpret_cast<std::uintptr_t>(c.data); },
                             "The address of the first element (host or device).")
      .def("__len__", [](const ColumnView& c) { return c.size; })
      .def("numpy", [](const ColumnView& c) { return c.to_host(); }, "A NumPy copy (from the device if there).")
      .def_property_readonly("__array_interface__", [](const ColumnView& c) {
        if (c.device) throw py::attribute_error("a device Column has no __array_interface__: use numpy()");
        return array_interface(c, 3);
      })
      .def_property_readonly("__cuda_array_interface__", [](const ColumnView& c) {
        if (!c.device) throw py::attribute_error("a host Column has no __cuda_array_interface__");
        py::dict d = array_interface(c, 3);
        d["stream"] = 1;  // tally's work is ordered on the legacy default stream
        return d;
      })
      .def("__dlpack__", [](const ColumnView& c, py::object /*stream*/) { return dlpack(c); },
           py::arg("stream") = py::none(),
           "A DLPack capsule (no copy). tally works on the legacy default stream, which orders against the "
           "consumer's blocking streams, so no synchronization is added.")
      .def("__dlpack_device__", [](const ColumnView& c) {
        return py::make_tuple(c.device ? 2 : 1, c.device ? current_device() : 0);
      })
      .def("__repr__", [](const ColumnView& c) {
        return std::string("Column(") + std::to_string(c.size) + " x " + typestr(c) + ", " +
               (c.device ? "cuda" : "cpu") + ")";
      });

  m.def("hazard_probabilities",
        [](const ColumnView& k, double c) {
          if (k.i64 == nullptr) throw py::type_error("hazard_probabilities: k must be an int64 Column (Graph.values)");
          return owned_view(gpu::hazard_probabilities(*k.i64, c));
        },
        py::arg("k"), py::arg("c"), "q_i = 1 - exp(-c k_i), where k lives (a chain binomial's probabilities).");
  m.def("hazard_probabilities",
        [](const Array<std::int64_t>& k, double c) {
          auto col = gpu::Column<std::int64_t>::host_values(to_vector(k, "hazard_probabilities"));
          return to_numpy(gpu::hazard_probabilities(col, c).to_host());
        },
        py::arg("k"), py::arg("c"));

  bind_laws(m);

  // ---- subset sums ----
  m.def("subset_sum_law",
        [](const Array<std::int64_t>& w, const Array<double>& p) {
          return subset_sum_law_dict(gpu::subset_sum_law(span_of(w, "subset_sum_law: w"), span_of(p, "subset_sum_law: p")));
        },
        py::arg("w"), py::arg("p"),
        "The exact law of sum_i w_i B_i (B_i ~ Bernoulli(p_i)) by enumerating the 2^n subsets (n <= 36): a dict "
        "of values, weights, log_scale, error_bound (integer weights).");
  m.def("subset_sum_law",
        [](const Array<double>& w, const Array<double>& p) {
          return subset_sum_law_dict(gpu::subset_sum_law(span_of(w, "subset_sum_law: w"), span_of(p, "subset_sum_law: p")));
        },
        py::arg("w"), py::arg("p"), "The same for real weights.");
  m.def("sampled_subset_sums",
        [](const std::vector<std::vector<std::int64_t>>& v, std::size_t k, std::uint64_t seed) {
          return gpu::sampled_subset_sums(v, k, seed);
        },
        py::arg("vectors"), py::arg("k"), py::arg("seed"),
        "Up to k distinct subsets per vector, their distinct sums (seed 000's sampled supports).");
  py::class_<gpu::ReachableSums>(m, "ReachableSums", "Which totals 0 .. capacity are subset sums, one bit each.")
      .def_property_readonly("capacity", &gpu::ReachableSums::capacity)
      .def("__contains__", &gpu::ReachableSums::contains)
      .def("contains", &gpu::ReachableSums::contains, py::arg("t"))
      .def("largest_at_most", &gpu::ReachableSums::largest_at_most, py::arg("t"))
      .def("count", &gpu::ReachableSums::count)
      .def("totals", [](const gpu::ReachableSums& r) { return to_numpy(r.totals()); })
      .def_property_readonly("words", [](const gpu::ReachableSums& r) {
        return to_numpy(std::vector<std::uint64_t>(r.words().begin(), r.words().end()));
      })
      .def("__repr__", [](const gpu::ReachableSums& r) {
        return "ReachableSums(capacity=" + std::to_string(r.capacity()) + ", count=" + std::to_string(r.count()) + ")";
      });
  m.def("reachable_sums",
        [](const Array<std::int64_t>& w, std::int64_t c) { return gpu::reachable_sums(span_of(w, "reachable_sums"), c); },
        py::arg("w"), py::arg("c"), "The subset sums of w up to c (bit-packed dynamic programming).");
  py::class_<gpu::SubsetSumAnswer>(m, "SubsetSumAnswer")
      .def_readonly("reachable", &gpu::SubsetSumAnswer::reachable)
      .def_readonly("best", &gpu::SubsetSumAnswer::best)
      .def("__repr__", [](const gpu::SubsetSumAnswer& a) {
        return std::string("SubsetSumAnswer(reachable=") + (a.reachable ? "True" : "False") +
               ", best=" + std::to_string(a.best) + ")";
      });
  m.def("subset_sum",
        [](const Array<std::int64_t>& w, std::int64_t c) { return gpu::subset_sum(span_of(w, "subset_sum"), c); },
        py::arg("w"), py::arg("c"), "Whether some subset sums to c, and the largest subset sum <= c.");

  // ---- bit matrices, reachability ----
  py::class_<gpu::BitMatrix>(m, "BitMatrix", "An n x n boolean matrix, 64 entries per word along each row.")
      .def(py::init<std::size_t>(), py::arg("n"))
      .def(py::init([](const py::array_t<bool, py::array::c_style | py::array::forcecast>& a) {
             if (a.ndim() != 2 || a.shape(0) != a.shape(1))
               throw py::value_error("BitMatrix: expected a square 2-D boolean array");
             const auto n = static_cast<std::size_t>(a.shape(0));
             gpu::BitMatrix b(n);
             auto r = a.unchecked<2>();
             for (std::size_t i = 0; i < n; ++i)
               for (std::size_t j = 0; j < n; ++j)
                 if (r(py::ssize_t(i), py::ssize_t(j))) b.set(i, j);
             return b;
           }),
           py::arg("dense"), "From a square boolean NumPy array.")
      .def_property_readonly("size", &gpu::BitMatrix::size)
      .def("get", &gpu::BitMatrix::get, py::arg("i"), py::arg("j"))
      .def("set", &gpu::BitMatrix::set, py::arg("i"), py::arg("j"), py::arg("value") = true)
      .def("__getitem__", [](const gpu::BitMatrix& b, std::pair<std::size_t, std::size_t> ij) {
        if (ij.first >= b.size() || ij.second >= b.size()) throw py::index_error("BitMatrix index out of range");
        return b.get(ij.first, ij.second);
      })
      .def("count", &gpu::BitMatrix::count)
      .def("transposed", &gpu::BitMatrix::transposed)
      .def("to_numpy", [](const gpu::BitMatrix& b) {
        const auto n = static_cast<py::ssize_t>(b.size());
        py::array_t<bool> out({n, n});
        auto w = out.mutable_unchecked<2>();
        for (py::ssize_t i = 0; i < n; ++i)
          for (py::ssize_t j = 0; j < n; ++j) w(i, j) = b.get(std::size_t(i), std::size_t(j));
        return out;
      }, "A dense boolean NumPy array.")
      .def("__eq__", [](const gpu::BitMatrix& a, const gpu::BitMatrix& b) { return a == b; })
      .def("__repr__", [](const gpu::BitMatrix& b) {
        return "BitMatrix(" + std::to_string(b.size()) + ", " + std::to_string(b.count()) + " set)";
      });
  m.def("boolean_product", &gpu::boolean_product, py::arg("a"), py::arg("b"), "C = A B over (AND, OR).");
  m.def("transitive_closure", &gpu::transitive_closure, py::arg("adjacency"),
        "R[i, j]: j reachable from i by a path of one or more edges (a DAG; a cycle is a ShapeError).");
  m.def("topological_order", &gpu::topological_order, py::arg("adjacency"));

  // ---- resampling, convolution ----
  py::enum_<gpu::Resampler>(m, "Resampler")
      .value("systematic", gpu::Resampler::systematic)
      .value("multinomial", gpu::Resampler::multinomial);
  py::class_<gpu::WeightSummary>(m, "WeightSummary")
      .def_readonly("max_log_weight", &gpu::WeightSummary::max_log_weight)
      .def_readonly("log_sum", &gpu::WeightSummary::log_sum)
      .def_readonly("ess", &gpu::WeightSummary::ess);
  m.def("summarize_log_weights",
        [](const Array<double>& l) { return gpu::summarize_log_weights(span_of(l, "summarize_log_weights")); },
        py::arg("log_weights"), "log of the summed weights and the effective sample size.");
  m.def("resample",
        [](const Array<double>& l, gpu::Resampler kind, std::uint64_t seed, std::uint64_t counter) {
          gpu::WeightSummary s{};
          auto a = gpu::resample(span_of(l, "resample"), kind, seed, counter, &s);
          return py::make_tuple(to_numpy(std::move(a)), s);
        },
        py::arg("log_weights"), py::arg("kind") = gpu::Resampler::systematic, py::arg("seed") = 1,
        py::arg("counter") = 0, "(ancestors, WeightSummary) from log-weights.");
  m.def("convolve",
        [](const Array<double>& p, const Array<double>& q) {
          auto ps = span_of(p, "convolve: p");
          auto qs = span_of(q, "convolve: q");
          // an empty operand: tally's shape_error, with its message
          std::vector<double> r(ps.empty() || qs.empty() ? 0 : ps.size() + qs.size() - 1);
          gpu::convolve(ps, qs, r);
          return to_numpy(std::move(r));
        },
        py::arg("p"), py::arg("q"), "r = p * q (exact direct convolution of non-negative vectors; GPU when large).");
}

}  // namespace tally::python
