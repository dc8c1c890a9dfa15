"""The families against scipy.stats: pdf, log_pdf, cdf, quantile (ppf), mean, variance, to_pmf; vectorization."""

import numpy as np
import pytest
import scipy.stats as st

import tally

# (tally family, the same law in scipy.stats, points to check)
CASES = [
    (tally.Binomial(30, 0.35), st.binom(30, 0.35), np.arange(0, 31)),
    (tally.Poisson(7.5), st.poisson(7.5), np.arange(0, 40)),
    (tally.Geometric(0.2), st.geom(0.2, loc=-1), np.arange(0, 60)),  # failures before the first success
    (tally.NegativeBinomial(3.5, 0.4), st.nbinom(3.5, 0.4), np.arange(0, 60)),
    (tally.BetaBinomial(20, 2.5, 1.5), st.betabinom(20, 2.5, 1.5), np.arange(0, 21)),
    (tally.Bernoulli(0.3), st.bernoulli(0.3), np.arange(0, 2)),
    (tally.UniformInt(-3, 9), st.randint(-3, 10), np.arange(-3, 10)),
    (tally.Hypergeometric(50, 20, 10), st.hypergeom(50, 20, 10), np.arange(0, 11)),
    (tally.Categorical(np.array([1.0, 2.0, 3.0, 4.0])),
     st.rv_discrete(values=(np.arange(4), np.array([0.1, 0.2, 0.3, 0.4]))), np.arange(0, 4)),
]
IDS = [type(c[0]).__name__ for c in CASES]


@pytest.mark.parametrize("law,ref,k", CASES, ids=IDS)
def test_against_scipy(law, ref, k):
    np.testing.assert_allclose(law.pdf(k), ref.pmf(k), rtol=1e-11, atol=0)
    np.testing.assert_allclose(law.log_pdf(k), ref.logpmf(k), rtol=1e-11)
    np.testing.assert_allclose(law.cdf(k), ref.cdf(k), rtol=1e-11)
    assert law.mean() == pytest.approx(ref.mean(), rel=1e-12)
    assert law.variance() == pytest.approx(ref.var(), rel=1e-11)
    probs = np.array([0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    # tally's quantile and scipy's ppf are both the smallest k with cdf(k) >= p
    np.testing.assert_array_equal(law.quantile(probs), ref.ppf(probs).astype(np.int64))


@pytest.mark.parametrize("law,ref,k", CASES, ids=IDS)
def test_to_pmf_and_module_functions(law, ref, k):
    d = law.to_pmf()
    assert isinstance(d, tally.Pmf)
    np.testing.assert_allclose(d.pdf(d.values), law.pdf(d.values), rtol=1e-13)
    lo, hi = tally.support(law)
    assert (lo, hi) == law.support()
    assert tally.pdf(law, int(k[0])) == law.pdf(int(k[0]))
    assert tally.cdf(law, int(k[-1])) == law.cdf(int(k[-1]))
    assert tally.quantile(law, 0.5) == law.quantile(0.5)
    assert tally.mean(law) == law.mean() and tally.variance(law) == law.variance()
    assert tally.log_pdf(law, int(k[0])) == law.log_pdf(int(k[0]))
    assert tally.to_pmf(law).lo == d.lo


def test_delta():
    d = tally.Delta(5)
    assert d.pdf(5) == 1.0 and d.pdf(4) == 0.0 and d.cdf(4) == 0.0 and d.cdf(5) == 1.0
    assert d.quantile(0.3) == 5 and d.mean() == 5 and d.variance() == 0 and d.value == 5
    assert d.to_pmf().lo == 5


def test_scalars_in_scalars_out_arrays_in_arrays_out():
    b = tally.Binomial(10, 0.5)
    assert isinstance(b.pdf(3), float)
    assert isinstance(b.quantile(0.5), int)
    a = b.pdf(np.array([[1, 2], [3, 4]]))
    assert a.shape == (2, 2) and a.dtype == np.float64


def test_far_tails_keep_precision():
    # log_pdf far below the double range (1e-1200): tally keeps the log exactly
    b = tally.Binomial(4000, 0.5)
    assert b.log_pdf(0) == pytest.approx(4000 * np.log(0.5), rel=1e-14)
    assert b.pdf(0) == 0.0  # underflows in pdf, as documented


def test_properties_and_repr():
    assert tally.Binomial(10, 0.25).trials == 10 and tally.Binomial(10, 0.25).success == 0.25
    assert tally.Poisson(2.5).rate == 2.5
    assert tally.NegativeBinomial(2.0, 0.5).successes == 2.0
    assert tally.BetaBinomial(5, 1.0, 2.0).alpha == 1.0 and tally.BetaBinomial(5, 1.0, 2.0).beta == 2.0
    h = tally.Hypergeometric(50, 20, 10)
    assert (h.population, h.successes, h.draws) == (50, 20, 10)
    assert tally.UniformInt(-1, 4).lo == -1 and tally.UniformInt(-1, 4).hi == 4
    np.testing.assert_allclose(tally.Categorical(np.array([1.0, 3.0])).probabilities, [0.25, 0.75])
    assert repr(tally.Binomial(10, 0.25)) == "Binomial(10, 0.25)"
    assert "Poisson" in repr(tally.Poisson(3.0))
    assert tally.Geometric(0.5).success == 0.5 and tally.Bernoulli(0.5).success == 0.5


def test_truncation_bounds_the_dropped_mass():
    d = tally.Poisson(50.0).to_pmf(tally.Truncation(tolerance=1e-6))
    assert 0 < d.error_bound <= 1e-6
    assert 1 - np.exp(d.log_mass()) == pytest.approx(d.error_bound, rel=1e-6)
    t = tally.Truncation(1e-9, 1000)
    assert t.tolerance == 1e-9 and t.max_size == 1000 and "Truncation" in repr(t)
