"""The Python Graph offers every operation of the C++ Graph (runtime/include/tally/runtime/graph.hpp) under the same
name and meaning: children of several random parents, the three-argument constructor, a prior with its family, the
shard, resampling by kind; each checked against an exact answer computed here by enumeration."""

import gc
import math
import pathlib
import re
import weakref

import numpy as np
import pytest
import scipy.stats as st

import tally

GRAPH_HEADER = pathlib.Path(__file__).resolve().parents[2] / "runtime" / "include" / "tally" / "runtime" / "graph.hpp"

# C++ members with no Python counterpart, and why
NOT_BOUND = {
    "communicator": "a sharded population's communicator: Python makes no sharded graphs",
}


def public_graph_members(header_text):
    """The names of Graph's public member functions (constructors left out), read from graph.hpp's declarations."""
    body = header_text[header_text.index("\nclass Graph {"):]
    body = body[:body.index("\n private:")]
    names = set()
    for line in body.splitlines():
        code = line.split("//")[0].strip()
        if code.startswith(("return ", "requires ")):  # a statement or constraint of an inline template's body
            continue
        # a return type, then the name and its parenthesis
        match = re.match(r"(?:static\s+)?(?:const\s+)?[\w:<>, ]*?[\w>&*]\s+[&*]?(\w+)\(", code)
        if match and match.group(1) != "Graph":
            names.add(match.group(1))
    return names


def test_every_public_graph_member_of_the_cpp_api_has_a_python_name():
    if not GRAPH_HEADER.exists():
        pytest.skip(f"{GRAPH_HEADER} not found (tests run outside the source tree)")
    members = public_graph_members(GRAPH_HEADER.read_text())
    # the parser finds the declarations it should (a sanity check of the parser itself)
    assert {"poisson", "binomial", "assume", "observe", "touches", "resample_by_weight", "live_nodes"} <= members
    missing = sorted(name for name in members - NOT_BOUND.keys() if not hasattr(tally.Graph, name))
    assert missing == []


def poisson_pmf(k, rate):
    """Poisson(rate) at k, with Poisson(0) the point mass at 0."""
    return float(k == 0) if rate == 0 else st.poisson(rate).pmf(k)


def test_poisson_of_a_state_selecting_among_random_rates_is_exact():
    # y ~ Poisson(a R_S), S ~ Categorical(0.3, 0.7), R_0 ~ Poisson(2), R_1 ~ Poisson(5), a = 0.5; observe y = 3
    state_prior, rate_means, a, y = np.array([0.3, 0.7]), [2.0, 5.0], 0.5, 3
    g = tally.Graph(3, 7, "cpu")
    g.strict = True  # exact: one joint law of (S, R_0, R_1), nothing sampled
    s = g.assume(tally.Categorical(state_prior))
    rates = [g.assume(tally.Poisson(m)) for m in rate_means]
    o = g.observe(g.poisson(s, rates, a), y)

    r = np.arange(0, 120)  # Poisson(5)'s mass beyond 120 is below 1e-100
    rate_prior = [st.poisson(m).pmf(r) for m in rate_means]
    likelihood_given_rate = st.poisson(a * r).pmf(y) if a > 0 else (y == 0) * np.ones_like(r)
    likelihood_given_state = np.array([np.dot(p, likelihood_given_rate) for p in rate_prior])
    evidence = np.dot(state_prior, likelihood_given_state)
    assert o.exact
    np.testing.assert_allclose(o.log_likelihoods, np.full(3, math.log(evidence)), rtol=1e-12)
    # posteriors: S's, and R_1's (a mixture: Poisson(5) where S = 0, reweighted by the likelihood where S = 1)
    state_posterior = state_prior * likelihood_given_state / evidence
    np.testing.assert_allclose(g.marginal(s)[0].normalized().pdf(np.arange(2)), state_posterior, rtol=1e-11)
    rate1_posterior = (state_prior[0] * likelihood_given_state[0] * rate_prior[1] +
                       state_prior[1] * rate_prior[1] * likelihood_given_rate) / evidence
    k = np.arange(0, 25)
    np.testing.assert_allclose(g.marginal(rates[1])[0].normalized().pdf(k), rate1_posterior[k], rtol=1e-10)


def test_poisson_of_a_state_selecting_among_constant_rates_defaults_to_scale_one():
    g = tally.Graph()
    s = g.assume(tally.Categorical(np.array([0.3, 0.7])))
    o = g.observe(g.poisson(s, [g.constant(2), g.constant(5)]), 3)
    assert o[0] == pytest.approx(math.log(0.3 * poisson_pmf(3, 2) + 0.7 * poisson_pmf(3, 5)), rel=1e-13)
    # a keyword scale, a zero scale (Poisson(0): y = 0 surely)
    s = g.assume(tally.Categorical(np.array([0.3, 0.7])))
    assert g.observe(g.poisson(s, [g.constant(2), g.constant(5)], a=2.0), 3)[0] == pytest.approx(
        math.log(0.3 * poisson_pmf(3, 4) + 0.7 * poisson_pmf(3, 10)), rel=1e-13)
    s = g.assume(tally.Categorical(np.array([0.3, 0.7])))
    assert g.observe(g.poisson(s, [g.constant(2), g.constant(5)], 0.0), 0)[0] == pytest.approx(0.0, abs=1e-15)


def test_poisson_of_a_state_refuses_bad_arguments():
    g = tally.Graph()
    s = g.assume(tally.Categorical(np.array([0.5, 0.5])))
    rates = [g.constant(1), g.constant(2)]
    with pytest.raises(tally.DomainError):
        g.poisson(s, rates, -1.0)
    with pytest.raises(tally.ShapeError):
        g.poisson(s, [], 1.0)
    with pytest.raises(tally.UsageError):  # a variable of another graph
        g.poisson(s, [tally.Graph().constant(1)])


def test_poisson_of_one_variable_is_assume_with_scaled_poisson():
    # Python's poisson means C++'s: poisson(x, a) of a count x is no longer Poisson(a x) (a TypeError, not a
    # different law); that one is assume(x, ScaledPoisson(a)), as in C++.
    g = tally.Graph()
    x = g.assume(tally.Binomial(5, 0.5))
    with pytest.raises(TypeError):
        g.poisson(x, 2.0)
    o = g.observe(g.assume(x, tally.ScaledPoisson(2.0)), 3)
    assert o[0] == pytest.approx(math.log(sum(st.binom(5, 0.5).pmf(k) * poisson_pmf(3, 2 * k) for k in range(6))),
                                 rel=1e-12)
    # the other poisson overloads are as they were: a Gamma rate, a constant rate
    lam = g.assume(tally.Gamma(3.0, 2.0))
    assert g.observe(g.poisson(lam, 1.0), 4)[0] == pytest.approx(st.nbinom(3, 2 / 3).logpmf(4), rel=1e-12)
    assert g.observe(g.poisson(4.0), 2)[0] == pytest.approx(st.poisson(4).logpmf(2), rel=1e-12)


def test_binomial_whose_probability_a_state_selects_is_exact():
    # y ~ Binomial(X, keep[S]), X ~ Binomial(10, 0.6), S ~ Categorical(0.3, 0.7), keep = (0.2, 0.9); observe y = 4
    state_prior, keep, y = np.array([0.3, 0.7]), [0.2, 0.9], 4
    for keep_argument in (keep, np.array(keep)):
        g = tally.Graph(2, 3, "cpu")
        g.strict = True
        x = g.assume(tally.Binomial(10, 0.6))
        s = g.assume(tally.Categorical(state_prior))
        o = g.observe(g.binomial(x, s, keep_argument), y)

        n = np.arange(0, 11)
        x_prior = st.binom(10, 0.6).pmf(n)
        joint = np.array([[state_prior[j] * x_prior[i] * st.binom(n[i], keep[j]).pmf(y) for j in range(2)]
                          for i in range(11)])  # P(X = i, S = j, y)
        assert o.exact
        np.testing.assert_allclose(o.log_likelihoods, np.full(2, math.log(joint.sum())), rtol=1e-12)
        np.testing.assert_allclose(g.marginal(x)[1].normalized().pdf(n), joint.sum(axis=1) / joint.sum(), rtol=1e-11)
        np.testing.assert_allclose(g.marginal(s)[1].normalized().pdf(np.arange(2)), joint.sum(axis=0) / joint.sum(),
                                   rtol=1e-11)


def test_binomial_whose_probability_a_state_selects_refuses_bad_arguments():
    g = tally.Graph()
    x = g.assume(tally.Binomial(10, 0.6))
    s = g.assume(tally.Categorical(np.array([0.5, 0.5])))
    with pytest.raises(tally.DomainError):
        g.binomial(x, s, [0.2, 1.5])
    with pytest.raises(tally.ShapeError):
        g.binomial(x, s, [])
    with pytest.raises(ValueError):  # not 1-D
        g.binomial(x, s, np.ones((2, 2)))


def test_constructor_with_a_truncation_in_third_place():
    coarse = tally.Truncation(tolerance=1e-4)
    g = tally.Graph(2, 5, coarse)  # C++'s Graph(particles, seed, truncation), on the automatic device
    assert g.particles == 2 and g.truncation.tolerance == 1e-4
    law, want = g.marginal(g.assume(tally.Poisson(20.0)))[0], tally.Poisson(20.0).to_pmf(coarse)
    assert (law.lo, law.hi) == (want.lo, want.hi)
    assert len(law) < len(tally.Poisson(20.0).to_pmf())  # not the default tolerance's law
    assert tally.Graph(truncation=coarse).truncation.tolerance == 1e-4


def test_shard_of_an_unsharded_graph_is_the_whole_population():
    g = tally.Graph(5, 1, "cpu")
    shard = g.shard
    assert (shard.index, shard.count, shard.first, shard.total) == (0, 5, 0, 5)
    assert not g.sharded and "Shard(" in repr(shard)


def weighted_graph(particles=16, seed=11):
    """A graph whose particles carry different log-weights: each observed a different count of one Poisson(4)."""
    g = tally.Graph(particles, seed, "cpu")
    g.observe(g.assume(tally.Poisson(4.0)), np.arange(particles) % 9)
    return g


def test_resample_by_weight_takes_the_kind_in_first_place():
    multinomial = weighted_graph().resample_by_weight(kind=tally.Resampler.multinomial)
    systematic = weighted_graph().resample_by_weight(kind=tally.Resampler.systematic)
    positional = weighted_graph().resample_by_weight(tally.Resampler.multinomial)
    assert multinomial.resampled and positional.resampled
    a = positional.ancestors.numpy()
    np.testing.assert_array_equal(a, multinomial.ancestors.numpy())
    assert not np.array_equal(a, systematic.ancestors.numpy())  # the kind was used, not read as a threshold
    assert positional.log_mean_weight == multinomial.log_mean_weight
    # every particle impossible: nothing resampled, no ancestors
    g = tally.Graph(4, 1, "cpu")
    g.observe(g.assume(tally.Binomial(2, 0.5)), np.array([5, 5, 5, 5]))
    r = g.resample_by_weight(tally.Resampler.systematic)
    assert not r.resampled and r.ancestors is None and r.log_mean_weight == -math.inf


class PoissonFamily:
    """Poisson(rate) truncated under any settings: a prior's family, recording the tolerances it was asked for."""

    def __init__(self, rate):
        self.rate = rate
        self.tolerances = []

    def __call__(self, truncation):
        self.tolerances.append(truncation.tolerance)
        return tally.Poisson(self.rate).to_pmf(truncation)


def rate_hmm_bounds(assume_rate, truncation):
    """y ~ Poisson(R_S) with S ~ Categorical(0.3, 0.7) and the rates R_0, R_1 made by assume_rate(graph, mean) for
    means 3 and 8, observed y = 6 then y = 7 (exact joint laws): the log-likelihoods and their truncation bounds."""
    g = tally.Graph(1, 1, truncation)
    g.strict = True
    s = g.assume(tally.Categorical(np.array([0.3, 0.7])))
    rates = [assume_rate(g, 3.0), assume_rate(g, 8.0)]
    observations = [g.observe(g.poisson(s, rates), y) for y in (6, 7)]
    assert all(o.exact for o in observations)
    return [o[0] for o in observations], [o.exactness.truncation_error for o in observations]


def test_assume_with_a_family_follows_the_prior_tails_it_dropped():
    coarse = tally.Truncation(tolerance=1e-6)
    families = {}

    def with_family(g, mean):
        families[mean] = PoissonFamily(mean)
        return g.assume(tally.Poisson(mean).to_pmf(coarse), families[mean])

    likelihoods, bounds = rate_hmm_bounds(with_family, coarse)
    # the family was asked for the finer law (C++ asks for tolerance x 2^-40), inside observe (the GIL taken back)
    assert families[3.0].tolerances and families[3.0].tolerances[0] == pytest.approx(1e-6 * 2.0 ** -40, rel=1e-12)
    # the same bounds as a family the C++ side knows (assume(Poisson(m)) passes its own), tighter than a bare prior's
    _, value_family_bounds = rate_hmm_bounds(lambda g, mean: g.assume(tally.Poisson(mean)), coarse)
    _, bare_bounds = rate_hmm_bounds(lambda g, mean: g.assume(tally.Poisson(mean).to_pmf(coarse)), coarse)
    np.testing.assert_allclose(bounds, value_family_bounds, rtol=1e-12)
    assert all(b < bare / 2 for b, bare in zip(bounds, bare_bounds))

    # and sound: the exact evidence (enumerated here) lies within the bound of each log-likelihood
    r = np.arange(0, 150)
    joint_state = np.array([0.3, 0.7])[:, None, None]
    prior = joint_state * st.poisson(3.0).pmf(r)[None, :, None] * st.poisson(8.0).pmf(r)[None, None, :]
    selected = [r[:, None] * np.ones(len(r))[None, :], np.ones(len(r))[:, None] * r[None, :]]  # R_S per state
    total = 0.0
    for y, likelihood, bound in zip((6, 7), likelihoods, bounds):
        prior = prior * np.stack([st.poisson(selected[k]).pmf(y) for k in range(2)])
        exact = math.log(prior.sum()) - total
        total += exact
        assert abs(likelihood - exact) <= bound + 1e-13


def test_assume_with_a_family_that_fails_keeps_the_bare_bound():
    coarse = tally.Truncation(tolerance=1e-6)

    def raising(truncation):
        raise RuntimeError("no finer law")

    bare_likelihoods, bare_bounds = rate_hmm_bounds(
        lambda g, mean: g.assume(tally.Poisson(mean).to_pmf(coarse)), coarse)
    for family in (raising, lambda truncation: 3):  # an exception; a result that is not a Pmf
        likelihoods, bounds = rate_hmm_bounds(lambda g, mean: g.assume(tally.Poisson(mean).to_pmf(coarse), family),
                                              coarse)
        assert likelihoods == bare_likelihoods and bounds == bare_bounds


def test_assume_with_a_family_releases_it_with_the_graph():
    family = PoissonFamily(3.0)
    released = weakref.ref(family)
    g = tally.Graph()
    x = g.assume(tally.Poisson(3.0).to_pmf(), family)
    assert g.observe(x, 2)[0] == pytest.approx(st.poisson(3.0).logpmf(2), rel=1e-12)
    del family, x, g
    gc.collect()
    assert released() is None
