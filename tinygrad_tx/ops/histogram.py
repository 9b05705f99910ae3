"""Counting ops: ``bincount``, ``histc`` and ``histogram`` (torch's names, arguments, results and
errors). None is differentiable — their outputs are counts, a piecewise-constant function of the
input (torch's have no ``grad_fn`` either) — so each is plain NumPy returning a new tensor."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core.tensor import _adopt
from .reduce import require_tensor

HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])

_TORCH_NAMES = {"b": "Bool", "i": "Long", "u": "Byte"}


def bincount(input, weights=None, minlength: int = 0):
    """Occurrences of each value 0..max of a 1-D non-negative integer tensor (or the sum of
    ``weights`` at each): length max(input) + 1, at least ``minlength``. Integer counts are int64;
    float32 weights give float32 (summed in float32, in input order), other weights float64, as
    torch's; an empty input gives int64 zeros even with weights (torch's rule)."""
    x = require_tensor(input, "bincount")
    a = x._data
    if a.dtype.kind == "b" or a.dtype.kind == "f":
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{'Bool' if a.dtype.kind == 'b' else 'Float'}'")
    if a.ndim != 1 or a.dtype.kind not in "iu" or (a.size and a.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength!r}")
    if weights is None:
        return _adopt(np.bincount(a, minlength=int(minlength)).astype(np.int64))
    w = weights._data if hasattr(weights, "_data") else np.asarray(weights)
    if w.shape != a.shape:
        raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input, got weights of "
                           f"shape {tuple(w.shape)} for input of shape {tuple(a.shape)}")
    if a.size == 0:   # torch: an empty input gives int64 zeros, whatever the weights
        return _adopt(np.zeros(int(minlength), dtype=np.int64))
    out_dtype = np.float32 if w.dtype == np.float32 else np.float64
    out = np.zeros(max(int(a.max()) + 1, int(minlength)), dtype=out_dtype)
    np.add.at(out, a, w.astype(out_dtype))   # in input order, in the result's dtype, as torch's loop adds
    return _adopt(out)


def _float_input(input, op):
    x = require_tensor(input, op)
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f'"histogram_cpu" not implemented for '
                                  f"'{_TORCH_NAMES.get(x._data.dtype.kind, x._data.dtype.name)}'")
    return x._data


def _bins_count(bins):
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    return int(bins)


def histc(input, bins: int = 100, min: float = 0, max: float = 0):
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (values outside, and NaN, are
    left out; max itself is in the last bin); min = max = 0 takes the data's range, widened by 1
    on each side when it is a single value. The result has the input's float dtype."""
    a = _float_input(input, "histc")
    n = _bins_count(bins)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    finite = a[np.isfinite(a)]
    if lo == hi and finite.size:
        lo, hi = float(finite.min()), float(finite.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    inside = finite[(finite >= lo) & (finite <= hi)]
    counts, _ = np.histogram(inside, bins=n, range=(lo, hi))
    return _adopt(counts.astype(a.dtype))


def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):
    """(hist, bin_edges) of ``input``: ``bins`` equal bins over ``range`` (default: the data's
    range, widened by 0.5 on each side when it is a single value) or the given increasing edges (a
    1-D tensor); the last bin includes its right edge; ``weight`` weighs each value; ``density``
    divides by the total and the bin widths. Both results have the input's float dtype."""
    a = _float_input(input, "histogram")
    w = None if weight is None else np.asarray(getattr(weight, "_data", weight), dtype=np.float64).reshape(-1)
    if w is not None and w.size != a.size:
        raise RuntimeError(f"torch.histogram(): weight should have the same shape as input, got {tuple(np.shape(w))} "
                           f"and {tuple(a.shape)}")
    if hasattr(bins, "_data"):
        edges = np.asarray(bins._data, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
            raise RuntimeError("torch.histogram(): bins must be a 1-d tensor of at least 2 increasing edges, "
                               f"got {edges.tolist()}")
        hist, edges = np.histogram(a.reshape(-1), bins=edges, weights=w, density=density)
    else:
        n = _bins_count(bins)
        if range is not None and not range[0] <= range[1]:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {range[0]} max {range[1]}")
        hist, edges = np.histogram(a.reshape(-1), bins=n, range=range, weights=w, density=density)
    return HistogramResult(_adopt(hist.astype(a.dtype)), _adopt(edges.astype(a.dtype)))


TENSOR_METHODS = {"bincount": bincount, "histc": histc, "histogram": histogram}
FUNCTIONS = dict(TENSOR_METHODS)
