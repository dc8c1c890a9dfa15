"""The bindings give the C++ API's results exactly: python/reference.cpp runs the same computations in C++."""

import numpy as np
import pytest

import tally


def family_row(law, k, p):
    return [law.pdf(k), law.log_pdf(k), law.cdf(k), law.quantile(p), law.mean(), law.variance()]


def assert_pmf(ref, d):
    assert d.lo == ref["lo"] and d.log_scale == ref["log_scale"] and d.error_bound == ref["error_bound"]
    np.testing.assert_array_equal(d.weights, ref["weights"])


def test_families(cpp_reference):
    r = cpp_reference
    assert family_row(tally.Binomial(30, 0.35), 12, 0.7) == r["Binomial"]
    assert family_row(tally.Poisson(7.5), 4, 0.3) == r["Poisson"]
    assert family_row(tally.Geometric(0.2), 6, 0.9) == r["Geometric"]
    assert family_row(tally.NegativeBinomial(3.5, 0.4), 5, 0.5) == r["NegativeBinomial"]
    assert family_row(tally.BetaBinomial(20, 2.5, 1.5), 13, 0.25) == r["BetaBinomial"]
    assert family_row(tally.Bernoulli(0.3), 1, 0.8) == r["Bernoulli"]
    assert family_row(tally.UniformInt(-3, 9), 2, 0.6) == r["UniformInt"]
    assert family_row(tally.Categorical(np.array([1.0, 2.0, 3.0, 4.0])), 2, 0.5) == r["Categorical"]
    assert family_row(tally.Hypergeometric(50, 20, 10), 4, 0.5) == r["Hypergeometric"]
    assert family_row(tally.Delta(5), 5, 0.5) == r["Delta"]


def test_algebra(cpp_reference):
    r = cpp_reference
    x, y = tally.Binomial(40, 0.3).to_pmf(), tally.Poisson(6.0).to_pmf()
    assert_pmf(r["sum"], tally.sum(x, y))
    assert_pmf(r["difference"], tally.difference(x, y))
    assert_pmf(r["thinning"], tally.marginal(x, tally.Thinning(0.25)))
    c = tally.condition_on_sum(x, y, 17)
    assert_pmf(r["condition_on_sum"], c.posterior)
    assert c.log_likelihood == r["condition_on_sum_log_likelihood"]
    t = tally.condition(x, tally.Thinning(0.25), 5)
    assert_pmf(r["condition_thinning"], t.posterior)
    assert t.log_likelihood == r["condition_thinning_log_likelihood"]


def test_graph_same_draws(cpp_reference):
    r = cpp_reference
    g = tally.Graph(16, 7, "cpu")
    n = g.assume(tally.Binomial(30, 0.4))
    k = g.assume(n, tally.Thinning(0.5))
    z = n + g.assume(tally.Poisson(3.0))
    assert list(g.observe(z, 15).log_likelihoods) == r["graph_observe"]
    g.observe(k, 6)
    assert list(g.log_weights) == r["graph_log_weights"]
    res = g.resample_by_weight(1.0)
    assert res.log_mean_weight == r["graph_log_mean_weight"]
    assert list(res.ancestors.numpy()) == r["graph_ancestors"]
    assert list(g.value(n)) == r["graph_value"]
    rho = g.assume(tally.Beta(2, 3))
    g.observe(g.binomial(10, rho), 7)
    ab = [v for b in g.beta(rho) for v in (b.alpha, b.beta)]
    assert ab == r["graph_beta"]


def test_arrays(cpp_reference):
    r = cpp_reference
    w, p = np.array([3, 5, 8, 10]), np.array([0.1, 0.5, 0.25, 0.9])
    law = tally.subset_sum_law(w, p)
    assert list(law["values"]) == r["subset_sum_values"]
    assert list(law["weights"]) == r["subset_sum_weights"]
    assert law["log_scale"] == r["subset_sum_log_scale"]
    assert list(tally.reachable_sums(w, 30).totals()) == r["reachable_sums"]
    a = tally.BitMatrix(6)
    for i, j in [(0, 1), (1, 2), (2, 3), (4, 5), (0, 4)]:
        a.set(i, j)
    c = tally.transitive_closure(a).to_numpy()
    assert [6 * i + j for i in range(6) for j in range(6) if c[i, j]] == r["closure"]


@pytest.mark.parametrize("name,make", [
    ("error_domain", lambda: tally.Binomial(10, 1.5)),
    ("error_shape", lambda: tally.Pmf(0, np.zeros(3))),
    ("error_overflow", lambda: tally.shift(tally.Binomial(2, 0.5).to_pmf(), 2**63 - 1)),
])
def test_same_error_messages(cpp_reference, name, make):
    with pytest.raises(tally.Error) as e:
        make()
    assert str(e.value) == cpp_reference[name]


def test_same_usage_message(cpp_reference):
    g = tally.Graph()
    v = g.constant(3)
    g.observe(v, 3)
    with pytest.raises(tally.UsageError) as e:
        g.observe(v, 3)
    assert str(e.value) == cpp_reference["error_usage"]
