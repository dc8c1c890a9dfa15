"""tally's C++ exceptions arrive as Python exceptions: a tally.Error subclass that is also the matching built-in
exception, with the C++ message unchanged."""

import numpy as np
import pytest

import tally


def test_hierarchy():
    assert issubclass(tally.DomainError, ValueError) and issubclass(tally.DomainError, tally.Error)
    assert issubclass(tally.ShapeError, ValueError) and issubclass(tally.ShapeError, tally.Error)
    assert issubclass(tally.OverflowError, OverflowError) and issubclass(tally.OverflowError, tally.Error)
    assert issubclass(tally.CudaError, RuntimeError)
    assert issubclass(tally.DeviceMemoryError, tally.CudaError) and issubclass(tally.DeviceMemoryError, MemoryError)
    assert issubclass(tally.UsageError, RuntimeError) and issubclass(tally.InexactError, RuntimeError)
    assert issubclass(tally.Error, Exception)


def test_domain_errors():
    with pytest.raises(tally.DomainError, match=r"p = 1.5 is not a probability in \[0, 1\]"):
        tally.Binomial(10, 1.5)
    with pytest.raises(ValueError):
        tally.Poisson(-1.0)
    with pytest.raises(tally.DomainError):
        tally.Poisson(float("nan"))
    with pytest.raises(tally.DomainError):
        tally.Pmf(0, np.array([1.0, -1.0]))
    with pytest.raises(tally.DomainError):
        tally.Graph(0)
    with pytest.raises(tally.DomainError):
        tally.Binomial(10, 0.5).quantile(2.0)
    with pytest.raises(tally.DomainError):
        tally.Thinning(1.5)


def test_shape_and_overflow_errors():
    with pytest.raises(tally.ShapeError):
        tally.Pmf(0, np.zeros(3))
    with pytest.raises(tally.ShapeError):
        tally.Pmf(0, np.array([]))
    with pytest.raises(tally.ShapeError):
        tally.convolve(np.array([]), np.array([1.0]))
    with pytest.raises(tally.OverflowError, match="overflows the 64-bit integer range"):
        tally.shift(tally.Binomial(2, 0.5).to_pmf(), 2**63 - 1)
    with pytest.raises(OverflowError):
        tally.Poisson(1e6).to_pmf(tally.Truncation(1e-15, 100))
    a = tally.BitMatrix(3)
    a.set(0, 1)
    a.set(1, 0)
    with pytest.raises(tally.ShapeError, match="cycle"):
        tally.transitive_closure(a)


def test_usage_errors():
    g = tally.Graph()
    v = g.constant(3)
    g.observe(v, 3)
    with pytest.raises(tally.UsageError):
        g.observe(v, 3)  # observing a realized variable twice
    h = tally.Graph()
    x = h.assume(tally.Binomial(3, 0.5))
    with pytest.raises(tally.UsageError):
        g.observe(x, 1)  # another graph's variable
    with pytest.raises(tally.UsageError):
        g.scalar_value(g.assume(tally.Dirichlet(np.ones(2))))


def test_binding_argument_errors():
    g = tally.Graph(3, 1, "cpu")
    with pytest.raises(tally.ShapeError):
        g.observe(g.assume(tally.Poisson(1.0)), np.array([1, 2]))  # one value per particle
    with pytest.raises(ValueError, match="1-D"):
        g.constant(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(TypeError):
        g.assume("Binomial")
    with pytest.raises(TypeError, match="int64 Column"):
        tally.hazard_probabilities(g.log_weight_column(), 0.1)


@pytest.mark.skipif(tally.cuda_available(), reason="a device is present")
def test_cuda_graph_without_a_device():
    with pytest.raises(tally.CudaError):
        tally.Graph(4, 1, "cuda")
