"""The tutorial's baselines, kept so their failure modes can be shown. Twin: ``reference.baselines``.

* ``BigramCountModel(vocab_size, alpha)`` -- section 3.2: N(c_i, c_j) counted over the
  corpus, P(c_j | c_i) = (N(c_i, c_j) + alpha) / sum_k (N(c_i, c_k) + alpha). No gradients:
  ``fit`` counts. ``counts`` is a persistent int32 buffer (saved in the state dict). With
  alpha = 0 an unseen transition has probability 0 (infinite NLL): the reason for smoothing.
* ``NeuralBigram(vocab_size)`` -- the same table learned by gradient descent: one
  ``nn.Embedding(V, V)`` named ``logits_table`` whose row i holds the logits of the token after
  token i. Looking up row i is exactly one_hot(i) @ W (a Linear on a one-hot vector without
  bias), minus the V-wide multiply. Trained to convergence with cross-entropy, softmax(W)
  approaches the count model's alpha = 0 probabilities.
* ``FlattenMLP(vocab_size, block_size, d_model, hidden, activation)`` -- section 5.3: embed
  the fixed window, flatten (T * d_model), Linear, activation, Linear. Its first weight is
  hidden x (block_size * d_model), so any other length is rejected with a ``ValueError``
  (failure mode 1), a pattern at a different position meets different weights (2), and the
  parameter count grows linearly in the window (3).

Every model's ``forward(idx, targets=None)`` returns ``(logits, loss)``.
"""
from __future__ import annotations

import numpy as np

from .. import functional as F
from .. import nn
from ..core.tensor import Tensor
from .gpt import as_ids, as_targets, lm_loss
from .inputs import bigram_pairs, check_window, encode_sequences

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU}


def bigram_loss(logits, idx, targets):
    """Targets of idx's shape score every position; with 2-D idx, 1-D targets score the last."""
    if idx.ndim == 1:
        if tuple(targets.shape) != tuple(idx.shape):
            raise ValueError(f"targets must have the inputs' shape {tuple(idx.shape)}, got {tuple(targets.shape)}")
        return F.cross_entropy(logits, as_targets(targets, logits.shape, logits.shape[-1]))
    return lm_loss(logits, targets)


class BigramCountModel(nn.Module):
    """Count-based bigram model with Laplace smoothing alpha (section 3.2)."""

    def __init__(self, vocab_size, alpha=1.0):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.vocab_size = vocab_size
        self.alpha = alpha
        self.register_buffer("counts", Tensor(np.zeros((vocab_size, vocab_size), dtype=np.int32)))

    def fit(self, sequences, stoi=None, boundary=None):
        """Add the bigram counts of ``sequences``: token-id sequences, or strings encoded with
        ``stoi`` and wrapped in ``boundary`` (e.g. '$') on both sides."""
        prev, nxt = bigram_pairs(encode_sequences(sequences, stoi, boundary), self.vocab_size)
        np.add.at(self.counts._data, (prev, nxt), 1)   # N(c_i, c_j) += 1 per pair, repeats included
        return self

    @property
    def probs(self) -> Tensor:
        """P(c_j | c_i) = (N(c_i, c_j) + alpha) / sum_k (N(c_i, c_k) + alpha), float32 (V, V)."""
        probs = self.counts._data.astype(np.float32) + np.float32(self.alpha)
        with np.errstate(invalid="ignore", divide="ignore"):
            return Tensor(probs / probs.sum(axis=1, keepdims=True))

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size, ndim=(1, 2))
        with np.errstate(divide="ignore"):
            logits = Tensor(np.log(self.probs._data)[idx._data])   # log p are logits: softmax(log p) = p
        loss = None if targets is None else bigram_loss(logits, idx, targets)
        return logits, loss

    def nll(self, sequences, stoi=None, boundary=None) -> float:
        """Mean negative log-likelihood per predicted token of ``sequences``."""
        prev, nxt = bigram_pairs(encode_sequences(sequences, stoi, boundary), self.vocab_size)
        if prev.size == 0:
            raise ValueError("nll needs at least one sequence of two or more tokens")
        with np.errstate(divide="ignore"):
            return float(-np.log(self.probs._data[prev, nxt]).mean())


class NeuralBigram(nn.Module):
    """Bigram model trained by gradient descent: ``logits_table`` row i = next-token logits after i."""

    def __init__(self, vocab_size):
        super().__init__()
        self.vocab_size = vocab_size
        self.logits_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size, ndim=(1, 2))
        logits = self.logits_table(idx)       # idx.shape + (vocab_size,)
        loss = None if targets is None else bigram_loss(logits, idx, targets)
        return logits, loss


class FlattenMLP(nn.Module):
    """Section 5.3's naive baseline: embed a fixed window, flatten it, and run an MLP on it."""

    def __init__(self, vocab_size, block_size, d_model=16, hidden=128, activation="tanh"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.d_model = d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(
            nn.Linear(block_size * d_model, hidden),   # W_1: hidden x (T * d_model)
            ACTIVATIONS[activation](),
            nn.Linear(hidden, vocab_size),
        )

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size)
        B, T = idx.shape
        check_window(T, self.block_size, self.d_model)
        x = self.token_embedding(idx).view(B, T * self.d_model)   # (B, T * d_model)
        logits = self.mlp(x)                                        # (B, vocab_size)
        loss = None
        if targets is not None:
            if tuple(targets.shape) != (B,):
                raise ValueError(f"targets must have shape ({B},) (the token after each window), "
                                 f"got {tuple(targets.shape)}")
            loss = F.cross_entropy(logits, as_targets(targets, logits.shape, self.vocab_size))
        return logits, loss
