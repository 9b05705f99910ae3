"""Argument handling shared by the factories (``factories.py``, ``random_factories.py``):
sizes given as torch takes them, dtype and device arguments, and the result leaf. (The error
classes every layer's argument checks raise are ``errors.py``'s.)"""
from __future__ import annotations

import numbers

import numpy as np

from .core.device import check as _check_device
from .core.dtypes import resolve as _resolve_dtype
from .core.tensor import Tensor
from .errors import InvalidArgumentError


def check_bool(v, op: str, arg: str) -> bool:
    """A bool argument (Python or NumPy bool); anything else is a TypeError, as torch's
    ``argument 'requires_grad' must be bool``."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{op}(): argument '{arg}' must be bool, not {type(v).__name__} ({v!r})")
    return bool(v)


def _as_int(v, op: str, arg: str) -> int:
    """An int argument: Python and NumPy ints and one-element integer Tensors; bools and
    floats are refused (TypeError), as torch does."""
    if isinstance(v, Tensor) and v._data.size == 1 and v._data.dtype.kind in "iu":
        v = v.item()     # Tensor.item: a compiled call guards or refuses the read
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}(): argument '{arg}' must be an int, not {type(v).__name__} ({v!r})")
    return int(v)


def parse_size(args: tuple, size, op: str, *, sequence_only: bool = False) -> tuple:
    """The shape of ``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and ``zeros(size=(2, 3))``.

    ``sequence_only`` (``full``, ``randint``, ``new_full``): the size must be one tuple or
    list, as torch's signatures say (``full(3, 1.0)`` is a TypeError). Negative sizes are a
    :class:`InvalidArgumentError` (a ValueError; torch: RuntimeError)."""
    if size is not None and args:
        raise TypeError(f"{op}(): got the size both positionally {args} and as size={size!r}")
    if size is not None:
        args = (size,)
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, not "
                            f"{type(size).__name__} ({size!r})")
    if not args:
        raise TypeError(f"{op}() missing the required argument 'size'")
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        dims = args[0]
    elif sequence_only:
        raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, not "
                        f"{type(args[0]).__name__} ({args[0]!r})")
    else:
        dims = args
    shape = tuple(_as_int(d, op, "size") for d in dims)
    if any(d < 0 for d in shape):
        raise InvalidArgumentError(f"{op}(): trying to create a tensor with negative dimension "
                         f"{min(shape)}: {list(shape)}")
    return shape


def resolve_dtype(dtype, default) -> np.dtype:
    d = _resolve_dtype(dtype, "dtype")
    return np.dtype(default) if d is None else d


def leaf(array: np.ndarray, requires_grad: bool = False, device=None) -> Tensor:
    """A new leaf Tensor owning ``array`` (no copy), validated ``device``."""
    _check_device(device, "device")
    requires_grad = check_bool(requires_grad, "factory", "requires_grad")
    t = Tensor._from_op(array, None)
    if requires_grad:
        t.requires_grad = True
    return t


def shape_and_dtype_of(input, op: str):
    """``input``'s shape and dtype for the ``*_like`` factories (a Tensor or an ndarray)."""
    if isinstance(input, Tensor):
        return input._data.shape, input._data.dtype
    if isinstance(input, np.ndarray):
        return input.shape, input.dtype
    raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
