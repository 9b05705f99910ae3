"""General multi-head attention, the BERT-style encoder and the Vaswani encoder-decoder
(tutorial sections 7.1, 8.1, 8.2), pre-LN like the tutorial's GPT. Twin: ``reference.transformer``.

Masks
-----
* ``padding_mask``: (batch, T_k), bool or 0/1 ints, **True/1 = real token, False/0 = padding**
  (Hugging Face's ``attention_mask`` convention; the complement of
  ``torch.nn.MultiheadAttention``'s ``key_padding_mask``). Padded keys get no attention;
  padded queries are still computed (their outputs are simply not used by a loss that
  ignores them).
* ``attn_mask``: bool, True = may attend (``F.scaled_dot_product_attention``'s convention),
  any shape broadcasting to (batch, heads, T_q, T_k).
* A query left with no visible key raises ``ValueError`` (its softmax would be 0/0).

Classes
-------
* ``MultiHeadAttention(d_model, n_heads, dropout, causal, bias)``: self-attention
  (``context=None``) or cross-attention (queries from ``x``, keys/values from ``context``,
  T_q != T_k allowed); ``causal=True`` keeps key j <= query i (top-left aligned when
  T_q != T_k, as torch's ``is_causal``). Separate ``q_proj``/``k_proj``/``v_proj``/``out_proj``
  (``torch.nn.MultiheadAttention``'s ``in_proj_weight`` is their concatenation).
* ``EncoderBlock``: ln1 -> bidirectional attn -> residual, ln2 -> mlp -> residual.
* ``DecoderBlock``: ln1 -> causal self_attn, ln2 -> cross_attn(context = encoder output),
  ln3 -> mlp, each with a residual.
* ``TokenStack``: the base of the two stacks below: ``token_embedding``, ``pos_embedding``
  (learned, ``block_size`` positions) and ``embed(idx)`` (ids and length checked).
* ``TransformerEncoder``: token + learned position embeddings, encoder blocks, ``ln_f``;
  ``forward(idx, padding_mask)`` -> hidden states (B, T, d_model).
* ``Encoder`` (BERT-style): the encoder plus heads. ``classify`` pools position 0 (the
  [CLS] token the tokenizer puts first) through ``pooler`` (Linear + tanh) and
  ``classifier``; ``masked_lm`` maps every position through ``mlm_head`` (weight tied to
  ``token_embedding`` unless ``tie_weights=False``; it keeps its own bias) and scores the
  positions whose target is not -100 (the masked ones).
* ``TransformerDecoder``: token + position embeddings, decoder blocks, ``ln_f``, ``lm_head``
  tied to ``token_embedding``.
* ``EncoderDecoder(src_vocab_size, tgt_vocab_size, ...)``: ``encoder`` + ``decoder``;
  ``forward(src, tgt, src_padding_mask, tgt_padding_mask, targets)`` -> (logits, loss).
"""
from __future__ import annotations

from .. import functional as F
from .. import nn
from ..factories import arange
from .gpt import FeedForward, as_ids, as_targets, attention, check_attn_impl, lm_loss
from .inputs import attention_mask, check_heads, check_query_context, check_seq_len


def _array(mask):
    return None if mask is None else getattr(mask, "data", mask)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: self or cross, causal or bidirectional, with a key-padding mask."""

    def __init__(self, d_model, n_heads, dropout=0.0, causal=False, bias=True, attn_impl="fused"):
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = check_heads(d_model, n_heads)
        self.causal = causal
        self.attn_impl = check_attn_impl(attn_impl)

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
        mask = attention_mask(B, self.n_heads, T_q, T_k, self.causal, _array(padding_mask), _array(attn_mask))

        # Project and split into heads: (B, n_heads, T, d_k)
        q = self.q_proj(x).view(B, T_q, self.n_heads, self.d_k).transpose(1, 2)
        k = self.k_proj(kv).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)
        v = self.v_proj(kv).view(B, T_k, self.n_heads, self.d_k).transpose(1, 2)

        if self.causal and padding_mask is None and attn_mask is None and self.attn_impl != "naive":
            y = attention(q, k, v, self.attn_impl, self.attn_dropout, is_causal=True)  # no mask array needed
        else:
            y = attention(q, k, v, self.attn_impl, self.attn_dropout, mask=mask)
        # (B, n_heads, T_q, d_k) -> (B, T_q, C)
        y = y.transpose(1, 2).contiguous().view(B, T_q, C)
        return self.resid_dropout(self.out_proj(y))


class EncoderBlock(nn.Module):
    """Pre-LN bidirectional encoder block: every token attends to every real token."""

    def __init__(self, d_model, n_heads, dropout=0.1, attn_impl="fused"):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, causal=False, attn_impl=attn_impl)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = FeedForward(d_model, dropout)

    def forward(self, x, padding_mask=None):
        x = x + self.attn(self.ln1(x), padding_mask=padding_mask)
        x = x + self.mlp(self.ln2(x))
        return x


class DecoderBlock(nn.Module):
    """Pre-LN decoder block: causal self-attention, cross-attention to the encoder output
    (queries from the decoder, keys and values from the encoder), then the MLP."""

    def __init__(self, d_model, n_heads, dropout=0.1, attn_impl="fused"):
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


class TokenStack(nn.Module):
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
        idx = as_ids(idx, self.vocab_size, name)
        T = idx.shape[1]
        check_seq_len(T, self.block_size, what)
        return self.token_embedding(idx) + self.pos_embedding(arange(0, T))


class TransformerEncoder(TokenStack):
    """Token + learned positional embeddings, bidirectional encoder blocks, final LayerNorm:
    ``forward(idx, padding_mask=None)`` -> hidden states (B, T, d_model)."""

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="fused"):
        super().__init__(vocab_size, d_model, n_heads, block_size)
        self.blocks = nn.ModuleList([EncoderBlock(d_model, n_heads, dropout, attn_impl) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)

    def forward(self, idx, padding_mask=None):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, padding_mask)
        return self.ln_f(x)


class Encoder(TransformerEncoder):
    """BERT-style encoder: the bidirectional stack, a [CLS]-pooled classification head and a
    masked-token head (see the module docstring)."""

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, num_classes=2,
                 dropout=0.1, tie_weights=True, attn_impl="fused"):
        super().__init__(vocab_size, d_model, n_heads, n_layers, block_size, dropout, attn_impl)
        self.pooler = nn.Sequential(nn.Linear(d_model, d_model), nn.Tanh())
        self.classifier = nn.Linear(d_model, num_classes)
        self.mlm_head = nn.Linear(d_model, vocab_size)
        if tie_weights:
            self.token_embedding.weight = self.mlm_head.weight

    def classify(self, idx, padding_mask=None, labels=None):
        """Sequence classification from the [CLS] position: -> (logits (B, num_classes), loss)."""
        h = self(idx, padding_mask)
        logits = self.classifier(self.pooler(h[:, 0]))
        loss = None
        if labels is not None:
            if tuple(labels.shape) != (h.shape[0],):
                raise ValueError(f"labels must have shape ({h.shape[0]},), got {tuple(labels.shape)}")
            loss = F.cross_entropy(logits, as_targets(labels, logits.shape, logits.shape[-1], "labels"))
        return logits, loss

    def masked_lm(self, idx, padding_mask=None, targets=None):
        """Masked-token prediction: -> (logits (B, T, vocab_size), loss over targets != -100)."""
        h = self(idx, padding_mask)
        logits = self.mlm_head(h)
        loss = None
        if targets is not None:
            if tuple(targets.shape) != tuple(h.shape[:2]):
                raise ValueError(f"targets must have the inputs' shape {tuple(h.shape[:2])} "
                                 f"(-100 at unmasked positions), got {tuple(targets.shape)}")
            targets = as_targets(targets, logits.shape, self.vocab_size)
            loss = F.cross_entropy(logits.reshape(-1, self.vocab_size), targets.reshape(-1))
        return logits, loss


class TransformerDecoder(TokenStack):
    """Token + learned positional embeddings, decoder blocks, final LayerNorm, tied lm_head:
    ``forward(idx, memory, padding_mask=None, memory_padding_mask=None)`` -> logits."""

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=4, block_size=16, dropout=0.1,
                 attn_impl="fused"):
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


class EncoderDecoder(nn.Module):
    """The Vaswani et al. (2017) layout, pre-LN: a bidirectional encoder over the source and a
    causal decoder over the target whose cross-attention reads the encoder output."""

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=64, n_heads=4, n_encoder_layers=2,
                 n_decoder_layers=2, block_size=16, src_block_size=None, dropout=0.1, attn_impl="fused"):
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
