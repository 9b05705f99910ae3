"""PyTorch twin of ``tinygrad_tx.models.gpt``: the tutorial's section-7.3 GPT, as the tutorial writes it.

The only changes to the tutorial's code: its ``assert``s became ``ValueError``s with the
values named (shared checks in ``tinygrad_tx.models.inputs``), token ids and targets
are range-checked, and the attention can optionally run through torch's fused
``F.scaled_dot_product_attention`` (``attn_impl="fused"`` or ``"flash"``, the names our twin
uses) for speed comparisons; the default ``"naive"`` is the tutorial's masked_fill + softmax.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.inputs import (check_heads, check_seq_len, check_targets, check_token_ids,
                                           lm_targets_mode)

from ._twin import TwinModule, np_of

ATTN_IMPLS = ("naive", "fused", "flash")  # "flash" also runs torch's fused kernel


def lm_loss(logits, targets):
    """Cross-entropy of (B, T, V) logits: 1-D targets (B,) score the last position, 2-D targets
    (B, T) every position; target -100 is ignored."""
    mode = lm_targets_mode(logits.shape[:2], targets.shape)
    check_targets(np_of(targets), logits.shape, logits.size(-1))
    if mode == "last":
        return F.cross_entropy(logits[:, -1, :], targets)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


class CausalSelfAttention(TwinModule):
    """
    Multi-head masked self-attention module with causal lower-triangular masking.
    """
    def __init__(self, d_model, n_heads, block_size, dropout=0.1, attn_impl="naive"):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = check_heads(d_model, n_heads)
        if attn_impl not in ATTN_IMPLS:
            raise ValueError(f"attn_impl must be one of {ATTN_IMPLS}, got {attn_impl!r}")
        self.attn_impl = attn_impl

        # Fused linear projection for Query, Key, and Value
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

        # Causal mask buffer, not saved in the state dict (persistent=False)
        mask = torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.shape  # Batch, Time (Sequence Length), Channels (d_model)
        if C != self.d_model:
            raise ValueError(f"expected input of shape (B, T, d_model={self.d_model}), got {tuple(x.shape)}")
        check_seq_len(T, self.causal_mask.shape[-1])

        # Calculate Q, K, V and split into heads: (B, n_heads, T, d_k)
        q, k, v = self.c_attn(x).split(self.d_model, dim=2)
        q = q.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.d_k).transpose(1, 2)

        if self.attn_impl != "naive":
            p = self.attn_dropout.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            # Scaled dot-product: (B, n_heads, T, T)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (self.d_k ** 0.5))
            att = att.masked_fill(self.causal_mask[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            # Weighted sum of values: (B, n_heads, T, d_k)
            y = att @ v
        # (B, n_heads, T, d_k) -> (B, T, C)
        y = y.transpose(1, 2).contiguous().view(B, T, C)

        return self.resid_dropout(self.c_proj(y))


class FeedForward(TwinModule):
    """
    Position-wise two-layer MLP with expansion factor 4 and GELU activation.
    """
    def __init__(self, d_model, dropout=0.1):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout)
        )

    def forward(self, x):
        return self.net(x)


class TransformerBlock(TwinModule):
    """
    Pre-LayerNorm Transformer Decoder Block with residual connections.
    """
    def __init__(self, d_model, n_heads, block_size, dropout=0.1, attn_impl="naive"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, block_size, dropout, attn_impl)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model, dropout)

    def forward(self, x):
        # Pre-LN architecture: residual connection wraps normalized sub-layers
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPTLanguageModel(TwinModule):
    """
    Complete GPT-style autoregressive character-level language model.
    """
    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="naive"):
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

        # Weight tying: share token embedding weights with output projection matrix
        self.token_embedding.weight = self.lm_head.weight

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx")
        B, T = idx.shape
        check_seq_len(T, self.block_size)

        # Combine token content with spatial position indices
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        tok_emb = self.token_embedding(idx)       # (B, T, d_model)
        pos_emb = self.pos_embedding(pos)         # (T, d_model)
        x = tok_emb + pos_emb                     # (B, T, d_model)

        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)                  # (B, T, vocab_size)

        loss = None
        if targets is not None:
            mode = lm_targets_mode(idx.shape, targets.shape)
            check_targets(np_of(targets), logits.shape, self.vocab_size)
            if mode == "last":
                loss = F.cross_entropy(logits[:, -1, :], targets)
            else:
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

        return logits, loss
