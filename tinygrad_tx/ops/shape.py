"""Shape ops beyond reshape/permute/expand: triangles, rolls and flips, diagonals, repeats,
sliding windows, and the composites torch offers on top of views (movedim, unbind,
tensor_split, meshgrid, einsum in ``einsum.py``, ...).

Like every movement op, each output element is a copy of one input element (or a constant 0),
so each backward routes g = dL/dy back to where the element came from: the inverse
rearrangement, zeros for constants, and a sum where one input element fed several outputs.
Composites (built from Reshape, Permute, Expand, GetItem) are marked as such: torch's gradient
is the composite's, because their outputs are the same rearrangements.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ..core.function import ArrayFunction
from ..core.broadcast import accumulation_dtype
from ..autograd.node_names import named
from ..core.versions import multi_output
from ..core.tensor import Tensor, _adopt
from .einsum import einsum
from .movement import canonical_dim, canonical_dims, infer_shape, put


def _dim_first(shape: tuple, dim: int) -> tuple:
    """``shape`` with axis ``dim`` moved to the front (np.moveaxis(x, dim, 0)'s shape)."""
    return (shape[dim],) + shape[:dim] + shape[dim + 1:]


def _tensor(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor as input, got {type(x).__name__}")
    return x


def _int_seq(value, op: str, what: str) -> tuple:
    """An int or a sequence of ints as a tuple of Python ints (TypeError otherwise)."""
    items = (value,) if isinstance(value, (int, np.integer)) else value
    try:
        items = tuple(items)
    except TypeError:
        raise TypeError(f"{op}: {what} must be an int or a sequence of ints, got {value!r}") from None
    if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in items):
        raise TypeError(f"{op}: {what} must be ints, got {value!r}")
    return tuple(int(i) for i in items)


def _sizes_arg(sizes) -> tuple:
    """f(2, 3) and f((2, 3)) alike."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        return tuple(sizes[0])
    return tuple(sizes)


def _keyword_sizes(op: str, name: str, positional: tuple, kwargs: dict) -> tuple:
    """The sizes given positionally (f(0, 1) or f((0, 1))) or as the keyword ``name``."""
    if set(kwargs) - {name}:
        raise TypeError(f"{op}() got an unexpected keyword argument {next(iter(set(kwargs) - {name}))!r}")
    if name in kwargs:
        if positional:
            raise TypeError(f"{op}(): {name} given both positionally and as a keyword")
        return _sizes_arg((kwargs[name],))
    return _sizes_arg(positional)


# ============================================================================ triangles

class Triangle(ArrayFunction):
    """y = tril(x, k) (or triu with upper=True), on the last two axes:
    y[..., i, j] = x[..., i, j] where j - i <= k (triu: j - i >= k), else 0.
    A kept element is copied once, the rest are constants: dL/dx = tril(g, k) (triu(g, k))."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, diagonal=0, upper=False):
        ctx.k, ctx.keep = diagonal, (np.triu if upper else np.tril)
        return ctx.keep(x, diagonal)

    @staticmethod
    def backward(ctx, g):
        return ctx.keep(g, ctx.k)


def _triangle(name):
    def f(input, diagonal=0):
        input = _tensor(input, name)
        if input.ndim < 2:
            raise ValueError(f"{name}: input tensor must have at least 2 dimensions, got shape {tuple(input.shape)}")
        return Triangle.apply(input, diagonal=int(diagonal), upper=name == "triu")
    f.__name__ = name
    return f


tril = _triangle("tril")
triu = _triangle("triu")


# ============================================================================ roll and flip

class Roll(ArrayFunction):
    """y = roll(x, shifts, dims): y[i + s mod n] = x[i] along each rolled axis (dims=None: the
    flattened tensor). A permutation: dL/dx = roll(g, -shifts, dims)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, shifts=(), dims=None):
        ctx.shifts, ctx.dims = shifts, dims
        return np.roll(x, shifts, axis=dims)

    @staticmethod
    def backward(ctx, g):
        return np.roll(g, tuple(-s for s in ctx.shifts), axis=ctx.dims)


def roll(input, shifts, dims=None):
    input = _tensor(input, "roll")
    shifts = _int_seq(shifts, "roll", "shifts")
    if not shifts:
        raise ValueError("roll: `shifts` required")
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll: shifts {list(shifts)} and dims None must align (one shift "
                             "rolls the flattened tensor)")
        return Roll.apply(input, shifts=shifts, dims=None)
    dims = _int_seq(dims, "roll", "dims")
    if input.numel() == 0:   # torch returns an empty input as is, before checking dims
        return input.clone()
    if input.ndim == 0:
        raise IndexError("roll: dimension specified as 0 but tensor has no dimensions")
    if len(dims) != len(shifts):
        raise ValueError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    dims = tuple(canonical_dim(d, input.ndim, "roll") for d in dims)
    return Roll.apply(input, shifts=shifts, dims=dims)


class Flip(ArrayFunction):
    """y = x reversed along ``dims``. Its own inverse: dL/dx = flip(g, dims)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dims=()):
        ctx.dims = dims
        return np.flip(x, dims).copy()

    @staticmethod
    def backward(ctx, g):
        return np.flip(g, ctx.dims)


def flip(input, *dims, **kwargs):
    """x.flip(0, 1), x.flip((0, 1)) and torch.flip(x, dims=(0, 1)) alike."""
    input = _tensor(input, "flip")
    dims = _keyword_sizes("flip", "dims", dims, kwargs)
    dims = canonical_dims(_int_seq(dims, "flip", "dims"), input.ndim, "flip")
    return Flip.apply(input, dims=dims if input.ndim else ())


def fliplr(input):
    if _tensor(input, "fliplr").ndim < 2:
        raise ValueError(f"fliplr: input must be >= 2-d, got shape {tuple(input.shape)}")
    return flip(input, 1)


def flipud(input):
    if _tensor(input, "flipud").ndim < 1:
        raise ValueError(f"flipud: input must be >= 1-d, got shape {tuple(input.shape)}")
    return flip(input, 0)


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90° k times in the plane ``dims``: a composite of flip and transpose, as
    torch's (so its gradient is theirs)."""
    input = _tensor(input, "rot90")
    dims = _int_seq(dims, "rot90", "dims")
    if len(dims) != 2:
        raise ValueError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise ValueError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (canonical_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ValueError(f"rot90: expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k = int(k) % 4
    if k == 1:
        return flip(input, d1).transpose(d0, d1)
    if k == 2:
        return flip(input, d0, d1)
    if k == 3:
        return flip(input, d0).transpose(d0, d1)
    return input.clone()


# ============================================================================ diagonals

def _diagonal_positions(n: int, offset: int):
    """Row and column indices of the n elements of the ``offset`` diagonal of a matrix."""
    rows = np.arange(n) + max(-offset, 0)
    return rows, rows + offset


class Diagonal(ArrayFunction):
    """y = the ``offset`` diagonal of the (dim1, dim2) planes of x, as a new last axis:
    y[..., k] = x[..., r_k, c_k] with c_k - r_k = offset.
    Each diagonal element is copied once, the others unused: dL/dx = zeros with g written
    onto that diagonal (DiagEmbed's forward)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, offset=0, dim1=0, dim2=1):
        ctx.shape, ctx.offset, ctx.dims = x.shape, offset, (dim1, dim2)
        y = np.diagonal(x, offset, dim1, dim2)   # a view, read-only by NumPy's default:
        if x.flags.writeable:                     # writable as torch's, so writes reach x
            y.flags.writeable = True
        return y

    @staticmethod
    def backward(ctx, g):
        d1, d2 = ctx.dims   # zero planes with the (dim1, dim2) axes last, g on their diagonal
        shape = tuple(n for i, n in enumerate(ctx.shape) if i not in ctx.dims) + (ctx.shape[d1], ctx.shape[d2])
        rows, cols = _diagonal_positions(np.shape(g)[-1], ctx.offset)
        planes = put(np.zeros(shape, np.result_type(g)), (Ellipsis, rows, cols), g)
        return np.moveaxis(planes, (-2, -1), ctx.dims)


class DiagEmbed(ArrayFunction):
    """y = matrices in the (dim1, dim2) planes whose ``offset`` diagonal is x's last axis,
    zeros elsewhere: y[..., r_k, c_k] = x[..., k].
    The inverse of Diagonal: dL/dx = the ``offset`` diagonal of g."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, offset=0, dim1=0, dim2=1):
        ctx.offset, ctx.dims = offset, (dim1, dim2)
        n = x.shape[-1]
        m = n + abs(offset)
        planes = np.zeros(x.shape[:-1] + (m, m), dtype=x.dtype)
        rows, cols = _diagonal_positions(n, offset)
        planes[..., rows, cols] = x
        return np.moveaxis(planes, (-2, -1), (dim1, dim2))

    @staticmethod
    def backward(ctx, g):
        return np.diagonal(g, ctx.offset, *ctx.dims)


def _plane_dims(dim1, dim2, ndim, op):
    d1, d2 = canonical_dim(dim1, ndim, op), canonical_dim(dim2, ndim, op)
    if d1 == d2:
        raise ValueError(f"{op}: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal(input, offset=0, dim1=0, dim2=1):
    input = _tensor(input, "diagonal")
    d1, d2 = _plane_dims(dim1, dim2, input.ndim, "diagonal")
    return Diagonal.apply(input, offset=int(offset), dim1=d1, dim2=d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    input = _tensor(input, "diag_embed")
    if input.ndim == 0:
        raise ValueError("diag_embed: input must have at least 1 dimension, got a 0-d tensor")
    d1, d2 = _plane_dims(dim1, dim2, input.ndim + 1, "diag_embed")
    return DiagEmbed.apply(input, offset=int(offset), dim1=d1, dim2=d2)


def diag(input, diagonal=0):
    """1-D x: the square matrix with x on its ``diagonal``; 2-D x: that diagonal as a vector."""
    input = _tensor(input, "diag")
    if input.ndim == 1:
        return DiagEmbed.apply(input, offset=int(diagonal), dim1=0, dim2=1)
    if input.ndim == 2:   # a copy, as torch's (Tensor.diagonal is the view); torch names the node
        copy = Diagonal.apply(input, offset=int(diagonal), dim1=0, dim2=1).clone()
        return named(copy, "DiagonalBackward0_copy")
    raise ValueError(f"diag(): supports 1D or 2D tensors, got {input.ndim}D (shape {tuple(input.shape)})")


# ============================================================================ repeats

class Repeat(ArrayFunction):
    """y = x tiled ``sizes`` times along each axis (x first viewed with leading 1s up to
    len(sizes) axes): y[k*s + i] = x[i] along an axis of size s repeated r times.
    Each x element feeds r copies: dL/dx = g viewed as (r0, s0, r1, s1, ...), summed over
    the r axes."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, sizes=()):
        padded = (1,) * (len(sizes) - x.ndim) + x.shape
        ctx.in_shape, ctx.padded, ctx.sizes = x.shape, padded, sizes
        return np.tile(x.reshape(padded), sizes)

    @staticmethod
    def backward(ctx, g):
        split = tuple(n for pair in zip(ctx.sizes, ctx.padded) for n in pair)
        dt = np.result_type(g)
        summed = np.sum(np.reshape(g, split), axis=tuple(range(0, len(split), 2)), dtype=accumulation_dtype(dt))
        return np.astype(np.reshape(summed, ctx.in_shape), dt, copy=False)


def repeat(input, *sizes, **kwargs):
    input = _tensor(input, "repeat")
    sizes = _int_seq(_keyword_sizes("repeat", "repeats", sizes, kwargs), "repeat", "sizes")
    if len(sizes) < input.ndim:
        raise ValueError(f"repeat: number of dimensions of repeat dims ({len(sizes)}) can not be smaller "
                         f"than number of dimensions of tensor ({input.ndim}, shape {tuple(input.shape)})")
    if any(s < 0 for s in sizes):
        raise ValueError(f"repeat: repeats must be non-negative, got {list(sizes)}")
    return Repeat.apply(input, sizes=sizes)


def tile(input, *dims, **kwargs):
    """torch.tile: like repeat, but missing leading repeat counts are 1."""
    input = _tensor(input, "tile")
    dims = _int_seq(_keyword_sizes("tile", "dims", dims, kwargs), "tile", "dims")
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


class RepeatInterleave(ArrayFunction):
    """y = each slice of x along ``dim`` repeated repeats[i] times in place:
    y[j] = x[src[j]] with src = [0]*r0 + [1]*r1 + ...
    dL/dx[i] = the sum of g[j] over the r_i positions j with src[j] = i (a scatter-add)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, repeats=1, dim=0):
        ctx.shape, ctx.dim = x.shape, dim
        ctx.src = np.repeat(np.arange(x.shape[dim]), repeats)
        return np.repeat(x, repeats, axis=dim)

    @staticmethod
    def backward(ctx, g):
        rows = put(np.zeros(_dim_first(ctx.shape, ctx.dim), np.result_type(g)), ctx.src, np.moveaxis(g, ctx.dim, 0),
                   accumulate=True)
        return np.moveaxis(rows, 0, ctx.dim)


def _repeats_array(repeats, op):
    if isinstance(repeats, Tensor):
        repeats = repeats._data
    if isinstance(repeats, np.ndarray):
        if repeats.dtype.kind not in "iu":
            raise TypeError(f"{op}: repeats must be an integer tensor, got dtype {repeats.dtype}")
        if repeats.ndim > 1:
            raise ValueError(f"{op}: repeats must be 0-dim or 1-dim tensor, got shape {tuple(repeats.shape)}")
    elif isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)):
        raise TypeError(f"{op}: repeats must be an int or an integer tensor, got {repeats!r}")
    repeats = np.asarray(repeats, dtype=np.int64)
    if (repeats < 0).any():
        raise ValueError(f"{op}: repeats can not be negative, got {repeats.tolist()}")
    return repeats


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave; with only an integer tensor ``input``, the repeated indices
    ``arange(len(input)).repeat_interleave(input)``."""
    input = _tensor(input, "repeat_interleave")
    if repeats is None:
        counts = _repeats_array(input, "repeat_interleave")
        return _adopt(np.repeat(np.arange(counts.size), counts.reshape(-1)))
    repeats = _repeats_array(repeats, "repeat_interleave")
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = canonical_dim(dim, input.ndim, "repeat_interleave")
        if input.ndim == 0:
            input = input.reshape(1)
    n = input.shape[d]
    if repeats.size != 1 and repeats.shape != (n,):
        raise ValueError(f"repeat_interleave: repeats must have the same size as input along dim, "
                         f"but got repeats.size(0) = {repeats.size} and input.size({d}) = {n}")
    repeats = np.broadcast_to(repeats.reshape(-1), (n,))
    total = int(repeats.sum())
    if output_size is not None and int(output_size) != total:
        raise ValueError(f"repeat_interleave: invalid output_size, expected {total} but got {output_size}")
    return RepeatInterleave.apply(input, repeats=repeats, dim=d)


# ============================================================================ sliding windows

class UnfoldFn(ArrayFunction):
    """y = every window of ``size`` consecutive elements along ``dim``, ``step`` apart, as a
    new last axis: y[..., w, ..., j] = x[..., w*step + j, ...].
    An x element may sit in several windows: dL/dx[i] = the sum of g over every (w, j) with
    w*step + j = i — added window offset by window offset (for one offset j the positions
    w*step + j are distinct)."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, dim=0, size=1, step=1):
        ctx.shape, ctx.dim, ctx.step = x.shape, dim, step
        # a view, as torch's: writable when no two windows share an element (step >= size); an
        # in-place write through overlapping windows is refused (read-only), never order-dependent
        windows = sliding_window_view(x, size, axis=dim, writeable=bool(x.flags.writeable and step >= size))
        return windows[(slice(None),) * dim + (slice(None, None, step),)]

    @staticmethod
    def backward(ctx, g):
        acc = np.zeros(_dim_first(ctx.shape, ctx.dim), np.result_type(g))
        gw = np.moveaxis(g, ctx.dim, 0)            # (windows, ..., size)
        count, step = np.shape(gw)[0], ctx.step
        for j in range(np.shape(g)[-1]):
            acc = put(acc, slice(j, j + step * (count - 1) + 1, step), gw[..., j], accumulate=True)
        return np.moveaxis(acc, 0, ctx.dim)


def unfold(input, dimension, size, step):
    input = _tensor(input, "unfold")
    d = canonical_dim(dimension, input.ndim, "unfold")
    x = input.reshape(1) if input.ndim == 0 else input
    n = x.shape[d]
    if size < 0 or size > n:
        raise ValueError(f"unfold: maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise ValueError(f"unfold: step is {step} but must be > 0")
    out = UnfoldFn.apply(x, dim=d, size=int(size), step=int(step))
    return out.reshape(size) if input.ndim == 0 else out


# ============================================================================ composites of views

def unflatten(input, dim, sizes):
    """Split axis ``dim`` into ``sizes`` (one may be -1): a reshape."""
    input = _tensor(input, "unflatten")
    d = canonical_dim(dim, input.ndim, "unflatten")
    sizes = _int_seq(sizes, "unflatten", "sizes")
    if not sizes:
        raise ValueError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    try:
        sizes = infer_shape(sizes, n, "unflatten")
    except ValueError:
        raise ValueError(f"unflatten: provided sizes {list(sizes)} don't multiply up to the size of "
                         f"dim {dim} ({n}) in the input tensor") from None
    return input.reshape(input.shape[:d] + sizes + input.shape[d + 1:])


def movedim(input, source, destination):
    """Move axes ``source`` to positions ``destination``, the others keeping their order: a permute."""
    input = _tensor(input, "movedim")
    src = _int_seq(source, "movedim", "source")
    dst = _int_seq(destination, "movedim", "destination")
    if len(src) != len(dst):
        raise ValueError(f"movedim: invalid source or destination dims: source ({list(src)} dims) should "
                         f"contain the same number of dims as destination ({list(dst)} dims)")
    src = canonical_dims(src, input.ndim, "movedim", "source")
    dst = canonical_dims(dst, input.ndim, "movedim", "destination")
    order = [None] * input.ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(input.ndim) if i not in src)
    order = tuple(o if o is not None else next(rest) for o in order)
    return input.permute(order) if input.ndim else input


def swapdims(input, dim0, dim1):
    return _tensor(input, "swapdims").transpose(dim0, dim1)


def t(input):
    """Transpose of a matrix; vectors and 0-d tensors unchanged (torch's t())."""
    input = _tensor(input, "t")
    if input.ndim > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    if input.ndim < 2:
        return input
    return named(input.transpose(0, 1), "TBackward0")


def ravel(input):
    return _tensor(input, "ravel").reshape(-1)


def view_as(input, other):
    return _tensor(input, "view_as").reshape(_tensor(other, "view_as").shape)


def unbind(input, dim=0):
    """The slices along ``dim`` as a tuple (each an indexing op, so its gradient is torch's)."""
    input = _tensor(input, "unbind")
    if input.ndim == 0:
        raise IndexError("unbind: dimension specified as 0 but tensor has no dimensions")
    d = canonical_dim(dim, input.ndim, "unbind")
    return multi_output([named(input[(slice(None),) * d + (i,)], "UnbindBackward0")
                         for i in range(input.shape[d])], "Unbind")


def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``sections`` nearly equal parts (the first n % sections one longer) or at
    ``indices``; parts are slices (GetItem), so gradients are torch's."""
    input = _tensor(input, "tensor_split")
    if input.ndim == 0:
        raise ValueError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = canonical_dim(dim, input.ndim, "tensor_split")
    n = input.shape[d]
    spec = indices_or_sections
    if isinstance(spec, Tensor):
        if spec._data.dtype.kind not in "iu":
            raise TypeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, "
                            f"but got {spec._data.dtype}")
        if spec.ndim > 1:
            raise ValueError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional "
                             f"or one-dimensional tensor, but got a tensor with {spec.ndim} dims")
        spec = spec.item() if spec.ndim == 0 else spec.tolist()
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec <= 0:
            raise ValueError(f"tensor_split: number of sections must be larger than 0, got {spec}")
        q, r = divmod(n, int(spec))
        bounds = np.cumsum([0] + [q + 1] * r + [q] * (int(spec) - r)).tolist()
    else:
        cuts = _int_seq(spec, "tensor_split", "indices")
        bounds = [0] + list(cuts) + [n]
    lead = (slice(None),) * d
    return tuple(input[lead + (slice(a, max(a, b)),)] for a, b in zip(bounds[:-1], bounds[1:]))


def _directional_split(name, dim_of, min_dims):
    def f(input, indices_or_sections):
        input = _tensor(input, name)
        if input.ndim < min_dims:
            raise ValueError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got "
                             f"a tensor with {input.ndim} dimensions!")
        d = dim_of(input.ndim)
        if isinstance(indices_or_sections, (int, np.integer)) and not isinstance(indices_or_sections, bool):
            s = int(indices_or_sections)
            if s <= 0 or input.shape[d] % s:
                raise ValueError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                 f"dimension {input.shape[d]} is not divisible by the split_size {s}!")
        return tensor_split(input, indices_or_sections, d)
    f.__name__ = name
    return f


hsplit = _directional_split("hsplit", lambda ndim: 0 if ndim == 1 else 1, 1)
vsplit = _directional_split("vsplit", lambda ndim: 0, 2)
dsplit = _directional_split("dsplit", lambda ndim: 2, 3)


def _atleast(n, name):
    def one(x):
        x = _tensor(x, name)
        if x.ndim >= n:
            return x
        if n == 3 and x.ndim == 2:
            return x.reshape(x.shape + (1,))
        if n == 3 and x.ndim == 1:
            return x.reshape((1,) + x.shape + (1,))
        return x.reshape((1,) * (n - x.ndim) + x.shape)

    def f(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(one(x) for x in tensors[0])
        return one(tensors[0]) if len(tensors) == 1 else tuple(one(x) for x in tensors)
    f.__name__ = name
    return f


atleast_1d, atleast_2d, atleast_3d = (_atleast(n, f"atleast_{n}d") for n in (1, 2, 3))


def broadcast_shapes(*shapes):
    try:
        return tuple(np.broadcast_shapes(*(tuple(_int_seq(s, "broadcast_shapes", "shape")) for s in shapes)))
    except ValueError:
        raise ValueError(f"broadcast_shapes: shapes {[tuple(_int_seq(s, 'broadcast_shapes', 'shape')) for s in shapes]} "
                         "are not broadcastable") from None


def broadcast_tensors(*tensors):
    """Every tensor expanded to the common broadcast shape (Expand: the engine sums g back)."""
    tensors = _sizes_arg(tensors)
    tensors = [_tensor(x, "broadcast_tensors") for x in tensors]
    try:
        shape = np.broadcast_shapes(*(x.shape for x in tensors))
    except ValueError:
        raise ValueError(f"broadcast_tensors: shapes {[x.shape for x in tensors]} are not broadcastable") from None
    return tuple(x.expand(shape) for x in tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-d/1-d tensors: output i is tensor i varying along its own axis
    (``indexing='ij'``, the default) or with the first two axes swapped (``'xy'``, as NumPy);
    a reshape then an expand, so gradients sum over the grid (torch's)."""
    tensors = [_tensor(x, "meshgrid") for x in _sizes_arg(tensors)]
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise ValueError("meshgrid expects a non-empty TensorList")
    for x in tensors:
        if x.ndim > 1:
            raise ValueError(f"torch.meshgrid: expected 0D or 1D tensors, got shape {tuple(x.shape)}")
        if x.dtype != tensors[0].dtype:
            raise TypeError(f"meshgrid expects all tensors to have the same dtype, got {tensors[0].dtype} "
                            f"and {x.dtype}")
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    sizes = [x.reshape(-1).shape[0] for x in tensors]
    shape = [0] * len(tensors)
    for a, n in zip(axes, sizes):
        shape[a] = n
    out = []
    for x, a, n in zip(tensors, axes, sizes):
        view = [1] * len(tensors)
        view[a] = n
        out.append(x.reshape(tuple(view)).expand(tuple(shape)))
    return tuple(out)


def _function(method_name):
    """A top-level function calling a Tensor method of tensor.py (torch.transpose, ...)."""
    def f(input, *args, **kwargs):
        return getattr(_tensor(input, method_name), method_name)(*args, **kwargs)
    f.__name__ = method_name
    return f


TENSOR_METHODS = {
    "tril": tril, "triu": triu, "roll": roll, "flip": flip, "fliplr": fliplr, "flipud": flipud,
    "rot90": rot90, "diagonal": diagonal, "diag": diag, "diag_embed": diag_embed,
    "repeat": repeat, "tile": tile, "repeat_interleave": repeat_interleave, "unfold": unfold,
    "unflatten": unflatten, "view_as": view_as, "reshape_as": view_as, "movedim": movedim,
    "moveaxis": movedim, "swapdims": swapdims, "unbind": unbind, "t": t, "ravel": ravel,
    "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit, "dsplit": dsplit,
}

FUNCTIONS = {
    "tril": tril, "triu": triu, "roll": roll, "flip": flip, "fliplr": fliplr, "flipud": flipud,
    "rot90": rot90, "diagonal": diagonal, "diag": diag, "diag_embed": diag_embed, "tile": tile,
    "repeat_interleave": repeat_interleave, "unflatten": unflatten, "movedim": movedim,
    "moveaxis": movedim, "swapdims": swapdims, "swapaxes": swapdims, "unbind": unbind, "t": t,
    "ravel": ravel, "tensor_split": tensor_split, "hsplit": hsplit, "vsplit": vsplit,
    "dsplit": dsplit, "atleast_1d": atleast_1d, "atleast_2d": atleast_2d, "atleast_3d": atleast_3d,
    "broadcast_shapes": broadcast_shapes, "broadcast_tensors": broadcast_tensors,
    "meshgrid": meshgrid, "einsum": einsum,
    **{name: _function(name) for name in ("reshape", "transpose", "permute", "squeeze", "unsqueeze",
                                          "flatten", "narrow", "split", "chunk")},
}
