"""``MultiheadAttention``: torch's ``nn.MultiheadAttention``, parameter names and semantics included.

What forward computes (torch's ``F.multi_head_attention_forward``), for query (L, N, E) and
key/value (S, N, kdim/vdim) — or (N, L, E) with ``batch_first=True``, or unbatched (L, E):

1. projections ``q = query W_qᵀ + b_q``, ``k = key W_kᵀ + b_k``, ``v = value W_vᵀ + b_v``, where
   W_q, W_k, W_v are the three row blocks of ``in_proj_weight`` (3E × E) when kdim = vdim = E,
   else the separate ``q_proj_weight``, ``k_proj_weight`` (E × kdim), ``v_proj_weight`` (E × vdim);
2. optionally (``add_bias_kv``) one more key/value row, ``bias_k``/``bias_v``, and
   (``add_zero_attn``) one all-zero key/value row;
3. heads: each of q, k, v is split into H heads of size d = E/H → (N·H, L or S, d);
4. scores ``A = (q · sqrt(1/d)) kᵀ + M`` (N·H, L, S), where M adds ``attn_mask`` and
   ``key_padding_mask``: a **bool** mask is True where attention is **not** allowed (−inf added;
   the opposite of ``scaled_dot_product_attention``'s bool mask), a float mask is added;
5. ``P = softmax(A)`` over the keys, then dropout on P in training mode (probability ``dropout``);
6. ``out = concat_heads(P v) W_oᵀ + b_o`` with ``out_proj`` (a Linear).

Returns ``(out, weights)``: weights are P (N, H, L, S), averaged over heads to (N, L, S) when
``average_attn_weights``; None when ``need_weights=False``. A query row whose keys are all masked
gives nan, as torch's. ``is_causal=True`` is torch's *hint* that ``attn_mask`` is the causal mask
(it is still required); with ``need_weights=False`` and no ``key_padding_mask`` the causal mask is
used in its place, as torch does.

Every step is a differentiable op of the engine (linear, reshape, transpose, matmul, softmax, cat,
dropout), whose backwards are written by hand; torch's gradient of the module is exactly the
gradient of this composite, so no fused Function is needed.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..core.device import check as _check_device
from ..errors import InvalidArgumentAssertion
from ..functional._util import check_probability
from ..tensor import Tensor, cat
from . import init
from .layers import Linear, _param_dtype
from .module import Module
from .parameter import Parameter


def _functional():
    from .. import functional as F
    return F


class NonDynamicallyQuantizableLinear(Linear):
    """``out_proj``'s class in torch (a plain Linear; the name only shows in the repr)."""


def _positive(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"MultiheadAttention: {name} must be an int, got {value!r}")
    return int(value)


def _mask_array(mask, name: str, dtype) -> np.ndarray | None:
    """torch's ``_canonical_mask``: a bool mask becomes 0 / −inf (True = not allowed), a float
    mask is kept (cast to the query's dtype); other dtypes are an error."""
    if mask is None:
        return None
    a = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if a.dtype == np.bool_:
        return np.where(a, -np.inf, 0.0).astype(dtype)
    if a.dtype.kind != "f":
        raise TypeError(f"MultiheadAttention: only bool and floating types of {name} are supported, "
                        f"got dtype {a.dtype}")
    return a.astype(dtype, copy=False)


class MultiheadAttention(Module):
    """Multi-head attention with torch's constructor, parameters, state-dict keys and forward."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        super().__init__()
        _check_device(device, "MultiheadAttention: device")
        embed_dim, num_heads = _positive(embed_dim, "embed_dim"), _positive(num_heads, "num_heads")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} "
                             f"and num_heads={num_heads} instead")
        if embed_dim % num_heads:   # torch: assert (AssertionError)
            raise InvalidArgumentAssertion(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        check_probability("MultiheadAttention", "dropout", dropout)   # torch checks it only in forward
        self.embed_dim = embed_dim
        self.kdim = embed_dim if kdim is None else _positive(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else _positive(vdim, "vdim")
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        dt = _param_dtype(dtype, "MultiheadAttention")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(np.empty((embed_dim, embed_dim), dtype=dt))
            self.k_proj_weight = Parameter(np.empty((embed_dim, self.kdim), dtype=dt))
            self.v_proj_weight = Parameter(np.empty((embed_dim, self.vdim), dtype=dt))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), dtype=dt))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.empty((3 * embed_dim,), dtype=dt))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, dtype=dt)
        if add_bias_kv:
            self.bias_k = Parameter(np.empty((1, 1, embed_dim), dtype=dt))
            self.bias_v = Parameter(np.empty((1, 1, embed_dim), dtype=dt))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """torch's: Xavier-uniform projection weights, zero biases, Xavier-normal bias_k/bias_v
        (``out_proj.weight`` keeps Linear's default)."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    # ------------------------------------------------------------------ checks
    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask) -> bool:
        """torch's ``_mha_shape_check``: is the input batched? (ValueError naming the shapes.)"""
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a Tensor, got {type(t).__name__}")
        if query.ndim not in (2, 3):
            raise ValueError(f"MultiheadAttention: query should be unbatched 2D or batched 3D tensor but "
                             f"received {query.ndim}-D query tensor (shape {tuple(query.shape)})")
        batched = query.ndim == 3
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"MultiheadAttention: for {'batched' if batched else 'unbatched'} "
                             f"{query.ndim}-D query, expected key and value to be {query.ndim}-D, got "
                             f"key {tuple(key.shape)} and value {tuple(value.shape)}")
        if key_padding_mask is not None and np.ndim(key_padding_mask) != query.ndim - 1:
            raise ValueError(f"MultiheadAttention: for {query.ndim}-D query, expected key_padding_mask to be "
                             f"{query.ndim - 1}-D, got shape {np.shape(key_padding_mask)}")
        if attn_mask is not None and np.ndim(attn_mask) not in (2, 3):
            raise ValueError(f"MultiheadAttention: attn_mask should be 2-D or 3-D, got shape {np.shape(attn_mask)}")
        if query.shape[-1] != self.embed_dim:
            raise ValueError(f"MultiheadAttention: was expecting embedding dimension of {self.embed_dim}, "
                             f"but got query of shape {tuple(query.shape)}")
        if key.shape[-1] != self.kdim or value.shape[-1] != self.vdim:
            raise ValueError(f"MultiheadAttention: expected key and value features kdim={self.kdim} and "
                             f"vdim={self.vdim}, got key {tuple(key.shape)} and value {tuple(value.shape)}")
        if key.shape[:-1] != value.shape[:-1]:
            raise ValueError(f"MultiheadAttention: key's sequence and batch dims {key.shape[:-1]} do not match "
                             f"value's {value.shape[:-1]}")
        return batched

    # ------------------------------------------------------------------ forward
    def _projections(self, query, key, value):
        """Step 1: q, k, v = x W_xᵀ + b_x with the three row blocks of the packed weights."""
        F, e = _functional(), self.embed_dim
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            weights = (w[:e], w[e:2 * e], w[2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        return [F.linear(x, w_, b_) for x, w_, b_ in zip((query, key, value), weights, biases)]

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        F = _functional()
        batched = self._check_shapes(query, key, value, key_padding_mask, attn_mask)
        if self.batch_first and batched:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if not batched:   # (L, E) -> (L, 1, E); key_padding_mask (S,) -> (1, S)
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = np.asarray(key_padding_mask._data if isinstance(key_padding_mask, Tensor)
                                              else key_padding_mask)[None]
        tgt_len, bsz, e = query.shape
        src_len = key.shape[0]
        h, d = self.num_heads, self.head_dim
        dtype = query._data.dtype
        kpm = _mask_array(key_padding_mask, "key_padding_mask", dtype)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer "
                               "module method `generate_square_subsequent_mask` to create this mask.")
        if is_causal and kpm is None and not need_weights:
            # torch then ignores attn_mask's values and applies the causal (top-left) mask
            mask = np.where(np.triu(np.ones((tgt_len, src_len), dtype=bool), 1), -np.inf, 0.0).astype(dtype)[None]
        else:
            mask = _mask_array(attn_mask, "attn_mask", dtype)
            if mask is not None:
                want = (tgt_len, src_len) if mask.ndim == 2 else (bsz * h, tgt_len, src_len)
                if mask.shape != want:
                    raise ValueError(f"MultiheadAttention: the shape of the {mask.ndim}D attn_mask is "
                                     f"{tuple(mask.shape)}, but should be {want}")
                mask = mask[None] if mask.ndim == 2 else mask

        q, k, v = self._projections(query, key, value)
        if self.bias_k is not None:   # step 2: one learned key/value row per batch element
            k = cat([k, self.bias_k.expand(1, bsz, e)])
            v = cat([v, self.bias_v.expand(1, bsz, e)])
            mask = None if mask is None else np.pad(mask, [(0, 0), (0, 0), (0, 1)])
            kpm = None if kpm is None else np.pad(kpm, [(0, 0), (0, 1)])
        # step 3: heads, (len, N, E) -> (N*H, len, d)
        q = q.reshape(tgt_len, bsz * h, d).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * h, d).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * h, d).transpose(0, 1)
        if self.add_zero_attn:
            zeros = Tensor(np.zeros((bsz * h, 1, d), dtype=dtype))
            k, v = cat([k, zeros], dim=1), cat([v, zeros], dim=1)
            mask = None if mask is None else np.pad(mask, [(0, 0), (0, 0), (0, 1)])
            kpm = None if kpm is None else np.pad(kpm, [(0, 0), (0, 1)])
        src_len = k.shape[1]
        if kpm is not None:
            if kpm.shape != (bsz, src_len):
                raise ValueError(f"MultiheadAttention: expected key_padding_mask of shape {(bsz, src_len)} "
                                 f"(batch, keys), got {tuple(kpm.shape)}")
            per_head = np.broadcast_to(kpm[:, None, None, :], (bsz, h, 1, src_len)).reshape(bsz * h, 1, src_len)
            mask = per_head if mask is None else mask + per_head

        # steps 4-5: scores, softmax over the keys, dropout
        scores = (q * math.sqrt(1.0 / float(d))) @ k.transpose(-2, -1)
        if mask is not None:
            scores = scores + Tensor(mask)
        weights = F.softmax(scores, dim=-1)
        if self.training and self.dropout > 0.0:
            weights = F.dropout(weights, self.dropout, True)
        # step 6: heads back together, output projection
        out = (weights @ v).transpose(0, 1).reshape(tgt_len * bsz, e)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt_len, bsz, e)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, h, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights
