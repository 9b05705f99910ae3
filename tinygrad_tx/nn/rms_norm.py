"""``nn.RMSNorm``: ``F.rms_norm`` (``functional/rms_norm.py``, the Function and its backward) with a
learnable weight."""
from __future__ import annotations

import numpy as np

from ..functional.rms_norm import rms_norm
from . import init
from .layers import _input, _param_dtype, normalized_shape_arg
from .module import Module
from .parameter import Parameter


class RMSNorm(Module):
    """``nn.RMSNorm(normalized_shape, eps=None, elementwise_affine=True)``: ``F.rms_norm`` with a
    learnable ``weight`` (init ones) of shape ``normalized_shape``."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, dtype=None):
        super().__init__()
        self.normalized_shape = normalized_shape_arg(normalized_shape, "RMSNorm")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(np.empty(self.normalized_shape, dtype=_param_dtype(dtype, "RMSNorm")))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return rms_norm(_input(input, "RMSNorm"), self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"

