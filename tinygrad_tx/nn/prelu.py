"""``PReLU``: ``F.prelu`` with a learned slope per channel (or one for all), and ``LazyLinear``:
a ``Linear`` whose ``in_features`` is read from its first input."""
from __future__ import annotations

import numbers

import numpy as np

from ..core.device import check as _check_device
from ..functional.prelu import prelu
from .layers import Linear, _input, _param_dtype, _size
from .module import Module
from .parameter import Parameter

__all__ = ["PReLU", "LazyLinear"]


class PReLU(Module):
    """y = x for x > 0, a·x otherwise; ``weight`` (num_parameters,) initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        _check_device(device, "PReLU: device")
        self.num_parameters = _size(num_parameters, "num_parameters", "PReLU", 1)
        if isinstance(init, bool) or not isinstance(init, numbers.Real):
            raise TypeError(f"PReLU: init must be a number, got {init!r}")
        self.init = float(init)
        self.weight = Parameter(np.full((self.num_parameters,), self.init, dtype=_param_dtype(dtype, "PReLU")))

    def reset_parameters(self) -> None:
        self.weight._data[...] = self.init

    def forward(self, input):
        return prelu(_input(input, "PReLU"), self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class LazyLinear(Linear):
    """``Linear(in_features, out_features)`` with ``in_features`` inferred from the last dimension
    of the first input; its parameters are created (with torch's initialisation) at that first
    call, after which the module *is* a ``Linear`` (as torch's ``cls_to_become``). An optimizer
    must be built after that first call, as in torch."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        Module.__init__(self)
        _check_device(device, "LazyLinear: device")
        self.in_features = 0
        self.out_features = _size(out_features, "out_features", "LazyLinear")
        self._lazy_bias, self._lazy_dtype = bias, dtype
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def extra_repr(self) -> str:
        return f"in_features=0, out_features={self.out_features}, bias={bool(self._lazy_bias)}"

    def has_uninitialized_params(self) -> bool:
        return self.in_features == 0

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params():
            super().reset_parameters()

    def forward(self, input):
        x = _input(input, "LazyLinear")
        if self.has_uninitialized_params():
            if x.ndim == 0:
                raise ValueError("LazyLinear: the input must have at least one dimension (its last one is "
                                 "in_features), got a 0-d tensor")
            self.in_features = int(x.shape[-1])
            del self._parameters["weight"], self._parameters["bias"]
            self._create_parameters((self.out_features, self.in_features), self._lazy_bias, self._lazy_dtype,
                                    "LazyLinear")
            del self._lazy_bias, self._lazy_dtype
            self.__class__ = self.cls_to_become
        return Linear.forward(self, x)
