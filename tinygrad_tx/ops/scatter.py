"""Gather and scatter along a dim: gather, scatter, scatter_add, scatter_reduce, and the index
checks every indexing op shares.

index has x's rank; index[i0, ..., ik] names the position along ``dim``, the other coordinates
are the index element's own. ``_grid(index, dim)`` turns that into a NumPy advanced index (open
grids for the other axes), so x[grid] gathers and np.add.at(out, grid, v) scatters. Gathers
and scatters are each other's backward: dL/dx of a gather is a scatter-add of g (an element
picked k times gets k contributions), dL/dsrc of a scatter is a gather of g.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from .movement import IndexOutOfRange, canonical_dim, put

_INT32_OR_64 = (np.dtype(np.int32), np.dtype(np.int64))
_INT64 = (np.dtype(np.int64),)


def _tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x


def _index(index, op: str, allowed=_INT32_OR_64, error=TypeError) -> np.ndarray:
    """The index tensor's array, checked to be one of torch's accepted integer dtypes."""
    if isinstance(index, Tensor):
        index = index._data
    if not isinstance(index, np.ndarray):
        raise TypeError(f"{op}: index must be an integer Tensor, got {type(index).__name__}")
    if index.dtype not in allowed:
        names = "/".join(str(d) for d in allowed)
        raise error(f"{op}: expected dtype {names} for index, got {index.dtype}")
    return index


def _check_bounds(index: np.ndarray, n: int, dim: int, op: str, negative_ok: bool = False):
    """IndexError (also a ValueError) naming the first bad index and the dimension's size."""
    if index.size == 0:
        return
    lo = -n if negative_ok else 0
    bad = (index < lo) | (index >= n)
    if bad.any():
        raise IndexOutOfRange(f"{op}: index {int(index[bad].flat[0])} is out of bounds for dimension "
                              f"{dim} with size {n}")


def _grid(index: np.ndarray, dim: int) -> tuple:
    """The advanced index addressing x[i0, ..., index[i0, ..., ik], ..., ik] for every
    element of ``index``: open ranges on the other axes, ``index`` itself on ``dim``."""
    grid = list(np.ogrid[tuple(slice(n) for n in index.shape)])
    grid[dim] = index
    return tuple(grid)


def _crop(shape) -> tuple:
    """The leading block of ``shape`` (src of a scatter may be larger than index)."""
    return tuple(slice(n) for n in shape)


# ============================================================================ gather / scatter along a dim

class Gather(ArrayFunction):
    """y[i0, .., ik] = x[i0, .., index[i0, .., ik], .., ik] (index on axis ``dim``).
    x element j feeds every output whose index points at it: dL/dx = scatter-add of g at
    the gathered positions (np.add.at(zeros, grid, g): repeated indices add up)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, index=None, dim=0):
        ctx.grid, ctx.shape = _grid(index, dim), x.shape
        return x[ctx.grid]

    @staticmethod
    def backward(ctx, g):
        return put(np.zeros(ctx.shape, np.result_type(g)), ctx.grid, g, accumulate=True)


def _check_scatter_shapes(op, x, index, dim, src=None):
    if index.ndim != x.ndim:
        raise ValueError(f"{op}: index tensor must have the same number of dimensions as input tensor "
                         f"(index shape {tuple(index.shape)}, input shape {tuple(x.shape)})")
    if src is not None and index.ndim != src.ndim:
        raise ValueError(f"{op}: index tensor must have the same number of dimensions as src tensor "
                         f"(index shape {tuple(index.shape)}, src shape {tuple(src.shape)})")
    for d in range(index.ndim):
        if (d != dim and index.shape[d] > x.shape[d]) or (src is not None and index.shape[d] > src.shape[d]):
            raise ValueError(f"{op}: size does not match at dimension {d}: expected index {list(index.shape)} "
                             f"to be no larger than self {list(x.shape)} apart from dimension {dim}"
                             + ("" if src is None else f" and to be no larger than src {list(src.shape)}"))
    _check_bounds(index, x.shape[dim], dim, op)


def _as_rank1(x: Tensor, index: np.ndarray):
    """torch treats 0-d input/index of gather and scatter as 1-d of one element."""
    return (x.reshape(1) if x.ndim == 0 else x), index.reshape(1) if index.ndim == 0 else index


def gather(input, dim, index):
    input = _tensor(input, "gather")
    index = _index(index, "gather")
    d = canonical_dim(dim, input.ndim, "gather")
    x, idx = _as_rank1(input, index)
    _check_scatter_shapes("gather", x, idx, d)
    return Gather.apply(x, index=idx, dim=d).reshape(index.shape)


class Scatter(ArrayFunction):
    """y = x, then y[i0, .., index[i0, .., ik], .., ik] = src[i0, .., ik] (or a scalar value).
    dL/dx: an overwritten element does not reach y: g with the scattered positions zeroed.
    dL/dsrc[i] = g at the position src[i] was written to: a gather of g (with duplicate
    indices only one write survives, but each gets that position's g, as in torch).
    With ``reduce`` ('add', 'multiply') torch has no derivative; neither do we."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, reduce=None):
        grid = _grid(index, dim)
        vals = src[_crop(index.shape)] if src.ndim else src
        out = x.copy()
        if reduce is None:
            out[grid] = vals
        elif reduce == "add":
            np.add.at(out, grid, vals)
        else:
            np.multiply.at(out, grid, vals)
        ctx.grid, ctx.src_shape, ctx.crop, ctx.reduce = grid, src.shape, _crop(index.shape), reduce
        return out

    @staticmethod
    def backward(ctx, g):
        if ctx.reduce is not None:
            raise RuntimeError(f"the derivative of scatter with reduce={ctx.reduce!r} is not implemented "
                               "(nor in torch): use scatter_add or scatter_reduce")
        gx = put(np.copy(g), ctx.grid, 0)
        gsrc = None
        if ctx.needs_input_grad[1]:
            gsrc = put(np.zeros(ctx.src_shape, np.result_type(g)), ctx.crop, g[ctx.grid])
        return gx, gsrc


def _scatter_args(op, input, dim, index, src):
    input = _tensor(input, op)
    index = _index(index, "scatter")
    d = canonical_dim(dim, input.ndim, op)
    x, idx = _as_rank1(input, index)
    if isinstance(src, Tensor):
        if src.dtype != input.dtype:
            raise TypeError(f"{op}(): expected self.dtype to be equal to src.dtype, got {input.dtype} and {src.dtype}")
        src = src.reshape(1) if src.ndim == 0 and idx is not index else src
        _check_scatter_shapes(op, x, idx, d, src)
    else:
        _check_scatter_shapes(op, x, idx, d)
    return input, x, idx, d, src


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """torch.scatter(input, dim, index, src) or (..., value=) / a Python number as src."""
    if (src is None) == (value is None):
        raise TypeError("scatter: pass exactly one of src (a Tensor) and value (a number)")
    if reduce not in (None, "add", "multiply"):
        raise ValueError(f"scatter: reduce argument must be either add or multiply, got {reduce!r}")
    src = value if src is None else src
    input, x, idx, d, src = _scatter_args("scatter", input, dim, index, src)
    if not isinstance(src, Tensor):
        if not isinstance(src, (int, float, bool, np.number)):
            raise TypeError(f"scatter: src must be a Tensor or a number, got {type(src).__name__}")
        src = np.asarray(src).astype(x.dtype)
    return Scatter.apply(x, src, index=idx, dim=d, reduce=reduce).reshape(input.shape)


class ScatterAdd(ArrayFunction):
    """y = x, then y[i0, .., index[i0, .., ik], .., ik] += src[i0, .., ik] (duplicates add).
    y is x plus a sum of src elements: dL/dx = g, and dL/dsrc = a gather of g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0):
        ctx.grid, ctx.src_shape, ctx.crop = _grid(index, dim), src.shape, _crop(index.shape)
        out = x.copy()
        np.add.at(out, ctx.grid, src[ctx.crop])
        return out

    @staticmethod
    def backward(ctx, g):
        return g, put(np.zeros(ctx.src_shape, np.result_type(g)), ctx.crop, g[ctx.grid])


def scatter_add(input, dim, index, src):
    _tensor(src, "scatter_add")
    input, x, idx, d, src = _scatter_args("scatter_add", input, dim, index, src)
    return ScatterAdd.apply(x, src, index=idx, dim=d).reshape(input.shape)


def _src_gradient(gs, src_shape, crop):
    """src's gradient from the per-term gradients ``gs`` (index's shape): zero where src is larger
    than index. On Tensors (a gradient being differentiated) the padding is a recorded write."""
    if tuple(gs.shape) == tuple(src_shape):
        return gs
    if isinstance(gs, Tensor):
        from ..factories import zeros
        out = zeros(src_shape, dtype=gs.dtype)
    else:
        out = np.zeros(src_shape, dtype=gs.dtype)
    out[crop] = gs
    return out


class ScatterReduce(ArrayFunction):
    """y = x with each indexed position reduced over the src values scattered onto it
    (and x's own value when include_self): 'sum', 'mean', 'amax', 'amin'.

    sum: dL/dx = g (include_self) or g with the scattered positions zeroed; dL/dsrc = gather(g).
    mean: y[p] = (x[p] + sum of its src) / N[p], N[p] = the number of terms:
        dL/dx[p] = g[p] / N[p] at a scattered p (0 without include_self), g elsewhere;
        dL/dsrc = gather(g / N).
    amax/amin: y[p] is whichever terms equal the extreme; torch splits g[p] evenly over the
        N[p] terms tied at it: dL/dx[p] = g[p]·[x[p] = y[p]] / N[p],
        dL/dsrc[i] = gather(g / N)[i]·[src[i] = y at its position].
        Without include_self torch still counts x[p] in N[p] when it equals y[p] (then gives
        x no gradient there): we follow it, so the shares can sum to less than g[p].
    ('prod' is :class:`ScatterReduceProd`.)

    The backward is linear in g, its masks and counts constants of the forward (piecewise
    constant in x and src), so it also runs on Tensors: their gradients can be differentiated
    again."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, reduce="sum", include_self=True):
        grid, crop = _grid(index, dim), _crop(index.shape)
        s = src[crop]
        hit = np.zeros(x.shape, dtype=bool)
        hit[grid] = True
        out = x.copy()
        if reduce in ("sum", "mean"):
            if not include_self:
                out[hit] = 0
            np.add.at(out, grid, s)
            count = np.zeros(x.shape, dtype=np.int64)
            np.add.at(count, grid, 1)
            count += 1 if include_self else 0
            if reduce == "mean":
                n = np.maximum(count, 1).astype(out.dtype)
                out = np.where(hit, out / n if out.dtype.kind == "f" else out // n, out).astype(x.dtype)
        else:
            ufunc = np.maximum if reduce == "amax" else np.minimum
            if not include_self:
                fill = -np.inf if reduce == "amax" else np.inf
                if x.dtype.kind != "f":
                    info = np.iinfo(x.dtype)
                    fill = info.min if reduce == "amax" else info.max
                out[hit] = fill
            ufunc.at(out, grid, s)
            count = (x == out).astype(np.int64)   # torch counts x's tie even without include_self
            np.add.at(count, grid, (s == out[grid]).astype(np.int64))
        ctx.grid, ctx.crop, ctx.hit, ctx.count = grid, crop, hit, count
        ctx.reduce, ctx.include_self, ctx.src_shape = reduce, include_self, src.shape
        if reduce in ("amax", "amin"):
            ctx.self_won = (x == out) & hit & include_self
            ctx.src_won = s == out[grid]
        return out

    @staticmethod
    def backward(ctx, g):
        grid, hit, reduce = ctx.grid, ctx.hit, ctx.reduce
        if reduce == "sum":
            gx, per_term = (g if ctx.include_self else np.where(hit, 0, g)), g
        else:
            per_term = g / np.maximum(ctx.count, 1).astype(g.dtype)
            if reduce == "mean":
                gx = np.where(hit, per_term if ctx.include_self else 0, g)
            else:
                gx = np.where(hit, np.where(ctx.self_won, per_term, 0), g)
        gs = per_term[grid]
        if reduce in ("amax", "amin"):
            gs = np.where(ctx.src_won, gs, 0)
        return gx, _src_gradient(gs, ctx.src_shape, ctx.crop)


class ScatterReduceProd(ArrayFunction):
    """``scatter_reduce(..., 'prod')``: y = x with each indexed position multiplied by the src
    terms scattered onto it, y[p] = x[p]·Π_{i→p} src[i] (without include_self x[p] is left out:
    y[p] = Π_{i→p} src[i]; a position nothing lands on keeps x[p]).

    The derivative of a product with respect to one factor is the product of the *other*
    factors (y = a·b·c: ∂y/∂b = a·c). So, with g = dL/dy:

    * dL/dx[p] = g[p]·Π_{i→p} src[i] with include_self (0 without it; g[p] where nothing
      lands). That product of the src terms alone is formed directly, a scatter-prod onto ones,
      so a zero x[p] needs no care. (torch forms it as y with x's zeros set to 1, divided by x.)
    * dL/dsrc[i] = g[p]·(the product of the other terms at p), p the position src[i] lands on.
      When src[i] ≠ 0 that is y[p] / src[i] -- exact whatever the others hold: a zero among
      them makes both sides 0. When src[i] = 0 the quotient is 0/0, so count the src zeros
      scattered to p:
        - src[i] is the only one (a *lone* zero): the product of its others is formed
          directly: the scatter-prod again, with src's lone zeros replaced by 1 (x[p] in it
          under include_self, so a zero x[p] makes it 0, as it should);
        - two or more: every product of the others holds a zero, so the gradient is 0 = y[p]
          (the quotient by src with its zeros replaced by 1 gives exactly that).
      dL/dsrc = where(lone zero, gather(g·(scatter-prod of the masked src)),
                      gather(g·y) / src with its zeros set to 1): torch's formula
      (FunctionsManual.cpp, scatter_reduce_backward).

    Gradients of gradients: the backward is built from ops that have derivatives -- products, a
    quotient, gathers, a where whose mask (which src are zero) is a constant, and the
    scatter-prods, which are this op again -- so it runs unchanged on Tensors and is recorded.
    Its derivatives are the true ones while each position receives at most one src zero: a
    lone zero's gradient is built with a constant 1 in its place, so differentiating it gives
    the products of the remaining terms; a nonzero src[i]'s y / src[i] is differentiated
    through y. Where two src zeros k and l meet at p they are not: src[k]'s gradient is
    g[p]·y[p] / 1, whose derivative w.r.t. src[l] is 0 (y's own gradient there holds src[k]),
    while the true ∂²y/∂src[k]∂src[l] is the product of the remaining terms. As torch does,
    src's gradient then refuses to be differentiated (:class:`ScatterReduceProdZerosMeet`);
    x's stays differentiable."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0, include_self=True):
        grid, crop = _grid(index, dim), _crop(index.shape)
        s = src[crop]
        out = x.copy()
        if not include_self:
            out[grid] = 1
        np.multiply.at(out, grid, s)
        ctx.save_for_backward(x, src, out)
        ctx.index, ctx.dim, ctx.grid, ctx.crop = index, dim, grid, crop
        ctx.include_self, ctx.src_shape = include_self, src.shape
        ctx.zero = ctx.lone_zero = None       # src's zeros (None: src holds none), constants
        ctx.zeros_meet = False
        zero = s == 0
        if ctx.needs_input_grad[1] and zero.any():
            zeros_at = np.zeros(x.shape, dtype=np.int64)   # src zeros scattered to each position
            np.add.at(zeros_at, grid, zero.astype(np.int64))
            ctx.zero, ctx.lone_zero = zero, zero & (zeros_at[grid] == 1)
            ctx.zeros_meet = bool((zeros_at > 1).any())
        return out

    @staticmethod
    def backward(ctx, g):
        x, src, y = ctx.saved_tensors     # arrays; Tensors with their history under create_graph
        s, grid = src[ctx.crop], ctx.grid
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            if ctx.include_self:
                gx = g * _scatter_prod(np.ones_like(x), s, ctx)
            else:
                gx = put(np.copy(g), grid, 0)
        if ctx.needs_input_grad[1]:
            gy = (g * y)[grid]
            with np.errstate(invalid="ignore", over="ignore"):
                if ctx.zero is None:              # no zero in src: every product of the others is y / src[i]
                    others = gy / s
                else:
                    lone = ctx.lone_zero
                    base = x if ctx.include_self else np.ones_like(x)   # where every product at p starts
                    without_lone = _scatter_prod(base, np.where(lone, 1, s), ctx)
                    others = np.where(lone, (g * without_lone)[grid], gy / np.where(ctx.zero, 1, s))
            gsrc = _src_gradient(others, ctx.src_shape, ctx.crop)
            if ctx.zeros_meet and isinstance(gsrc, Tensor):
                gsrc = ScatterReduceProdZerosMeet.apply(gsrc)
        return gx, gsrc


def _scatter_prod(base, s, ctx):
    """base with the terms ``s`` (index's shape) multiplied in at the positions ``ctx``'s index
    sends them to: np.multiply.at on arrays; on Tensors, the op itself, recorded."""
    if isinstance(s, Tensor):   # under create_graph every float value in the backward is a Tensor
        return ScatterReduceProd.apply(base, s, index=ctx.index, dim=ctx.dim)
    out = base.copy()
    np.multiply.at(out, ctx.grid, s)
    return out


class ScatterReduceProdZerosMeet(ArrayFunction):
    """src's gradient of scatter_reduce 'prod' recorded under create_graph when two or more src
    zeros are scattered to one position: the value passes through; differentiating it raises,
    as torch's DelayedError does (:class:`ScatterReduceProd` says why it would be wrong)."""

    differentiable_backward = True   # its backward raises whatever it is given

    @staticmethod
    def forward(ctx, gsrc):
        return gsrc.copy()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are "
                           "scattered to the same position in self (ScatterReduceProd: the gradient of src "
                           "cannot be differentiated there)")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise ValueError(f"scatter_reduce: reduce argument must be one of 'sum', 'prod', 'mean', 'amax', "
                         f"'amin', got {reduce!r}")
    _tensor(src, "scatter_reduce")
    input, x, idx, d, src = _scatter_args("scatter_reduce", input, dim, index, src)
    if reduce == "prod":
        return ScatterReduceProd.apply(x, src, index=idx, dim=d, include_self=bool(include_self)).reshape(input.shape)
    return ScatterReduce.apply(x, src, index=idx, dim=d, reduce=reduce,
                               include_self=bool(include_self)).reshape(input.shape)
