"""Text generation (tutorial section 9.2): sampling strategies and KV caches.

* ``sampling``: one step, logits (B, V) -> ids (B,): greedy, temperature, top-k, nucleus
  top-p, by inverse-CDF sampling from uniform draws (``sample_next``, ``next_token_probs``).
  Twin: ``reference.generation``.
* ``kv_cache``: ``GPTKVCache`` / ``gpt_forward_cached`` and ``Seq2SeqKVCache`` /
  ``decoder_forward_cached``: each new token costs one position's forward instead of the
  whole prefix's.
* ``generate``: ``generate(model, prompt, ...)``, ``generate_seq2seq(model, src, ...)``,
  ``generate_names(model, vocab, ...)`` and ``time_generation`` (cached vs uncached timing).
"""
from .generate import (STOP_TOKEN, NextLogits, NextLogitsSeq2Seq, decode_loop, generate, generate_names,
                       generate_seq2seq, inference_mode, time_generation)
from .kv_cache import (GPTKVCache, KVCache, Seq2SeqKVCache, decoder_forward_cached, gpt_forward_cached)
from .sampling import (MIN_TEMPERATURE, check_logits, check_sampling_args, filter_logits, inverse_cdf,
                       next_token_probs, sample_next)

__all__ = [
    "GPTKVCache", "KVCache", "MIN_TEMPERATURE", "NextLogits", "NextLogitsSeq2Seq", "STOP_TOKEN", "Seq2SeqKVCache",
    "check_logits", "check_sampling_args", "decode_loop", "decoder_forward_cached", "filter_logits", "generate",
    "generate_names", "generate_seq2seq", "gpt_forward_cached", "inference_mode", "inverse_cdf",
    "next_token_probs", "sample_next", "time_generation",
]
