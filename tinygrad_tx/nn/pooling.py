"""Pooling layers and channel dropout: ``MaxPool1d/2d``, ``AvgPool1d/2d``, ``AdaptiveAvgPool1d/2d``,
``AdaptiveMaxPool1d/2d``, ``Dropout2d``.

Each holds torch's constructor arguments as attributes (the same names, the same defaults:
``stride=None`` means the kernel size) and reprs, has no parameters, and calls the functional op
of ``tinygrad_tx/functional/pooling.py``, where the forward and the hand-written backward live.
"""
from __future__ import annotations

from .. import functional as F
from ..functional._util import check_probability
from ..functional.conv import _tuple
from .activation import _check_inplace
from .layers import _input
from .module import Module


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool2d(_MaxPoolNd):
    """Max over each window of (N, C, H, W) or (C, H, W): ``F.max_pool2d``."""

    def forward(self, input):
        return F.max_pool2d(_input(input, "MaxPool2d"), self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool1d(_MaxPoolNd):
    """Max over each window of (N, C, L) or (C, L): ``F.max_pool1d``."""

    def forward(self, input):
        return F.max_pool1d(_input(input, "MaxPool1d"), self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool2d(Module):
    """Mean over each window of (N, C, H, W) or (C, H, W): ``F.avg_pool2d``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(_input(input, "AvgPool2d"), self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Module):
    """Mean over each window of (N, C, L) or (C, L): ``F.avg_pool1d`` (sizes kept as 1-tuples, as torch)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 1, "kernel_size", "AvgPool1d")
        self.stride = _tuple(stride if stride is not None else kernel_size, 1, "stride", "AvgPool1d")
        self.padding = _tuple(padding, 1, "padding", "AvgPool1d")
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(_input(input, "AvgPool1d"), self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return getattr(F, self._fn)(_input(input, type(self).__name__), self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average over torch's adaptive windows to ``output_size`` (an int, a pair, None keeps a size)."""
    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average over torch's adaptive windows of (N, C, L) to ``output_size``."""
    _fn = "adaptive_avg_pool1d"


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return getattr(F, self._fn)(_input(input, type(self).__name__), self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Max over torch's adaptive windows to ``output_size`` (``return_indices`` as torch)."""
    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Max over torch's adaptive windows of (N, C, L) to ``output_size``."""
    _fn = "adaptive_max_pool1d"


class Dropout2d(Module):
    """In training mode zero whole channels (each (n, c) plane with probability p) and scale the
    rest by 1/(1-p): ``F.dropout2d``; identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = check_probability("Dropout2d", "p", p)
        self.inplace = _check_inplace("Dropout2d", inplace)

    def forward(self, input):
        return F.dropout2d(_input(input, "Dropout2d"), self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
