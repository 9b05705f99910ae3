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
rungs in that order and checks them live. Their functional spellings (``rungs.py``) validate
the arguments with the fused op's own checks, so the three rungs accept and refuse the same calls.
Each fused class names its closed form (``twice_differentiable_via``): the fast form imports
this module, which imports no fast form. GELU, a primitive, keeps its closed form beside it
(``GeluClosedForm`` in ``ops/elementwise.py``).

Fully masked attention rows (every key forbidden) follow ``scaled_dot_product_attention``:
their weights are 0, so is their output row, and no gradient flows through them.

Gradients of gradients. Every forward and backward here is written with NumPy calls that have a
Tensor twin, nothing written in place, so each also runs on Tensors (``autograd/dispatch.py``).
That is how a fused op is differentiated twice: with ``create_graph=True`` its closed form's
forward runs again on the fused node's inputs, recorded, and then its backward, on Tensors
(``core/engine.py``, ``_backward_via_closed_form``): the derivation below is the one a
second derivative comes from. A row maximum subtracted for stability is taken as a constant
(``_row_max``): the result does not depend on it.
"""
from __future__ import annotations

import functools

import numpy as np

from ..core.function import ArrayFunction
from ..core.tensor import Tensor
from ..ops.elementwise import GeluClosedForm   # noqa: F401  (GELU is a primitive: its closed form sits beside it)


def _row_max(x, axis):
    """max along ``axis`` (keepdims; -inf for an empty or all -inf slice) as a constant array: the
    stabilising shift, on which softmax does not depend, so no derivative flows through it."""
    return np.max(x._data if isinstance(x, Tensor) else x, axis=axis, keepdims=True, initial=-np.inf)


# ============================================================================ softmax family

class SoftmaxClosedForm(ArrayFunction):
    """y = softmax(x) along ``dim``:  y_i = e^{x_i - m} / Σ_k e^{x_k - m},  m = max_k x_k.
    Subtracting m changes nothing (the factor e^{-m} cancels between numerator and
    denominator) but keeps every exponent <= 0: logits of ±1000 give exact probabilities
    instead of inf/inf.

    Backward.  ∂y_i/∂x_j = y_i (δ_ij - y_j), so
        dL/dx_j = Σ_i g_i y_i (δ_ij - y_j) = y_j (g_j - Σ_i g_i y_i):   dx = y ∘ (g - ⟨g, y⟩),
    the inner product taken along ``dim``. Only the output is needed: saved, y.
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
    """y = log softmax(x) along ``dim``:  y_i = x_i - logsumexp(x) = s_i - log Σ_k e^{s_k},
    s = x - m, m = max_k x_k  (the log-sum-exp trick: no exp overflows, and the log never
    sees 0 because the largest term is e^0 = 1).

    Backward.  ∂y_i/∂x_j = δ_ij - softmax(x)_j, so
        dL/dx_j = g_j - softmax(x)_j Σ_i g_i:   dx = g - e^y Σ g  (softmax = e^y).
    Saved: y, exponentiated again in the backward rather than keeping a second array
    of the input's size.
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
    (0 at ignored positions; built by ``loss.target_distribution``); log p = s - log Σ_c e^{s_c}
    with s = z - max z (stable). Written out,
        ℓ = -(1-ε) w_t log p_t - (ε/C) Σ_c w_c log p_c:
    torch's nll term plus its smoothing term. 'mean' divides Σ ℓ by the total weight of the
    kept targets, Σ w_t (their count when unweighted).

    Backward.  ∂ log p_k / ∂z_c = δ_kc - p_c, so
        ∂ℓ/∂z_c = -Σ_k q_k (δ_kc - p_c) = p_c Σ_k q_k - q_c = p_c A - q_c,
        A = Σ_k q_k = (1-ε) w_t + (ε/C) Σ_k w_k      (unweighted: A = 1, the familiar p - q),
    times r: g_i per position for 'none', g for 'sum', g / total weight for 'mean', and 0 at
    ignored positions (all ignored: 0, as torch). Saved: p and q.
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

    Backward. Write ĝ = g ∘ γ (the gradient reaching x̂). Differentiating x̂_i = (x_i - μ) ρ
    with ∂μ/∂x_j = 1/D and ∂ρ/∂x_j = -ρ³ (x_j - μ)/D = -ρ² x̂_j / D:
        ∂x̂_i/∂x_j = ρ (δ_ij - 1/D) - x̂_i ρ x̂_j / D,
    so the three-term closed form
        dL/dx = ρ · (ĝ - mean(ĝ) - x̂ ∘ mean(ĝ ∘ x̂))      (means over the row),
        dL/dγ = Σ_rows g ∘ x̂,   dL/dβ = Σ_rows g.
    A constant row has σ² = 0: x̂ = 0, y = β, and dL/dx = ρ (ĝ - mean ĝ) with ρ = 1/√eps —
    finite, as in torch. Saved: x̂, ρ and γ.
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
    """Batch norm: y = γ x̂ + β per channel c (axis 1), x̂ = (x - μ) r, r = 1/√(σ² + eps).

    Training mode: μ and σ² are the batch statistics of channel c over its m values (the
    batch and length axes: m = N, or N·L), σ² the biased variance (1/m) Σ (x_i - μ)² —
    LayerNorm's closed form with the statistics taken per channel instead of per row.

    Backward (sums over the m values of one channel; g = dL/dy):
        dL/dβ = Σ_i g_i,   dL/dγ = Σ_i g_i x̂_i.
    μ and σ² depend on every x_j of the channel. With d_i = dL/dx̂_i = γ g_i,
        ∂μ/∂x_j = 1/m,   ∂σ²/∂x_j = (2/m)(x_j - μ),   ∂r/∂x_j = -½ r³ ∂σ²/∂x_j = -(r³/m)(x_j - μ),
        ∂x̂_i/∂x_j = r (δ_ij - 1/m) + (x_i - μ) ∂r/∂x_j = (r/m)(m δ_ij - 1 - x̂_i x̂_j),
    hence
        dL/dx_j = Σ_i d_i ∂x̂_i/∂x_j = (r/m)(m d_j - Σ_i d_i - x̂_j Σ_i d_i x̂_i)
                = r · (d - mean(d) - x̂ ∘ mean(d ∘ x̂))_j      (LayerNorm's three terms).
    Saved: x̂, r and γ. No running statistics: ``F.batch_norm`` updates those.

    Eval mode (``running=(μ, σ²)``, the running estimates as given constants, as
    ``nn.BatchNorm`` uses them): x̂ = (x - μ) r with μ and r constants, so dL/dx = r d = γ r g.
    (Only ``BatchNorm``'s gradients of gradients use it.)
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


# ============================================================================ attention

@functools.lru_cache(maxsize=32)
def _causal_future(n_queries: int, n_keys: int) -> np.ndarray:
    """(L, S) bool, True above the top-left-aligned diagonal (key j > query i): what is_causal forbids.
    Why cached (read-only): a causal model asks for the same few shapes every step; (64, 64):
    4 µs for ``~np.tri`` against 0.1 µs from the cache (one thread, medians, 2026-12-02)."""
    future = ~np.tri(n_queries, n_keys, dtype=bool)
    future.flags.writeable = False
    return future



def attention_scores(q, k, attn_mask, is_causal, scale, shape):
    """S = scale · Q Kᵀ of ``shape``, -inf where a bool mask is False or the causal mask
    forbids (key j > query i), plus a float mask."""
    s = np.broadcast_to(scale * (q @ np.swapaxes(k, -1, -2)), shape)
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == np.bool_ else s + attn_mask
    return np.where(_causal_future(*shape[-2:]), -np.inf, s) if is_causal else s


class ScaledDotProductAttentionClosedForm(ArrayFunction):
    """O = P̃ V,  P̃ = P ∘ M / (1 - p) (dropout mask M; P̃ = P without),  P = softmax_rows(S),
    S = scale · Q Kᵀ + mask, -inf where forbidden (``attention_scores``); a fully masked row
    has P = 0.

    Backward, G = dL/dO. The products give
        dV = P̃ᵀ G,   dP̃ = G Vᵀ,   dP = dP̃ ∘ M / (1 - p);
    softmax's backward row by row (``SoftmaxClosedForm``):
        dS = P ∘ (dP - D),   D = rowsum(dP ∘ P);
    and from S = scale · Q Kᵀ + mask,
        dQ = scale · dS K,   dK = scale · dSᵀ Q,   d(mask) = dS (a float mask).
    Masked entries have P = 0, hence dS = 0: no gradient reaches a forbidden key; fully masked
    rows (P = 0 by definition) get dS = 0 likewise.   Saved: Q, K, V, P, P̃.
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
    """y[..., :] = W[ids[...], :]  (a row lookup; W is (V, D)).

    Backward. Each output row is a copy of one table row, so table row v receives the sum of
    the output gradients of every position that looked it up — repeated ids accumulate:
        dL/dW[v] = Σ_{n : ids_n = v} g_n   (a scatter-add; the row ``padding_idx`` gets none,
    as in torch). As a product: with M the (N, V) one-hot matrix of the ids (M_nv = 1 where
    ids_n = v; its column ``padding_idx`` zeroed), y = M W and dL/dW = Mᵀ G (G: the N
    gradient rows); dL/dW is linear in G. Saved: the ids."""

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
    """y = x Wᵀ + b with x (..., in), W (out, in), b (out,).  Backward (y_j = Σ_i x_i W_ji + b_j):
        dL/dx = g W,   dL/dW = Σ_rows gᵀ x,   dL/db = Σ_rows g   (rows: every leading index).
    Saved: x (for dW) and W (for dx)."""

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
    """ViT patch projection = Conv2d(kernel = stride = P)(x).flatten(2).transpose(1, 2): with
    stride = kernel size the windows tile the image without overlap, so cut (B, C, H, W) into
    the (B, N, C·Ph·Pw) matrix of flattened patches (``(c, i, j)`` order, a Conv2d weight's),
    then y = patches W_flatᵀ + b, shape (B, N, D).  Backward is Linear's, with dL/dpatches
    folded back into the image (each pixel lies in exactly one patch):
        dL/dx = fold(g W_flat),   dL/dW = Σ_{b,n} gᵀ patches (reshaped to (D, C, P, P)),
        dL/db = Σ_{b,n} g.
    Saved: the patches (the size of x, for dW) and W_flat (for dx)."""

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
