"""``tinygrad_tx.utils`` (torch's ``torch.utils``): :mod:`.data` — ``Dataset``, ``DataLoader`` and friends."""
from . import data

__all__ = ["data"]
