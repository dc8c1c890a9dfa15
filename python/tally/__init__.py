"""tally: exact delayed-sampling algebra of discrete random variables (C++/CUDA), from Python.

Everything is defined by the compiled extension ``tally._tally`` (pybind11 over libtally); this file re-exports it.
Families (Binomial, Poisson, ...) have pdf/log_pdf/cdf/quantile (vectorized over NumPy arrays), support, mean,
variance and to_pmf; Pmf is a dense measure with a lower bound and a log scale (weights as NumPy arrays); the
algebra (sum, difference, affine, marginal, condition_on_sum, condition, ...) is exact; Graph is the
delayed-sampling engine over P particles on the CPU or a CUDA device. Errors are tally.Error subclasses that also
derive from the matching built-in exception (DomainError is a ValueError, OverflowError an OverflowError, ...).
"""

import numpy as _numpy

from . import _build_info


def _version(text):
    return tuple(int(part) for part in text.split(".")[:2] if part.isdigit())


# pybind11 before 2.12 does not know NumPy 2's array descriptors: a crash, not an error, on the first array
if _version(_numpy.__version__) >= (2, 0) and _version(_build_info.pybind11_version) < (2, 12):
    raise ImportError(f"tally was built with pybind11 {_build_info.pybind11_version}, which does not support "
                      f"NumPy {_numpy.__version__}: rebuild it with pybind11 >= 2.12, or use NumPy 1.x")

try:
    from ._tally import *  # noqa: E402,F401,F403
except ModuleNotFoundError as _missing:
    if _missing.name != __name__ + "._tally":
        raise
    # the package's Python files are laid out at configure time, the extension only when its target is built
    # (scripts/example builds the library and models/sir alone)
    raise ImportError("tally's compiled extension (tally._tally) is not built next to " + __file__ + ": build it with "
                      "scripts/build (or `cmake --build <build dir> --target tally_python`), or install the package with "
                      "pip install .") from None
from . import _tally  # noqa: E402
from ._each import each  # noqa: E402

# the names `from tally import *` should not bring in: they shadow built-ins
__all__ = [name for name in dir(_tally) if not name.startswith("_") and name not in ("sum", "OverflowError")] + ["each"]
sum = _tally.sum  # noqa: A001  (tally.sum: the law of a sum of independent variables)
OverflowError = _tally.OverflowError  # noqa: A001
__version__ = "0.1.0"
