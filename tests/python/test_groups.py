"""Graphs of several groups from Python: per-group parameters on the exact path, each group's evidence and its
resampling within itself, as in C++."""
import math

import numpy as np
import pytest
import scipy.stats as st

import tally


def test_per_group_laws_and_thinnings_keep_the_exact_path():
    # x ~ Poisson(lam_g); y ~ Binomial(x, q_g) observed at 3: each group's log-likelihood is log Poisson(3; lam_g q_g)
    lam, q = [2.0, 5.0, 9.0], [0.2, 0.5, 0.9]
    g = tally.Graph(tally.Groups(3, 4), 5, "cpu")
    g.strict = True
    assert (g.groups, g.group_size, g.particles) == (3, 4, 12)
    x = g.assume([tally.Poisson(v) for v in lam])
    y = g.assume(x, [tally.Thinning(v) for v in q])
    assert g.observe(y, 3).exact
    r = g.resample_groups(0.0)
    assert r.ancestors is None
    expected = [st.poisson(a * b).logpmf(3) for a, b in zip(lam, q)]
    np.testing.assert_allclose(r.log_mean_weight, expected, rtol=1e-12)
    np.testing.assert_allclose(r.ess, [4.0] * 3)
    np.testing.assert_array_equal(r.resampled, [0, 0, 0])


def test_each_group_is_resampled_within_itself():
    g = tally.Graph(tally.Groups(2, 50), 3, "cpu")
    x = g.assume([tally.Binomial(20, 0.3), tally.Binomial(20, 0.7)])
    values = np.asarray(g.value(x))
    g.observe(g.binomial(x, 0.5), (values // 2).astype(np.int64))
    lw = np.asarray(g.log_weights)
    r = g.resample_groups()
    for k in range(2):
        part = lw[50 * k:50 * (k + 1)]
        m = part.max()
        assert r.log_mean_weight[k] == pytest.approx(m + math.log(np.mean(np.exp(part - m))), rel=1e-12)
    ancestors = np.asarray(r.ancestors)
    assert np.all(ancestors // 50 == np.arange(100) // 50)
    np.testing.assert_array_equal(np.asarray(g.value(x)), values[ancestors])


def test_groups_refuse_mixing_and_bad_sizes():
    g = tally.Graph(tally.Groups(2, 3), 1, "cpu")
    with pytest.raises(tally.ShapeError):
        g.assume([tally.Poisson(1.0)] * 4)
    x = g.assume([tally.Poisson(1.0), tally.Poisson(2.0)])
    with pytest.raises(tally.ShapeError):
        g.assume(x, [tally.Thinning(0.5)] * 3)
    with pytest.raises(tally.UsageError):
        g.resample_by_weight()
    with pytest.raises(tally.DomainError):
        tally.Graph(tally.Groups(0, 3), 1, "cpu")


def test_summarize_groups_gives_each_groups_weighted_moments():
    g = tally.Graph(tally.Groups(3, 40), 5, "cpu")
    x = g.assume([tally.Poisson(3.0), tally.Poisson(9.0), tally.Poisson(20.0)])
    values = np.asarray(g.value(x))
    g.observe(g.binomial(x, 0.5), (values // 3).astype(np.int64))
    lw = np.asarray(g.log_weights)
    s = g.summarize_groups(x)
    for k in range(3):
        v = values[40 * k:40 * (k + 1)].astype(float)
        w = np.exp(lw[40 * k:40 * (k + 1)] - lw[40 * k:40 * (k + 1)].max())
        mean = np.sum(w * v) / np.sum(w)
        assert s.mean[k] == pytest.approx(mean, rel=1e-12)
        assert s.variance[k] == pytest.approx(np.sum(w * (v - mean) ** 2) / np.sum(w), rel=1e-10, abs=1e-12)
        assert s.ess[k] == pytest.approx(np.sum(w) ** 2 / np.sum(w * w), rel=1e-12)


def test_other_child_laws_per_group_equal_each_groups_own_graph():
    rates = [0.5, 2.0]
    g = tally.Graph(tally.Groups(2, 2), 1, "cpu")
    g.strict = True
    x = g.assume(tally.Binomial(4, 0.5))
    y = g.assume(x, [tally.ScaledPoisson(a) for a in rates])
    o = g.observe(y, 3)
    for k, a in enumerate(rates):
        one = tally.Graph(1, 1, "cpu")
        x1 = one.assume(tally.Binomial(4, 0.5))
        o1 = one.observe(one.assume(x1, tally.ScaledPoisson(a)), 3)
        assert np.asarray(o)[2 * k] == pytest.approx(np.asarray(o1)[0], rel=1e-12)
    t = np.array([[0.5, 0.5], [0.1, 0.9]])
    h = tally.Graph(tally.Groups(2, 1), 1, "cpu")
    s = h.assume(tally.Bernoulli(0.3))
    z = h.assume(s, [tally.MarkovStep(t), tally.MarkovStep(t[::-1].copy())])
    lw = np.asarray(h.observe(z, 1))
    assert lw[0] == pytest.approx(math.log(0.7 * 0.5 + 0.3 * 0.9), rel=1e-12)
    assert lw[1] == pytest.approx(math.log(0.7 * 0.9 + 0.3 * 0.5), rel=1e-12)
    with pytest.raises(tally.ShapeError):
        h.assume(s, [tally.ScaledPoisson(1.0)] * 3)


def test_each_makes_one_law_per_group_from_arrays():
    q = np.array([0.1, 0.5, 0.9])
    laws = tally.each(tally.Thinning, q)
    assert [law.keep for law in laws] == [0.1, 0.5, 0.9]
    binomials = tally.each(tally.Binomial, 10, np.array([0.2, 0.4]))  # a number broadcast against an array
    assert [(b.trials, b.success) for b in binomials] == [(10, 0.2), (10, 0.4)]
    steps = tally.each(tally.MarkovStep, np.stack([np.eye(2), np.array([[0.5, 0.5], [0.1, 0.9]])]))
    np.testing.assert_array_equal(steps[1].transition, [[0.5, 0.5], [0.1, 0.9]])
    same = tally.each(tally.IndexedPoisson, np.array([1.0, 2.0, 3.0]))  # one vector: one law, the same rates
    assert len(same) == 1
    np.testing.assert_array_equal(same[0].rates, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="3 entries, another parameter 2"):
        tally.each(tally.Binomial, np.array([5, 6]), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError, match="expected 0 axes"):
        tally.each(tally.Poisson, np.ones((2, 2)))
    with pytest.raises(tally.DomainError):
        tally.each(tally.Poisson, np.array([1.0, -1.0]))
    with pytest.raises(TypeError):
        tally.each(tally.Poisson)


def test_each_feeds_a_grouped_graph_on_the_exact_path():
    # x ~ Poisson(lam_g), y ~ Binomial(x, q_g) from arrays: the same as lists of laws
    lam, q = np.array([2.0, 5.0, 9.0, 4.0]), np.array([0.2, 0.5, 0.9, 0.3])
    g = tally.Graph(tally.Groups(4, 2), 5, "cpu")
    g.strict = True
    y = g.assume(g.assume(tally.each(tally.Poisson, lam)), tally.each(tally.Thinning, q))
    assert g.observe(y, 3).exact
    np.testing.assert_allclose(g.resample_groups(0.0).log_mean_weight, st.poisson(lam * q).logpmf(3), rtol=1e-12)


def test_conjugate_hyperparameters_per_group():
    # rho ~ Beta(a_g, b_g), k ~ Binomial(12, rho) observed at 7: each group's beta-binomial evidence and posterior
    a, b = np.array([1.0, 2.5, 30.0]), np.array([1.0, 0.5, 70.0])
    g = tally.Graph(tally.Groups(3, 2), 1, "cpu")
    g.strict = True
    rho = g.assume(tally.each(tally.Beta, a, b))
    assert g.observe(g.binomial(12, rho), 7).exact
    np.testing.assert_allclose(np.asarray(g.log_weights), np.repeat(st.betabinom(12, a, b).logpmf(7), 2), rtol=1e-12)
    posterior = g.beta(rho)
    assert [(p.alpha, p.beta) for p in posterior[::2]] == [(x + 7, y + 5) for x, y in zip(a, b)]
    # Gamma(shape_g, rate_g) with a Poisson count: the negative binomial evidence
    shape, rate = np.array([2.0, 0.5, 40.0]), 3.0
    h = tally.Graph(tally.Groups(3, 2), 1, "cpu")
    lam = h.assume(tally.each(tally.Gamma, shape, rate))
    h.observe(h.poisson(lam), 4)
    np.testing.assert_allclose(np.asarray(h.log_weights), np.repeat(st.nbinom(shape, rate / (rate + 1)).logpmf(4), 2),
                               rtol=1e-12)
    # Dirichlet(alpha_g) with a category: alpha_g[k] / sum(alpha_g)
    alpha = np.array([[1.0, 1.0, 1.0], [0.2, 5.0, 1.0], [9.0, 1.0, 3.0]])
    d = tally.Graph(tally.Groups(3, 2), 1, "cpu")
    pi = d.assume(tally.each(tally.Dirichlet, alpha))
    d.observe(d.categorical(pi), 1)
    np.testing.assert_allclose(np.asarray(d.log_weights), np.repeat(np.log(alpha[:, 1] / alpha.sum(axis=1)), 2),
                               rtol=1e-12)
    with pytest.raises(tally.ShapeError):
        g.assume(tally.each(tally.Beta, np.ones(4), 1.0))


class _DeviceArray:
    """A stand-in for a CuPy array: device memory (__cuda_array_interface__) that reaches the host only by get()."""

    def __init__(self, values):
        self._values = np.asarray(values)
        self.copies = 0

    @property
    def __cuda_array_interface__(self):
        return {"shape": self._values.shape, "typestr": self._values.dtype.str, "data": (0, False), "version": 3}

    def __array__(self, *args, **kwargs):
        raise TypeError("implicit conversion of a device array to NumPy")  # as CuPy refuses

    def get(self):
        self.copies += 1
        return self._values.copy()


def test_each_copies_a_device_array_to_the_host_once():
    q = _DeviceArray([0.25, 0.75])
    laws = tally.each(tally.Thinning, q)
    assert [law.keep for law in laws] == [0.25, 0.75]
    assert q.copies == 1
    with pytest.raises(TypeError, match="device array"):
        tally.each(tally.Poisson, type("Opaque", (), {"__cuda_array_interface__": {}})())
