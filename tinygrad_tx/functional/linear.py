"""Linear layers and the ViT patch projection (the embedding lookup is in ``embedding.py``).

Both are matrix products: a linear layer is x Wᵀ + b, and the patch projection is a linear
layer applied to the flattened P×P patches of an image.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import buffers
from ..core.function import ArrayFunction
from .closed_form import PatchEmbedClosedForm
from ..core.tensor import Tensor
from ._util import as_tensor, check_float


# ============================================================================ linear

def _rows(a):
    """``a`` (..., k) as a 2-D (rows, k) array (a view when ``a`` is contiguous). Why: a product
    over the flattened rows is one BLAS call; np.matmul of a 3-D array by a matrix loops
    over the leading index with one small product each: (32, 64, 64) @ (64, 256) float32
    0.81 -> 0.61 ms (1.3x; dW = Σ gᵀx 1.1x against ``np.tensordot``), one thread, medians,
    2026-12-02 (2-3x measured earlier for the GPT's shapes on a 2-core VM)."""
    return a.reshape(-1, a.shape[-1])


def _affine(x, weight, bias):
    """x Wᵀ + b for x (..., in), W (out, in), b (out,) or None; ``x`` may be the 2-D rows
    of the input (``_rows(x)``, which a forward saves for its backward). The result is written
    into a pooled array (``buffers.matmul``: no fresh pages to fault in at every step)."""
    y = buffers.matmul(_rows(x), weight.T)
    if bias is not None:
        y += bias
    return y


def _weight_grad(g, x):
    """Σ over all rows of gᵀ x: one (out, N)·(N, in) product over the flattened leading dims."""
    return _rows(g).T @ _rows(x)


class LinearFn(ArrayFunction):
    """y = x Wᵀ + b with x (..., in), W (out, in), b (out,), fused.
    Derivation: ``LinearClosedForm`` (functional/closed_form.py).

    Speed: the products run over the flattened rows (``_rows``): dL/dW = Σ_rows gᵀ x is one
    (out, N)·(N, in) product (``_weight_grad``); dL/db = Σ_rows g is left to the engine's
    reduction of the broadcast bias. Saved: x (for dW) and W (for dx), each only when that
    gradient is needed. This backward has no buffers or blocks: it runs on Tensors as it is,
    so gradients of gradients differentiate it (``differentiable_backward``).
    """

    differentiable_backward = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        nx, nw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        ctx.save_for_backward(x if nw else None, weight if nx else None)
        return _affine(_rows(x), weight, bias).reshape(x.shape[:-1] + (weight.shape[0],))

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        g_rows = _rows(g)  # (N, out): every product below is one 2-D BLAS call
        dx = (g_rows @ weight).reshape(tuple(g.shape[:-1]) + (weight.shape[1],)) if nx else None
        return dx, (_weight_grad(g_rows, x) if nw else None), (g if nb else None)


def _check_linear(input, weight, bias, op):
    x = as_tensor(input, op, "input")
    w = as_tensor(weight, op, "weight")
    b = None if bias is None else as_tensor(bias, op, "bias")
    check_float(op, input=x, weight=w, bias=b)
    xs, ws = x._data.shape, w._data.shape     # plain tuples: this check runs at every call
    if len(ws) != 2:
        raise ValueError(f"{op}: weight must be 2-D (out_features, in_features), got shape {ws}")
    if not xs or xs[-1] != ws[1]:
        raise ValueError(f"{op}: input of shape {xs} has {xs[-1] if xs else 'no'} features "
                         f"but weight of shape {ws} expects in_features={ws[1]}")
    if b is not None and b._data.shape != (ws[0],):
        raise ValueError(f"{op}: bias must have shape ({ws[0]},) (out_features), got {b._data.shape}")
    return x, w, b


def linear(input, weight, bias=None) -> Tensor:
    """y = input @ weight.T + bias (``torch.nn.functional.linear``; weight is (out, in))."""
    x, w, b = _check_linear(input, weight, bias, "linear")
    return LinearFn.apply(x, w, b)


def linear_composite(input, weight, bias=None) -> Tensor:
    """Linear from primitives: matmul with the transposed weight, plus the broadcast bias."""
    x, w, b = _check_linear(input, weight, bias, "linear_composite")
    y = x @ w.T
    return y if b is None else y + b


# ============================================================================ ViT patch projection

def _to_patches(x, ph, pw):
    """(B, C, H, W) -> (B, N, C·ph·pw): row-major patches, each flattened in (c, i, j) order —
    the order of a Conv2d weight (D, C, ph, pw) flattened to (D, C·ph·pw)."""
    b, c, h, w = x.shape
    x = x.reshape(b, c, h // ph, ph, w // pw, pw).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(b, (h // ph) * (w // pw), c * ph * pw)


class PatchEmbed(ArrayFunction):
    """ViT patch projection, y[b, n] = W_flat · patch_n(x[b]) + bias (a Conv2d with
    stride = kernel size), fused. Derivation: ``PatchEmbedClosedForm`` (functional/closed_form.py).

    The convolution is one matrix product of the (B·N, C·P·P) patch matrix with the
    (C·P·P, D) flattened kernel — no im2col duplication. Speed: Linear's flattened-rows
    products (``_rows``, ``_affine``, ``_weight_grad``). Saved: the patch matrix (for dW) and
    W_flat (for dx), each only when that gradient is needed. Gradients of gradients
    (``create_graph=True``) go through ``PatchEmbedClosedForm``; for it the forward also keeps
    x when x requires grad.
    """

    twice_differentiable_via = PatchEmbedClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, x, weight, bias):
        return (x, weight, bias), {"ph": ctx.ph, "pw": ctx.pw}

    @staticmethod
    def forward(ctx, x, weight, bias, *, ph, pw):
        nx, nw = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        patches = _to_patches(x, ph, pw)
        w_flat = weight.reshape(weight.shape[0], -1)
        ctx.save_for_backward(patches if nw else None, w_flat if nx else None, x if nx else None)
        ctx.x_shape, ctx.w_shape, ctx.ph, ctx.pw = x.shape, weight.shape, ph, pw
        return _affine(patches, w_flat, bias).reshape(patches.shape[:-1] + (w_flat.shape[0],))

    @staticmethod
    def backward(ctx, g):
        patches, w_flat, _ = ctx.saved_tensors
        nx, nw, nb = ctx.needs_input_grad
        dx = dw = None
        if nx:
            b, c, h, w = ctx.x_shape
            ph, pw = ctx.ph, ctx.pw
            dp = (_rows(g) @ w_flat).reshape(b, h // ph, w // pw, c, ph, pw)
            dx = dp.transpose(0, 3, 1, 4, 2, 5).reshape(ctx.x_shape)
        if nw:
            dw = _weight_grad(g, patches).reshape(ctx.w_shape)
        return dx, dw, (g if nb else None)


def _check_patch_embed(input, weight, bias, patch_size, op):
    x = as_tensor(input, op, "input")
    w = as_tensor(weight, op, "weight")
    b = None if bias is None else as_tensor(bias, op, "bias")
    check_float(op, input=x, weight=w, bias=b)
    if x.ndim != 4:
        raise ValueError(f"{op}: input must be an image batch (B, C, H, W), got shape {tuple(x.shape)}")
    if w.ndim != 4:
        raise ValueError(f"{op}: weight must have the Conv2d layout (D, C, P, P), got shape {tuple(w.shape)}")
    kh, kw = w.shape[2], w.shape[3]
    if patch_size is not None:
        ph, pw = (patch_size, patch_size) if isinstance(patch_size, numbers.Integral) else tuple(patch_size)
        if (ph, pw) != (kh, kw):
            raise ValueError(f"{op}: patch_size {patch_size} does not match the weight's kernel "
                             f"size {(kh, kw)} (weight shape {tuple(w.shape)})")
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"{op}: input has {x.shape[1]} channels (shape {tuple(x.shape)}) but weight of shape "
                         f"{tuple(w.shape)} expects {w.shape[1]}")
    h, wd = x.shape[2], x.shape[3]
    if h % kh or wd % kw:
        raise ValueError(f"{op}: patch size {(kh, kw)} does not divide the image size {(h, wd)} "
                         f"(input shape {tuple(x.shape)})")
    if b is not None and b.shape != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},), got {tuple(b.shape)}")
    return x, w, b, kh, kw


def patch_embed(input, weight, bias=None, patch_size=None) -> Tensor:
    """Split images (B, C, H, W) into non-overlapping patches and project each to D features.

    ``weight`` has torch's Conv2d layout (D, C, P, P) (``patch_size`` = P, or (Ph, Pw),
    defaults to the kernel size and must match it). Returns tokens (B, N, D),
    N = (H/P)(W/P) in row-major patch order: exactly
    ``F.conv2d(x, weight, bias, stride=P).flatten(2).transpose(1, 2)`` in torch.
    """
    x, w, b, ph, pw = _check_patch_embed(input, weight, bias, patch_size, "patch_embed")
    return PatchEmbed.apply(x, w, b, ph=ph, pw=pw)


def patch_embed_composite(input, weight, bias=None, patch_size=None) -> Tensor:
    """Patch projection from primitives: reshape and permute into the patch matrix, then a matmul."""
    x, w, b, ph, pw = _check_patch_embed(input, weight, bias, patch_size, "patch_embed_composite")
    bsz, c, h, wd = x.shape
    patches = x.reshape(bsz, c, h // ph, ph, wd // pw, pw).permute(0, 2, 4, 1, 3, 5)
    patches = patches.reshape(bsz, (h // ph) * (wd // pw), c * ph * pw)
    y = patches @ w.reshape(w.shape[0], -1).T
    return y if b is None else y + b
