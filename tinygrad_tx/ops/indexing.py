"""Indexing ops: gather/scatter along a dim, index_select/index_add/..., masks, nonzero, take.

Two index patterns recur:

* **along a dim with an index of x's rank** (gather, scatter, scatter_add, scatter_reduce):
  index[i0, ..., ik, ...] names the position along ``dim``; the other coordinates are the
  index element's own. ``_grid(index, dim)`` turns that into a NumPy advanced index
  (open grids for the other axes), so x[grid] gathers and np.add.at(out, grid, v) scatters.
* **slices along a dim** (index_select, index_add, index_copy, index_fill): index is a vector
  of positions along ``dim``; working on ``np.moveaxis(a, dim, 0)`` makes them plain row
  indices.

Gathers and scatters are each other's backward: dL/dx of a gather is a scatter-add of g (an
element picked k times gets k contributions), dL/dsrc of a scatter is a gather of g.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..tensor import Tensor
from . import movement as _M
from .movement import IndexOutOfRange, canonical_dim

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

class Gather(Function):
    """y[i0, .., ik] = x[i0, .., index[i0, .., ik], .., ik] (index on axis ``dim``).
    x element j feeds every output whose index points at it: dL/dx = scatter-add of g at
    the gathered positions (np.add.at(zeros, grid, g): repeated indices add up)."""

    @staticmethod
    def forward(ctx, x, index=None, dim=0):
        ctx.grid, ctx.shape = _grid(index, dim), x.shape
        return x[ctx.grid]

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.shape, dtype=g.dtype)
        np.add.at(out, ctx.grid, g)
        return out


def _check_scatter_shapes(op, x, index, dim, src=None):
    if index.ndim != x.ndim:
        raise ValueError(f"{op}: index tensor must have the same number of dimensions as input tensor "
                         f"(index shape {index.shape}, input shape {x.shape})")
    if src is not None and index.ndim != src.ndim:
        raise ValueError(f"{op}: index tensor must have the same number of dimensions as src tensor "
                         f"(index shape {index.shape}, src shape {src.shape})")
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


class Scatter(Function):
    """y = x, then y[i0, .., index[i0, .., ik], .., ik] = src[i0, .., ik] (or a scalar value).
    dL/dx: an overwritten element does not reach y: g with the scattered positions zeroed.
    dL/dsrc[i] = g at the position src[i] was written to: a gather of g (with duplicate
    indices only one write survives, but each gets that position's g, as in torch).
    With ``reduce`` ('add', 'multiply') torch has no derivative; neither do we."""

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
        gx = g.copy()
        gx[ctx.grid] = 0
        gsrc = None
        if ctx.needs_input_grad[1]:
            gsrc = np.zeros(ctx.src_shape, dtype=g.dtype)
            gsrc[ctx.crop] = g[ctx.grid]
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


class ScatterAdd(Function):
    """y = x, then y[i0, .., index[i0, .., ik], .., ik] += src[i0, .., ik] (duplicates add).
    y is x plus a sum of src elements: dL/dx = g, and dL/dsrc = a gather of g."""

    @staticmethod
    def forward(ctx, x, src, index=None, dim=0):
        ctx.grid, ctx.src_shape, ctx.crop = _grid(index, dim), src.shape, _crop(index.shape)
        out = x.copy()
        np.add.at(out, ctx.grid, src[ctx.crop])
        return out

    @staticmethod
    def backward(ctx, g):
        gsrc = np.zeros(ctx.src_shape, dtype=g.dtype)
        gsrc[ctx.crop] = g[ctx.grid]
        return g, gsrc


def scatter_add(input, dim, index, src):
    _tensor(src, "scatter_add")
    input, x, idx, d, src = _scatter_args("scatter_add", input, dim, index, src)
    return ScatterAdd.apply(x, src, index=idx, dim=d).reshape(input.shape)


class ScatterReduce(Function):
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
        x no gradient there): we follow it, so the shares can sum to less than g[p]."""

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
        gsrc = np.zeros(ctx.src_shape, dtype=g.dtype)
        gsrc[ctx.crop] = gs
        return gx, gsrc


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    if reduce not in ("sum", "mean", "amax", "amin"):
        raise ValueError(f"scatter_reduce: reduce argument must be one of 'sum', 'mean', 'amax', 'amin' "
                         f"(torch's 'prod' is not implemented here), got {reduce!r}")
    _tensor(src, "scatter_reduce")
    input, x, idx, d, src = _scatter_args("scatter_reduce", input, dim, index, src)
    return ScatterReduce.apply(x, src, index=idx, dim=d, reduce=reduce,
                               include_self=bool(include_self)).reshape(input.shape)


# ============================================================================ slices along a dim

def _rows(a: np.ndarray, dim: int) -> np.ndarray:
    """A view of ``a`` with axis ``dim`` first, so positions along dim are row indices."""
    return np.moveaxis(a, dim, 0)


class IndexSelect(Function):
    """y = the slices of x at positions ``index`` along ``dim`` (np.take).
    dL/dx = zeros with each slice of g added at its position (np.add.at: a position selected
    twice gets both slices)."""

    @staticmethod
    def forward(ctx, x, index=None, dim=0):
        ctx.shape, ctx.index, ctx.dim = x.shape, index, dim
        return np.take(x, index, axis=dim)

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.shape, dtype=g.dtype)
        np.add.at(_rows(out, ctx.dim), ctx.index, _rows(g, ctx.dim))
        return out


def _vector_index(op, input, dim, index, allowed=_INT32_OR_64, error=TypeError):
    input = _tensor(input, op)
    index = _index(index, op, allowed, error)
    if index.ndim > 1:
        raise IndexError(f"{op}(): index is supposed to be a vector, got shape {index.shape}")
    d = canonical_dim(dim, input.ndim, op)
    x = input.reshape(1) if input.ndim == 0 else input
    index = index.reshape(-1)
    _check_bounds(index, x.shape[d], d, op)
    return input, x, index, d


def index_select(input, dim, index):
    input, x, index, d = _vector_index("index_select", input, dim, index)
    out = IndexSelect.apply(x, index=index, dim=d)
    return out.reshape(()) if input.ndim == 0 else out


def _check_source(op, x, index, d, source):
    source = _tensor(source, op)
    if source.dtype != x.dtype:
        raise TypeError(f"{op}(): self ({x.dtype}) and source ({source.dtype}) must have the same dtype")
    src = source.reshape(1) if source.ndim == 0 and x.ndim == 1 else source
    expected = x.shape[:d] + (index.size,) + x.shape[d + 1:]
    if src.shape != expected:
        raise ValueError(f"{op}(): source must have shape {list(expected)} (number of indices "
                         f"({index.size}) along dim {d}, the input's sizes elsewhere), got {list(source.shape)}")
    return src


class IndexAdd(Function):
    """y = x, then y[..., index[k], ...] += alpha * source[..., k, ...] along ``dim``.
    dL/dx = g; dL/dsource = alpha * (the slices of g at ``index``)."""

    @staticmethod
    def forward(ctx, x, source, index=None, dim=0, alpha=1):
        ctx.index, ctx.dim, ctx.alpha = index, dim, alpha
        out = x.copy()
        np.add.at(_rows(out, dim), index, _rows(source * alpha if alpha != 1 else source, dim))
        return out

    @staticmethod
    def backward(ctx, g):
        gs = np.take(g, ctx.index, axis=ctx.dim)
        return g, (gs * ctx.alpha if ctx.alpha != 1 else gs)


def index_add(input, dim, index, source, *, alpha=1):
    input, x, index, d = _vector_index("index_add", input, dim, index)
    src = _check_source("index_add", x, index, d, source)
    return IndexAdd.apply(x, src, index=index, dim=d, alpha=alpha).reshape(input.shape)


class IndexCopy(Function):
    """y = x, then y[..., index[k], ...] = source[..., k, ...] along ``dim``.
    dL/dx = g with the overwritten slices zeroed; dL/dsource = the slices of g at ``index``."""

    @staticmethod
    def forward(ctx, x, source, index=None, dim=0):
        ctx.index, ctx.dim = index, dim
        out = x.copy()
        _rows(out, dim)[index] = _rows(source, dim)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = g.copy()
        _rows(gx, ctx.dim)[ctx.index] = 0
        return gx, np.take(g, ctx.index, axis=ctx.dim)


def index_copy(input, dim, index, source):
    input, x, index, d = _vector_index("index_copy", input, dim, index, _INT64)
    src = _check_source("index_copy", x, index, d, source)
    return IndexCopy.apply(x, src, index=index, dim=d).reshape(input.shape)


class IndexFill(Function):
    """y = x with the slices at ``index`` along ``dim`` set to the scalar v.
    dL/dx = g with those slices zeroed; dL/dv = the sum of g over the filled positions
    (each position once, however often its index repeats: it is filled once)."""

    @staticmethod
    def forward(ctx, x, value, index=None, dim=0):
        ctx.index, ctx.dim = index, dim
        out = x.copy()
        _rows(out, dim)[index] = value
        return out

    @staticmethod
    def backward(ctx, g):
        gx = g.copy()
        _rows(gx, ctx.dim)[ctx.index] = 0
        gv = None
        if ctx.needs_input_grad[1]:
            gv = _rows(g, ctx.dim)[np.unique(ctx.index)].sum(dtype=np.float64).astype(g.dtype)
        return gx, gv


def index_fill(input, dim, index, value):
    input, x, index, d = _vector_index("index_fill", input, dim, index, _INT64, IndexError)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"index_fill_(): only supports a 0-dimensional value tensor, but got tensor "
                             f"with {value.ndim} dimension(s)")
        value = value if value.dtype == x.dtype else value.to(x.dtype)
    elif not isinstance(value, (int, float, bool, np.number)):
        raise TypeError(f"index_fill: value must be a number or a 0-d Tensor, got {type(value).__name__}")
    else:
        value = np.asarray(value).astype(x.dtype)
    return IndexFill.apply(x, value, index=index, dim=d).reshape(input.shape)


# ============================================================================ masks

def _bool_mask(mask, op) -> np.ndarray:
    m = mask._data if isinstance(mask, Tensor) else mask
    if isinstance(m, np.generic):
        m = np.asarray(m)
    if not isinstance(m, np.ndarray) or m.dtype != np.bool_:
        raise TypeError(f"{op}: expected a bool tensor for mask, got "
                        f"{m.dtype if isinstance(m, np.ndarray) else type(m).__name__}")
    return m


def _broadcast_mask(x: np.ndarray, mask: np.ndarray, op: str):
    try:
        shape = np.broadcast_shapes(x.shape, mask.shape)
    except ValueError:
        raise ValueError(f"{op}: the mask's shape {mask.shape} does not broadcast with the input's {x.shape}") from None
    return np.broadcast_to(x, shape), np.broadcast_to(mask, shape)


class MaskedSelect(Function):
    """y = the elements of x (broadcast with the mask) where mask is True, as a 1-D tensor.
    dL/dx = zeros with g written at the True positions (in the broadcast shape: the engine
    sums it back onto x)."""

    @staticmethod
    def forward(ctx, x, mask=None):
        xb, mb = _broadcast_mask(x, mask, "masked_select")
        ctx.mask = mb
        return xb[mb]

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(ctx.mask.shape, dtype=g.dtype)
        out[ctx.mask] = g
        return out


def masked_select(input, mask):
    return MaskedSelect.apply(_tensor(input, "masked_select"), mask=_bool_mask(mask, "masked_select"))


class MaskedScatter(Function):
    """y = x with its True-mask positions (row-major order) filled by the first n elements
    of source, n = mask.sum().
    dL/dx = g where mask is False, 0 where it is True;
    dL/dsource = g at the True positions for the first n elements, 0 for the rest."""

    @staticmethod
    def forward(ctx, x, source, mask=None):
        xb, mb = _broadcast_mask(x, mask, "masked_scatter")
        n = int(mb.sum())
        if source.size < n:
            raise ValueError(f"masked_scatter: number of elements of source ({source.size}) < number of "
                             f"ones in mask ({n})")
        out = xb.copy()
        out[mb] = source.reshape(-1)[:n]
        ctx.mask, ctx.n, ctx.src_shape = mb, n, source.shape
        return out

    @staticmethod
    def backward(ctx, g):
        gsrc = np.zeros(int(np.prod(ctx.src_shape, dtype=np.int64)), dtype=g.dtype)
        gsrc[:ctx.n] = g[ctx.mask]
        return np.where(ctx.mask, 0, g), gsrc.reshape(ctx.src_shape)


def masked_scatter(input, mask, source):
    input, source = _tensor(input, "masked_scatter"), _tensor(source, "masked_scatter")
    if source.dtype != input.dtype:
        raise TypeError(f"masked_scatter: expected source dtype {input.dtype}, got {source.dtype}")
    return MaskedScatter.apply(input, source, mask=_bool_mask(mask, "masked_scatter"))


# ============================================================================ nonzero, take

def nonzero(input, *, as_tuple=False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor in row-major order, or
    (as_tuple) one 1-D index tensor per dimension (a 0-d input counts as 1-d). No gradient."""
    a = _tensor(input, "nonzero")._data
    if as_tuple:
        return tuple(Tensor(i.astype(np.int64)) for i in np.nonzero(np.atleast_1d(a)))
    return Tensor(np.argwhere(a).astype(np.int64))


def argwhere(input):
    return nonzero(input)


def where(condition, input=None, other=None):
    """torch.where: with one argument, nonzero(condition, as_tuple=True); with three, the
    elementwise choice of tensor.py's where."""
    if input is None and other is None:
        return nonzero(condition if isinstance(condition, Tensor) else Tensor(condition), as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: pass condition alone, or condition, input and other")
    from ..tensor import where as where3
    return where3(condition, input, other)


class Take(Function):
    """y = x.flatten()[index] (index of any shape; negative entries count from the end).
    dL/dx = zeros of x's size with g scatter-added at ``index`` (repeats add), reshaped."""

    @staticmethod
    def forward(ctx, x, index=None):
        ctx.shape, ctx.index = x.shape, index
        return x.reshape(-1)[index]

    @staticmethod
    def backward(ctx, g):
        out = np.zeros(int(np.prod(ctx.shape, dtype=np.int64)), dtype=g.dtype)
        np.add.at(out, ctx.index, g)
        return out.reshape(ctx.shape)


def take(input, index):
    input = _tensor(input, "take")
    index = _index(index, "take", _INT64)
    n = input._data.size
    if index.size:
        bad = (index < -n) | (index >= n)
        if bad.any():
            raise IndexOutOfRange(f"take: out of range: tried to access index {int(index[bad].flat[0])} on a "
                                  f"tensor of {n} elements")
    return Take.apply(input, index=index)


def take_along_dim(input, indices, dim=None):
    """gather after broadcasting input and indices against each other on every axis but
    ``dim`` (dim=None: on the flattened input). A composite of Expand and Gather."""
    input = _tensor(input, "take_along_dim")
    idx = _index(indices, "take_along_dim", _INT64)
    if dim is None:
        return gather(input.reshape(-1), 0, Tensor(idx.reshape(-1)))
    d = canonical_dim(dim, input.ndim, "take_along_dim")
    if idx.ndim != input.ndim:
        raise ValueError(f"torch.take_along_dim(): input and indices should have the same number of "
                         f"dimensions, but got {input.ndim} dimensions for input, and {idx.ndim} dimensions "
                         "for indices")
    if input.ndim == 0:
        return gather(input, 0, Tensor(idx))
    others = lambda s: s[:d] + (1,) + s[d + 1:]   # noqa: E731
    try:
        common = np.broadcast_shapes(others(input.shape), others(idx.shape))
    except ValueError:
        raise ValueError(f"take_along_dim: input shape {input.shape} and indices shape {idx.shape} do not "
                         f"broadcast apart from dimension {d}") from None
    x = input.expand(common[:d] + (input.shape[d],) + common[d + 1:])
    idx = np.broadcast_to(idx, common[:d] + (idx.shape[d],) + common[d + 1:])
    return gather(x, d, Tensor(np.ascontiguousarray(idx)))


# ============================================================================ index_put (x[index] = values, out of place)

def index_put(input, index, values, accumulate=False):
    """A copy of ``input`` with ``input[index] = values`` (accumulate: ``+= values``, duplicate
    indices each adding). ``index`` is any expression ``Tensor.__getitem__`` accepts (torch's
    tuple of index tensors is one); ``values`` a Tensor of input's dtype (as torch requires)
    or a Python number, broadcast to ``input[index]``'s shape. See movement.IndexPut."""
    input = _tensor(input, "index_put")
    if isinstance(values, Tensor):
        if values.dtype != input.dtype:
            raise TypeError(f"index_put requires the source and destination dtypes match, got {input.dtype} "
                            f"for the destination and {values.dtype} for the source")
    elif isinstance(values, (int, float, bool, np.number)):
        values = np.asarray(values).astype(input.dtype)
    else:
        raise TypeError(f"index_put: values must be a Tensor or a number, got {type(values).__name__}")
    idx, _ = _M._normalize_index(index)
    return _M.IndexPut.apply(input, values, index=idx, accumulate=bool(accumulate))


_OPS = {
    "gather": gather, "scatter": scatter, "scatter_add": scatter_add, "scatter_reduce": scatter_reduce,
    "index_select": index_select, "index_add": index_add, "index_copy": index_copy,
    "index_fill": index_fill, "masked_select": masked_select, "masked_scatter": masked_scatter,
    "nonzero": nonzero, "argwhere": argwhere, "take": take, "take_along_dim": take_along_dim,
    "index_put": index_put,
}
TENSOR_METHODS = dict(_OPS)
FUNCTIONS = {**_OPS, "where": where}
