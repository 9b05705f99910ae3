"""Memory-efficient attention: tiled, with an online softmax (FlashAttention-style).

Naive attention materialises S = QKᵀ·scale and P = softmax(S) — T_q × T_k
numbers per head — and keeps P for the backward: O(T²·heads) memory. Here the
keys are visited in tiles of ``block_k`` columns and the queries in tiles of
``block_q`` rows; a (block_q × block_k) score tile is the largest temporary,
and only the output O and one number per query row, the log-sum-exp
L = log Σ_j exp(S_ij), are saved for the backward: O(T·d) memory.

Forward (online softmax). For one query row, keep a running maximum m, a
running normaliser l = Σ exp(S_j − m) and an unnormalised accumulator
a = Σ exp(S_j − m) v_j. A new tile of scores S_t with maximum m_t updates
    m' = max(m, m_t),   c = exp(m − m'),
    l' = c·l + Σ_t exp(S_t − m'),   a' = c·a + exp(S_t − m') V_t,
which rescales what was accumulated under the old maximum. At the end
O = a / l and L = m + log l.

Backward. The derivation is ``FlashAttentionClosedForm``'s (functional/closed_form.py):
dS = P ∘ (dP − D), with P_ij = exp(S_ij − L_i) recomputed here tile by tile from the saved L.
Each tile's contributions are accumulated; nothing T_q × T_k is ever stored.
FlashAttention (and that closed form) takes D_i = G_i · O_i (equal to Σ_j P_ij dP_ij in
exact arithmetic, no pass over P), but O's rounding is not the P's of dS: where a row
has one dominant key, dP_i − D_i cancels and that mismatch is all that is left (a query that sees one key gets noise
instead of an exact 0; float64 grads 1.2e-10 off torch's on a 2-token Encoder,
float32 up to 2.4e-4). So each query tile visits its key tiles twice: once to sum
D from the P and dP it recomputes, once for dS: one more score and dP product per
tile where a query tile has several key tiles (none for T_k <= block_k; the memory
stays O(T·d)).

Masks follow ``scaled_dot_product_attention``: a bool mask is True where a key
may be attended; a float mask is added to the scores; ``is_causal`` keeps
key j ≤ query i (top-left aligned, as torch). Key tiles that the causal mask
hides entirely are skipped. A query row with every key masked has L = −inf;
its output and gradients are defined as zero.
"""
from __future__ import annotations

import numpy as np

from ..core.function import ArrayFunction


def _mask_tile(attn_mask, qs, qe, ks, ke):
    """The [qs:qe, ks:ke] tile of a mask broadcastable to (..., T_q, T_k)."""
    m = attn_mask
    rows = slice(qs, qe) if m.shape[-2] != 1 else slice(None)
    cols = slice(ks, ke) if m.shape[-1] != 1 else slice(None)
    return m[..., rows, cols]


def _scores(q_t, k_t, scale, attn_mask, is_causal, qs, qe, ks, ke):
    """Scores of one tile, masked positions at −inf (bool/causal) or shifted (float mask)."""
    s = np.matmul(q_t, np.swapaxes(k_t, -1, -2))
    s *= scale
    if attn_mask is not None:
        m = _mask_tile(attn_mask, qs, qe, ks, ke)
        if m.dtype == np.bool_:
            s = np.where(m, s, -np.inf)
        else:
            s = s + m
    if is_causal and ke - 1 > qs:
        keep = np.arange(ks, ke)[None, :] <= np.arange(qs, qe)[:, None]
        s = np.where(keep, s, -np.inf)
    return s


def causal_key_end(n_keys: int, q_end: int, is_causal: bool) -> int:
    """The keys a tile of queries ending at ``q_end`` visits: under the causal mask no query
    before ``q_end`` sees a key at or after it, so those key tiles are skipped (their scores
    would all be -inf). Why: that is about half the tiles of a causal T × T attention;
    (4, 512, 64) float64 causal forward in 128 × 128 tiles: 16.9 -> 10.7 ms (1.6x), one
    thread, medians, 2026-12-02."""
    return min(n_keys, q_end) if is_causal else n_keys


class FlashAttention(ArrayFunction):
    """O = softmax(Q Kᵀ · scale + mask) V computed tile by tile.
    Derivation: ``FlashAttentionClosedForm`` (functional/closed_form.py), the same math untiled —
    what is saved (O and L) and recomputed (P). See the module docstring for what this one adds:
    the online-softmax forward, the tiles (the O(T·d) memory), D summed from P and dP, and
    ``causal_key_end``."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask=None, is_causal=False, scale=None, block_q=128, block_k=128):
        Tq, Tk = q.shape[-2], k.shape[-2]
        scale = (1.0 / np.sqrt(q.shape[-1])) if scale is None else float(scale)
        dtype = q.dtype
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        out = np.zeros(batch + (Tq, v.shape[-1]), dtype=dtype)
        # L = m + log l is kept in float64 (one number per query): every P of the backward is
        # exp(s - L), so an error in L is a relative error of all of them (float32 L: ~8 ulps
        # for L ~ 4), which the row term D and dP - D then cancel down to (float32, 1 query and
        # 2 keys: 7x torch's error in dL/dq, test_flash_matches_torch_sdpa seed 201)
        lse = np.full(batch + (Tq,), -np.inf, dtype=np.float64)
        for qs in range(0, Tq, block_q):
            qe = min(qs + block_q, Tq)
            q_t = q[..., qs:qe, :]
            m = np.full(batch + (qe - qs, 1), -np.inf, dtype=dtype)
            l = np.zeros(batch + (qe - qs, 1), dtype=np.float64)
            acc = np.zeros(batch + (qe - qs, v.shape[-1]), dtype=dtype)
            k_end = causal_key_end(Tk, qe, is_causal)
            for ks in range(0, k_end, block_k):
                ke = min(ks + block_k, k_end)
                s = _scores(q_t, k[..., ks:ke, :], scale, attn_mask, is_causal, qs, qe, ks, ke)
                m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
                # rows still without any visible key keep m = −inf; use 0 there to avoid inf − inf
                m_safe = np.where(np.isneginf(m_new), 0, m_new)
                p = np.exp(s - m_safe)
                c = np.exp(m - m_safe)
                l = c * l + p.sum(axis=-1, keepdims=True, dtype=np.float64)
                acc = c * acc + np.matmul(p, v[..., ks:ke, :])
                m = m_new
            seen = l > 0
            out[..., qs:qe, :] = np.where(seen, acc / np.where(seen, l, 1).astype(dtype), 0)
            with np.errstate(divide="ignore"):
                lse[..., qs:qe] = (np.where(np.isneginf(m), 0, m) + np.log(l))[..., 0]
        ctx.save_for_backward(q, k, v, out, lse, attn_mask)
        ctx.is_causal, ctx.scale, ctx.block_q, ctx.block_k = is_causal, scale, block_q, block_k
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, out, lse, attn_mask = ctx.saved_tensors
        is_causal, scale, block_q, block_k = ctx.is_causal, ctx.scale, ctx.block_q, ctx.block_k
        Tq, Tk = q.shape[-2], k.shape[-2]
        batch = out.shape[:-2]
        dq = np.zeros(batch + q.shape[-2:], dtype=q.dtype)
        dk = np.zeros(batch + k.shape[-2:], dtype=k.dtype)
        dv = np.zeros(batch + v.shape[-2:], dtype=v.dtype)
        lse_safe = np.where(np.isneginf(lse), np.inf, lse)[..., None]  # fully masked rows: P = 0
        for qs in range(0, Tq, block_q):
            qe = min(qs + block_q, Tq)
            q_t, g_t, L_t = q[..., qs:qe, :], g[..., qs:qe, :], lse_safe[..., qs:qe, :]
            k_end = causal_key_end(Tk, qe, is_causal)
            tiles = [(ks, min(ks + block_k, k_end)) for ks in range(0, k_end, block_k)]

            def p_and_dp(ks, ke):
                s = _scores(q_t, k[..., ks:ke, :], scale, attn_mask, is_causal, qs, qe, ks, ke)
                p = np.exp(s - L_t).astype(s.dtype, copy=False)   # L_t float64: rounded once
                return p, np.matmul(g_t, np.swapaxes(v[..., ks:ke, :], -1, -2))
            D_t = 0   # D_i = Σ_j P_ij dP_ij from the P used below (see the module docstring)
            for ks, ke in tiles:
                p, dp = p_and_dp(ks, ke)
                D_t = D_t + np.sum(p * dp, axis=-1, keepdims=True)
            kept = (p, dp) if len(tiles) == 1 else None   # one key tile: nothing to recompute
            for ks, ke in tiles:
                k_t = k[..., ks:ke, :]
                p, dp = kept or p_and_dp(ks, ke)
                dv[..., ks:ke, :] += np.matmul(np.swapaxes(p, -1, -2), g_t)
                ds = p * (dp - D_t)
                ds *= scale
                dq[..., qs:qe, :] += np.matmul(ds, k_t)
                dk[..., ks:ke, :] += np.matmul(np.swapaxes(ds, -1, -2), q_t)
        return dq, dk, dv, None


def check_flash_attention(query, key, value, attn_mask, op):
    """``(query, key, value, mask)`` after the checks of :func:`flash_attention`: shapes that
    agree and broadcast; the mask as an array (bool, or float in the query's dtype) with at
    least the two (T_q, T_k) axes the tiles slice."""
    from ..tensor import Tensor
    query, key, value = (t if isinstance(t, Tensor) else Tensor(t) for t in (query, key, value))
    qs, ks, vs = query.shape, key.shape, value.shape
    if len(qs) < 2 or len(ks) < 2 or len(vs) < 2:
        raise ValueError(f"{op}: query, key and value need at least 2 dims, got {qs}, {ks}, {vs}")
    if qs[-1] != ks[-1]:
        raise ValueError(f"{op}: query feature size {qs[-1]} (shape {qs}) != key feature size "
                         f"{ks[-1]} (shape {ks})")
    if ks[-2] != vs[-2]:
        raise ValueError(f"{op}: key length {ks[-2]} (shape {ks}) != value length {vs[-2]} (shape {vs})")
    try:
        batch = np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2])
    except ValueError:
        raise ValueError(f"{op}: batch dims of query {qs}, key {ks} and value {vs} do not broadcast") from None
    mask = None
    if attn_mask is not None:
        mask = attn_mask._data if isinstance(attn_mask, Tensor) else np.asarray(attn_mask)
        try:
            np.broadcast_shapes(mask.shape, batch + (qs[-2], ks[-2]))
        except ValueError:
            raise ValueError(f"{op}: attn_mask of shape {tuple(mask.shape)} does not broadcast to the "
                             f"scores' shape {batch + (qs[-2], ks[-2])}") from None
        if mask.dtype != np.bool_:
            mask = mask.astype(query.dtype, copy=False)
        if mask.ndim < 2:  # e.g. a (T_k,) key mask: give it the (T_q, T_k) axes the tiles slice
            mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
    return query, key, value, mask


def flash_attention(query, key, value, attn_mask=None, is_causal=False, scale=None,
                    block_q: int = 128, block_k: int = 128):
    """Tiled attention with O(T·d) extra memory; same semantics as
    ``scaled_dot_product_attention`` (no dropout).

    query (..., T_q, d), key (..., T_k, d), value (..., T_k, d_v); batch dims broadcast.
    attn_mask: bool (True = may attend) or float (added), broadcastable to (..., T_q, T_k).
    """
    if block_q <= 0 or block_k <= 0:
        raise ValueError(f"flash_attention: block sizes must be positive, got {block_q}, {block_k}")
    query, key, value, mask = check_flash_attention(query, key, value, attn_mask, "flash_attention")
    return FlashAttention.apply(query, key, value, mask, is_causal=bool(is_causal), scale=scale,
                                block_q=int(block_q), block_k=int(block_k))
