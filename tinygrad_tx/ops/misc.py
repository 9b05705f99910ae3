"""Small torch names teaching code uses: ``Tensor.random_``, ``torch.dist`` / ``Tensor.dist``,
``Tensor.resize_`` / ``resize``, ``torch.trace`` / ``Tensor.trace``.

* ``x.random_(to)`` / ``x.random_(from, to)`` fills x in place with integers uniform on
  [from, to); ``x.random_()`` on [0, 2^mantissa] for a float dtype (every integer it represents
  exactly), [0, max] for an integer dtype (int64: [0, 2^63 − 2]), {False, True} for bool. Through
  ``ops/inplace.apply_inplace``: the new values do not depend on the old (their gradient is 0) and
  a leaf that requires grad refuses, as torch's.
* ``dist(input, other, p=2)`` is the composite ``linalg.vector_norm(input − other, p)`` over all
  elements (broadcast): its gradient is the chain rule through the subtraction and vector_norm's
  hand-written backward (d‖d‖_p/dd = sign(d)·|d|^(p−1)/‖d‖_p^(p−1); 0 where ‖d‖ = 0, as torch's).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..generator import draw_integers, get_generator
from ..torch_streams import random_default
from ..core.tensor import Tensor
from .inplace import _replaced, apply_inplace

__all__ = ["random_", "dist", "resize_", "resize", "trace"]


def _default_high(dt: np.dtype) -> int:
    """One past the largest value of ``random_()``'s default range for dtype ``dt``."""
    if dt.kind == "b":
        return 2
    if dt.kind == "f":
        return 2 ** (np.finfo(dt).nmant + 1) + 1
    return min(int(np.iinfo(dt).max) + 1, 2 ** 63 - 1)


def random_(self, *args, generator=None):
    """``Tensor.random_(from=0, to=None, *, generator=None)``: integers uniform on [from, to)
    (``random_(to)``: [0, to); ``random_()``: the dtype's default range), in place."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments (from, to), got {len(args)}: {args}")
    for name, v in zip(("from", "to"), args):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer))):
            raise TypeError(f"random_(): argument '{name}' must be an int, got {v!r}")
    dt = self._data.dtype
    if len(args) == 2 and args[1] is not None:
        low, high = int(args[0]), int(args[1])
    elif len(args) == 1 and args[0] is not None:
        low, high = 0, int(args[0])
    else:
        low, high = 0, _default_high(dt)
    default = not any(a is not None for a in args)

    def compute(t):
        if default:   # torch's random_(): w % (max + 1) over the dtype's default range
            gen = get_generator(generator)
            return _replaced(t, random_default(gen, t._data.size, dt).reshape(t._data.shape))
        return _replaced(t, draw_integers(t._data.shape, dt, low, high, generator).astype(dt))

    return apply_inplace(self, "random_", compute)


def dist(input, other, p=2) -> Tensor:
    """``torch.dist``: the p-norm of ``input - other`` (broadcast), over all elements."""
    from ..linalg import vector_norm
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"dist(): input and other must be Tensors, got {type(input).__name__} and "
                        f"{type(other).__name__}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"dist(): argument 'p' must be a number, got {p!r}")
    return vector_norm(input - other, p)


def _sizes(sizes, op: str) -> tuple:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if any(isinstance(s, bool) or not isinstance(s, (numbers.Integral, np.integer)) or s < 0 for s in sizes):
        raise TypeError(f"{op}(): sizes must be non-negative ints, got {sizes!r}")
    return tuple(int(s) for s in sizes)


def resize_(self, *sizes, memory_format=None):
    """``Tensor.resize_(*sizes)``: this tensor takes the shape ``sizes`` in place; its first
    elements (C order) are kept, new ones are uninitialised (zeros here). Of the same number of
    elements it is a reshape of the same memory. A tensor that requires grad refuses, as torch's
    (use ``reshape``/``view`` there)."""
    shape = _sizes(sizes, "resize_")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = int(np.prod(shape, dtype=np.int64))
    flat = self._data.reshape(-1)                 # a view when the memory is contiguous
    if n <= flat.size:
        new = flat[:n].reshape(shape)
    else:
        new = np.zeros(n, dtype=self._data.dtype)
        new[:flat.size] = flat
        new = new.reshape(shape)
    self._data = new
    self._bump()
    return self


def resize(self, *sizes):
    """``Tensor.resize(*sizes)`` (deprecated in torch, same warning): a resized copy."""
    import warnings
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    out = self.detach().clone()
    return resize_(out, *sizes)


def trace(input) -> Tensor:
    """``torch.trace``: the sum of the main diagonal of a matrix — the composite
    ``input.diagonal().sum()`` (its gradient: g on the diagonal, 0 elsewhere, through ``diagonal``'s
    and ``sum``'s backwards)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"trace(): input must be a Tensor, got {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim} (shape {tuple(input.shape)})")
    return input.diagonal().sum()


TENSOR_METHODS = {"random_": random_, "dist": dist, "resize_": resize_, "resize": resize, "trace": trace}
FUNCTIONS = {"dist": dist, "trace": trace}
