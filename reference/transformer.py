"""PyTorch twins of ``tinygrad_tx.models.transformer``: general multi-head attention, the
BERT-style encoder and the Vaswani encoder-decoder, in the style of the tutorial's section 7.3.

Masks: ``padding_mask`` is (batch, T_k) with True/1 = real token, False/0 = padding (the
complement of ``torch.nn.MultiheadAttention``'s ``key_padding_mask``); ``attn_mask`` is bool
with True = may attend (``F.scaled_dot_product_attention``'s convention). Both twins build the
combined mask with the same helper, ``tinygrad_tx.models.inputs.attention_mask``.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.inputs import (attention_mask, check_heads, check_query_context, check_seq_len,
                                       check_targets, check_token_ids)

from ._twin import TwinModule, np_of
from .gpt import ATTN_IMPLS, FeedForward, lm_loss


class MultiHeadAttention(TwinModule):
    """
    Multi-head attention: self-attention (context=None) or cross-attention (queries from x,
    keys and values from context), causal or bidirectional, with a key-padding mask.
    """
    def __init__(self, d_model, n_heads, dropout=0.0, causal=False, bias=True, attn_impl="naive"):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = check_heads(d_model, n_heads)
        self.causal = causal
        if attn_impl not in ATTN_IMPLS:
            raise ValueError(f"attn_impl must be one of {ATTN_IMPLS}, got {attn_impl!r}")
        self.attn_impl = attn_impl

        # Separate projections: in cross-attention Q reads the decoder, K and V the encoder
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x, context=None, padding_mask=None, attn_mask=None):
        kv = x if context is None else context
        check_query_context(tuple(x.shape), tuple(kv.shape), self.d_model)
        B, T_q, C = x.shape
        T_k = kv.shape[1]
        mask = attention_mask(B, self.n_heads, T_q, T_k, self.causal,
                              None if padding_mask is None else np_of(padding_mask),
                              None if attn_mask is None else np_of(attn_mask))

        # Project and split into heads: (B, n_heads, T, d_k)
        q = self.q_proj(x).view(B, T_q, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k_proj(kv).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)
        v = self.v_proj(kv).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)

        if mask is not None:
            mask = torch.as_tensor(mask, device=x.device)
        if self.attn_impl != "naive":
            p = self.attn_dropout.p if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else:
            # Scaled dot-product: (B, n_heads, T_q, T_k)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (self.d_k ** 0.5))
            if mask is not None:
                att = att.masked_fill(~mask, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        # (B, n_heads, T_q, d_k) -> (B, T_q, C)
        y = y.transpose(1, 2).contiguous().view(B, T_q, C)
        return self.resid_dropout(self.out_proj(y))


class EncoderBlock(TwinModule):
    """
    Pre-LN bidirectional encoder block: every token attends to every real token.
    """
    def __init__(self, d_model, n_heads, dropout=0.1, attn_impl="naive"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, causal=False, attn_impl=attn_impl)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model, dropout)

    def forward(self, x, padding_mask=None):
        x = x + self.attn(self.ln1(x), padding_mask=padding_mask)
        x = x + self.mlp(self.ln2(x))
        return x


class DecoderBlock(TwinModule):
    """
    Pre-LN decoder block: causal self-attention, then cross-attention to the encoder output
    (queries from the decoder, keys and values from the encoder), then the MLP.
    """
    def __init__(self, d_model, n_heads, dropout=0.1, attn_impl="naive"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, causal=True, attn_impl=attn_impl)
        self.ln2 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, causal=False, attn_impl=attn_impl)
        self.ln3 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model, dropout)

    def forward(self, x, memory, padding_mask=None, memory_padding_mask=None):
        x = x + self.self_attn(self.ln1(x), padding_mask=padding_mask)
        x = x + self.cross_attn(self.ln2(x), context=memory, padding_mask=memory_padding_mask)
        x = x + self.mlp(self.ln3(x))
        return x


class TokenStack(TwinModule):
    """What the encoder and decoder stacks share: token and learned positional embeddings."""

    def __init__(self, vocab_size, d_model, n_heads, block_size):
        super().__init__()
        check_heads(d_model, n_heads)
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.pos_embedding = nn.Embedding(block_size, d_model)

    def embed(self, idx, name="idx", what="sequence"):
        """(B, T) token ids -> token + position embeddings (B, T, d_model), ids and T checked."""
        check_token_ids(np_of(idx), self.vocab_size, name)
        T = idx.shape[1]
        check_seq_len(T, self.block_size, what)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        return self.token_embedding(idx) + self.pos_embedding(pos)


class TransformerEncoder(TokenStack):
    """
    Token + learned positional embeddings, bidirectional encoder blocks, final LayerNorm.
    forward(idx, padding_mask) -> hidden states (B, T, d_model).
    """
    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="naive"):
        super().__init__(vocab_size, d_model, n_heads, block_size)
        self.blocks = nn.ModuleList([EncoderBlock(d_model, n_heads, dropout, attn_impl) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, idx, padding_mask=None):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, padding_mask)
        return self.ln_f(x)


class Encoder(TransformerEncoder):
    """
    BERT-style encoder: the bidirectional stack plus a [CLS]-pooled classification head
    (pooler Linear + tanh on position 0, then classifier) and a masked-token head
    (mlm_head, its weight tied to token_embedding unless tie_weights=False).
    """
    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, num_classes=2,
                 dropout=0.1, tie_weights=True, attn_impl="naive"):
        super().__init__(vocab_size, d_model, n_heads, n_layers, block_size, dropout, attn_impl)
        self.pooler = nn.Sequential(nn.Linear(d_model, d_model), nn.Tanh())
        self.classifier = nn.Linear(d_model, num_classes)
        self.mlm_head = nn.Linear(d_model, vocab_size)
        if tie_weights:
            self.token_embedding.weight = self.mlm_head.weight

    def classify(self, idx, padding_mask=None, labels=None):
        h = self(idx, padding_mask)
        logits = self.classifier(self.pooler(h[:, 0]))   # the [CLS] position
        loss = None
        if labels is not None:
            if tuple(labels.shape) != (idx.shape[0],):
                raise ValueError(f"labels must have shape ({idx.shape[0]},), got {tuple(labels.shape)}")
            check_targets(np_of(labels), logits.shape, logits.size(-1), name="labels")
            loss = F.cross_entropy(logits, labels)
        return logits, loss

    def masked_lm(self, idx, padding_mask=None, targets=None):
        h = self(idx, padding_mask)
        logits = self.mlm_head(h)                        # (B, T, vocab_size)
        loss = None
        if targets is not None:
            if tuple(targets.shape) != tuple(idx.shape):
                raise ValueError(f"targets must have the inputs' shape {tuple(idx.shape)} "
                                 f"(-100 at unmasked positions), got {tuple(targets.shape)}")
            check_targets(np_of(targets), logits.shape, self.vocab_size)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


class TransformerDecoder(TokenStack):
    """
    Token + learned positional embeddings, decoder blocks (causal self-attention,
    cross-attention, MLP), final LayerNorm, lm_head tied to token_embedding.
    """
    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="naive"):
        super().__init__(vocab_size, d_model, n_heads, block_size)
        self.blocks = nn.ModuleList([DecoderBlock(d_model, n_heads, dropout, attn_impl) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.token_embedding.weight = self.lm_head.weight

    def forward(self, idx, memory, padding_mask=None, memory_padding_mask=None):
        x = self.embed(idx, "tgt", "target sequence")
        for block in self.blocks:
            x = block(x, memory, padding_mask, memory_padding_mask)
        return self.lm_head(self.ln_f(x))


class EncoderDecoder(TwinModule):
    """
    The Vaswani et al. (2017) layout, pre-LN: a bidirectional encoder over the source and a
    causal decoder over the target whose cross-attention reads the encoder output.
    """
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=64, n_heads=4, n_encoder_layers=2,
                 n_decoder_layers=2, block_size=16, src_block_size=None, dropout=0.1, attn_impl="naive"):
        super().__init__()
        self.encoder = TransformerEncoder(src_vocab_size, d_model, n_heads, n_encoder_layers,
                                          src_block_size or block_size, dropout, attn_impl)
        self.decoder = TransformerDecoder(tgt_vocab_size, d_model, n_heads, n_decoder_layers,
                                          block_size, dropout, attn_impl)

    def forward(self, src, tgt, src_padding_mask=None, tgt_padding_mask=None, targets=None):
        if src.shape[0] != tgt.shape[0]:
            raise ValueError(f"src and tgt batch sizes differ: {tuple(src.shape)} vs {tuple(tgt.shape)}")
        memory = self.encoder(src, src_padding_mask)
        logits = self.decoder(tgt, memory, tgt_padding_mask, src_padding_mask)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss
