// Bindings of the families (pdf, cdf, quantile, mean, variance, to_pmf), Pmf and SparsePmf with NumPy, sampling.
#include <cmath>
#include <limits>
#include <sstream>

#include "common.hpp"
#include "tally/distributions.hpp"

namespace tally::python {

namespace {

/// The free functions every law has (pdf, log_pdf, cdf, quantile vectorized over NumPy arrays; support, mean,
/// variance), as methods of `c` and as overloads of the module's functions of the same names.
// (Law& and not const Law&: pybind11 2.10's vectorize cannot pass a const reference through.)
//
// pdf, log_pdf and cdf take integers exactly (an int, an integer array) and floats by their meaning, never cast: NaN
// gives NaN, a number that is not an integer has no mass (pdf 0, log_pdf -inf) and the cdf of its floor, and past
// the int64 range the cdf is 0 or 1. The overloads are tried in order: a Python int (exact), an array of floats or a
// float, an array of integers (exact).
template <class Law, class Class>
void bind_law_functions(py::module_& m, Class& c) {
  const auto pdf_one = [](Law& d, std::int64_t k) { return pdf(d, k); };
  const auto log_pdf_one = [](Law& d, std::int64_t k) { return log_pdf(d, k); };
  const auto cdf_one = [](Law& d, std::int64_t k) { return cdf(d, k); };
  auto f_pdf_real = py::vectorize([](Law& d, double x) {
    return std::isnan(x) ? x : integral_int64(x) ? pdf(d, static_cast<std::int64_t>(x)) : 0.0;
  });
  auto f_log_pdf_real = py::vectorize([](Law& d, double x) {
    return std::isnan(x) ? x : integral_int64(x) ? log_pdf(d, static_cast<std::int64_t>(x)) : -HUGE_VAL;
  });
  auto f_cdf_real = py::vectorize([](Law& d, double x) {
    if (std::isnan(x)) return x;  // NaN
    if (x >= int64_end) return 1.0;
    if (x < -int64_end) return 0.0;
    return cdf(d, static_cast<std::int64_t>(std::floor(x)));
  });
  auto f_pdf = py::vectorize(pdf_one);
  auto f_log_pdf = py::vectorize(log_pdf_one);
  auto f_cdf = py::vectorize(cdf_one);
  auto f_quantile = py::vectorize([](Law& d, double p) { return quantile(d, p); });
  auto f_support = [](const Law& d) { return support(d); };
  auto f_mean = [](const Law& d) { return mean(d); };
  auto f_variance = [](const Law& d) { return variance(d); };
  c.def("pdf", pdf_one, py::arg("k"), "P(X = k) (k an integer or an array of them; a float that is not an integer "
                                     "has no mass, NaN gives NaN).")
      .def("pdf", f_pdf_real, py::arg("k"))
      .def("pdf", f_pdf, py::arg("k"))
      .def("log_pdf", log_pdf_one, py::arg("k"), "log P(X = k), -inf outside the support.")
      .def("log_pdf", f_log_pdf_real, py::arg("k"))
      .def("log_pdf", f_log_pdf, py::arg("k"))
      .def("cdf", cdf_one, py::arg("k"), "P(X <= k) (for a float, P(X <= floor(k)); NaN gives NaN).")
      .def("cdf", f_cdf_real, py::arg("k"))
      .def("cdf", f_cdf, py::arg("k"))
      .def("quantile", f_quantile, py::arg("prob"), "The smallest k with cdf(k) >= prob.")
      .def("support", f_support, "(lo, hi): the first and last points of positive mass.")
      .def("mean", f_mean)
      .def("variance", f_variance);
  m.def("pdf", pdf_one, py::arg("law"), py::arg("k"));
  m.def("pdf", f_pdf_real, py::arg("law"), py::arg("k"));
  m.def("pdf", f_pdf, py::arg("law"), py::arg("k"));
  m.def("log_pdf", log_pdf_one, py::arg("law"), py::arg("k"));
  m.def("log_pdf", f_log_pdf_real, py::arg("law"), py::arg("k"));
  m.def("log_pdf", f_log_pdf, py::arg("law"), py::arg("k"));
  m.def("cdf", cdf_one, py::arg("law"), py::arg("k"));
  m.def("cdf", f_cdf_real, py::arg("law"), py::arg("k"));
  m.def("cdf", f_cdf, py::arg("law"), py::arg("k"));
  m.def("quantile", f_quantile, py::arg("law"), py::arg("prob"));
  m.def("support", f_support, py::arg("law"));
  m.def("mean", f_mean, py::arg("law"));
  m.def("variance", f_variance, py::arg("law"));
}

/// A family: the law functions, to_pmf(truncation) as a method and a module function.
template <class Family>
py::class_<Family> family(py::module_& m, const char* name, const char* doc) {
  py::class_<Family> c(m, name, doc);
  bind_law_functions<Family>(m, c);
  auto f_to_pmf = [](const Family& d, const Truncation& t) { return to_pmf(d, t); };
  c.def("to_pmf", f_to_pmf, py::arg("truncation") = Truncation{},
        "The dense Pmf (unbounded families truncated at truncation.tolerance; the dropped mass is its error bound).");
  m.def("to_pmf", f_to_pmf, py::arg("law"), py::arg("truncation") = Truncation{});
  return c;
}

}  // namespace

void bind_families(py::module_& m) {
  py::enum_<Truncation::JointBatches>(m, "JointBatches",
                                     "Where a Graph computes a joint operation when its particles hold different "
                                     "joint tables (Truncation.joint_batches).")
      .value("automatic", Truncation::JointBatches::automatic)
      .value("host", Truncation::JointBatches::host)
      .value("batched", Truncation::JointBatches::batched);
  py::class_<Truncation>(m, "Truncation",
                         "How an unbounded family becomes a finite pmf: the tail mass that may be dropped "
                         "(tolerance), the largest dense size (max_size) and the largest joint law of coupled variables "
                         "a Graph keeps (max_joint_bytes).")
      .def(py::init([](double tolerance, std::int64_t max_size, std::int64_t max_joint_bytes, std::int64_t max_work) {
             Truncation t{tolerance, max_size};
             t.max_joint_bytes = max_joint_bytes;
             t.max_work = max_work;
             return t;
           }),
           py::arg("tolerance") = Truncation{}.tolerance, py::arg("max_size") = Truncation{}.max_size,
           py::arg("max_joint_bytes") = Truncation{}.max_joint_bytes, py::arg("max_work") = Truncation{}.max_work)
      .def_readwrite("tolerance", &Truncation::tolerance)
      .def_readwrite("max_size", &Truncation::max_size)
      .def_readwrite("max_work", &Truncation::max_work,
                     "the most multiply-adds one marginal may take (an OverflowError past it, raised at once)")
      .def_readwrite("max_joint_bytes", &Truncation::max_joint_bytes,
                     "largest joint law of coupled variables a Graph forms, in bytes over all particles (0: none)")
      .def_readwrite("track_dropped", &Truncation::track_dropped,
                     "whether joint laws keep the mass truncation cuts where it was cut (tight error bounds, more work)")
      .def_readwrite("joint_batches", &Truncation::joint_batches,
                     "where particles' different joint tables are computed: automatic (one batch of device kernels on "
                     "a CUDA graph, past joint_batch_entries entries), host (one after another) or batched (always a "
                     "batch: the CPU reference loops on a host graph)")
      .def_readwrite("joint_batch_entries", &Truncation::joint_batch_entries,
                     "the entries the distinct tables must hold together before automatic batches them")
      .def("__repr__", [](const Truncation& t) {
        return "Truncation(tolerance=" + number(t.tolerance) + ", max_size=" + std::to_string(t.max_size) + ")";
      });

  py::class_<Pmf> pmf(m, "Pmf",
                      "A measure over the integers [lo, hi] stored densely: mu(lo + i) = weights[i] * exp(log_scale), "
                      "weights rescaled to a largest of 1; error_bound bounds the L1 distance to the exact measure "
                      "relative to its mass.");
  pmf.def(py::init([](std::int64_t lo, const Array<double>& weights, double log_scale, double error_bound) {
            const std::vector<double> w = to_vector(weights, "Pmf");
            return Pmf(lo, Eigen::Map<const Eigen::VectorXd>(w.data(), Eigen::Index(w.size())), log_scale,
                       error_bound);
          }),
          py::arg("lo"), py::arg("weights"), py::arg("log_scale") = 0.0, py::arg("error_bound") = no_error,
          "mu(lo + i) = weights[i] * exp(log_scale) (weights: a 1-D array, non-negative, not all zero).")
      .def_static("from_log", &Pmf::from_log, py::arg("lo"), py::arg("log_weights"), py::arg("error_bound") = no_error,
                  "mu(lo + i) = exp(log_weights[i]) (entries may be -inf).")
      .def_static("point", &Pmf::point, py::arg("k"), "The point mass at k.")
      .def_property_readonly("lo", &Pmf::lo)
      .def_property_readonly("hi", &Pmf::hi)
      .def_property_readonly("weights", &Pmf::weights, py::return_value_policy::reference_internal,
                             "The stored weights (largest 1): a read-only NumPy view, no copy.")
      .def_property_readonly("log_scale", &Pmf::log_scale)
      .def_property_readonly("error_bound", &Pmf::error_bound)
      .def_property_readonly("values", [](const Pmf& d) {
        std::vector<std::int64_t> v(static_cast<std::size_t>(d.size()));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = d.lo() + static_cast<std::int64_t>(i);
        return to_numpy(std::move(v));
      }, "The integers lo .. hi (a NumPy array).")
      .def("__len__", [](const Pmf& d) { return d.size(); })
      .def("log_mass", &Pmf::log_mass)
      .def("probabilities", &Pmf::probabilities, "mu(k) for k in lo .. hi (a NumPy array; below 1e-308 underflows).")
      .def("log_probabilities", [](const Pmf& d) {
        Eigen::VectorXd l = d.weights().array().log() + d.log_scale();
        return l;
      }, "log mu(k) for k in lo .. hi (-inf for zero weights).")
      .def("normalized", &Pmf::normalized)
      .def("with_error_bound", &Pmf::with_error_bound, py::arg("bound"))
      .def("__repr__", [](const Pmf& d) {
        return "Pmf(lo=" + std::to_string(d.lo()) + ", hi=" + std::to_string(d.hi()) +
               ", log_scale=" + number(d.log_scale()) + ", error_bound=" + number(d.error_bound()) + ")";
      });
  bind_law_functions<Pmf>(m, pmf);

  py::class_<SparsePmf> sparse(m, "SparsePmf",
                               "A measure on sorted points with gaps: mu(points[i]) = weights[i] * exp(log_scale).");
  sparse.def(py::init<IntVector, Eigen::VectorXd, double, double>(), py::arg("points"), py::arg("weights"),
             py::arg("log_scale") = 0.0, py::arg("error_bound") = no_error)
      .def_static("from_log", &SparsePmf::from_log, py::arg("points"), py::arg("log_weights"),
                  py::arg("error_bound") = no_error)
      .def_property_readonly("points", &SparsePmf::points, py::return_value_policy::reference_internal)
      .def_property_readonly("weights", &SparsePmf::weights, py::return_value_policy::reference_internal)
      .def_property_readonly("log_scale", &SparsePmf::log_scale)
      .def_property_readonly("error_bound", &SparsePmf::error_bound)
      .def("__len__", [](const SparsePmf& d) { return d.size(); })
      .def("log_mass", &SparsePmf::log_mass)
      .def("normalized", &SparsePmf::normalized)
      .def("to_dense", [](const SparsePmf& d, const Truncation& t) { return to_dense(d, t); },
           py::arg("truncation") = Truncation{})
      .def("__repr__", [](const SparsePmf& d) {
        return "SparsePmf(points=" + std::to_string(d.size()) + ", log_scale=" + number(d.log_scale()) +
               ", error_bound=" + number(d.error_bound()) + ")";
      });
  bind_law_functions<SparsePmf>(m, sparse);
  m.def("to_sparse", [](const Pmf& d) { return to_sparse(d); }, py::arg("pmf"));
  m.def("to_dense", [](const SparsePmf& d, const Truncation& t) { return to_dense(d, t); }, py::arg("sparse"),
        py::arg("truncation") = Truncation{});
  pmf.def("to_sparse", [](const Pmf& d) { return to_sparse(d); });

  family<Bernoulli>(m, "Bernoulli", "Bernoulli(p): 1 with probability p, else 0.")
      .def(py::init<double>(), py::arg("p"))
      .def_property_readonly("success", &Bernoulli::success)
      .def("__repr__", [](const Bernoulli& d) { return "Bernoulli(" + number(d.success()) + ")"; });
  family<Binomial>(m, "Binomial", "Binomial(n, p): successes in n trials of probability p.")
      .def(py::init<std::int64_t, double>(), py::arg("n"), py::arg("p"))
      .def_property_readonly("trials", &Binomial::trials)
      .def_property_readonly("success", &Binomial::success)
      .def("__repr__", [](const Binomial& d) {
        return "Binomial(" + std::to_string(d.trials()) + ", " + number(d.success()) + ")";
      });
  family<Poisson>(m, "Poisson", "Poisson(rate).")
      .def(py::init<double>(), py::arg("rate"))
      .def_property_readonly("rate", &Poisson::rate)
      .def("__repr__", [](const Poisson& d) { return "Poisson(" + number(d.rate()) + ")"; });
  family<Geometric>(m, "Geometric", "Geometric(p): failures before the first success, on 0, 1, ...")
      .def(py::init<double>(), py::arg("p"))
      .def_property_readonly("success", &Geometric::success)
      .def("__repr__", [](const Geometric& d) { return "Geometric(" + number(d.success()) + ")"; });
  family<NegativeBinomial>(m, "NegativeBinomial", "NegativeBinomial(r, p): failures before the r-th success.")
      .def(py::init<double, double>(), py::arg("r"), py::arg("p"))
      .def_property_readonly("successes", &NegativeBinomial::successes)
      .def_property_readonly("success", &NegativeBinomial::success)
      .def("__repr__", [](const NegativeBinomial& d) {
        return "NegativeBinomial(" + number(d.successes()) + ", " + number(d.success()) + ")";
      });
  family<BetaBinomial>(m, "BetaBinomial", "BetaBinomial(n, alpha, beta).")
      .def(py::init<std::int64_t, double, double>(), py::arg("n"), py::arg("alpha"), py::arg("beta"))
      .def_property_readonly("trials", &BetaBinomial::trials)
      .def_property_readonly("alpha", &BetaBinomial::alpha)
      .def_property_readonly("beta", &BetaBinomial::beta)
      .def("__repr__", [](const BetaBinomial& d) {
        return "BetaBinomial(" + std::to_string(d.trials()) + ", " + number(d.alpha()) + ", " + number(d.beta()) +
               ")";
      });
  family<Categorical>(m, "Categorical", "Categorical(w): k in 0 .. K-1 with probability w[k] / sum(w).")
      .def(py::init<Eigen::VectorXd>(), py::arg("weights"))
      .def_property_readonly("probabilities", &Categorical::probabilities, py::return_value_policy::reference_internal)
      .def("__repr__", [](const Categorical& d) {
        return "Categorical(" + std::to_string(d.probabilities().size()) + " categories)";
      });
  family<UniformInt>(m, "UniformInt", "UniformInt(lo, hi): each integer of [lo, hi] equally likely.")
      .def(py::init<std::int64_t, std::int64_t>(), py::arg("lo"), py::arg("hi"))
      .def_property_readonly("lo", &UniformInt::lo)
      .def_property_readonly("hi", &UniformInt::hi)
      .def("__repr__", [](const UniformInt& d) {
        return "UniformInt(" + std::to_string(d.lo()) + ", " + std::to_string(d.hi()) + ")";
      });
  family<Hypergeometric>(m, "Hypergeometric",
                         "Hypergeometric(population, successes, draws): successes among draws without replacement.")
      .def(py::init<std::int64_t, std::int64_t, std::int64_t>(), py::arg("population"), py::arg("successes"),
           py::arg("draws"))
      .def_property_readonly("population", &Hypergeometric::population)
      .def_property_readonly("successes", &Hypergeometric::successes)
      .def_property_readonly("draws", &Hypergeometric::draws)
      .def("__repr__", [](const Hypergeometric& d) {
        return "Hypergeometric(" + std::to_string(d.population()) + ", " + std::to_string(d.successes()) + ", " +
               std::to_string(d.draws()) + ")";
      });
  family<Delta>(m, "Delta", "Delta(v): the point mass at v.")
      .def(py::init<std::int64_t>(), py::arg("value"))
      .def_property_readonly("value", &Delta::value)
      .def("__repr__", [](const Delta& d) { return "Delta(" + std::to_string(d.value()) + ")"; });

  py::class_<RandomStream>(m, "RandomStream",
                           "A counter-based (Philox) stream of uniforms that the GPU reproduces: (seed, stream).")
      .def(py::init<std::uint64_t, std::uint64_t>(), py::arg("seed"), py::arg("stream") = 0)
      .def("uniform", &RandomStream::uniform)
      .def_property_readonly("seed", &RandomStream::seed)
      .def_property_readonly("stream", &RandomStream::stream)
      .def_property_readonly("counter", &RandomStream::counter)
      .def("__repr__", [](const RandomStream& r) {
        return "RandomStream(seed=" + std::to_string(r.seed()) + ", stream=" + std::to_string(r.stream()) +
               ", counter=" + std::to_string(r.counter()) + ")";
      });
  m.def("sample", py::overload_cast<const Pmf&, RandomStream&>(&sample), py::arg("law"), py::arg("rng"),
        "One draw by inverse cdf.");
  m.def("sample", py::overload_cast<const SparsePmf&, RandomStream&>(&sample), py::arg("law"), py::arg("rng"));
  m.def("sample", py::overload_cast<const Pmf&, RandomStream&, Eigen::Index>(&sample), py::arg("law"),
        py::arg("rng"), py::arg("count"), "count draws (a NumPy int64 array).");
  m.def("inverse_cdf", py::vectorize([](Pmf& d, double u) { return inverse_cdf(d, u); }), py::arg("law"),
        py::arg("u"));
  m.def("inverse_cdf", py::vectorize([](SparsePmf& d, double u) { return inverse_cdf(d, u); }),
        py::arg("law"), py::arg("u"));
}

}  // namespace tally::python
