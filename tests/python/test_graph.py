"""The engine from Python: assume (numbers, per-particle arrays, variables), observe, value, marginal, conjugate
parents, exactness and strict mode, resampling, log-weights, zero-copy columns (NumPy, DLPack), dependence."""

import gc
import math

import numpy as np
import pytest
import scipy.stats as st

import tally


def test_observe_a_sum_is_exact():
    g = tally.Graph()
    x = g.assume(tally.Binomial(20, 0.4))
    y = g.assume(tally.Poisson(3.0))
    z = x + y
    o = g.observe(z, 10)
    ref = np.log(sum(st.binom(20, 0.4).pmf(k) * st.poisson(3).pmf(10 - k) for k in range(11)))
    assert o.log_likelihoods.shape == (1,) and o[0] == pytest.approx(ref, rel=1e-12)
    assert o.exact and o.exactness.exact and o.exactness.describe().startswith("exact") and len(o) == 1
    assert np.asarray(o)[0] == o[0] and "Observation(1 particles" in repr(o)
    assert g.log_weights[0] == o[0]
    # the posterior of x given x + y = 10
    post = g.marginal(x)[0].normalized()
    k = np.arange(0, 11)
    joint = st.binom(20, 0.4).pmf(k) * st.poisson(3).pmf(10 - k)
    np.testing.assert_allclose(post.pdf(k), joint / joint.sum(), rtol=1e-11)
    v = g.value(x)
    assert v.dtype == np.int64 and 0 <= v[0] <= 10 and g.value(y)[0] == 10 - v[0]


def test_thinning_operators_and_constants():
    g = tally.Graph(4, 3, "cpu")
    assert g.particles == 4 and g.device == "cpu" and g.backend == tally.Backend.cpu and "Graph(" in repr(g)
    x = g.assume(tally.Binomial(100, 0.3))
    y = g.assume(x, tally.Thinning(0.1))
    assert isinstance(y, tally.Variable) and y.graph is not None and not y.empty
    w = g.binomial(x, 0.1)  # the same law
    o = g.observe(2 * x + 1, 61)
    np.testing.assert_allclose(o.log_likelihoods, st.binom(100, 0.3).logpmf(30), rtol=1e-12)
    assert np.all(g.value(x) == 30)
    assert np.all(g.value(y) <= 30) and np.all(g.value(w) <= 30)
    c = g.constant(np.array([1, 2, 3, 4]))
    np.testing.assert_array_equal(g.value(c + 10), [11, 12, 13, 14])
    np.testing.assert_array_equal(g.value(10 - c), [9, 8, 7, 6])
    np.testing.assert_array_equal(g.value(-c), [-1, -2, -3, -4])
    np.testing.assert_array_equal(g.value(c - 1), [0, 1, 2, 3])
    np.testing.assert_array_equal(g.value(c * 3), [3, 6, 9, 12])
    np.testing.assert_array_equal(g.value(g.affine(c, 2, 1)), [3, 5, 7, 9])
    np.testing.assert_array_equal(g.value(g.add(c, g.constant(1))), [2, 3, 4, 5])
    np.testing.assert_array_equal(g.value(g.subtract(c, g.constant(1))), [0, 1, 2, 3])
    np.testing.assert_array_equal(g.value(g.constant(7)), [7] * 4)


def test_per_particle_parameters():
    P = 5
    g = tally.Graph(P, 1, "cpu")
    n = np.array([10, 20, 30, 40, 50])
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    k = g.binomial(n, p)  # Binomial(n_i, p_i)
    o = g.observe(k, np.array([1, 4, 9, 16, 25]))
    np.testing.assert_allclose(o.log_likelihoods, st.binom(n, p).logpmf([1, 4, 9, 16, 25]), rtol=1e-12)
    k2 = g.binomial(n, 0.5)
    np.testing.assert_allclose(g.observe(k2, 5).log_likelihoods, st.binom(n, 0.5).logpmf(5), rtol=1e-12)
    x = g.constant(n)
    k3 = g.binomial(x, p)
    np.testing.assert_allclose(g.observe(k3, 3).log_likelihoods, st.binom(n, p).logpmf(3), rtol=1e-12)
    q = tally.hazard_probabilities(g.values(x), 0.01)  # a Column where the graph keeps x
    np.testing.assert_allclose(q.numpy(), 1 - np.exp(-0.01 * n), rtol=1e-15)
    np.testing.assert_allclose(tally.hazard_probabilities(n, 0.01), 1 - np.exp(-0.01 * n), rtol=1e-15)
    k4 = g.binomial(x, q)
    np.testing.assert_allclose(g.observe(k4, 0).log_likelihoods, st.binom(n, q.numpy()).logpmf(0), rtol=1e-12)
    r = g.binomial(7, 0.5)
    assert g.observe(r, 3)[0] == pytest.approx(st.binom(7, 0.5).logpmf(3), rel=1e-13)


def test_families_as_roots_and_children():
    g = tally.Graph()
    laws = [tally.Bernoulli(0.3), tally.Binomial(5, 0.5), tally.Poisson(2.0), tally.Geometric(0.5),
            tally.NegativeBinomial(2.0, 0.5), tally.BetaBinomial(5, 1.0, 2.0), tally.Categorical(np.ones(3)),
            tally.UniformInt(0, 4), tally.Hypergeometric(10, 5, 3), tally.Delta(1), tally.Binomial(3, 0.5).to_pmf()]
    for law in laws:
        x = g.assume(law)
        assert g.observe(x, 1)[0] == pytest.approx(law.log_pdf(1), rel=1e-12)
    x = g.assume(tally.Binomial(5, 0.5))
    y = g.assume(x, tally.ScaledPoisson(2.0))  # Poisson(2 x)
    assert g.observe(y, 3)[0] == pytest.approx(
        np.log(sum(st.binom(5, 0.5).pmf(k) * st.poisson(2 * k).pmf(3) for k in range(6))), rel=1e-12)
    s = g.assume(tally.Bernoulli(0.5))
    e = g.assume(s, tally.IndexedPoisson(np.array([1.0, 4.0])))
    assert g.observe(e, 2)[0] == pytest.approx(np.log(0.5 * st.poisson(1).pmf(2) + 0.5 * st.poisson(4).pmf(2)))
    m = g.assume(g.assume(tally.Bernoulli(0.5)), tally.MarkovStep(np.array([[0.9, 0.1], [0.3, 0.7]])))
    assert g.observe(m, 1)[0] == pytest.approx(np.log(0.4))
    assert g.observe(g.poisson(4.0), 2)[0] == pytest.approx(st.poisson(4).logpmf(2))
    assert g.observe(g.bernoulli(0.25), 1)[0] == pytest.approx(np.log(0.25))
    assert g.observe(g.negative_binomial(2.0, 0.5), 1)[0] == pytest.approx(st.nbinom(2, 0.5).logpmf(1))
    assert g.observe(g.categorical(np.array([1.0, 3.0])), 1)[0] == pytest.approx(np.log(0.75))
    assert not g.in_support(g.assume(tally.Binomial(3, 0.5)) + g.assume(tally.Binomial(3, 0.5)), 7)


def test_conjugate_parents():
    g = tally.Graph(3, 2, "cpu")
    rho = g.assume(tally.Beta(2, 2))
    assert isinstance(rho, tally.Continuous) and "Continuous" in repr(rho)
    o = g.observe(g.binomial(10, rho), 7)
    np.testing.assert_allclose(o.log_likelihoods, st.betabinom(10, 2, 2).logpmf(7), rtol=1e-12)
    assert all(b == tally.Beta(9, 5) for b in g.beta(rho))
    g.observe(g.bernoulli(rho), 1)
    assert g.beta(rho)[0] == tally.Beta(10, 5)
    g.observe(g.binomial(np.array([1, 2, 3]), rho), 1)
    assert [b.beta for b in g.beta(rho)] == [5, 6, 7]
    g.observe(g.negative_binomial(1.0, rho), 0)
    lam = g.assume(tally.Gamma(3.0, 2.0))
    o = g.observe(g.poisson(lam, 1.0), 4)
    np.testing.assert_allclose(o.log_likelihoods, st.nbinom(3, 2 / 3).logpmf(4), rtol=1e-12)
    assert g.gamma(lam)[0] == tally.Gamma(7.0, 3.0)
    pi = g.assume(tally.Dirichlet(np.array([1.0, 1.0, 2.0])))
    g.observe(g.categorical(pi), 2)
    np.testing.assert_allclose(g.dirichlet(pi)[0].alpha, [1, 1, 3])
    v = g.value(pi)
    assert v.shape == (3, 3) and np.allclose(v.sum(axis=1), 1)
    s = g.scalar_value(lam)
    assert s.shape == (3,) and np.all(s > 0)
    assert g.value(rho).shape == (3, 1)
    m = g.assume(tally.Beta(1, 1))
    k = g.binomial(g.assume(tally.Binomial(5, 0.5)), m)  # a variable count of a Beta: realized first
    g.realize(k)
    g.realize(m)
    g.name(m, "m")


def test_joint_laws_keep_coupled_children_exact():
    g = tally.Graph()
    g.strict = True
    x = g.assume(tally.Binomial(10, 0.5))
    b = g.binomial(x, 0.5)
    c = g.binomial(x, 0.5)
    o = g.observe(b + c, 4)  # b and c share x: one joint law, exact (strict mode does not throw)
    assert o.exact
    # P(b + c = 4) = sum_x Bin(x; 10, .5) Bin(4; 2x, .5): given x, b + c ~ Binomial(2 x, .5)
    want = sum(math.comb(10, k) / 2**10 * (math.comb(2 * k, 4) / 2 ** (2 * k) if 2 * k >= 4 else 0) for k in range(11))
    assert abs(o.log_likelihoods[0] - math.log(want)) < 1e-12


def test_joint_batches_give_the_host_tables_answer():
    # a drawn value enters the coupled counts: the particles' joint tables differ, and `batched` computes them as
    # one batch (the CPU reference loops on a host graph) where `host` computes one after another
    t = tally.Truncation()
    assert t.joint_batches == tally.JointBatches.automatic and t.joint_batch_entries > 0
    results = {}
    for mode in (tally.JointBatches.host, tally.JointBatches.batched):
        t = tally.Truncation()
        t.joint_batches = mode
        assert t.joint_batches == mode
        g = tally.Graph(4, 3, "cpu", t)
        x = g.assume(tally.Binomial(30, 0.5))
        b = g.binomial(x, 0.4)
        d = g.assume(tally.Poisson(3.0))
        g.value(d)  # drawn in each particle
        c = x - b + d  # coupled with b through x, shifted by each particle's draw
        o = g.observe(g.binomial(c, 0.5), 9)
        o2 = g.observe(g.binomial(b, 0.5), 4)
        assert o.exact and o2.exact
        results[mode] = (np.asarray(o.log_likelihoods), np.asarray(o2.log_likelihoods), g.value(d))
    want, got = results[tally.JointBatches.host], results[tally.JointBatches.batched]
    np.testing.assert_array_equal(want[2], got[2])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


def test_exactness_report_and_strict_mode():
    g = tally.Graph(1, 1, "cpu", tally.Truncation(max_joint_bytes=0))  # joint laws off: couplings are fallbacks
    x = g.assume(tally.Binomial(10, 0.5))
    g.name(x, "x")
    a = g.binomial(x, 0.5)
    b = g.binomial(x, 0.5)
    g.name(a, "a")
    g.name(b, "b")
    g.observe(a, 3)
    g.strict = True
    assert g.strict
    c = g.binomial(x, 0.5)
    with pytest.raises(tally.InexactError) as e:
        g.observe(b + c, 4)  # b and c share x: the runtime would sample x
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, tally.Error)
    assert e.value.sampled and e.value.sampled[0].variable == "x"
    refused = e.value.sampled[0]
    assert isinstance(refused, tally.Sampled) and isinstance(refused.reason, tally.Fallback)
    g.strict = False
    o = g.observe(b + c, 4)
    assert not o.exact and o.exactness.sampled[0].variable == "x"
    assert isinstance(o.exactness.sampled[0].reason, tally.Fallback)
    assert o.exactness.sampled[0].reason == refused.reason  # what strict mode refused is what was then sampled
    assert "sampled x" in o.exactness.describe() and "Sampled(x" in repr(o.exactness.sampled[0])
    assert o.exactness.truncation_error >= 0 and isinstance(o.exactness.truncated, list)
    assert tally.Fallback.shared_ancestor.describe() == "shared ancestor of a sum's operands"


def test_resampling_and_weights():
    P = 64
    g = tally.Graph(P, 11, "cpu")
    x = g.assume(tally.Poisson(5.0))
    g.observe(g.binomial(x, 0.5), np.arange(P) % 4)
    lw = g.log_weights
    assert lw.shape == (P,)
    s = g.summarize(x, [0.5])
    assert s.ess == pytest.approx(tally.summarize_log_weights(lw).ess, rel=1e-12) and len(s.quantiles) == 1
    assert not s.all_impossible and s.mean > 0
    y = g.add(x, x)
    both = g.summarize([x, y], [0.5])  # several variables, one copy back
    assert len(both) == 2 and both[0].mean == s.mean and both[0].quantiles == s.quantiles
    assert both[1].mean == pytest.approx(2 * s.mean, rel=1e-12) and both[1].ess == both[0].ess
    values = g.value(x)
    assert (s.lo, s.hi) == (values.min(), values.max())  # every particle's value, whatever its weight
    before = g.value(x).copy()
    r = g.resample_by_weight(1.0)
    assert r.resampled and r.ancestors.dtype == np.uint64 and len(r.ancestors) == P
    a = np.asarray(r.ancestors)
    anc, summary = tally.resample(lw, tally.Resampler.systematic, 0, 0)
    assert r.log_mean_weight == pytest.approx(summary.log_sum - np.log(P), rel=1e-13)
    np.testing.assert_array_equal(g.value(x), before[a])
    assert np.all(g.log_weights == 0)
    r2 = g.resample_by_weight(0.0)  # never: summarized only
    assert not r2.resampled and r2.ancestors is None and r2.ess == pytest.approx(P)
    g.resample(np.zeros(P, dtype=np.uint64))
    assert np.all(g.value(x) == g.value(x)[0])
    g.observe(g.assume(tally.Poisson(2.0)), 3)
    assert np.all(g.log_weights < 0)
    g.reset_log_weights()
    assert np.all(g.log_weights == 0)
    r3 = g.resample_by_weight(kind=tally.Resampler.multinomial)
    assert r3.resampled
    assert g.bytes() > 0 and all(isinstance(m, tally.NodeMemory) for m in g.memory())
    st_ = g.stream(0)
    assert 0 < st_.uniform() < 1
    assert g.truncation.tolerance > 0


def test_columns_are_zero_copy_on_the_host():
    g = tally.Graph(8, 1, "cpu")
    x = g.constant(np.arange(8))
    col = g.values(x)
    assert col.device == "cpu" and col.dtype == np.int64 and col.shape == (8,) and len(col) == 8
    a = np.asarray(col)
    b = np.asarray(g.values(x))
    assert np.shares_memory(a, b) and a.ctypes.data == col.ptr  # the graph's own memory, no copy
    assert not a.flags.writeable
    np.testing.assert_array_equal(a, np.arange(8))
    d = np.from_dlpack(col)  # DLPack, no copy
    assert d.ctypes.data == col.ptr and np.array_equal(d, a)
    assert col.__dlpack_device__() == (1, 0)
    assert not hasattr(col, "__cuda_array_interface__")
    del x, col, b  # the view keeps the variable alive
    assert a[3] == 3
    lw = g.log_weight_column()
    assert lw.dtype == np.float64 and np.array_equal(np.asarray(lw), g.log_weights)
    o = g.observe(g.constant(np.arange(8)), 3)
    np.testing.assert_array_equal(np.asarray(o.column), o.log_likelihoods)
    assert "Column(8 x <f8, cpu)" == repr(o.column)


def test_dependence_queries():
    g = tally.Graph()
    x = g.assume(tally.Binomial(10, 0.5))
    y = g.binomial(x, 0.5)
    z = g.assume(tally.Poisson(2.0))
    assert g.touches([y], [x, z]) == [[0]]
    assert g.touches([y, z], [x, y, z], tally.DependenceMethod.closure) == [[0, 1], [2]]
    rho = g.assume(tally.Beta(1, 1))
    k = g.binomial(3, rho)
    assert g.touches([k], [rho]) == [[0]]


def test_handles_free_the_graph():
    gc.collect()
    base = tally.Graph.live_nodes()
    g = tally.Graph(16, 1, "cpu")
    x = g.assume(tally.Binomial(10, 0.5))
    for _ in range(100):
        x = g.binomial(x, 0.9) + g.assume(tally.Poisson(1.0))
    assert tally.Graph.live_nodes() > base
    del g, x
    gc.collect()
    assert tally.Graph.live_nodes() == base


def test_device_strings():
    assert tally.Graph(1, 1, tally.Device.cpu).device == "cpu"
    assert tally.Graph(2, 1, "automatic").particles == 2
    with pytest.raises(ValueError, match="is not one of"):
        tally.Graph(1, 1, "tpu")
