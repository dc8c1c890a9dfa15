"""Shared fixtures of the Python tests: the tally package, the build directory's C++ programs, device detection.

Run: PYTHONPATH=<build>/python python3 -m pytest tests/python   (ctest does this as the test `python`)
"""

import json
import os
import pathlib
import subprocess

import pytest

import tally


def build_dir():
    """The build directory: $TALLY_BUILD_DIR, else the one the imported package was built in (<build>/python/tally)."""
    if os.environ.get("TALLY_BUILD_DIR"):
        return pathlib.Path(os.environ["TALLY_BUILD_DIR"])
    return pathlib.Path(tally.__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def cpp_reference():
    """The JSON that python/reference.cpp prints (the same computations through the C++ API)."""
    exe = build_dir() / "python" / "tally_python_reference"
    if not exe.exists():
        pytest.skip(f"{exe} not built (TALLY_BUILD_TESTS=ON builds it)")
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)


@pytest.fixture(scope="session")
def sir_program():
    exe = build_dir() / "models" / "sir"
    if not exe.exists():
        pytest.skip(f"{exe} not built (TALLY_BUILD_MODELS=ON builds it)")
    return exe


requires_device = pytest.mark.skipif(not tally.cuda_available(),
                                     reason="no CUDA device (or a build without the CUDA kernels)")
