"""tally.each: one law per group (or per particle) from arrays of parameters (NumPy, CuPy, lists or numbers)."""

import numpy as _numpy

# How many axes one law's parameter has, by family and parameter: 0 for a number, 1 for a vector (Categorical's
# weights, IndexedPoisson's rates, Dirichlet's alpha), 2 for MarkovStep's transition matrix. A family not listed
# takes numbers.
_PARAMETER_AXES = {
    "Categorical": (1,),
    "IndexedPoisson": (1,),
    "MarkovStep": (2,),
    "Dirichlet": (1,),
}


def _host_array(value, name):
    """value as a NumPy array on the host: a CuPy array (or anything with __cuda_array_interface__ and get()) is
    copied from the device; the rest goes through numpy.asarray."""
    if hasattr(value, "__cuda_array_interface__"):
        if hasattr(value, "get"):  # CuPy
            value = value.get()
        elif hasattr(value, "cpu"):  # a PyTorch tensor on the device
            value = value.cpu().numpy()
        else:
            raise TypeError(f"tally.each: {name} is a device array that can be copied to the host neither by get() "
                            f"(CuPy) nor by cpu() (PyTorch)")
    array = _numpy.asarray(value)
    if array.dtype == object:
        raise TypeError(f"tally.each: {name} is not an array of numbers")
    return array


def each(law, *parameters):
    """One law per group: ``[law(*row) for row in zip(*parameters)]``, the parameters broadcast along their leading
    axis, for ``Graph.assume(laws)`` and ``Graph.assume(parent, laws)`` of a grouped graph (``tally.Groups(G, S)``).

    Each parameter is a number (the same in every law) or an array with one entry per law along its first axis:
    a NumPy array, a CuPy array (copied to the host once), a list. A parameter that is itself a vector or a matrix
    (Categorical's weights, IndexedPoisson's rates, Dirichlet's alpha, MarkovStep's transition) has one more axis
    than one law's: shape (G, K) for G vectors of K, (G, K, K) for G transition matrices, or (K,) / (K, K) for the
    same in every law.

    Example: the exact likelihood of a grid of thinning probabilities, one group each::

        g = tally.Graph(tally.Groups(q.size, 1), device="cuda")
        y = g.assume(g.assume(tally.Poisson(20.0)), tally.each(tally.Thinning, q))

    Raises ValueError where the parameters' leading axes differ (other than 1) or an array has too many axes, and
    whatever the law raises for a bad parameter (tally.DomainError, naming the law).
    """
    if not parameters:
        raise TypeError("tally.each: no parameters (tally.each(tally.Poisson, rates))")
    axes = _PARAMETER_AXES.get(getattr(law, "__name__", ""), ())
    arrays, count = [], None
    for j, value in enumerate(parameters):
        name = f"parameter {j + 1} of {getattr(law, '__name__', law)}"
        array = _host_array(value, name)
        core = axes[j] if j < len(axes) else 0
        if array.ndim == core:
            arrays.append((array, False))  # the same in every law
            continue
        if array.ndim != core + 1:
            raise ValueError(f"tally.each: {name} has shape {array.shape}: expected {core} axes for one law, or "
                             f"{core + 1} for one law per group")
        if array.shape[0] != 1:
            if count is not None and count != array.shape[0]:
                raise ValueError(f"tally.each: {name} has {array.shape[0]} entries, another parameter {count}")
            count = array.shape[0]
        arrays.append((array, True))
    count = 1 if count is None else count

    def entry(array, per_law, k):
        value = array[k if array.shape[0] > 1 else 0] if per_law else array
        return value.item() if value.ndim == 0 else value

    return [law(*(entry(array, per_law, k) for array, per_law in arrays)) for k in range(count)]
