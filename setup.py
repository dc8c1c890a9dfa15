"""Builds the `tally` Python package through CMake for `pip install .` (the library and the extension alone).

`pip install .` (or, offline on Debian with its setuptools, `pip install --no-build-isolation .`) configures the
repository into build-pip/ for the interpreter that runs pip (its headers and NumPy; pybind11 from the system),
builds the extension target tally_python (CUDA kernels included where CMake finds nvcc, as the main build does), and
installs the package laid out in <build>/python/tally. Environment: TALLY_PIP_BUILD_DIR (another build directory, e.g.
an existing `build` to reuse what it has built), TALLY_CMAKE_ARGS (more configure arguments, e.g. -DTALLY_CUDA=OFF).
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    """tally._tally, made by CMake (no sources of its own for setuptools)."""

    def __init__(self):
        super().__init__("tally._tally", sources=[])


class CMakeBuild(build_ext):
    """Configures and builds tally_python with CMake, then copies the laid-out package into the wheel."""

    def build_extension(self, ext):
        build = Path(os.environ.get("TALLY_PIP_BUILD_DIR", ROOT / "build-pip")).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython_EXECUTABLE={sys.executable}", "-DTALLY_PYTHON=ON"]
        configure += shlex.split(os.environ.get("TALLY_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "tally_python", "--parallel",
                               str(os.cpu_count() or 2)])
        package = build / "python" / "tally"
        destination = Path(self.get_ext_fullpath(ext.name)).parent
        destination.mkdir(parents=True, exist_ok=True)
        for item in package.iterdir():
            if item.is_file() and item.suffix in (".py", ".so"):  # (the extension: _tally.<abi>.so)
                shutil.copy2(item, destination / item.name)


setup(ext_modules=[CMakeExtension()], cmdclass={"build_ext": CMakeBuild}, packages=[], zip_safe=False,
      options={"build": {"build_base": "build-pip/setuptools"}, "egg_info": {"egg_base": "build-pip"}})
