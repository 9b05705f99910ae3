"""PyTorch twin of ``tinygrad_tx.generation``: the tutorial's section-9.2 ``generate``, written in
torch ops, with the same sampling rules (see ``tinygrad_tx.generation.sampling`` for the
definitions: temperature, top-k with ties kept, nucleus top-p over a stable descending sort,
inverse-CDF sampling from uniforms).

Differences from the tutorial's code, all additions: ``top_p`` and ``greedy``; the stop token
is an argument (``stoi['$'] == 0`` by default) and stopping works per row of a batch (finished
rows are filled with the stop token); ``uniforms`` replaces ``torch.multinomial`` by the
inverse-CDF rule so that a run can be reproduced draw for draw by ``tinygrad_tx.generation``;
the arguments are checked by the same functions as ours; the model's previous train/eval mode
is restored afterwards. There is no KV cache here: this is the plain loop the cache is
checked against.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from tinygrad_tx.generation.sampling import MIN_TEMPERATURE, check_logits, check_sampling_args, check_uniform

from ._twin import np_of

STOP_TOKEN = 0


def filter_logits(logits, temperature=1.0, top_k=None, top_p=None):
    """float64 logits / temperature, with the tokens top-k and top-p remove set to -inf."""
    temperature, top_k, top_p = check_sampling_args(temperature, top_k, top_p)
    check_logits(np_of(logits))
    x = logits.to(torch.float64)
    logits = x / max(temperature, MIN_TEMPERATURE)  # Scale by temperature (a new tensor)
    if (torch.isinf(logits) & torch.isfinite(x)).any():
        raise ValueError(f"logits / temperature overflows float64 (largest |logit| "
                         f"{x[torch.isfinite(x)].abs().max().item()}, temperature {temperature}); "
                         f"use greedy=True or a larger temperature")

    # Optional Top-K truncation (the tutorial's two lines: ties with the k-th logit survive)
    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits[logits < v[:, [-1]]] = -float('Inf')

    # Optional Top-P (nucleus): keep the most probable tokens until their mass reaches top_p
    if top_p is not None:
        probs = F.softmax(logits, dim=-1)
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        cum = torch.cumsum(sorted_probs, dim=-1)
        before = torch.cat([torch.zeros_like(cum[:, :1]), cum[:, :-1]], dim=-1)  # mass ranked above
        remove_sorted = before >= top_p
        remove = torch.zeros_like(remove_sorted).scatter(1, order, remove_sorted)
        logits = logits.masked_fill(remove, -float('Inf'))
    return logits


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    return F.softmax(filter_logits(logits, temperature, top_k, top_p), dim=-1)


def inverse_cdf(probs, uniform):
    """First index with cumsum(probs) > u * sum(probs) (searchsorted, right), capped at the last
    index of non-zero probability."""
    cdf = torch.cumsum(probs, dim=-1)
    target = uniform * cdf[:, -1]
    idx = torch.searchsorted(cdf, target[:, None], right=True).squeeze(1)
    positions = torch.arange(probs.size(-1), device=probs.device).expand_as(probs)
    last = torch.where(probs > 0, positions, -1).amax(dim=-1)
    return torch.minimum(idx, last)


def sample_next(logits, *, temperature=1.0, top_k=None, top_p=None, greedy=False, uniform=None,
                generator=None):
    """Next token ids (B,) from logits (B, V): argmax when ``greedy``; else inverse-CDF with the
    given ``uniform`` draws (B,), or ``torch.multinomial`` (with ``generator``) when none are given."""
    check_sampling_args(temperature, top_k, top_p, greedy)
    if greedy:
        check_logits(np_of(logits))
        return torch.argmax(logits.to(torch.float64), dim=-1)  # first maximal index
    probs = next_token_probs(logits, temperature, top_k, top_p)
    if uniform is None:
        return torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
    u = torch.as_tensor(check_uniform(np_of(uniform), probs.size(0)), device=probs.device)
    return inverse_cdf(probs, u)


def _decode(next_logits, idx, max_new_tokens, temperature, top_k, top_p, greedy, stop_token, generator,
            uniforms):
    if uniforms is not None:
        uniforms = np.asarray(uniforms, dtype=np.float64)
        if uniforms.shape != (max_new_tokens, idx.size(0)):
            raise ValueError(f"uniforms must have shape (max_new_tokens, batch) = "
                             f"({max_new_tokens}, {idx.size(0)}), got {tuple(uniforms.shape)}")
    done = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)
    for step in range(max_new_tokens):
        logits = next_logits(idx)
        next_idx = sample_next(logits, temperature=temperature, top_k=top_k, top_p=top_p, greedy=greedy,
                               uniform=None if uniforms is None or greedy else uniforms[step],
                               generator=generator)
        if stop_token is not None:
            next_idx = torch.where(done, stop_token, next_idx)
            done |= next_idx == stop_token
        # Append new token to sequence
        idx = torch.cat((idx, next_idx[:, None]), dim=1)
        # Terminate early once every row has generated the sentinel
        if bool(done.all()):
            break
    return idx


class _eval_mode:
    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.modes = [(m, m.training) for m in self.model.modules()]
        self.model.eval()

    def __exit__(self, *exc):
        for m, mode in self.modes:
            m.training = mode


@torch.inference_mode()
def generate(model, prompt, max_new_tokens=20, temperature=1.0, top_k=None, top_p=None, greedy=False, *,
             stop_token=STOP_TOKEN, generator=None, uniforms=None):
    """The tutorial's autoregressive loop. ``prompt`` (B, T) ids (a LongTensor). ``uniforms``
    (max_new_tokens, B): the draws of each step (inverse-CDF); without them ``torch.multinomial``."""
    check_sampling_args(temperature, top_k, top_p, greedy)
    block_size = model.block_size

    def next_logits(idx):
        # Crop context if it exceeds model block size; forward; logits of the last position
        idx_cond = idx[:, -block_size:] if idx.size(1) > block_size else idx
        logits, _ = model(idx_cond)
        return logits[:, -1, :]

    with _eval_mode(model):
        return _decode(next_logits, prompt, max_new_tokens, temperature, top_k, top_p, greedy, stop_token,
                       generator, uniforms)


@torch.inference_mode()
def generate_seq2seq(model, src, max_new_tokens=20, temperature=1.0, top_k=None, top_p=None, greedy=False, *,
                     src_padding_mask=None, start_token=STOP_TOKEN, stop_token=STOP_TOKEN, generator=None,
                     uniforms=None):
    """``generate`` for an ``EncoderDecoder``: the target starts as ``[start_token]``; every step
    runs ``model(src, target)`` on the last ``block_size`` target tokens."""
    check_sampling_args(temperature, top_k, top_p, greedy)
    block_size = model.decoder.block_size

    def next_logits(tgt):
        tgt_cond = tgt[:, -block_size:] if tgt.size(1) > block_size else tgt
        logits, _ = model(src, tgt_cond, src_padding_mask=src_padding_mask)
        return logits[:, -1, :]

    tgt = torch.full((src.size(0), 1), start_token, dtype=torch.long, device=src.device)
    with _eval_mode(model):
        return _decode(next_logits, tgt, max_new_tokens, temperature, top_k, top_p, greedy, stop_token,
                       generator, uniforms)
