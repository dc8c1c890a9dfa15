"""models/python/sir.py reproduces the C++ example's log-evidence (build/models/sir) for the same seed and particles,
for both filters, and draws its plot."""

import importlib.util
import math
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_sir():
    spec = importlib.util.spec_from_file_location("tally_sir_example", ROOT / "models" / "python" / "sir.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpp_results(exe, particles, seed, days):
    out = subprocess.run([str(exe), "--particles", str(particles), "--seed", str(seed), "--runs", "1", "--days",
                          str(days), "--compare-days", "0", "--results", "--plot", "/dev/null"],
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"RESULT model=sir method=(\w+) .* mean=(\S+) .* failed=(\d+)", line)
        if m:
            found[m.group(1)] = (float(m.group(2)), int(m.group(3)))
    return found


@pytest.mark.parametrize("particles,seed,days", [(64, 5, 14), (256, 3, 3)])
def test_same_log_evidence_as_cpp(sir_program, particles, seed, days):
    sir = load_sir()
    ref = cpp_results(sir_program, particles, seed, days)
    delayed = sir.delayed_filter(particles, seed, sir.IN_BED[:days])
    bootstrap = sir.bootstrap_filter(particles, seed, sir.IN_BED[:days])
    for name, run in (("delayed", delayed), ("bootstrap", bootstrap)):
        mean, failed = ref[name]
        if failed:
            assert run.log_evidence == -math.inf
        else:
            assert math.isfinite(run.log_evidence)
            assert run.log_evidence == pytest.approx(mean, abs=5e-7)  # C++ prints 6 decimals


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    sir = load_sir()
    path = tmp_path / "sir.png"
    assert sir.main(["--particles", "32", "--days", "4", "--plot", str(path)]) == 0
    assert path.stat().st_size > 10000
