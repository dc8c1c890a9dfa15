"""tally: exact delayed-sampling algebra of discrete random variables (C++/CUDA), from Python.

Everything is defined by the compiled extension ``tally._tally`` (pybind11 over libtally); this file re-exports it.
Families (Binomial, Poisson, ...) have pdf/log_pdf/cdf/quantile (vectorized over NumPy arrays), support, mean,
variance and to_pmf; Pmf is a dense measure with a lower bound and a log scale (weights as NumPy arrays); the
algebra (sum, difference, affine, marginal, condition_on_sum, condition, ...) is exact; Graph is the
delayed-sampling engine over P particles on the CPU or a CUDA device. Errors are tally.Error subclasses that also
derive from the matching built-in exception (DomainError is a ValueError, OverflowError an OverflowError, ...).
"""

from ._tally import *  # noqa: F401,F403
from ._tally import __doc__ as _extension_doc  # noqa: F401
from . import _tally

# the names `from tally import *` should not bring in: they shadow built-ins
__all__ = [name for name in dir(_tally) if not name.startswith("_") and name not in ("sum", "OverflowError")]
sum = _tally.sum  # noqa: A001  (tally.sum: the law of a sum of independent variables)
OverflowError = _tally.OverflowError  # noqa: A001
__version__ = "0.1.0"
