"""models/python/population_surface.py: every grid point's exact log-likelihood from one grouped graph equals a
graph of that point alone, the data are the C++ examples', and the program draws its plot."""

import importlib.util
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_example():
    path = ROOT / "models" / "python" / "population_surface.py"
    spec = importlib.util.spec_from_file_location("tally_population_surface_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_group_equals_its_own_graph():
    example = load_example()
    y = example.simulate(8)
    rng = np.random.default_rng(3)
    phi, p = rng.uniform(0.3, 0.99, 12), rng.uniform(0.1, 0.99, 12)
    surface = example.log_likelihoods(y, phi, p, "cpu")
    assert surface.shape == (12,)
    for k in range(12):
        assert surface[k] == pytest.approx(example.one_point(y, phi[k], p[k]), rel=1e-12)


def test_the_data_and_the_value_at_the_data_parameters_are_the_cpp_examples():
    example = load_example()
    y = example.simulate(20)
    # models/population_surface's value at (0.8, 0.6), 20 seasons, data seed 7 (bench/RESULTS.md, and the peer's)
    assert example.log_likelihoods(y, np.array([0.8]), np.array([0.6]), "cpu")[0] == pytest.approx(-62.3909478120,
                                                                                                   abs=1e-9)


def test_the_program_prints_its_maximum_and_draws(tmp_path, capsys):
    example = load_example()
    path = tmp_path / "surface.png"
    assert example.main(["--side", "6", "--seasons", "6", "--plot", str(path)]) == 0
    out = capsys.readouterr().out
    assert "maximum" in out and "36 parameter sets" in out
    assert path.stat().st_size > 1000
