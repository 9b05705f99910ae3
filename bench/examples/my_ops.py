"""An example for ``tinygrad-tx bench --file bench/examples/my_ops.py`` (format: bench/README.md).

A user-written op (softplus as a tinygrad_tx ``Function`` with its hand-written backward) against
``torch.nn.functional.softplus``, and a PyTorch-style module that runs on both engines: the ours
process loads this file with ``import torch`` answered by tinygrad_tx.
"""
import numpy as np
import torch

import tinygrad_tx as tg


class Softplus(tg.autograd.ArrayFunction):
    """y = log(1 + eˣ).   dy/dx = eˣ / (1 + eˣ) = σ(x), so dL/dx = g · σ(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.logaddexp(0.0, x)             # log(1 + eˣ) without overflow

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1.0 + np.exp(-x))           # g · σ(x)


class MLP(torch.nn.Module):
    """Linear → GELU → Linear, written for PyTorch; the ours process runs it on tinygrad_tx."""

    def __init__(self, d, hidden=4):
        super().__init__()
        self.up = torch.nn.Linear(d, hidden * d)
        self.down = torch.nn.Linear(hidden * d, d)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


BENCH = [
    dict(name="softplus", ours=Softplus.apply, torch=torch.nn.functional.softplus,
         inputs=lambda rng, size: [rng.standard_normal(size)],
         sizes=[(256, 1024), (1024, 1024)], quick_sizes=[(64, 1024)]),
    dict(name="mlp", module=lambda size: MLP(size[-1]),
         inputs=lambda rng, size: [rng.standard_normal(size)],
         sizes=[(16, 128, 256)], quick_sizes=[(4, 32, 64)]),
]
