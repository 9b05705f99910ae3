"""Rung 2 of every fused op: the closed form as a plain Function.

Each Transformer op of ``tinygrad_tx.functional`` exists on three rungs:

1. the **composite** (``F.softmax_composite``, ...): the definition written with Tensor
   primitives; autograd differentiates it op by op;
2. the **closed form** (here: ``F.softmax_closed_form``, ...): one ``Function`` whose
   forward and backward are the derivation of its docstring written out in plain NumPy,
   over whole arrays — no row blocks, no BLAS row sums, no skipped shift, no rounding
   correction, no dense-vs-sparse switch;
3. the **fused** op used by default (``F.softmax``, ...): the same closed form, tuned for
   speed; each of its tricks is a named helper next to it, with its measured gain.

The tests (``tests/test_three_rungs.py``) assert composite == closed form == fused ==
PyTorch, outputs and every input gradient; ``tinygrad-tx explain OP`` prints the three
rungs in that order and checks them live. Each wrapper below validates its arguments with
the fused op's own checks, so the three rungs accept and refuse the same calls.

Fully masked attention rows (every key forbidden) follow ``scaled_dot_product_attention``:
their weights are 0, so is their output row, and no gradient flows through them.

Gradients of gradients. Every forward and backward here is written with NumPy calls that have a
Tensor twin, nothing written in place, so each also runs on Tensors (``autograd/dispatch.py``).
That is how a fused op is differentiated twice: with ``create_graph=True`` its closed form's
forward runs again on the fused node's inputs, recorded, and then its backward, on Tensors
(``autograd/engine.py``, ``_backward_via_closed_form``): the derivation below is the one a
second derivative comes from. A row maximum subtracted for stability is taken as a constant
(``_row_max``): the result does not depend on it.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import erf

from ..core.function import ArrayFunction
from .batch_norm import BatchNorm, check_batch_norm
from ..ops import elementwise as _ops_elementwise
from ..ops.flash_attention import check_flash_attention
from ..core.tensor import Tensor
from ._util import as_tensor, check_float, keep_mask, keep_scale
from .attention import ScaledDotProductAttention, _causal_future
from .attention import _check as _check_attention
from .embedding import EmbeddingFn, _check_embedding
from .linear import PatchEmbed, _check_linear, _check_patch_embed
from .loss import _check as _check_cross_entropy
from .loss import CrossEntropy, target_distribution
from .normalization import LayerNormFn
from .normalization import _check as _check_layer_norm
from .softmax import LogSoftmaxFn, SoftmaxFn, _prepare


def _row_max(x, axis):
    """max along ``axis`` (keepdims; -inf for an empty or all -inf slice) as a constant array: the
    stabilising shift, on which softmax does not depend, so no derivative flows through it."""
    return np.max(x._data if isinstance(x, Tensor) else x, axis=axis, keepdims=True, initial=-np.inf)


# ============================================================================ softmax family

class SoftmaxClosedForm(ArrayFunction):
    """y = softmax(x) along ``dim``:  y_i = e^{x_i - m} / Σ_k e^{x_k - m},  m = max_k x_k
    (the shift m cancels; it keeps every exponent <= 0).

    Backward.  ∂y_i/∂x_j = y_i (δ_ij - y_j), so
        dL/dx_j = Σ_i g_i y_i (δ_ij - y_j) = y_j (g_j - Σ_i g_i y_i):   dx = y ∘ (g - ⟨g, y⟩).
    Saved: y.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        with np.errstate(invalid="ignore"):                   # an all -inf slice gives nan, as torch
            e = np.exp(x - _row_max(x, dim))
            y = e / np.sum(e, axis=dim, keepdims=True)
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - np.sum(g * y, axis=ctx.dim, keepdims=True))


class LogSoftmaxClosedForm(ArrayFunction):
    """y = log softmax(x) = s - log Σ_k e^{s_k},  s = x - max x  (the log-sum-exp trick).

    Backward.  ∂y_i/∂x_j = δ_ij - softmax(x)_j, so dx = g - e^y Σ g  (softmax = e^y).
    Saved: y.
    """

    @staticmethod
    def forward(ctx, x, *, dim):
        with np.errstate(invalid="ignore", divide="ignore"):   # all -inf: nan, as torch
            s = x - _row_max(x, dim)
            y = s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))
        ctx.save_for_backward(y)
        ctx.dim = dim
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g - np.exp(y) * np.sum(g, axis=ctx.dim, keepdims=True)


class CrossEntropyClosedForm(ArrayFunction):
    """ℓ = -Σ_c q_c log p_c per position, p = softmax(z) over the class axis, where
    q = w ∘ ((1 - ε) onehot(t) + ε/C) is the weighted, label-smoothed target distribution
    (0 at ignored positions; built by ``loss.target_distribution``). 'mean' divides Σ ℓ by
    the total weight of the kept targets.

    Backward.  ∂ log p_k / ∂z_c = δ_kc - p_c, so
        ∂ℓ/∂z_c = -Σ_k q_k (δ_kc - p_c) = p_c Σ_k q_k - q_c      (unweighted: p - q),
    times g (per position for 'none', g / total weight for 'mean'; all ignored: 0, as torch).
    Saved: p and q.
    """

    @staticmethod
    def forward(ctx, z, *, q, axis, reduction, denominator):
        s = z - _row_max(z, axis)
        log_p = s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
        loss = -np.sum(q * log_p, axis=axis)
        ctx.save_for_backward(np.exp(log_p), q)
        ctx.axis, ctx.reduction, ctx.denominator = axis, reduction, denominator
        if reduction == "none":
            return loss
        with np.errstate(invalid="ignore", divide="ignore"):  # everything ignored: 0/0 = nan, as torch
            return np.sum(loss) if reduction == "sum" else np.sum(loss) / denominator   # a Python float

    @staticmethod
    def backward(ctx, g):
        p, q = ctx.saved_tensors
        if ctx.reduction == "none":
            r = np.expand_dims(g, ctx.axis)
        else:
            r = g if ctx.reduction == "sum" else (g / ctx.denominator if ctx.denominator else 0 * g)
        return (p * np.sum(q, axis=ctx.axis, keepdims=True) - q) * r


# ============================================================================ normalization

class LayerNormClosedForm(ArrayFunction):
    """y = x̂ ∘ γ + β,  x̂ = (x - μ) ρ,  ρ = 1/√(σ² + eps), with μ and σ² (biased) the mean
    and variance of each row: the trailing ``ndim_normalized`` dimensions, D elements.

    Backward. With ĝ = g ∘ γ, ∂μ/∂x_j = 1/D and ∂ρ/∂x_j = -ρ² x̂_j / D,
        ∂x̂_i/∂x_j = ρ (δ_ij - 1/D) - x̂_i ρ x̂_j / D,
    so  dL/dx = ρ · (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂)),
        dL/dγ = Σ_rows g ∘ x̂,   dL/dβ = Σ_rows g.
    Saved: x̂, ρ and γ.
    """

    @staticmethod
    def forward(ctx, x, weight, bias, *, ndim_normalized, eps):
        axes = tuple(range(x.ndim - ndim_normalized, x.ndim))
        c = x - np.mean(x, axis=axes, keepdims=True)
        rho = 1 / np.sqrt(np.mean(c * c, axis=axes, keepdims=True) + eps)
        xhat = c * rho
        ctx.save_for_backward(xhat, rho, weight)
        ctx.axes = axes
        y = xhat if weight is None else xhat * weight
        return y if bias is None else y + bias

    @staticmethod
    def backward(ctx, g):
        xhat, rho, weight = ctx.saved_tensors
        axes, rows = ctx.axes, tuple(range(g.ndim - len(ctx.axes)))
        gh = g if weight is None else g * weight
        dx = rho * (gh - np.mean(gh, axis=axes, keepdims=True)
                    - xhat * np.mean(gh * xhat, axis=axes, keepdims=True))
        return dx, np.sum(g * xhat, axis=rows), np.sum(g, axis=rows)


class BatchNormClosedForm(ArrayFunction):
    """Training-mode batch norm: LayerNorm's closed form with the statistics taken per
    channel (axis 1) over the batch (and length) axes instead of per row:

        y = γ x̂ + β,  x̂ = (x - μ) r,  r = 1/√(σ² + eps),  μ, σ² over the m values of a channel;
        dL/dx = r · (d - mean(d) - x̂ ∘ mean(d ∘ x̂)),  d = γ g   (means over those m values),
        dL/dγ = Σ g ∘ x̂,   dL/dβ = Σ g.

    (The same derivation as ``functional/batch_norm.py``'s ``BatchNorm``'s (r/m)(m d - Σ d - x̂ Σ d x̂).)
    Saved: x̂, r and γ. No running statistics: ``F.batch_norm`` updates those.

    Eval mode (``running=(μ, σ²)``, given constants, as ``nn.BatchNorm`` uses them): x̂ = (x - μ) r
    with μ and r constants, so dL/dx = r d. (Only ``BatchNorm``'s gradients of gradients use it.)
    """

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps, running=None):
        axes, per_channel = (0,) + tuple(range(2, x.ndim)), (-1,) + (1,) * (x.ndim - 2)
        if running is None:
            c = x - np.mean(x, axis=axes, keepdims=True)
            r = 1 / np.sqrt(np.mean(c * c, axis=axes, keepdims=True) + eps)
        else:
            mean, var = running
            c = x - mean.reshape(per_channel).astype(x.dtype)
            r = (1 / np.sqrt(var.reshape(per_channel) + eps)).astype(x.dtype)
        xhat = c * r
        gamma = None if weight is None else weight.reshape(per_channel)
        ctx.save_for_backward(xhat, r, gamma)
        ctx.axes, ctx.training = axes, running is None
        ctx.param_shape = None if weight is None else weight.shape
        y = xhat if gamma is None else xhat * gamma
        return y if bias is None else y + bias.reshape(per_channel)

    @staticmethod
    def backward(ctx, g):
        xhat, r, gamma = ctx.saved_tensors
        axes, shape = ctx.axes, ctx.param_shape
        d = g if gamma is None else g * gamma
        if ctx.training:
            dx = r * (d - np.mean(d, axis=axes, keepdims=True) - xhat * np.mean(d * xhat, axis=axes, keepdims=True))
        else:
            dx = r * d
        dw, db = np.sum(g * xhat, axis=axes), np.sum(g, axis=axes)
        return dx, dw if shape is None else dw.reshape(shape), db if shape is None else db.reshape(shape)


# ============================================================================ GELU

_C = math.sqrt(2 / math.pi)                                   # Python floats keep float32 float32
_SQRT_2, _SQRT_2PI = math.sqrt(2), math.sqrt(2 * math.pi)


class GeluClosedForm(ArrayFunction):
    """GELU, exact or with torch's tanh approximation.

    Exact: y = x Φ(x), Φ(x) = (1 + erf(x/√2))/2;  dy/dx = Φ(x) + x φ(x), φ(x) = e^{-x²/2}/√(2π).
    Tanh:  y = x/2 (1 + tanh u), u = √(2/π)(x + 0.044715 x³);
           dy/dx = (1 + tanh u)/2 + x/2 (1 - tanh² u) √(2/π)(1 + 3·0.044715 x²).
    dL/dx = g · dy/dx. Saved: x.
    """

    @staticmethod
    def forward(ctx, x, *, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        if approximate == "tanh":
            return x / 2 * (1 + np.tanh(_C * (x + 0.044715 * x ** 3)))
        return x * (1 + erf(x / _SQRT_2)) / 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if ctx.approximate == "tanh":
            t = np.tanh(_C * (x + 0.044715 * x ** 3))
            return g * ((1 + t) / 2 + x / 2 * (1 - t * t) * _C * (1 + 3 * 0.044715 * x * x))
        return g * ((1 + erf(x / _SQRT_2)) / 2 + x * np.exp(-x * x / 2) / _SQRT_2PI)


# ============================================================================ attention

def attention_scores(q, k, attn_mask, is_causal, scale, shape):
    """S = scale · Q Kᵀ of ``shape``, -inf where a bool mask is False or the causal mask
    forbids (key j > query i), plus a float mask."""
    s = np.broadcast_to(scale * (q @ np.swapaxes(k, -1, -2)), shape)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == np.bool_ else s + attn_mask
    return np.where(_causal_future(*shape[-2:]), -np.inf, s) if is_causal else s


class ScaledDotProductAttentionClosedForm(ArrayFunction):
    """O = P̃ V,  P̃ = P ∘ M / (1 - p) (dropout mask M; P̃ = P without),  P = softmax_rows(S),
    S = scale · Q Kᵀ + mask (``attention_scores``); a fully masked row has P = 0.

    Backward, G = dL/dO:  dV = P̃ᵀ G,  dP = (G Vᵀ) ∘ M / (1 - p),
    dS = P ∘ (dP - rowsum(dP ∘ P))  (softmax's backward, row by row),
    dQ = scale · dS K,  dK = scale · dSᵀ Q,  d(mask) = dS.   Saved: Q, K, V, P, P̃.
    """

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, *, scores_shape, is_causal, scale, keep, keep_scale_):
        s = attention_scores(q, k, attn_mask, is_causal, scale, scores_shape)
        m = _row_max(s, -1)
        e = np.exp(s - np.where(m == -np.inf, 0, m))            # a fully masked row: all 0
        total = np.sum(e, axis=-1, keepdims=True)
        p = e / np.where(total == 0, 1, total)
        p_used = p if keep is None else p * keep * keep_scale_
        ctx.save_for_backward(q, k, v, p, p_used, keep)
        ctx.scale, ctx.keep_scale = scale, keep_scale_
        return p_used @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v, p, p_used, keep = ctx.saved_tensors
        dp = g @ np.swapaxes(v, -1, -2)
        if keep is not None:
            dp = dp * keep * ctx.keep_scale
        ds = p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
        dq, dk = ctx.scale * (ds @ k), ctx.scale * (np.swapaxes(ds, -1, -2) @ q)
        return dq, dk, np.swapaxes(p_used, -1, -2) @ g, ds


def _weights(s, lse):
    """P = exp(S - L); a fully masked row (L = -inf) gets exp(-inf - inf) = 0, not nan."""
    return np.exp(s - np.where(lse == -np.inf, np.inf, lse))


class FlashAttentionClosedForm(ArrayFunction):
    """Attention as FlashAttention saves it, untiled: O = P V with P = exp(S - L),
    L = logsumexp_rows(S) (-inf for a fully masked row, whose P is then 0);
    S = scale · Q Kᵀ + mask (``attention_scores``). Saved: Q, K, V, O and L — O(T·d), not P.

    Backward recomputes P from L. With G = dL/dO:  dV = Pᵀ G,  dP = G Vᵀ,
    dS = P ∘ (dP - D) with D_i = Σ_j P_ij dP_ij = Σ_j P_ij (G_i · V_j) = G_i · O_i,
    dQ = scale · dS K,  dK = scale · dSᵀ Q.
    """

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, *, is_causal, scale):
        shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], k.shape[-2])
        s = attention_scores(q, k, attn_mask, is_causal, scale, shape)
        m = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
        m = np.where(m == -np.inf, 0, m)
        with np.errstate(divide="ignore"):                      # log 0 = -inf: a fully masked row
            lse = m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True))
        out = _weights(s, lse) @ v
        ctx.save_for_backward(q, k, v, out, lse, attn_mask)
        ctx.is_causal, ctx.scale, ctx.shape = is_causal, scale, shape
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse, attn_mask = ctx.saved_tensors
        s = attention_scores(q, k, attn_mask, ctx.is_causal, ctx.scale, ctx.shape)
        p = _weights(s, lse)
        dp = g @ np.swapaxes(v, -1, -2)
        ds = p * (dp - np.sum(g * out, axis=-1, keepdims=True))
        dq, dk = ctx.scale * (ds @ k), ctx.scale * (np.swapaxes(ds, -1, -2) @ q)
        return dq, dk, np.swapaxes(p, -1, -2) @ g, None


# ============================================================================ lookups and products

class EmbeddingClosedForm(ArrayFunction):
    """y[..., :] = W[ids[...], :].  Backward: table row v receives the gradients of every
    position that looked it up,  dL/dW[v] = Σ_{n : ids_n = v} g_n  (a scatter-add;
    the row ``padding_idx`` gets none). As a product: with M the (N, V) one-hot matrix of
    the ids (M_nv = 1 where ids_n = v; its column ``padding_idx`` zeroed), y = M W and
    dL/dW = Mᵀ G (G: the N gradient rows). Saved: the ids."""

    @staticmethod
    def forward(ctx, weight, *, ids, padding_idx):
        ctx.save_for_backward(ids)
        ctx.shape, ctx.dtype, ctx.padding_idx = weight.shape, np.result_type(weight), padding_idx
        return weight[ids]

    @staticmethod
    def backward(ctx, g):
        (ids,) = ctx.saved_tensors
        v, d = ctx.shape
        m = ids.reshape(-1, 1) == np.arange(v)                  # the one-hot M, (N, V): a constant
        if ctx.padding_idx is not None:
            m[:, ctx.padding_idx] = False
        return m.T.astype(ctx.dtype) @ g.reshape(-1, d)


class LinearClosedForm(ArrayFunction):
    """y = x Wᵀ + b.  Backward (y_j = Σ_i x_i W_ji + b_j):
        dL/dx = g W,   dL/dW = Σ_rows gᵀ x,   dL/db = Σ_rows g   (rows: every leading index).
    Saved: x and W."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        y = x @ weight.T
        return y if bias is None else y + bias

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        g2, x2 = g.reshape(-1, g.shape[-1]), x.reshape(-1, x.shape[-1])   # every leading index a row
        return g @ weight, g2.T @ x2, np.sum(g2, axis=0)


class PatchEmbedClosedForm(ArrayFunction):
    """ViT patch projection = Conv2d(kernel = stride = P): cut (B, C, H, W) into the
    (B, N, C·Ph·Pw) matrix of flattened patches (``(c, i, j)`` order, a Conv2d weight's),
    then y = patches W_flatᵀ + b.  Backward is Linear's, with dL/dpatches folded back into
    the image (each pixel lies in exactly one patch):
        dL/dx = fold(g W_flat),   dL/dW = Σ_{b,n} gᵀ patches,   dL/db = Σ_{b,n} g.
    Saved: the patches and W_flat."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, ph, pw):
        b, c, h, w = x.shape
        patches = np.transpose(x.reshape(b, c, h // ph, ph, w // pw, pw), (0, 2, 4, 1, 3, 5))
        patches = patches.reshape(b, (h // ph) * (w // pw), c * ph * pw)
        w_flat = weight.reshape(weight.shape[0], -1)
        ctx.save_for_backward(patches, w_flat)
        ctx.x_shape, ctx.w_shape, ctx.ph, ctx.pw = x.shape, weight.shape, ph, pw
        y = patches @ w_flat.T
        return y if bias is None else y + bias

    @staticmethod
    def backward(ctx, g):
        patches, w_flat = ctx.saved_tensors
        (b, c, h, w), ph, pw = ctx.x_shape, ctx.ph, ctx.pw
        dp = (g @ w_flat).reshape(b, h // ph, w // pw, c, ph, pw)
        dx = np.transpose(dp, (0, 3, 1, 4, 2, 5)).reshape(ctx.x_shape)
        g2 = g.reshape(-1, g.shape[-1])                          # the B·N rows
        dw = (g2.T @ patches.reshape(g2.shape[0], -1)).reshape(ctx.w_shape)
        return dx, dw, np.sum(g2, axis=0)


# ============================================================================ functional spellings

def softmax_closed_form(input, dim=None, dtype=None) -> Tensor:
    """Rung 2 of ``F.softmax`` (same arguments and checks)."""
    x, d = _prepare(input, dim, "softmax_closed_form", dtype)
    return SoftmaxClosedForm.apply(x, dim=d) if x.ndim else SoftmaxClosedForm.apply(x.reshape(1), dim=0).reshape(())


def log_softmax_closed_form(input, dim=None, dtype=None) -> Tensor:
    """Rung 2 of ``F.log_softmax`` (same arguments and checks)."""
    x, d = _prepare(input, dim, "log_softmax_closed_form", dtype)
    if not x.ndim:
        return LogSoftmaxClosedForm.apply(x.reshape(1), dim=0).reshape(())
    return LogSoftmaxClosedForm.apply(x, dim=d)


def cross_entropy_closed_form(input, target, weight=None, size_average=None, ignore_index: int = -100,
                              reduce=None, reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Rung 2 of ``F.cross_entropy`` for class-index targets (probability targets take the
    composite path that ``F.cross_entropy`` takes, here with ``log_softmax_closed_form``)."""
    checked = _check_cross_entropy(input, target, weight, size_average, ignore_index, reduce, reduction,
                                   label_smoothing, "cross_entropy_closed_form", log_softmax_closed_form)
    if isinstance(checked, Tensor):
        return checked
    z, t, w, axis, reduction, eps = checked
    q, denominator = target_distribution(z, t, w, axis, ignore_index, eps)
    return CrossEntropyClosedForm.apply(z, q=q, axis=axis, reduction=reduction, denominator=denominator)


def layer_norm_closed_form(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Rung 2 of ``F.layer_norm`` (same arguments and checks)."""
    x, w, b, k = _check_layer_norm(input, normalized_shape, weight, bias, eps, "layer_norm_closed_form")
    return LayerNormClosedForm.apply(x, w, b, ndim_normalized=k, eps=float(eps))


def batch_norm_closed_form(input, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    """Rung 2 of training-mode ``F.batch_norm`` without running statistics
    (``F.batch_norm(input, None, None, weight, bias, training=True, eps=eps)``)."""
    x, w, b = check_batch_norm(input, None, None, weight, bias, True, "batch_norm_closed_form")
    return BatchNormClosedForm.apply(x, w, b, eps=float(eps))


def gelu_closed_form(input, approximate: str = "none") -> Tensor:
    """Rung 2 of ``F.gelu``, exact or ``approximate='tanh'``."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu_closed_form: approximate must be 'none' or 'tanh', got {approximate!r}")
    x = as_tensor(input, "gelu_closed_form", "input")
    check_float("gelu_closed_form", input=x)
    return GeluClosedForm.apply(x, approximate=approximate)


def scaled_dot_product_attention_closed_form(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                             is_causal: bool = False, scale=None, enable_gqa: bool = False,
                                             generator=None) -> Tensor:
    """Rung 2 of ``F.scaled_dot_product_attention`` (same arguments, checks and dropout mask)."""
    q, k, v, mask, shape, p, scale = _check_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                                      "scaled_dot_product_attention_closed_form", enable_gqa)
    keep = keep_mask(shape, p, generator) if p > 0 else None
    return ScaledDotProductAttentionClosedForm.apply(q, k, v, mask, scores_shape=shape, is_causal=bool(is_causal),
                                                     scale=scale, keep=keep, keep_scale_=keep_scale(p))


def flash_attention_closed_form(query, key, value, attn_mask=None, is_causal=False, scale=None) -> Tensor:
    """Rung 2 of ``flash_attention``: what it saves and recomputes, without the tiles."""
    q, k, v, mask = check_flash_attention(query, key, value, attn_mask, "flash_attention_closed_form")
    scale = (1.0 / float(np.sqrt(q.shape[-1]))) if scale is None else float(scale)
    return FlashAttentionClosedForm.apply(q, k, v, mask, is_causal=bool(is_causal), scale=scale)


def embedding_closed_form(input, weight, padding_idx=None) -> Tensor:
    """Rung 2 of ``F.embedding`` (same checks)."""
    ids, w, padding_idx = _check_embedding(input, weight, padding_idx, "embedding_closed_form")
    return EmbeddingClosedForm.apply(w, ids=ids, padding_idx=padding_idx)


def linear_closed_form(input, weight, bias=None) -> Tensor:
    """Rung 2 of ``F.linear`` (same checks)."""
    x, w, b = _check_linear(input, weight, bias, "linear_closed_form")
    return LinearClosedForm.apply(x, w, b)


def patch_embed_closed_form(input, weight, bias=None, patch_size=None) -> Tensor:
    """Rung 2 of ``F.patch_embed`` (same checks)."""
    x, w, b, ph, pw = _check_patch_embed(input, weight, bias, patch_size, "patch_embed_closed_form")
    return PatchEmbedClosedForm.apply(x, w, b, ph=ph, pw=pw)


CLOSED_FORMS = {
    "softmax": (SoftmaxClosedForm, softmax_closed_form),
    "log_softmax": (LogSoftmaxClosedForm, log_softmax_closed_form),
    "cross_entropy": (CrossEntropyClosedForm, cross_entropy_closed_form),
    "layer_norm": (LayerNormClosedForm, layer_norm_closed_form),
    "batch_norm": (BatchNormClosedForm, batch_norm_closed_form),
    "gelu": (GeluClosedForm, gelu_closed_form),
    "scaled_dot_product_attention": (ScaledDotProductAttentionClosedForm, scaled_dot_product_attention_closed_form),
    "flash_attention": (FlashAttentionClosedForm, flash_attention_closed_form),
    "embedding": (EmbeddingClosedForm, embedding_closed_form),
    "linear": (LinearClosedForm, linear_closed_form),
    "patch_embed": (PatchEmbedClosedForm, patch_embed_closed_form),
}
"""op name -> (its rung-2 Function, its functional spelling)."""


# Gradients of gradients of the fused ops (``create_graph=True``) go through their closed forms
# (``autograd/engine.py``, ``_backward_via_closed_form``). Named here, not in the fused classes,
# because this module imports theirs.
SoftmaxFn.twice_differentiable_via = SoftmaxClosedForm
LogSoftmaxFn.twice_differentiable_via = LogSoftmaxClosedForm
CrossEntropy.twice_differentiable_via = CrossEntropyClosedForm
LayerNormFn.twice_differentiable_via = LayerNormClosedForm
ScaledDotProductAttention.twice_differentiable_via = ScaledDotProductAttentionClosedForm
EmbeddingFn.twice_differentiable_via = EmbeddingClosedForm
PatchEmbed.twice_differentiable_via = PatchEmbedClosedForm
BatchNorm.twice_differentiable_via = BatchNormClosedForm
_ops_elementwise.GeluFn.twice_differentiable_via = GeluClosedForm
