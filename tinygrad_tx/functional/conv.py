"""Convolution: ``conv1d``, ``conv2d``, ``unfold`` (im2col) and ``fold`` (col2im).

A 2-D convolution with stride s, dilation d and zero padding p reads, for output pixel (h, w),
the window of the padded input ``xp`` at rows ``h·s₀ + i·d₀`` and columns ``w·s₁ + j·d₁``
(i < kh, j < kw)::

    out[n, o, h, w] = b[o] + Σ_{c ∈ group(o), i, j} W[o, c, i, j] · xp[n, c, h·s₀ + i·d₀, w·s₁ + j·d₁]

Gather every window into a row and the convolution is one matrix product (**im2col**):
``cols[n, (c,i,j), (h,w)] = xp[n, c, h·s₀+i·d₀, w·s₁+j·d₁]`` and ``out[n] = W_flat @ cols[n] + b``
with ``W_flat`` the (O, C·kh·kw) reshaped weight. Its backward is Linear's:

    dL/dW_flat = Σ_n g[n] @ cols[n]ᵀ           dL/db = Σ_{n,h,w} g
    dL/dcols[n] = W_flatᵀ @ g[n]               dL/dxp = col2im(dL/dcols)

and ``col2im`` — the adjoint of the gather — adds every column entry back into the pixel it was
read from (a pixel in several windows receives the sum: this is where overlapping windows show
up in the gradient). dL/dx is dL/dxp with the padding cut away. Groups split C and O into G
blocks and do G independent products. A 1-D convolution is the 2-D one on an (N, C, 1, L) input.

The three rungs:

1. ``conv2d_composite``: ``F.pad``, ``Tensor.unfold`` (strided windows) and ``einsum``, each
   differentiated by the engine;
2. ``ConvClosedForm``: the im2col / col2im derivation above in a few lines of NumPy;
3. ``Conv`` (the default): the same products with the named speed tricks
   ``_patch_cols``/``_patch_col2im`` (non-overlapping windows, the ViT patch case: im2col and
   col2im are one reshape-transpose, no K² loop) and ``_cols_channel_major`` (the column
   matrix built as (N, C·kh·kw, OH·OW) so that ``W_flat @ cols`` lands in (N, O, OH·OW), the
   output layout, without a transpose copy). Their gains are in the docstrings below.

``unfold``/``fold`` are torch's ``F.unfold``/``F.fold``: im2col and col2im themselves, each the
adjoint of the other, so each one's backward is the other one.
"""
from __future__ import annotations

import numbers

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import InvalidArgumentError
from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, keep_mask, keep_scale_of

# ============================================================================ NumPy core (shared)


def _out_size(n: int, k: int, s: int, d: int, lo: int = 0, hi: int = 0) -> int:
    """Number of window positions along an axis of length n padded by (lo, hi)."""
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _pad_zeros(x: np.ndarray, pads) -> np.ndarray:
    """Zero-pad the two spatial axes of (N, C, H, W) by pads = ((top, bottom), (left, right))."""
    if not any(lo or hi for lo, hi in pads):
        return x
    return np.pad(x, ((0, 0), (0, 0)) + tuple(pads))


def _windows(xp: np.ndarray, k, s, d) -> np.ndarray:
    """Read-only strided view (N, C, OH, OW, kh, kw) of the windows of a padded (N, C, H, W)
    array: ``view[n, c, h, w, i, j] = xp[n, c, h·s₀ + i·d₀, w·s₁ + j·d₁]`` (no copy)."""
    n, c, hh, ww = xp.shape
    oh, ow = _out_size(hh, k[0], s[0], d[0]), _out_size(ww, k[1], s[1], d[1])
    sn, sc, sh, sw = xp.strides
    return as_strided(xp, (n, c, oh, ow, k[0], k[1]), (sn, sc, sh * s[0], sw * s[1], sh * d[0], sw * d[1]),
                      writeable=False)


def _col2im(dwin: np.ndarray, padded_shape, s, d) -> np.ndarray:
    """Adjoint of ``_windows``: add ``dwin`` (N, C, OH, OW, kh, kw) back into a zero array of the
    padded input's shape, one strided slice per kernel offset (i, j): K² vectorised adds."""
    _, _, oh, ow, kh, kw = dwin.shape
    out = np.zeros(padded_shape, dtype=dwin.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * d[0]:i * d[0] + s[0] * (oh - 1) + 1:s[0],
                j * d[1]:j * d[1] + s[1] * (ow - 1) + 1:s[1]] += dwin[:, :, :, :, i, j]
    return out


def _crop(a: np.ndarray, pads) -> np.ndarray:
    """Cut the ((top, bottom), (left, right)) padding off the two spatial axes (a view)."""
    (t, b), (left, r) = pads
    return a[:, :, t:a.shape[2] - b, left:a.shape[3] - r]


def _bias_grad(g):
    """dL/db = Σ_{n,h,w} g, accumulated in float64 and rounded once (summed in float32 it was
    1.7e-6 off where torch's float32 was exact: beyond the float32 rule). On a Tensor (a backward
    being differentiated) the plain sum, recorded."""
    if isinstance(g, Tensor):
        return g.sum((0, 2, 3))
    return g.sum(axis=(0, 2, 3), dtype=np.float64).astype(g.dtype, copy=False)


def im2col(x, k, s, pads, d):
    """The columns (N, C·kh·kw, OH·OW) of an (N, C, H, W) input zero-padded by ``pads``: on an
    array ``_cols_channel_major``; on a Tensor — a backward being differentiated
    (``create_graph=True``) — the recorded op ``Im2Col``, so the gradient flows through it."""
    if isinstance(x, Tensor):
        return Im2Col.apply(x, kernel_size=k, stride=s, padding=pads, dilation=d)
    return _cols_channel_major(_pad_zeros(x, pads), k, s, d)


def col2im(cols, hw, k, s, pads, d):
    """The adjoint of :func:`im2col`: columns (N, C·kh·kw, OH·OW) summed back into (N, C, H, W)
    (``hw`` = (H, W), before padding; the padding rows are cut away). On a Tensor the recorded
    op ``Col2Im``."""
    if isinstance(cols, Tensor):
        return Col2Im.apply(cols, output_size=hw, kernel_size=k, stride=s, padding=pads, dilation=d)
    n, (kh, kw) = cols.shape[0], k
    padded = (n, cols.shape[1] // (kh * kw), hw[0] + sum(pads[0]), hw[1] + sum(pads[1]))
    oh, ow = _out_size(padded[2], kh, s[0], d[0]), _out_size(padded[3], kw, s[1], d[1])
    dwin = cols.reshape(n, padded[1], kh, kw, oh, ow).transpose(0, 1, 4, 5, 2, 3)
    return _crop(_col2im(dwin, padded, s, d), pads)


# ============================================================================ rung 2: the closed form

class ConvClosedForm(ArrayFunction):
    """Grouped 2-D convolution as im2col + matmul (see the module docstring for the derivation),
    each group a Linear layer over the windows: cols_g (N·OH·OW, Cg·kh·kw), one row per output
    pixel, and out_g = cols_g @ W_gᵀ (+ b). Backward, Linear's:

        dW_g = g_gᵀ @ cols_g        dcols_g = g_g @ W_g        dx = col2im(dcols)        db = Σ g

    Saved: x and W (the columns are rebuilt in the backward: K² times smaller than saving them).
    Written in NumPy calls that also run on Tensors, with im2col/col2im the recorded ops
    ``Im2Col``/``Col2Im`` there, so this is the backward that a gradient of a gradient differentiates
    (``Conv.twice_differentiable_via``)."""

    differentiable_backward = True

    @staticmethod
    def _rows(cols, groups):
        """(N, C·kh·kw, L) columns as G matrices (N·L, Cg·kh·kw): one row per output pixel."""
        n, ckk, length = cols.shape
        by_group = np.transpose(cols.reshape(n, groups, ckk // groups, length), (1, 0, 3, 2))
        return by_group.reshape(groups, n * length, ckk // groups)

    @staticmethod
    def forward(ctx, x, weight, bias, *, stride, padding, dilation, groups):
        o, cg, kh, kw = weight.shape
        n, h, w = x.shape[0], *x.shape[2:]
        oh = _out_size(h, kh, stride[0], dilation[0], *padding[0])
        ow = _out_size(w, kw, stride[1], dilation[1], *padding[1])
        rows = ConvClosedForm._rows(im2col(x, (kh, kw), stride, padding, dilation), groups)
        w_g = weight.reshape(groups, o // groups, cg * kh * kw)
        out = np.matmul(rows, np.swapaxes(w_g, 1, 2))                         # (G, N·L, O/G)
        out = np.transpose(out.reshape(groups, n, oh * ow, o // groups), (1, 0, 3, 2)).reshape(n, o, oh, ow)
        ctx.save_for_backward(x, weight)
        ctx.args = stride, padding, dilation, groups
        return out if bias is None else out + bias.reshape(1, o, 1, 1)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.args
        (o, cg, kh, kw), (n, c, h, w), (oh, ow) = weight.shape, x.shape, g.shape[2:]
        rows = ConvClosedForm._rows(im2col(x, (kh, kw), stride, padding, dilation), groups)
        g_g = np.transpose(g.reshape(n, groups, o // groups, oh * ow), (1, 0, 3, 2)).reshape(groups, n * oh * ow, -1)
        dw = np.matmul(np.swapaxes(g_g, 1, 2), rows).reshape(weight.shape)
        drows = np.matmul(g_g, weight.reshape(groups, o // groups, cg * kh * kw))      # (G, N·L, Cg·kh·kw)
        dcols = np.transpose(drows.reshape(groups, n, oh * ow, cg * kh * kw), (1, 0, 3, 2)).reshape(n, c * kh * kw, -1)
        dx = col2im(dcols, (h, w), (kh, kw), stride, padding, dilation)
        return dx, dw, (_bias_grad(g) if ctx.needs_input_grad[2] else None)


# ============================================================================ rung 3: the default

def _is_patch_case(k, stride, padding, dilation, hw) -> bool:
    """Windows that tile the image exactly: stride = kernel, no padding, no dilation."""
    return (tuple(stride) == tuple(k) and dilation == (1, 1) and not any(a or b for a, b in padding)
            and hw[0] % k[0] == 0 and hw[1] % k[1] == 0)


def _patch_cols(x: np.ndarray, k) -> np.ndarray:
    """Trick: in the patch case (stride = kernel, no padding/dilation) the column matrix is a
    reshape-transpose of x — (N, C·kh·kw, OH·OW), channel-major — and no window overlaps. Equal to
    the strided gather (tests); the gain is in ``_patch_col2im``."""
    n, c, h, w = x.shape
    kh, kw = k
    return x.reshape(n, c, h // kh, kh, w // kw, kw).transpose(0, 1, 3, 5, 2, 4).reshape(n, c * kh * kw, -1)


def _patch_col2im(dcols: np.ndarray, x_shape, k) -> np.ndarray:
    """Trick: col2im of the patch case is the inverse reshape-transpose (each pixel in one window),
    instead of K² strided adds into a zero array. Measured (ViT patch layer: 64 images 3×32×32,
    P = 4, 64 channels, float32, one thread): fwd+bwd 1.26 ms against 1.46 ms without, 1.16×."""
    n, c, h, w = x_shape
    kh, kw = k
    return dcols.reshape(n, c, kh, kw, h // kh, w // kw).transpose(0, 1, 4, 2, 5, 3).reshape(x_shape)


def _cols_channel_major(xp: np.ndarray, k, s, d) -> np.ndarray:
    """Trick: im2col into (N, C·kh·kw, OH·OW) — the window view transposed to (N, C, kh, kw, OH, OW)
    before the copy — so that the copy reads rows of x along their memory order and
    ``W_flat @ cols[n]`` is (O, OH·OW): the output layout (N, O, OH, OW) without a transpose copy.
    Measured against the closed form's (N·OH·OW, C·kh·kw) layout, whose product must be transposed
    back (CIFAR-sized layer: batch 32, 64→64 channels, 32×32, 3×3, padding 1, float32, one thread):
    forward 47.8 ms against 118.9 ms (2.5×), fwd+bwd 150 ms against 434 ms (2.9×)."""
    win = _windows(xp, k, s, d)
    n, c, oh, ow, kh, kw = win.shape
    return win.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)


class Conv(ArrayFunction):
    """The default 2-D convolution (``conv1d`` and ``conv2d``): ``ConvClosedForm``'s derivation
    (im2col + matmul, col2im in the backward; module docstring) computed in the channel-major
    layout of ``_cols_channel_major``, with the patch-case tricks ``_patch_cols``/``_patch_col2im``.

    With cols[n] = (C·kh·kw, OH·OW) and W_g = (O/G, Cg·kh·kw) per group:
        out[n, g] = W_g @ cols[n, g] + b           (N, O, OH·OW)
        dW_g = Σ_n g[n, g] @ cols[n, g]ᵀ            dcols[n, g] = W_gᵀ @ g[n, g]
        dx = crop(col2im(dcols))                    db = Σ_{n, h, w} g
    Saved: x and W (cols rebuilt in the backward only when dW is needed), and b (for
    ``create_graph=True``, which differentiates ``ConvClosedForm``'s backward instead)."""

    twice_differentiable_via = ConvClosedForm

    @staticmethod
    def closed_form_call(ctx, x, weight, bias):
        stride, padding, dilation, groups, _ = ctx.args
        return (x, weight, bias), dict(stride=stride, padding=padding, dilation=dilation, groups=groups)

    @staticmethod
    def forward(ctx, x, weight, bias, *, stride, padding, dilation, groups):
        o, cg, kh, kw = weight.shape
        n, c, h, w = x.shape
        patch = _is_patch_case((kh, kw), stride, padding, dilation, (h, w))
        cols = _patch_cols(x, (kh, kw)) if patch else \
            _cols_channel_major(_pad_zeros(x, padding), (kh, kw), stride, dilation)
        oh = _out_size(h, kh, stride[0], dilation[0], *padding[0])
        ow = _out_size(w, kw, stride[1], dilation[1], *padding[1])
        wg = weight.reshape(groups, o // groups, cg * kh * kw)
        out = np.matmul(wg[None], cols.reshape(n, groups, cg * kh * kw, oh * ow)).reshape(n, o, oh, ow)
        if bias is not None:
            out += bias.reshape(1, o, 1, 1)
        ctx.save_for_backward(x, weight, bias)
        ctx.args = stride, padding, dilation, groups, patch
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight, _ = ctx.saved_tensors
        stride, padding, dilation, groups, patch = ctx.args
        nx, nw, nb = ctx.needs_input_grad
        o, cg, kh, kw = weight.shape
        n, c = x.shape[:2]
        oh, ow = g.shape[2:]
        gg = g.reshape(n, groups, o // groups, oh * ow)
        dx = dw = None
        if nw:
            cols = _patch_cols(x, (kh, kw)) if patch else \
                _cols_channel_major(_pad_zeros(x, padding), (kh, kw), stride, dilation)
            cols = cols.reshape(n, groups, cg * kh * kw, oh * ow)
            dw = np.matmul(gg, cols.transpose(0, 1, 3, 2)).sum(axis=0).reshape(weight.shape)
        if nx:
            wg = weight.reshape(groups, o // groups, cg * kh * kw)
            dcols = np.matmul(wg.transpose(0, 2, 1)[None], gg)       # (N, G, Cg·kh·kw, OH·OW)
            if patch:
                dx = _patch_col2im(dcols, x.shape, (kh, kw))
            else:
                dwin = dcols.reshape(n, c, kh, kw, oh, ow).transpose(0, 1, 4, 5, 2, 3)
                padded = (n, c, x.shape[2] + sum(padding[0]), x.shape[3] + sum(padding[1]))
                dx = _crop(_col2im(dwin, padded, stride, dilation), padding)
        return dx, dw, (_bias_grad(g) if nb else None)


# ============================================================================ argument checks

def _tuple(value, n: int, name: str, op: str) -> tuple:
    """An int or a sequence of n ints (torch's _single/_pair)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                                for v in value):
        if len(value) == 1:
            return (int(value[0]),) * n
        if len(value) == n:
            return tuple(int(v) for v in value)
        raise InvalidArgumentError(f"{op}: expected {name} to be a single integer value or a list of {n} values "
                                   f"to match the convolution dimensions, but got {name}={list(value)}")
    raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {value!r}")


def _conv_tensors(input, weight, bias, nd: int, op: str, weight_layout: str):
    """input, weight, bias as Tensors of one float dtype; input (N, C, *spatial) or unbatched,
    weight with nd + 2 dimensions (``weight_layout``, *kernel_size)."""
    x = as_tensor(input, op, "input")
    w = as_tensor(weight, op, "weight")
    b = None if bias is None else as_tensor(bias, op, "bias")
    check_float(op, input=x, weight=w, bias=b)
    if x.ndim not in (nd + 1, nd + 2):
        raise InvalidArgumentError(f"{op}: Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, "
                                   f"but got input of size: {list(x.shape)}")
    if w.ndim != nd + 2:
        raise InvalidArgumentError(f"{op}: weight should have {nd + 2} dimensions ({weight_layout}, *kernel_size), "
                                   f"got weight of size {list(w.shape)}")
    return x, w, b


def _conv_args(input, weight, bias, stride, padding, dilation, groups, nd: int, op: str):
    """Checks of torch's ``F.conv{nd}d`` in torch's order and words (its RuntimeErrors as
    InvalidArgumentError, a ValueError and RuntimeError both); returns the (N, C, H, W) arrays'
    Tensors and the 2-D arguments (1-D: H = 1)."""
    x, w, b = _conv_tensors(input, weight, bias, nd, op, "out_channels, in_channels/groups")
    stride = _tuple(stride, nd, "stride", op)
    dilation = _tuple(dilation, nd, "dilation", op)
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    if groups <= 0:
        raise InvalidArgumentError(f"{op}: non-positive groups is not supported, got groups={groups}")
    if min(stride) <= 0:
        raise InvalidArgumentError(f"{op}: non-positive stride is not supported, got stride={stride}")
    if min(dilation) <= 0:
        raise InvalidArgumentError(f"{op}: dilation should be greater than zero, got dilation={dilation}")
    k = tuple(w.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise InvalidArgumentError(f"{op}: padding='same' is not supported for strided convolutions "
                                           f"(stride={stride})")
            pads = tuple((d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for d, kk in zip(dilation, k))
        else:
            raise InvalidArgumentError(f"{op}: Invalid padding string: {padding!r} (should be 'valid' or 'same')")
    else:
        p = _tuple(padding, nd, "padding", op)
        if min(p) < 0:
            raise InvalidArgumentError(f"{op}: negative padding is not supported, got padding={p}")
        pads = tuple((q, q) for q in p)
    unbatched = x.ndim == nd + 1
    shape = (1,) + x.shape if unbatched else x.shape
    cin = shape[1]
    if w.shape[0] % groups:
        raise InvalidArgumentError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                                   f"dimension 0, but got weight of size {list(w.shape)} instead")
    if cin != w.shape[1] * groups:
        raise InvalidArgumentError(f"{op}: Given groups={groups}, weight of size {list(w.shape)}, expected input"
                                   f"{list(shape)} to have {w.shape[1] * groups} channels, but got {cin} channels "
                                   f"instead")
    if b is not None and b.shape != (w.shape[0],):
        raise InvalidArgumentError(f"{op}: Given weight of size {list(w.shape)}, expected bias to be 1-dimensional "
                                   f"with {w.shape[0]} elements, but got bias of size {list(b.shape)} instead")
    spatial = shape[2:]
    eff = tuple(d * (kk - 1) + 1 for d, kk in zip(dilation, k))
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(spatial, pads))
    if any(p < e for p, e in zip(padded, eff)):
        raise InvalidArgumentError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                                   f"Kernel size: ({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                                   f"actual input size")
    if nd == 1:   # the 1-D convolution is the 2-D one on (N, C, 1, L)
        stride, dilation, pads = (1,) + stride, (1,) + dilation, ((0, 0),) + pads
    return x, w, b, unbatched, dict(stride=stride, padding=pads, dilation=dilation, groups=int(groups))


def _run(fn, x, w, b, unbatched, nd, kw):
    if unbatched:
        x = x.unsqueeze(0)
    if nd == 1:
        x, w = x.unsqueeze(2), w.unsqueeze(2)
    out = fn.apply(x, w, b, **kw)
    if nd == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """``torch.nn.functional.conv2d``: input (N, C, H, W) or (C, H, W), weight (O, C/groups, kh, kw),
    ``padding`` an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only; an even kernel pads one more
    at the end, as torch)."""
    x, w, b, unbatched, kw = _conv_args(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")
    if kw["groups"] == 1 and _is_patch_case(tuple(w.shape[2:]), kw["stride"], kw["padding"], kw["dilation"],
                                            tuple(x.shape[-2:])):
        return _patch_conv(x, w, b, unbatched)
    return _run(Conv, x, w, b, unbatched, 2, kw)


def _patch_conv(x, w, b, unbatched):
    """The patch case (stride = kernel, no padding, dilation or groups: the ViT's projection) is
    ``F.patch_embed``, the fused op with its own closed form, reshaped to (N, O, H/kh, W/kw) (the
    ViT's layer, whose fused backward is faster than the general one's)."""
    from .linear import patch_embed
    if unbatched:
        x = x.unsqueeze(0)
    n, _, h, wd = x.shape
    kh, kw = w.shape[2:]
    out = patch_embed(x, w, b, (kh, kw)).transpose(1, 2).reshape(n, w.shape[0], h // kh, wd // kw)
    return out[0] if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """``torch.nn.functional.conv1d``: input (N, C, L) or (C, L), weight (O, C/groups, k); the 2-D
    convolution on (N, C, 1, L)."""
    x, w, b, unbatched, kw = _conv_args(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")
    return _run(Conv, x, w, b, unbatched, 1, kw)


def conv2d_closed_form(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Rung 2 of ``conv2d`` (same arguments and checks): ``ConvClosedForm``."""
    x, w, b, unbatched, kw = _conv_args(input, weight, bias, stride, padding, dilation, groups, 2,
                                        "conv2d_closed_form")
    return _run(ConvClosedForm, x, w, b, unbatched, 2, kw)


def conv1d_closed_form(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Rung 2 of ``conv1d`` (same arguments and checks): ``ConvClosedForm``."""
    x, w, b, unbatched, kw = _conv_args(input, weight, bias, stride, padding, dilation, groups, 1,
                                        "conv1d_closed_form")
    return _run(ConvClosedForm, x, w, b, unbatched, 1, kw)


def conv2d_composite(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """Rung 1 of ``conv2d``: zero ``F.pad``, strided windows by ``Tensor.unfold`` (dilation by slicing
    the window), and one ``einsum`` per group — every backward the engine's."""
    from ..ops.einsum import einsum
    from ..tensor import cat
    from .pad import pad as _fpad
    x, w, b, unbatched, kw = _conv_args(input, weight, bias, stride, padding, dilation, groups, 2,
                                        "conv2d_composite")
    (s0, s1), (d0, d1), ((t, bo), (le, r)), g = kw["stride"], kw["dilation"], kw["padding"], kw["groups"]
    if unbatched:
        x = x.unsqueeze(0)
    kh, kwid = w.shape[2], w.shape[3]
    if t or bo or le or r:
        x = _fpad(x, (le, r, t, bo))
    win = x.unfold(2, d0 * (kh - 1) + 1, s0).unfold(3, d1 * (kwid - 1) + 1, s1)[..., ::d0, ::d1]
    cg, og = w.shape[1], w.shape[0] // g
    parts = [einsum("nchwij,ocij->nohw", win[:, i * cg:(i + 1) * cg], w[i * og:(i + 1) * og]) for i in range(g)]
    out = parts[0] if g == 1 else cat(parts, 1)
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out.squeeze(0) if unbatched else out


# ============================================================================ unfold / fold


class Im2Col(ArrayFunction):
    """``F.unfold`` (im2col): (N, C, H, W) -> (N, C·kh·kw, L), L = OH·OW, column l holding the
    window at output position l in (c, i, j) order. Each output entry is a copy of one padded
    input entry, so dL/dx = crop(col2im(g)): each pixel collects the gradients of every window
    entry that read it — ``Col2Im`` is this backward (and, being linear, so is it when the
    gradient is differentiated again). Saved: nothing but shapes."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, *, kernel_size, stride, padding, dilation):
        ctx.args = x.shape[2:], kernel_size, stride, padding, dilation
        return _cols_channel_major(_pad_zeros(x, padding), kernel_size, stride, dilation)

    @staticmethod
    def backward(ctx, g):
        return col2im(g, *ctx.args)


class Col2Im(ArrayFunction):
    """``F.fold`` (col2im): (N, C·kh·kw, L) -> (N, C, H, W), summing each column entry into the
    pixel its window position reads. y = Aᵀ x with A the im2col gather, so dL/dx = A g =
    ``unfold(g)``: the gradient of fold is unfold. Saved: nothing but shapes."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, cols, *, output_size, kernel_size, stride, padding, dilation):
        ctx.args = kernel_size, stride, padding, dilation
        return col2im(cols, output_size, kernel_size, stride, padding, dilation)

    @staticmethod
    def backward(ctx, g):
        return im2col(g, *ctx.args)


def _fold_args(input, kernel_size, dilation, padding, stride, op, want):
    x = as_tensor(input, op, "input")
    check_float(op, input=x)
    k = _tuple(kernel_size, 2, "kernel_size", op)
    d = _tuple(dilation, 2, "dilation", op)
    p = _tuple(padding, 2, "padding", op)
    s = _tuple(stride, 2, "stride", op)
    for name, v, lo in (("kernel_size", k, 1), ("dilation", d, 1), ("stride", s, 1), ("padding", p, 0)):
        if min(v) < lo:
            kind = "non-negative" if lo == 0 else "greater than zero"
            raise InvalidArgumentError(f"{op}: expected {name} to be {kind}, but got {name}={v}")
    if x.ndim not in want:
        raise InvalidArgumentError(f"{op}: Expected {want[0]}D or {want[1]}D (batch mode) tensor for input with "
                                   f"possibly 0 batch size and non-zero dimensions for input, but got: "
                                   f"{list(x.shape)}")
    return x, k, d, tuple((q, q) for q in p), s


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``torch.nn.functional.unfold``: sliding windows of (N, C, H, W) (or (C, H, W)) as columns
    (N, C·kh·kw, L)."""
    x, k, d, p, s = _fold_args(input, kernel_size, dilation, padding, stride, "unfold", (3, 4))
    unbatched = x.ndim == 3
    if unbatched:
        x = x.unsqueeze(0)
    h, w = x.shape[2] + 2 * p[0][0], x.shape[3] + 2 * p[1][0]
    oh, ow = _out_size(h, k[0], s[0], d[0]), _out_size(w, k[1], s[1], d[1])
    if oh < 1 or ow < 1:
        raise InvalidArgumentError(
            f"unfold: Given input with spatial size ({x.shape[2]}, {x.shape[3]}), kernel_size={k}, dilation={d}, "
            f"padding=({p[0][0]}, {p[1][0]}), calculated shape of the array of sliding blocks as ({oh}, {ow}), "
            f"but its components must be at least one.")
    out = Im2Col.apply(x, kernel_size=k, stride=s, padding=p, dilation=d)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``torch.nn.functional.fold``: columns (N, C·kh·kw, L) (or (C·kh·kw, L)) summed back into an
    image of ``output_size``; the adjoint of ``unfold``."""
    x, k, d, p, s = _fold_args(input, kernel_size, dilation, padding, stride, "fold", (2, 3))
    size = _tuple(output_size, 2, "output_size", "fold")
    unbatched = x.ndim == 2
    if unbatched:
        x = x.unsqueeze(0)
    if x.shape[1] % (k[0] * k[1]):
        raise InvalidArgumentError(
            f"fold: Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={x.shape[1]} and kernel_size={k}")
    oh = _out_size(size[0] + 2 * p[0][0], k[0], s[0], d[0])
    ow = _out_size(size[1] + 2 * p[1][0], k[1], s[1], d[1])
    if oh < 1 or ow < 1 or oh * ow != x.shape[2]:
        raise InvalidArgumentError(
            f"fold: Given output_size={size}, kernel_size={k}, dilation={d}, padding=({p[0][0]}, {p[1][0]}), "
            f"stride={s}, expected size of input's dimension 2 to match the calculated number of sliding blocks "
            f"{oh} * {ow} = {oh * ow}, but got input.size(2)={x.shape[2]}.")
    out = Col2Im.apply(x, output_size=size, kernel_size=k, stride=s, padding=p, dilation=d)
    return out.squeeze(0) if unbatched else out


# ============================================================================ channel dropout

def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False, generator=None) -> Tensor:
    """``torch.nn.functional.dropout2d``: zero whole channels — one Bernoulli(1 − p) draw per (n, c),
    broadcast over the spatial axes — and scale the kept ones by 1/(1 − p). The Function is
    dropout's (``activation.DropoutFn``: y = x ∘ m/(1 − p), dL/dx = g ∘ m/(1 − p)) with a mask of
    shape (N, C, 1, 1); a 3-D input is (N, C, L), as torch treats it (with a warning there)."""
    from .activation import DropoutFn, _check_dropout
    if not isinstance(inplace, bool):
        raise TypeError(f"dropout2d: inplace must be a bool, got {inplace!r}")
    x, p = _check_dropout(input, p, "dropout2d", training)
    if x.ndim < 2:
        raise InvalidArgumentError(f"dropout2d: expected an input (N, C, H, W) with at least 2 dimensions, got "
                                   f"shape {tuple(x.shape)}")
    if not training or p == 0.0:
        return x
    mask_shape = x.shape[:2] + (1,) * (x.ndim - 2)
    return DropoutFn.apply(x, keep=keep_mask(mask_shape, p, generator), scale=keep_scale_of(p, x.dtype))


# ============================================================================ transposed convolution

class ConvTranspose(ArrayFunction):
    """Transposed convolution (``conv_transpose1d/2d``): the adjoint, in x, of the convolution with
    the same weight W (Cin, Cout/G, kh, kw) read as a conv weight from Cout to Cin channels. With
    that conv written y = A_W x' = W_flat @ im2col(x'), its transpose is

        out = A_Wᵀ x = crop(col2im(W_flatᵀ @ x))        (+ b)

    — conv's input-gradient formula, with x in the role of g (output_padding adds rows at the end
    that no window reaches before the crop). Backward, from the bilinear form ⟨g, A_Wᵀ x⟩ = ⟨A_W g, x⟩:

        dL/dx = A_W g = W_flat @ im2col(pad(g))          (conv's forward, first H×W windows)
        dL/dW_flat = Σ_n x[n] @ im2col(pad(g))[n]ᵀ       dL/db = Σ_{n,h,w} g

    per group. Saved: x and W. The backward is written in NumPy calls that also run on Tensors
    (im2col the recorded ``Im2Col`` there), so its gradients can be differentiated again."""

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, weight, bias, *, stride, padding, dilation, groups, out_size):
        cin, cog, kh, kw = weight.shape
        n, _, h, w = x.shape
        wg = weight.reshape(groups, cin // groups, cog * kh * kw)
        dcols = np.matmul(wg.transpose(0, 2, 1)[None], x.reshape(n, groups, cin // groups, h * w))
        dwin = dcols.reshape(n, groups * cog, kh, kw, h, w).transpose(0, 1, 4, 5, 2, 3)
        padded = (n, groups * cog, out_size[0] + 2 * padding[0], out_size[1] + 2 * padding[1])
        full = _col2im(dwin, padded, stride, dilation)    # padded ≥ the windows' reach: output_padding
        out = _crop(full, tuple((p, p) for p in padding))
        if bias is not None:
            out += bias.reshape(1, -1, 1, 1)
        ctx.save_for_backward(x, weight)
        ctx.args = stride, padding, dilation, groups
        return out

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.args
        nx, nw, nb = ctx.needs_input_grad
        cin, cog, kh, kw = weight.shape
        n, _, h, w = x.shape
        cols = im2col(g, (kh, kw), stride, tuple((p, p) for p in padding), dilation)    # (N, Cout·kh·kw, L')
        oh, ow = (_out_size(a + 2 * p, kk, st, d) for a, p, kk, st, d in
                  zip(g.shape[2:], padding, (kh, kw), stride, dilation))
        cols = cols.reshape(n, groups * cog * kh * kw, oh, ow)[:, :, :h, :w]            # the first H×W windows
        cols = cols.reshape(n, groups, cog * kh * kw, h * w)
        dx = dw = None
        if nx:
            wg = weight.reshape(groups, cin // groups, cog * kh * kw)
            dx = np.matmul(wg[None], cols).reshape(x.shape)
        if nw:
            xg = x.reshape(n, groups, cin // groups, h * w)
            dw = np.sum(np.matmul(xg, np.swapaxes(cols, 2, 3)), axis=0).reshape(weight.shape)
        return dx, dw, (_bias_grad(g) if nb else None)


def _conv_transpose_args(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, op):
    x, w, b = _conv_tensors(input, weight, bias, nd, op, "in_channels, out_channels/groups")
    if isinstance(padding, str):
        raise TypeError(f"{op}(): argument 'padding' must be tuple of ints, not str ({padding!r})")
    stride, padding = _tuple(stride, nd, "stride", op), _tuple(padding, nd, "padding", op)
    output_padding, dilation = _tuple(output_padding, nd, "output_padding", op), _tuple(dilation, nd, "dilation", op)
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral):
        raise TypeError(f"{op}: groups must be an int, got {groups!r}")
    for name, v, lo in (("groups", (groups,), 1), ("stride", stride, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("output_padding", output_padding, 0)):
        if min(v) < lo:
            raise InvalidArgumentError(f"{op}: {name} must be >= {lo}, got {name}={v if len(v) > 1 else v[0]}")
    if any(op_ >= s and op_ >= d for op_, s, d in zip(output_padding, stride, dilation)):
        raise InvalidArgumentError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                                   f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    shape = (1,) + x.shape if x.ndim == nd + 1 else x.shape
    if w.shape[0] % groups:
        raise InvalidArgumentError(f"{op}: Given groups={groups}, expected weight to be divisible by {groups} at "
                                   f"dimension 0, but got weight of size {list(w.shape)} instead")
    if shape[1] != w.shape[0]:
        raise InvalidArgumentError(f"{op}: Given transposed=1, weight of size {list(w.shape)}, expected input"
                                   f"{list(shape)} to have {w.shape[0]} channels, but got {shape[1]} channels instead")
    if b is not None and b.shape != (w.shape[1] * groups,):
        raise InvalidArgumentError(f"{op}: Given transposed=1, weight of size {list(w.shape)}, expected bias to be "
                                   f"1-dimensional with {w.shape[1] * groups} elements, but got bias of size "
                                   f"{list(b.shape)} instead")
    out = tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1 for n, s, p, d, k, o in
                zip(shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
    if min(out) < 1:
        raise InvalidArgumentError(f"{op}: Given input size per channel: ({' x '.join(map(str, shape[2:]))}). "
                                   f"Calculated output size per channel: ({' x '.join(map(str, out))}). "
                                   f"Output size is too small")
    if nd == 1:
        stride, padding, dilation, out = (1,) + stride, (0,) + padding, (1,) + dilation, (1,) + out
    return x, w, b, x.ndim == nd + 1, dict(stride=stride, padding=padding, dilation=dilation, groups=int(groups),
                                           out_size=out)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``torch.nn.functional.conv_transpose2d``: input (N, Cin, H, W) or (Cin, H, W), weight
    (Cin, Cout/groups, kh, kw); output size (H − 1)·s − 2p + d(k − 1) + output_padding + 1."""
    x, w, b, unbatched, kw = _conv_transpose_args(input, weight, bias, stride, padding, output_padding, groups,
                                                  dilation, 2, "conv_transpose2d")
    return _run(ConvTranspose, x, w, b, unbatched, 2, kw)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """``torch.nn.functional.conv_transpose1d``: the 2-D one on (N, Cin, 1, L)."""
    x, w, b, unbatched, kw = _conv_transpose_args(input, weight, bias, stride, padding, output_padding, groups,
                                                  dilation, 1, "conv_transpose1d")
    return _run(ConvTranspose, x, w, b, unbatched, 1, kw)
