"""``InstanceNorm1d``/``2d``/``3d``: ``F.instance_norm`` as a module, with torch's defaults
(``affine=False``, ``track_running_stats=False``), state-dict names and checks. An unbatched input
(C, *spatial) is normalised as a batch of one."""
from __future__ import annotations

import warnings

from ..device import check as _check_device
from ..functional.instance_norm import instance_norm
from .layers import _input, _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


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
