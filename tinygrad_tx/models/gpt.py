"""The tutorial's section-7.3 GPT on tinygrad_tx: ``CausalSelfAttention``, ``FeedForward``,
``TransformerBlock`` (pre-LN) and ``GPTLanguageModel``.

Same structure, attribute names and state-dict keys as the tutorial's PyTorch code (its twin
is ``reference.gpt``): a fused ``c_attn`` projection to Q, K, V, ``c_proj``, attention and
residual dropout, a non-persistent ``causal_mask`` buffer, learned positional embeddings,
``ln_f`` and an ``lm_head`` whose weight *is* ``token_embedding.weight`` (weight tying: one
Parameter under two names, so its gradient sums both uses).

Attention implementations (``attn_impl``; the parameters and outputs are the same):

* ``"fused"`` (default): one ``F.scaled_dot_product_attention`` call, whose hand-written
  backward never builds the masked-score graph node by node;
* ``"naive"``: the tutorial's code line for line: scores, ``masked_fill`` with the
  ``causal_mask`` buffer, ``F.softmax``, dropout, ``@ v`` -- each a separate graph node;
* ``"flash"``: the tiled online-softmax kernel (``tinygrad_tx.ops.flash_attention``), O(T d)
  activation memory; it has no attention dropout, so it refuses ``dropout > 0`` in training.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import functional as F
from .. import nn
from ..core.dtypes import default_float
from ..ops.flash_attention import flash_attention
from ..factories import arange
from ..core.tensor import Tensor, _adopt
from .inputs import check_heads, check_seq_len, check_targets, check_token_ids, lm_targets_mode

ATTN_IMPLS = ("fused", "naive", "flash")


def check_attn_impl(attn_impl: str) -> str:
    if attn_impl not in ATTN_IMPLS:
        raise ValueError(f"attn_impl must be one of {ATTN_IMPLS}, got {attn_impl!r}")
    return attn_impl


def as_ids(idx, vocab_size: int, name: str = "idx", ndim=(2,)) -> Tensor:
    """Token ids as an int Tensor, checked: integer dtype, rank, every id in [0, vocab_size)."""
    idx = idx if isinstance(idx, Tensor) else Tensor(np.asarray(idx))
    check_token_ids(idx._data, vocab_size, name, ndim)
    return idx


def as_targets(targets, logits_shape, vocab_size: int, name: str = "targets") -> Tensor:
    targets = targets if isinstance(targets, Tensor) else Tensor(np.asarray(targets))
    check_targets(targets._data, logits_shape, vocab_size, name=name)
    return targets


@functools.lru_cache(maxsize=64)
def causal_mask(t_q: int, t_k: int) -> np.ndarray:
    """Bool (t_q, t_k), True where key j <= query i; built once per shape (read-only)."""
    mask = np.tril(np.ones((t_q, t_k), dtype=bool))
    mask.flags.writeable = False
    return mask


def attention(q, k, v, attn_impl: str, dropout, mask=None, is_causal: bool = False):
    """softmax(q kᵀ / √d_k, masked) v for (B, heads, T, d_k) q, k, v.

    ``mask``: NumPy bool, True = may attend (broadcasts to (B, heads, T_q, T_k)); ``is_causal``:
    key j <= query i. ``dropout``: the ``nn.Dropout`` applied to the attention weights (active
    in training mode).
    """
    p = dropout.p if dropout.training else 0.0
    if attn_impl == "naive":
        if is_causal:
            causal = causal_mask(q.shape[-2], k.shape[-2])
            mask = causal if mask is None else mask & causal
        att = (q @ k.transpose(-2, -1)) * (1.0 / (q.shape[-1] ** 0.5))
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = dropout(att)
        return att @ v
    if mask is not None:
        mask = Tensor(mask)
    if attn_impl == "flash":
        if p > 0:
            raise ValueError(f"attn_impl='flash' has no attention dropout; got dropout p={p} in training mode "
                             "(use dropout=0.0, eval(), or attn_impl='fused')")
        return flash_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p, is_causal=is_causal)


def lm_loss(logits, targets):
    """Cross-entropy of (B, T, V) logits: 1-D targets (B,) score the last position, 2-D targets
    (B, T) every position; target -100 is ignored."""
    mode = lm_targets_mode(logits.shape[:2], targets.shape)
    targets = as_targets(targets, logits.shape, logits.shape[-1])
    if mode == "last":
        return F.cross_entropy(logits[:, -1, :], targets)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class CausalSelfAttention(nn.Module):
    """Multi-head masked self-attention with a causal (lower-triangular) mask."""

    def __init__(self, d_model, n_heads, block_size, dropout=0.1, attn_impl="fused"):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = check_heads(d_model, n_heads)
        self.attn_impl = check_attn_impl(attn_impl)

        # Fused linear projection for Query, Key, and Value
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

        # Causal mask buffer, not saved in the state dict (persistent=False)
        mask = np.tril(np.ones((block_size, block_size), dtype=default_float())).reshape(1, 1, block_size, block_size)
        mask.flags.writeable = False   # a constant: lets forward reuse what it derives from it
        self.register_buffer("causal_mask", _adopt(mask), persistent=False)  # no copy: stays read-only

    def forward(self, x):
        B, T, C = x.shape  # Batch, Time (sequence length), Channels (d_model)
        if C != self.d_model:
            raise ValueError(f"expected input of shape (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
        check_seq_len(T, self.causal_mask.shape[-1])

        # Q, K, V split into heads: (B, n_heads, T, d_k)
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)
        q = q.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

        if self.attn_impl == "naive":
            # The tutorial's code: scaled scores (B, n_heads, T, T), masked, softmax, dropout, @ v
            att = (q @ k.transpose(-2, -1)) * (1.0 / (self.d_k ** 0.5))
            att = att.masked_fill(self._future_positions(T), float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        else:
            y = attention(q, k, v, self.attn_impl, self.attn_dropout, is_causal=True)
        # (B, n_heads, T, d_k) -> (B, T, C)
        y = y.transpose(1, 2).contiguous().view(B, T, C)

        return self.resid_dropout(self.c_proj(y))

    def _future_positions(self, T):
        """The tutorial's ``self.causal_mask[:, :, :T, :T] == 0`` (True where key j > query i).
        While the buffer is the read-only array made in ``__init__`` (or its cast), the result
        is computed once per sequence length instead of at every step; a writeable buffer
        (one you may edit in place) is read every time."""
        buffer = self.causal_mask._data
        if buffer.flags.writeable:
            return self.causal_mask[:, :, :T, :T] == 0
        cached = getattr(self, "_future_cache", None)
        if cached is None or cached[0] is not buffer:
            self._future_cache = cached = (buffer, {})
        if T not in cached[1]:
            mask = self.causal_mask[:, :, :T, :T] == 0
            mask._data.flags.writeable = False   # a constant, as the buffer (tinygrad_tx.compile freezes it)
            cached[1][T] = mask
        return cached[1][T]


class FeedForward(nn.Module):
    """Position-wise two-layer MLP with expansion factor 4 and GELU activation."""

    def __init__(self, d_model, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)


class TransformerBlock(nn.Module):
    """Pre-LayerNorm decoder block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d_model, n_heads, block_size, dropout=0.1, attn_impl="fused"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, block_size, dropout, attn_impl)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model, dropout)

    def forward(self, x):
        # Pre-LN: the residual connection wraps each normalised sub-layer
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPTLanguageModel(nn.Module):
    """GPT-style autoregressive language model: ``forward(idx, targets=None) -> (logits, loss)``.

    ``idx`` (B, T) token ids, T <= block_size. ``targets`` (B,) scores the last position
    (the tutorial's prefix -> next-token dataset), (B, T) every position; -100 is ignored.
    """

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="fused"):
        super().__init__()
        check_heads(d_model, n_heads)
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.pos_embedding = nn.Embedding(block_size, d_model)

        self.blocks = nn.Sequential(*[
            TransformerBlock(d_model, n_heads, block_size, dropout, attn_impl) for _ in range(n_layers)
        ])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

        # Weight tying: the token embedding and the output projection share one Parameter
        self.token_embedding.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size)
        B, T = idx.shape
        check_seq_len(T, self.block_size)

        # Token content plus position
        pos = arange(0, T)
        tok_emb = self.token_embedding(idx)       # (B, T, d_model)
        pos_emb = self.pos_embedding(pos)         # (T, d_model)
        x = tok_emb + pos_emb                     # (B, T, d_model)

        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)                  # (B, T, vocab_size)

        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss
