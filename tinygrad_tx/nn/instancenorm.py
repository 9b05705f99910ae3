"""``InstanceNorm1d``/``2d``/``3d`` (``F.instance_norm``, torch's defaults ``affine=False``,
``track_running_stats=False``; an unbatched input (C, *spatial) is normalised as a batch of one)
and ``GroupNorm`` (``F.group_norm``), with torch's state-dict names and checks."""
from __future__ import annotations

import warnings

import numpy as np

from ..core.device import check as _check_device
from ..functional.instance_norm import group_norm, instance_norm
from .layers import _input, _NormBase, _param_dtype
from .module import Module
from .parameter import Parameter

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "GroupNorm"]


class _InstanceNorm(_NormBase):
    _spatial = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        _check_device(device, f"{type(self).__name__}: device")
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype, bias=bias)

    def forward(self, input):
        layer = type(self).__name__
        x = _input(input, layer)
        batched_ndim = self._spatial + 2
        if x.ndim not in (batched_ndim - 1, batched_ndim):
            raise ValueError(f"{layer}: expected {batched_ndim - 1}D or {batched_ndim}D input "
                             f"(got {x.ndim}D input)")
        unbatched = x.ndim == batched_ndim - 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features:
            if self.affine:
                raise ValueError(f"{layer}: expected input's size at dim=1 to match num_features "
                                 f"({self.num_features}), but got: {x.shape[1]}.")
            warnings.warn("input's size at dim=1 does not match num_features. You can silence this warning by "
                          "not passing in num_features, which is not used because affine=False",
                          UserWarning, stacklevel=2)
        use_input_stats = self.training or not self.track_running_stats
        y = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                          0.1 if self.momentum is None else self.momentum, self.eps)
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) or (C, L) input."""
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) or (C, H, W) input."""
    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) or (C, D, H, W) input."""
    _spatial = 3


class GroupNorm(Module):
    """``F.group_norm`` over ``num_groups`` groups of the ``num_channels`` channels, with a
    per-channel ``weight`` (ones) and ``bias`` (zeros) when ``affine``."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device=None,
                 dtype=None):
        super().__init__()
        _check_device(device, "GroupNorm: device")
        if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
            raise ValueError(f"GroupNorm: num_groups must be a positive int, got {num_groups!r}")
        if isinstance(num_channels, bool) or not isinstance(num_channels, int) or num_channels % num_groups:
            raise ValueError(f"num_channels must be divisible by num_groups (num_channels={num_channels!r}, "
                             f"num_groups={num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        dt = _param_dtype(dtype, "GroupNorm")
        if affine:
            self.weight = Parameter(np.ones((num_channels,), dtype=dt))
            self.bias = Parameter(np.zeros((num_channels,), dtype=dt))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        if self.affine:
            self.weight._data[...] = 1
            self.bias._data[...] = 0

    def forward(self, input):
        return group_norm(_input(input, "GroupNorm"), self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")
