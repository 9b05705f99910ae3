"""dtype objects: ``tinygrad_tx.float32``, ``float64``, ``int64`` (``long``), ... as in torch.

Each is a :class:`dtype` that wraps one NumPy dtype and compares equal to it (and to its
name), so ``x.dtype == np.float32``, ``x.dtype == tinygrad_tx.float32`` and
``arr.astype(tinygrad_tx.float32)`` all work: NumPy reads the wrapped dtype from the
``.dtype`` attribute. ``Tensor.dtype`` returns one of these objects.
"""
from __future__ import annotations

import builtins

import numpy as np


class dtype:
    """A tensor element type (torch's ``torch.dtype``): ``is_floating_point``, ``is_signed``,
    ``itemsize`` as in torch; every other attribute (``kind``, ``name``, ``char``) is the NumPy
    dtype's."""

    __slots__ = ("dtype", "_name")

    def __init__(self, np_dtype, name: str):
        self.dtype = np.dtype(np_dtype)
        self._name = name

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind in "fic"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __getattr__(self, name):
        return getattr(self.dtype, name)

    def __eq__(self, other):
        if isinstance(other, dtype):
            return self.dtype == other.dtype
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return f"tinygrad_tx.{self._name}"

    def __reduce__(self):
        return (_by_name, (self._name,))


float16 = half = dtype(np.float16, "float16")
float32 = float = dtype(np.float32, "float32")
float64 = double = dtype(np.float64, "float64")
uint8 = dtype(np.uint8, "uint8")
int8 = dtype(np.int8, "int8")
int16 = short = dtype(np.int16, "int16")
int32 = int = dtype(np.int32, "int32")
int64 = long = dtype(np.int64, "int64")
bool = dtype(np.bool_, "bool")
complex64 = dtype(np.complex64, "complex64")
complex128 = dtype(np.complex128, "complex128")

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool, complex64, complex128)
_BY_NUMPY = {d.dtype: d for d in ALL}
_BY_NAME = {d._name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
_PYTHON_TYPES = {builtins.float: np.dtype(np.float64), builtins.int: np.dtype(np.int64),
                 builtins.bool: np.dtype(np.bool_), builtins.complex: np.dtype(np.complex128)}


def _by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The dtype object of a NumPy dtype (a new one for dtypes torch has no name for)."""
    d = _BY_NUMPY.get(np_dtype)
    if d is None:
        np_dtype = np.dtype(np_dtype)
        d = _BY_NUMPY.get(np_dtype) or dtype(np_dtype, np_dtype.name)
    return d


def resolve(value, arg: str = "dtype"):
    """``value`` as a NumPy dtype, or None for None. Accepts our dtype objects, NumPy dtypes
    and scalar types, names ('float32', 'long') and Python's float/int/bool (torch reads
    ``dtype=float`` as float64). Anything else is a TypeError naming ``arg``."""
    if value is None:
        return None
    if isinstance(value, dtype):
        return value.dtype
    if isinstance(value, type) and value in _PYTHON_TYPES:
        return _PYTHON_TYPES[value]
    if isinstance(value, str):
        d = _BY_NAME.get(value.removeprefix("torch.").removeprefix("tinygrad_tx."))
        if d is None:
            raise TypeError(f"{arg}: unknown dtype name {value!r} (expected one of "
                            f"{', '.join(sorted(_BY_NAME))})")
        return d.dtype
    try:
        out = np.dtype(value)
    except TypeError:
        raise TypeError(f"{arg} must be a tinygrad_tx dtype (e.g. tinygrad_tx.float32), got "
                        f"{value!r} of type {type(value).__name__}") from None
    if out.kind not in "fiubc":
        raise TypeError(f"{arg}: dtype {out} is not a tensor element type")
    return out


def get_default_dtype() -> dtype:
    return float32
