"""Autoregressive generation (tutorial section 9.2), with or without a KV cache.

``generate(model, prompt, ...)`` is the tutorial's loop::

    repeat max_new_tokens times:
        logits of the last position of the context (cropped to the last block_size tokens)
        pick the next token (greedy / temperature / top-k / top-p: ``sampling.sample_next``)
        append it; stop once it is the stop token ('$', id 0, for the names model)

with these choices made explicit:

* **Batches.** ``prompt`` is a list or 1-D array of ids (one sequence; a 1-D array comes
  back) or a (B, T) array (B sequences of equal length; a (B, T') array comes back). A row
  that has produced the stop token is finished: its later positions are filled with the
  stop token, and generation ends when every row is finished (or after ``max_new_tokens``).
* **Randomness.** Each sampling step draws exactly B uniforms from one
  ``np.random.Generator`` -- ``np.random.default_rng(seed)``, the ``generator`` passed in, or
  the global one (``tinygrad_tx.manual_seed``) -- one per row, finished rows included; a
  greedy step draws none. The same seed therefore gives the same ids, with or without the
  cache, and ``reference.generation.generate`` given the same uniforms picks the same ids.
* **Mode.** The model runs in eval mode under ``no_grad``; its previous mode (per
  submodule) is restored afterwards.
* **The cache** (``use_cache=True``, ``GPTLanguageModel`` only): the prompt is run once
  (prefill), then each step feeds only the new token (``kv_cache.gpt_forward_cached``). The
  learned positional embeddings stop at ``block_size``, so once the sequence is longer than
  ``block_size`` every step recomputes the cropped window of the last ``block_size`` tokens
  from scratch -- exactly what the uncached loop computes, so the ids stay the same, but
  without a speed-up from that point on. ``use_cache=False`` runs the tutorial's loop and
  works for any model whose ``forward(idx)`` returns ``(logits (B, T, V), loss)``.

``generate_seq2seq(model, src, ...)`` does the same for an ``EncoderDecoder``: the target
starts with ``start_token`` (the encoder-decoder has no start symbol of its own; '$', id 0,
by default, as the names data uses it), and with the cache the source is encoded once and
the cross-attention keys and values of every decoder layer are computed once.
"""
from __future__ import annotations

import numbers
import time

import numpy as np

from ..core.grad_mode import no_grad
from ..models.gpt import GPTLanguageModel
from ..models.inputs import check_token_ids
from ..models.transformer import EncoderDecoder
from ..tensor import Tensor, default_generator
from .kv_cache import GPTKVCache, Seq2SeqKVCache, decoder_forward_cached, gpt_forward_cached
from .sampling import check_sampling_args, sample_next

STOP_TOKEN = 0  # '$', the names vocabulary's sentinel (tinygrad_tx.data.CharVocab.sentinel_id)


# --------------------------------------------------------------------------- argument handling

class inference_mode:
    """``with inference_mode(model):`` eval mode and ``no_grad`` inside; each submodule's
    previous ``training`` flag restored on exit."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self._modes = [(m, m.training) for m in self.model.modules()]
        self.model.eval()
        self._no_grad = no_grad().__enter__()
        return self.model

    def __exit__(self, *exc):
        self._no_grad.__exit__(*exc)
        for m, mode in self._modes:
            object.__setattr__(m, "training", mode)
        return False


def as_prompt(prompt, vocab_size, name: str = "prompt"):
    """A prompt as a (B, T) int64 array, and whether it came in 1-D. Lists, arrays and
    Tensors of integer ids; at least one id; every id in [0, vocab_size)."""
    arr = prompt._data if isinstance(prompt, Tensor) else np.asarray(prompt)
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {tuple(arr.shape)}): generation needs at least one token "
                         "to condition on (the names model starts from '$', id 0)")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer token ids, got dtype {arr.dtype}")
    check_token_ids(arr, vocab_size if vocab_size is not None else np.iinfo(np.int64).max, name, ndim=(1, 2))
    flat = arr.ndim == 1
    return np.array(arr[None] if flat else arr, dtype=np.int64), flat


def _check_count(n, name: str) -> int:
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"{name} must be an int, got {n!r}")
    if n < 0:
        raise ValueError(f"{name} must be >= 0, got {n}")
    return int(n)


def _check_token(token, vocab_size, name: str):
    if token is None:
        return None
    if not isinstance(token, numbers.Integral) or isinstance(token, bool):
        raise TypeError(f"{name} must be an int token id or None, got {token!r}")
    if vocab_size is not None and not 0 <= token < vocab_size:
        raise ValueError(f"{name} {token} is outside [0, vocab_size) = [0, {vocab_size})")
    return int(token)


def _rng(seed, generator) -> np.random.Generator:
    if seed is not None and generator is not None:
        raise ValueError("pass either seed or generator, not both")
    if generator is not None:
        if not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a np.random.Generator, got {type(generator).__name__}")
        return generator
    return default_generator() if seed is None else np.random.default_rng(seed)


# --------------------------------------------------------------------------- next-token logits of a sequence

class NextLogits:
    """``next_logits(ids)``: the (B, V) next-token logits of the sequences ``ids`` (B, T), from a
    language model ``model(idx) -> (logits, loss)``.

    Without a cache every call runs the model on the last ``block_size`` tokens (the
    tutorial). With a cache (``GPTLanguageModel`` only) a call feeds only the tokens that
    follow what the cache holds; when ``ids`` does not continue the cached tokens, or is longer
    than ``block_size``, the cache is reset and refilled with the (cropped) sequence.
    """

    def __init__(self, model, batch_size: int, use_cache: bool):
        if use_cache and not isinstance(model, GPTLanguageModel):
            raise TypeError(f"use_cache=True needs a GPTLanguageModel (the KV cache follows its blocks), "
                            f"got {type(model).__name__}; pass use_cache=False")
        self.model = model
        self.block_size = getattr(model, "block_size", None)
        self.cache = GPTKVCache(model, batch_size) if use_cache else None

    def _window(self, ids):
        return ids if self.block_size is None else ids[:, -self.block_size:]

    def _forward_cached(self, ids):
        return gpt_forward_cached(self.model, ids, self.cache)

    def _forward_full(self, ids):
        return self.model(ids)[0]

    def __call__(self, ids: np.ndarray) -> np.ndarray:
        if self.cache is None:
            return self._forward_full(self._window(ids))._data[:, -1]
        if ids.shape[1] <= self.block_size and self.cache.holds_prefix_of(ids):
            new = ids[:, self.cache.length:]
        else:
            self.cache.reset()
            new = self._window(ids)
        return self._forward_cached(new)._data[:, -1]


class NextLogitsSeq2Seq(NextLogits):
    """``NextLogits`` for an ``EncoderDecoder`` and a fixed source: ``model(src, tgt)`` without a
    cache; with one, the source is encoded once (``Seq2SeqKVCache``)."""

    def __init__(self, model, src, src_padding_mask, use_cache: bool):
        if not isinstance(model, EncoderDecoder):
            raise TypeError(f"generate_seq2seq needs an EncoderDecoder, got {type(model).__name__}")
        self.model, self.src, self.src_padding_mask = model, src, src_padding_mask
        self.block_size = model.decoder.block_size
        self.cache = Seq2SeqKVCache(model, src, src_padding_mask) if use_cache else None

    def _forward_cached(self, ids):
        return decoder_forward_cached(self.model, ids, self.cache)

    def _forward_full(self, ids):
        return self.model(self.src, ids, src_padding_mask=self.src_padding_mask)[0]


# --------------------------------------------------------------------------- the loop

def decode_loop(next_logits, ids: np.ndarray, max_new_tokens: int, *, temperature, top_k, top_p, greedy,
                rng: np.random.Generator, stop_token):
    """Append up to ``max_new_tokens`` sampled tokens to ``ids`` (B, T0); rows that produced
    ``stop_token`` are finished (later positions filled with it); stop when all are. Returns
    the (B, T0 + n) ids."""
    B, T0 = ids.shape
    out = np.empty((B, T0 + max_new_tokens), dtype=np.int64)  # preallocated, sliced at the end
    out[:, :T0] = ids
    done = np.zeros(B, dtype=bool)
    T = T0
    for _ in range(max_new_tokens):
        logits = next_logits(out[:, :T])
        nxt = sample_next(logits, temperature=temperature, top_k=top_k, top_p=top_p, greedy=greedy,
                          generator=rng)
        if stop_token is not None:
            nxt[done] = stop_token
            done |= nxt == stop_token
        out[:, T] = nxt
        T += 1
        if done.all():
            break
    return out[:, :T]


def generate(model, prompt, max_new_tokens=20, temperature=1.0, top_k=None, top_p=None, greedy=False, *,
             seed=None, generator=None, stop_token=STOP_TOKEN, use_cache=True) -> np.ndarray:
    """Continue ``prompt`` with up to ``max_new_tokens`` tokens from ``model`` (see the module
    docstring). Returns the prompt followed by the new ids: 1-D for a 1-D prompt, (B, T') for a
    (B, T) one. ``stop_token=None`` never stops early. ``seed`` (an int) or ``generator`` (a
    ``np.random.Generator``) make the draws reproducible."""
    temperature, top_k, top_p = check_sampling_args(temperature, top_k, top_p, greedy)
    vocab_size = getattr(model, "vocab_size", None)
    ids, flat = as_prompt(prompt, vocab_size)
    max_new_tokens = _check_count(max_new_tokens, "max_new_tokens")
    stop_token = _check_token(stop_token, vocab_size, "stop_token")
    rng = _rng(seed, generator)
    with inference_mode(model):
        out = decode_loop(NextLogits(model, ids.shape[0], use_cache), ids, max_new_tokens,
                          temperature=temperature, top_k=top_k, top_p=top_p, greedy=greedy, rng=rng,
                          stop_token=stop_token)
    return out[0] if flat else out


def generate_seq2seq(model, src, max_new_tokens=20, temperature=1.0, top_k=None, top_p=None, greedy=False, *,
                     src_padding_mask=None, start_token=STOP_TOKEN, seed=None, generator=None,
                     stop_token=STOP_TOKEN, use_cache=True) -> np.ndarray:
    """Decode a target for each source sequence of ``src`` ((S,) or (B, S) ids) with an
    ``EncoderDecoder``: the target starts as ``[start_token]`` and grows as in ``generate``.
    Returns the target ids including the start token: (T',) for a 1-D ``src``, else (B, T')."""
    temperature, top_k, top_p = check_sampling_args(temperature, top_k, top_p, greedy)
    if not isinstance(model, EncoderDecoder):
        raise TypeError(f"generate_seq2seq needs an EncoderDecoder, got {type(model).__name__}")
    src, flat = as_prompt(src, model.encoder.vocab_size, "src")
    tgt_vocab = model.decoder.vocab_size
    start_token = _check_token(start_token, tgt_vocab, "start_token")
    if start_token is None:
        raise TypeError("start_token must be an int token id (the decoder's first input)")
    stop_token = _check_token(stop_token, tgt_vocab, "stop_token")
    max_new_tokens = _check_count(max_new_tokens, "max_new_tokens")
    rng = _rng(seed, generator)
    tgt = np.full((src.shape[0], 1), start_token, dtype=np.int64)
    with inference_mode(model):
        source = NextLogitsSeq2Seq(model, src, src_padding_mask, use_cache)
        out = decode_loop(source, tgt, max_new_tokens, temperature=temperature, top_k=top_k, top_p=top_p,
                          greedy=greedy, rng=rng, stop_token=stop_token)
    return out[0] if flat else out


def generate_names(model, vocab, num_names=10, max_len=None, temperature=1.0, top_k=None, top_p=None, *,
                   seed=None, generator=None, use_cache=True) -> list[str]:
    """Sample ``num_names`` names from a names language model: start each from the sentinel
    '$' (``vocab.sentinel_id``), stop at the next '$' (or after ``max_len`` characters, default
    the model's ``block_size``), decode without the sentinels."""
    max_len = getattr(model, "block_size", 16) if max_len is None else _check_count(max_len, "max_len")
    prompt = np.full((_check_count(num_names, "num_names"), 1), vocab.sentinel_id, dtype=np.int64)
    if prompt.shape[0] == 0:
        return []
    ids = generate(model, prompt, max_len, temperature, top_k, top_p, seed=seed, generator=generator,
                   stop_token=vocab.sentinel_id, use_cache=use_cache)
    return [vocab.decode(row[1:]).split(vocab.sentinel)[0] for row in ids]


# --------------------------------------------------------------------------- timing (for the benchmark)

def time_generation(model, prompt_len: int, n_tokens: int, use_cache: bool, *, batch_size: int = 1,
                    repeats: int = 3, seed: int = 0) -> dict:
    """Time greedy generation of ``n_tokens`` tokens after a random prompt of ``prompt_len`` ids.

    Each repeat runs the decoding loop once: the first step (the prompt's forward -- the cache's
    prefill) is timed apart from the ``n_tokens - 1`` steps after it, which each add one token
    to a context of ``prompt_len .. prompt_len + n_tokens - 2`` tokens. No stop token. Returns
    the medians over ``repeats`` in seconds: ``first_step_s``, ``per_token_s`` (the later
    steps' mean), ``total_s``; and the settings. Put ``prompt_len + n_tokens - 1 <=
    block_size`` to stay within the cache. (Single-threaded BLAS gives steadier numbers on a
    shared machine: ``OPENBLAS_NUM_THREADS=1``.)
    """
    prompt_len = _check_count(prompt_len, "prompt_len")
    n_tokens = _check_count(n_tokens, "n_tokens")
    if prompt_len < 1 or n_tokens < 2:
        raise ValueError(f"time_generation needs prompt_len >= 1 and n_tokens >= 2, got {prompt_len}, {n_tokens}")
    ids = np.random.default_rng(seed).integers(0, model.vocab_size, (batch_size, prompt_len))
    first, later, total = [], [], []
    with inference_mode(model):
        for _ in range(_check_count(repeats, "repeats") or 1):
            next_logits = NextLogits(model, batch_size, use_cache)
            seq = ids
            t0 = time.perf_counter()
            for step in range(n_tokens):
                nxt = sample_next(next_logits(seq), greedy=True)
                seq = np.concatenate([seq, nxt[:, None]], axis=1)
                if step == 0:
                    t1 = time.perf_counter()
            t2 = time.perf_counter()
            first.append(t1 - t0)
            later.append((t2 - t1) / (n_tokens - 1))
            total.append(t2 - t0)
    return {"first_step_s": float(np.median(first)), "per_token_s": float(np.median(later)),
            "total_s": float(np.median(total)), "prompt_len": prompt_len, "n_tokens": n_tokens,
            "batch_size": batch_size, "use_cache": bool(use_cache), "repeats": len(total)}
