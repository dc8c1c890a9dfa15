// Bindings of the engine: Graph (P particles, CPU or CUDA), its variable handles, observations and exactness.
#include <sstream>

#include "common.hpp"
#include "tally/distributions.hpp"
#include "tally/error.hpp"

namespace tally::python {

namespace {

using runtime::Continuous;
using runtime::Graph;
using runtime::Variable;
using GraphPtr = std::shared_ptr<Graph>;

PyVariable wrap(const GraphPtr& g, Variable v) { return {std::move(v), g}; }
PyContinuous wrap(const GraphPtr& g, Continuous v) { return {std::move(v), g}; }

/// The graph a handle belongs to, for operators on handles (x + y); UsageError for an empty handle.
Graph& graph_of(const PyVariable& x, const char* who) {
  if (!x.graph) throw runtime::usage_error(std::string(who) + ": an empty Variable handle");
  return *x.graph;
}

runtime::Device parse_device(const py::object& d) {
  if (py::isinstance<py::str>(d)) {
    const auto s = d.cast<std::string>();
    if (s == "cpu") return runtime::Device::cpu;
    if (s == "cuda" || s == "gpu") return runtime::Device::cuda;
    if (s == "automatic" || s == "auto") return runtime::Device::automatic;
    throw py::value_error("Graph: device = '" + s + "' is not one of 'cpu', 'cuda' (or 'gpu'), 'automatic'");
  }
  return d.cast<runtime::Device>();
}

/// A family with constant parameters as a graph root: Graph.assume(Binomial(100, 0.3)).
template <class Family>
void assume_family(py::class_<Graph, GraphPtr>& c) {
  c.def("assume", [](const GraphPtr& g, const Family& law) { return wrap(g, g->assume(law)); }, py::arg("law"));
  c.def("assume", [](const GraphPtr& g, const std::vector<Family>& laws) { return wrap(g, g->assume(laws)); },
        py::arg("laws"), "x ~ laws[g] in group g (one law per group) or laws[i] in particle i (one per particle).");
}

template <class Law>
void assume_child(py::class_<Graph, GraphPtr>& c) {
  c.def("assume", [](const GraphPtr& g, const PyVariable& x, const Law& law) { return wrap(g, g->assume(x.v, law)); },
        py::arg("parent"), py::arg("law"));
}

template <class Handle>
auto handles(const std::vector<Handle>& xs) {
  std::vector<decltype(Handle::v)> out;
  out.reserve(xs.size());
  for (const auto& x : xs) out.push_back(x.v);
  return out;
}

/// f() without the GIL: the engine's long calls (seconds at large P) let other Python threads run meanwhile (a
/// Graph itself is not thread-safe: one thread per Graph). Exceptions leave with the GIL taken back.
template <class F>
auto nogil(F f) {
  py::gil_scoped_release release;
  return f();
}

py::array_t<std::int64_t> values_array(std::vector<std::int64_t>&& v) { return to_numpy(std::move(v)); }

/// A Python callable family(truncation) -> Pmf as the C++ family of Graph::assume(prior, family). The runtime may
/// call it inside a call that released the GIL (an observation asking for a prior's dropped tails), and may drop
/// it there (a node freed by variable elimination): the call and the last release take the GIL. A Python
/// exception, or a result that is not a Pmf, leaves as a tally::domain_error carrying its message (the runtime
/// treats a family that fails as one that cannot say: the bound stays as it was).
std::function<Pmf(const Truncation&)> python_family(py::function family) {
  std::shared_ptr<py::object> held(new py::object(std::move(family)), [](py::object* f) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing left to release (the object leaks)
    py::gil_scoped_acquire gil;
    delete f;
  });
  return [held](const Truncation& t) -> Pmf {
    py::gil_scoped_acquire gil;
    try {
      return (*held)(t).cast<Pmf>();
    } catch (py::error_already_set& e) {
      throw tally::domain_error(std::string("Graph.assume: the family raised ") + e.what());
    } catch (const py::cast_error&) {
      throw tally::domain_error("Graph.assume: the family must return a tally.Pmf");
    }
  };
}

}  // namespace

void bind_graph(py::module_& m) {
  py::enum_<runtime::Device>(m, "Device", "Where a Graph keeps its particles' laws and values.")
      .value("cpu", runtime::Device::cpu)
      .value("cuda", runtime::Device::cuda)
      .value("automatic", runtime::Device::automatic);
  py::enum_<gpu::Backend>(m, "Backend").value("cpu", gpu::Backend::cpu).value("cuda", gpu::Backend::cuda);
  py::enum_<runtime::Fallback>(m, "Fallback", "Why the runtime sampled a variable on its own.")
      .value("shared_ancestor", runtime::Fallback::shared_ancestor)
      .value("pruned", runtime::Fallback::pruned)
      .value("parent_realized", runtime::Fallback::parent_realized)
      .value("joint_limit", runtime::Fallback::joint_limit)
      .value("mixture_resolved", runtime::Fallback::mixture_resolved)
      .def("describe", [](runtime::Fallback f) { return std::string(runtime::to_string(f)); });
  py::enum_<runtime::DependenceMethod>(m, "DependenceMethod")
      .value("automatic", runtime::DependenceMethod::automatic)
      .value("search", runtime::DependenceMethod::search)
      .value("closure", runtime::DependenceMethod::closure);

  py::class_<runtime::Sampled>(m, "Sampled", "A variable the runtime sampled, and why.")
      .def_readonly("variable", &runtime::Sampled::variable)
      .def_readonly("reason", &runtime::Sampled::reason)
      .def("__repr__", [](const runtime::Sampled& s) {
        return "Sampled(" + s.variable + ", " + runtime::to_string(s.reason) + ")";
      });
  py::class_<runtime::Exactness>(m, "Exactness",
                                 "Whether an observation is exact given the past: the variables sampled to compute "
                                 "it (with their Fallback), and the truncation error bound with the truncated "
                                 "variables.")
      .def_readonly("sampled", &runtime::Exactness::sampled)
      .def_readonly("truncation_error", &runtime::Exactness::truncation_error)
      .def_readonly("truncated", &runtime::Exactness::truncated)
      .def_property_readonly("exact", &runtime::Exactness::exact)
      .def("describe", &runtime::Exactness::describe)
      .def("__repr__", [](const runtime::Exactness& e) { return "Exactness(" + e.describe() + ")"; });
  py::class_<runtime::Observation>(m, "Observation",
                                   "What Graph.observe returns: each particle's log-likelihood (added to the "
                                   "log-weights) and the exactness report.")
      .def_property_readonly("log_likelihoods", [](const runtime::Observation& o) {
        return to_numpy(std::vector<double>(o.log_likelihoods()));
      }, "A NumPy array (a host copy for a CUDA graph).")
      .def_property_readonly("column", [](py::object self) {
        return view_of(self.cast<const runtime::Observation&>().column(), self);
      }, "The log-likelihoods where the graph keeps them (zero-copy Column).")
      .def_property_readonly("exactness", &runtime::Observation::exactness)
      .def_property_readonly("exact", &runtime::Observation::exact)
      .def("__len__", &runtime::Observation::size)
      .def("__getitem__", [](const runtime::Observation& o, std::size_t i) {
        if (i >= o.size()) throw py::index_error("Observation index out of range");
        return o[i];
      })
      .def("__array__", [](const runtime::Observation& o, py::object /*dtype*/, py::object /*copy*/) {
        return to_numpy(std::vector<double>(o.log_likelihoods()));
      }, py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("__repr__", [](const runtime::Observation& o) {
        std::ostringstream out;
        out.precision(10);
        out << "Observation(" << o.size() << " particles";
        if (o.size() == 1) out << ", log_likelihood=" << o[0];
        out << ", " << o.exactness().describe() << ")";
        return out.str();
      });

  py::class_<gpu::WeightedSummary>(m, "WeightedSummary")
      .def_readonly("mean", &gpu::WeightedSummary::mean)
      .def_readonly("ess", &gpu::WeightedSummary::ess)
      .def_readonly("all_impossible", &gpu::WeightedSummary::all_impossible)
      .def_readonly("quantiles", &gpu::WeightedSummary::quantiles)
      .def_readonly("lo", &gpu::WeightedSummary::lo)
      .def_readonly("hi", &gpu::WeightedSummary::hi);
  py::class_<runtime::NodeMemory>(m, "NodeMemory")
      .def_readonly("name", &runtime::NodeMemory::name)
      .def_readonly("bytes", &runtime::NodeMemory::bytes)
      .def_readonly("bytes_per_particle", &runtime::NodeMemory::bytes_per_particle)
      .def("__repr__", [](const runtime::NodeMemory& n) {
        return "NodeMemory(" + n.name + ", " + std::to_string(n.bytes) + " bytes)";
      });

  py::class_<runtime::Shard>(m, "Shard",
                             "One shard of a population of `total` particles: its particles are the population's "
                             "first .. first + count - 1, and index is its rank among the shards.")
      .def_readonly("index", &runtime::Shard::index)
      .def_readonly("count", &runtime::Shard::count)
      .def_readonly("first", &runtime::Shard::first)
      .def_readonly("total", &runtime::Shard::total)
      .def("__repr__", [](const runtime::Shard& s) {
        return "Shard(index=" + std::to_string(s.index) + ", count=" + std::to_string(s.count) +
               ", first=" + std::to_string(s.first) + ", total=" + std::to_string(s.total) + ")";
      });

  // Resampling, with its ancestors as a Column (where the graph keeps them) or None.
  struct Resampling {
    double log_mean_weight, ess;
    py::object ancestors;
    bool resampled;
  };
  py::class_<Resampling>(m, "Resampling", "What Graph.resample_by_weight did.")
      .def_readonly("log_mean_weight", &Resampling::log_mean_weight,
                    "log (1/P) sum_i exp(l_i): the log-evidence increment")
      .def_readonly("ess", &Resampling::ess, "effective sample size of the weights before resampling")
      .def_readonly("ancestors", &Resampling::ancestors, "a Column of ancestors (uint64), None if not resampled")
      .def_readonly("resampled", &Resampling::resampled);
  const auto report = [](Graph::Resampling&& r) {
    py::object ancestors = py::none();
    if (r.resampled) ancestors = py::cast(owned_view(std::move(r.ancestors)));
    return Resampling{r.log_mean_weight, r.ess, ancestors, r.resampled};
  };

  py::class_<runtime::Groups>(m, "Groups", "G groups of S particles each: Graph(Groups(G, S), seed, device).")
      .def(py::init([](std::size_t count, std::size_t size) { return runtime::Groups{count, size}; }),
           py::arg("count"), py::arg("size"))
      .def_readonly("count", &runtime::Groups::count)
      .def_readonly("size", &runtime::Groups::size)
      .def("__repr__", [](const runtime::Groups& x) {
        return "Groups(" + std::to_string(x.count) + ", " + std::to_string(x.size) + ")";
      });
  // What resample_groups did: G values per group as NumPy arrays, the ancestors as a Column (or None).
  struct GroupResampling {
    py::object log_mean_weight, ess, resampled, ancestors;
  };
  py::class_<GroupResampling>(m, "GroupResampling", "What Graph.resample_groups did.")
      .def_readonly("log_mean_weight", &GroupResampling::log_mean_weight,
                    "each group's log (1/S) sum exp(l_i): its log-evidence increment (NumPy, G values)")
      .def_readonly("ess", &GroupResampling::ess, "each group's effective sample size before resampling (NumPy)")
      .def_readonly("resampled", &GroupResampling::resampled, "1 where the group was resampled (NumPy int64)")
      .def_readonly("ancestors", &GroupResampling::ancestors,
                    "a Column of ancestors (uint64), each in its particle's group; None for threshold 0");
  const auto group_report = [](Graph::GroupResampling&& r) {
    py::object ancestors = py::none();
    if (!r.ancestors.empty()) ancestors = py::cast(owned_view(std::move(r.ancestors)));
    return GroupResampling{to_numpy(r.log_mean_weight.to_host()), to_numpy(r.ess.to_host()),
                           to_numpy(r.resampled.to_host()), ancestors};
  };

  // Each group's moments of a variable: G values each, as NumPy arrays.
  struct GroupMoments {
    py::object mean, variance, ess;
  };
  py::class_<GroupMoments>(m, "GroupMoments", "What Graph.summarize_groups gives: G values each (NumPy).")
      .def_readonly("mean", &GroupMoments::mean, "each group's weighted mean")
      .def_readonly("variance", &GroupMoments::variance, "each group's weighted variance")
      .def_readonly("ess", &GroupMoments::ess, "each group's effective sample size (0: every particle impossible)");

  py::class_<PyVariable>(m, "Variable",
                         "A handle to a discrete random variable of a Graph (x + y, x - y, a * x + c build new ones).")
      .def_property_readonly("graph", [](const PyVariable& x) { return x.graph; })
      .def_property_readonly("empty", [](const PyVariable& x) { return x.v.empty(); })
      .def("__add__", [](const PyVariable& x, const PyVariable& y) { return wrap(x.graph, graph_of(x, "+").add(x.v, y.v)); },
           py::is_operator())
      .def("__add__", [](const PyVariable& x, std::int64_t c) { return wrap(x.graph, graph_of(x, "+").affine(x.v, 1, c)); },
           py::is_operator())
      .def("__radd__", [](const PyVariable& x, std::int64_t c) { return wrap(x.graph, graph_of(x, "+").affine(x.v, 1, c)); },
           py::is_operator())
      .def("__sub__", [](const PyVariable& x, const PyVariable& y) {
        return wrap(x.graph, graph_of(x, "-").subtract(x.v, y.v));
      }, py::is_operator())
      .def("__sub__", [](const PyVariable& x, std::int64_t c) {
        return wrap(x.graph, graph_of(x, "-").affine(x.v, 1, detail::checked_mul(c, -1, "Variable.__sub__")));
      }, py::is_operator())
      .def("__rsub__", [](const PyVariable& x, std::int64_t c) { return wrap(x.graph, graph_of(x, "-").affine(x.v, -1, c)); },
           py::is_operator())
      .def("__neg__", [](const PyVariable& x) { return wrap(x.graph, graph_of(x, "-").affine(x.v, -1, 0)); },
           py::is_operator())
      .def("__mul__", [](const PyVariable& x, std::int64_t a) { return wrap(x.graph, graph_of(x, "*").affine(x.v, a, 0)); },
           py::is_operator())
      .def("__rmul__", [](const PyVariable& x, std::int64_t a) { return wrap(x.graph, graph_of(x, "*").affine(x.v, a, 0)); },
           py::is_operator())
      .def("__repr__", [](const PyVariable& x) { return std::string(x.v.empty() ? "Variable(empty)" : "Variable()"); });
  py::class_<PyContinuous>(m, "Continuous", "A handle to a conjugate continuous variable (Beta, Gamma, Dirichlet).")
      .def_property_readonly("graph", [](const PyContinuous& x) { return x.graph; })
      .def_property_readonly("empty", [](const PyContinuous& x) { return x.v.empty(); })
      .def("__repr__", [](const PyContinuous& x) { return std::string(x.v.empty() ? "Continuous(empty)" : "Continuous()"); });

  py::class_<Graph, GraphPtr> g(m, "Graph",
                                "One probabilistic program over P particles (delayed sampling, Murray et al. 2018), "
                                "on the CPU or a CUDA device; every call acts on all particles at once.");
  // Graph(particles, seed, truncation) first: C++'s three-argument constructor, on the automatic device (the
  // general overload below would take a Truncation in third place for a device and refuse it).
  g.def(py::init([](std::size_t particles, std::uint64_t seed, const Truncation& t) {
          return std::make_shared<Graph>(particles, seed, t);
        }),
        py::arg("particles") = 1, py::arg("seed") = 1, py::arg("truncation") = Truncation{},
        "A graph on the automatic device (CUDA when a device is present and particles >= 4096).");
  g.def(py::init([](std::size_t particles, std::uint64_t seed, const py::object& device, const Truncation& t) {
          return std::make_shared<Graph>(particles, seed, parse_device(device), t);
        }),
        py::arg("particles") = 1, py::arg("seed") = 1, py::arg("device") = "automatic",
        py::arg("truncation") = Truncation{},
        "device: 'cpu', 'cuda' (or 'gpu'), 'automatic' (CUDA when a device is present and particles >= 4096), or a "
        "tally.Device.");
  g.def(py::init([](const runtime::Groups& groups, std::uint64_t seed, const py::object& device, const Truncation& t) {
          return std::make_shared<Graph>(groups, seed, parse_device(device), t);
        }),
        py::arg("groups"), py::arg("seed") = 1, py::arg("device") = "automatic", py::arg("truncation") = Truncation{},
        "G groups of S particles (tally.Groups(G, S)): each group its own parameters (a list of laws, one per "
        "group), weights and resampling (resample_groups).")
      .def_property_readonly("particles", &Graph::particles)
      .def_property_readonly("groups", &Graph::groups, "G: the groups (1 for a graph made without Groups)")
      .def_property_readonly("group_size", &Graph::group_size, "S: the particles of each group")
      .def_property_readonly("first_group", &Graph::first_group,
                             "the population's index of the first group (0 unless a rank's share of groups)")
      .def_property_readonly("shard", &Graph::shard,
                             "The shard of a population this graph holds: Shard(0, P, 0, P) for an unsharded graph.")
      .def_property_readonly("sharded", &Graph::sharded,
                             "Whether this graph is one shard of a sharded population (always False from Python, "
                             "which makes no communicator).")
      .def_property_readonly("backend", &Graph::backend)
      .def_property_readonly("device", [](const Graph& gr) { return gr.backend() == gpu::Backend::cuda ? "cuda" : "cpu"; })
      .def_property("strict", py::overload_cast<>(&Graph::strict, py::const_), py::overload_cast<bool>(&Graph::strict),
                    "Strict mode: a fallback raises InexactError instead of sampling.")
      .def_property_readonly("pending_samplings", &Graph::pending_samplings,
                             "The variables sampled since the last observation (list of Sampled): what the next "
                             "observation's exactness lists first.")
      .def_property_readonly("truncation", &Graph::truncation)
      .def("name", [](Graph& gr, const PyVariable& x, std::string n) { gr.name(x.v, std::move(n)); }, py::arg("x"),
           py::arg("name"))
      .def("name", [](Graph& gr, const PyContinuous& x, std::string n) { gr.name(x.v, std::move(n)); }, py::arg("x"),
           py::arg("name"));

  // ---- assume: roots, children, conjugate parents ----
  g.def("assume", [](const GraphPtr& gr, const Pmf& prior) { return wrap(gr, gr->assume(prior)); }, py::arg("prior"))
      .def("assume", [](const GraphPtr& gr, const Pmf& prior, py::function family) {
        return wrap(gr, gr->assume(prior, python_family(std::move(family))));
      }, py::arg("prior"), py::arg("family"),
         "x ~ prior, where family(truncation) -> Pmf is the same law truncated under other settings (prior = "
         "family(graph.truncation)): the graph asks it for the tails the prior dropped, to bound their effect in "
         "joint laws' error bounds. A family that raises is treated as one that cannot say.");
  assume_family<Bernoulli>(g);
  assume_family<Binomial>(g);
  assume_family<Poisson>(g);
  assume_family<Geometric>(g);
  assume_family<NegativeBinomial>(g);
  assume_family<BetaBinomial>(g);
  assume_family<Categorical>(g);
  assume_family<UniformInt>(g);
  assume_family<Hypergeometric>(g);
  assume_family<Delta>(g);
  assume_child<Thinning>(g);
  assume_child<ScaledPoisson>(g);
  assume_child<IndexedPoisson>(g);
  assume_child<MarkovStep>(g);
  g.def("assume", [](const GraphPtr& gr, const std::vector<Pmf>& laws) { return wrap(gr, gr->assume(laws)); },
        py::arg("laws"), "x ~ laws[g] in group g, or laws[i] in particle i.")
      .def("assume", [](const GraphPtr& gr, const PyVariable& x, const std::vector<Thinning>& laws) {
        return wrap(gr, gr->assume(x.v, laws));
      }, py::arg("parent"), py::arg("laws"), "y | x ~ laws[g] in group g: a thinning probability per group.")
      .def("assume", [](const GraphPtr& gr, const PyVariable& x, const std::vector<ScaledPoisson>& laws) {
        return wrap(gr, gr->assume(x.v, laws));
      }, py::arg("parent"), py::arg("laws"), "y | x ~ Poisson(a_g x) in group g: a scale per group.")
      .def("assume", [](const GraphPtr& gr, const PyVariable& x, const std::vector<IndexedPoisson>& laws) {
        return wrap(gr, gr->assume(x.v, laws));
      }, py::arg("parent"), py::arg("laws"), "y | x ~ Poisson(rates_g[x]) in group g: rates per group.")
      .def("assume", [](const GraphPtr& gr, const PyVariable& x, const std::vector<MarkovStep>& laws) {
        return wrap(gr, gr->assume(x.v, laws));
      }, py::arg("parent"), py::arg("laws"), "y | x ~ Categorical(T_g[x, :]) in group g: a transition matrix per group.");
  g.def("assume", [](const GraphPtr& gr, const runtime::Beta& law) { return wrap(gr, gr->assume(law)); }, py::arg("law"))
      .def("assume", [](const GraphPtr& gr, const runtime::Gamma& law) { return wrap(gr, gr->assume(law)); },
           py::arg("law"))
      .def("assume", [](const GraphPtr& gr, const runtime::Dirichlet& law) { return wrap(gr, gr->assume(law)); },
           py::arg("law"))
      .def("assume", [](const GraphPtr& gr, const std::vector<runtime::Beta>& laws) { return wrap(gr, gr->assume(laws)); },
           py::arg("laws"), "rho ~ laws[g] in group g, or laws[i] in particle i (tally.each(tally.Beta, a, b)).")
      .def("assume", [](const GraphPtr& gr, const std::vector<runtime::Gamma>& laws) { return wrap(gr, gr->assume(laws)); },
           py::arg("laws"), "lambda ~ laws[g] in group g, or laws[i] in particle i.")
      .def("assume", [](const GraphPtr& gr, const std::vector<runtime::Dirichlet>& laws) {
        return wrap(gr, gr->assume(laws));
      }, py::arg("laws"), "pi ~ laws[g] in group g, or laws[i] in particle i.");

  g.def("constant", [](const GraphPtr& gr, std::int64_t v) { return wrap(gr, gr->constant(v)); }, py::arg("v"),
        "A realized count: v in every particle.")
      .def("constant", [](const GraphPtr& gr, const Array<std::int64_t>& v) {
        return wrap(gr, gr->constant(to_vector(v, "Graph.constant")));
      }, py::arg("v"), "v[i] in particle i.")
      .def("constant", [](const GraphPtr& gr, const ColumnView& v) {
        if (v.i64 == nullptr) throw py::type_error("Graph.constant: the Column must hold int64 values");
        return wrap(gr, gr->constant(v.i64->clone()));
      }, py::arg("v"), "v[i] in particle i, from a Column where the graph keeps it (copied there, not to the host).");

  // binomial: the C++ overloads, and constant n (a number or a per-particle array) with a number or array p
  g.def("binomial", [](const GraphPtr& gr, const PyVariable& x, double q) { return wrap(gr, gr->binomial(x.v, q)); },
        py::arg("n"), py::arg("p"), "Binomial(x, q): a thinning of the variable x.")
      .def("binomial", [](const GraphPtr& gr, const PyVariable& x, const Array<double>& p) {
        return wrap(gr, gr->binomial(x.v, to_vector(p, "Graph.binomial: p")));
      }, py::arg("n"), py::arg("p"), "Binomial(x_i, p_i) with one p_i per particle (x realized first).")
      .def("binomial", [](const GraphPtr& gr, const PyVariable& x, const ColumnView& p) {
        if (p.f64 == nullptr) throw py::type_error("Graph.binomial: p must be a float64 Column");
        return wrap(gr, gr->binomial(x.v, p.f64->clone()));
      }, py::arg("n"), py::arg("p"), "Binomial(x_i, p_i) with p a Column where the graph keeps it.")
      .def("binomial", [](const GraphPtr& gr, const PyVariable& x, const PyContinuous& rho) {
        return wrap(gr, gr->binomial(x.v, rho.v));
      }, py::arg("n"), py::arg("p"), "Binomial(x, rho) with rho a Beta variable.")
      .def("binomial", [](const GraphPtr& gr, const PyVariable& x, const PyVariable& state, const Array<double>& keep) {
        return wrap(gr, gr->binomial(x.v, state.v, to_vector(keep, "Graph.binomial: keep")));
      }, py::arg("x"), py::arg("state"), py::arg("keep"),
         "Binomial(x, keep[state]): a thinning of x whose probability the random category state (in 0 .. K-1) "
         "selects among the K numbers keep, kept exactly in one joint law with x and state. Each keep in [0, 1] "
         "(DomainError), keep not empty (ShapeError).")
      .def("binomial", [](const GraphPtr& gr, std::int64_t n, const PyContinuous& rho) {
        return wrap(gr, gr->binomial(n, rho.v));
      }, py::arg("n"), py::arg("p"), "Binomial(n, rho), rho ~ Beta.")
      .def("binomial", [](const GraphPtr& gr, const Array<std::int64_t>& n, const PyContinuous& rho) {
        return wrap(gr, gr->binomial(to_vector(n, "Graph.binomial: n"), rho.v));
      }, py::arg("n"), py::arg("p"), "Binomial(n_i, rho), rho ~ Beta, one n_i per particle.")
      .def("binomial", [](const GraphPtr& gr, std::int64_t n, double p) { return wrap(gr, gr->assume(Binomial(n, p))); },
           py::arg("n"), py::arg("p"), "Binomial(n, p) with constant parameters (a root).")
      .def("binomial", [](const GraphPtr& gr, const Array<std::int64_t>& n, double p) {
        return wrap(gr, gr->binomial(gr->constant(to_vector(n, "Graph.binomial: n")), p));
      }, py::arg("n"), py::arg("p"), "Binomial(n_i, p), one n_i per particle.")
      .def("binomial", [](const GraphPtr& gr, const Array<std::int64_t>& n, const Array<double>& p) {
        return wrap(gr, gr->binomial(gr->constant(to_vector(n, "Graph.binomial: n")), to_vector(p, "Graph.binomial: p")));
      }, py::arg("n"), py::arg("p"), "Binomial(n_i, p_i), one of each per particle.");
  g.def("bernoulli", [](const GraphPtr& gr, const PyContinuous& rho) { return wrap(gr, gr->bernoulli(rho.v)); },
        py::arg("p"), "Bernoulli(rho), rho ~ Beta.")
      .def("bernoulli", [](const GraphPtr& gr, double p) { return wrap(gr, gr->assume(Bernoulli(p))); }, py::arg("p"))
      .def("negative_binomial", [](const GraphPtr& gr, double r, const PyContinuous& rho) {
        return wrap(gr, gr->negative_binomial(r, rho.v));
      }, py::arg("r"), py::arg("p"), "NegativeBinomial(r, rho), rho ~ Beta.")
      .def("negative_binomial", [](const GraphPtr& gr, double r, double p) {
        return wrap(gr, gr->assume(NegativeBinomial(r, p)));
      }, py::arg("r"), py::arg("p"))
      .def("poisson", [](const GraphPtr& gr, const PyContinuous& lambda, double a) {
        return wrap(gr, gr->poisson(lambda.v, a));
      }, py::arg("rate"), py::arg("scale") = 1.0, "Poisson(scale * lambda), lambda ~ Gamma.")
      .def("poisson", [](const GraphPtr& gr, const PyVariable& state, const std::vector<PyVariable>& rates, double a) {
        return wrap(gr, gr->poisson(state.v, handles(rates), a));
      }, py::arg("state"), py::arg("rates"), py::arg("a") = 1.0,
         "Poisson(a * rates[state]): the random state (in 0 .. K-1) selects one of the K random counts `rates` (a "
         "list of Variables), kept exactly in one joint law with them. a >= 0 (DomainError), rates not empty "
         "(ShapeError); a state outside [0, K) or a negative rate with mass is a DomainError when the child is "
         "built. Poisson(a * x) of one variable x is g.assume(x, tally.ScaledPoisson(a)).")
      .def("poisson", [](const GraphPtr& gr, double rate, double a) { return wrap(gr, gr->assume(Poisson(a * rate))); },
           py::arg("rate"), py::arg("scale") = 1.0, "Poisson(scale * rate) with a constant rate (a root).")
      .def("categorical", [](const GraphPtr& gr, const PyContinuous& pi) { return wrap(gr, gr->categorical(pi.v)); },
           py::arg("p"), "Categorical(pi), pi ~ Dirichlet.")
      .def("categorical", [](const GraphPtr& gr, const Eigen::VectorXd& w) {
        return wrap(gr, gr->assume(Categorical(w)));
      }, py::arg("p"))
      .def("affine", [](const GraphPtr& gr, const PyVariable& x, std::int64_t a, std::int64_t c) {
        return wrap(gr, gr->affine(x.v, a, c));
      }, py::arg("x"), py::arg("a"), py::arg("c"), "a x + c (a != 0).")
      .def("add", [](const GraphPtr& gr, const PyVariable& x, const PyVariable& y) { return wrap(gr, gr->add(x.v, y.v)); },
           py::arg("x"), py::arg("y"))
      .def("subtract", [](const GraphPtr& gr, const PyVariable& x, const PyVariable& y) {
        return wrap(gr, gr->subtract(x.v, y.v));
      }, py::arg("x"), py::arg("y"));

  // ---- observations and queries ----
  g.def("observe", [](Graph& gr, const PyVariable& x, std::int64_t v) { return nogil([&] { return gr.observe(x.v, v); }); },
        py::arg("x"),
        py::arg("value"), "Observes x = value in every particle: the exact log-likelihoods, added to the log-weights.")
      .def("observe", [](Graph& gr, const PyVariable& x, double v) {
        if (!integral_int64(v))  // a float that is not a count: refused, not cast
          throw py::type_error("Graph.observe: the observed value " + number(v) + " is not an integer (counts are "
                               "integers)");
        const auto k = static_cast<std::int64_t>(v);
        return nogil([&] { return gr.observe(x.v, k); });
      }, py::arg("x"), py::arg("value"), "The same with an integer given as a float (3.0); TypeError for 2.5.")
      .def("observe", [](Graph& gr, const PyVariable& x, const PyVariable& v) {
        return nogil([&] { return gr.observe(x.v, v.v); });
      },
           py::arg("x"), py::arg("value"), "Observes x = v, v a variable of this graph (realized first).")
      .def("observe", [](Graph& gr, const PyVariable& x, const py::object& v) {
        const py::array a = py::array::ensure(v);  // an array, a list, ...
        if (!a) throw py::type_error("Graph.observe: the value must be an integer, an array of integers or a Variable");
        auto values = integer_values(a, "Graph.observe");
        return nogil([&] { return gr.observe(x.v, values); });
      }, py::arg("x"), py::arg("value"), "Observes x = value[i] in particle i (integers, or floats that are integers).")
      .def("in_support", [](const Graph& gr, const PyVariable& x, std::int64_t v) { return gr.in_support(x.v, v); },
           py::arg("x"), py::arg("value"), "False only when x = value is impossible in every particle.")
      .def("value", [](Graph& gr, const PyVariable& x) { return values_array(nogil([&] { return gr.value(x.v); })); },
           py::arg("x"),
           "x's value per particle (drawn from its exact posterior if needed): a NumPy int64 array.")
      .def("value", [](Graph& gr, const PyContinuous& x) {
        const auto v = gr.value(x.v);
        const auto k = v.empty() ? py::ssize_t{0} : static_cast<py::ssize_t>(v.front().size());
        py::array_t<double> out({static_cast<py::ssize_t>(v.size()), k});
        auto w = out.mutable_unchecked<2>();
        for (std::size_t i = 0; i < v.size(); ++i)
          for (py::ssize_t j = 0; j < k; ++j) w(py::ssize_t(i), j) = v[i](j);
        return out;
      }, py::arg("x"), "A continuous variable's value per particle: a P x K NumPy array (K = 1 for Beta, Gamma).")
      .def("values", [](Graph& gr, py::object x) {
        const auto& col = gr.values(x.cast<const PyVariable&>().v);
        return view_of(col, x);
      }, py::arg("x"), "x's values where the graph keeps them (a zero-copy Column; device memory on a CUDA graph).")
      .def("scalar_value", [](Graph& gr, const PyContinuous& x) { return to_numpy(gr.scalar_value(x.v)); }, py::arg("x"))
      .def("summarize", [](Graph& gr, const PyVariable& x, const std::vector<double>& p) { return gr.summarize(x.v, p); },
           py::arg("x"), py::arg("probabilities") = std::vector<double>{},
           "Weighted mean, ESS and weighted quantiles of x's values under the log-weights, where they live.")
      .def("summarize", [](Graph& gr, const std::vector<PyVariable>& xs, const std::vector<double>& p) {
        std::vector<runtime::Variable> vs;
        for (const PyVariable& x : xs) vs.push_back(x.v);
        return gr.summarize(std::span<const runtime::Variable>(vs), p);
      }, py::arg("xs"), py::arg("probabilities") = std::vector<double>{},
           "The summaries of several variables under the same log-weights, as a list in their order (one copy back "
           "for all of them on a CUDA graph).")
      .def("realize", [](Graph& gr, const PyVariable& x) { nogil([&] { gr.realize(x.v); }); }, py::arg("x"))
      .def("realize", [](Graph& gr, const PyContinuous& x) { nogil([&] { gr.realize(x.v); }); }, py::arg("x"))
      .def("marginal", [](Graph& gr, const PyVariable& x) { return nogil([&] { return gr.marginal(x.v); }); },
           py::arg("x"),
           "x's law in each particle: a list of Pmf.")
      .def("beta", [](Graph& gr, const PyContinuous& x) { return gr.beta(x.v); }, py::arg("x"))
      .def("gamma", [](Graph& gr, const PyContinuous& x) { return gr.gamma(x.v); }, py::arg("x"))
      .def("dirichlet", [](Graph& gr, const PyContinuous& x) { return gr.dirichlet(x.v); }, py::arg("x"))
      .def("touches", [](const Graph& gr, const std::vector<PyVariable>& o, const std::vector<PyVariable>& v,
                         runtime::DependenceMethod method) { return gr.touches(handles(o), handles(v), method); },
           py::arg("observations"), py::arg("variables"), py::arg("method") = runtime::DependenceMethod::automatic,
           "result[i]: the indices j of the variables that observing observations[i] can change.")
      .def("touches", [](const Graph& gr, const std::vector<PyVariable>& o, const std::vector<PyContinuous>& v,
                         runtime::DependenceMethod method) { return gr.touches(handles(o), handles(v), method); },
           py::arg("observations"), py::arg("parameters"), py::arg("method") = runtime::DependenceMethod::automatic);

  // ---- weights, resampling, memory ----
  g.def_property_readonly("log_weights", [](const Graph& gr) { return to_numpy(gr.log_weights()); },
                          "Each particle's accumulated log-weight (a NumPy copy).")
      .def("log_weight_column", [](py::object self) {
        return view_of(self.cast<const Graph&>().log_weight_column(), self);
      }, "The log-weights where they live (zero-copy Column): valid until the weights change (observe, resample, "
         "reset_log_weights may replace them); copy to keep.")
      .def("reset_log_weights", &Graph::reset_log_weights)
      .def("resample", [](Graph& gr, const Array<std::uint64_t>& a) {
        auto v = to_vector(a, "Graph.resample");
        std::vector<std::size_t> ancestors(v.begin(), v.end());
        nogil([&] { gr.resample(ancestors); });
      }, py::arg("ancestors"), "Particle i becomes a copy of particle ancestors[i], in every live variable.")
      // resample_by_weight(kind) first, as in C++: a Resampler in first place is the kind (the threshold overload
      // would read the enum's integer value as a threshold)
      .def("resample_by_weight", [report](Graph& gr, gpu::Resampler kind) {
        return report(nogil([&] { return gr.resample_by_weight(kind); }));
      }, py::arg("kind"), "Resamples by the log-weights with the given Resampler, always, and resets them.")
      .def("resample_by_weight", [report](Graph& gr, const py::object& threshold, gpu::Resampler kind) {
        const bool always = threshold.is_none();
        const double t = always ? 1.0 : threshold.cast<double>();
        return report(nogil([&] { return always ? gr.resample_by_weight(kind) : gr.resample_by_weight(t, kind); }));
      }, py::arg("threshold") = py::none(), py::arg("kind") = gpu::Resampler::systematic,
         "Resamples by the log-weights (always, or when ESS < threshold * P) and resets them.")
      .def("resample_groups", [group_report](Graph& gr, double threshold, gpu::Resampler kind) {
        return group_report(nogil([&] { return gr.resample_groups(threshold, kind); }));
      }, py::arg("threshold") = 1.0, py::arg("kind") = gpu::Resampler::systematic,
         "Resamples each group within itself (where its ESS < threshold * S; 1: every group, 0: none) and resets "
         "the resampled groups' log-weights.")
      .def("summarize_groups", [](Graph& gr, const PyVariable& x) {
        gpu::GroupMoments r = nogil([&] { return gr.summarize_groups(x.v); });
        return GroupMoments{to_numpy(r.mean.to_host()), to_numpy(r.variance.to_host()), to_numpy(r.ess.to_host())};
      }, py::arg("x"),
         "Each group's weighted mean and variance of x's values, and its ESS, under the current log-weights.")
      .def("memory", &Graph::memory)
      .def("bytes", &Graph::bytes)
      .def("stream", &Graph::stream, py::arg("i"), py::return_value_policy::reference_internal,
           "Particle i's RandomStream (for the engine's own draws).")
      .def_static("live_nodes", &Graph::live_nodes)
      .def("__repr__", [](const Graph& gr) {
        return "Graph(particles=" + std::to_string(gr.particles()) + ", device='" +
               (gr.backend() == gpu::Backend::cuda ? "cuda" : "cpu") + "')";
      });
}

}  // namespace tally::python
