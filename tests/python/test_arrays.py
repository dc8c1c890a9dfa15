"""Subset sums, reachable sums, bit matrices and transitive closure, resampling and convolution on arrays."""

import itertools

import numpy as np
import pytest
import scipy.stats as st

import tally


def brute_force_law(w, p):
    law = {}
    for bits in itertools.product([0, 1], repeat=len(w)):
        s = sum(b * x for b, x in zip(bits, w))
        law[s] = law.get(s, 0.0) + np.prod([q if b else 1 - q for b, q in zip(bits, p)])
    return law


def test_subset_sum_law_against_brute_force():
    w, p = np.array([3, 5, 8, 10, 3]), np.array([0.1, 0.5, 0.25, 0.9, 0.6])
    law = tally.subset_sum_law(w, p)
    ref = brute_force_law(w, p)
    np.testing.assert_array_equal(law["values"], sorted(ref))
    np.testing.assert_allclose(law["weights"] * np.exp(law["log_scale"]), [ref[k] for k in sorted(ref)], rtol=1e-13)
    real = tally.subset_sum_law(np.array([0.5, 1.25]), np.array([0.5, 0.5]))
    np.testing.assert_allclose(real["values"], [0.0, 0.5, 1.25, 1.75])
    assert real["error_bound"] < 1e-300  # only the flushed mass


def test_reachable_sums_and_subset_sum():
    w = np.array([3, 5, 8, 10])
    r = tally.reachable_sums(w, 12)
    ref = sorted({s for s in (sum(c) for k in range(5) for c in itertools.combinations(w, k)) if s <= 12})
    np.testing.assert_array_equal(r.totals(), ref)
    assert 11 in r and 12 not in r and r.contains(8) and r.count() == len(ref)
    assert r.largest_at_most(12) == 11 and r.capacity == 12 and len(r.words) == 1
    a = tally.subset_sum(w, 12)
    assert not a.reachable and a.best == 11 and "best=11" in repr(a)


def test_sampled_subset_sums():
    out = tally.sampled_subset_sums([[1, 2, 4], [1, 1]], 100, 3)
    assert sorted(out[0]) == list(range(8)) and sorted(out[1]) == [0, 1, 2]


def test_bit_matrix_and_closure():
    n = 70  # two words a row
    dense = np.zeros((n, n), dtype=bool)
    for i in range(n - 1):
        dense[i, i + 1] = True
    a = tally.BitMatrix(dense)
    assert a.size == n and a.count() == n - 1 and a[0, 1] and not a[1, 0] and a.get(5, 6)
    np.testing.assert_array_equal(a.to_numpy(), dense)
    c = tally.transitive_closure(a).to_numpy()
    np.testing.assert_array_equal(c, np.triu(np.ones((n, n), dtype=bool), 1))
    p = tally.boolean_product(a, a).to_numpy()
    np.testing.assert_array_equal(p, (dense.astype(int) @ dense.astype(int)) > 0)
    assert a.transposed()[1, 0] and a == tally.BitMatrix(dense)
    order = tally.topological_order(a)
    assert list(order) == list(range(n))
    with pytest.raises(IndexError):
        a[n, 0]
    with pytest.raises(ValueError, match="square"):
        tally.BitMatrix(np.zeros((2, 3), dtype=bool))


def test_resample_and_summaries():
    lw = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    anc, s = tally.resample(lw, tally.Resampler.systematic, 5, 0)
    assert anc.dtype == np.uint64 and len(anc) == 4 and np.all(np.diff(anc.astype(int)) >= 0)
    assert s.log_sum == pytest.approx(0.0, abs=1e-15) and s.ess == pytest.approx(1 / np.sum(np.exp(lw) ** 2))
    assert s.max_log_weight == pytest.approx(np.log(0.4))
    anc2, _ = tally.resample(lw, tally.Resampler.systematic, 5, 0)
    np.testing.assert_array_equal(anc, anc2)
    assert tally.summarize_log_weights(lw).ess == pytest.approx(s.ess)


def test_convolve():
    p, q = np.array([0.5, 0.5]), np.array([0.25, 0.5, 0.25])
    np.testing.assert_allclose(tally.convolve(p, q), np.convolve(p, q), rtol=1e-15)


def test_law_batches():
    n = np.array([3, 10, 0])
    q = np.array([0.5, 0.2, 0.9])
    laws = tally.binomial_laws(n, q)
    assert len(laws) == 3 and laws.device == "cpu" and "Laws(3 laws" in repr(laws)
    offset = np.asarray(laws.offset)
    np.testing.assert_array_equal(offset, [0, 4, 15, 16])
    np.testing.assert_array_equal(np.asarray(laws.lo), [0, 0, 0])
    assert len(laws.weights) == 16 and laws.log_scale.numpy().shape == (3,)
    for i, d in enumerate(laws.to_pmfs()):
        np.testing.assert_allclose(d.probabilities(), st.binom(n[i], q[i]).pmf(np.arange(n[i] + 1)), rtol=1e-12)
    w = np.asarray(laws.weights)
    assert w.ctypes.data == laws.weights.ptr  # the batch's own memory
    bb = tally.beta_binomial_laws(n, np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 1.0]))
    np.testing.assert_allclose(bb.to_pmfs()[1].probabilities(), st.betabinom(10, 2, 1).pmf(np.arange(11)), rtol=1e-12)
    g = tally.Graph(3, 1, "cpu")
    from_graph = tally.binomial_laws(g.values(g.constant(n)), q)  # a Column where the graph keeps it
    np.testing.assert_array_equal(np.asarray(from_graph.weights), w)
    with pytest.raises(TypeError, match="wrong type"):
        tally.binomial_laws(g.log_weight_column(), q)
