"""Hypothesis strategies for op tests: shapes (broadcastable pairs, matmul pairs), dims with
keepdim, seeds and float dtypes; :func:`values` and :func:`non_contiguous` (NumPy only) are
re-exported from :mod:`tinygrad_tx.testing.values`.

hypothesis is an optional extra (``pip install "tinygrad_tx[testing]"``): this module imports
without it, and a strategy raises ImportError naming the extra when it is used.
"""
from __future__ import annotations

import numpy as np

from .values import DOMAINS, non_contiguous, values

try:
    from hypothesis import strategies as _st
    from hypothesis.extra import numpy as _hnp
except ImportError:  # the optional extra is not installed
    _st = _hnp = None

__all__ = ["DOMAINS", "broadcastable_pair", "dims_and_keepdim", "float_dtypes", "matmul_shapes",
           "non_contiguous", "seeds", "shapes", "values"]

MISSING = ("tinygrad_tx.testing's strategies need hypothesis, an optional extra: "
           "pip install \"tinygrad_tx[testing]\" (or pip install \"hypothesis>=6.80\")")


def _require():
    if _st is None:
        raise ImportError(MISSING)
    return _st


def __getattr__(name):   # module-level strategies, built on first use (PEP 562)
    if name == "seeds":
        return _require().integers(min_value=0, max_value=2**32 - 1)
    if name == "float_dtypes":
        return _require().sampled_from([np.float64, np.float32])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def shapes(min_dims=0, max_dims=4, min_side=1, max_side=5):
    """Array shapes (tuples of ints) with ``min_dims``..``max_dims`` axes of ``min_side``..``max_side``."""
    _require()
    return _hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def broadcastable_pair(max_dims=4, max_side=5):
    """Two shapes that broadcast together (size-1 axes and missing leading axes included)."""
    _require()
    return _hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims, min_side=1,
                                              max_side=max_side).map(lambda s: s.input_shapes)


def matmul_shapes():
    """Shape pairs following torch.matmul's rules: 1-D operands and broadcast batch dims."""
    st = _require()

    @st.composite
    def draw_pair(draw):
        n, k, m = (draw(st.integers(1, 5)) for _ in range(3))
        kind = draw(st.sampled_from(["vv", "mv", "vm", "mm", "batched"]))
        if kind == "vv":
            return (k,), (k,)
        if kind == "mv":
            return draw(shapes(0, 2, max_side=3)) + (n, k), (k,)
        if kind == "vm":
            return (k,), draw(shapes(0, 2, max_side=3)) + (k, m)
        if kind == "mm":
            return (n, k), (k, m)
        ba, bb = draw(broadcastable_pair(max_dims=2, max_side=3))
        return ba + (n, k), bb + (k, m)

    return draw_pair()


def dims_and_keepdim(ndim):
    """A ``dim`` argument for an ``ndim``-D input (None, an int, or a tuple; negatives included)
    and ``keepdim``, as a pair."""
    st = _require()

    @st.composite
    def draw_dims(draw):
        keepdim = draw(st.booleans())
        if ndim == 0:
            return draw(st.sampled_from([None, 0, -1])), keepdim
        kind = draw(st.sampled_from(["none", "int", "tuple"]))
        if kind == "none":
            return None, keepdim
        if kind == "int":
            return draw(st.integers(-ndim, ndim - 1)), keepdim
        axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
        return tuple(a - ndim if draw(st.booleans()) else a for a in axes), keepdim

    return draw_dims()
