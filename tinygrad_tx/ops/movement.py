"""Movement ops: they rearrange, select or copy elements without arithmetic.

Each output element is some input element, so every backward routes the
incoming gradient back to where that element came from: the inverse
rearrangement, or a scatter (summing when one input element was used several
times, as with repeated integer indices).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.function import ArrayFunction
from ..core import seam as _seam
from ..core.accumulate import SliceGrad
from ..core.tensor import IndexOutOfRange   # noqa: F401  (raised here; defined beside _canonical_dim)
from ..core.tensor import _canonical_dim as canonical_dim   # the one dim check, the core's


# ============================================================================ views

def infer_shape(shape, size: int, op: str = "reshape"):
    """Resolve one -1 in ``shape`` and check the element count, with torch's message."""
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) == size and min(shape, default=0) >= 0:   # the common case: nothing to infer
        return shape
    if shape.count(-1) > 1:
        raise ValueError(f"{op}: only one dimension can be inferred, got shape {list(shape)}")
    if any(s < -1 for s in shape):
        raise ValueError(f"{op}: invalid shape dimension in {list(shape)}")
    if -1 in shape:   # math.prod, not np.prod: exact Python ints and ~20x less call overhead
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or size % known:
            raise ValueError(f"{op}: shape {list(shape)} is invalid for input of size {size}")
        shape = tuple(size // known if s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise ValueError(f"{op}: shape {list(shape)} is invalid for input of size {size}")
    return shape


class Reshape(ArrayFunction):
    """y = x with a new shape (same elements in row-major order).
    The inverse rearrangement of g is g reshaped to x's shape."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(infer_shape(shape, x.size))

    @staticmethod
    def backward(ctx, g):
        return np.reshape(g, ctx.in_shape), None


class Permute(ArrayFunction):
    """y = x with axes reordered: y.shape[i] = x.shape[dims[i]].
    dL/dx = g with the inverse permutation applied (argsort of dims)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))   # argsort of dims
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, g):
        return np.transpose(g, ctx.inverse), None


class Expand(ArrayFunction):
    """y = x broadcast to ``shape`` (no copy). Each x element feeds every output
    element it was broadcast to, so dL/dx is the sum of g over the broadcast
    axes — which is exactly what the engine's reduction to the input's shape
    does, so the backward returns g unchanged."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, g):
        return g, None


# ============================================================================ indexing

def _slice_bound(v, what, sl):
    if v is None or isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return v
    if hasattr(v, "_data") and v._data.size == 1 and v._data.dtype.kind in "iu":
        return int(v.item())     # Tensor.item: a compiled call guards or refuses the read
    raise TypeError(f"slice indices must be integers or None or have an __index__ method: "
                    f"{what} {v!r} of {sl!r}")


def _check_slice(sl: slice) -> slice:
    """A slice with int (or None) start/stop/step; a step <= 0 is torch's ValueError."""
    start, stop = _slice_bound(sl.start, "start", sl), _slice_bound(sl.stop, "stop", sl)
    step = _slice_bound(sl.step, "step", sl)
    if step is not None and step <= 0:
        raise ValueError(f"step must be greater than zero, got {step} in {sl!r} (use flip() to "
                         "reverse a tensor)")
    return slice(start, stop, step)


def _normalize_index(index, ndim=None):
    """Tensors become arrays, lists become integer/bool arrays; report if advanced. Given the
    indexed tensor's ``ndim``, an Ellipsis among index arrays is written out as the slices it
    stands for (``_expand_ellipsis``)."""
    from ..tensor import Tensor
    if isinstance(index, list) and _sequence_as_tuple(index, Tensor):
        warnings.warn(_LIST_INDEX_DEPRECATED, UserWarning, stacklevel=_stacklevel_of_caller())
        index = tuple(index)
    items = index if isinstance(index, tuple) else (index,)
    out = []
    advanced = False
    for it in items:
        if isinstance(it, Tensor):
            if it._data.ndim == 0 and it._data.dtype.kind in "iub":
                it = _scalar_index(it)
            else:
                it = it._data
        elif isinstance(it, np.ndarray) and it.ndim == 0 and it.dtype.kind in "iub":
            it = bool(it) if it.dtype == np.uint8 else it.item()
        if isinstance(it, slice):
            it = _check_slice(it)
        elif isinstance(it, list):
            try:
                it = np.asarray(it)
            except ValueError:
                raise IndexError(f"index: ragged nested list {it!r} cannot be an index (every row "
                                 "must have the same length)") from None
            if it.size == 0:
                it = it.astype(np.int64)   # x[[]]: torch reads an empty list as an int64 index
            if it.dtype.kind == "f":
                raise TypeError(f"tensors used as indices must be long or bool, got a list of floats {index!r}")
        if isinstance(it, np.ndarray):
            if it.dtype == np.uint8:   # torch reads a byte index as a mask (deprecated there)
                it = it.astype(np.bool_)
            if it.dtype.kind not in "ib" or (it.dtype.kind == "i" and it.dtype.itemsize < 4):
                raise _IndexDtypeError(f"tensors used as indices must be long, int, byte or bool tensors, got "
                                       f"dtype {it.dtype}")
            advanced = True
        elif isinstance(it, float) or (isinstance(it, np.generic) and it.dtype.kind == "f"):
            raise TypeError(f"index must be an int, slice, None, Ellipsis, or an integer/bool tensor, got {it!r}")
        out.append(it)
    if ndim is not None and (advanced or any(isinstance(it, (bool, np.bool_)) for it in out)):
        out = _expand_ellipsis(out, ndim)
    return (tuple(out) if isinstance(index, tuple) or len(out) != 1 else out[0]), advanced


def _expand_ellipsis(items: list, ndim: int) -> list:
    """``items`` with its Ellipsis replaced by the ``slice(None)`` of each dim it covers. torch
    places the index arrays' dims by the dims they index, so arrays with a zero-width Ellipsis
    between them are adjacent and their dims stay in place (``x[:, [0], ..., [1]]`` of a 3-d x is
    (2, 1)); NumPy reads any Ellipsis between them as a separation and moves them first ((1, 2))."""
    if sum(it is Ellipsis for it in items) != 1:
        return items   # none, or several: NumPy's own error
    used = 0
    for it in items:
        if isinstance(it, np.ndarray):
            used += it.ndim if it.dtype == np.bool_ else 1
        elif it is not None and it is not Ellipsis and not isinstance(it, (bool, np.bool_)):
            used += 1
    if used > ndim:
        return items   # too many indices: NumPy's own error
    k = next(i for i, it in enumerate(items) if it is Ellipsis)   # (list.index compares arrays with ==)
    return items[:k] + [slice(None)] * (ndim - used) + items[k + 1:]


class _IndexDtypeError(IndexError, TypeError):
    """An index tensor of a dtype torch refuses (its IndexError; a TypeError as this project raised)."""


_LIST_INDEX_DEPRECATED = (   # torch 2.13's words, less its "(Triggered internally at ...)" suffix
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in "
    "pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor "
    "index, x[torch.tensor(seq)], which will result either in an error or a different result")


def _stacklevel_of_caller() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    import os
    import sys
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _sequence_as_tuple(index: list, tensor_type) -> bool:
    """torch's rule for a list index: fewer than 32 items, one of them a sequence, a tensor, a slice,
    Ellipsis or None, and the list is a tuple of indices (``x[[[0, 1], [1, 0]]]`` is
    ``x[[0, 1], [1, 0]]``, two elements, where NumPy reads one 2-D index array); a list of numbers
    is one index array."""
    return len(index) < 32 and any(isinstance(i, (list, tuple, np.ndarray, tensor_type, slice)) or i is None
                                   or i is Ellipsis for i in index)


def _scalar_index(t):
    """A 0-d integer (bool) tensor used as an index is the number it holds, as in torch: an
    integer selects (a view, no advanced-index broadcasting), a bool adds a dim of size 1 or 0."""
    _seam.read(t, "a 0-d tensor used as an index")   # tinygrad_tx.compile guards on the value
    return bool(t._data) if t._data.dtype == np.uint8 else t._data.item()


def _is_int(it) -> bool:
    return isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_))


def torch_order(index):
    """torch's two steps for an index that mixes integers (or bool scalars) with index arrays, or
    None when NumPy's one step gives the same result.

    torch applies the basic items first -- an integer selects (its dim is gone before any index
    array is placed), None and a bool scalar add a dim -- and then the index arrays (a bool scalar
    is the array [0] or [] on its new dim) on what is left. NumPy instead treats an integer as a
    0-d index array that broadcasts with the others, which moves the result's dims: for x of shape
    (2, 3, 3), ``x[0, :, [1, 2]]`` is (3, 2) in torch and (2, 3) in NumPy. Returns
    ``(basic, advanced)``: ``x[index]`` (torch) is ``x[basic][advanced]`` (NumPy)."""
    items = index if isinstance(index, tuple) else (index,)
    arrays = any(isinstance(it, np.ndarray) for it in items)
    bools = any(isinstance(it, (bool, np.bool_)) for it in items)
    if not ((arrays or bools) and (bools or any(_is_int(it) for it in items))):
        return None
    basic, advanced = [], []
    for it in items:
        if isinstance(it, (bool, np.bool_)):
            basic.append(None)
            advanced.append(np.zeros(1 if it else 0, dtype=np.int64))
        elif _is_int(it):
            basic.append(it)
        elif isinstance(it, np.ndarray):
            basic.extend([slice(None)] * (it.ndim if it.dtype == np.bool_ else 1))
            advanced.append(it)
        elif it is Ellipsis:
            basic.append(it)
            advanced.append(it)
        else:   # a slice, or None (its new dim is whole in the second step)
            basic.append(it)
            advanced.append(slice(None))
    return tuple(basic), tuple(advanced)


def check_masks(shape: tuple, index) -> None:
    """torch's IndexError for a bool mask whose shape differs from the dims it indexes (NumPy reads
    an empty mask of the wrong shape as an empty integer index and accepts it). ``index`` is
    normalized; ints drop a dim and None adds one before the mask, as in torch's message."""
    items = index if isinstance(index, tuple) else (index,)
    is_mask = [isinstance(it, np.ndarray) and it.dtype == np.bool_ for it in items]
    if not any(is_mask):
        return
    used = sum(it.ndim if m else (0 if it is None or it is Ellipsis else 1) for it, m in zip(items, is_mask))
    cur, pos = list(shape), 0
    for it, m in zip(items, is_mask):
        if it is Ellipsis:
            pos += max(len(shape) - used, 0)
        elif it is None:
            cur.insert(pos, 1)
            pos += 1
        elif m:
            for j, size in enumerate(it.shape):
                if pos + j < len(cur) and cur[pos + j] != size:
                    raise IndexOutOfRange(f"The shape of the mask {list(it.shape)} at index {j} does not match "
                                          f"the shape of the indexed tensor {cur} at index {pos + j}")
            pos += it.ndim
        elif isinstance(it, (int, np.integer)) and pos < len(cur):
            del cur[pos]
        else:
            pos += 1


class GetItem(ArrayFunction):
    """y = x[index] (basic indexing: ints, slices, None, Ellipsis; or advanced:
    integer / bool arrays).

    Basic indexing selects each x element at most once: dL/dx = zeros with
    g written into the selected positions.
    Integer-array indexing may select an element several times; each use
    contributes, so dL/dx is a scatter-add: np.add.at(zeros, index, g).

    On arrays the backward hands the engine that (index, g) pair, a ``SliceGrad``, and the
    engine adds g into place in x's gradient (``autograd/accumulate.py``): T slices x[t] of a
    sequence then cost O(x.size) in all, not T arrays of x's size."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, index, advanced=False):
        if advanced:
            check_masks(x.shape, index)
        try:
            y = x[index]
        except IndexError as e:
            raise IndexOutOfRange(f"index {index!r} is out of range for a tensor of shape {tuple(x.shape)}: {e}") from None
        ctx.shape, ctx.advanced, ctx.index = x.shape, advanced, index
        if not isinstance(y, np.ndarray):   # integers for every dim give a NumPy scalar: take the 0-d
            y = x[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]   # view (torch's)
        return y

    @staticmethod
    def backward(ctx, g):
        if isinstance(g, np.ndarray):   # not recorded (create_graph=False): the engine writes it out
            return SliceGrad(ctx.shape, ctx.index, g, ctx.advanced), None
        return put(np.zeros(ctx.shape, np.result_type(g)), ctx.index, g, accumulate=ctx.advanced), None


class Cat(ArrayFunction):
    """y = concatenation of xs along ``dim``.
    dL/dx_i = the slice of g that x_i occupies (split g at the cumulative sizes)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, *xs, dim=0, skip_legacy=False):
        ctx.dim = dim
        # skip_legacy: torch's legacy empty (0,) inputs take no part (their gradient is empty)
        ctx.skipped = [skip_legacy and x.shape == (0,) for x in xs]
        kept = [x for x, s in zip(xs, ctx.skipped) if not s]
        ctx.sizes = [x.shape[dim] for x in kept]
        return np.concatenate(kept, axis=dim)

    @staticmethod
    def backward(ctx, g):
        parts = iter(np.split(g, np.cumsum(ctx.sizes)[:-1], axis=ctx.dim))
        return tuple(np.zeros((0,), np.result_type(g)) if s else next(parts) for s in ctx.skipped)


class Stack(ArrayFunction):
    """y = xs stacked along a new axis ``dim``.  dL/dx_i = g[..., i, ...] (index i on dim)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, *xs, dim=0):
        ctx.dim = dim
        return np.stack(xs, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return tuple(np.moveaxis(g, ctx.dim, 0))


# ============================================================================ shared argument checks

def canonical_dims(dims, ndim: int, op: str, what: str = "dims") -> tuple:
    """A sequence of dims, each canonical, none repeated (torch's message otherwise)."""
    out = tuple(canonical_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {what} {list(dims)} name the same dimension more than once")
    return out


# ============================================================================ index_put: x[index] = values

def _broadcast_values(values: np.ndarray, shape: tuple, op: str) -> np.ndarray:
    """``values`` broadcast to the indexing result's ``shape``. As torch (and NumPy), extra
    leading size-1 axes of ``values`` are dropped first: x[0] = ones(1, 3) fills a row."""
    v = values
    while v.ndim > len(shape) and v.shape[0] == 1:
        v = v.reshape(v.shape[1:])
    try:
        return np.broadcast_to(v, shape)
    except ValueError:
        raise ValueError(f"{op}: shape mismatch: value tensor of shape {list(values.shape)} cannot be "
                         f"broadcast to indexing result of shape {list(shape)}") from None


def _indexed_shape(array: np.ndarray, index, op: str) -> tuple:
    """The shape of ``array[index]`` (index already normalized), with our IndexError."""
    try:
        return np.shape(array[index])
    except IndexError as e:
        raise IndexOutOfRange(f"{op}: index {index!r} is out of range for a tensor of shape "
                              f"{tuple(array.shape)}: {e}") from None


def index_put_kernel(array: np.ndarray, index, values, accumulate: bool = False, op: str = "index_put"):
    """``array[index] = values`` (``accumulate``: ``array[index] += values``, every duplicate
    index adding its own value: np.add.at) **in place** on a NumPy array; returns ``array``.

    ``index`` is anything ``Tensor.__getitem__`` accepts (ints, slices, None, Ellipsis, bool
    masks, integer arrays / lists / Tensors, tuples of these); ``values`` a scalar or an array
    broadcastable to ``array[index]``'s shape, cast to ``array``'s dtype. An index out of range
    is an IndexError naming the index and the shape; a shape mismatch is a ValueError.
    With duplicate indices and ``accumulate=False`` one of the writes wins (torch: unspecified).
    """
    index, advanced = _normalize_index(index, array.ndim)
    split = torch_order(index)
    if split is not None:   # torch's order: the basic items select a view, the arrays index it
        index_put_kernel(array[split[0]], split[1], values, accumulate, op)
        return array
    if advanced:
        check_masks(array.shape, index)
    values = _broadcast_values(np.asarray(values), _indexed_shape(array, index, op), op)
    if accumulate:
        np.add.at(array, index, values)
    else:
        array[index] = values
    return array


class IndexPut(ArrayFunction):
    """y = x with y[index] = v (accumulate: y[index] = x[index] + v, duplicates summing).

    Out of place: x itself is not modified. Let g = dL/dy.
    dL/dx: an element of x overwritten by v no longer reaches y, so its gradient is 0; every
    other element is copied: dL/dx = g with the assigned positions zeroed. With accumulate,
    y = x + (scattered v), so every x element reaches y once: dL/dx = g.
    dL/dv: v[k] lands at position index[k] of y (broadcast v: each copy lands somewhere), so
    dL/dv = g[index], in the shape of x[index]; the engine then sums over v's broadcast
    axes. Duplicate indices with accumulate: each v[k] adds to y[index[k]], so each still gets
    g[index[k]] — which g[index] is. (Without accumulate only one duplicate write survives in
    the output; g[index] still gives each duplicate that position's gradient, as torch does.)
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, v, index=None, accumulate=False):
        shape = _indexed_shape(x, index, "index_put")
        vb = _broadcast_values(np.asarray(v), shape, "index_put")
        out = x.copy()
        if accumulate:
            np.add.at(out, index, vb)
        else:
            out[index] = vb
        ctx.index, ctx.accumulate, ctx.v_shape = index, accumulate, np.shape(v)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = g
        if not ctx.accumulate and ctx.needs_input_grad[0]:
            gx = put(np.copy(g), ctx.index, 0)
        gv = None
        if ctx.needs_input_grad[1]:
            gv = g[ctx.index]
            if isinstance(gv, np.generic):   # an int index of an array gives a NumPy scalar
                gv = np.asarray(gv)
            if len(ctx.v_shape) > gv.ndim:   # v had extra leading size-1 axes (dropped in forward)
                gv = gv.reshape((1,) * (len(ctx.v_shape) - gv.ndim) + gv.shape)
        return gx, gv


def _advanced(index) -> bool:
    return any(isinstance(i, (np.ndarray, list)) for i in (index if isinstance(index, tuple) else (index,)))


def put(out, index, values, accumulate=False):
    """``out[index] = values`` (``accumulate``: ``out[index] += values``, duplicate indices each
    adding) as an expression: the scatter that is the adjoint of indexing, which the backwards of
    the indexing ops share. On an array (a buffer the caller owns) it writes in place and returns
    it; on Tensors -- a backward being differentiated -- it is the op :class:`IndexPut`, whose
    own backward is the indexing ``g[index]``."""
    if isinstance(out, np.ndarray) and isinstance(values, (np.ndarray, np.generic, int, float)):
        if accumulate and _advanced(index):
            np.add.at(out, index, values)
        elif accumulate:
            out[index] += values
        else:
            out[index] = values
        return out
    return IndexPut.apply(out, values, index=index, accumulate=accumulate)
