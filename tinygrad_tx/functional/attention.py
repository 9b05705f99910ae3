"""Scaled dot-product attention: a fused Function with its own backward, and the composite.

    out = dropout(softmax(Q Kᵀ · scale + mask)) V

Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev);
the leading (batch, head) dimensions broadcast. L and S may differ
(cross-attention: queries from a decoder, keys and values from an encoder).

Masks follow torch:
* a **bool** ``attn_mask`` marks with True the keys a query may attend to;
  False entries get score -inf;
* a **float** ``attn_mask`` is added to the scores (use -inf to forbid);
* ``is_causal=True`` lets query i attend to keys j <= i: the lower triangle
  of the (L, S) score matrix aligned at its **top-left** corner (so when L > S
  the last queries see every key, and when L < S the later keys are unseen).

Fully masked rows. A query with no key to attend to has scores all -inf and
softmax 0/0. We define its attention weights as 0: its output row is 0 and no
gradient flows through it (to q, k, v or the mask). This matches torch 2.5+
(``F.scaled_dot_product_attention`` uses a "safe softmax" that returns 0 for
such rows), whereas a hand-written ``softmax(scores)`` gives nan.
"""
from __future__ import annotations

import functools
import math
import numbers

import numpy as np

from .. import buffers, kernels
from ..core.function import ArrayFunction
from ..tensor import Tensor, where
from ._util import as_tensor, check_float, check_probability, keep_mask, keep_scale, row_sums
from .closed_form import ScaledDotProductAttentionClosedForm, _causal_future
from .softmax import softmax_composite


def _key_sums(a: np.ndarray) -> np.ndarray:
    """Σ over the keys (the last axis) of a C-contiguous (..., L, S) array, as (..., L, 1): the
    rows summed by BLAS (``row_sums``; plainly ``np.sum(a, axis=-1, keepdims=True)``). Why: a short
    row costs ``np.sum`` ~17 ns of overhead; (32, 4, 16, 16) float32 34.7 -> 4.7 µs, (16, 8, 128, 128)
    523 -> 305 µs (one thread, medians, 2026-12-03)."""
    return row_sums(a.reshape(math.prod(a.shape[:-1]), a.shape[-1])).reshape(a.shape[:-1] + (1,))


class ScaledDotProductAttention(ArrayFunction):
    """O = dropout(softmax(scale · Q Kᵀ + mask)) V, fused.
    Derivation: ``ScaledDotProductAttentionClosedForm`` (functional/closed_form.py).

    D = rowsum(dP ∘ P) is the direct row sum, not FlashAttention's D_i = G_i · O_i
    (``FlashAttentionClosedForm``), which needs no (L, S) product. We tried it: in
    float32 the rounding of O makes dQ, dK up to 12x less accurate than torch's
    on ill-conditioned rows (one dominant key), against at most ~4x for the
    direct row sum, whose cost is small next to the four matrix products.
    Saved: Q, K, V, P and the dropout mask (if any); P̃ is formed again in the backward.
    This one works in place on the score array, sums over the keys with BLAS (``_key_sums``)
    and caches the causal mask (``_causal_future``). Gradients of gradients (``create_graph=True``)
    go through the plain form (for a float mask that requires grad, the forward keeps it too).
    """

    twice_differentiable_via = ScaledDotProductAttentionClosedForm   # gradients of gradients go through it

    @staticmethod
    def closed_form_call(ctx, q, k, v, attn_mask):
        return (q, k, v, attn_mask), ctx.closed_form_kwargs

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, *, scores_shape, is_causal, scale, keep, keep_scale_):
        scores = buffers.matmul(q, np.swapaxes(k, -1, -2))   # q kᵀ, into a pooled array
        if scores.shape != scores_shape:       # value has more batch dims than q and k
            scores = np.broadcast_to(scores, scores_shape).copy()
        scores *= scale
        if attn_mask is not None:
            if attn_mask.dtype == np.bool_:
                np.copyto(scores, -np.inf, where=~attn_mask)
            else:
                scores += attn_mask
        if is_causal:
            np.copyto(scores, -np.inf, where=_causal_future(*scores_shape[-2:]))
        # softmax along the keys; a row whose max is -inf is fully masked: shift it by 0
        # instead (so exp gives exact zeros, not nan) and divide its zero sum by 1
        if kernels.attention_softmax_(scores):            # the same, one C pass per row
            p = scores
        else:
            row_max = np.max(scores, axis=-1, keepdims=True, initial=-np.inf)   # no keys: -inf
            dead = row_max == -np.inf
            has_dead = bool(dead.any())
            if has_dead:
                row_max[dead] = 0
            scores -= row_max
            p = np.exp(scores, out=scores)
            denom = _key_sums(p)
            if has_dead:
                denom[dead] = 1
            p /= denom
        if keep is not None:
            p_used = p * keep
            p_used *= keep_scale_
        else:
            p_used = p
        out = np.matmul(p_used, v)
        ctx.save_for_backward(q, k, v, p, keep, attn_mask if ctx.needs_input_grad[3] else None)
        ctx.scale, ctx.keep_scale = scale, keep_scale_
        ctx.closed_form_kwargs = dict(scores_shape=scores_shape, is_causal=is_causal, scale=scale, keep=keep,
                                      keep_scale_=keep_scale_)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, p, keep, _ = ctx.saved_tensors
        nq, nk, nv, nm = ctx.needs_input_grad[:4]
        dq = dk = dv = None
        if nv:
            p_used = p
            if keep is not None:
                p_used = p * keep
                p_used *= ctx.keep_scale
            dv = np.matmul(np.swapaxes(p_used, -1, -2), g)
        if nq or nk or nm:
            ds = np.matmul(g, np.swapaxes(v, -1, -2))           # dP̃
            if keep is not None:
                ds *= keep
                ds *= ctx.keep_scale                             # dP
            if not kernels.attention_softmax_backward_(ds, p):  # (dP - D) ∘ P in one C pass
                ds -= _key_sums(np.multiply(ds, p))              # dP - D
                ds *= p                                          # dS
            if nq:
                dq = np.matmul(ds, k)
                dq *= ctx.scale
            if nk:
                dk = np.matmul(np.swapaxes(ds, -1, -2), q)
                dk *= ctx.scale
        return dq, dk, dv, (ds if nm else None)


def _repeat_heads(t: Tensor, repeats: int) -> Tensor:
    """(..., H, S, E) -> (..., H·repeats, S, E), each head repeated ``repeats`` times in a row
    (torch's ``repeat_interleave(repeats, dim=-3)``): an expand and a reshape, so the
    backward sums the gradients of each group of query heads into the head they share."""
    if repeats == 1:
        return t
    *lead, h, s, e = t.shape
    return t.unsqueeze(-3).expand(*lead, h, repeats, s, e).reshape(*lead, h * repeats, s, e)


def _group_query_heads(q: Tensor, k: Tensor, v: Tensor, op: str):
    """enable_gqa: key and value with fewer heads (dim -3) than the query, each shared by
    a group of query heads (grouped-query attention), repeated to the query's head count."""
    for name, t in (("query", q), ("key", k), ("value", v)):
        if t.ndim < 3:
            raise ValueError(f"{op}: enable_gqa=True needs a heads dimension (..., heads, length, "
                             f"features); {name} has shape {tuple(t.shape)}")
    hq = q.shape[-3]
    for name, t in (("key", k), ("value", v)):
        if hq % t.shape[-3]:
            raise ValueError(f"{op}: enable_gqa=True: the number of heads in {name} ({t.shape[-3]}, "
                             f"shape {tuple(t.shape)}) must divide the number of query heads ({hq}, shape {tuple(q.shape)})")
    return _repeat_heads(k, hq // k.shape[-3]), _repeat_heads(v, hq // v.shape[-3])


def _check(query, key, value, attn_mask, dropout_p, is_causal, scale, op, enable_gqa=False):
    q = as_tensor(query, op, "query")
    k = as_tensor(key, op, "key")
    v = as_tensor(value, op, "value")
    dtype = check_float(op, query=q, key=k, value=v)
    if not isinstance(enable_gqa, bool):
        raise TypeError(f"{op}: enable_gqa must be a bool, got {enable_gqa!r}")
    if enable_gqa:
        k, v = _group_query_heads(q, k, v, op)
    qs, ks, vs = q._data.shape, k._data.shape, v._data.shape   # plain tuples: this runs at every call
    for name, shape in (("query", qs), ("key", ks), ("value", vs)):
        if len(shape) < 2:
            raise ValueError(f"{op}: {name} must have at least 2 dimensions (..., length, features), "
                             f"got shape {shape}")
    if qs[-1] != ks[-1]:
        raise ValueError(f"{op}: query features E={qs[-1]} (shape {qs}) must equal key "
                         f"features {ks[-1]} (shape {ks})")
    if ks[-2] != vs[-2]:
        raise ValueError(f"{op}: key has S={ks[-2]} positions (shape {ks}) but value has "
                         f"{vs[-2]} (shape {vs})")
    try:
        batch = np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dimensions of query {qs}, key {ks} and value {vs} "
                         f"do not broadcast") from None
    scores_shape = batch + (qs[-2], ks[-2])
    mask = None
    if attn_mask is not None:
        if is_causal:
            raise ValueError(f"{op}: pass either attn_mask or is_causal=True, not both "
                             f"(fold the causal mask into attn_mask)")
        mask = attn_mask if isinstance(attn_mask, Tensor) else Tensor(np.asarray(attn_mask))
        if mask.dtype == np.bool_:
            if mask.requires_grad:
                raise TypeError(f"{op}: a bool attn_mask cannot require grad")
        elif mask.dtype.kind == "f":
            if mask.dtype != dtype:
                raise TypeError(f"{op}: float attn_mask has dtype {mask._data.dtype} but query has {dtype}")
        else:
            raise TypeError(f"{op}: attn_mask must be bool (True = attend) or float (added to the "
                            f"scores), got dtype {mask._data.dtype}")
        try:
            ok = np.broadcast_shapes(mask.shape, scores_shape) == scores_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"{op}: attn_mask of shape {tuple(mask.shape)} does not broadcast to the attention "
                             f"scores' shape {scores_shape} (batch..., L={q.shape[-2]}, S={k.shape[-2]})")
    p = check_probability(op, "dropout_p", dropout_p)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)):
        raise TypeError(f"{op}: scale must be a float or None, got {scale!r}")
    scale = 1.0 / float(np.sqrt(qs[-1])) if scale is None else float(scale)
    return q, k, v, mask, scores_shape, p, scale


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale=None, enable_gqa: bool = False,
                                 generator=None) -> Tensor:
    """softmax(Q Kᵀ · scale + mask) V with torch's semantics
    (``torch.nn.functional.scaled_dot_product_attention``; see the module docstring for
    masks and fully masked rows). ``scale`` defaults to 1/√E. ``enable_gqa=True`` lets key
    and value have fewer heads (dim -3) than the query, each shared by a group of query heads.
    Attention over zero keys (S = 0) gives zeros, as in torch. Dropout with probability
    ``dropout_p`` is applied to the attention weights whenever ``dropout_p > 0`` (torch's
    functional form has no training flag); ``generator`` (a ``np.random.Generator``,
    default the global one) draws its mask.
    """
    q, k, v, mask, shape, p, scale = _check(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                            "scaled_dot_product_attention", enable_gqa)
    keep = keep_mask(shape, p, generator) if p > 0 else None
    return ScaledDotProductAttention.apply(q, k, v, mask, scores_shape=shape, is_causal=bool(is_causal),
                                           scale=scale, keep=keep, keep_scale_=keep_scale(p))


def scaled_dot_product_attention_composite(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                           is_causal: bool = False, scale=None, enable_gqa: bool = False,
                                           generator=None) -> Tensor:
    """Attention from primitives, as the tutorial writes it:
    scores = Q Kᵀ · scale, masked_fill(-inf) / + mask, softmax, dropout, @ V.

    Fully masked rows: their scores are replaced by zeros before the softmax
    (a harmless uniform row instead of 0/0) and their weights by zeros after
    it, so the output row is 0 and ``where`` routes them no gradient.
    """
    q, k, v, mask, shape, p, scale = _check(query, key, value, attn_mask, dropout_p, is_causal, scale,
                                            "scaled_dot_product_attention_composite", enable_gqa)
    scores = (q @ k.mT) * scale
    if scores.shape != shape:
        scores = scores.expand(*shape)
    allowed = np.ones(shape, dtype=bool)
    if mask is not None:
        if mask.dtype == np.bool_:
            scores = scores.masked_fill(~mask._data, float("-inf"))
            allowed &= mask._data
        else:
            scores = scores + mask
            allowed &= mask._data != -np.inf
    if is_causal:
        future = _causal_future(*shape[-2:])
        scores = scores.masked_fill(future, float("-inf"))
        allowed &= ~future
    if shape[-1] == 0:                      # no keys: every row is fully masked, the output 0
        return (scores * 0.0) @ v
    dead = ~allowed.any(axis=-1, keepdims=True)
    if dead.any():
        scores = where(dead, 0.0, scores)
    weights = softmax_composite(scores, -1)
    if dead.any():
        weights = where(dead, 0.0, weights)
    if p > 0:
        weights = weights * Tensor((keep_mask(shape, p, generator) * keep_scale(p)).astype(weights.dtype))
    return weights @ v
