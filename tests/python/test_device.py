"""On a CUDA device: the same draws as the CPU, and values / log-weights shared without copies through
__cuda_array_interface__ and DLPack (CuPy and PyTorch when installed). Skipped without a device."""

import numpy as np
import pytest

import tally
from conftest import requires_device

pytestmark = requires_device


def program(device, P=4096):
    g = tally.Graph(P, 9, device)
    x = g.assume(tally.Poisson(20.0))
    y = g.binomial(x, 0.3)
    o = g.observe(y, 5)
    return g, x, o


def test_same_draws_on_both_devices():
    gc_, xc, oc = program("cpu")
    gd, xd, od = program("cuda")
    assert gd.device == "cuda"
    np.testing.assert_allclose(od.log_likelihoods, oc.log_likelihoods, rtol=1e-12)
    np.testing.assert_array_equal(gd.value(xd), gc_.value(xc))


def test_cuda_array_interface_is_the_graph_memory():
    g, x, o = program("cuda")
    col = g.values(x)
    assert col.device == "cuda"
    cai = col.__cuda_array_interface__
    assert cai["data"][0] == col.ptr and cai["shape"] == (4096,) and cai["typestr"] == "<i8"
    assert g.values(x).ptr == col.ptr  # the same device memory each time: no copy
    np.testing.assert_array_equal(col.numpy(), g.value(x))
    lw = g.log_weight_column()
    assert lw.__cuda_array_interface__["typestr"] == "<f8"
    assert col.__dlpack_device__()[0] == 2
    with pytest.raises(AttributeError):
        col.__array_interface__


def test_cupy_reads_without_copy():
    cupy = pytest.importorskip("cupy")
    g, x, o = program("cuda")
    col = g.values(x)
    a = cupy.asarray(col)
    assert a.data.ptr == col.ptr
    np.testing.assert_array_equal(cupy.asnumpy(a), g.value(x))
    b = cupy.from_dlpack(g.log_weight_column())
    np.testing.assert_allclose(cupy.asnumpy(b), g.log_weights)


def test_torch_reads_without_copy():
    torch = pytest.importorskip("torch")
    g, x, o = program("cuda")
    col = g.values(x)
    t = torch.from_dlpack(col)
    assert t.data_ptr() == col.ptr and t.is_cuda
    np.testing.assert_array_equal(t.cpu().numpy(), g.value(x))


def test_law_batches_on_the_device():
    g = tally.Graph(4096, 9, "cuda")
    n = g.constant(np.arange(4096) % 50)
    q = tally.hazard_probabilities(g.values(n), 0.01)  # device columns in, a device batch out
    laws = tally.binomial_laws(g.values(n), q)
    assert laws.device == "cuda" and laws.weights.device == "cuda"
    assert laws.weights.__cuda_array_interface__["data"][0] == laws.weights.ptr
    host = tally.binomial_laws(np.arange(4096) % 50, q.numpy())
    np.testing.assert_array_equal(laws.offset.numpy(), np.asarray(host.offset))
    np.testing.assert_allclose(laws.weights.numpy(), np.asarray(host.weights), rtol=1e-11)


def test_per_group_parameters_from_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    q = cupy.asarray([0.2, 0.5, 0.9])
    g = tally.Graph(tally.Groups(3, 2), 1, "cuda")
    g.strict = True
    y = g.assume(g.assume(tally.Poisson(6.0)), tally.each(tally.Thinning, q))
    assert g.observe(y, 2).exact
    import scipy.stats as st

    np.testing.assert_allclose(g.resample_groups(0.0).log_mean_weight, st.poisson(6.0 * q.get()).logpmf(2), rtol=1e-12)
