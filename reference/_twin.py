"""What every PyTorch twin shares: ``TwinModule`` and tensor-to-NumPy for the shared checks."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn


def _as_torch(value):
    """A state-dict value as a torch tensor: torch tensors pass through; anything else that
    NumPy can read (a tinygrad_tx Tensor, an ndarray) is converted."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.from_numpy(np.array(np.asarray(value), copy=True))


class TwinModule(nn.Module):
    """``nn.Module`` whose ``load_state_dict`` also accepts tinygrad_tx tensors and NumPy arrays,
    so ``twin.load_state_dict(ours.state_dict())`` works without a conversion step."""

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        return super().load_state_dict({k: _as_torch(v) for k, v in state_dict.items()},
                                       strict=strict, assign=assign)


def np_of(t) -> np.ndarray:
    """A tensor's values as NumPy (for the shared input checks)."""
    if isinstance(t, torch.Tensor):
        return t.detach().cpu().numpy()
    return np.asarray(t)
