"""KV caches: incremental forward passes of the GPT and of the encoder-decoder's decoder.

Why a cache works
-----------------
In a causal Transformer the hidden state of position i in every layer depends only on
tokens 0..i. Appending a token therefore changes nothing about the earlier positions: their
keys and values in every layer are the same as in the previous step. Without a cache the
tutorial's ``generate`` recomputes all of them for every new token (the whole prefix through
every layer: O(T) tokens per step, O(T^2) attention scores). With a cache each step

1. embeds only the new token(s), at their positions ``L .. L+t-1`` (L = tokens cached so far),
2. in each layer computes q, k, v for the new tokens only, writes k and v into the layer's
   preallocated (B, heads, block_size, d_k) arrays at ``L .. L+t-1``, and attends the new
   queries over keys ``0 .. L+t-1`` (the new token sees every cached key; among several new
   tokens, query L+i sees keys <= L+i),
3. runs LayerNorm, the MLP, ``ln_f`` and ``lm_head`` on the new positions only (they act
   position by position),

so a step costs O(L) for the attention and O(1) in the sequence length for everything else.
The arithmetic per position is the same as the full forward's, so cached and uncached
logits agree to rounding (the tests assert 1e-10 relative in float64).

Everything is computed by the model's own submodules and parameters (``model.blocks[i].ln1``,
``.attn.c_attn``, ``.attn.c_proj``, ...); only the attention over the cache is called here
directly (``F.scaled_dot_product_attention``). The cache is an inference device: it runs under
``no_grad`` and refuses a model in training mode (dropout would make steps irreproducible).

Learned positional embeddings stop at ``block_size``, so a cache holds at most
``block_size`` tokens; ``gpt_forward_cached`` refuses to go past it (``generate`` then falls
back to recomputing the cropped window, see ``tinygrad_tx.generation.generate``).
"""
from __future__ import annotations

import numpy as np

from .. import functional as F
from ..core.grad_mode import no_grad
from ..models.gpt import GPTLanguageModel, as_ids
from ..models.inputs import attention_mask
from ..models.transformer import EncoderDecoder
from ..factories import arange
from ..core.tensor import Tensor


class KVCache:
    """Keys and values of a stack of causal self-attention layers, preallocated.

    ``keys[l]``, ``values[l]``: (batch, n_heads, capacity, d_k) arrays of the model's dtype, of
    which positions ``0 .. length-1`` are filled; ``tokens[:, :length]`` are the ids they came
    from (so a caller can check that a sequence continues what is cached).
    """

    def __init__(self, n_layers: int, batch_size: int, n_heads: int, d_k: int, capacity: int, dtype):
        shape = (batch_size, n_heads, capacity, d_k)
        self.keys = [np.zeros(shape, dtype=dtype) for _ in range(n_layers)]
        self.values = [np.zeros(shape, dtype=dtype) for _ in range(n_layers)]
        self.tokens = np.zeros((batch_size, capacity), dtype=np.int64)
        self.batch_size, self.capacity, self.length = batch_size, capacity, 0

    def reset(self) -> None:
        """Forget every cached position (the arrays are reused)."""
        self.length = 0

    def store(self, layer: int, k: np.ndarray, v: np.ndarray):
        """Write the new tokens' (B, heads, t, d_k) keys and values of ``layer`` at positions
        ``length .. length+t-1``; return views of all keys and values so far, (B, heads, length+t, d_k)."""
        end = self.length + k.shape[2]
        self.keys[layer][:, :, self.length:end] = k
        self.values[layer][:, :, self.length:end] = v
        return self.keys[layer][:, :, :end], self.values[layer][:, :, :end]

    def advance(self, ids: np.ndarray) -> None:
        """Mark the (B, t) tokens just processed by every layer as cached."""
        end = self.length + ids.shape[1]
        self.tokens[:, self.length:end] = ids
        self.length = end

    def holds_prefix_of(self, ids: np.ndarray) -> bool:
        """True when the cached tokens are the first ``length`` tokens of ``ids`` (B, T), T > length."""
        return (ids.shape[0] == self.batch_size and self.length < ids.shape[1]
                and np.array_equal(self.tokens[:, :self.length], ids[:, :self.length]))


def _heads(x: Tensor, n_heads: int) -> Tensor:
    """(B, t, C) -> (B, n_heads, t, C // n_heads)."""
    B, t, C = x.shape
    return x.view(B, t, n_heads, C // n_heads).transpose(1, 2)


def _merge_heads(y: Tensor) -> Tensor:
    """(B, n_heads, t, d_k) -> (B, t, n_heads * d_k)."""
    B, H, t, d_k = y.shape
    return y.transpose(1, 2).contiguous().view(B, t, H * d_k)


def _attend_cached(q: Tensor, k_all: np.ndarray, v_all: np.ndarray) -> Tensor:
    """Causal attention of the t newest queries (B, H, t, d_k) over all S cached keys, the
    queries sitting at positions S-t .. S-1: query i sees keys j <= S-t+i (the causal mask
    aligned at the bottom-right corner). One new token sees every key: no mask at all."""
    t, S = q.shape[2], k_all.shape[2]
    if t == 1:
        return F.scaled_dot_product_attention(q, Tensor(k_all), Tensor(v_all))
    if t == S:  # the prompt with an empty cache: the ordinary causal mask
        return F.scaled_dot_product_attention(q, Tensor(k_all), Tensor(v_all), is_causal=True)
    visible = np.arange(S)[None, :] <= (S - t + np.arange(t))[:, None]
    return F.scaled_dot_product_attention(q, Tensor(k_all), Tensor(v_all), attn_mask=visible)


def _check_step(model, cache: KVCache, ids: Tensor, block_size: int, what: str) -> None:
    if model.training:
        raise ValueError(f"the KV cache is for inference: call {type(model).__name__}.eval() first "
                         "(in training mode dropout would change every step)")
    B, t = ids.shape
    if B != cache.batch_size:
        raise ValueError(f"{what}: the cache was built for batch size {cache.batch_size}, got ids of shape {(B, t)}")
    if cache.length + t > block_size:
        raise ValueError(f"{what}: {cache.length} cached + {t} new tokens exceed block_size={block_size} "
                         "(learned positional embeddings stop there); reset the cache and feed the last "
                         f"{block_size} tokens instead")


# --------------------------------------------------------------------------- GPT

class GPTKVCache(KVCache):
    """A ``KVCache`` shaped for a ``GPTLanguageModel``: one layer per block, ``block_size`` positions."""

    def __init__(self, model: GPTLanguageModel, batch_size: int = 1):
        if not isinstance(model, GPTLanguageModel):
            raise TypeError(f"GPTKVCache needs a GPTLanguageModel, got {type(model).__name__}")
        attn = model.blocks[0].attn
        super().__init__(len(model.blocks), batch_size, attn.n_heads, attn.d_k, model.block_size,
                         model.lm_head.weight.dtype)


def _gpt_attention_cached(attn, h: Tensor, cache: KVCache, layer: int) -> Tensor:
    """``CausalSelfAttention.forward`` for the new positions only: fused c_attn -> q, k, v; k and v
    appended to the cache; the new queries attend over every cached key; c_proj."""
    q, k, v = attn.c_attn(h).split(attn.d_model, dim=2)
    q, k, v = _heads(q, attn.n_heads), _heads(k, attn.n_heads), _heads(v, attn.n_heads)
    k_all, v_all = cache.store(layer, k._data, v._data)
    y = _attend_cached(q, k_all, v_all)
    return attn.resid_dropout(attn.c_proj(_merge_heads(y)))


def gpt_forward_cached(model: GPTLanguageModel, idx, cache: GPTKVCache) -> Tensor:
    """Logits (B, t, vocab_size) of the t new tokens ``idx`` (B, t) that continue the ``cache.length``
    tokens already in ``cache``; equal (to rounding) to ``model(all tokens)[0][:, -t:]``.
    Updates the cache. Runs under ``no_grad``; the model must be in eval mode."""

    def block_step(block, x, layer):  # TransformerBlock.forward (pre-LN) on the new positions
        x = x + _gpt_attention_cached(block.attn, block.ln1(x), cache, layer)
        return x + block.mlp(block.ln2(x))

    return _forward_new_tokens(model, model, idx, "idx", cache, block_step, "gpt_forward_cached")


def _forward_new_tokens(model, lm, idx, ids_name: str, cache: KVCache, block_step, what: str) -> Tensor:
    """The stack shared by the GPT and the decoder: embed the new tokens at positions
    ``L .. L+t-1``, run ``block_step(block, x, layer)`` for every block of ``lm``, then
    ``lm_head(ln_f(x))``; mark the tokens as cached."""
    idx = as_ids(idx, lm.vocab_size, ids_name)
    _check_step(model, cache, idx, lm.block_size, what)
    L = cache.length
    with no_grad():
        x = lm.token_embedding(idx) + lm.pos_embedding(arange(L, L + idx.shape[1]))
        for layer, block in enumerate(lm.blocks):
            x = block_step(block, x, layer)
        logits = lm.lm_head(lm.ln_f(x))
    cache.advance(idx._data)
    return logits


# --------------------------------------------------------------------------- encoder-decoder

class Seq2SeqKVCache(KVCache):
    """The decoder's caches for one source batch of an ``EncoderDecoder``.

    Built once per source: runs the encoder, and for every decoder layer projects the encoder
    output to the cross-attention keys and values (``cross_keys[l]``, ``cross_values[l]``,
    (B, heads, S, d_k)): they depend on the source only, so no step recomputes them. The
    self-attention keys and values grow step by step in the inherited ``KVCache`` arrays.
    ``src_padding_mask`` (B, S), True = real token, masks padded source keys as the model does.
    """

    def __init__(self, model: EncoderDecoder, src, src_padding_mask=None):
        if not isinstance(model, EncoderDecoder):
            raise TypeError(f"Seq2SeqKVCache needs an EncoderDecoder, got {type(model).__name__}")
        if model.training:
            raise ValueError("the KV cache is for inference: call EncoderDecoder.eval() first")
        dec = model.decoder
        first = dec.blocks[0].cross_attn
        with no_grad():
            memory = model.encoder(src, src_padding_mask)
            self.cross_keys, self.cross_values = [], []
            for block in dec.blocks:
                attn = block.cross_attn
                self.cross_keys.append(_heads(attn.k_proj(memory), attn.n_heads)._data)
                self.cross_values.append(_heads(attn.v_proj(memory), attn.n_heads)._data)
        B, S = memory.shape[:2]
        pm = None if src_padding_mask is None else getattr(src_padding_mask, "data", src_padding_mask)
        mask = attention_mask(B, first.n_heads, 1, S, False, pm)  # (B, 1, 1, S) or None
        self.cross_mask = None if mask is None else Tensor(mask)
        super().__init__(len(dec.blocks), B, first.n_heads, first.d_k, dec.block_size, memory.dtype)


def _mha_self_attention_cached(attn, h: Tensor, cache: KVCache, layer: int) -> Tensor:
    """The decoder's causal ``MultiHeadAttention`` for the new positions (separate q/k/v projections)."""
    k_all, v_all = cache.store(layer, _heads(attn.k_proj(h), attn.n_heads)._data,
                               _heads(attn.v_proj(h), attn.n_heads)._data)
    y = _attend_cached(_heads(attn.q_proj(h), attn.n_heads), k_all, v_all)
    return attn.resid_dropout(attn.out_proj(_merge_heads(y)))


def _cross_attention_cached(attn, h: Tensor, cache: Seq2SeqKVCache, layer: int) -> Tensor:
    """Cross-attention of the new decoder positions over the precomputed encoder keys/values."""
    q = _heads(attn.q_proj(h), attn.n_heads)
    y = F.scaled_dot_product_attention(q, Tensor(cache.cross_keys[layer]), Tensor(cache.cross_values[layer]),
                                       attn_mask=cache.cross_mask)
    return attn.resid_dropout(attn.out_proj(_merge_heads(y)))


def decoder_forward_cached(model: EncoderDecoder, idx, cache: Seq2SeqKVCache) -> Tensor:
    """Logits (B, t, tgt_vocab_size) of t new target tokens ``idx`` (B, t) continuing the cached
    ones; equal (to rounding) to ``model(src, all target tokens)[0][:, -t:]``. Updates the cache."""

    def block_step(block, x, layer):  # DecoderBlock.forward on the new positions
        x = x + _mha_self_attention_cached(block.self_attn, block.ln1(x), cache, layer)
        x = x + _cross_attention_cached(block.cross_attn, block.ln2(x), cache, layer)
        return x + block.mlp(block.ln3(x))

    return _forward_new_tokens(model, model.decoder, idx, "tgt", cache, block_step, "decoder_forward_cached")
