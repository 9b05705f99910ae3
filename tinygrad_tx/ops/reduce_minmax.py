"""Reductions that select: max/min (full and along a dim), amax/amin over several dims,
argmax/argmin, aminmax; and the logical ones (all, any, count_nonzero), which have no
gradient. Bound by ``reduce.py``.

Gradient rules, as torch's:

* ``max()``/``min()`` of all elements, ``amax``/``amin``: the output is a function of the
  selected elements alone; at a tie of k of them the gradient is shared, g/k each;
* ``max(dim)``/``min(dim)``: the gradient goes to the one returned index (the first
  occurrence, as torch's CPU kernel picks it);
* NaN propagates (NaN is the max and the min of a slice holding one); ``max()`` routes the
  gradient to the NaN positions, ``amax`` gives NaN gradients over such a slice (as torch).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .reduce import DimensionError, canonical_dim, normalize_dims, pick_dim, reduce_axes, save_reduced, saved_reduced

MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])
AminmaxResult = namedtuple("aminmax", ["min", "max"])

from ..core.function import ArrayFunction  # noqa: E402
from ..autograd.node_names import named  # noqa: E402
from .movement import put  # noqa: E402


def _check_nonempty(x, axes, op):
    """torch refuses to select from nothing: a reduced dim of size 0, or an empty input
    reduced as a whole."""
    if x.size:
        return
    if x.ndim == 0 or len(axes) == x.ndim and all(x.shape):
        return
    for a in axes:
        if x.shape[a] == 0:
            raise DimensionError(f"{op}(): Expected reduction dim {a} to have non-zero size "
                                 f"(input shape {tuple(x.shape)})")


class MaxAll(ArrayFunction):
    """y = max over all elements (``mode='max'``) or min (``mode='min'``).

    The max is a function of the arg-max elements alone. At a tie of k maximal
    elements torch distributes the gradient evenly (g/k each), so do we:
    dL/dx = g · [x == y] / count(x == y). A NaN is the max (and the min); then the
    gradient is shared by the NaN positions."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, mode="max"):
        if x.size == 0:
            raise DimensionError(f"{mode}(): expected a non-empty tensor (got shape {tuple(x.shape)}); "
                                 "specify the reduction dim with the 'dim' argument")
        y = np.asarray(np.max(x) if mode == "max" else np.min(x))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        hit = np.isnan(x) if np.result_type(y).kind == "f" and np.isnan(y) else x == y
        return hit * (g / int(np.count_nonzero(hit)))


class SelectAlongDim(ArrayFunction):
    """values = x gathered at ``idx`` along ``axis`` (``np.take_along_axis``): the
    value-selecting reductions. ``idx`` is computed by the caller: the arg-max of
    ``max(dim)`` (the first occurrence, as torch's CPU kernel picks it), the sort order of
    ``sort``/``topk``, the chosen element of ``kthvalue``/``median``/``mode``. Within a
    slice the indices are distinct.

    Each output is one input element, so dL/dx = g scattered back to the selected
    positions, zero elsewhere."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, idx, axis, keepdim=False):
        values = np.take_along_axis(x, idx, axis=axis)
        ctx.shape, ctx.axis, ctx.keepdim = x.shape, axis, keepdim
        ctx.save_for_backward(idx)
        return values if keepdim else np.squeeze(values, axis)

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        if not ctx.keepdim:
            g = np.expand_dims(g, ctx.axis)
        grid = list(np.indices(idx.shape, sparse=True))
        grid[ctx.axis] = idx
        return put(np.zeros(ctx.shape, np.result_type(g)), tuple(grid), g), None


MaxDim = SelectAlongDim   # the name tensor.py knows


class Amax(ArrayFunction):
    """y = max (``mode='max'``) or min of x over ``axes`` (torch's amax/amin).

    As for :class:`MaxAll`, per slice: dL/dx = g · [x == y] / count(x == y), the gradient
    shared evenly by tied extremes. A slice whose max is NaN has no x equal to it: the
    count is 0 and the gradient NaN, as torch's."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axes=(), keepdim=False, mode="max"):
        _check_nonempty(x, axes, "amax" if mode == "max" else "amin")
        fn = np.max if mode == "max" else np.min
        y = fn(x, axis=axes, keepdims=True) if x.size else np.zeros(
            tuple(1 if a in axes else n for a, n in enumerate(x.shape)), x.dtype)
        return save_reduced(ctx, x, y, axes, keepdim)

    @staticmethod
    def backward(ctx, g):
        x, y, g = saved_reduced(ctx, g)
        hit = x == y
        count = np.sum(hit, axis=ctx.axes, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return hit * (g / np.astype(count, np.result_type(x)))


def arg_extreme(x, dim, keepdim, mode):
    """(axis, indices with the axis kept) of the max/min of x along dim, validated."""
    axis = canonical_dim(dim, x.ndim, mode)
    if x.ndim == 0:   # dim validated (0 or -1); a 0-d tensor has no axis
        return None, None
    if x.shape[axis] == 0:
        raise DimensionError(f"{mode}(): Expected reduction dim {axis} to have non-zero size "
                             f"(input shape {tuple(x.shape)})")
    fn = np.argmax if mode == "max" else np.argmin
    return axis, fn(x, axis=axis, keepdims=True)


def _extreme(mode, result_cls):
    def f(s, dim=None, keepdim=False, *, axis=None, out=None):
        from ..tensor import Tensor, _adopt
        if isinstance(dim, Tensor):  # torch.max(a, b) is the elementwise maximum
            return s.maximum(dim) if mode == "max" else s.minimum(dim)
        dim = pick_dim(dim, axis, mode, out)
        if dim is None:
            return named(MaxAll.apply(s, mode=mode), f"{mode.capitalize()}Backward1")
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"{mode}(): argument 'dim' must be an int, got {dim!r}; use "
                            f"amax/amin to reduce over several dims")
        ax, idx = arg_extreme(s._data, dim, keepdim, mode)
        if ax is None:  # 0-d input: the value itself, index 0
            return result_cls(s.clone(), _adopt(np.zeros((), dtype=np.int64)))
        values = named(SelectAlongDim.apply(s, idx, axis=ax, keepdim=keepdim), f"{mode.capitalize()}Backward0")
        return result_cls(values, _adopt(idx if keepdim else np.squeeze(idx, ax)))
    f.__name__ = mode
    return f


max_ = _extreme("max", MaxResult)
min_ = _extreme("min", MinResult)


def _amax(mode):
    def f(s, dim=(), keepdim=False, *, axis=None):
        dim = pick_dim(None if dim == () else dim, axis, "a" + mode)
        return Amax.apply(s, axes=reduce_axes(dim, s.ndim, "a" + mode), keepdim=keepdim, mode=mode)
    f.__name__ = "a" + mode
    return f


amax = _amax("max")
amin = _amax("min")


def aminmax(s, *, dim=None, keepdim=False):
    """(min, max) together, each with amin/amax's gradient rule."""
    if s._data.size == 0 and dim is None:
        raise DimensionError("aminmax(): cannot compute aminmax over an empty tensor (it has no "
                             "identity); specify dim")
    axes = reduce_axes(dim, s.ndim, "aminmax") if dim is None else (canonical_dim(dim, s.ndim, "aminmax"),) \
        if s.ndim else ()
    return AminmaxResult(Amax.apply(s, axes=axes, keepdim=keepdim, mode="min"),
                         Amax.apply(s, axes=axes, keepdim=keepdim, mode="max"))


def _argfn(mode):
    op = "arg" + mode
    fn = np.argmax if mode == "max" else np.argmin

    def f(s, dim=None, keepdim=False, *, axis=None, out=None):
        from ..tensor import Tensor, _adopt
        dim = pick_dim(dim, axis, op, out)
        x = s._data
        if x.dtype == np.bool_:
            raise RuntimeError(f"{op}(): does not support bool input (cast it, e.g. x.int().{op}())")
        if dim is None:
            if x.size == 0:
                raise DimensionError(f"{op}(): Expected reduction dim to be specified for an empty "
                                     f"input (shape {tuple(x.shape)})")
            i = np.asarray(fn(x), dtype=np.int64)
            return _adopt(i.reshape((1,) * x.ndim) if keepdim else i)
        ax = canonical_dim(dim, x.ndim, op)
        if x.ndim == 0:
            return _adopt(np.zeros((), dtype=np.int64))
        if x.shape[ax] == 0:
            raise DimensionError(f"{op}(): Expected reduction dim {ax} to have non-zero size "
                                 f"(input shape {tuple(x.shape)})")
        return _adopt(fn(x, axis=ax, keepdims=keepdim).astype(np.int64, copy=False))
    f.__name__ = op
    return f


argmax = _argfn("max")
argmin = _argfn("min")


def _logical(op, npfn):
    def f(s, dim=None, keepdim=False, *, axis=None, out=None):
        from ..tensor import Tensor, _adopt
        dim = pick_dim(dim, axis, op, out)
        x = s._data
        axes = tuple(range(x.ndim)) if dim is None else normalize_dims(dim, x.ndim, op)
        out = npfn(x, axis=axes, keepdims=keepdim)
        return _adopt(np.asarray(out).astype(np.uint8 if x.dtype == np.uint8 else np.bool_))
    f.__name__ = op
    f.__doc__ = f"torch's {op}: bool results (uint8 for a uint8 input), no gradient."
    return f


all_ = _logical("all", np.all)
any_ = _logical("any", np.any)


def count_nonzero(s, dim=None, *, axis=None):
    from ..tensor import Tensor, _adopt
    dim = pick_dim(dim, axis, "count_nonzero")
    axes = reduce_axes(dim, s.ndim, "count_nonzero")
    return _adopt(np.asarray(np.count_nonzero(s._data, axis=axes), dtype=np.int64))


TENSOR_METHODS = {
    "max": max_, "min": min_, "amax": amax, "amin": amin, "aminmax": aminmax, "argmax": argmax,
    "argmin": argmin, "all": all_, "any": any_, "count_nonzero": count_nonzero,
}
