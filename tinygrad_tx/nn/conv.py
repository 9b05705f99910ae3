"""Convolution layers: ``Conv1d``, ``Conv2d`` (general: stride, padding incl. 'same'/'valid',
dilation, groups, bias, padding_mode zeros/reflect/replicate/circular).

Each layer holds torch's attributes (``kernel_size``, ``stride``, ``padding``, ``dilation``,
``groups``, ``padding_mode``, ``_reversed_padding_repeated_twice``), parameters ``weight``
(out_channels, in_channels/groups, *kernel_size) and ``bias`` (out_channels,), initialised as
torch does (``kaiming_uniform_(weight, a=√5)``: U(−k, k), k = 1/√(in_channels/groups·∏kernel),
the bias from the same interval), and computes ``F.conv1d``/``F.conv2d`` (forward and
hand-written backward in ``tinygrad_tx/functional/conv.py``). A padding_mode other than zeros
pads first with ``F.pad`` and convolves without padding, as torch's ``_conv_forward``.

The ViT's patch projection, ``Conv2d(C, D, kernel_size=P, stride=P)``, takes the convolution's
patch-case fast path (``functional.conv._patch_cols``/``_patch_col2im``: im2col and col2im as
one reshape, proven bit-equal to the general path by tests/test_conv_pool.py).
"""
from __future__ import annotations

import numbers

from .. import functional as F
from .._factory_args import InvalidArgumentError
from ..functional.conv import _tuple
from .layers import _FanInLayer, _input, _size

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(_FanInLayer):
    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        layer, nd = type(self).__name__, self._nd
        from ..device import check as _check_device
        _check_device(device, f"{layer}: device")
        self.in_channels = _size(in_channels, "in_channels", layer, 1)
        self.out_channels = _size(out_channels, "out_channels", layer, 1)
        if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups <= 0:
            raise ValueError(f"{layer}: groups must be a positive integer, got groups={groups!r}")
        if in_channels % groups:
            raise ValueError(f"{layer}: in_channels must be divisible by groups, got in_channels={in_channels}, "
                             f"groups={groups}")
        if out_channels % groups:
            raise ValueError(f"{layer}: out_channels must be divisible by groups, got out_channels={out_channels}, "
                             f"groups={groups}")
        self.kernel_size = _tuple(kernel_size, nd, "kernel_size", layer)
        if min(self.kernel_size) < 1:
            raise InvalidArgumentError(f"{layer}: kernel_size must be positive, got kernel_size={self.kernel_size}")
        self.stride = _tuple(stride, nd, "stride", layer)
        self.dilation = _tuple(dilation, nd, "dilation", layer)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{layer}: Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{layer}: padding='same' is not supported for strided convolutions "
                                 f"(stride={self.stride})")
            self.padding = padding
        else:
            self.padding = _tuple(padding, nd, "padding", layer)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{layer}: padding_mode must be one of {set(_PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.groups, self.padding_mode = int(groups), padding_mode
        self.transposed, self.output_padding = False, (0,) * nd
        if self.padding == "valid":
            pads = [(0, 0)] * nd
        elif self.padding == "same":
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(self.dilation, self.kernel_size)]
        else:
            pads = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [v for lo_hi in reversed(pads) for v in lo_hi]
        self._create_parameters((self.out_channels, self.in_channels // self.groups) + self.kernel_size,
                                bias, dtype, layer)

    def forward(self, input):
        x = _input(input, type(self).__name__)
        conv = F.conv2d if self._nd == 2 else F.conv1d
        if self.padding_mode != "zeros":
            x = F.pad(x, tuple(self._reversed_padding_repeated_twice), mode=self.padding_mode)
            return conv(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        nd = self._nd
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * nd:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * nd:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) or (C, H, W): ``F.conv2d`` with this layer's weight and
    bias (torch's arguments, attributes, init and state-dict keys ``weight``, ``bias``)."""

    _nd = 2


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L): ``F.conv1d`` (torch's arguments, attributes, init
    and state-dict keys)."""

    _nd = 1
