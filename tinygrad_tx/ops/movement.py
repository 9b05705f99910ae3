"""Movement ops: they rearrange, select or copy elements without arithmetic.

Each output element is some input element, so every backward routes the
incoming gradient back to where that element came from: the inverse
rearrangement, or a scatter (summing when one input element was used several
times, as with repeated integer indices).
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import Function


class IndexOutOfRange(IndexError, ValueError):
    """An index outside a dimension: an IndexError (so iteration protocols work) that is
    also a ValueError (so callers catching bad input catch it)."""


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


class Reshape(Function):
    """y = x with a new shape (same elements in row-major order).
    The inverse rearrangement of g is g reshaped to x's shape."""

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return x.reshape(infer_shape(shape, x.size))

    @staticmethod
    def backward(ctx, g):
        return np.reshape(g, ctx.in_shape), None


class Permute(Function):
    """y = x with axes reordered: y.shape[i] = x.shape[dims[i]].
    dL/dx = g with the inverse permutation applied (argsort of dims)."""

    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(sorted(range(len(dims)), key=dims.__getitem__))   # argsort of dims
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, g):
        return np.transpose(g, ctx.inverse), None


class Expand(Function):
    """y = x broadcast to ``shape`` (no copy). Each x element feeds every output
    element it was broadcast to, so dL/dx is the sum of g over the broadcast
    axes — which is exactly what the engine's reduction to the input's shape
    does, so the backward returns g unchanged."""

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, g):
        return g, None


# ============================================================================ indexing

def _normalize_index(index):
    """Tensors become arrays, lists become integer/bool arrays; report if advanced."""
    from ..tensor import Tensor
    items = index if isinstance(index, tuple) else (index,)
    out = []
    advanced = False
    for it in items:
        if isinstance(it, Tensor):
            it = it._data
        if isinstance(it, list):
            it = np.asarray(it)
            if it.dtype.kind == "f":
                raise TypeError(f"tensors used as indices must be long or bool, got a list of floats {index!r}")
        if isinstance(it, np.ndarray):
            if it.dtype.kind not in "iub":
                raise TypeError(f"tensors used as indices must be long or bool, got dtype {it.dtype}")
            advanced = True
        elif isinstance(it, float) or (isinstance(it, np.generic) and it.dtype.kind == "f"):
            raise TypeError(f"index must be an int, slice, None, Ellipsis, or an integer/bool tensor, got {it!r}")
        out.append(it)
    return (tuple(out) if isinstance(index, tuple) or len(out) != 1 else out[0]), advanced


class GetItem(Function):
    """y = x[index] (basic indexing: ints, slices, None, Ellipsis; or advanced:
    integer / bool arrays).

    Basic indexing selects each x element at most once: dL/dx = zeros with
    g written into the selected positions.
    Integer-array indexing may select an element several times; each use
    contributes, so dL/dx is a scatter-add: np.add.at(zeros, index, g)."""

    @staticmethod
    def forward(ctx, x, index, advanced=False):
        try:
            y = x[index]
        except IndexError as e:
            raise IndexOutOfRange(f"index {index!r} is out of range for a tensor of shape {x.shape}: {e}") from None
        ctx.shape, ctx.advanced, ctx.index = x.shape, advanced, index
        return y if isinstance(y, np.ndarray) else np.array(y)   # an int index of a 1-D x gives a scalar

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.shape, dtype=g.dtype)
        if ctx.advanced:
            np.add.at(out, ctx.index, g)
        else:
            out[ctx.index] = g
        return out, None


class Cat(Function):
    """y = concatenation of xs along ``dim``.
    dL/dx_i = the slice of g that x_i occupies (split g at the cumulative sizes)."""

    @staticmethod
    def forward(ctx, *xs, dim=0):
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        return np.concatenate(xs, axis=dim)

    @staticmethod
    def backward(ctx, g):
        bounds = np.cumsum(ctx.sizes)[:-1]
        return tuple(np.split(g, bounds, axis=ctx.dim))


class Stack(Function):
    """y = xs stacked along a new axis ``dim``.  dL/dx_i = g[..., i, ...] (index i on dim)."""

    @staticmethod
    def forward(ctx, *xs, dim=0):
        ctx.dim = dim
        return np.stack(xs, axis=dim)

    @staticmethod
    def backward(ctx, g):
        return tuple(np.moveaxis(g, ctx.dim, 0))
