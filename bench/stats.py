"""Small numeric helpers shared by the benchmark: relative error, timing summaries, FLOP formulas.

Nothing here imports torch or tinygrad_tx, so every process (the ``ours`` worker,
the ``torch`` worker, the accuracy process, the parent) can use it.
"""
from __future__ import annotations

import statistics

import numpy as np


def rel_err(ours, ref) -> float:
    """max |ours − ref| / max |ref| over the finite positions of ``ref``.

    Both arrays are compared in float64. Positions where ``ref`` is ±inf or nan
    must hold the same value in ``ours`` (else the error is inf). When ``ref`` is
    all zero the absolute difference is returned. This is the measure the
    parity tests use, so benchmark and tests quote comparable numbers.
    """
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        raise ValueError(f"rel_err: shape mismatch, ours {ours.shape} vs reference {ref.shape}")
    finite = np.isfinite(ref)
    if not np.array_equal(np.isfinite(ours), finite) or not np.array_equal(ours[~finite], ref[~finite]):
        return float("inf")
    if not finite.any():
        return 0.0
    diff = np.max(np.abs(ours[finite] - ref[finite]), initial=0.0)
    scale = np.max(np.abs(ref[finite]), initial=0.0)
    return float(diff) if scale == 0.0 else float(diff / scale)


def summarize(times) -> dict:
    """Median, min, max and count of a list of per-call times (seconds)."""
    times = [float(t) for t in times]
    if not times:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "n": len(times)}


def ratio(a, b):
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or b == 0:
        return None
    return a / b


# --------------------------------------------------------------------------- FLOP formulas
# Convention: one multiply-add = 2 FLOPs (so an (m×k)·(k×n) product costs 2mkn). A backward
# through a matrix product costs two products (dA = G Bᵀ, dB = Aᵀ G), so forward+backward of
# a matmul-dominated network is 3× its forward.

def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    return 2 * tokens * d_in * d_out


def attention_core_flops(batch: int, heads: int, t_q: int, t_k: int, d_head: int) -> int:
    """S = Q Kᵀ and Y = P V: two products of 2·T_q·T_k·d_head per head (the mask is not exploited)."""
    return 2 * 2 * batch * heads * t_q * t_k * d_head


def tutorial_attention_macs(T: int, d: int) -> int:
    """The tutorial's section-11 count for one self-attention layer, 4Td² + 2T²d.

    It counts multiply-adds: 3Td² for the Q/K/V projections, T²d for QKᵀ, T²d
    for AV and Td² for the output projection (softmax's O(T²) is left out).
    """
    return 4 * T * d * d + 2 * T * T * d


def gpt_train_flops(batch: int, T: int, d_model: int, n_layers: int, vocab: int) -> int:
    """Analytic FLOPs of one GPT training step (forward + backward; AdamW's O(params) ignored).

    6 · tokens · N_matmul + 12 · n_layers · batch · T² · d_model, where
    N_matmul = n_layers · 12 d² + d·vocab is the number of weights used in matrix
    products (per block: 3d² for Q/K/V, d² for the output projection, 8d² for the
    4× MLP; plus the tied lm_head). The "6" is 2 FLOPs per multiply-add times 3
    (forward, and two products in the backward); the attention term is the two
    T×T products per layer (4·B·T²·d forward), again times 3. Embedding lookups,
    LayerNorm, GELU, softmax and biases are elementwise and left out.
    """
    tokens = batch * T
    n_matmul = n_layers * 12 * d_model * d_model + d_model * vocab
    return 6 * tokens * n_matmul + 12 * n_layers * batch * T * T * d_model


def vit_train_flops(batch: int, n_tokens: int, patch_dim: int, d_model: int, n_layers: int,
                    n_classes: int) -> int:
    """Same convention as :func:`gpt_train_flops` for the ViT: patch projection (patch_dim·d per
    patch), the blocks on N+1 tokens, and the classifier on the [CLS] token."""
    n_patches = n_tokens - 1
    block = 6 * batch * n_tokens * n_layers * 12 * d_model * d_model
    attn = 12 * n_layers * batch * n_tokens * n_tokens * d_model
    return block + attn + 6 * batch * n_patches * patch_dim * d_model + 6 * batch * d_model * n_classes
