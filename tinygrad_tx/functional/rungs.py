"""The three rungs of each fused op, by name: the composite (``F.softmax_composite``, in the op's
own module), the closed form (``F.softmax_closed_form``: the plain Function of
``closed_form.py`` behind the op's own argument checks) and the fused op (``F.softmax``).

``CLOSED_FORMS`` maps an op's name to its rung-2 Function and functional spelling; ``explain``,
the exercises and the tests read it. This module imports both sides; the fused ops import only
their closed forms (``twice_differentiable_via``), and ``closed_form.py`` imports neither.
"""
from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from ..ops.flash_attention import check_flash_attention
from ._util import as_tensor, check_float, keep_mask, keep_scale
from .attention import _check as _check_attention
from .batch_norm import check_batch_norm
from .closed_form import (BatchNormClosedForm, CrossEntropyClosedForm, EmbeddingClosedForm, FlashAttentionClosedForm,
                          GeluClosedForm, LayerNormClosedForm, LinearClosedForm, LogSoftmaxClosedForm,
                          PatchEmbedClosedForm, ScaledDotProductAttentionClosedForm, SoftmaxClosedForm)
from .embedding import _check_embedding
from .linear import _check_linear, _check_patch_embed
from .loss import _check as _check_cross_entropy
from .loss import target_distribution
from .normalization import _check as _check_layer_norm
from .softmax import _prepare


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
