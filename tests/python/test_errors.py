"""tally's C++ exceptions arrive as Python exceptions: a tally.Error subclass that is also the matching built-in
exception, with the C++ message unchanged."""

import math
import os
import pathlib
import shutil
import subprocess
import sys
import warnings

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
    with pytest.raises(tally.CudaError, match="no device can be used"):
        tally.Graph(4, 1, "cuda")


def test_device_fallback_says_why_the_cpu_is_used_and_only_then():
    why = tally.device_fallback()
    if not tally.cuda_compiled() or tally.cuda_available() or os.environ.get("TALLY_DEVICE") == "cpu":
        assert why == ""
    else:  # kernels built, no device: the probe's reason (tally printed nothing about it)
        assert why == tally.device_description() and why != ""


def test_counts_given_as_floats_are_taken_by_their_meaning_never_cast():
    b = tally.Binomial(10, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy cast warning: floats are not cast to integers
        got = b.cdf(np.array([np.nan, 3.0, 3.5, -1e300, 1e300]))
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [b.cdf(3), b.cdf(3), 0.0, 1.0])
    assert b.pdf(2.5) == 0.0 and b.log_pdf(2.5) == -math.inf and np.isnan(b.pdf(math.nan))
    assert b.pdf(3.0) == b.pdf(3) and tally.cdf(b, 3.7) == b.cdf(3)
    huge = tally.Delta(2**60)  # integers stay exact past 2^53
    assert huge.pdf(2**60) == 1.0 and huge.pdf(2**60 + 1) == 0.0


def test_observing_a_value_that_is_not_an_integer_says_so():
    g = tally.Graph(3, 1, "cpu")
    x = g.assume(tally.Poisson(3.0))
    with pytest.raises(TypeError, match="2.5 is not an integer"):
        g.observe(x, 2.5)
    with pytest.raises(TypeError, match=r"value\[1\] = 2.5 is not an integer"):
        g.observe(g.binomial(x, 0.5), np.array([1.0, 2.5, 3.0]))
    with pytest.raises(TypeError, match="expected integers"):
        g.observe(g.binomial(x, 0.5), "abc")
    with pytest.raises(ValueError, match="2 dimensions"):
        g.observe(g.binomial(x, 0.5), np.array([[1, 2, 3]]))
    # integers given as floats, and lists, are counts
    assert g.observe(g.binomial(x, 0.5), 2.0).exact
    fresh = tally.Graph(3, 1, "cpu")
    y = fresh.binomial(fresh.assume(tally.Poisson(3.0)), 0.5)
    from_list = np.asarray(fresh.observe(y, [1, 2, 1]).log_likelihoods)
    again = tally.Graph(3, 1, "cpu")
    z = again.binomial(again.assume(tally.Poisson(3.0)), 0.5)
    np.testing.assert_array_equal(np.asarray(again.observe(z, np.array([1.0, 2.0, 1.0])).log_likelihoods), from_list)


def test_a_graph_too_large_for_memory_says_how_many_particles_would_fit():
    with pytest.raises(MemoryError, match="particles would fit"):
        tally.Graph(2**40)


def test_max_work_refuses_a_marginal_at_once():
    # Truncation.max_work bounds one marginal's multiply-adds, as in C++: Z = X + Y with Y | X ~ Poisson(1.25 X) and
    # X over thousands of values is refused with an OverflowError naming max_work, and the graph stays usable
    t = tally.Truncation(max_work=2**18)
    assert t.max_work == 2**18 and tally.Truncation().max_work > 2**18
    g = tally.Graph(1, 23, "cpu", t)
    x = g.assume(tally.Poisson(20000.0))
    z = x + g.assume(x, tally.ScaledPoisson(1.25))
    with pytest.raises(tally.OverflowError, match="max_work"):
        g.marginal(z)
    s = g.assume(tally.Poisson(5.0))
    assert g.marginal(s + g.assume(s, tally.ScaledPoisson(1.25)))[0].log_mass() == pytest.approx(0.0, abs=1e-9)


def test_a_package_without_its_extension_says_how_to_build_it(tmp_path):
    # scripts/example builds the library and models/sir alone: build/python/tally then holds the Python files but
    # not the extension, and importing it must say what to build rather than "No module named 'tally._tally'"
    package = pathlib.Path(tally.__file__).parent
    copy = tmp_path / "tally"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("_tally*.so", "__pycache__"))
    run = subprocess.run([sys.executable, "-c", "import tally"], env={**os.environ, "PYTHONPATH": str(tmp_path)},
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode != 0
    assert "ImportError" in run.stderr and "is not built" in run.stderr and "scripts/build" in run.stderr
