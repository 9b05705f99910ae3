"""torch's ``RemovableHandle`` (``torch.utils.hooks``): what every ``register_*_hook`` returns."""
from __future__ import annotations

import itertools


class RemovableHandle:
    """Returned by ``register_forward_hook``, ``register_post_accumulate_grad_hook``, ...:
    ``handle.remove()`` unregisters the hook (also usable as a context manager)."""

    _ids = itertools.count()

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False
