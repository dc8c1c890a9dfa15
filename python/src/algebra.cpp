// Bindings of the exact algebra: sums, differences, affine maps, child laws, conditioning, closed forms, conjugates.
#include <sstream>

#include "common.hpp"
#include "tally/distributions.hpp"
#include "tally/runtime/conjugate.hpp"

namespace tally::python {

namespace {

template <class Law>
void bind_conditioned_law(py::module_& m, const char* name) {
  py::class_<ConditionedLaw<Law>>(m, name, "A closed-form conditioning: the posterior law (None when impossible) "
                                           "and the log-likelihood.")
      .def_readonly("posterior", &ConditionedLaw<Law>::posterior)
      .def_readonly("log_likelihood", &ConditionedLaw<Law>::log_likelihood);
}

}  // namespace

void bind_algebra(py::module_& m) {
  // ---- sums, differences, affine maps ----
  m.def("sum", py::overload_cast<const Pmf&, const Pmf&>(&sum), py::arg("x"), py::arg("y"),
        "The law of X + Y for independent X and Y (exact convolution).");
  m.def("sum", py::overload_cast<const SparsePmf&, const SparsePmf&>(&sum), py::arg("x"), py::arg("y"));
  m.def("sum", py::overload_cast<const Poisson&, const Poisson&>(&sum), py::arg("x"), py::arg("y"),
        "Closed form: Poisson(a) + Poisson(b) = Poisson(a + b).");
  m.def("sum", py::overload_cast<const Binomial&, const Binomial&>(&sum), py::arg("x"), py::arg("y"),
        "Closed form: Binomial(n, p) + Binomial(m, p) = Binomial(n + m, p).");
  m.def("sum", py::overload_cast<const NegativeBinomial&, const NegativeBinomial&>(&sum), py::arg("x"), py::arg("y"),
        "Closed form: NegativeBinomial(r, p) + NegativeBinomial(s, p) = NegativeBinomial(r + s, p).");
  m.def("negate", [](const Pmf& x) { return negate(x); }, py::arg("x"), "The law of -X.");
  m.def("difference", [](const Pmf& x, const Pmf& y) { return difference(x, y); }, py::arg("x"), py::arg("y"), "The law of X - Y for independent X and Y.");
  m.def("shift", [](const Pmf& x, std::int64_t c) { return shift(x, c); }, py::arg("x"), py::arg("c"), "The law of X + c.");
  m.def("affine", py::overload_cast<const Pmf&, std::int64_t, std::int64_t>(&affine), py::arg("x"), py::arg("a"),
        py::arg("c"), "The law of a X + c (a != 0), a SparsePmf.");
  m.def("affine", py::overload_cast<const SparsePmf&, std::int64_t, std::int64_t>(&affine), py::arg("x"),
        py::arg("a"), py::arg("c"));

  auto pmf = py::reinterpret_borrow<py::class_<Pmf>>(m.attr("Pmf"));  // operators on the class families.cpp made
  pmf.def("__add__", py::overload_cast<const Pmf&, const Pmf&>(&sum), py::is_operator())
      .def("__add__", [](const Pmf& x, std::int64_t c) { return shift(x, c); }, py::is_operator())
      .def("__radd__", [](const Pmf& x, std::int64_t c) { return shift(x, c); }, py::is_operator())
      .def("__sub__", [](const Pmf& x, const Pmf& y) { return difference(x, y); }, py::is_operator())
      .def("__sub__", [](const Pmf& x, std::int64_t c) { return shift(x, detail::checked_mul(c, -1, "Pmf.__sub__")); },
           py::is_operator())
      .def("__rsub__", [](const Pmf& x, std::int64_t c) { return shift(negate(x), c); }, py::is_operator())
      .def("__neg__", [](const Pmf& x) { return negate(x); }, py::is_operator())
      .def("__mul__", [](const Pmf& x, std::int64_t a) { return affine(x, a, 0); }, py::is_operator())
      .def("__rmul__", [](const Pmf& x, std::int64_t a) { return affine(x, a, 0); }, py::is_operator());

  // ---- child laws ----
  py::class_<Thinning>(m, "Thinning", "Y | X ~ Binomial(X, keep).")
      .def(py::init<double>(), py::arg("keep"))
      .def_readonly("keep", &Thinning::keep)
      .def("__repr__", [](const Thinning& k) { return "Thinning(" + number(k.keep) + ")"; });
  py::class_<ScaledPoisson>(m, "ScaledPoisson", "Y | X ~ Poisson(scale X).")
      .def(py::init<double>(), py::arg("scale"))
      .def_readonly("scale", &ScaledPoisson::scale)
      .def("__repr__", [](const ScaledPoisson& k) { return "ScaledPoisson(" + number(k.scale) + ")"; });
  py::class_<IndexedPoisson>(m, "IndexedPoisson", "Y | X ~ Poisson(rates[X]) (X in 0 .. K-1).")
      .def(py::init<Eigen::VectorXd>(), py::arg("rates"))
      .def_readonly("rates", &IndexedPoisson::rates);
  py::class_<MarkovStep>(m, "MarkovStep", "Y | X ~ Categorical(transition[X, :]) (rows sum to 1).")
      .def(py::init<Eigen::MatrixXd>(), py::arg("transition"))
      .def_readonly("transition", &MarkovStep::transition);
  // (lambdas, not overload_cast: they compile whatever defaulted arguments the C++ signatures gain)
  m.def("marginal", [](const Pmf& x, const Thinning& k) { return marginal(x, k); }, py::arg("x"), py::arg("law"),
        "The law of Y for Y | X ~ law.");
  m.def("marginal", py::overload_cast<const Pmf&, const ScaledPoisson&, const Truncation&>(&marginal), py::arg("x"),
        py::arg("law"), py::arg("truncation") = Truncation{});
  m.def("marginal", py::overload_cast<const Pmf&, const IndexedPoisson&, const Truncation&>(&marginal),
        py::arg("x"), py::arg("law"), py::arg("truncation") = Truncation{});
  m.def("marginal", py::overload_cast<const Pmf&, const MarkovStep&>(&marginal), py::arg("x"), py::arg("law"));
  m.def("marginal", py::overload_cast<const Binomial&, const Thinning&>(&marginal), py::arg("x"), py::arg("law"),
        "Closed form: Binomial(Binomial(n, p), q) = Binomial(n, p q).");
  m.def("marginal", py::overload_cast<const Poisson&, const Thinning&>(&marginal), py::arg("x"), py::arg("law"),
        "Closed form: Binomial(Poisson(a), q) = Poisson(a q).");

  // ---- conditioning ----
  py::class_<Conditioned>(m, "Conditioned",
                          "A conditioning's result: posterior (a Pmf, None when the observation is impossible), "
                          "log_likelihood and its error bound log_likelihood_error.")
      .def_readonly("posterior", &Conditioned::posterior)
      .def_readonly("log_likelihood", &Conditioned::log_likelihood)
      .def_readonly("log_likelihood_error", &Conditioned::log_likelihood_error)
      .def("__repr__", [](const Conditioned& c) {
        return std::string("Conditioned(posterior=") + (c.posterior ? "Pmf" : "None") +
               ", log_likelihood=" + number(c.log_likelihood) + ", log_likelihood_error=" +
               number(c.log_likelihood_error) + ")";
      });
  m.def("condition_on_sum", py::overload_cast<const Pmf&, const Pmf&, std::int64_t>(&condition_on_sum),
        py::arg("x"), py::arg("y"), py::arg("z"), "X | X + Y = z (one skew diagonal), and log P(X + Y = z).");
  m.def("condition_on_sum",
        py::overload_cast<const Poisson&, const Poisson&, std::int64_t>(&condition_on_sum), py::arg("x"),
        py::arg("y"), py::arg("z"), "Closed form: Poissons given their sum (Binomial).");
  m.def("condition_on_sum",
        py::overload_cast<const Binomial&, const Binomial&, std::int64_t>(&condition_on_sum), py::arg("x"),
        py::arg("y"), py::arg("z"), "Closed form: Binomials with equal p given their sum (Hypergeometric).");
  m.def("condition_on_difference",
        [](const Pmf& x, const Pmf& y, std::int64_t d) { return condition_on_difference(x, y, d); }, py::arg("x"), py::arg("y"), py::arg("d"),
        "X | X - Y = d, and log P(X - Y = d).");
  m.def("condition_affine",
        [](const Pmf& x, std::int64_t a, std::int64_t c, std::int64_t v) { return condition_affine(x, a, c, v); }, py::arg("x"), py::arg("a"), py::arg("c"), py::arg("v"),
        "X | a X + c = v.");
  m.def("condition", py::overload_cast<const Pmf&, const Thinning&, std::int64_t>(&condition), py::arg("x"),
        py::arg("law"), py::arg("y"), "X | Y = y for Y | X ~ law, and log P(Y = y).");
  m.def("condition", py::overload_cast<const Pmf&, const ScaledPoisson&, std::int64_t>(&condition), py::arg("x"),
        py::arg("law"), py::arg("y"));
  m.def("condition", py::overload_cast<const Pmf&, const MarkovStep&, std::int64_t>(&condition), py::arg("x"),
        py::arg("law"), py::arg("y"));
  m.def("condition", py::overload_cast<const Pmf&, const IndexedPoisson&, std::int64_t>(&condition), py::arg("x"),
        py::arg("law"), py::arg("y"));
  bind_conditioned_law<Binomial>(m, "ConditionedBinomial");
  bind_conditioned_law<Hypergeometric>(m, "ConditionedHypergeometric");

  m.def("weighted_bernoulli_sum",
        [](const Array<std::int64_t>& w, const Array<double>& p, int group) {
          const auto wv = to_vector(w, "weighted_bernoulli_sum: w");
          const auto pv = to_vector(p, "weighted_bernoulli_sum: p");
          return weighted_bernoulli_sum(wv, pv, group);
        },
        py::arg("w"), py::arg("p"), py::arg("group") = 24,
        "The exact law of sum_i w_i B_i, B_i ~ Bernoulli(p_i) independent, as a SparsePmf.");

  // ---- conjugate continuous parents ----
  using runtime::Beta;
  using runtime::Dirichlet;
  using runtime::Gamma;
  py::class_<Beta>(m, "Beta", "Beta(alpha, beta): a conjugate parent of Bernoulli, Binomial, NegativeBinomial counts.")
      .def(py::init<double, double>(), py::arg("alpha"), py::arg("beta"))
      .def_readonly("alpha", &Beta::alpha)
      .def_readonly("beta", &Beta::beta)
      .def("mean", [](const Beta& d) { return runtime::mean(d); })
      .def("__eq__", [](const Beta& a, const Beta& b) { return a.alpha == b.alpha && a.beta == b.beta; })
      .def("__repr__", [](const Beta& d) { return "Beta(" + number(d.alpha) + ", " + number(d.beta) + ")"; });
  py::class_<Gamma>(m, "Gamma", "Gamma(shape, rate): a conjugate parent of Poisson counts.")
      .def(py::init<double, double>(), py::arg("shape"), py::arg("rate"))
      .def_readonly("shape", &Gamma::shape)
      .def_readonly("rate", &Gamma::rate)
      .def("mean", [](const Gamma& d) { return runtime::mean(d); })
      .def("__eq__", [](const Gamma& a, const Gamma& b) { return a.shape == b.shape && a.rate == b.rate; })
      .def("__repr__", [](const Gamma& d) { return "Gamma(" + number(d.shape) + ", " + number(d.rate) + ")"; });
  py::class_<Dirichlet>(m, "Dirichlet", "Dirichlet(alpha): a conjugate parent of Categorical counts.")
      .def(py::init<Eigen::VectorXd>(), py::arg("alpha"))
      .def_readonly("alpha", &Dirichlet::alpha)
      .def("mean", [](const Dirichlet& d) { return runtime::mean(d); })
      .def("__repr__", [](const Dirichlet& d) { return "Dirichlet(" + std::to_string(d.alpha.size()) + " weights)"; });
  m.def("sample", py::overload_cast<const Beta&, RandomStream&>(&runtime::sample), py::arg("law"), py::arg("rng"));
  m.def("sample", py::overload_cast<const Gamma&, RandomStream&>(&runtime::sample), py::arg("law"), py::arg("rng"));
  m.def("sample", py::overload_cast<const Dirichlet&, RandomStream&>(&runtime::sample), py::arg("law"),
        py::arg("rng"));
  m.def("log_marginal_binomial", &runtime::log_marginal_binomial, py::arg("rho"), py::arg("n"), py::arg("k"));
  m.def("log_marginal_negative_binomial", &runtime::log_marginal_negative_binomial, py::arg("rho"), py::arg("r"),
        py::arg("k"));
  m.def("log_marginal_poisson", &runtime::log_marginal_poisson, py::arg("lam"), py::arg("x"));
  m.def("log_marginal_categorical", &runtime::log_marginal_categorical, py::arg("pi"), py::arg("x"));
  m.def("marginal_binomial", &runtime::marginal_binomial, py::arg("rho"), py::arg("n"),
        py::arg("truncation") = Truncation{});
  m.def("marginal_negative_binomial", &runtime::marginal_negative_binomial, py::arg("rho"), py::arg("r"),
        py::arg("truncation") = Truncation{});
  m.def("marginal_poisson", &runtime::marginal_poisson, py::arg("lam"), py::arg("truncation") = Truncation{});
  m.def("marginal_categorical", &runtime::marginal_categorical, py::arg("pi"));
  m.def("posterior_binomial", &runtime::posterior_binomial, py::arg("rho"), py::arg("n"), py::arg("k"));
  m.def("posterior_negative_binomial", &runtime::posterior_negative_binomial, py::arg("rho"), py::arg("r"),
        py::arg("k"));
  m.def("posterior_poisson", &runtime::posterior_poisson, py::arg("lam"), py::arg("x"));
  m.def("posterior_categorical", &runtime::posterior_categorical, py::arg("pi"), py::arg("x"));
}

}  // namespace tally::python
