"""The architectures the tutorial's section 1 argues against, as character-level language models
on names (makemore's ``--type rnn | gru | lstm | bow`` and a WaveNet). Twin:
``reference.recurrent_baselines``.

Every model reads ``idx`` (B, T) and returns ``(logits (B, T, V), loss)``: position t is predicted
from tokens 0..t only (causal), so the GPT's layouts and loss rule (:func:`~.gpt.lm_loss`: targets
(B, T) score every position, (B,) the last; -100 is ignored) apply unchanged, and so do the
training loop, checkpoints and sampling of ``tinygrad-tx train gpt --type ...``. Each is built from
the engine's layers only (``nn.RNN``/``nn.GRU``/``nn.LSTM``, ``nn.Conv1d``, ``nn.Linear``,
``cumsum``): no backward is written here.

* ``RecurrentLM(vocab_size, block_size, d_model, hidden, n_layers, cell)`` -- embed, run an
  ``n_layers``-deep ``nn.RNN`` (tanh), ``nn.GRU`` or ``nn.LSTM`` (``cell``) over time from a zero
  state, project each step's top hidden state to logits. Position t's information about token 0
  has passed through t sequential steps: the O(N) path of section 1. Any length T >= 1 is read;
  ``block_size`` is only the window ``generate`` keeps.
* ``BagOfWordsLM(vocab_size, block_size, d_model, hidden, n_layers)`` -- makemore's ``bow``:
  token + position embeddings, then ``n_layers`` blocks of
  ``x = x + mean_{s <= t} x_s`` (the causal average of the past: attention with every weight
  equal, 1/(t+1)) and ``x = x + Linear(tanh(Linear(x)))``, then ``lm_head``. It sees all of the
  past at once but cannot weigh it: what attention adds is the choice of weights. There is no
  normalisation (makemore's form): at position 0 the average is x_0 itself, so each block doubles
  it, and with 4 blocks the initial loss is ~16 nats instead of ~ln 27 (measured on names.txt;
  it still trains: dev loss 2.11 after 1,500 steps, against 2.19 with one block).
* ``WaveNetLM(vocab_size, block_size, d_model, n_layers, kernel_size)`` -- a dilated causal CNN
  (WaveNet's stack, not makemore's hierarchical FlattenConsecutive form, so that every position
  is scored in one pass like the GPT): layer i is ``nn.Conv1d(d_model, d_model, kernel_size,
  dilation=kernel_size**i)`` on the sequence left-padded with (kernel_size - 1) * dilation zeros
  (so position t sees t, t - d, ... only), with ``x = x + tanh(conv_i(x))``. The receptive field
  is kernel_size**n_layers tokens (16 for kernel 2 and 4 layers): O(log L) layers to see L tokens,
  against O(L / K) for undilated convolutions.
"""
from __future__ import annotations

import functools
import numbers

import numpy as np

from .. import functional as F
from .. import nn
from ..factories import arange
from ..core.tensor import Tensor
from .gpt import as_ids, lm_loss
from .inputs import check_seq_len

CELLS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}


def check_positive(value, name: str, minimum: int = 1) -> int:
    """An int >= ``minimum``; anything else is a ``ValueError`` naming the argument and its value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_length(T: int, block_size=None) -> None:
    """T >= 1 (and T <= block_size when the model has position embeddings)."""
    check_seq_len(T, np.inf if block_size is None else block_size)


def dilations(n_layers: int, kernel_size: int) -> list[int]:
    """kernel_size**i for layer i: with kernel 2 the dilations 1, 2, 4, ..., a receptive field of
    kernel_size**n_layers tokens (1 + sum_i (kernel_size - 1) * kernel_size**i)."""
    return [kernel_size ** i for i in range(n_layers)]


def receptive_field(n_layers: int, kernel_size: int) -> int:
    return 1 + sum((kernel_size - 1) * d for d in dilations(n_layers, kernel_size))


class RecurrentLM(nn.Module):
    """Embedding -> ``nn.RNN``/``nn.GRU``/``nn.LSTM`` (batch first, zero initial state) -> ``lm_head``."""

    def __init__(self, vocab_size, block_size=16, d_model=64, hidden=64, n_layers=1, cell="gru"):
        super().__init__()
        if cell not in CELLS:
            raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}")
        self.vocab_size = check_positive(vocab_size, "vocab_size")
        self.block_size = check_positive(block_size, "block_size")
        self.cell = cell
        self.token_embedding = nn.Embedding(vocab_size, check_positive(d_model, "d_model"))
        self.rnn = CELLS[cell](d_model, check_positive(hidden, "hidden"), check_positive(n_layers, "n_layers"),
                               batch_first=True)
        self.lm_head = nn.Linear(hidden, vocab_size)

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size)
        check_length(idx.shape[1])
        x = self.token_embedding(idx)       # (B, T, d_model)
        h, _ = self.rnn(x)                  # (B, T, hidden): the top layer's state after each step
        logits = self.lm_head(h)            # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss


@functools.lru_cache(maxsize=64)
def _counts(T: int, dtype: np.dtype) -> np.ndarray:
    """(T, 1): 1, 2, ..., T, the number of positions each causal average runs over (read-only)."""
    counts = np.arange(1, T + 1, dtype=dtype)[:, None]
    counts.flags.writeable = False
    return counts


def causal_mean(x: Tensor) -> Tensor:
    """y_t = (x_0 + ... + x_t) / (t + 1) along dim 1 of (B, T, C): the average of the past,
    i.e. causal attention whose weights are all equal (softmax of an all-zero masked score)."""
    return x.cumsum(1) / Tensor(_counts(x.shape[1], x._data.dtype))


class BoWBlock(nn.Module):
    """``x + causal_mean(x)``, then ``x + mlp(x)`` with ``mlp`` = Linear, tanh, Linear."""

    def __init__(self, d_model, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.Tanh(), nn.Linear(hidden, d_model))

    def forward(self, x):
        x = x + causal_mean(x)
        return x + self.mlp(x)


class BagOfWordsLM(nn.Module):
    """makemore's ``bow``: token + position embeddings, ``n_layers`` BoW blocks, ``lm_head``."""

    def __init__(self, vocab_size, block_size=16, d_model=64, hidden=256, n_layers=1):
        super().__init__()
        self.vocab_size = check_positive(vocab_size, "vocab_size")
        self.block_size = check_positive(block_size, "block_size")
        self.token_embedding = nn.Embedding(vocab_size, check_positive(d_model, "d_model"))
        self.pos_embedding = nn.Embedding(block_size, d_model)
        self.blocks = nn.Sequential(*[BoWBlock(d_model, check_positive(hidden, "hidden"))
                                      for _ in range(check_positive(n_layers, "n_layers"))])
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size)
        T = idx.shape[1]
        check_length(T, self.block_size)
        x = self.token_embedding(idx) + self.pos_embedding(arange(0, T))   # (B, T, d_model)
        logits = self.lm_head(self.blocks(x))                              # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss


class WaveNetLM(nn.Module):
    """Dilated causal CNN: embedding, ``n_layers`` residual ``tanh(Conv1d)`` layers with dilations
    kernel_size**i, ``lm_head``. ``convs[i]`` is the plain ``nn.Conv1d`` (padding 0); the causal
    left padding is applied before it."""

    def __init__(self, vocab_size, block_size=16, d_model=64, n_layers=4, kernel_size=2):
        super().__init__()
        self.vocab_size = check_positive(vocab_size, "vocab_size")
        self.block_size = check_positive(block_size, "block_size")
        self.kernel_size = check_positive(kernel_size, "kernel_size", 2)   # kernel 1 never sees the past
        self.dilations = dilations(check_positive(n_layers, "n_layers"), kernel_size)
        self.token_embedding = nn.Embedding(vocab_size, check_positive(d_model, "d_model"))
        self.convs = nn.ModuleList([nn.Conv1d(d_model, d_model, kernel_size, dilation=d) for d in self.dilations])
        self.lm_head = nn.Linear(d_model, vocab_size)

    @property
    def receptive_field(self) -> int:
        return receptive_field(len(self.dilations), self.kernel_size)

    def forward(self, idx, targets=None):
        idx = as_ids(idx, self.vocab_size)
        check_length(idx.shape[1])
        x = self.token_embedding(idx).transpose(1, 2)      # (B, d_model, T): channels first for Conv1d
        for conv, d in zip(self.convs, self.dilations):
            # left-pad so that output t reads inputs t - (k-1)d, ..., t - d, t only: causal
            x = x + F.tanh(conv(F.pad(x, ((self.kernel_size - 1) * d, 0))))
        logits = self.lm_head(x.transpose(1, 2))           # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss
