// The C++ side of tests/python/test_equal_cpp.py: a few computations through the C++ API, printed as JSON, that the
// Python tests repeat through the bindings and require to be identical (same code, same numbers, same draws).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tally/distributions.hpp"
#include "tally/gpu/reachable_sums.hpp"
#include "tally/gpu/subset_sum_law.hpp"
#include "tally/gpu/transitive_closure.hpp"
#include "tally/runtime/graph.hpp"

using namespace tally;
using runtime::Graph;

namespace {

bool first_key = true;

std::string num(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}
template <class T>
std::string list(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ", ";
    if constexpr (std::is_floating_point_v<T>)
      s += num(v[i]);
    else
      s += std::to_string(v[i]);
  }
  return s + "]";
}
std::string list(const Eigen::VectorXd& v) { return list(std::vector<double>(v.data(), v.data() + v.size())); }

void key(const std::string& k, const std::string& value) {
  std::printf("%s\n  \"%s\": %s", first_key ? "{" : ",", k.c_str(), value.c_str());
  first_key = false;
}
void pmf(const std::string& k, const Pmf& d) {
  key(k, "{\"lo\": " + std::to_string(d.lo()) + ", \"log_scale\": " + num(d.log_scale()) +
             ", \"error_bound\": " + num(d.error_bound()) + ", \"weights\": " + list(d.weights()) + "}");
}

std::string quoted(const std::string& m) {
  std::string s = "\"";
  for (char ch : m) {
    if (ch == '"' || ch == '\\') s += '\\';
    s += ch;
  }
  return s + "\"";
}

/// The message of what `f` throws (the Python tests require the same message from the binding).
template <class F>
void error(const std::string& k, F f) {
  try {
    f();
    key(k, "null");
  } catch (const std::exception& e) {
    key(k, quoted(e.what()));
  }
}

template <class Family>
void family(const std::string& name, const Family& d, std::int64_t k, double p) {
  key(name, "[" + num(pdf(d, k)) + ", " + num(log_pdf(d, k)) + ", " + num(cdf(d, k)) + ", " +
                std::to_string(quantile(d, p)) + ", " + num(mean(d)) + ", " + num(variance(d)) + "]");
}

}  // namespace

int main() {
  // families: pdf, log_pdf, cdf at k; quantile at p; mean; variance (the same cases as test_equal_cpp.py)
  family("Binomial", Binomial(30, 0.35), 12, 0.7);
  family("Poisson", Poisson(7.5), 4, 0.3);
  family("Geometric", Geometric(0.2), 6, 0.9);
  family("NegativeBinomial", NegativeBinomial(3.5, 0.4), 5, 0.5);
  family("BetaBinomial", BetaBinomial(20, 2.5, 1.5), 13, 0.25);
  family("Bernoulli", Bernoulli(0.3), 1, 0.8);
  family("UniformInt", UniformInt(-3, 9), 2, 0.6);
  Eigen::VectorXd w(4);
  w << 1, 2, 3, 4;
  family("Categorical", Categorical(w), 2, 0.5);
  family("Hypergeometric", Hypergeometric(50, 20, 10), 4, 0.5);
  family("Delta", Delta(5), 5, 0.5);

  // algebra
  const Pmf x = to_pmf(Binomial(40, 0.3)), y = to_pmf(Poisson(6.0));
  pmf("sum", sum(x, y));
  pmf("difference", difference(x, y));
  pmf("thinning", marginal(x, Thinning(0.25)));
  const Conditioned c = condition_on_sum(x, y, 17);
  pmf("condition_on_sum", *c.posterior);
  key("condition_on_sum_log_likelihood", num(c.log_likelihood));
  const Conditioned t = condition(x, Thinning(0.25), 5);
  pmf("condition_thinning", *t.posterior);
  key("condition_thinning_log_likelihood", num(t.log_likelihood));

  // the engine: 16 particles, seed 7, on the CPU
  {
    Graph g(16, 7, runtime::Device::cpu);
    const auto n = g.assume(Binomial(30, 0.4));
    const auto k = g.assume(n, Thinning(0.5));
    const auto z = g.add(n, g.assume(Poisson(3.0)));
    const runtime::Observation o = g.observe(z, 15);
    key("graph_observe", list(o.log_likelihoods()));
    g.observe(k, 6);
    key("graph_log_weights", list(g.log_weights()));
    const auto r = g.resample_by_weight(1.0);
    key("graph_log_mean_weight", num(r.log_mean_weight));
    key("graph_ancestors", list(r.ancestors.to_host()));
    key("graph_value", list(g.value(n)));
    const auto rho = g.assume(runtime::Beta(2, 3));
    g.observe(g.binomial(std::int64_t{10}, rho), 7);
    std::vector<double> ab;
    for (const auto& b : g.beta(rho)) ab.push_back(b.alpha), ab.push_back(b.beta);
    key("graph_beta", list(ab));
  }

  // arrays
  const std::vector<std::int64_t> weights{3, 5, 8, 10};
  const std::vector<double> probs{0.1, 0.5, 0.25, 0.9};
  const auto law = gpu::subset_sum_law(weights, probs);
  key("subset_sum_values", list(law.values));
  key("subset_sum_weights", list(law.weights));
  key("subset_sum_log_scale", num(law.log_scale));
  key("reachable_sums", list(gpu::reachable_sums(weights, 30).totals()));
  gpu::BitMatrix a(6);
  a.set(0, 1), a.set(1, 2), a.set(2, 3), a.set(4, 5), a.set(0, 4);
  const gpu::BitMatrix closure = gpu::transitive_closure(a);
  std::vector<std::int64_t> pairs;
  for (std::size_t i = 0; i < 6; ++i)
    for (std::size_t j = 0; j < 6; ++j)
      if (closure.get(i, j)) pairs.push_back(std::int64_t(6 * i + j));
  key("closure", list(pairs));

  // errors: the messages the bindings must pass on unchanged
  error("error_domain", [] { Binomial(10, 1.5); });
  error("error_shape", [] { Pmf(0, Eigen::VectorXd::Zero(3)); });
  error("error_overflow", [] { shift(to_pmf(Binomial(2, 0.5)), INT64_MAX); });
  error("error_usage", [] {
    Graph g;
    const auto v = g.constant(3);
    g.observe(v, 3);
    g.observe(v, 3);
  });
  std::printf("\n}\n");
  return 0;
}
