"""Pmf and SparsePmf with NumPy (lower bound, log scale), the exact algebra, conditioning, closed forms, sampling."""

import numpy as np
import pytest
import scipy.stats as st

import tally


def test_pmf_from_and_to_numpy():
    w = np.array([1.0, 4.0, 2.0])
    d = tally.Pmf(-2, w, log_scale=-3.0)
    assert (d.lo, d.hi, len(d)) == (-2, 0, 3)
    np.testing.assert_array_equal(d.values, [-2, -1, 0])
    np.testing.assert_allclose(d.weights, w / 4)  # rescaled to a largest of 1
    assert d.log_scale == pytest.approx(-3.0 + np.log(4.0), rel=1e-15)
    np.testing.assert_allclose(d.probabilities(), w * np.exp(-3.0), rtol=1e-15)
    np.testing.assert_allclose(d.log_probabilities(), np.log(w) - 3.0, rtol=1e-15)
    assert d.log_mass() == pytest.approx(np.log(7.0) - 3.0, rel=1e-15)
    assert d.normalized().log_mass() == pytest.approx(0.0, abs=1e-15)
    assert d.weights.flags.writeable is False  # a view of the Pmf's own storage
    assert d.with_error_bound(1e-9).error_bound == 1e-9
    assert "Pmf(lo=-2" in repr(d)


def test_pmf_far_below_double_range():
    # every entry ~ e^-2000: stored exactly by the log scale
    d = tally.Pmf.from_log(0, np.array([-2000.0, -2001.0, -np.inf, -2000.5]))
    assert d.hi == 3 and d.log_scale == pytest.approx(-2000.0)
    assert d.log_pdf(1) == pytest.approx(-2001.0, rel=1e-15) and d.log_pdf(2) == -np.inf
    assert d.pdf(0) == 0.0  # underflows outside the log form


def test_point_and_sparse():
    p = tally.Pmf.point(7)
    assert (p.lo, p.hi, p.pdf(7)) == (7, 7, 1.0)
    s = tally.SparsePmf(np.array([0, 10, 20]), np.array([0.5, 0.25, 0.25]))
    assert len(s) == 3 and s.pdf(10) == pytest.approx(0.25) and s.cdf(15) == pytest.approx(0.75)
    np.testing.assert_array_equal(s.points, [0, 10, 20])
    dense = s.to_dense()
    assert (dense.lo, dense.hi) == (0, 20) and dense.pdf(5) == 0.0
    assert tally.to_sparse(dense).size if hasattr(tally.to_sparse(dense), "size") else True
    np.testing.assert_array_equal(tally.to_sparse(dense).points, [0, 10, 20])
    assert tally.to_dense(s).hi == 20
    assert s.quantile(0.6) == 10 and s.mean() == pytest.approx(7.5) and s.support() == (0, 20)
    assert tally.SparsePmf.from_log(np.array([1, 3]), np.array([0.0, 0.0])).normalized().pdf(3) == pytest.approx(0.5)


def test_sum_and_difference_are_exact_convolutions():
    x, y = tally.Binomial(40, 0.3).to_pmf(), tally.Poisson(6.0).to_pmf()
    z = tally.sum(x, y)
    ref = np.convolve(x.probabilities(), y.probabilities())
    np.testing.assert_allclose(z.probabilities(), ref, rtol=1e-12, atol=1e-300)
    assert z.lo == x.lo + y.lo
    assert (x + y).lo == z.lo and np.array_equal((x + y).weights, z.weights)
    d = tally.difference(x, y)
    np.testing.assert_allclose(d.probabilities(), np.convolve(x.probabilities(), y.probabilities()[::-1]),
                               rtol=1e-12, atol=1e-300)
    assert d.lo == x.lo - y.hi and (x - y).lo == d.lo
    assert tally.negate(x).hi == -x.lo and (-x).hi == -x.lo
    assert tally.shift(x, 5).lo == x.lo + 5 and (x + 5).lo == x.lo + 5 and (5 + x).lo == x.lo + 5
    assert (x - 5).lo == x.lo - 5 and (5 - x).hi == 5 - x.lo


def test_affine_is_sparse():
    x = tally.Binomial(3, 0.5).to_pmf()
    a = tally.affine(x, 3, 1)
    assert isinstance(a, tally.SparsePmf)
    np.testing.assert_array_equal(a.points, [1, 4, 7, 10])
    np.testing.assert_array_equal((2 * x).points, [0, 2, 4, 6])
    np.testing.assert_array_equal((x * 2).points, [0, 2, 4, 6])
    np.testing.assert_array_equal(tally.affine(a, -1, 0).points, [-10, -7, -4, -1])
    np.testing.assert_allclose(tally.sum(a, a).normalized().weights.sum() > 0, True)


def test_closed_forms_agree_with_the_generic_path():
    s = tally.sum(tally.Poisson(2.0), tally.Poisson(3.5))
    assert isinstance(s, tally.Poisson) and s.rate == 5.5
    b = tally.sum(tally.Binomial(10, 0.3), tally.Binomial(5, 0.3))
    assert (b.trials, b.success) == (15, 0.3)
    nb = tally.sum(tally.NegativeBinomial(2.0, 0.4), tally.NegativeBinomial(1.5, 0.4))
    assert nb.successes == 3.5
    th = tally.marginal(tally.Binomial(40, 0.5), tally.Thinning(0.2))
    assert isinstance(th, tally.Binomial) and th.success == pytest.approx(0.1)
    generic = tally.marginal(tally.Binomial(40, 0.5).to_pmf(), tally.Thinning(0.2))
    np.testing.assert_allclose(generic.probabilities(), th.to_pmf().probabilities(), rtol=1e-12)
    assert tally.marginal(tally.Poisson(4.0), tally.Thinning(0.5)).rate == 2.0
    c = tally.condition_on_sum(tally.Poisson(2.0), tally.Poisson(3.0), 7)
    assert isinstance(c, tally.ConditionedBinomial) and c.posterior.trials == 7
    g = tally.condition_on_sum(tally.Poisson(2.0).to_pmf(tally.Truncation(1e-300)),
                               tally.Poisson(3.0).to_pmf(tally.Truncation(1e-300)), 7)
    np.testing.assert_allclose(g.posterior.probabilities(), c.posterior.to_pmf().probabilities(), rtol=1e-12)
    assert g.log_likelihood == pytest.approx(c.log_likelihood, rel=1e-13)
    assert c.log_likelihood == pytest.approx(st.poisson(5.0).logpmf(7), rel=1e-13)
    h = tally.condition_on_sum(tally.Binomial(10, 0.3), tally.Binomial(6, 0.3), 5)
    assert isinstance(h, tally.ConditionedHypergeometric) and h.posterior.population == 16


def test_conditioning():
    x, y = tally.Binomial(20, 0.4).to_pmf(), tally.Poisson(3.0).to_pmf()
    c = tally.condition_on_sum(x, y, 10)
    joint = np.outer(x.probabilities(), y.probabilities())
    diag = np.array([joint[i, 10 - i] if 0 <= 10 - i < joint.shape[1] else 0.0 for i in range(joint.shape[0])])
    assert c.log_likelihood == pytest.approx(np.log(diag.sum()), rel=1e-13)
    np.testing.assert_allclose(c.posterior.normalized().pdf(np.arange(0, 11)), diag[:11] / diag.sum(), rtol=1e-12)
    assert c.log_likelihood_error >= 0 and "Conditioned" in repr(c)
    impossible = tally.condition_on_sum(tally.Binomial(3, 0.5).to_pmf(), tally.Binomial(3, 0.5).to_pmf(), 99)
    assert impossible.posterior is None and impossible.log_likelihood == -np.inf
    d = tally.condition_on_difference(x, y, 2)
    assert d.log_likelihood == pytest.approx(np.log(tally.difference(x, y).normalized().pdf(2)), rel=1e-12)
    a = tally.condition_affine(x, 2, 1, 9)
    assert a.posterior.pdf(4) == pytest.approx(1.0) and a.log_likelihood == pytest.approx(x.log_pdf(4))
    t = tally.condition(x, tally.Thinning(0.5), 3)
    assert t.log_likelihood == pytest.approx(np.log(tally.marginal(x, tally.Thinning(0.5)).pdf(3)), rel=1e-12)
    sp = tally.condition(tally.Binomial(5, 0.5).to_pmf(), tally.ScaledPoisson(2.0), 4)
    assert sp.posterior is not None
    m = tally.MarkovStep(np.array([[0.9, 0.1], [0.2, 0.8]]))
    mc = tally.condition(tally.Bernoulli(0.5).to_pmf(), m, 1)
    assert mc.log_likelihood == pytest.approx(np.log(0.45), rel=1e-14)
    ip = tally.condition(tally.Bernoulli(0.5).to_pmf(), tally.IndexedPoisson(np.array([1.0, 5.0])), 2)
    assert ip.log_likelihood == pytest.approx(np.log(0.5 * st.poisson(1).pmf(2) + 0.5 * st.poisson(5).pmf(2)))


def test_child_law_marginals():
    x = tally.Binomial(5, 0.5).to_pmf()
    m = tally.marginal(x, tally.MarkovStep(np.array([[0.5, 0.5]] * 6)))
    assert (m.lo, m.hi) == (0, 1)
    sp = tally.marginal(x, tally.ScaledPoisson(1.5))
    assert sp.mean() == pytest.approx(1.5 * 2.5, rel=1e-10)
    ip = tally.marginal(tally.Bernoulli(0.5).to_pmf(), tally.IndexedPoisson(np.array([1.0, 3.0])))
    assert ip.mean() == pytest.approx(2.0, rel=1e-10)
    assert tally.Thinning(0.5).keep == 0.5 and tally.ScaledPoisson(2.0).scale == 2.0
    assert tally.MarkovStep(np.eye(2)).transition.shape == (2, 2) and len(tally.IndexedPoisson(np.ones(3)).rates) == 3


def test_weighted_bernoulli_sum_against_enumeration():
    w = np.array([3, 5, 8, 10])
    p = np.array([0.1, 0.5, 0.25, 0.9])
    s = tally.weighted_bernoulli_sum(w, p)
    law = tally.subset_sum_law(w, p)
    np.testing.assert_array_equal(s.points, law["values"])
    np.testing.assert_allclose(s.normalized().weights / s.normalized().weights.sum(),
                               law["weights"] / law["weights"].sum(), rtol=1e-13)


def test_sampling_is_reproducible():
    d = tally.Binomial(100, 0.3).to_pmf()
    a = tally.sample(d, tally.RandomStream(5), 1000)
    b = tally.sample(d, tally.RandomStream(5), 1000)
    assert a.dtype == np.int64 and np.array_equal(a, b)
    assert abs(a.mean() - 30) < 2
    rng = tally.RandomStream(1, 2)
    u = rng.uniform()
    assert 0 < u < 1 and rng.counter == 1 and rng.seed == 1 and rng.stream == 2
    assert tally.inverse_cdf(d, 0.5) == d.quantile(0.5)
    np.testing.assert_array_equal(tally.inverse_cdf(d, np.array([0.1, 0.9])), d.quantile(np.array([0.1, 0.9])))
    assert isinstance(tally.sample(tally.affine(d, 2, 0), rng), int)
    assert 0 < tally.sample(tally.Beta(2, 2), rng) < 1 and tally.sample(tally.Gamma(2, 1), rng) > 0
    assert tally.sample(tally.Dirichlet(np.ones(3)), rng).sum() == pytest.approx(1.0)
    assert "RandomStream" in repr(rng)


def test_conjugate_functions():
    rho = tally.Beta(2.0, 3.0)
    assert rho.mean() == pytest.approx(0.4)
    assert tally.log_marginal_binomial(rho, 10, 7) == pytest.approx(st.betabinom(10, 2, 3).logpmf(7), rel=1e-12)
    assert tally.posterior_binomial(rho, 10, 7) == tally.Beta(9.0, 6.0)
    light = tally.Beta(20.0, 3.0)  # a light tail: the table stops early
    nb = tally.marginal_negative_binomial(light, 2.0, tally.Truncation(1e-9))
    assert nb.pdf(3) == pytest.approx(np.exp(tally.log_marginal_negative_binomial(light, 2.0, 3)), rel=1e-12)
    assert tally.posterior_negative_binomial(rho, 2.0, 3).beta == 6.0
    lam = tally.Gamma(3.0, 2.0)
    assert tally.log_marginal_poisson(lam, 4) == pytest.approx(st.nbinom(3, 2 / 3).logpmf(4), rel=1e-12)
    assert tally.posterior_poisson(lam, 4) == tally.Gamma(7.0, 3.0)
    assert tally.marginal_poisson(lam).pdf(4) == pytest.approx(st.nbinom(3, 2 / 3).pmf(4), rel=1e-12)
    assert tally.marginal_binomial(rho, 10).pdf(7) == pytest.approx(st.betabinom(10, 2, 3).pmf(7), rel=1e-12)
    pi = tally.Dirichlet(np.array([1.0, 2.0, 3.0]))
    assert tally.log_marginal_categorical(pi, 2) == pytest.approx(np.log(0.5))
    np.testing.assert_allclose(tally.posterior_categorical(pi, 2).alpha, [1, 2, 4])
    assert tally.marginal_categorical(pi).pdf(1) == pytest.approx(1 / 3)
    np.testing.assert_allclose(pi.mean(), [1 / 6, 1 / 3, 1 / 2])
    assert lam.mean() == pytest.approx(1.5) and "Beta(2, 3)" == repr(rho)
