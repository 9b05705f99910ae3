"""``tinygrad_tx.device``: the engine computes on the CPU (NumPy) only.

``device("cpu")``, ``"cpu"``, ``"cpu:0"`` and None are accepted wherever torch takes a
``device=``; anything else (``"cuda"``, ``"mps"``) is a clear RuntimeError, never ignored.
"""
from __future__ import annotations


class device:
    """A device (torch's ``torch.device``); only ``cpu`` exists here."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string such as 'cpu', got {type!r}")
        name, _, idx = type.partition(":")
        if idx:
            if index is not None:
                raise ValueError(f"device: type {type!r} already names an index; got index={index!r} too")
            if not idx.isdigit():
                raise ValueError(f"device: invalid device string {type!r}")
            index = int(idx)
        if name != "cpu":
            raise RuntimeError(f"device {type!r} is not available: tinygrad_tx computes with NumPy "
                               "on the CPU only (use device='cpu', or drop the device argument)")
        if index not in (None, 0):
            raise RuntimeError(f"device: cpu has a single device, index 0; got {index!r}")
        self.type = "cpu"
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError, TypeError):
                return False
        return isinstance(other, device) and other.type == self.type

    def __hash__(self):
        return hash(self.type)

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")


def check(value, arg: str = "device") -> device:
    """Validate a ``device=`` argument (None, a string, a device, or 0-style ints refused)."""
    if value is None or value is CPU:
        return CPU
    if isinstance(value, device):
        return value
    if isinstance(value, str):
        return device(value)
    raise TypeError(f"{arg} must be a string such as 'cpu' or a tinygrad_tx.device, got {value!r}")
