"""Modules that resize or pad the spatial dimensions, as ``torch.nn``'s: ``Upsample``,
``UpsamplingNearest2d``, ``UpsamplingBilinear2d`` (``F.interpolate``) and the padding layers
``ReflectionPad1d/2d/3d``, ``ReplicationPad1d/2d/3d``, ``ZeroPad1d/2d/3d``, ``ConstantPad1d/2d/3d``,
``CircularPad1d/2d/3d`` (``F.pad``)."""
from __future__ import annotations

import numbers

from ..functional.pad import pad
from ..functional.resample import interpolate
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class Upsample(Module):
    """``F.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)``."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor is not None else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                           recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(mode='nearest')`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(mode='bilinear', align_corners=True)`` for 4-D input."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


def _padding(padding, dims: int, layer: str) -> tuple:
    """An int (every side) or a 2·dims tuple (left, right, top, bottom, front, back)."""
    if isinstance(padding, numbers.Integral) and not isinstance(padding, bool):
        return (int(padding),) * (2 * dims)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * dims and all(
            isinstance(p, numbers.Integral) and not isinstance(p, bool) for p in padding):
        return tuple(int(p) for p in padding)
    raise TypeError(f"{layer}: padding must be an int or a tuple of {2 * dims} ints, got {padding!r}")


class _Pad(Module):
    _mode = "constant"
    _dims = 1

    def __init__(self, padding, value: float = 0.0):
        super().__init__()
        self.padding = _padding(padding, self._dims, type(self).__name__)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return pad(input, self.padding, "constant", self.value)
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        if type(self).__name__.startswith("Constant"):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


def _pad_class(name: str, mode: str, dims: int, doc: str):
    """``ConstantPadNd(padding, value)``; the others take ``padding`` only."""
    cls = type(name, (_Pad,), {"_mode": mode, "_dims": dims, "__doc__": doc, "__module__": __name__})
    if name.startswith("Zero"):
        cls.__init__ = lambda self, padding: _Pad.__init__(self, padding, 0.0)
    elif not name.startswith("Constant"):
        cls.__init__ = lambda self, padding: _Pad.__init__(self, padding)
    return cls


_KINDS = {"Reflection": "reflect", "Replication": "replicate", "Zero": "constant", "Constant": "constant",
          "Circular": "circular"}
for _kind, _mode in _KINDS.items():
    for _dims in (1, 2, 3):
        _name = f"{_kind}Pad{_dims}d"
        globals()[_name] = _pad_class(_name, _mode, _dims, f"``F.pad(input, padding, {_mode!r})`` over the last "
                                                          f"{_dims} dimension(s); ``padding`` an int or "
                                                          f"{2 * _dims} ints (last dimension first).")
