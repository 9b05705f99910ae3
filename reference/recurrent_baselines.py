"""PyTorch twins of ``tinygrad_tx.models.recurrent_baselines``: the names baselines of section 1.

* ``RecurrentLM``  -- embedding, ``nn.RNN`` / ``nn.GRU`` / ``nn.LSTM`` (batch first), ``lm_head``.
* ``BagOfWordsLM`` -- makemore's ``bow``: token + position embeddings, blocks of
  ``x + causal average of the past`` and ``x + MLP(x)``, ``lm_head``.
* ``WaveNetLM``    -- a dilated causal CNN: ``Conv1d`` with dilations kernel_size**i on the
  left-padded sequence, ``x + tanh(conv(x))``, ``lm_head``.

Every forward is (logits (B, T, V), loss), with the GPT rule for targets.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from tinygrad_tx.models.inputs import check_token_ids
from tinygrad_tx.models.recurrent_baselines import CELLS, check_length, check_positive, dilations

from ._twin import TwinModule, np_of
from .gpt import lm_loss

TORCH_CELLS = {"rnn": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}
assert set(TORCH_CELLS) == set(CELLS)


class RecurrentLM(TwinModule):
    """
    Embedding -> RNN / GRU / LSTM over time (zero initial state) -> next-token logits at every step.
    """
    def __init__(self, vocab_size, block_size=16, d_model=64, hidden=64, n_layers=1, cell="gru"):
        super().__init__()
        if cell not in TORCH_CELLS:
            raise ValueError(f"cell must be one of {sorted(TORCH_CELLS)}, got {cell!r}")
        self.vocab_size = check_positive(vocab_size, "vocab_size")
        self.block_size = check_positive(block_size, "block_size")
        self.cell = cell
        self.token_embedding = nn.Embedding(vocab_size, check_positive(d_model, "d_model"))
        self.rnn = TORCH_CELLS[cell](d_model, check_positive(hidden, "hidden"), check_positive(n_layers, "n_layers"),
                                     batch_first=True)
        self.lm_head = nn.Linear(hidden, vocab_size)

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx")
        check_length(idx.shape[1])
        h, _ = self.rnn(self.token_embedding(idx))   # (B, T, hidden)
        logits = self.lm_head(h)                     # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss


class BoWBlock(TwinModule):
    """
    Causal bag of words: every position adds the mean of positions 0..t, then an MLP (residual both).
    """
    def __init__(self, d_model, hidden):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden), nn.Tanh(), nn.Linear(hidden, d_model))

    def forward(self, x):
        T = x.size(1)
        counts = torch.arange(1, T + 1, dtype=x.dtype, device=x.device).unsqueeze(1)   # (T, 1)
        x = x + x.cumsum(dim=1) / counts                                                # mean of the past
        return x + self.mlp(x)


class BagOfWordsLM(TwinModule):
    """
    makemore's BoW: token + position embeddings, n_layers BoW blocks, a linear head.
    """
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
        check_token_ids(np_of(idx), self.vocab_size, "idx")
        T = idx.shape[1]
        check_length(T, self.block_size)
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.token_embedding(idx) + self.pos_embedding(pos)   # (B, T, d_model)
        logits = self.lm_head(self.blocks(x))                     # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss


class WaveNetLM(TwinModule):
    """
    Dilated causal CNN: Conv1d layers with dilation 1, k, k^2, ... on the left-padded sequence.
    """
    def __init__(self, vocab_size, block_size=16, d_model=64, n_layers=4, kernel_size=2):
        super().__init__()
        self.vocab_size = check_positive(vocab_size, "vocab_size")
        self.block_size = check_positive(block_size, "block_size")
        self.kernel_size = check_positive(kernel_size, "kernel_size", 2)
        self.dilations = dilations(check_positive(n_layers, "n_layers"), kernel_size)
        self.token_embedding = nn.Embedding(vocab_size, check_positive(d_model, "d_model"))
        self.convs = nn.ModuleList([nn.Conv1d(d_model, d_model, kernel_size, dilation=d) for d in self.dilations])
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx, targets=None):
        check_token_ids(np_of(idx), self.vocab_size, "idx")
        check_length(idx.shape[1])
        x = self.token_embedding(idx).transpose(1, 2)        # (B, d_model, T)
        for conv, d in zip(self.convs, self.dilations):
            x = x + torch.tanh(conv(F.pad(x, ((self.kernel_size - 1) * d, 0))))   # causal: pad the left only
        logits = self.lm_head(x.transpose(1, 2))             # (B, T, vocab_size)
        loss = None if targets is None else lm_loss(logits, targets)
        return logits, loss
