"""PyTorch twins of ``tinygrad_tx.models.baselines``: the tutorial's baselines.

* ``BigramCountModel`` -- section 3.2: count bigrams, add Laplace smoothing ``alpha``, normalise rows.
* ``NeuralBigram``     -- the same table learned by gradient descent: one ``nn.Embedding(V, V)``
  whose row i is the logit vector of the token after token i (identical to one_hot(i) @ W).
* ``FlattenMLP``       -- section 5.3: embed, flatten T*d_model, Linear, activation, Linear; it
  cannot read any length but its fixed window (the section's first failure mode).

Every baseline's forward is (logits, loss), with the GPT rule for targets.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.inputs import bigram_pairs, check_targets, encode_sequences, check_token_ids, check_window

from ._twin import TwinModule, np_of
from .gpt import lm_loss

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU}


class BigramCountModel(TwinModule):
    """
    Count-based bigram model with Laplace smoothing alpha (section 3.2).
    """
    def __init__(self, vocab_size, alpha=1.0):
        super().__init__()
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}")
        self.vocab_size = vocab_size
        self.alpha = alpha
        self.register_buffer("counts", torch.zeros((vocab_size, vocab_size), dtype=torch.int32))

    def fit(self, sequences, stoi=None, boundary=None):
        """Add the bigram counts of ``sequences`` (id lists, or strings with ``stoi``)."""
        prev, nxt = self._pairs(sequences, stoi, boundary)
        # N(c_i, c_j) += 1 for every consecutive pair (ch1, ch2): count each flat index i * V + j
        V = self.vocab_size
        self.counts += torch.bincount(prev * V + nxt, minlength=V * V).view(V, V).to(self.counts.dtype)
        return self

    def _pairs(self, sequences, stoi, boundary):
        """Every consecutive (previous, next) id pair of the sequences, as two long tensors."""
        pairs = bigram_pairs(encode_sequences(sequences, stoi, boundary), self.vocab_size)
        return tuple(torch.tensor(p, dtype=torch.long, device=self.counts.device) for p in pairs)

    @property
    def probs(self):
        """P(c_j | c_i) = (N(c_i, c_j) + alpha) / sum_k (N(c_i, c_k) + alpha)."""
        probs = self.counts.float() + self.alpha
        return probs / probs.sum(dim=1, keepdim=True)

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx", ndim=(1, 2))
        logits = torch.log(self.probs)[idx]   # log-probabilities are logits: softmax(log p) = p
        loss = None if targets is None else bigram_loss(logits, idx, targets)
        return logits, loss

    def nll(self, sequences, stoi=None, boundary=None):
        """Mean negative log-likelihood per predicted token of ``sequences``."""
        prev, nxt = self._pairs(sequences, stoi, boundary)
        if prev.numel() == 0:
            raise ValueError("nll needs at least one sequence of two or more tokens")
        return float(-torch.log(self.probs[prev, nxt]).mean())


def bigram_loss(logits, idx, targets):
    """Targets of idx's shape score every position; with 2-D idx, 1-D targets score the last."""
    if idx.dim() == 1:
        if tuple(targets.shape) != tuple(idx.shape):
            raise ValueError(f"targets must have the inputs' shape {tuple(idx.shape)}, got {tuple(targets.shape)}")
        check_targets(np_of(targets), logits.shape, logits.size(-1))
        return F.cross_entropy(logits, targets)
    return lm_loss(logits, targets)


class NeuralBigram(TwinModule):
    """
    Bigram model trained by gradient descent: logits_table[i] are the next-token logits after i.
    """
    def __init__(self, vocab_size):
        super().__init__()
        self.vocab_size = vocab_size
        self.logits_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx", ndim=(1, 2))
        logits = self.logits_table(idx)       # idx.shape + (vocab_size,)
        loss = None if targets is None else bigram_loss(logits, idx, targets)
        return logits, loss


class FlattenMLP(TwinModule):
    """
    Section 5.3's naive baseline: embed a fixed window, flatten it, and run an MLP on it.
    """
    def __init__(self, vocab_size, block_size, d_model=16, hidden=128, activation="tanh"):
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {activation!r}")
        self.vocab_size = vocab_size
        self.block_size = block_size
        self.d_model = d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.mlp = nn.Sequential(
            nn.Linear(block_size * d_model, hidden),   # W_1: d_hidden x (T * d_model)
            ACTIVATIONS[activation](),
            nn.Linear(hidden, vocab_size),
        )

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx")
        B, T = idx.shape
        check_window(T, self.block_size, self.d_model)
        x = self.token_embedding(idx).view(B, T * self.d_model)   # (B, T * d_model)
        logits = self.mlp(x)                                        # (B, vocab_size)
        loss = None
        if targets is not None:
            if tuple(targets.shape) != (B,):
                raise ValueError(f"targets must have shape ({B},) (the token after each window), "
                                 f"got {tuple(targets.shape)}")
            check_targets(np_of(targets), logits.shape, self.vocab_size)
            loss = F.cross_entropy(logits, targets)
        return logits, loss
