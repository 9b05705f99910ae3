"""Parameter-free modules: activations, softmax, and shape helpers (``Identity``, ``Flatten``,
``Unflatten``), each as ``torch.nn`` has it (constructor arguments, attributes, repr).

A module here holds its hyper-parameters and calls the functional op in ``forward``;
the op's forward and hand-written backward (with the derivation) live in
``tinygrad_tx.functional`` (= ``tinygrad_tx.nn.functional``), imported lazily so these
modules can be built before every functional op exists. ``inplace=True`` overwrites the
input with torch's in-place autograd rules (the functional op's ``inplace``), as torch's.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .module import Module


def _functional():
    from .. import functional as F
    return F


def _check_inplace(layer: str, inplace) -> bool:
    if not isinstance(inplace, (bool, np.bool_)):
        raise TypeError(f"{layer}: inplace must be a bool, got {inplace!r}")
    return bool(inplace)


def _number(value, name: str, layer: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{layer}: {name} must be a number, got {value!r}")
    return value


class Identity(Module):
    """``forward(x)`` returns ``x`` itself; any constructor arguments are ignored (as torch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
            raise TypeError(f"Unflatten: invalid type {type(dim).__name__} for dim, expected an int")
        if not isinstance(unflattened_size, (tuple, list)) or not all(
                isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple or list of ints, "
                            f"got {unflattened_size!r}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        shape = input.shape
        d = self.dim + len(shape) if self.dim < 0 else self.dim
        if not 0 <= d < len(shape):
            raise IndexError(f"Unflatten: dim {self.dim} is out of range for an input of shape {shape}")
        sizes = list(self.unflattened_size)
        known = 1
        for s in sizes:
            known *= s if s != -1 else 1
        if sizes.count(-1) > 1 or (-1 not in sizes and known != shape[d]) or \
                (-1 in sizes and (known == 0 or shape[d] % known)):
            raise ValueError(f"Unflatten: unflattened_size {tuple(sizes)} does not match size {shape[d]} "
                             f"of dim {self.dim} of the input (shape {shape})")
        return input.reshape(*shape[:d], *sizes, *shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Sigmoid(Module):
    """σ(x) = 1 / (1 + e^-x)."""

    def forward(self, input):
        return _functional().sigmoid(input)


class _InplaceFlag(Module):
    """An activation whose only option is torch's ``inplace`` flag."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = _check_inplace(type(self).__name__, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SiLU(_InplaceFlag):
    """x · σ(x) (a.k.a. swish)."""

    def forward(self, input):
        return _functional().silu(input, self.inplace)


class Mish(_InplaceFlag):
    """x · tanh(softplus(x))."""

    def forward(self, input):
        return _functional().mish(input, self.inplace)


class LeakyReLU(Module):
    """x for x >= 0, negative_slope · x otherwise."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = _number(negative_slope, "negative_slope", "LeakyReLU")
        self.inplace = _check_inplace("LeakyReLU", inplace)

    def forward(self, input):
        return _functional().leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x for x > 0, alpha · (e^x − 1) otherwise."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = _number(alpha, "alpha", "ELU")
        self.inplace = _check_inplace("ELU", inplace)

    def forward(self, input):
        return _functional().elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta = _number(beta, "beta", "Softplus")
        self.threshold = _number(threshold, "threshold", "Softplus")

    def forward(self, input):
        return _functional().softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val); its gradient is 1 strictly inside, 0 outside."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val = _number(min_val, "min_val", type(self).__name__)
        self.max_val = _number(max_val, "max_val", type(self).__name__)
        if self.max_val <= self.min_val:
            raise ValueError(f"{type(self).__name__}: max_val ({max_val}) must be greater than "
                             f"min_val ({min_val})")
        self.inplace = _check_inplace(type(self).__name__, inplace)

    def forward(self, input):
        return _functional().hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    """min(max(x, 0), 6): Hardtanh(0, 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


def _legacy_softmax_dim(name: str, ndim: int) -> int:
    """torch's implicit dim for ``Softmax(dim=None)`` (deprecated there too): 0 for 0-, 1- and
    3-D inputs, else 1, with a warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _SoftmaxFamily(Module):
    _op = ""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = _legacy_softmax_dim(self._op, input.ndim) if self.dim is None else self.dim
        return getattr(_functional(), self._op)(input, dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxFamily):
    """softmax along ``dim``: e^x_i / Σ_j e^x_j."""

    _op = "softmax"


class LogSoftmax(_SoftmaxFamily):
    """log softmax along ``dim``: x_i − log Σ_j e^x_j."""

    _op = "log_softmax"
