"""``torch.random``: the default generator's seed and state (the same functions as
``tinygrad_tx.manual_seed`` & co.), and ``fork_rng``, which restores the state on exit."""
from __future__ import annotations

from contextlib import contextmanager

from .generator import get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng"]


@contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cpu"):
    """Run the block with the default generator's state saved and restored afterwards (torch's
    ``torch.random.fork_rng``; only the cpu generator exists here)."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
