"""``tinygrad-tx train bigram``: the section-3.2 count model, fitted on the train split.

P(c_j | c_i) = (N(c_i, c_j) + alpha) / sum_k (N(c_i, c_k) + alpha), counted over the
'$' + name + '$' of the training names. Its NLL is the same per-character quantity as the
GPT's loss (every character of '$name$' after the first, predicted from the one before it),
so the two numbers compare directly; the tutorial expects about 2.45 nats on names.txt.
"""
from __future__ import annotations

import numpy as np

from ..data import CharVocab
from ..models import BigramCountModel
from .config import BigramConfig
from .gpt import corpus_name, load_split, mark_novel


def sample_bigram(model: BigramCountModel, vocab: CharVocab, num: int, seed: int, max_len: int = 30) -> list[str]:
    """Names drawn from the table: start at '$', draw each next character from its row,
    stop at '$' (or after ``max_len`` letters)."""
    probs = model.probs._data.astype(np.float64)
    rng = np.random.default_rng(seed)
    names = []
    for _ in range(num):
        ids, cur = [], vocab.sentinel_id
        for _ in range(max_len + 1):
            row = probs[cur]
            cur = int(np.searchsorted(np.cumsum(row), rng.random() * row.sum(), side="right"))
            cur = min(cur, len(row) - 1)
            if cur == vocab.sentinel_id:
                break
            ids.append(cur)
        names.append(vocab.decode(ids[:max_len]))
    return names


def train_bigram(config: BigramConfig | None = None, log=print, **overrides) -> dict:
    """Count the train split; returns ``{"train_nll", "dev_nll", "test_nll", "samples", "model"}``."""
    config = (config or BigramConfig()).replace(**overrides)
    if config.alpha < 0:
        raise ValueError(f"--alpha must be >= 0, got {config.alpha}")
    names, train, dev, test = load_split(config.data, config.split_seed)
    vocab = CharVocab.tutorial()
    log(f"corpus: {corpus_name(config.data)}: {len(names)} names -> train {len(train)}, dev {len(dev)}, "
        f"test {len(test)} (split seed {config.split_seed})")
    model = BigramCountModel(len(vocab), alpha=config.alpha).fit(train, vocab.stoi, vocab.sentinel)
    result = {}
    for split, part in (("train", train), ("dev", dev), ("test", test)):
        result[f"{split}_nll"] = model.nll(part, vocab.stoi, vocab.sentinel)
    log(f"bigram count model, alpha {config.alpha}: NLL per character (nats) "
        f"train {result['train_nll']:.4f}, dev {result['dev_nll']:.4f}, test {result['test_nll']:.4f}")
    samples = sample_bigram(model, vocab, config.num_samples, config.seed)
    if samples:
        log("sampled names:")
        for line in mark_novel(samples, train, names):
            log(f"  {line}")
    return {**result, "samples": samples, "model": model}
