"""Pooling: ``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``, ``adaptive_max_pool1d/2d``.

Every pool reads windows of the input as convolution does (``conv._windows``: the same strided
view, rows ``h·s + i·d``), and its backward sends each output's gradient back to the pixels that
window read:

* **max**: y = x[argmax of the window], so dL/dx_p = Σ of g over the outputs whose argmax is p
  (a pixel that wins several overlapping windows collects all their gradients, one that wins
  none gets 0). The argmax is the first maximum in window order (i, then j), as torch's kernel,
  and is returned as torch's ``indices``: the flat position h·W + w in the (unpadded) input plane.
* **average**: y = (1/D) Σ_window x with D the divisor (the window size, with or without the
  padding, or ``divisor_override``), so every pixel of a window receives g/D: col2im of g/D.
* **adaptive average**: window i along an axis of length n is [⌊i·n/O⌋, ⌈(i+1)·n/O⌉); the pool
  is linear and separable, y = A_h x A_wᵀ with A[i, t] = 1/len_i on window i, so
  dL/dx = A_hᵀ g A_w.
* **adaptive max**: the max rule above on those windows.

1-D pools are the 2-D ones on an (N, C, 1, L) input.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float
from .conv import _tuple, _windows, col2im


# ============================================================================ NumPy core

def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's ``pooling_output_shape``: with ceil_mode the last window may start in the right
    padding but not beyond it."""
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _pads(shape, k, s, p, d, out):
    """(before, after) pads of the two spatial axes so that every one of ``out`` windows fits."""
    return tuple((pp, max(0, (o - 1) * ss + dd * (kk - 1) + 1 - n - pp))
                 for n, kk, ss, pp, dd, o in zip(shape, k, s, p, d, out))


def _scatter_to_argmax(g, idx: np.ndarray, x_shape):
    """dL/dx of y = x.flat[idx] per (n, c) plane: Σ of g over the outputs that chose each pixel
    (``np.bincount`` sums repeated indices, accumulated in float64 and rounded once). On a Tensor
    g (a backward being differentiated) the recorded ``index_add``, linear in g: its own gradient
    is the gather g'.flat[idx] (and a max pool's second derivative in x is 0)."""
    n, c, h, w = x_shape
    plane = (np.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1, 1)
    idx = np.asarray(getattr(idx, "_data", idx))
    flat_idx = (idx + plane).ravel()
    chosen = None
    if idx.size and idx.min() < 0:   # -1: a window wholly in the padding read no pixel (y = -inf, a constant)
        chosen = np.flatnonzero(np.broadcast_to(idx >= 0, np.shape(g)))
        flat_idx = flat_idx[chosen]
    if isinstance(g, Tensor):
        from ..factories import zeros
        gv = g.reshape(-1) if chosen is None else g.reshape(-1)[chosen]
        return zeros(n * c * h * w, dtype=g.dtype).index_add(0, Tensor(flat_idx), gv).reshape(x_shape)
    gv = g.ravel() if chosen is None else g.ravel()[chosen]
    flat = np.bincount(flat_idx, weights=gv.astype(np.float64), minlength=n * c * h * w)
    return flat.reshape(x_shape).astype(g.dtype, copy=False)


class _ArgmaxPool(ArrayFunction):
    """The max rule shared by ``MaxPool`` and ``AdaptiveMaxPool``: y = x.flat[idx] per plane, so
    dL/dx_p = Σ of g over the outputs whose index is p (``_scatter_to_argmax``). The indices are
    a constant of the backward, which also runs on Tensors (gradients of gradients)."""

    differentiable_backward = True
    saved_constants = (0,)

    @staticmethod
    def keep(ctx, y, idx, x_shape, indices_out, returned=None):
        """Save the indices for the backward (and hand ``returned``, by default the same, to
        ``indices_out``); return y."""
        ctx.save_for_backward(idx)
        ctx.x_shape = x_shape
        if indices_out is not None:
            indices_out.append(idx if returned is None else returned)
        return y

    @staticmethod
    def backward(ctx, g):
        (idx,) = ctx.saved_tensors
        return _scatter_to_argmax(g, idx, ctx.x_shape)


class MaxPool(_ArgmaxPool):
    """2-D max pool (``max_pool1d``/``max_pool2d``): y[n, c, h, w] = max of the window, padding
    counting as −∞. Backward (module docstring): dL/dx_p = Σ_{outputs o with argmax(o) = p} g_o.
    Saved: the int64 indices (h·W + w); ``indices_out`` (a list) receives them too, torch's
    ``return_indices`` result, which carries no gradient."""

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation, out_size, indices_out=None):
        n, c, h, w = x.shape
        pads = _pads((h, w), kernel_size, stride, padding, dilation, out_size)
        xp = np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-np.inf) if any(map(any, pads)) else x
        win = _windows(xp, kernel_size, stride, dilation)
        oh, ow = out_size
        win = win[:, :, :oh, :ow].reshape(n, c, oh, ow, kernel_size[0] * kernel_size[1])
        a = win.argmax(axis=-1)
        y = np.take_along_axis(win, a[..., None], axis=-1)[..., 0]
        kh, kw = kernel_size
        top = (np.arange(oh) * stride[0] - padding[0]).reshape(oh, 1)
        left = np.arange(ow) * stride[1] - padding[1]
        rows, cols = top + (a // kw) * dilation[0], left + (a % kw) * dilation[1]
        idx = (rows * w + cols).astype(np.int64)
        if max(padding) > 0:
            idx, returned = _padding_windows(idx, rows, cols, top, left, (h, w), dilation)
            return _ArgmaxPool.keep(ctx, y, idx, x.shape, indices_out, returned)
        return _ArgmaxPool.keep(ctx, y, idx, x.shape, indices_out)


def _padding_windows(idx, rows, cols, top, left, hw, dilation):
    """Windows whose maximum is a padding −∞: the window's inputs are all −∞, or it lies wholly
    in the padding (dilation > padding lets a window skip the whole input). torch's kernel then
    reports its first in-plane row and column (the window start moved on by the dilation until
    it is >= 0), even where that is past the plane; that is the returned index. Returns (the
    backward's indices, the returned ones): a window that reads no pixel at all has the constant
    y = −∞ and passes no gradient (-1 in the backward's indices; torch's own backward writes outside
    the plane there)."""
    h, w = hw
    padded = (rows < 0) | (rows >= h) | (cols < 0) | (cols >= w)
    if not padded.any():
        return idx, idx
    r0 = top + (-np.minimum(top, 0) + dilation[0] - 1) // dilation[0] * dilation[0]
    c0 = left + (-np.minimum(left, 0) + dilation[1] - 1) // dilation[1] * dilation[1]
    returned = np.where(padded, r0 * w + c0, idx).astype(np.int64)
    hollow = padded & ((r0 >= h) | (c0 >= w))
    return np.where(hollow, -1, returned).astype(np.int64), returned


def _avg_divisor(n, k, s, p, out, count_include_pad):
    """Per-axis window sizes: the window [o·s − p, min(o·s − p + k, n + p)) counted with the padding
    (torch's pool_size), or clipped to [0, n) without it."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    if count_include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, n) - np.maximum(start, 0)).astype(np.float64)


class AvgPool(ArrayFunction):
    """2-D average pool (``avg_pool1d``/``avg_pool2d``): y = (1/D) Σ_window x, zero padding, D per
    output (``_avg_divisor``: the window with or without its padding, or ``divisor_override``).
    y is linear in x: each pixel of a window gets g/D, i.e. dL/dx = crop(col2im(g/D)).
    Saved: the divisors (OH, OW), in x's dtype, a constant of the backward, which is written in
    calls that also run on Tensors (``conv.col2im`` is the recorded ``Col2Im`` there)."""

    differentiable_backward = True
    saved_constants = (0,)

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, out_size, count_include_pad, divisor_override):
        n, c, h, w = x.shape
        pads = _pads((h, w), kernel_size, stride, padding, (1, 1), out_size)
        xp = np.pad(x, ((0, 0), (0, 0)) + pads) if any(map(any, pads)) else x
        oh, ow = out_size
        win = _windows(xp, kernel_size, stride, (1, 1))[:, :, :oh, :ow]
        if divisor_override:
            div = np.full((oh, ow), float(divisor_override))
        else:
            div = np.outer(_avg_divisor(h, kernel_size[0], stride[0], padding[0], oh, count_include_pad),
                           _avg_divisor(w, kernel_size[1], stride[1], padding[1], ow, count_include_pad))
        ctx.save_for_backward(div.astype(x.dtype))
        ctx.args = (h, w), kernel_size, stride, pads
        return (win.sum(axis=(-2, -1), dtype=np.float64) / div).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        (div,) = ctx.saved_tensors
        hw, k, s, pads = ctx.args
        n, c, oh, ow = g.shape
        share = (g / div).reshape(n, c, 1, oh * ow)                          # g/D, one per window
        cols = np.broadcast_to(share, (n, c, k[0] * k[1], oh * ow)).reshape(n, c * k[0] * k[1], oh * ow)
        return col2im(cols, hw, k, s, pads, (1, 1))                          # each pixel of a window: g/D


def _adaptive_bounds(n: int, out: int):
    """torch's adaptive windows along an axis: [⌊i·n/out⌋, ⌈(i+1)·n/out⌉) for i < out."""
    i = np.arange(out)
    return (i * n) // out, -((-(i + 1) * n) // out)


def _adaptive_matrix(n: int, out: int) -> np.ndarray:
    """A (out, n): A[i, t] = 1/len_i for t in window i — the average as a matrix."""
    start, end = _adaptive_bounds(n, out)
    t = np.arange(n)
    inside = (t >= start[:, None]) & (t < end[:, None])
    return inside / (end - start)[:, None].astype(np.float64)


class AdaptiveAvgPool(ArrayFunction):
    """Adaptive average pool, y = A_h x A_wᵀ (``_adaptive_matrix``; computed in float64, rounded once).
    Linear in x, so dL/dx = A_hᵀ g A_w, in x's dtype. Saved: the two small matrices (constants: they
    depend on the shapes only), so the backward, two matmuls, runs on Tensors too and is itself
    differentiated (gradients of gradients)."""

    differentiable_backward = True
    saved_constants = (0, 1)

    @staticmethod
    def forward(ctx, x, *, out_size):
        ah, aw = _adaptive_matrix(x.shape[2], out_size[0]), _adaptive_matrix(x.shape[3], out_size[1])
        ctx.save_for_backward(ah.astype(x.dtype), aw.astype(x.dtype))
        return (ah @ x.astype(np.float64) @ aw.T).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, g):
        ah, aw = ctx.saved_tensors
        return ah.T @ g @ aw


class AdaptiveMaxPool(_ArgmaxPool):
    """Adaptive max pool: the max of each adaptive window (first maximum, torch's index h·W + w),
    one vectorised argmax per output position. Backward: the max rule, dL/dx_p = Σ g over the
    outputs whose argmax is p. Saved: the indices."""

    @staticmethod
    def forward(ctx, x, *, out_size, indices_out=None):
        n, c, h, w = x.shape
        (hs, he), (ws, we) = _adaptive_bounds(h, out_size[0]), _adaptive_bounds(w, out_size[1])
        y = np.empty((n, c) + tuple(out_size), dtype=x.dtype)
        idx = np.empty((n, c) + tuple(out_size), dtype=np.int64)
        for i in range(out_size[0]):
            for j in range(out_size[1]):
                win = x[:, :, hs[i]:he[i], ws[j]:we[j]].reshape(n, c, (he[i] - hs[i]) * (we[j] - ws[j]))
                a = win.argmax(axis=-1)
                y[:, :, i, j] = np.take_along_axis(win, a[..., None], axis=-1)[..., 0]
                wl = we[j] - ws[j]
                idx[:, :, i, j] = (hs[i] + a // wl) * w + ws[j] + a % wl
        return _ArgmaxPool.keep(ctx, y, idx, x.shape, indices_out)


# ============================================================================ argument checks

def _input(input, nd: int, op: str):
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    if x.ndim not in (nd + 1, nd + 2) or any(s == 0 for s in x.shape[-nd - 1:]):
        raise InvalidArgumentError(f"{op}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim "
                                   f"batch size for input, but got: {list(x.shape)}")
    unbatched = x.ndim == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    if nd == 1:
        x = x.unsqueeze(2)
    return x, unbatched


def _finish(out, unbatched: bool, nd: int):
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op):
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    d = _tuple(dilation, nd, "dilation", op)
    if min(k) <= 0:
        raise InvalidArgumentError(f"{op}: kernel_size must be greater than zero, got kernel_size={k}")
    if min(s) <= 0:
        raise InvalidArgumentError(f"{op}: stride should not be zero (stride={s})")
    if min(d) <= 0:
        raise InvalidArgumentError(f"{op}: dilation should be greater than zero, got dilation={d}")
    if min(p) < 0:
        raise InvalidArgumentError(f"{op}: pad must be non-negative, but got pad: {min(p)} (padding={p})")
    for pp, kk, dd in zip(p, k, d):
        if pp > kk // 2:   # torch's kernels check the kernel, not the dilated window
            raise InvalidArgumentError(f"{op}: pad should be at most half of kernel size, but got "
                                       f"pad={pp}, kernel_size={kk} and dilation={dd}")
    if nd == 1:
        k, s, p, d = (1,) + k, (1,) + s, (0,) + p, (1,) + d
    out = tuple(_pool_out(n, kk, ss, pp, dd, bool(ceil_mode)) for n, kk, ss, pp, dd in zip(x.shape[2:], k, s, p, d))
    if min(out) < 1:
        c = x.shape[1]
        raise InvalidArgumentError(f"{op}: Given input size: ({c}x{x.shape[2]}x{x.shape[3]}). Calculated output "
                                   f"size: ({c}x{out[0]}x{out[1]}). Output size is too small")
    return k, s, p, d, out


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd, op):
    x, unbatched = _input(input, nd, op)
    k, s, p, d, out = _pool_args(x, kernel_size, stride, padding, dilation, ceil_mode, nd, op)
    sink = [] if return_indices else None
    y = MaxPool.apply(x, kernel_size=k, stride=s, padding=p, dilation=d, out_size=out, indices_out=sink)
    return _with_indices(y, sink, unbatched, nd)


def _with_indices(y, sink, unbatched, nd):
    if sink is None:
        return _finish(y, unbatched, nd)
    return _finish(y, unbatched, nd), _finish(Tensor(sink[0]), unbatched, nd)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``torch.nn.functional.max_pool2d``: (N, C, H, W) or (C, H, W); ``stride`` defaults to the kernel;
    padding counts as −∞ and is at most half the effective kernel; ``return_indices`` adds torch's
    int64 indices (h·W + w in each input plane, the first maximum of each window)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``torch.nn.functional.max_pool1d``: (N, C, L) or (C, L); indices are positions in L."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd, op):
    x, unbatched = _input(input, nd, op)
    k, s, p, _, out = _pool_args(x, kernel_size, stride, padding, 1, ceil_mode, nd, op)
    if divisor_override is not None:
        if isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Integral):
            raise TypeError(f"{op}: divisor_override must be an int or None, got {divisor_override!r}")
        if divisor_override == 0:
            raise InvalidArgumentError(f"{op}: divisor must be not zero (divisor_override={divisor_override})")
    y = AvgPool.apply(x, kernel_size=k, stride=s, padding=p, out_size=out,
                      count_include_pad=bool(count_include_pad), divisor_override=divisor_override)
    return _finish(y, unbatched, nd)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """``torch.nn.functional.avg_pool2d``: the mean of each window, zero padding counted in the
    divisor with ``count_include_pad`` (the default), or ``divisor_override`` as the divisor."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     2, "avg_pool2d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """``torch.nn.functional.avg_pool1d`` (no ``divisor_override``, as torch)."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


def _adaptive_size(output_size, x, nd: int, op: str):
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise InvalidArgumentError(f"{op}: output_size must be {nd}, got output_size={tuple(output_size)}")
        sizes = list(output_size)
    else:
        sizes = [output_size] * nd
    sizes = [x.shape[-nd + i] if v is None else v for i, v in enumerate(sizes)]
    for v in sizes:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{op}: output_size must be an int or a tuple of ints (or None), got {output_size!r}")
    if min(sizes) < 0:
        raise InvalidArgumentError(f"{op}: elements of output_size must be greater than or equal to 0 but "
                                   f"received {tuple(sizes)}")
    return (1,) + tuple(int(v) for v in sizes) if nd == 1 else tuple(int(v) for v in sizes)


def _adaptive(fn, input, output_size, nd, op, return_indices=False):
    x, unbatched = _input(input, nd, op)
    size = _adaptive_size(output_size, x, nd, op)
    if fn is AdaptiveAvgPool:
        return _finish(fn.apply(x, out_size=size), unbatched, nd)
    sink = [] if return_indices else None
    return _with_indices(fn.apply(x, out_size=size, indices_out=sink), sink, unbatched, nd)


def adaptive_avg_pool2d(input, output_size) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool2d``: output_size an int or an (OH, OW) pair, None
    keeping that input size."""
    return _adaptive(AdaptiveAvgPool, input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool1d(input, output_size) -> Tensor:
    """``torch.nn.functional.adaptive_avg_pool1d``."""
    return _adaptive(AdaptiveAvgPool, input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """``torch.nn.functional.adaptive_max_pool2d`` (indices h·W + w, as torch)."""
    return _adaptive(AdaptiveMaxPool, input, output_size, 2, "adaptive_max_pool2d", return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """``torch.nn.functional.adaptive_max_pool1d``."""
    return _adaptive(AdaptiveMaxPool, input, output_size, 1, "adaptive_max_pool1d", return_indices)
