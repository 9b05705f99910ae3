"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, mode; and the
non-differentiable unique, searchsorted, bucketize.

Every differentiable op here *selects*: its values are x gathered at indices computed
with NumPy (``np.argsort``, always stable, so equal keys keep their order as torch's
``stable=True`` does), and the gradient goes back to those positions through
:class:`~tinygrad_tx.ops.reduce_minmax.SelectAlongDim`. The exceptions are ``median()``
of all elements, which shares the gradient among the elements equal to the median as
torch does (:class:`MedianAll`).

NaN sorts as the largest value (last ascending, first descending), as in torch.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..core.function import ArrayFunction
from ..autograd.node_names import named
from .reduce import DimensionError, as_function, canonical_dim
from .reduce_minmax import SelectAlongDim

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])
MedianResult = namedtuple("median", ["values", "indices"])
ModeResult = namedtuple("mode", ["values", "indices"])


def stable_argsort(x, axis, descending=False):
    """Indices that sort x along ``axis``, equal keys in their original order (NaN last
    ascending, first descending). Descending: sort the flipped slice ascending and flip the
    result back, which keeps equal keys in increasing original index."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return np.flip(n - 1 - np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)


def _flag(value, name, op):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument '{name}' must be a bool, got {value!r} ({type(value).__name__})")
    return bool(value)


def _k(k, op):
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"{op}(): argument 'k' must be an int, got {k!r} ({type(k).__name__})")
    return int(k)


def _as_1d(s, dim, op):
    """(tensor with at least one dim, axis, was 0-d): a 0-d input is handled as shape (1,)."""
    ax = canonical_dim(dim, s.ndim, op)
    return (s.reshape(1), 0, True) if s.ndim == 0 else (s, ax, False)


def _select(s, idx, ax, squeeze_0d, result, keepdim=True):
    """(values gathered at idx along ax, indices) as the named tuple ``result`` (its node named
    as torch's: ``sort`` -> ``SortBackward0``, ``median(dim)`` -> ``MedianBackward1``)."""
    from ..tensor import Tensor, _adopt
    values = named(SelectAlongDim.apply(s, idx, axis=ax, keepdim=keepdim),
                   result.__name__.capitalize() + ("Backward1" if result is MedianResult else "Backward0"))
    indices = idx if keepdim else np.squeeze(idx, ax)
    if squeeze_0d:
        return result(values.reshape(()), _adopt(indices.reshape(())))
    return result(values, _adopt(indices))


def sort(s, dim=-1, descending=False, stable=False):
    """(values, indices) along ``dim``; stable whatever ``stable`` says (torch allows it)."""
    descending = _flag(descending, "descending", "sort")
    _flag(stable, "stable", "sort")
    t, ax, was0d = _as_1d(s, dim, "sort")
    return _select(t, stable_argsort(t._data, ax, descending), ax, was0d, SortResult)


def argsort(s, dim=-1, descending=False, stable=False):
    return sort(s, dim, descending, stable).indices


def msort(s):
    """Sort along the first dim (torch.msort)."""
    return sort(s, 0).values


def topk(s, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) along ``dim``, in sorted order (always: torch leaves the
    order free when sorted=False, so sorted order is a valid answer)."""
    k = _k(k, "topk")
    largest = _flag(largest, "largest", "topk")
    _flag(sorted, "sorted", "topk")
    t, ax, was0d = _as_1d(s, dim, "topk")
    n = t.shape[ax]
    if not 0 <= k <= n:
        raise IndexError(f"topk(): selected index k={k} out of range for dimension {dim} of size {n}")
    idx = np.take(stable_argsort(t._data, ax, largest), np.arange(k), axis=ax)
    return _select(t, idx, ax, was0d and k == 1, TopkResult)


def _nonempty_dim(t, ax, op):
    if t.shape[ax] == 0:
        raise DimensionError(f"{op}(): Expected reduction dim {ax} to have non-zero size "
                             f"(input shape {tuple(t.shape)})")


def kthvalue(s, k, dim=-1, keepdim=False):
    """The k-th smallest element (k from 1) along ``dim``, and its index."""
    k = _k(k, "kthvalue")
    t, ax, was0d = _as_1d(s, dim, "kthvalue")
    _nonempty_dim(t, ax, "kthvalue")
    n = t.shape[ax]
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k={k} out of range for dimension {dim} of size {n}")
    idx = np.take(stable_argsort(t._data, ax), [k - 1], axis=ax)
    return _select(t, idx, ax, was0d, KthvalueResult, keepdim)


class MedianAll(ArrayFunction):
    """y = the lower median of all elements: the ((n-1)//2)-th smallest (torch's rule, no
    averaging); NaN if any element is NaN; NaN for an empty input.

    y equals one selected element; at a tie of k elements equal to y torch shares the
    gradient evenly, so do we: dL/dx = g · [x == y] / count(x == y) (the NaN positions
    when y is NaN)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        flat = x.reshape(-1)
        if flat.size == 0:
            return np.asarray(np.nan, dtype=x.dtype)
        if x.dtype.kind == "f" and np.isnan(flat).any():
            y = np.asarray(np.nan, dtype=x.dtype)
        else:
            y = np.asarray(np.partition(flat, (flat.size - 1) // 2)[(flat.size - 1) // 2])
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        hit = np.isnan(x) if np.isnan(y) else x == y
        return hit * (g / int(np.count_nonzero(hit)))


def median(s, dim=None, keepdim=False):
    """Without dim: the lower median of all elements (a 0-d tensor). With dim: (values,
    indices) of the lower median of each slice; a slice holding NaN gives NaN and the index
    of its first NaN."""
    if s._data.dtype.kind == "b":
        raise TypeError("median(): not implemented for bool tensors")
    if dim is None:
        return MedianAll.apply(s)
    t, ax, was0d = _as_1d(s, dim, "median")
    _nonempty_dim(t, ax, "median")
    x = t._data
    order = stable_argsort(x, ax)
    n = x.shape[ax]
    pos = np.full(np.delete(x.shape, ax), (n - 1) // 2)
    if x.dtype.kind == "f":   # NaNs sort last: a slice with NaN takes its first NaN
        valid = np.sum(~np.isnan(x), axis=ax)
        pos = np.where(valid < n, valid, pos)
    idx = np.take_along_axis(order, np.expand_dims(pos, ax), axis=ax)
    return _select(t, idx, ax, was0d, MedianResult, keepdim)


def _runs_bounds(sv):
    """For each position j of the sorted rows ``sv`` (M, n): the first and last position of
    the run of equal values holding j."""
    m, n = sv.shape
    pos = np.broadcast_to(np.arange(n), (m, n))
    start = np.ones((m, n), bool)
    start[:, 1:] = sv[:, 1:] != sv[:, :-1]
    end = np.ones((m, n), bool)
    end[:, :-1] = start[:, 1:]
    first = np.maximum.accumulate(np.where(start, pos, 0), axis=1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(end, pos, n), 1), axis=1), 1)
    return first, last


def mode(s, dim=-1, keepdim=False):
    """The most frequent value of each slice (the smallest one at a tie of counts) and the
    index of its last occurrence, as torch's CPU kernel returns. (NaN slices: torch's
    answer follows no documented rule; ours treats each NaN as its own value.)"""
    t, ax, was0d = _as_1d(s, dim, "mode")
    _nonempty_dim(t, ax, "mode")
    x = np.moveaxis(t._data, ax, -1)
    lead, n = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, n)
    order = np.argsort(rows, axis=1, kind="stable")
    first, last = _runs_bounds(np.take_along_axis(rows, order, axis=1))
    best = np.argmax(last - first + 1, axis=1)      # the first longest run: the smallest value
    r = np.arange(rows.shape[0])
    idx = order[r, last[r, best]].reshape(lead)
    return _select(t, np.expand_dims(idx, ax), ax, was0d, ModeResult, keepdim)


# ============================================================================ no gradient

def unique(s, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Distinct values (always sorted, as torch's CPU kernel returns them; NaNs are not
    merged, as in torch), with the inverse map and the counts on request."""
    from ..tensor import Tensor, _adopt
    x = s._data
    if dim is None:
        vals, inv, counts = np.unique(x.reshape(-1), return_inverse=True, return_counts=True,
                                      equal_nan=False)
        inv = inv.reshape(x.shape)
    else:
        ax = canonical_dim(dim, x.ndim, "unique")
        vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, axis=ax)
        inv = inv.reshape(-1)
    out = [_adopt(vals)]
    if return_inverse:
        out.append(_adopt(inv.astype(np.int64)))
    if return_counts:
        out.append(_adopt(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _side(right, side, op):
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise ValueError(f"{op}(): side can only be 'left' or 'right', got {side!r}")
    if right and side == "left":
        raise ValueError(f"{op}(): side='left' and right=True contradict each other")
    return side


def _array(v):
    from ..tensor import Tensor, _adopt
    return v._data if isinstance(v, Tensor) else np.asarray(v)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion points of ``input`` into the last dim of ``sorted_sequence`` (a 1-D
    sequence for any input, or one sequence per row when the leading dims match)."""
    from ..tensor import Tensor, _adopt
    seq, vals = _array(sorted_sequence), _array(input)
    side = _side(right, side, "searchsorted")
    if seq.ndim == 0:
        raise ValueError("searchsorted(): sorted_sequence must have at least one dimension, got a 0-d tensor")
    if sorter is not None:
        order = _array(sorter)
        if order.shape != seq.shape:
            raise ValueError(f"searchsorted(): sorter shape {tuple(order.shape)} must equal the "
                             f"sorted_sequence shape {tuple(seq.shape)}")
        seq = np.take_along_axis(seq, order.astype(np.int64), axis=-1)
    if seq.ndim == 1:
        out = np.searchsorted(seq, vals, side=side)
    else:
        if vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]:
            raise ValueError(f"searchsorted(): sorted_sequence of shape {tuple(seq.shape)} must be 1-D or share "
                             f"every dim but the last with input (shape {tuple(vals.shape)})")
        s2, v2 = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(s2, v2)]).reshape(vals.shape)
    return _adopt(np.asarray(out, dtype=np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Bucket index of each element of ``input`` among 1-D ``boundaries``: i such that
    boundaries[i-1] < x <= boundaries[i] (right=False), or boundaries[i-1] <= x < boundaries[i]."""
    b = _array(boundaries)
    if b.ndim != 1:
        raise ValueError(f"bucketize(): boundaries must be 1-D, got shape {tuple(b.shape)}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


TENSOR_METHODS = {"sort": sort, "argsort": argsort, "msort": msort, "topk": topk, "kthvalue": kthvalue,
                  "median": median, "mode": mode, "unique": unique}
FUNCTIONS = {name: as_function(name, fn) for name, fn in TENSOR_METHODS.items()}
FUNCTIONS.update(searchsorted=searchsorted, bucketize=bucketize)
