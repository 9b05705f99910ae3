"""``torch.accelerator``: the device-agnostic accelerator API (torch 2.6+), answered for a
computer with none — tinygrad_tx computes on the CPU. Teaching code's

    device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"

then picks "cpu". ``set_device_index`` / ``synchronize`` on a non-existent accelerator raise, as
torch's do without one."""
from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "device_index",
           "set_device_index", "synchronize"]


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False):
    """None: there is no accelerator (torch returns None too when it has none)."""
    return None


def device_count() -> int:
    return 0


def _none(what: str):
    raise RuntimeError(f"torch.accelerator.{what}: no accelerator is available (tinygrad_tx runs on the CPU only)")


def current_device_index() -> int:
    _none("current_device_index()")


def set_device_index(device) -> None:
    _none(f"set_device_index({device!r})")


def synchronize(device=None) -> None:
    _none("synchronize()")


class device_index:
    """``with torch.accelerator.device_index(i):`` — refused, there is no accelerator."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        _none(f"device_index({self.device!r})")

    def __exit__(self, *exc):
        return False
