"""Modules that are an existing functional op and its arguments, as ``torch.nn``'s:
``Hardswish``, ``Hardsigmoid``, ``SELU``, ``CELU``, ``GLU``, ``LogSigmoid``, ``Softsign``,
``Tanhshrink``, ``Softmin``, ``Unfold``, ``Fold``, ``CosineSimilarity``, ``PairwiseDistance``,
``PixelShuffle``, ``PixelUnshuffle``. Their derivatives are the functional ops' (hand-written
backwards in ``functional/``; ``pixel_shuffle`` is a reshape and a permutation)."""
from __future__ import annotations

from .. import functional as F
from ..functional.resample import pixel_shuffle, pixel_unshuffle
from .module import Module

__all__ = ["Hardshrink", "Softshrink", "Hardswish", "Hardsigmoid", "SELU", "CELU", "GLU", "LogSigmoid", "Softsign", "Tanhshrink", "Softmin",
           "Unfold", "Fold", "CosineSimilarity", "PairwiseDistance", "PixelShuffle", "PixelUnshuffle"]


class _Elementwise(Module):
    """``F.<op>(input)``; ``inplace`` accepted where torch's module has it."""
    _op = ""

    def __init__(self, inplace: bool = False):
        super().__init__()
        if not isinstance(inplace, bool):
            raise TypeError(f"{type(self).__name__}: inplace must be a bool, got {inplace!r}")
        self.inplace = inplace

    def forward(self, input):
        if self.inplace:
            return getattr(F, self._op)(input, inplace=True)
        return getattr(F, self._op)(input)

    def extra_repr(self) -> str:   # torch's Hardswish and Hardsigmoid do not show it
        return "inplace=True" if self.inplace and self._op not in ("hardswish", "hardsigmoid") else ""


class Hardswish(_Elementwise):
    """x · relu6(x + 3) / 6 (``F.hardswish``)."""
    _op = "hardswish"


class Hardsigmoid(_Elementwise):
    """relu6(x + 3) / 6 (``F.hardsigmoid``)."""
    _op = "hardsigmoid"


class SELU(_Elementwise):
    """scale · (max(0, x) + min(0, α(eˣ − 1))) (``F.selu``)."""
    _op = "selu"


class LogSigmoid(Module):
    """log σ(x) (``F.logsigmoid``)."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|) (``F.softsign``)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x − tanh x (``F.tanhshrink``)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Hardshrink(Module):
    """x where |x| > lambd, else 0 (``F.hardshrink``)."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x ∓ lambd outside [-lambd, lambd], else 0 (``F.softshrink``)."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class CELU(Module):
    """max(0, x) + min(0, α(e^(x/α) − 1)) (``F.celu``)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class _AlongDim(Module):
    """``F.<op>(input, dim)``."""
    _default_dim = None

    def __init__(self, dim=_default_dim):
        super().__init__()
        self.dim = type(self)._default_dim if dim is _AlongDim._default_dim else dim

    def forward(self, input):
        return getattr(F, self._op)(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class GLU(_AlongDim):
    """a ⊗ σ(b), the halves of ``dim`` (``F.glu``; dim −1 by default)."""
    _op, _default_dim = "glu", -1


class Softmin(_AlongDim):
    """softmax(−x) along ``dim`` (``F.softmin``)."""
    _op = "softmin"


class Unfold(Module):
    """Sliding local blocks as columns (``F.unfold``)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns summed back into an image (``F.fold``, the adjoint of ``F.unfold``)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class CosineSimilarity(Module):
    """``F.cosine_similarity(x1, x2, dim, eps)``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """``F.pairwise_distance(x1, x2, p, eps, keepdim)``."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class _Pixel(Module):
    """``<op>(input, factor)`` with the factor under torch's attribute name."""
    _arg = ""

    def __init__(self, factor: int):
        super().__init__()
        setattr(self, self._arg, factor)

    def forward(self, input):
        return self._op(input, getattr(self, self._arg))

    def extra_repr(self) -> str:
        return f"{self._arg}={getattr(self, self._arg)}"


class PixelShuffle(_Pixel):
    """(N, C·r², H, W) → (N, C, H·r, W·r) (``F.pixel_shuffle``)."""
    _arg, _op = "upscale_factor", staticmethod(pixel_shuffle)


class PixelUnshuffle(_Pixel):
    """(N, C, H·r, W·r) → (N, C·r², H, W) (``F.pixel_unshuffle``)."""
    _arg, _op = "downscale_factor", staticmethod(pixel_unshuffle)
