"""Embedding lookup, linear layers, and the ViT patch projection.

All three are matrix products in disguise: an embedding lookup is a one-hot
matrix times the table, a linear layer is x Wᵀ + b, and the patch projection
is a linear layer applied to the flattened P×P patches of an image.
"""
from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse

from ..autograd import ArrayFunction
from ..ops.movement import IndexOutOfRange
from ..tensor import Tensor, where
from ._util import as_tensor, check_float, describe_values, int_array


# ============================================================================ embedding

_DENSE_ONE_HOT_MAX = 1 << 15   # entries of Mᵀ up to which the embedding backward builds it dense


def _one_hot_transposed(ids: np.ndarray, v: int, dtype):
    """Mᵀ, the (V, N) transposed one-hot matrix of N ids: dense up to 2^15 entries, else a
    SciPy CSC matrix (column n holds a single 1 in row ids_n; its index arrays are the ids
    and 0..N, no sorting). Why: the scatter-add Mᵀ G is one compiled product either way, and
    below that size building the sparse matrix costs more than the product. Measured against
    ``np.add.at`` (float32, one thread, medians, 2026-12-02): N=64, V=27, D=32 dense 0.004 ms
    vs 0.018 ms (4.4x); N=512, V=27, D=64 dense 0.025 vs 0.239 ms (9.4x); N=4096, V=65,
    D=128 CSC 0.18 ms vs 3.7 ms (20x; dense 0.80 ms)."""
    n = ids.size
    if v * n <= _DENSE_ONE_HOT_MAX:
        m_t = np.zeros((v, n), dtype=dtype)
        m_t[ids, np.arange(n)] = 1
        return m_t
    return scipy.sparse.csc_array((np.ones(n, dtype=dtype), ids, np.arange(n + 1)), shape=(v, n))


class Embedding(ArrayFunction):
    """y[..., :] = W[ids[...], :]  (a row lookup; W is (V, D)).

    Backward. Each output row is a copy of one table row, so table row v
    receives the sum of the output gradients of every position that looked it
    up — repeated ids accumulate:

        dL/dW[v] = Σ_{n : ids_n = v} g_n.

    That scatter-add is the product Mᵀ G with M the (N, V) one-hot matrix of
    the ids. We build Mᵀ directly as a (V, N) sparse CSC matrix (column n holds
    a single 1 in row ids_n, so its index arrays are ids and 0..N with no
    sorting) and multiply, which SciPy does in one compiled pass. For a small
    Mᵀ (V·N up to 2^15 entries) building the sparse matrix costs more than the
    product itself, and the dense one-hot Mᵀ @ G (one BLAS call) is used.
    Measured on 2 CPU cores, float32 (N ids, V rows, D columns):

        N, V, D              np.add.at   sort+reduceat   bincount/col   one-hot @ G   CSC @ G
        64, 27, 32            0.044 ms      0.051 ms           -          0.012 ms    0.053 ms
        512, 27, 64            1.5 ms        0.2 ms         0.3 ms         1.7 ms      0.12 ms
        4096, 65, 128         19.5 ms        5-7 ms         5.1 ms         7.5 ms      0.30 ms
        4096, 1000, 256       29.3 ms       13-15 ms       15.9 ms        59.9 ms      3.1 ms
        16384, 50257, 768      293 ms        295 ms            -             -          34 ms

    Rows of ``padding_idx`` (if given) get no gradient, as in torch. The plain form,
    ``EmbeddingClosedForm``, is the scatter-add ``np.add.at``; the switch between the
    dense and the sparse Mᵀ is ``_one_hot_transposed``. Gradients of gradients
    (``create_graph=True``) go through the plain form (dL/dW is linear in g, read as Mᵀ g there);
    for it the forward also keeps the table (no extra memory when it is a parameter).
    """

    twice_differentiable_via = None   # EmbeddingClosedForm: bound in closed_form.py

    @staticmethod
    def closed_form_call(ctx, weight):
        ids, _ = ctx.saved_tensors
        return (weight,), {"ids": ids, "padding_idx": ctx.padding_idx}

    @staticmethod
    def forward(ctx, weight, *, ids, padding_idx):
        ctx.save_for_backward(ids, weight if ctx.needs_input_grad[0] else None)   # weight: for closed_form_call
        ctx.num_embeddings, ctx.padding_idx = weight.shape[0], padding_idx
        return np.take(weight, ids, axis=0)

    @staticmethod
    def backward(ctx, g):
        ids, _ = ctx.saved_tensors
        n, dim, v = ids.size, g.shape[-1], ctx.num_embeddings
        dw = _one_hot_transposed(ids.reshape(-1), v, g.dtype) @ g.reshape(n, dim)
        if ctx.padding_idx is not None:
            dw[ctx.padding_idx] = 0
        return dw


def _check_embedding(input, weight, padding_idx, op):
    ids = int_array(input, op, "input")
    w = as_tensor(weight, op, "weight")
    check_float(op, weight=w)
    if w.ndim != 2:
        raise ValueError(f"{op}: weight must be a 2-D table (num_embeddings, embedding_dim), got shape {w.shape}")
    v = w.shape[0]
    bad = (ids < 0) | (ids >= v)
    if bad.any():
        raise IndexOutOfRange(f"{op}: token ids {describe_values(ids[bad])} are out of range: "
                              f"expected 0 <= id < num_embeddings={v}")
    if padding_idx is not None:
        if not isinstance(padding_idx, numbers.Integral) or not -v <= padding_idx < v:
            raise ValueError(f"{op}: padding_idx must be an int in [-{v}, {v}), got {padding_idx!r}")
        padding_idx = int(padding_idx) % v
    return ids, w, padding_idx


def _unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, op):
    if max_norm is not None:
        raise NotImplementedError(f"{op}: max_norm={max_norm!r} (renormalising the looked-up rows of "
                                  f"the table in place) is not supported; leave max_norm=None")
    if scale_grad_by_freq:
        raise NotImplementedError(f"{op}: scale_grad_by_freq=True is not supported")
    if sparse:
        raise NotImplementedError(f"{op}: sparse=True is not supported (gradients are dense arrays)")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Look up rows of ``weight`` (num_embeddings, embedding_dim) for the integer ids in ``input``
    (any shape); the result has shape ``input.shape + (embedding_dim,)``
    (``torch.nn.functional.embedding``). Ids outside [0, num_embeddings) raise an
    ``IndexOutOfRange`` (a ValueError and an IndexError) naming them. ``max_norm``,
    ``scale_grad_by_freq`` and ``sparse`` are torch's keywords; only their defaults are
    supported (anything else raises NotImplementedError)."""
    _unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, "embedding")
    ids, w, padding_idx = _check_embedding(input, weight, padding_idx, "embedding")
    return Embedding.apply(w, ids=ids, padding_idx=padding_idx)


def embedding_composite(input, weight, padding_idx=None) -> Tensor:
    """Embedding from primitives: integer-array indexing ``weight[ids]``, whose backward is a
    scatter-add (np.add.at). Padding positions take the rows from a detached copy of the
    table, so they contribute no gradient."""
    ids, w, padding_idx = _check_embedding(input, weight, padding_idx, "embedding_composite")
    rows = w[ids]
    if padding_idx is None:
        return rows
    return where((ids != padding_idx)[..., None], rows, w.detach()[ids])


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
    of the input (``_rows(x)``, which a forward saves for its backward)."""
    y = _rows(x) @ weight.T
    if bias is not None:
        y += bias
    return y


def _weight_grad(g, x):
    """Σ over all rows of gᵀ x: one (out, N)·(N, in) product over the flattened leading dims."""
    return _rows(g).T @ _rows(x)


class Linear(ArrayFunction):
    """y = x Wᵀ + b with x (..., in), W (out, in), b (out,).

    Backward (y_j = Σ_i x_i W_ji + b_j):
        dL/dx = g W,
        dL/dW = Σ_rows gᵀ x  — one (out, N)·(N, in) product over the flattened rows,
        dL/db = Σ_rows g     — the engine's reduction of the broadcast bias.
    Saved: x (for dW) and W (for dx), each only when that gradient is needed.
    Speed: the products run over the flattened rows (``_rows``); the plain form is
    ``LinearClosedForm``. This backward has no buffers or blocks: it runs on Tensors as it is,
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
    if w.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-D (out_features, in_features), got shape {w.shape}")
    if x.ndim == 0 or x.shape[-1] != w.shape[1]:
        raise ValueError(f"{op}: input of shape {x.shape} has {x.shape[-1] if x.ndim else 'no'} features "
                         f"but weight of shape {w.shape} expects in_features={w.shape[1]}")
    if b is not None and b.shape != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},) (out_features), got {b.shape}")
    return x, w, b


def linear(input, weight, bias=None) -> Tensor:
    """y = input @ weight.T + bias (``torch.nn.functional.linear``; weight is (out, in))."""
    x, w, b = _check_linear(input, weight, bias, "linear")
    return Linear.apply(x, w, b)


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
    """ViT patch projection: y[b, n] = W_flat · patch_n(x[b]) + bias, shape (B, N, D).

    Equal to Conv2d(C, D, kernel_size=P, stride=P)(x).flatten(2).transpose(1, 2):
    with stride = kernel size the windows tile the image without overlap, so the
    convolution is one matrix product of the (B·N, C·P·P) patch matrix with the
    (C·P·P, D) flattened kernel — no im2col duplication.

    Backward is Linear's, followed by the inverse rearrangement for x:
        dL/dpatches = g W_flat  → folded back to (B, C, H, W) (each pixel is in one patch),
        dL/dW = Σ_{b,n} gᵀ patches  (reshaped to (D, C, P, P)),   dL/dbias = Σ_{b,n} g.
    Saved: the patch matrix (the size of x, needed for dW) and W_flat (for dx).
    Speed: Linear's flattened-rows products (``_rows``, ``_affine``, ``_weight_grad``);
    the plain form is ``PatchEmbedClosedForm``. Gradients of gradients (``create_graph=True``)
    go through the plain form; for it the forward also keeps x when x requires grad.
    """

    twice_differentiable_via = None   # PatchEmbedClosedForm: bound in closed_form.py

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
        raise ValueError(f"{op}: input must be an image batch (B, C, H, W), got shape {x.shape}")
    if w.ndim != 4:
        raise ValueError(f"{op}: weight must have the Conv2d layout (D, C, P, P), got shape {w.shape}")
    kh, kw = w.shape[2], w.shape[3]
    if patch_size is not None:
        ph, pw = (patch_size, patch_size) if isinstance(patch_size, numbers.Integral) else tuple(patch_size)
        if (ph, pw) != (kh, kw):
            raise ValueError(f"{op}: patch_size {patch_size} does not match the weight's kernel "
                             f"size {(kh, kw)} (weight shape {w.shape})")
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"{op}: input has {x.shape[1]} channels (shape {x.shape}) but weight of shape "
                         f"{w.shape} expects {w.shape[1]}")
    h, wd = x.shape[2], x.shape[3]
    if h % kh or wd % kw:
        raise ValueError(f"{op}: patch size {(kh, kw)} does not divide the image size {(h, wd)} "
                         f"(input shape {x.shape})")
    if b is not None and b.shape != (w.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({w.shape[0]},), got {b.shape}")
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
