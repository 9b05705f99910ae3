"""Reductions: sum, mean, var/std, prod, logsumexp, nansum (max/min and the logical
reductions are in ``reduce_minmax.py``; this module binds both).

A reduction maps x of shape S to y of shape S with the reduced axes removed
(or kept as size 1 when ``keepdim``). Every backward first re-inserts the
reduced axes into g as size 1 (``_expand_reduced``) so that g broadcasts back
against x; then the derivative is elementwise.

Dims follow torch: ``dim`` (or its alias ``axis``) is None, an int or a tuple/list of
ints; ``dim=()`` reduces over every dim for sum/mean/var/std (torch's rule); a float or a
bool dim is a TypeError, a dim out of range an IndexError (:class:`DimensionError`, which is
also a ValueError), a repeated dim a ValueError.
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.function import ArrayFunction
from ..core.broadcast import accumulation_dtype
from ..autograd.node_names import named
from ..autograd import dispatch as _dispatch


class DimensionError(IndexError, ValueError):
    """A dim out of range: an IndexError as torch's, and a ValueError as this package's
    shape errors are."""


def _is_int(d) -> bool:
    return isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))


def canonical_dim(dim, ndim: int, op: str, arg: str = "dim") -> int:
    """One int ``dim`` (negative counts from the end) as an axis in ``range(ndim)``; a 0-d
    tensor accepts 0 and -1 (and has no axis: 0 is returned)."""
    if not _is_int(dim):
        raise TypeError(f"{op}(): argument '{arg}' must be an int, got {dim!r} "
                        f"({type(dim).__name__})")
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise DimensionError(f"{op}(): dimension out of range (expected to be in range of "
                             f"[{lo}, {hi}], but got {dim})")
    return int(dim) % ndim if ndim > 0 else 0


def normalize_dims(dim, ndim: int, op: str):
    """``dim`` (None, int or sequence of ints, possibly negative) as a sorted tuple of axes.
    None means every axis; an empty sequence means none (see :func:`reduce_axes`)."""
    if dim is None:
        return tuple(range(ndim))
    if _is_int(dim):
        dims = (dim,)
    elif isinstance(dim, (tuple, list)):
        dims = tuple(dim)
    else:
        raise TypeError(f"{op}(): argument 'dim' must be an int or a tuple of ints, got {dim!r} "
                        f"({type(dim).__name__})")
    out = []
    for d in dims:
        if not _is_int(d):
            raise TypeError(f"{op}(): argument 'dim' must be an int or a tuple of ints, got {dim!r}")
        out.append(canonical_dim(d, ndim, op))
    if len(set(out)) != len(out):
        raise ValueError(f"{op}(): dim {dim!r} names the same dimension twice")
    return tuple(sorted(out)) if ndim > 0 else ()


def reduce_axes(dim, ndim: int, op: str):
    """The axes a reduction runs over: None and ``()``/``[]`` mean all of them (torch)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    return normalize_dims(dim, ndim, op)


def pick_dim(dim, axis, op: str, out=None):
    """torch accepts ``axis=`` as an alias of ``dim=`` (NumPy's name); not both at once.
    ``out=`` is accepted only as None: NumPy's ``np.all(t)``/``np.sum(t)`` call the method
    with ``axis=..., out=None``."""
    if out is not None:
        raise TypeError(f"{op}(): out= is not supported (the result is a new tensor)")
    if axis is None:
        return dim
    if dim is not None:
        raise TypeError(f"{op}(): got both dim={dim!r} and its alias axis={axis!r}; pass one")
    return axis


def _expand_reduced(g, axes, keepdim):
    """Re-insert the reduced axes of g as size-1 axes (a no-op if keepdim)."""
    if keepdim or not axes:
        return g
    return np.expand_dims(g, axes)


def save_reduced(ctx, x, y, axes, keepdim):
    """Save x and the result y (reduced axes kept as size 1) for a backward that reads them
    with :func:`saved_reduced`; return y shaped as the caller asked."""
    out = y if keepdim else np.squeeze(y, axes)
    ctx.save_for_backward(x, out)   # the output itself (a backward on Tensors finds it again)
    ctx.axes, ctx.keepdim = axes, keepdim
    return out


def saved_reduced(ctx, g):
    """(x, y with kept axes, g with the reduced axes re-inserted) in a backward."""
    x, y = ctx.saved_tensors
    return x, _expand_reduced(y, ctx.axes, ctx.keepdim), _expand_reduced(g, ctx.axes, ctx.keepdim)


def _zeros_once_differentiable(op):
    """prod/cumprod with a zero in a slice: the gradient is chosen case by case (0 where the
    product of the others holds the zero), right in value but not in its own derivative (the
    zero's perturbation moves those products). Differentiating it again raises."""
    if _dispatch.active():
        raise RuntimeError(f"{op}'s backward at an input holding zeros cannot be differentiated "
                           "(create_graph=True): its case-by-case gradient is not differentiable "
                           "there; without zeros it is")


def _count(shape, axes) -> int:
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def cast_input(s, dtype, op: str):
    """``s`` cast to ``dtype=`` (a differentiable cast), as torch casts before reducing."""
    dt = dtypes.resolve(dtype, f"{op}(): dtype")
    return s if dt is None or dt == s._data.dtype else s.to(dt)


def require_tensor(x, op: str):
    from ..tensor import Tensor, _adopt
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, got {type(x).__name__}")
    return x


# ============================================================================ Functions

class Sum(ArrayFunction):
    """y = Σ_{reduced axes} x.   Each x element adds once into one y element, so
    dL/dx = g broadcast back over the reduced axes.
    bool and integer inputs sum to int64 (torch's rule; no gradient)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        axes = reduce_axes(dim, x.ndim, "sum")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        if x.dtype.kind in "biu":
            return np.sum(x, axis=axes, keepdims=keepdim, dtype=np.int64)
        acc = accumulation_dtype(x.dtype)
        y = np.sum(x, axis=axes, keepdims=keepdim, dtype=acc)
        return y if acc is None else y.astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return np.broadcast_to(_expand_reduced(g, ctx.axes, ctx.keepdim), ctx.shape)


class NanSum(ArrayFunction):
    """y = Σ x over the reduced axes, NaNs counted as 0.
    dL/dx = g · [x is not NaN] (the NaNs do not reach y). A product with the mask, as
    torch's: an infinite g (nanmean of an all-NaN slice divides by 0) gives NaN there."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axes=(), keepdim=False):
        ctx.save_for_backward(np.isnan(x))
        ctx.axes, ctx.keepdim = axes, keepdim
        acc = accumulation_dtype(x.dtype)
        return np.nansum(x, axis=axes, keepdims=keepdim, dtype=acc).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        (nan,) = ctx.saved_tensors
        with np.errstate(invalid="ignore"):
            return _expand_reduced(g, ctx.axes, ctx.keepdim) * ~nan


class Mean(ArrayFunction):
    """y = (1/N) Σ x over the reduced axes (N = number of reduced elements).
    dL/dx = g / N broadcast back over the reduced axes."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dim=None, keepdim=False):
        axes = reduce_axes(dim, x.ndim, "mean")
        if x.dtype.kind not in "fc":
            raise TypeError(f"mean(): could not infer output dtype: the input dtype must be floating "
                            f"point (got {x.dtype}); pass dtype=tinygrad_tx.float32 or cast first")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        ctx.n = _count(x.shape, axes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.mean(x, axis=axes, keepdims=keepdim, dtype=accumulation_dtype(x.dtype)).astype(x.dtype)

    @staticmethod
    def backward(ctx, g):
        with np.errstate(invalid="ignore", divide="ignore"):
            g = _expand_reduced(g, ctx.axes, ctx.keepdim) / ctx.n
        return np.broadcast_to(g, ctx.shape)


def _sum_of_squared_deviations(x, axes, keepdim):
    """Σ (x − μ)² over ``axes``. float32 and float16 compute the deviations and their squares
    in float64 (rounded once at the end): a float32 (x − μ)² overflows from |x − μ| ≈ 1.8e19,
    so ``[0, 0, 1e20]`` would give std inf where torch gives 5.77e19."""
    acc = accumulation_dtype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        wide = x if acc is None else x.astype(acc)
        dev = wide - np.mean(wide, axis=axes, keepdims=True)
        return np.sum(dev * dev, axis=axes, keepdims=keepdim)


def _deviation(x, axes):
    """x − μ over ``axes``, in NumPy calls that also run on Tensors (Var's and Std's backward)."""
    return x - np.mean(x, axis=axes, keepdims=True)


class Var(ArrayFunction):
    """y = Σ (x - μ)² / (N - correction),  μ the mean over the reduced axes.

    dy/dx_i = [2(x_i - μ) - (2/N) Σ_j (x_j - μ)] / (N - c); the sum of deviations
    is zero, so dL/dx = g · 2(x - μ)/(N - correction).
    correction=1 is Bessel's (unbiased) estimate, torch's default. N - c <= 0 gives
    inf or NaN, as torch's.

    Saved: x (torch's var saves its input too); the backward forms x - μ again from it,
    in NumPy calls that also run on Tensors, so the gradient can be differentiated again
    (the second derivative goes through μ as well: d(x - μ)/dx = I - 1/N)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dim=None, correction=1, keepdim=False):
        axes = reduce_axes(dim, x.ndim, "var")
        denom = max(_count(x.shape, axes) - correction, 0)
        ss = _sum_of_squared_deviations(x, axes, keepdim)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = (ss / denom).astype(x.dtype)
        ctx.save_for_backward(x)
        ctx.axes, ctx.keepdim, ctx.denom = axes, keepdim, denom
        return y

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        dev = _deviation(x, ctx.axes)
        g = _expand_reduced(g, ctx.axes, ctx.keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            return g * dev * (np.asarray(2.0, dtype=dev.dtype) / ctx.denom)


class Std(ArrayFunction):
    """y = sqrt(v), v = Σ (x - μ)² / (N - correction) (see :class:`Var`).

    dL/dx = g · dy/dv · dv/dx = g · 1/(2y) · 2(x - μ)/(N - c) = g (x - μ) / ((N - c) y).
    Where y = 0 (a constant slice) torch takes the subgradient 0 (not 0/0), so do we.
    Saved: x and y; x - μ is formed again in the backward (see :class:`Var`)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axes=(), correction=1, keepdim=False):
        denom = max(_count(x.shape, axes) - correction, 0)
        ss = _sum_of_squared_deviations(x, axes, keepdim)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = np.sqrt(ss / denom).astype(x.dtype)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.keepdim, ctx.denom = axes, keepdim, denom
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        dev = _deviation(x, ctx.axes)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(y == 0, np.zeros((), y.dtype), g / (y * y.dtype.type(ctx.denom)))
        return dev * _expand_reduced(scale, ctx.axes, ctx.keepdim)


class Prod(ArrayFunction):
    """y = Π x over the reduced axes.

    dy/dx_i = Π_{j≠i} x_j, the product of the *others*. With no zero in the slice that is
    y / x_i. With exactly one zero, at position k: every product of others except x_k's
    contains the zero, so dL/dx_i = 0 for i ≠ k and dL/dx_k = g · Π_{j≠k} x_j (the product
    of the nonzero elements). With two or more zeros every product of others contains a
    zero: dL/dx = 0. Integer and bool inputs give int64 (no gradient).

    The no-zero case is computed as g · (y / x), not (g · y) / x: a long product can be
    subnormal (625 factors in [0.1, 2) give y ≈ 2e-40 in float32, 15 bits of precision), and
    g · y rounds it again at subnormal precision, y / x usually far less. Measured on such a
    draw: 2.7e-4 relative error against 3.0e-5 (torch's, and a float64 evaluation's)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axes=(), keepdim=False):
        if x.dtype.kind in "biu":
            return np.prod(x, axis=axes, keepdims=keepdim, dtype=np.int64)
        acc = accumulation_dtype(x.dtype)
        y = np.prod(x, axis=axes, keepdims=True, dtype=acc).astype(x.dtype)
        return save_reduced(ctx, x, y, axes, keepdim)

    @staticmethod
    def backward(ctx, g):
        x, y, g = saved_reduced(ctx, g)
        zero = x == 0
        if not zero.any():
            return g * (y / x)
        _zeros_once_differentiable("Prod")
        zeros = np.sum(zero, axis=ctx.axes, keepdims=True)
        dt = np.result_type(x)
        others = np.astype(np.prod(np.where(zero, 1, x), axis=ctx.axes, keepdims=True,
                                   dtype=accumulation_dtype(dt)), dt)
        with np.errstate(divide="ignore", invalid="ignore"):
            no_zero = g * (y / x)
        one_zero = np.where(zero, g * others, 0)
        return np.where(zeros == 0, no_zero, np.where(zeros == 1, one_zero, 0))


class LogSumExp(ArrayFunction):
    """y = log Σ exp(x) over the reduced axes, computed as m + log Σ exp(x − m) with m the
    slice's max (no overflow); an infinite m is replaced by 0 as torch does, so a slice of
    -inf gives -inf and one holding +inf gives +inf.

    dy/dx_i = exp(x_i) / Σ_j exp(x_j) = exp(x_i − y): the softmax. dL/dx = g · exp(x − y)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, axes=(), keepdim=False):
        if x.size == 0:
            m = np.zeros(tuple(1 if a in axes else n for a, n in enumerate(x.shape)), x.dtype)
        else:
            m = np.max(x, axis=axes, keepdims=True)
            m = np.where(np.isinf(m), np.zeros((), x.dtype), m)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            s = np.sum(np.exp(x - m), axis=axes, keepdims=True, dtype=accumulation_dtype(x.dtype))
            y = (np.log(s) + m).astype(x.dtype)
        return save_reduced(ctx, x, y, axes, keepdim)

    @staticmethod
    def backward(ctx, g):
        x, y, g = saved_reduced(ctx, g)
        with np.errstate(invalid="ignore", over="ignore"):
            return g * np.exp(x - y)


# ============================================================================ methods

def _float_input(s, op):
    """Integer/bool inputs to float math compute in the default float, as torch's do."""
    from ..tensor import Tensor, _adopt
    if s._data.dtype.kind in "fc":
        return s
    return _adopt(s._data.astype(dtypes.default_float()))


def sum_(s, dim=None, keepdim=False, *, dtype=None, axis=None, out=None):
    dim = pick_dim(dim, axis, "sum", out)
    if dtype is None:
        return _dim_named(Sum.apply(s, dim=dim, keepdim=keepdim), "Sum", dim)
    return _as_dtype(_dim_named(Sum.apply(cast_input(s, dtype, "sum"), dim=dim, keepdim=keepdim), "Sum", dim), dtype)


def _dim_named(y, op, dim):
    """torch's node for a reduction over given dims is ``<Op>Backward1`` (``Backward0``: all)."""
    return y if dim is None else named(y, f"{op}Backward1")


def _as_dtype(y, dtype):
    """An integer ``dtype=`` is the result's dtype too (int sums are int64 otherwise)."""
    from ..tensor import Tensor, _adopt
    dt = dtypes.resolve(dtype)
    return y if y._data.dtype == dt else _adopt(y._data.astype(dt))


def mean(s, dim=None, keepdim=False, *, dtype=None, axis=None, out=None):
    dim = pick_dim(dim, axis, "mean", out)
    if dtype is not None:
        s = cast_input(s, dtype, "mean")
    return _dim_named(Mean.apply(s, dim=dim, keepdim=keepdim), "Mean", dim)


def _correction(unbiased, correction, op):
    if unbiased is not None and correction is not None:
        raise ValueError(f"{op}(): pass either unbiased or correction, not both")
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument 'unbiased' must be a bool, got {unbiased!r}")
    if correction is None:
        return 1 if unbiased is None or unbiased else 0
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}(): argument 'correction' must be a number, got {correction!r}")
    return correction


def _var_args(s, dim, unbiased, op):
    """torch's positional ``var(dim, unbiased, keepdim)`` also reads ``var(True)`` as unbiased."""
    if isinstance(dim, (bool, np.bool_)) and unbiased is None:
        return None, bool(dim)
    return dim, unbiased


def _float_check(s, op):
    if s._data.dtype.kind not in "fc":
        raise RuntimeError(f"{op}(): std and var only support floating point and complex dtypes, "
                           f"got dtype {s._data.dtype}")


def var(s, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    dim, unbiased = _var_args(s, pick_dim(dim, axis, "var"), unbiased, "var")
    _float_check(s, "var")
    return Var.apply(s, dim=dim, correction=_correction(unbiased, correction, "var"), keepdim=keepdim)


def std(s, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    dim, unbiased = _var_args(s, pick_dim(dim, axis, "std"), unbiased, "std")
    _float_check(s, "std")
    c = _correction(unbiased, correction, "std")
    return Std.apply(s, axes=reduce_axes(dim, s.ndim, "std"), correction=c, keepdim=keepdim)


def var_mean(s, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    """(var, mean) in one call (torch.var_mean); the gradient reaching x is the sum of both
    branches', as torch's fused backward computes."""
    dim = pick_dim(dim, axis, "var_mean")
    return (var(s, dim, unbiased, keepdim, correction=correction),
            mean(s, None if isinstance(dim, bool) else dim, keepdim))


def std_mean(s, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None):
    dim = pick_dim(dim, axis, "std_mean")
    return (std(s, dim, unbiased, keepdim, correction=correction),
            mean(s, None if isinstance(dim, bool) else dim, keepdim))


def prod(s, dim=None, keepdim=False, *, dtype=None, axis=None, out=None):
    dim = pick_dim(dim, axis, "prod", out)
    if dtype is not None:
        return _as_dtype(prod(cast_input(s, dtype, "prod"), dim, keepdim), dtype)
    if dim is None:
        axes = tuple(range(s.ndim))
    else:
        axes = (canonical_dim(dim, s.ndim, "prod"),)   # an int (a tuple is torch's TypeError)
        axes = axes if s.ndim else ()
    return Prod.apply(s, axes=axes, keepdim=keepdim)


def logsumexp(s, dim=None, keepdim=False, *, axis=None):
    dim = pick_dim(dim, axis, "logsumexp")
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        if keepdim or s.ndim == 0 or s.numel() == 0:   # torch reduces over all dims here...
            dim = tuple(range(s.ndim))
        else:   # ...and fails otherwise (its output shape check), so we refuse too
            raise ValueError("logsumexp(): dim=() is not a reduction torch accepts; pass the dims "
                             "to reduce (e.g. tuple(range(x.ndim)))")
    if dim is None:
        raise TypeError("logsumexp(): missing the required argument 'dim'")
    s = _float_input(s, "logsumexp")
    return LogSumExp.apply(s, axes=normalize_dims(dim, s.ndim, "logsumexp"), keepdim=keepdim)


def nansum(s, dim=None, keepdim=False, *, dtype=None, axis=None):
    dim = pick_dim(dim, axis, "nansum")
    if dtype is not None:
        s = cast_input(s, dtype, "nansum")
    if s._data.dtype.kind not in "fc":
        return Sum.apply(s, dim=dim, keepdim=keepdim)
    return NanSum.apply(s, axes=reduce_axes(dim, s.ndim, "nansum"), keepdim=keepdim)


def nanmean(s, dim=None, keepdim=False, *, dtype=None, axis=None):
    """nansum / (number of non-NaN elements): torch's nanmean is this composite, and so is
    its gradient (g / count at the non-NaN positions)."""
    from ..tensor import Tensor, _adopt
    dim = pick_dim(dim, axis, "nanmean")
    if dtype is not None:
        s = cast_input(s, dtype, "nanmean")
    _float_check(s, "nanmean")
    axes = reduce_axes(dim, s.ndim, "nanmean")
    count = np.sum(~np.isnan(s._data), axis=axes, keepdims=keepdim).astype(s._data.dtype)
    return NanSum.apply(s, axes=axes, keepdim=keepdim) / _adopt(count)


from . import reduce_minmax as _mm  # noqa: E402  (it imports the helpers above)
from .reduce_minmax import MaxAll, MaxDim, MaxResult, MinResult, arg_extreme  # noqa: E402,F401  (tensor.py's names)

TENSOR_METHODS = {
    "sum": sum_, "mean": mean, "var": var, "std": std, "prod": prod, "logsumexp": logsumexp,
    "nansum": nansum, "nanmean": nanmean, **_mm.TENSOR_METHODS,
}
REPLACES = set()   # tensor.py binds no reductions: they all live here


def as_function(name, fn):
    """The top-level ``tinygrad_tx.<name>(input, ...)`` form of the method ``fn``."""
    def f(input, *args, **kwargs):
        return fn(require_tensor(input, name), *args, **kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = fn.__doc__
    f.__wrapped__ = fn   # its signature (keepdim: _bind gives it the keepdims= alias)
    return f


FUNCTIONS = {name: as_function(name, fn) for name, fn in TENSOR_METHODS.items()}
FUNCTIONS.update(var_mean=as_function("var_mean", var_mean), std_mean=as_function("std_mean", std_mean))
