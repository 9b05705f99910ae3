"""Convolution layers: ``Conv1d``, ``Conv2d`` (general: stride, padding incl. 'same'/'valid',
dilation, groups, bias, padding_mode zeros/reflect/replicate/circular) and ``ConvTranspose1d``,
``ConvTranspose2d`` (weight (in_channels, out_channels/groups, *kernel), ``output_size=`` in forward).

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
from ..errors import InvalidArgumentError
from ..functional.conv import _tuple
from .layers import _FanInLayer, _input, _size

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(_FanInLayer):
    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, _transposed=False):
        super().__init__()
        layer, nd = type(self).__name__, self._nd
        from ..core.device import check as _check_device
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
        self.transposed, self.output_padding = _transposed, (0,) * nd
        if self.padding == "valid":
            pads = [(0, 0)] * nd
        elif self.padding == "same":
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(self.dilation, self.kernel_size)]
        else:
            pads = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [v for lo_hi in reversed(pads) for v in lo_hi]
        shape = (self.in_channels, self.out_channels // self.groups) if _transposed else \
            (self.out_channels, self.in_channels // self.groups)
        self._create_parameters(shape + self.kernel_size, bias, dtype, layer, (self.out_channels,))

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
        if self.output_padding != (0,) * nd:
            s += f", output_padding={self.output_padding}"
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


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        layer = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'{layer}: Only "zeros" padding mode is supported, got padding_mode={padding_mode!r}')
        if isinstance(padding, str):
            raise TypeError(f"{layer}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype, _transposed=True)
        self.output_padding = _tuple(output_padding, self._nd, "output_padding", layer)

    def _output_padding(self, x, output_size):
        """torch's ``_output_padding``: the output_padding that gives ``output_size`` (its last nd
        entries), which must lie between the smallest output and that plus stride − 1."""
        if output_size is None:
            return self.output_padding
        nd, layer = self._nd, type(self).__name__
        size = list(output_size)[-nd:]
        spatial = x.shape[-nd:]
        lo = [(n - 1) * s - 2 * p + d * (k - 1) + 1 for n, s, p, d, k in
              zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)]
        if len(list(output_size)) not in (nd, nd + 2) or any(
                not lo_ <= v <= lo_ + s - 1 for v, lo_, s in zip(size, lo, self.stride)):
            raise ValueError(f"{layer}: requested an output size of {list(output_size)}, but valid sizes range from "
                             f"{lo} to {[a + s - 1 for a, s in zip(lo, self.stride)]} (for an input of "
                             f"{list(spatial)})")
        return tuple(v - a for v, a in zip(size, lo))

    def forward(self, input, output_size=None):
        x = _input(input, type(self).__name__)
        fn = F.conv_transpose2d if self._nd == 2 else F.conv_transpose1d
        return fn(x, self.weight, self.bias, self.stride, self.padding, self._output_padding(x, output_size),
                  self.groups, self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (``F.conv_transpose2d``): torch's arguments, attributes, init
    (fan_in = out_channels/groups·∏kernel, from the weight's shape as torch) and state-dict keys."""

    _nd = 2


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (``F.conv_transpose1d``)."""

    _nd = 1
