"""``pad`` (constant, reflect, replicate, circular) and ``one_hot``.

``pad`` takes torch's flat list of pads, last dimension first:
``(left_last, right_last, left_second_last, right_second_last, ...)``. A negative pad crops.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidArgumentError, InvalidDtypeError
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_real


class ConstantPad(ArrayFunction):
    """y = x cropped by the negative pads, then surrounded by ``value`` for the positive ones.

    Every entry of y is either a copy of one entry of x or the constant, so dL/dx is g with
    the padding cut away, and zeros where x was cropped. Saved: nothing but the pads. The
    backward (a crop and a zero pad) runs on Tensors: ``create_graph=True`` differentiates it.
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, pads, value):
        ctx.pads = pads                                     # one (before, after) per axis
        crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, pads))
        widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pads]
        return np.pad(x[crop], widths, mode="constant", constant_values=value)

    @staticmethod
    def backward(ctx, g):
        inner = tuple(slice(max(lo, 0), n - max(hi, 0)) for n, (lo, hi) in zip(g.shape, ctx.pads))
        return np.pad(g[inner], [(max(-lo, 0), max(-hi, 0)) for lo, hi in ctx.pads])


class IndexedPad(ArrayFunction):
    """Reflect / replicate / circular padding: along each padded axis, output position j reads
    input position src(j) (a reflection, a clamp or a wrap of j into [0, n)).

    Forward: y = take(x, src) along each padded axis in turn. Backward: an input entry that
    is read at several output positions receives all of their gradients, so the gradient is
    the scatter-add  dL/dx[i] = Σ_{j : src(j) = i} g[j],  axis by axis in reverse order.
    Saved: the index maps. The backward runs on Tensors (``_scatter_add``), so that
    ``create_graph=True`` differentiates it (it is linear in g).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, maps):
        ctx.maps, ctx.in_shape = maps, x.shape
        y = x
        for axis, src in maps:
            y = np.take(y, src, axis=axis)
        return y

    @staticmethod
    def backward(ctx, g):
        shape = list(g.shape)
        for axis, src in reversed(ctx.maps):
            shape[axis] = ctx.in_shape[axis]
            g = np.moveaxis(_scatter_add(np.moveaxis(g, axis, 0), src, shape[axis]), 0, axis)
        return g


def _scatter_add(g, src, n):
    """acc[i] = Σ_{j : src[j] = i} g[j] along the first axis, acc of length n: ``np.add.at`` on
    arrays; on a Tensor (a backward being differentiated) ``index_add``, the same sum, recorded
    (``np.add.at`` writes in place, which a recorded backward cannot)."""
    if isinstance(g, Tensor):
        from ..factories import zeros
        return zeros((n,) + tuple(g.shape[1:]), dtype=g.dtype).index_add(0, Tensor(src), g)
    acc = np.zeros((n,) + g.shape[1:], dtype=g.dtype)
    np.add.at(acc, src, g)
    return acc


def _source_index(n: int, lo: int, hi: int, mode: str, axis: int) -> np.ndarray:
    """For each output position along an axis of size n padded by (lo, hi), its input position.
    (Reflecting and clamping never reach across to the other end, so cropping first or not
    gives the same map; circular wrapping does, and wraps within the cropped range.)"""
    j = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "reflect":
        if lo >= n or hi >= n:
            raise InvalidArgumentError(f"pad: reflect padding size should be less than the corresponding input "
                             f"dimension, but got padding ({lo}, {hi}) at dimension {axis} of size {n}")
        return np.abs((n - 1) - np.abs((n - 1) - np.abs(j)))
    # circular: as torch, crop first (negative pads), then wrap within what is left
    start, m = max(-lo, 0), n - max(-lo, 0) - max(-hi, 0)
    if max(lo, 0) > m or max(hi, 0) > m:
        raise InvalidArgumentError(f"pad: circular padding ({lo}, {hi}) at dimension {axis} of size {n} "
                         f"would wrap around more than once")
    return start + np.arange(-max(lo, 0), m + max(hi, 0)) % m


_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode: str = "constant", value=None) -> Tensor:
    """Pad (or, with negative pads, crop) the last ``len(pad) // 2`` dimensions
    (``torch.nn.functional.pad``). 'constant' fills with ``value`` (default 0) and works for any
    number of dimensions; 'reflect', 'replicate' and 'circular' pad the last 1, 2 or 3
    dimensions of an input with 1 or 2 more (batch, channel) dimensions, as torch."""
    x = as_tensor(input, "pad", "input")
    if isinstance(pad, (str, bytes)) or not hasattr(pad, "__len__"):
        raise TypeError(f"pad: pad must be a tuple of ints, got {pad!r}")
    if any(isinstance(p, bool) or not isinstance(p, numbers.Integral) for p in pad):
        raise TypeError(f"pad: pad must be a tuple of ints, got {tuple(pad)!r}")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise InvalidArgumentError(f"pad: padding length must be divisible by 2, got {len(pad)} values {tuple(pad)}")
    k = len(pad) // 2
    if k > x.ndim:
        raise InvalidArgumentError(f"pad: padding length should be less than or equal to two times the input "
                         f"dimension but got padding length {len(pad)} and input of dimension {x.ndim}")
    if mode not in _MODES:
        raise NotImplementedError(f"pad: unrecognised padding mode {mode!r} (expected one of {_MODES})")
    pairs = [(0, 0)] * (x.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in reversed(range(k))]
    for axis, (n, (lo, hi)) in enumerate(zip(x.shape, pairs)):
        if n + lo + hi < 0 or (lo < 0 and -lo > n) or (hi < 0 and -hi > n):
            raise InvalidArgumentError(f"pad: pads ({lo}, {hi}) crop more than the size {n} of dimension {axis} "
                             f"(input shape {tuple(x.shape)})")
    if mode == "constant":
        if value is not None:
            check_real("pad", "value", value)   # a str would leak NumPy's conversion error
        fill = 0 if value is None else value
        if x._data.dtype.kind in "iub":
            fill = np.asarray(fill).astype(x._data.dtype)    # torch casts the value to the dtype
        return ConstantPad.apply(x, pads=tuple(pairs), value=fill)
    if value is not None and value != 0:
        raise ValueError(f"pad: padding mode {mode!r} doesn't take in a value argument, got value={value!r}")
    if x.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"pad: {mode!r} padding of the last {k} dimension(s) needs a {k + 1}-D or {k + 2}-D input "
            f"(optional batch, channels, then the padded dimensions), got a {x.ndim}-D input")
    maps = tuple((axis, _source_index(n, lo, hi, mode, axis))
                 for axis, (n, (lo, hi)) in enumerate(zip(x.shape, pairs)) if (lo, hi) != (0, 0))
    return IndexedPad.apply(x, maps=maps)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """(..., num_classes) int64 with a 1 at each index of ``tensor`` (``torch.nn.functional.one_hot``).
    ``num_classes=-1`` takes max(tensor) + 1. Not differentiable (an integer result)."""
    ids = tensor._data if isinstance(tensor, Tensor) else np.asarray(tensor)
    if ids.dtype != np.int64:
        raise InvalidDtypeError(f"one_hot: is only applicable to index tensors of dtype int64 (long), got "
                        f"dtype {ids.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
        raise TypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    if ids.size and ids.min() < 0:
        raise InvalidArgumentError(f"one_hot: class values must be non-negative, got {int(ids.min())}")
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError("one_hot: can not infer the total number of classes from an empty tensor "
                             "(pass num_classes)")
        num_classes = int(ids.max()) + 1
    elif ids.size and ids.max() >= num_classes or num_classes < 0:
        raise InvalidArgumentError(f"one_hot: class values must be smaller than num_classes={num_classes}, got "
                         f"{int(ids.max()) if ids.size else 'none'}")
    return Tensor(np.eye(num_classes, dtype=np.int64)[ids] if num_classes else
                  np.zeros(ids.shape + (0,), np.int64))
